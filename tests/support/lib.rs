//! Test support for the voiceplane workspace, shared by every module of the suite
//! (`tests/suite/`): a [`TestContext`] that gives each test a fresh database (a temporary
//! SQLite file, or a fresh schema on the Postgres server named by
//! `VOICEPLANE_TEST_POSTGRES_URL`) and a controllable clock (`context`); resource builders and
//! the organizations and actors a test acts as (`builders`); a [`TestServer`] that serves the
//! HTTP API on a real listener on port 0 (`server`); an [`ApiCaller`] that sends it requests
//! with an organization and a credential and checks the JSON answers ([`read_json`],
//! `caller`); fake upstreams for the voice providers and the telephony probe (`upstreams`);
//! the S3 server chosen by the environment ([`s3_from_env`]); real PDFs for the
//! knowledge-base tests ([`pdf::pdf_with_pages`]); and the built-in runtime's fake upstreams
//! and media-stream callers ([`voice`]).
//!
//! [`db_tests!`] turns each `async fn name(ctx: &TestContext)` into two tests, `name::sqlite`
//! and `name::postgres`. Without `VOICEPLANE_TEST_POSTGRES_URL` the Postgres half prints that it
//! was skipped and passes, unless `VOICEPLANE_TEST_REQUIRE_POSTGRES=1` (set by CI) makes it fail.
//!
//! A module of the suite (`tests/suite/<resource>.rs`) looks like this:
//!
//! ```no_run
//! use voiceplane_suite::{TestContext, TestServer, db_tests};
//!
//! async fn health_answers(ctx: &TestContext) {
//!     let org = ctx.bootstrap("Acme").await;
//!     let actor = ctx.actor(&org.organization_id, &org.api_key).await;
//!     assert_eq!(actor.organization_id, org.organization_id);
//!
//!     let server = TestServer::start(ctx).await;
//!     // … requests to server.url("/healthz") …
//!     server.stop().await;
//! }
//!
//! db_tests!(health_answers); // `health_answers::sqlite` and `health_answers::postgres`
//! # fn main() {}
//! ```

mod builders;
mod caller;
mod context;
mod folder;
pub mod pdf;
mod poll;
mod s3_env;
pub mod sample;
mod server;
mod upstreams;
pub mod voice;

pub use builders::{
    agent_body, body, call_body, merged, multipart_document, multipart_document_name_last,
    new_agent, new_call, new_tool, phone_number_body, tool_body, twilio_body,
};
pub use caller::{AnswerCheck, ApiCaller, OneOfEach, fields, keys, read_json};
pub use context::{
    Backend, JWT_SECRET, MASTER_KEY, POSTGRES_URL_VAR, REQUIRE_POSTGRES_VAR, TestClock,
    TestContext, jwt_for,
};
pub use folder::TestFolder;
pub use poll::eventually;
pub use s3_env::s3_from_env;
pub use server::{TestServer, http_client};
pub use upstreams::{
    mount_twilio_account, mount_twilio_numbers, mount_voice_catalogue, telephony, voice_providers,
};
