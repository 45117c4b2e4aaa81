#!/usr/bin/env bash
# Benchmark (not a test) of the hot read path: the binary on SQLite, then on Postgres when
# VOICEPLANE_TEST_POSTGRES_URL is set, seeded with 100,000 calls, beside a static server of the
# same HTTP stack, both driven by wrk in alternating rounds (see benches/hot_read.rs).
#
#   VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test bash benches/hot_read.sh
#   VOICEPLANE_BENCH_SOAK_SECS=300 bash benches/hot_read.sh    # then 5 minutes of agent reads
#
# Needs wrk (apt-get install wrk). Everything runs on loopback, and the servers share the
# machine's cores with wrk: compare the ratios, not the absolute numbers, across machines.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install wrk" >&2; exit 1; }
exec cargo bench -q --bench hot_read
