//! Transcripts: append (validated, numbered per call, concurrent appends without gaps or
//! duplicates) and list in conversation order.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;
use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

use super::messages;

/// Every message of the call, walked `limit` at a time.
async fn transcript(
    ctx: &TestContext,
    actor: &voiceplane_core::auth::Actor,
    call_sid: &str,
    limit: u32,
) -> Vec<CallMessage> {
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = ctx
            .service
            .call_message_list(
                actor,
                call_sid,
                &PageParams {
                    limit: Some(limit),
                    cursor,
                },
            )
            .await
            .unwrap();
        assert!(page.items.len() <= limit as usize);
        all.extend(page.items);
        if !page.has_more {
            return all;
        }
        cursor = page.next_cursor;
    }
}

async fn messages_are_appended_numbered_and_listed_in_order(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let call = ctx.call_of_new_agent(&admin).await;
    let sid = call.call_sid.clone();
    let first: NewMessages = body(json!({"messages": [
        {"role": "agent", "text": "Hello, how can I help?", "start_ms": 0, "end_ms": 1200},
        {"role": "user", "text": "Where is my order?", "start_ms": 1500, "end_ms": 2600},
        {"role": "tool", "text": "", "tool_name": "lookup_order",
         "tool_arguments": {"order_id": "A-1", "verbose": [true, null]},
         "tool_result": "shipped"}
    ]}));
    let appended = ctx
        .service
        .call_message_append(&admin, &sid, first)
        .await
        .unwrap();
    assert_eq!(
        appended.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        appended[2].tool_arguments,
        Some(json!({"order_id": "A-1", "verbose": [true, null]}))
    );
    assert_eq!(appended[2].tool_result, Some(json!("shipped")));
    assert_eq!(appended[0].role, MessageRole::Agent);
    assert_eq!(appended[1].end_ms, Some(2600));
    let more = ctx
        .service
        .call_message_append(&admin, &sid, messages(&["Thanks", "Bye"]))
        .await
        .unwrap();
    assert_eq!(more.iter().map(|m| m.seq).collect::<Vec<_>>(), [4, 5]);
    let listed = transcript(ctx, &admin, &sid, 2).await;
    assert_eq!(listed, [appended, more].concat(), "as stored, in seq order");

    // Validation: one sentence naming the field.
    let text = |n: usize| "x".repeat(n);
    let long = text(100_001);
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!({"messages": []}), "between 1 and 100"),
        (
            json!({"messages": vec![json!({"role": "user", "text": "hi"}); 101]}),
            "between 1 and 100",
        ),
        (
            json!({"messages": [{"role": "user", "text": "ok"}, {"role": "user", "text": long}]}),
            "messages[1].text must be at most 100000",
        ),
        (
            json!({"messages": [{"role": "user", "text": "a", "start_ms": -1}]}),
            "messages[0].start_ms must not be negative",
        ),
        (
            json!({"messages": [{"role": "user", "text": "a", "start_ms": 10, "end_ms": 5}]}),
            "messages[0].end_ms must not be before",
        ),
        (
            json!({"messages": [{"role": "tool", "text": "a", "tool_name": "  "}]}),
            "messages[0].tool_name",
        ),
    ];
    for (input, detail) in cases {
        let err = ctx
            .service
            .call_message_append(&admin, &sid, body(input))
            .await
            .unwrap_err();
        match err {
            Error::InvalidInput(d) => assert!(d.contains(detail), "{d}"),
            other => panic!("{detail}: {other:?}"),
        }
    }
    // A 100,000-character text and 100 messages are within bounds.
    ctx.service
        .call_message_append(
            &admin,
            &sid,
            body(json!({"messages": vec![json!({"role": "user", "text": text(100_000)}); 100]})),
        )
        .await
        .unwrap();
    assert_eq!(transcript(ctx, &admin, &sid, 100).await.len(), 105);

    // Another organization's call is not found, to append or to list.
    let other = ctx.admin("Other").await;
    assert!(matches!(
        ctx.service
            .call_message_append(&other, &sid, messages(&["x"]))
            .await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service
            .call_message_list(&other, &sid, &PageParams::default())
            .await,
        Err(Error::NotFound(_))
    ));

    // Over HTTP: 201 with the appended messages, the list in seq order.
    let server = TestServer::start(ctx).await;
    let key = ctx
        .service
        .api_key_create(
            &admin,
            body(json!({"name": "http", "role": "agent_manager"})),
        )
        .await
        .unwrap();
    let api = ApiCaller::new(&server, &admin.organization_id, &key.api_key);
    let path = format!("/api/calls/{sid}/messages");
    let data = api
        .create(
            &path,
            json!({"messages": [{"role": "system", "text": "note"}]}),
        )
        .await;
    assert_eq!(data[0]["seq"], 106);
    assert_eq!(data[0]["call_sid"], sid.as_str());
    assert!(data[0]["created_at"].is_string());
    let (status, page) = api.get(&format!("{path}?limit=2")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["data"][1]["seq"], 2);
    let cursor = page["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, next) = api.get(&format!("{path}?limit=2&cursor={cursor}")).await;
    assert_eq!(next["data"][0]["seq"], 3);
    let (status, v) = api.get(&format!("{path}?cursor=nonsense")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    let (status, _) = api
        .post(
            "/api/calls/call_000000000000000000000000/messages",
            json!({"messages": [{"role": "user", "text": "x"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, v) = api
        .post(&path, json!({"messages": [{"role": "robot", "text": "x"}]}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    server.stop().await;
}

async fn parallel_appends_take_every_seq_once(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let call = ctx.call_of_new_agent(&admin).await;
    let service = Arc::clone(&ctx.service);
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let service = Arc::clone(&service);
            let admin = admin.clone();
            let sid = call.call_sid.clone();
            tokio::spawn(async move {
                let text = format!("message {i}");
                service
                    .call_message_append(&admin, &sid, messages(&[text.as_str()]))
                    .await
            })
        })
        .collect();
    let mut seqs = Vec::new();
    for task in tasks {
        let appended = task.await.unwrap().unwrap();
        assert_eq!(appended.len(), 1);
        seqs.push(appended[0].seq);
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=20).collect::<Vec<i64>>());
    let listed = transcript(ctx, &admin, &call.call_sid, 7).await;
    assert_eq!(
        listed.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (1..=20).collect::<Vec<i64>>()
    );
    let mut texts: Vec<String> = listed.into_iter().map(|m| m.text).collect();
    texts.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("message {i}")).collect();
    want.sort();
    assert_eq!(texts, want);
}

db_tests!(
    messages_are_appended_numbered_and_listed_in_order,
    parallel_appends_take_every_seq_once,
);
