#!/usr/bin/env bash
# Benchmark (not a test) of the hot read path: the binary on SQLite, then on Postgres when
# VOICEPLANE_TEST_POSTGRES_URL is set, seeded with 100,000 calls, beside a raw hyper server (the
# ceiling) and a static server on the binary's accept loop, all pinned to the first cores and
# driven by wrk pinned to the others, in alternating rounds (see benches/hot_read.rs).
#
#   VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test bash benches/hot_read.sh
#   VOICEPLANE_BENCH_SERVER_CORES=1,2,4,8 bash benches/hot_read.sh   # scaling, on 10+ cores
#   VOICEPLANE_BENCH_SOAK_SECS=300 bash benches/hot_read.sh    # then 5 minutes of agent reads
#
# Needs wrk (apt-get install wrk) and taskset. Everything runs on loopback; Postgres, when
# used, is not pinned: compare ratios, not absolute numbers, across machines.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install wrk" >&2; exit 1; }
command -v taskset >/dev/null || { echo "taskset is not installed: apt-get install util-linux" >&2; exit 1; }
exec cargo bench -q --bench hot_read
