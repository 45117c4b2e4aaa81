//! Search: the chunk with the query's words first, `document_ids` and `limit`, one
//! organization's chunks only, and a sentence for every bad input.

use reqwest::StatusCode;
use serde_json::{Value, json};
use voiceplane_suite::*;

use super::{Kb, settled};

fn ids(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|h| h["documentation_id"].as_str().expect("an id").to_owned())
        .collect()
}

async fn search_ranks_filters_and_stays_in_its_organization(ctx: &TestContext) {
    let kb = Kb::start(ctx, None).await;
    let refunds = Kb::text(
        &kb.c,
        "Refunds",
        "Refund policy: refunds are paid within 30 days of a return.",
    )
    .await;
    let shipping = Kb::text(
        &kb.c,
        "Shipping",
        "Shipping policy: parcels ship within 2 days of an order.",
    )
    .await;
    let hours = Kb::text(&kb.c, "Hours", "We open at nine and close at five.").await;
    let other = ApiCaller::bootstrap(ctx, &kb.server, "Other").await;
    let theirs = Kb::text(&other, "Their refunds", "Refund policy: refunds never.").await;
    for id in [&refunds, &shipping, &hours] {
        assert_eq!(settled(&kb.c, id).await["processing_status"], "completed");
    }
    assert_eq!(
        settled(&other, &theirs).await["processing_status"],
        "completed"
    );

    // Both policies match "policy"; only one matches "refund" too.
    let (status, v) = Kb::search(&kb.c, json!({"query": "refund policy"})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(ids(&v), [refunds.as_str(), shipping.as_str()]);
    let hits = v["data"].as_array().unwrap();
    assert_eq!(
        keys(&hits[0]),
        fields(&["documentation_id", "chunk_index", "text", "score"])
    );
    assert_eq!(hits[0]["chunk_index"], 0);
    assert!(
        hits[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Refund policy")
    );
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores[0] > scores[1] && scores[1] > 0.0 && scores[0] < 1.0,
        "{scores:?}"
    );

    let (_, v) = Kb::search(&kb.c, json!({"query": "refund policy", "limit": 1})).await;
    assert_eq!(ids(&v), [refunds.as_str()]);
    let (_, v) = Kb::search(
        &kb.c,
        json!({"query": "refund policy", "document_ids": [shipping, hours]}),
    )
    .await;
    assert_eq!(ids(&v), [shipping.as_str()]);
    let (_, v) = Kb::search(&kb.c, json!({"query": "refund", "document_ids": [theirs]})).await;
    assert_eq!(
        ids(&v),
        Vec::<String>::new(),
        "another organization's document"
    );
    let (_, v) = Kb::search(&other, json!({"query": "refund policy"})).await;
    assert_eq!(ids(&v), [theirs.as_str()]);

    // Whatever the caller types is words, never query syntax.
    for query in [
        "refund\" OR 1=1 --",
        "refund*",
        "NEAR(refund policy)",
        "refund & !policy",
    ] {
        let (status, v) = Kb::search(&kb.c, json!({"query": query})).await;
        assert_eq!(status, StatusCode::OK, "{query}: {v}");
        assert_eq!(ids(&v).first(), Some(&refunds), "{query}: {v}");
    }
    let (status, v) = Kb::search(&kb.c, json!({"query": "?!"})).await;
    assert_eq!((status, v["data"].clone()), (StatusCode::OK, json!([])));

    for (body, says) in [
        (json!({"query": ""}), "query"),
        (json!({"query": "x".repeat(1001)}), "query"),
        (json!({"query": "refund", "limit": 0}), "limit"),
        (json!({"query": "refund", "limit": 51}), "limit"),
        (
            json!({"query": "refund", "document_ids": ["nope"]}),
            "document_ids",
        ),
        (json!({"query": "refund", "top_k": 3}), "top_k"),
        (json!({"limit": 3}), "query"),
    ] {
        let (status, v) = Kb::search(&kb.c, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert!(v["detail"].as_str().unwrap().contains(says), "{body}: {v}");
    }
    kb.stop().await;
}

db_tests!(search_ranks_filters_and_stays_in_its_organization);
