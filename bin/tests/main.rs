//! The binary end to end, one test binary with a module per concern: the README's quick start
//! (`e2e`), the HTTP stack over a real listener (`http_stack`), the embedded default's master
//! key file (`master_key`), and what an operator sees, metrics and a database outage
//! (`operations`). Each test runs the binary in the folder of its own `TestContext`
//! (`support`).
//!
//! Run: `cargo test -p voiceplane --test binary`. The database outage test needs Postgres
//! (`VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test`) and is skipped
//! without it, unless `VOICEPLANE_TEST_REQUIRE_POSTGRES=1` makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e;
mod http_stack;
mod master_key;
mod operations;
mod support;
