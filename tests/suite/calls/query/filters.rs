//! Filters of `GET /api/calls`, full-text `q`, and cursors bound to their filters.

use reqwest::StatusCode;
use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

use super::{Case, FROM, TO, expected, messages, seed, walk};

async fn each_filter_alone_and_combined_walks_exactly_its_calls(ctx: &TestContext) {
    let s = seed(ctx).await;
    let after = s.calls[8].created_at;
    let before = s.calls[23].created_at;
    let cases: Vec<Case> = vec![
        (CallFilter::default(), Box::new(|_| true)),
        (
            CallFilter {
                status: Some(CallStatus::Completed),
                ..Default::default()
            },
            Box::new(|c| c.status == CallStatus::Completed),
        ),
        (
            CallFilter {
                call_type: Some(CallType::Preview),
                ..Default::default()
            },
            Box::new(|c| c.call_type == CallType::Preview),
        ),
        (
            CallFilter {
                agent_id: Some(s.agents[1].clone()),
                ..Default::default()
            },
            Box::new(|c| c.agent_id == s.agents[1]),
        ),
        (
            CallFilter {
                to_number: Some(TO[1].to_owned()),
                ..Default::default()
            },
            Box::new(|c| c.to_number == TO[1]),
        ),
        (
            CallFilter {
                from_number: FROM[2].map(str::to_owned),
                ..Default::default()
            },
            Box::new(|c| c.from_number.as_deref() == FROM[2]),
        ),
        (
            CallFilter {
                created_after: Some(after),
                ..Default::default()
            },
            Box::new(move |c| c.created_at >= after),
        ),
        (
            CallFilter {
                created_before: Some(before),
                ..Default::default()
            },
            Box::new(move |c| c.created_at < before),
        ),
        (
            CallFilter {
                agent_id: Some(s.agents[0].clone()),
                status: Some(CallStatus::Completed),
                created_after: Some(after),
                created_before: Some(before),
                ..Default::default()
            },
            Box::new(|c| {
                c.agent_id == s.agents[0]
                    && c.status == CallStatus::Completed
                    && c.created_at >= after
                    && c.created_at < before
            }),
        ),
        (
            CallFilter {
                call_type: Some(CallType::Inbound),
                to_number: Some(TO[0].to_owned()),
                from_number: FROM[0].map(str::to_owned),
                ..Default::default()
            },
            Box::new(|c| {
                c.call_type == CallType::Inbound
                    && c.to_number == TO[0]
                    && c.from_number.as_deref() == FROM[0]
            }),
        ),
        (
            CallFilter {
                status: Some(CallStatus::Busy),
                ..Default::default()
            },
            Box::new(|_| false),
        ),
    ];
    for (filter, keep) in &cases {
        let want = expected(&s.calls, keep);
        assert!(
            filter.status == Some(CallStatus::Busy) || !want.is_empty(),
            "{filter:?} keeps some calls"
        );
        if *filter != CallFilter::default() {
            assert!(want.len() < s.calls.len(), "{filter:?} drops some calls");
        }
        let got = walk(ctx, &s.admin, filter, &CallSearch::default(), 3).await;
        assert_eq!(got, want, "{filter:?}");
    }
}

async fn q_finds_calls_by_a_word_of_their_transcript(ctx: &TestContext) {
    let s = seed(ctx).await;
    let append = |i: usize, texts: &'static [&'static str]| {
        let sid = s.calls[i].call_sid.clone();
        let admin = s.admin.clone();
        async move {
            ctx.service
                .call_message_append(&admin, &sid, messages(texts))
                .await
                .unwrap();
        }
    };
    append(3, &["Hello", "I want a refund for my order"]).await;
    append(7, &["What is your refund policy? Refunds take five days."]).await;
    append(12, &["Refund please", "which policy applies?"]).await;
    append(18, &["Just a question about delivery"]).await;
    let search = |q: &str| CallSearch {
        q: Some(q.to_owned()),
    };
    let sids = |idx: &[usize]| expected(&s.calls, |c| idx.iter().any(|i| s.calls[*i] == *c));
    let all = CallFilter::default();
    // Any form of the word, in any message; newest first; each call once however many of
    // its messages match.
    assert_eq!(
        walk(ctx, &s.admin, &all, &search("REFUNDS"), 1).await,
        sids(&[3, 7, 12])
    );
    // Every word, in one message.
    assert_eq!(
        walk(ctx, &s.admin, &all, &search("refund, policy!"), 2).await,
        sids(&[7])
    );
    assert!(
        walk(ctx, &s.admin, &all, &search("zebra"), 2)
            .await
            .is_empty()
    );
    // Combined with the other filters.
    let agent = s.calls[12].agent_id.clone();
    assert_eq!(
        walk(
            ctx,
            &s.admin,
            &CallFilter {
                agent_id: Some(agent),
                ..Default::default()
            },
            &search("refund"),
            5
        )
        .await,
        sids(&[3, 12])
            .into_iter()
            .filter(|sid| s
                .calls
                .iter()
                .any(|c| c.call_sid == *sid && c.agent_id == s.calls[12].agent_id))
            .collect::<Vec<_>>()
    );
    let err = ctx
        .service
        .call_list(&s.admin, &all, &search(" ** "), &PageParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
}

