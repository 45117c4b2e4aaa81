#!/usr/bin/env bash
# Benchmark (not a test): upload and download a 1 GiB recording through the HTTP API on the
# `fs` store, and report throughput and the server's peak RSS above idle.
#
#   bash benches/recording_1gib.sh            # builds the release binary first
#   SIZE_MIB=256 bash benches/recording_1gib.sh
#
# Needs curl. Everything happens under a temporary folder on this machine, on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MIB="${SIZE_MIB:-1024}"
cargo build --release -q -p voiceplane
BIN="$PWD/target/release/voiceplane"
WORK="$(mktemp -d)"
trap 'kill "${PID:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cd "$WORK"

export VOICEPLANE_LISTEN=127.0.0.1:0
export VOICEPLANE_HTTP__MAX_UPLOAD_BYTES=$(( 2 * 1024 * 1024 * 1024 ))
export RUST_LOG=warn,voiceplane=info
BOOT="$("$BIN" bootstrap --org-name Bench --admin-email bench@example.com 2>/dev/null)"
ORG="$(sed -E 's/.*"organization_id":"([^"]+)".*/\1/' <<<"$BOOT")"
KEY="$(sed -E 's/.*"api_key":"([^"]+)".*/\1/' <<<"$BOOT")"

"$BIN" serve 2> server.log &
PID=$!
for _ in $(seq 1 100); do grep -q "listening on" server.log && break; sleep 0.1; done
BASE="$(sed -nE 's/.*listening on (http:[^ ]+).*/\1/p' server.log | head -1)"
H=(-H "X-API-Key: $KEY" -H "X-Organization-Id: $ORG" -H "Content-Type: application/json")

AGENT="$(curl -sf "${H[@]}" -d '{"agent_name":"b","language":"en","stt_provider":"s","tts_provider":"provider_one","tts_voice":"v","llm_provider":"l","llm_model":"m"}' "$BASE/api/agents" | sed -E 's/.*"agent_id":"([^"]+)".*/\1/')"
CALL="$(curl -sf "${H[@]}" -d "{\"agent_id\":\"$AGENT\",\"to_number\":\"+14155550123\",\"call_type\":\"outbound\"}" "$BASE/api/calls" | sed -E 's/.*"call_sid":"([^"]+)".*/\1/')"

head -c "$(( SIZE_MIB * 1024 * 1024 ))" /dev/urandom > audio.wav
rss() { awk -v k="$1" '$1==k":" {print $2}' "/proc/$PID/status"; }
IDLE_KB="$(rss VmRSS)"

UP="$(curl -sf -o /dev/null -w '%{time_total} %{speed_upload}' -X PUT -H "X-API-Key: $KEY" -H "X-Organization-Id: $ORG" \
  -H "Content-Type: audio/wav" -T audio.wav "$BASE/api/calls/$CALL/recording")"
DOWN="$(curl -sf -o downloaded.wav -w '%{time_total} %{speed_download}' -H "X-API-Key: $KEY" -H "X-Organization-Id: $ORG" \
  "$BASE/api/calls/$CALL/recording/download")"
PEAK_KB="$(rss VmHWM)"
cmp -s audio.wav downloaded.wav || { echo "downloaded bytes differ" >&2; exit 1; }

read -r UP_S UP_BPS <<<"$UP"
read -r DOWN_S DOWN_BPS <<<"$DOWN"
awk -v size="$SIZE_MIB" -v us="$UP_S" -v ub="$UP_BPS" -v ds="$DOWN_S" -v db="$DOWN_BPS" \
    -v idle="$IDLE_KB" -v peak="$PEAK_KB" 'BEGIN {
  printf "recording of %d MiB on fs\n", size
  printf "upload:   %6.2f s  %7.1f MiB/s\n", us, ub / 1048576
  printf "download: %6.2f s  %7.1f MiB/s\n", ds, db / 1048576
  printf "server RSS: idle %.1f MiB, peak %.1f MiB, peak above idle %.1f MiB\n", idle/1024, peak/1024, (peak-idle)/1024
}'
