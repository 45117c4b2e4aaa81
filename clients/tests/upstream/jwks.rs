//! The identity provider's JWKS: the request we send, the set we return, and failures that keep
//! the upstream's body and the URL out of the error (the core keeps its cached keys then).

use voiceplane_clients::{HttpJwksSource, JWKS_MAX_BYTES};
use voiceplane_core::Error;
use voiceplane_core::auth::JwksSource;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{UPSTREAM_BODY, http};

fn source(server: &MockServer) -> HttpJwksSource {
    HttpJwksSource::new(http(), &format!("{}/realms/acme/certs", server.uri())).unwrap()
}

fn upstream(result: voiceplane_core::Result<jsonwebtoken::jwk::JwkSet>) -> String {
    match result {
        Err(Error::Upstream(m)) => {
            assert!(!m.contains(UPSTREAM_BODY), "{m}");
            assert!(!m.contains("127.0.0.1"), "{m}");
            m
        }
        other => panic!("expected an Upstream error, got {other:?}"),
    }
}

#[tokio::test]
async fn fetches_the_set() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/realms/acme/certs"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(serde_json::json!({"keys": [
                {"kty": "EC", "crv": "P-256", "kid": "k1",
                 "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                 "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
                {"kty": "unknown-kind", "kid": "k2"}
            ]})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let set = source(&server).fetch().await.unwrap();
    assert_eq!(set.keys.len(), 2);
    assert!(set.find("k1").is_some());
    let sent = &server.received_requests().await.unwrap()[0];
    assert_eq!(
        sent.headers.get("accept").unwrap(),
        "application/jwk-set+json, application/json"
    );
}

#[tokio::test]
async fn failures_are_upstream_errors_without_the_body() {
    // Not from wiremock's pool, whose servers outlive their handle: this one stops when dropped.
    let server = MockServer::builder().start().await;
    let s = source(&server);
    for (response, expect) in [
        (
            ResponseTemplate::new(503).set_body_string(UPSTREAM_BODY),
            "HTTP 503",
        ),
        (
            ResponseTemplate::new(200).set_body_string(UPSTREAM_BODY),
            "malformed",
        ),
        (
            ResponseTemplate::new(200).set_body_string("x".repeat(JWKS_MAX_BYTES + 1)),
            "malformed",
        ),
        (
            ResponseTemplate::new(302).insert_header("location", "https://elsewhere.example/"),
            "unexpected HTTP 302",
        ),
        // A key set is public: a refusal says the URL is wrong, not that a key is.
        (
            ResponseTemplate::new(401).set_body_string(UPSTREAM_BODY),
            "a JWKS needs no credentials; check auth.jwks_url",
        ),
    ] {
        server.reset().await;
        Mock::given(method("GET"))
            .respond_with(response)
            .mount(&server)
            .await;
        let m = upstream(s.fetch().await);
        assert!(m.contains(expect), "{m:?} lacks {expect:?}");
    }
    drop(server);
    let m = upstream(s.fetch().await);
    // "could not be reached", or "the connection … failed" when a pooled connection breaks.
    assert!(m.contains("the identity provider"), "{m}");
}

#[test]
fn the_url_must_be_http() {
    let err = HttpJwksSource::new(http(), "ftp://idp.example/certs").unwrap_err();
    assert_eq!(
        err.to_string(),
        "auth.jwks_url: is not an http:// or https:// URL"
    );
}
