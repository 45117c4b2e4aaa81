//! The S3-compatible server tests run on, chosen by the environment: set
//! `VOICEPLANE_TEST_S3_ENDPOINT`, with `VOICEPLANE_TEST_S3_BUCKET` (default `voiceplane-test`),
//! `VOICEPLANE_TEST_S3_ACCESS_KEY` (default `AK`), `VOICEPLANE_TEST_S3_SECRET_KEY` (default
//! `SK`) and `VOICEPLANE_TEST_S3_REGION` (default `us-east-1`). Without an endpoint the S3 runs
//! are skipped, or fail when `VOICEPLANE_TEST_REQUIRE_S3=1`.
//!
//! This file serves both the suite (as `voiceplane_suite::s3_from_env`) and storage's own
//! blob tests, which include it by path: storage cannot depend on the suite, which depends on
//! storage.

use voiceplane_storage::S3Settings;

const ENDPOINT_VAR: &str = "VOICEPLANE_TEST_S3_ENDPOINT";
const REQUIRE_VAR: &str = "VOICEPLANE_TEST_REQUIRE_S3";

/// The S3 settings the environment names, or `None` after saying that `what` is skipped.
pub fn s3_from_env(what: &str) -> Option<S3Settings> {
    let var = |name: &str, default: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    let Some(endpoint) = std::env::var(ENDPOINT_VAR).ok().filter(|v| !v.is_empty()) else {
        if std::env::var(REQUIRE_VAR).as_deref() == Ok("1") {
            panic!("{ENDPOINT_VAR} is not set but {REQUIRE_VAR}=1");
        }
        eprintln!("SKIPPED {what}: {ENDPOINT_VAR} is not set");
        return None;
    };
    Some(S3Settings {
        endpoint: Some(endpoint),
        region: Some(var("VOICEPLANE_TEST_S3_REGION", "us-east-1")),
        access_key_id: Some(var("VOICEPLANE_TEST_S3_ACCESS_KEY", "AK")),
        secret_access_key: Some(var("VOICEPLANE_TEST_S3_SECRET_KEY", "SK")),
        ..S3Settings::new(var("VOICEPLANE_TEST_S3_BUCKET", "voiceplane-test"))
    })
}
