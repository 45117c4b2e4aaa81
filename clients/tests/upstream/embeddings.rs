//! The embeddings provider: the requests (model, key, batches), the order of the answers, and
//! every failure mode, each an `Upstream` error that names the embeddings provider and never
//! contains its body or our key.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use voiceplane_clients::{EmbeddingsSettings, OpenAiEmbedder};
use voiceplane_core::Error;
use voiceplane_core::knowledge::Embedder;
use wiremock::matchers::{any, body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::{KEY_EMBED, UPSTREAM_BODY, assert_safe, http, only_request, refused_url};

/// The vector the fake provider gives `text`: its first byte and its length.
fn vector_of(text: &str) -> Vec<f32> {
    vec![f32::from(text.as_bytes()[0]), text.len() as f32]
}

/// A fake provider that embeds each input with [`vector_of`] and lists the answers
/// last-input-first, as a provider may, after `delay`.
struct Echo {
    delay: Duration,
}

/// [`Echo`] answering at once.
const ECHO: Echo = Echo {
    delay: Duration::ZERO,
};

impl Respond for Echo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().unwrap();
        let inputs = body["input"].as_array().unwrap();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(index, text)| {
                json!({"object": "embedding", "index": index,
                       "embedding": vector_of(text.as_str().unwrap())})
            })
            .collect();
        ResponseTemplate::new(200)
            .set_body_json(json!({
                "object": "list", "data": data, "model": "m",
                "usage": {"prompt_tokens": 1, "total_tokens": 1}
            }))
            .set_delay(self.delay)
    }
}

fn settings(base: &str) -> EmbeddingsSettings {
    EmbeddingsSettings {
        base_url: base.to_owned(),
        api_key: Some(KEY_EMBED.to_owned()),
        model: "text-embedding-3-small".to_owned(),
        batch_size: 2,
        timeout: Duration::from_secs(2),
    }
}

fn embedder(settings: EmbeddingsSettings) -> OpenAiEmbedder {
    OpenAiEmbedder::new(http(), settings).unwrap()
}

fn texts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| (*t).to_owned()).collect()
}

#[tokio::test]
async fn inputs_go_in_batches_with_the_model_and_key_and_come_back_in_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ECHO)
        .expect(3)
        .mount(&server)
        .await;
    let inputs = texts(&["a", "bb", "ccc", "dddd", "eeeee"]);
    let vectors = embedder(settings(&server.uri()))
        .embed(&inputs)
        .await
        .unwrap();
    let expected: Vec<Vec<f32>> = inputs.iter().map(|t| vector_of(t)).collect();
    assert_eq!(vectors, expected);

    let requests = server.received_requests().await.unwrap();
    let bodies: Vec<Value> = requests.iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(
        bodies,
        [
            json!({"model": "text-embedding-3-small", "input": ["a", "bb"]}),
            json!({"model": "text-embedding-3-small", "input": ["ccc", "dddd"]}),
            json!({"model": "text-embedding-3-small", "input": ["eeeee"]}),
        ]
    );
    for request in &requests {
        assert_eq!(
            request.headers["authorization"],
            format!("Bearer {KEY_EMBED}").as_str()
        );
        assert_eq!(request.headers["content-type"], "application/json");
    }
}

#[tokio::test]
async fn answers_listed_out_of_order_are_put_back_by_index() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [
            {"index": 2, "embedding": [0.0, 3.0]},
            {"index": 0, "embedding": [0.0, 1.0]},
            {"index": 1, "embedding": [0.0, 2.0]},
        ]})))
        .mount(&server)
        .await;
    let vectors = embedder(EmbeddingsSettings {
        batch_size: 64,
        ..settings(&server.uri())
    })
    .embed(&texts(&["one", "two", "three"]))
    .await
    .unwrap();
    assert_eq!(vectors, [[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]]);
}

#[tokio::test]
async fn a_base_url_with_or_without_v1_calls_the_same_endpoint() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ECHO)
        .expect(4)
        .mount(&server)
        .await;
    let uri = server.uri();
    for base in [
        uri.clone(),
        format!("{uri}/"),
        format!("{uri}/v1"),
        format!("{uri}/v1/"),
    ] {
        let vectors = embedder(settings(&base)).embed(&texts(&["x"])).await;
        assert_eq!(vectors.unwrap(), [vector_of("x")], "{base}");
    }
}

