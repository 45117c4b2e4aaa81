//! The HTTP clients against fake upstreams (wiremock) on loopback: the exact requests we send
//! (path, query, headers, body), the mapping of the answers, and every failure mode; and the
//! webhook sender against receivers there.
//!
//! Run: `cargo test -p voiceplane-clients`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod embeddings;
mod failures;
mod jwks;
mod provider_one;
mod provider_two;
mod telephony;
mod webhooks;

use std::time::Duration;

use voiceplane_clients::{
    HttpClient, HttpSettings, ProviderOne, ProviderOneSettings, ProviderTwo, ProviderTwoSettings,
};
use voiceplane_core::Error;
use voiceplane_core::voice::LibraryQuery;
use wiremock::MockServer;

/// provider_one's key in these tests.
pub const KEY_ONE: &str = "p1-key-SECRET-0001";
/// provider_two's key in these tests.
pub const KEY_TWO: &str = "p2-key-SECRET-0002";
/// The embeddings provider's key in these tests.
pub const KEY_EMBED: &str = "emb-key-SECRET-0003";
/// A marker every failing fake upstream puts in its body; no error may repeat it.
pub const UPSTREAM_BODY: &str = "UPSTREAM-BODY-MARKER do not leak";
/// The request timeout of [`http`].
pub const TIMEOUT: Duration = Duration::from_millis(300);

/// The shared client with a short request timeout.
pub fn http() -> HttpClient {
    HttpClient::new(HttpSettings {
        connect_timeout: Duration::from_secs(2),
        request_timeout: TIMEOUT,
        max_response_bytes: 64 * 1024,
    })
    .unwrap()
}

/// provider_one at `base` with [`KEY_ONE`].
pub fn provider_one(base: &str) -> ProviderOne {
    ProviderOne::new(
        http(),
        ProviderOneSettings {
            base_url: base.to_owned(),
            api_key: Some(KEY_ONE.to_owned()),
            version: "2024-06-10".to_owned(),
        },
    )
    .unwrap()
}

/// The first page of the shared library with no filter, as the service asks for it.
pub fn library_query() -> LibraryQuery {
    LibraryQuery {
        query: None,
        language: None,
        gender: None,
        age: None,
        accent: None,
        category: None,
        use_cases: Vec::new(),
        sort: "trending".into(),
        page: 0,
        page_size: 30,
    }
}

/// provider_two at `base` with [`KEY_TWO`].
pub fn provider_two(base: &str) -> ProviderTwo {
    ProviderTwo::new(
        http(),
        ProviderTwoSettings {
            base_url: base.to_owned(),
            api_key: Some(KEY_TWO.to_owned()),
        },
    )
    .unwrap()
}

/// A URL on loopback where nothing listens (a port bound and released).
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// The one request `server` received.
pub async fn only_request(server: &MockServer) -> wiremock::Request {
    let mut requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "expected exactly one upstream request");
    requests.remove(0)
}

/// Asserts that `err`'s sentence contains neither key nor the upstream body.
pub fn assert_safe(err: &Error) {
    let text = err.to_string();
    for secret in [KEY_ONE, KEY_TWO, KEY_EMBED, UPSTREAM_BODY, "SECRET"] {
        assert!(!text.contains(secret), "{secret:?} leaked into {text:?}");
    }
}