async fn filters_over_http_validate_and_bind_their_cursor(ctx: &TestContext) {
    let s = seed(ctx).await;
    let server = TestServer::start(ctx).await;
    let key = ctx
        .service
        .api_key_create(
            &s.admin,
            serde_json::from_value(serde_json::json!({"name": "http", "role": "admin"})).unwrap(),
        )
        .await
        .unwrap();
    let api = ApiCaller::new(&server, &s.admin.organization_id, &key.api_key);
    let agent = &s.agents[2];
    let after = s.calls[2].created_at.to_rfc3339();
    let before = s.calls[27].created_at.to_rfc3339();
    // `+` sent encoded, and unencoded (read as a space).
    for number in ["%2B14155550101", "+14155550101"] {
        let base = format!(
            "/api/calls?agent_id={agent}&to_number={number}&created_after={after}&created_before={before}&limit=2"
        );
        let mut path = base.clone();
        let mut seen = Vec::new();
        loop {
            let (status, v) = api.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{v}");
            seen.extend(
                v["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["call_sid"].as_str().unwrap().to_owned()),
            );
            match v["pagination"]["next_cursor"].as_str() {
                Some(cursor) => path = format!("{base}&cursor={cursor}"),
                None => break,
            }
        }
        let want = expected(&s.calls, |c| {
            c.agent_id == *agent
                && c.to_number == TO[0]
                && c.created_at >= s.calls[2].created_at
                && c.created_at < s.calls[27].created_at
        });
        assert!(want.len() > 2, "the walk takes several pages");
        assert_eq!(seen, want);
    }

    // A cursor belongs to the filters of its page.
    let (_, first) = api.get("/api/calls?status=completed&limit=1").await;
    let cursor = first["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, ok) = api
        .get(&format!(
            "/api/calls?status=completed&limit=1&cursor={cursor}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{ok}");
    for other in ["status=failed&", "", "status=completed&q=refund&"] {
        let (status, v) = api
            .get(&format!("/api/calls?{other}limit=1&cursor={cursor}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{other}: {v}");
        assert!(
            v["detail"]
                .as_str()
                .unwrap()
                .contains("another set of filters"),
            "{v}"
        );
    }
    // An unfiltered cursor stays one of the unfiltered list.
    let (_, first) = api.get("/api/calls?limit=1").await;
    let plain = first["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = api.get(&format!("/api/calls?limit=1&cursor={plain}")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api
        .get(&format!("/api/calls?agent_id={agent}&cursor={plain}"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    for (query, names) in [
        ("status=exploded", "status"),
        ("call_type=fax", "call_type"),
        ("agent_id=nope", "agent_id"),
        ("to_number=12", "to_number"),
        ("from_number=%2B0123", "from_number"),
        ("created_after=yesterday", "created_after"),
        ("created_before=2026-13-01T00:00:00Z", "created_before"),
        (
            "created_after=2026-02-01T00:00:00Z&created_before=2026-01-01T00:00:00Z",
            "created_after",
        ),
        ("q=%2A%2A", "q"),
    ] {
        for path in ["/api/calls", "/api/calls/stats"] {
            if path.ends_with("stats") && query.starts_with("q=") {
                continue;
            }
            let (status, v) = api.get(&format!("{path}?{query}")).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}?{query}: {v}");
            let detail = v["detail"].as_str().unwrap();
            assert!(detail.contains(names), "{query}: {detail}");
        }
    }
    let (status, v) = api.get("/api/calls/stats?group_by=week").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(v["detail"].as_str().unwrap().contains("group_by"), "{v}");
    server.stop().await;
}

db_tests!(
    each_filter_alone_and_combined_walks_exactly_its_calls,
    q_finds_calls_by_a_word_of_their_transcript,
    filters_over_http_validate_and_bind_their_cursor,
);