#[tokio::test]
async fn without_a_key_no_authorization_is_sent() {
    let server = MockServer::start().await;
    Mock::given(any()).respond_with(ECHO).mount(&server).await;
    let vectors = embedder(EmbeddingsSettings {
        api_key: None,
        ..settings(&server.uri())
    })
    .embed(&texts(&["x"]))
    .await
    .unwrap();
    assert_eq!(vectors, [vector_of("x")]);
    assert!(
        only_request(&server)
            .await
            .headers
            .get("authorization")
            .is_none()
    );
}

#[tokio::test]
async fn nothing_to_embed_sends_nothing() {
    let server = MockServer::start().await;
    Mock::given(any()).respond_with(ECHO).mount(&server).await;
    let vectors = embedder(settings(&server.uri())).embed(&[]).await.unwrap();
    assert!(vectors.is_empty());
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// Embeds two inputs (one batch) against a provider answering `response`; returns the error
/// after checking it is safe, names the provider and came from a single request.
async fn fail_with(response: ResponseTemplate) -> Error {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(response)
        .mount(&server)
        .await;
    let err = embedder(settings(&server.uri()))
        .embed(&texts(&["a", "b"]))
        .await
        .expect_err("the call fails");
    assert_safe(&err);
    assert!(err.to_string().contains("the embeddings provider"), "{err}");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "a single attempt");
    err
}

fn with_body(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_string(format!(
            "{{\"error\": {{\"message\": \"{UPSTREAM_BODY} {KEY_EMBED}\"}}}}"
        ))
        .insert_header("content-type", "application/json")
}

#[tokio::test]
async fn failing_statuses_are_upstream_errors_without_the_body() {
    for status in [500, 502, 503] {
        assert_eq!(
            fail_with(with_body(status)).await,
            Error::Upstream(format!(
                "the embeddings provider failed to answer the embeddings request (HTTP {status})"
            ))
        );
    }
    for status in [401, 403] {
        assert_eq!(
            fail_with(with_body(status)).await,
            Error::Upstream("the embeddings provider rejected the configured API key".into())
        );
    }
    // Our inputs, not the caller's: the configuration is what to fix.
    for status in [400, 404, 422] {
        let err = fail_with(with_body(status)).await;
        assert!(
            matches!(&err, Error::Upstream(m)
                if m.contains(&format!("HTTP {status}")) && m.contains("embeddings.model")),
            "{status}: {err:?}"
        );
    }
    let err = fail_with(with_body(429)).await;
    assert!(
        matches!(&err, Error::Upstream(m) if m.contains("rate limiting")),
        "{err:?}"
    );
}

#[tokio::test]
async fn unusable_answers_are_upstream_errors() {
    let ok = |data: Value| ResponseTemplate::new(200).set_body_json(json!({ "data": data }));
    let cases = [
        (
            ResponseTemplate::new(200).set_body_string(format!("{{not json {UPSTREAM_BODY}")),
            "the embeddings provider answered the embeddings request with a malformed response",
        ),
        (
            ok(json!([{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1.0]}])),
            "the embeddings provider answered the embeddings request with a malformed response",
        ),
        (
            ok(json!([{"index": 0, "embedding": [1.0, 2.0]}])),
            "the embeddings provider answered with 1 embeddings for 2 inputs",
        ),
        (
            ok(json!([{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}])),
            "the embeddings provider answered with embeddings of 2 and 1 dimensions",
        ),
        (
            ok(json!([{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1e39]}])),
            "the embeddings provider answered with a number that is not finite",
        ),
        (
            ok(json!([{"index": 0, "embedding": []}, {"index": 1, "embedding": []}])),
            "the embeddings provider answered with an empty embedding",
        ),
        (
            ok(json!([{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}])),
            "the embeddings provider answered with index 0 twice",
        ),
    ];
    for (response, sentence) in cases {
        assert_eq!(fail_with(response).await, Error::Upstream(sentence.into()));
    }
}

#[tokio::test]
async fn batches_of_different_dimensions_are_an_upstream_error() {
    let server = MockServer::start().await;
    Mock::given(any()).respond_with(ECHO).mount(&server).await;
    // The second batch answers with vectors of another dimension (another model behind a
    // proxy, say).
    Mock::given(body_partial_json(json!({"input": ["b"]})))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0, 2.0, 3.0]}]})),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    let err = embedder(EmbeddingsSettings {
        batch_size: 1,
        ..settings(&server.uri())
    })
    .embed(&texts(&["a", "b"]))
    .await
    .unwrap_err();
    assert_eq!(
        err,
        Error::Upstream(
            "the embeddings provider answered with embeddings of 2 and 3 dimensions".into()
        )
    );
}

