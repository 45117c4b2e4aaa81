//! The workspace's test suite, one binary with a module per resource and per cross-cutting
//! concern. Each test of a `db_tests!` list runs twice, as `<module>::<test>::sqlite` and
//! `<module>::<test>::postgres`; the fixtures they share are the `voiceplane_suite` library
//! (`tests/support/`).
//!
//! Run on SQLite only: `cargo test --test suite` (one module: `cargo test --test suite agents::`).
//! Run on both: `VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo test --test suite`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Resources.
mod access;
mod agent_versions;
mod agents;
mod analysis;
mod api_keys;
mod calls;
mod console;
mod documents;
mod events;
mod integrations;
mod members;
mod phone_numbers;
mod recordings;
mod suppressions;
mod telephony;
mod tools;
mod usage;
mod voices;
mod webhooks;

// Cross-cutting concerns.
mod auth;
mod concurrency;
mod consistency;
mod conventions;
mod envelopes;
mod health;
mod idempotency;
mod jobs;
mod mount;
mod openapi;
mod pagination;
mod ratelimit;
mod request_ids;
mod runtime_upstreams;
mod secrets;
mod server;

mod shapes;
