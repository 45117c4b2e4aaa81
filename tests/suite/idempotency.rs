//! `Idempotency-Key` on POSTs, over HTTP: a retry replays the first answer byte for byte with
//! `Idempotent-Replayed: true`; another request under the key is a 422; a malformed key a 400;
//! GETs ignore the header; and 20 concurrent POSTs with one key create exactly one call, on one
//! server and across two instances sharing the database.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;

/// The parts of an answer a replay must repeat exactly.
#[derive(Debug, PartialEq)]
struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    location: Option<String>,
    body: Vec<u8>,
    replayed: bool,
}

async fn post_with_key(c: &ApiCaller, path: &str, key: &str, body: &Value) -> Answer {
    let resp = c
        .request(Method::POST, path)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (content_type, location) = (header("content-type"), header("location"));
    let replayed = match header("idempotent-replayed").as_deref() {
        Some("true") => true,
        None => false,
        Some(other) => panic!("Idempotent-Replayed: {other}"),
    };
    Answer {
        status: resp.status(),
        content_type,
        location,
        replayed,
        body: resp.bytes().await.unwrap().to_vec(),
    }
}

async fn count(c: &ApiCaller, path: &str) -> usize {
    let (status, v) = c.get(&format!("{path}?limit=100")).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["data"].as_array().unwrap().len()
}

async fn a_retry_replays_the_first_answer(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let body = agent_body("Support");

    let first = post_with_key(&c, "/api/agents", "create-support-1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert!(!first.replayed);
    assert!(
        first.location.is_some(),
        "a 201 carries Location, and so does its replay"
    );
    let again = post_with_key(&c, "/api/agents", "create-support-1", &body).await;
    assert!(again.replayed, "the retry is marked as replayed");
    assert_eq!(
        Answer {
            replayed: false,
            ..again
        },
        first,
        "status, Content-Type, Location and body are the first answer's"
    );
    assert_eq!(count(&c, "/api/agents").await, 1, "one agent, not two");

    // The same key with another body, path or credential.
    let other = post_with_key(&c, "/api/agents", "create-support-1", &agent_body("Sales")).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    let detail: Value = serde_json::from_slice(&other.body).unwrap();
    assert!(
        detail["detail"]
            .as_str()
            .unwrap()
            .contains("already used with a different request"),
        "{detail}"
    );
    let tool = post_with_key(&c, "/api/tools", "create-support-1", &body).await;
    assert_eq!(tool.status, StatusCode::UNPROCESSABLE_ENTITY);
    // Another credential has keys of its own.
    let (_, key) = c
        .post("/api/api-keys", json!({"name": "second", "role": "admin"}))
        .await;
    let second = c.with_key(key["data"]["api_key"].as_str().unwrap());
    let theirs = post_with_key(&second, "/api/agents", "create-support-1", &body).await;
    assert_eq!(theirs.status, StatusCode::CREATED);
    assert!(!theirs.replayed);
    assert_eq!(count(&c, "/api/agents").await, 2);

    // A 4xx is a final answer too: replayed, not run again.
    let bad = json!({"agent_name": ""});
    let first = post_with_key(&c, "/api/agents", "bad-agent", &bad).await;
    assert_eq!(first.status, StatusCode::BAD_REQUEST);
    let again = post_with_key(&c, "/api/agents", "bad-agent", &bad).await;
    assert!(again.replayed);
    assert_eq!(again.body, first.body);

    // Malformed keys.
    for key in ["", "with space", &"k".repeat(256)] {
        let resp = c
            .request(Method::POST, "/api/agents")
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{key:?}");
        let v: Value = resp.json().await.unwrap();
        assert!(
            v["detail"]
                .as_str()
                .unwrap()
                .starts_with("Idempotency-Key must be"),
            "{v}"
        );
    }
    assert_eq!(count(&c, "/api/agents").await, 2);

    // GET ignores the header.
    for _ in 0..2 {
        let resp = c
            .request(Method::GET, "/api/agents")
            .header("Idempotency-Key", "create-support-1")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.headers().get("idempotent-replayed").is_none());
    }
    server.stop().await;
}

/// Fires 20 POSTs of one call with one key at once, spread over `bases`; exactly one call is
/// created, every other answer is its replay or a 409 while it runs.
async fn twenty_at_once(c: &ApiCaller, bases: &[String]) {
    let agent = c.create("/api/agents", agent_body("Caller")).await;
    let body = call_body(agent["agent_id"].as_str().unwrap());
    let mut tasks = Vec::new();
    for i in 0..20 {
        let c = ApiCaller {
            base: bases[i % bases.len()].clone(),
            ..c.clone()
        };
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            post_with_key(&c, "/api/calls", "one-call", &body).await
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let created: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == StatusCode::CREATED)
        .collect();
    assert_eq!(
        created.iter().filter(|a| !a.replayed).count(),
        1,
        "exactly one request ran"
    );
    for a in &created {
        assert_eq!(a.body, created[0].body, "replays are the first answer");
    }
    for a in answers.iter().filter(|a| a.status != StatusCode::CREATED) {
        assert_eq!(a.status, StatusCode::CONFLICT, "{a:?}");
    }
    assert_eq!(count(c, "/api/calls").await, 1, "exactly one call");
    // Once the first has answered, every retry is its replay.
    let late = post_with_key(c, "/api/calls", "one-call", &body).await;
    assert!(late.replayed);
    let first = created.iter().find(|a| !a.replayed).unwrap();
    assert_eq!(late.body, first.body);
}

