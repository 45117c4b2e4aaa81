#!/usr/bin/env bash
# Instructions per request of `/healthz` and of an agent read (`GET /api/agents/{id}` with an
# API key), counted by valgrind's callgrind in the binary's own `serve` (SQLite, the request
# log on, rate limits on at a limit never reached), driven by `wrk -c4` over real HTTP; and of
# the raw hyper server that `hot_read.sh` measures as the ceiling (`raw hyper`), so that the
# share of it a change wins shows here too.
#
# A shared VM's CPU time per request moves by ±10 % between runs (benches/README.md); the
# instruction count of the same build moves by well under 1 %, so this settles changes of a
# few percent that `hot_read.sh` cannot. It counts user space only: a system call saved
# (a `pread`, a `write`) does not show here, only in `hot_read.sh`.
#
#   bash benches/instructions.sh                 # the current tree (builds the hot_read bench)
#   bash benches/instructions.sh OLD_BIN NEW_BIN # two builds of `hot_read`, e.g. copies of
#                                                # target/release/deps/hot_read-* from two commits
#
# Needs valgrind, wrk and curl.
set -euo pipefail

for tool in valgrind callgrind_control wrk curl; do
    command -v "$tool" >/dev/null || { echo "instructions.sh needs $tool" >&2; exit 1; }
done

if [ "$#" -eq 0 ]; then
    cd "$(dirname "$0")/.."
    bin=$(cargo bench --bench hot_read --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*hot_read-[^"]*"' | tail -1 | cut -d'"' -f4)
    set -- "$bin"
fi

# The instructions per request of `target` (`url` with the headers after it) on the process
# `server`, running under callgrind with its output in `dir`.
count() {
    local bin=$1 dir=$2 server=$3 target=$4 url=$5
    shift 5
    wrk -t1 -c4 -d3s "$@" "$url" >/dev/null # warm, not counted
    callgrind_control -z "$server" >/dev/null 2>&1
    callgrind_control -i on "$server" >/dev/null 2>&1
    local out requests
    out=$(wrk -t1 -c4 -d6s "$@" "$url")
    callgrind_control -i off "$server" >/dev/null 2>&1
    callgrind_control -d "${target#/}" "$server" >/dev/null 2>&1
    requests=$(grep -o '[0-9]* requests in' <<<"$out" | cut -d' ' -f1)
    if grep -q 'Non-2xx' <<<"$out"; then
        echo "$target answered errors: $out" >&2
        exit 1
    fi
    local file total
    file=$(ls -t "$dir"/callgrind.out.* | head -1)
    total=$(grep '^totals:' "$file" | cut -d' ' -f2)
    printf '%-10s %-40s %8d requests %8d instructions/request\n' \
        "$target" "$(basename "$bin")" "$requests" $((total / requests))
}

# The raw hyper server of `bin` (`hot_read`'s child `static raw`), under `dir`.
measure_raw() {
    local bin=$1 dir=$2
    rm -rf "$dir" && mkdir -p "$dir"
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.out" \
        "$bin" static raw 2>"$dir/server.log" &
    local server=$! base=
    for _ in $(seq 1 240); do
        # The line may be half written (stderr is unbuffered): ready once its address answers.
        base=$(grep -oE 'http://[0-9.]+:[0-9]+' "$dir/server.log" | head -1) &&
            curl -sf -o /dev/null "$base/" && break
        sleep 0.5
    done
    count "$bin" "$dir" "$server" raw "$base/"
    kill "$server"
    wait "$server" 2>/dev/null || true
    rm -rf "$dir"
}

# `bin`'s instructions per request for one target, in a fresh database under `dir`.
measure() {
    local bin=$1 dir=$2 port=$3
    rm -rf "$dir" && mkdir -p "$dir"
    export VOICEPLANE_DATABASE__URL="sqlite://$dir/bench.db?mode=rwc"
    export VOICEPLANE_STORAGE__ROOT="$dir/blobs"
    export VOICEPLANE_RATE_LIMIT__PER_SECOND=1000000000 VOICEPLANE_RATE_LIMIT__BURST=1000000000
    unset RUST_LOG
    local made org key agent
    made=$("$bin" voiceplane bootstrap --org-name Bench --admin-email bench@example.com 2>/dev/null)
    org=$(grep -o '"organization_id":"[^"]*"' <<<"$made" | cut -d'"' -f4)
    key=$(grep -o '"api_key":"[^"]*"' <<<"$made" | cut -d'"' -f4)
    VOICEPLANE_LISTEN=127.0.0.1:$port valgrind --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$dir/callgrind.out" "$bin" voiceplane serve 2>"$dir/server.log" &
    local server=$!
    local base=http://127.0.0.1:$port
    for _ in $(seq 1 240); do
        curl -sf -o /dev/null "$base/healthz" && break
        sleep 0.5
    done
    agent=$(curl -sf -X POST "$base/api/agents" -H "X-API-Key: $key" -H "X-Organization-Id: $org" \
        -H 'content-type: application/json' \
        -d '{"agent_name":"Bench agent","language":"en","stt_provider":"deepgram","tts_provider":"provider_one","tts_voice":"v1","llm_provider":"openai","llm_model":"gpt-4o","system_prompt":"Be brief."}' |
        grep -o '"agent_id":"[^"]*"' | cut -d'"' -f4)
    for target in /healthz agent; do
        local url=$base/healthz headers=()
        if [ "$target" = agent ]; then
            url=$base/api/agents/$agent
            headers=(-H "X-API-Key: $key" -H "X-Organization-Id: $org")
        fi
        count "$bin" "$dir" "$server" "$target" "$url" "${headers[@]}"
    done
    kill "$server"
    wait "$server" 2>/dev/null || true
    rm -rf "$dir"
}

port=18700
for bin in "$@"; do
    measure_raw "$bin" "$(mktemp -d)"
    measure "$bin" "$(mktemp -d)" $port
    port=$((port + 1))
done
