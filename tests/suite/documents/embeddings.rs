//! Embeddings from a fake OpenAI-compatible upstream: the requests it gets, the vectors
//! stored, search blended with them, and an outage that ends in a lexical index.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_clients::{EmbeddingsSettings, HttpClient, HttpSettings, OpenAiEmbedder};
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::Kb;

const KEY: &str = "sk-test-embeddings-key";
const MODEL: &str = "test-embed-1";

/// Answers like the OpenAI API, with a bag-of-words vector per input (16 buckets of word
/// hashes), listed in reverse order as a provider may.
struct BagOfWords;

fn bag(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 16];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = word
            .to_lowercase()
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[(h % 16) as usize] += 1.0;
    }
    v
}

impl Respond for BagOfWords {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
        let inputs = body["input"].as_array().expect("input is a list");
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": bag(t.as_str().unwrap())}))
            .collect();
        ResponseTemplate::new(200)
            .set_body_json(json!({"object": "list", "data": data, "model": MODEL}))
    }
}

fn embedder(base_url: &str) -> Arc<OpenAiEmbedder> {
    let http = HttpClient::new(HttpSettings::default()).expect("client builds");
    Arc::new(
        OpenAiEmbedder::new(
            http,
            EmbeddingsSettings {
                base_url: base_url.to_owned(),
                api_key: Some(KEY.to_owned()),
                model: MODEL.to_owned(),
                batch_size: 2,
                timeout: Duration::from_secs(5),
            },
        )
        .expect("settings are valid"),
    )
}

/// Five paragraphs, each about 600 characters with one distinctive word: several chunks.
fn long_text() -> String {
    ["walrus", "pelican", "lynx", "gecko", "marmot"]
        .iter()
        .map(|animal| {
            let filler =
                "The keepers feed every animal twice a day and log what it eats. ".repeat(9);
            format!("This paragraph is about the {animal}. {filler}")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

async fn chunks_are_embedded_in_batches_and_search_blends_vectors(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(BagOfWords)
        .mount(&upstream)
        .await;
    let kb = Kb::start(ctx, Some(embedder(&upstream.uri()))).await;
    let id = Kb::text(&kb.c, "Zoo", &long_text()).await;
    let doc = kb.settled(&id).await;
    assert_eq!(doc["processing_status"], "completed", "{doc}");

    let requests = upstream.received_requests().await.unwrap();
    let mut inputs: Vec<String> = Vec::new();
    for r in &requests {
        assert_eq!(
            r.headers.get("authorization").unwrap().to_str().unwrap(),
            format!("Bearer {KEY}")
        );
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["model"], MODEL);
        let batch = body["input"].as_array().unwrap();
        assert!(
            (1..=2).contains(&batch.len()),
            "batches of at most 2: {body}"
        );
        inputs.extend(batch.iter().map(|t| t.as_str().unwrap().to_owned()));
    }
    assert!(inputs.len() >= 3, "several chunks: {inputs:?}");
    assert_eq!(doc["vector_count"], inputs.len(), "{doc}");
    assert!(requests.len() >= 2);
    for animal in ["walrus", "pelican", "lynx", "gecko", "marmot"] {
        assert!(
            inputs.iter().any(|t| t.contains(animal)),
            "{animal} was embedded"
        );
    }

    let (status, v) = Kb::search(&kb.c, json!({"query": "gecko", "limit": 2})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let top = &v["data"][0];
    assert!(top["text"].as_str().unwrap().contains("gecko"), "{v}");
    let score = top["score"].as_f64().unwrap();
    assert!(score > 0.0 && score <= 1.0, "{score}");
    // The query itself was embedded for the blend.
    let last = upstream.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&last.last().unwrap().body).unwrap();
    assert_eq!(body["input"], json!(["gecko"]));
    kb.stop().await;
}

async fn an_embeddings_outage_completes_lexically_and_reprocess_adds_vectors(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream overloaded"))
        .mount(&upstream)
        .await;
    let kb = Kb::start(ctx, Some(embedder(&upstream.uri()))).await;
    let id = Kb::text(&kb.c, "Zoo", "The otter enclosure opens at ten.").await;
    // Within `settled`'s deadline: the outage costs a few quick retries, not a long wait.
    let doc = kb.settled(&id).await;
    assert_eq!(doc["processing_status"], "completed", "{doc}");
    assert_eq!(doc["vector_count"], 0);
    assert!(
        upstream.received_requests().await.unwrap().len() > 1,
        "a few quick retries"
    );
    // Search still answers, lexically, while the provider is down.
    let (status, v) = Kb::search(&kb.c, json!({"query": "otter"})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["data"][0]["documentation_id"], id.as_str());

    upstream.reset().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(BagOfWords)
        .mount(&upstream)
        .await;
    let (status, _) =
        kb.c.send(
            Method::POST,
            &format!("/api/knowledge-base/{id}/reprocess"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let doc = kb.settled(&id).await;
    assert_eq!(doc["processing_status"], "completed");
    assert_eq!(doc["vector_count"], 1, "{doc}");
    kb.stop().await;
}

db_tests!(
    chunks_are_embedded_in_batches_and_search_blends_vectors,
    an_embeddings_outage_completes_lexically_and_reprocess_adds_vectors,
);