async fn concurrent_duplicates_create_one_call(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    twenty_at_once(&c, std::slice::from_ref(&server.base)).await;
    server.stop().await;
}

/// Two instances (each its own service and connection pool) on one database.
async fn concurrent_duplicates_across_two_instances_create_one_call(ctx: &TestContext) {
    let one = TestServer::start(ctx).await;
    let other: Arc<voiceplane_core::Service> = ctx.another_instance().await;
    let two = TestServer::start_configured(ctx, move |_| (*other).clone()).await;
    let c = ApiCaller::bootstrap(ctx, &one, "Acme").await;
    twenty_at_once(&c, &[one.base.clone(), two.base.clone()]).await;
    one.stop().await;
    two.stop().await;
}

/// Expired keys are forgotten by the sweep; the same key then runs its request again.
async fn expired_keys_are_swept(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let body = agent_body("Support");
    let first = post_with_key(&c, "/api/agents", "k1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert_eq!(ctx.service.idempotency_sweep().await.unwrap(), 0);
    ctx.clock.advance(24 * 3600 + 1);
    assert_eq!(ctx.service.idempotency_sweep().await.unwrap(), 1);
    let again = post_with_key(&c, "/api/agents", "k1", &body).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert!(!again.replayed);
    assert_eq!(count(&c, "/api/agents").await, 2);
    server.stop().await;
}

/// The claim through the service: in flight until answered or released; a released key (a
/// 5xx is not kept) is claimed again; a claim whose lease ended without an answer is taken over
/// by a retry of the same request, never by another one.
async fn claims_through_the_service(ctx: &TestContext) {
    use voiceplane_core::idempotency::{Claim, IDEMPOTENCY_LEASE, StoredAnswer};
    let s = &ctx.service;
    let token = |c: Claim| match c {
        Claim::Claimed { token } => token,
        other => panic!("expected a claim, got {other:?}"),
    };
    let first = token(
        s.idempotency_claim("org/key:a", "k", "print")
            .await
            .unwrap(),
    );
    assert_eq!(
        s.idempotency_claim("org/key:a", "k", "print")
            .await
            .unwrap(),
        Claim::InFlight
    );
    assert_eq!(
        s.idempotency_claim("org/key:a", "k", "other")
            .await
            .unwrap(),
        Claim::Mismatch
    );
    // Another scope has its own keys.
    token(
        s.idempotency_claim("org/key:b", "k", "print")
            .await
            .unwrap(),
    );

    // Released (the answer was a 5xx): the retry runs again.
    s.idempotency_release("org/key:a", "k", &first)
        .await
        .unwrap();
    let second = token(
        s.idempotency_claim("org/key:a", "k", "print")
            .await
            .unwrap(),
    );

    // Its instance died: once the lease has ended, a retry takes the key over; the old claim
    // can no longer store its answer.
    ctx.clock.advance(IDEMPOTENCY_LEASE.as_secs() as i64 + 1);
    assert_eq!(
        s.idempotency_claim("org/key:a", "k", "other")
            .await
            .unwrap(),
        Claim::Mismatch
    );
    let third = token(
        s.idempotency_claim("org/key:a", "k", "print")
            .await
            .unwrap(),
    );
    let answer = StoredAnswer {
        meta: "201\ncontent-type: application/json".into(),
        body: b"{\"success\":true}".to_vec(),
    };
    s.idempotency_complete("org/key:a", "k", &second, &answer)
        .await
        .unwrap();
    assert_eq!(
        s.idempotency_claim("org/key:a", "k", "print")
            .await
            .unwrap(),
        Claim::InFlight,
        "the lapsed claim stored nothing"
    );
    s.idempotency_complete("org/key:a", "k", &third, &answer)
        .await
        .unwrap();
    assert_eq!(
        s.idempotency_claim("org/key:a", "k", "print")
            .await
            .unwrap(),
        Claim::Replay(answer)
    );
}

db_tests!(
    claims_through_the_service,
    a_retry_replays_the_first_answer,
    concurrent_duplicates_create_one_call,
    concurrent_duplicates_across_two_instances_create_one_call,
    expired_keys_are_swept,
);
