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

/// A word only one document has outranks a word many have, as bm25 weighs words by their
/// rarity, on both databases: a search for `<rare word> warranty` finds first the one
/// document with the rare word, not one of the 30 that say "warranty" twice. Each search runs
/// as soon as its document is `completed`, while the other rare-word documents are still
/// being processed and the "warranty" ones reprocessed one after another: a completed document's
/// chunks are searchable at once, and chunks being replaced beside it change nothing.
async fn a_rare_word_outranks_a_common_one_while_documents_process(ctx: &TestContext) {
    let kb = Kb::start(ctx, None).await;
    let mut common = Vec::new();
    for n in 0..30 {
        common.push(
            Kb::text(
                &kb.c,
                &format!("Terms {n}"),
                &format!("Warranty terms: the warranty covers parts for {n} days."),
            )
            .await,
        );
    }
    for id in &common {
        assert_eq!(settled(&kb.c, id).await["processing_status"], "completed");
    }
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let c = kb.c.clone();
    let churn = tokio::spawn(async move {
        for round in 0.. {
            let id = &common[round % common.len()];
            let (status, v) = c
                .post(&format!("/api/knowledge-base/{id}/reprocess"), json!({}))
                .await;
            assert_eq!(status, StatusCode::ACCEPTED, "{v}");
            // One at a time: documents keep being processed, without a storm of requests.
            settled(&c, id).await;
            if stopped.try_recv().is_ok() {
                return round;
            }
        }
        unreachable!()
    });
    let mut rare = Vec::new();
    for i in 0..30u8 {
        let word = format!(
            "vx{}{}k",
            char::from(b'a' + i / 26),
            char::from(b'a' + i % 26)
        );
        let id = Kb::text(
            &kb.c,
            &format!("Card {i}"),
            &format!("Reference card {word}: keep it in the drawer."),
        )
        .await;
        rare.push((word, id));
    }
    for (word, id) in &rare {
        assert_eq!(settled(&kb.c, id).await["processing_status"], "completed");
        let (status, v) = Kb::search(&kb.c, json!({"query": format!("{word} warranty")})).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(ids(&v).first(), Some(id), "{word}: {v}");
        assert!(
            !churn.is_finished(),
            "documents are still being reprocessed"
        );
    }
    let _ = stop.send(());
    let rounds = churn.await.expect("documents were reprocessed");
    assert!(rounds > 0, "documents were reprocessed during the searches");
    kb.stop().await;
}

db_tests!(
    search_ranks_filters_and_stays_in_its_organization,
    a_rare_word_outranks_a_common_one_while_documents_process,
);