#[tokio::test]
async fn a_failing_batch_ends_the_call_without_retrying() {
    let server = MockServer::start().await;
    Mock::given(any()).respond_with(ECHO).mount(&server).await;
    Mock::given(body_partial_json(json!({"input": ["c", "d"]})))
        .respond_with(with_body(500))
        .with_priority(1)
        .mount(&server)
        .await;
    let err = embedder(settings(&server.uri()))
        .embed(&texts(&["a", "b", "c", "d", "e", "f"]))
        .await
        .unwrap_err();
    assert_safe(&err);
    assert!(
        matches!(&err, Error::Upstream(m) if m.contains("HTTP 500")),
        "{err:?}"
    );
    // The first batch, then the failing one; no retry, no third batch.
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_slow_provider_times_out_after_the_embeddings_timeout() {
    let started = Instant::now();
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(Echo {
            delay: Duration::from_secs(5),
        })
        .mount(&server)
        .await;
    let err = embedder(EmbeddingsSettings {
        timeout: Duration::from_millis(150),
        ..settings(&server.uri())
    })
    .embed(&texts(&["a"]))
    .await
    .unwrap_err();
    assert_eq!(
        err,
        Error::Upstream("the embeddings provider did not answer within 150 ms".into())
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "gave up in time"
    );
}

#[tokio::test]
async fn the_embeddings_timeout_replaces_the_pools() {
    // The shared pool gives up after 300 ms; the embeddings timeout (2 s) is what counts.
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(Echo {
            delay: crate::TIMEOUT * 2,
        })
        .mount(&server)
        .await;
    let vectors = embedder(settings(&server.uri()))
        .embed(&texts(&["a"]))
        .await
        .unwrap();
    assert_eq!(vectors, [vector_of("a")]);
}

#[tokio::test]
async fn a_refused_connection_is_an_upstream_error() {
    let err = embedder(settings(&refused_url()))
        .embed(&texts(&["a"]))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::Upstream("the embeddings provider could not be reached".into())
    );
}

#[test]
fn bad_settings_are_refused_naming_the_key_only() {
    let cases = [
        (
            EmbeddingsSettings {
                base_url: "api.openai.com".into(),
                ..EmbeddingsSettings::default()
            },
            "embeddings.base_url: is not an absolute URL",
        ),
        (
            EmbeddingsSettings {
                base_url: "ftp://api.openai.com".into(),
                ..EmbeddingsSettings::default()
            },
            "embeddings.base_url: is not an http:// or https:// URL",
        ),
        (
            EmbeddingsSettings {
                api_key: Some(format!("{KEY_EMBED}\nX")),
                ..EmbeddingsSettings::default()
            },
            "embeddings.api_key: contains characters not allowed in an HTTP header",
        ),
        (
            EmbeddingsSettings {
                model: "  ".into(),
                ..EmbeddingsSettings::default()
            },
            "embeddings.model: must name a model",
        ),
        (
            EmbeddingsSettings {
                batch_size: 0,
                ..EmbeddingsSettings::default()
            },
            "embeddings.batch_size: must be at least 1",
        ),
        (
            EmbeddingsSettings {
                timeout: Duration::ZERO,
                ..EmbeddingsSettings::default()
            },
            "embeddings.timeout_secs: must be more than zero",
        ),
    ];
    for (settings, expected) in cases {
        let err = OpenAiEmbedder::new(http(), settings).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
    // A trailing newline (a key read from a file) is trimmed, not refused.
    let key_from_a_file = EmbeddingsSettings {
        api_key: Some(format!("{KEY_EMBED}\n")),
        ..EmbeddingsSettings::default()
    };
    assert!(OpenAiEmbedder::new(http(), key_from_a_file).is_ok());
}

#[test]
fn debug_output_hides_the_key() {
    let settings = settings("https://api.openai.com/v1");
    let embedder = embedder(settings.clone());
    let debug = format!("{settings:?} {embedder:?}");
    assert!(!debug.contains(KEY_EMBED), "{debug}");
    assert!(
        debug.contains("https://api.openai.com/v1/embeddings"),
        "{debug}"
    );
}
