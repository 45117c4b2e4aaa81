//! Every failure mode of every voice operation: timeout, connection refused, 4xx, 5xx,
//! redirects, malformed or oversized JSON. Each maps to a clear error naming the provider,
//! never containing the upstream body or our key.

use std::time::Duration;

use voiceplane_core::Error;
use voiceplane_core::voice::{LibraryAdd, VoiceLibrary, VoiceProvider, VoiceSearch};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{UPSTREAM_BODY, assert_safe, library_query, provider_one, provider_two, refused_url};

#[derive(Debug, Clone, Copy)]
enum Op {
    OneSearch,
    TwoSearch,
    TwoList,
    TwoAdd,
}

const OPS: [Op; 4] = [Op::OneSearch, Op::TwoSearch, Op::TwoList, Op::TwoAdd];

impl Op {
    fn provider(self) -> &'static str {
        match self {
            Op::OneSearch => "provider_one",
            _ => "provider_two",
        }
    }

    async fn run(self, base: &str) -> Result<(), Error> {
        let search = VoiceSearch {
            query: Some("q".into()),
            page_size: 10,
            ..VoiceSearch::default()
        };
        match self {
            Op::OneSearch => provider_one(base).search(&search).await.map(drop),
            Op::TwoSearch => provider_two(base).search(&search).await.map(drop),
            Op::TwoList => provider_two(base).list(&library_query()).await.map(drop),
            Op::TwoAdd => provider_two(base)
                .add(&LibraryAdd {
                    public_owner_id: "owner".into(),
                    voice_id: "voice".into(),
                    name: "name".into(),
                })
                .await
                .map(drop),
        }
    }
}

/// Runs `op` against a fake upstream answering `response`; returns the error.
async fn fail_with(op: Op, response: ResponseTemplate) -> Error {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(response)
        .mount(&server)
        .await;
    let err = op
        .run(&server.uri())
        .await
        .expect_err("the operation fails");
    assert_safe(&err);
    assert!(
        err.to_string().contains(op.provider()),
        "{op:?}: {err} should name the provider"
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "{op:?}: exactly one request, no retry");
    err
}

fn with_body(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_string(format!("{{\"detail\": \"{UPSTREAM_BODY}\"}}"))
        .insert_header("content-type", "application/json")
}

#[tokio::test]
async fn server_errors_are_502() {
    for op in OPS {
        for status in [500, 502, 503] {
            let err = fail_with(op, with_body(status)).await;
            assert!(
                matches!(&err, Error::Upstream(m) if m.contains(&format!("HTTP {status}"))),
                "{op:?} {status}: {err:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_rejected_key_is_502_saying_so() {
    for op in OPS {
        for status in [401, 403] {
            let err = fail_with(op, with_body(status)).await;
            assert_eq!(
                err,
                Error::Upstream(format!("{} rejected the configured API key", op.provider())),
                "{op:?} {status}"
            );
        }
    }
}

#[tokio::test]
async fn invalid_input_upstream_is_400() {
    for op in OPS {
        for status in [400, 422] {
            let err = fail_with(op, with_body(status)).await;
            assert!(
                matches!(&err, Error::InvalidInput(m) if m.contains(&format!("HTTP {status}"))),
                "{op:?} {status}: {err:?}"
            );
        }
    }
}

#[tokio::test]
async fn other_statuses_are_502() {
    for op in OPS {
        let err = fail_with(op, with_body(429)).await;
        assert!(
            matches!(&err, Error::Upstream(m) if m.contains("rate limiting")),
            "{err:?}"
        );
        let err = fail_with(op, with_body(409)).await;
        assert!(
            matches!(&err, Error::Upstream(m) if m.contains("unexpected HTTP 409")),
            "{err:?}"
        );
    }
    for op in [Op::OneSearch, Op::TwoSearch, Op::TwoList] {
        let err = fail_with(op, with_body(404)).await;
        assert!(
            matches!(&err, Error::Upstream(m) if m.contains("base_url")),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn redirects_are_not_followed() {
    for op in OPS {
        // `fail_with` checks that only the first request reached the server.
        let err = fail_with(
            op,
            ResponseTemplate::new(302).insert_header("location", "/elsewhere"),
        )
        .await;
        assert!(
            matches!(&err, Error::Upstream(m) if m.contains("unexpected HTTP 302")),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn malformed_json_is_502() {
    let bodies = [
        format!("{{not json {UPSTREAM_BODY}"),
        format!("{{\"unexpected\": \"{UPSTREAM_BODY}\"}}"),
        "[]".to_owned(),
        String::new(),
        // Wrong types inside the expected shape.
        r#"{"voices": [{"voice_id": 7}], "data": [{"id": 7}], "has_more": false}"#.to_owned(),
    ];
    for op in OPS {
        for body in &bodies {
            let err = fail_with(
                op,
                ResponseTemplate::new(200)
                    .set_body_string(body.clone())
                    .insert_header("content-type", "application/json"),
            )
            .await;
            assert!(
                matches!(&err, Error::Upstream(m) if m.contains("malformed response")),
                "{op:?} {body}: {err:?}"
            );
        }
    }
}

#[tokio::test]
async fn oversized_answers_are_502() {
    let huge = format!(
        "{{\"voices\": [], \"data\": [], \"pad\": \"{}\"}}",
        "x".repeat(100 * 1024)
    );
    for op in OPS {
        let err = fail_with(op, ResponseTemplate::new(200).set_body_string(huge.clone())).await;
        assert!(
            matches!(&err, Error::Upstream(m) if m.contains("malformed response")),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn a_slow_upstream_times_out_with_502() {
    for op in OPS {
        let started = std::time::Instant::now();
        let err = fail_with(
            op,
            ResponseTemplate::new(200)
                .set_body_string("{}")
                .set_delay(Duration::from_secs(3)),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "gave up in time"
        );
        assert_eq!(
            err,
            Error::Upstream(format!("{} did not answer within 300 ms", op.provider()))
        );
    }
}

#[tokio::test]
async fn a_refused_connection_is_502() {
    for op in OPS {
        let err = op.run(&refused_url()).await.unwrap_err();
        assert_safe(&err);
        assert_eq!(
            err,
            Error::Upstream(format!("{} could not be reached", op.provider()))
        );
    }
}
