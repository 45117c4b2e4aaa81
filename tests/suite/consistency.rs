//! Consistency under concurrency (DESIGN §17), through HTTP on two instances sharing one
//! database: concurrent PATCHes of different fields of one resource all survive, `If-Match`
//! is a compare-and-set (one winner among writers holding one tag), the audit log records the
//! true old value of racing updates, and concurrent writes never answer 5xx.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;

/// Two servers, one per instance, and a caller of each for the same organization and key.
struct TwoInstances {
    servers: [TestServer; 2],
    callers: [ApiCaller; 2],
}

impl TwoInstances {
    async fn start(ctx: &TestContext) -> Self {
        let first = TestServer::start(ctx).await;
        let second = TestServer::start_service(ctx.another_instance().await).await;
        let a = ApiCaller::bootstrap(ctx, &first, "Acme").await;
        let b = ApiCaller {
            base: second.base.clone(),
            ..a.clone()
        };
        Self {
            servers: [first, second],
            callers: [a, b],
        }
    }

    /// The caller of the `i`-th writer: writers alternate between the instances.
    fn caller(&self, i: usize) -> ApiCaller {
        self.callers[i % 2].clone()
    }

    async fn stop(self) {
        let [first, second] = self.servers;
        first.stop().await;
        second.stop().await;
    }
}

/// PATCHes `path` with each of `bodies` at once (released together by a barrier, alternating
/// instances, each with `headers`); the statuses in the order of `bodies`.
async fn race(
    two: &TwoInstances,
    path: &str,
    bodies: Vec<Value>,
    headers: &[(&str, &str)],
) -> Vec<(StatusCode, Value)> {
    let barrier = Arc::new(tokio::sync::Barrier::new(bodies.len()));
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    let tasks: Vec<_> = bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let (c, path, barrier, headers) = (
                two.caller(i),
                path.to_owned(),
                barrier.clone(),
                headers.clone(),
            );
            tokio::spawn(async move {
                let mut req = c.request(Method::PATCH, &path).json(&body);
                for (name, value) in &headers {
                    req = req.header(name, value);
                }
                barrier.wait().await;
                read_json(req.send().await.expect("answered")).await
            })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.expect("writer finished"));
    }
    out
}

/// For every resource that can be updated, writers each changing one field of it at the same
/// moment, half through each instance: after every round each field has its writer's value.
async fn concurrent_patches_of_different_fields_all_survive(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let c = two.caller(0);
    let all = OneOfEach::create(&c).await;
    let agent_id = all.agent_id.clone();
    let other_agent = c.create("/api/agents", agent_body("Other")).await;
    let other_id = other_agent["agent_id"].as_str().unwrap().to_owned();
    // (path, [(field, value in round r)]): every value differs from the one before it.
    type Field = (&'static str, fn(usize) -> Value);
    let cases: Vec<(String, Vec<Field>)> = vec![
        (
            all.agent.clone(),
            vec![
                ("agent_name", |r| json!(format!("Desk {r}"))),
                ("system_prompt", |r| json!(format!("Prompt {r}"))),
                ("llm_model", |r| json!(format!("model-{r}"))),
                ("llm_temperature", |r| json!(0.1 * (r + 1) as f64)),
                ("speak_first", |r| json!(r % 2 == 0)),
                ("stt_provider", |r| json!(format!("stt-{r}"))),
                ("tts_voice", |r| json!(format!("voice-{r}"))),
                ("voicemail_response_delay", |r| json!((r + 1) as f64)),
            ],
        ),
        (
            all.tool.clone(),
            vec![
                ("tool_description", |r| json!(format!("Looks up {r}"))),
                ("timeout_seconds", |r| json!(5 + r)),
                ("url", |r| json!(format!("https://api.example.com/v{r}"))),
            ],
        ),
        (
            all.call.clone(),
            vec![
                ("end_reason", |r| json!(format!("reason-{r}"))),
                ("billing_status", |r| json!(format!("billed-{r}"))),
                ("total_cost", |r| json!(1.5 + r as f64)),
                ("turn_count", |r| json!(3 + r)),
            ],
        ),
        (
            all.number.clone(),
            vec![
                ("supports_inbound", |r| json!(r % 2 == 1)),
                ("supports_outbound", |r| json!(r % 2 == 1)),
            ],
        ),
        (
            all.integration.clone(),
            vec![
                ("name", |r| json!(format!("Line {r}"))),
                ("category", |r| json!(format!("telephony-{r}"))),
            ],
        ),
        (
            all.webhook.clone(),
            vec![
                ("description", |r| json!(format!("hook {r}"))),
                ("url", |r| json!(format!("https://hooks.example.com/{r}"))),
                ("events", |r| {
                    json!([["agent.updated"], ["tool.created"], ["call.created"]][r % 3])
                }),
                ("status", |r| {
                    json!(if r % 2 == 0 { "disabled" } else { "enabled" })
                }),
            ],
        ),
        (
            "/api/organization/settings".to_owned(),
            vec![
                ("recording_retention_days", |r| json!(10 + r)),
                ("transcript_retention_days", |r| json!(20 + r)),
                ("call_retention_days", |r| json!(30 + r)),
            ],
        ),
    ];
    for round in 0..3 {
        for (path, fields) in &cases {
            let bodies = fields
                .iter()
                .map(|(field, value)| json!({ *field: value(round) }))
                .collect();
            for (status, body) in race(&two, path, bodies, &[]).await {
                assert_eq!(status, StatusCode::OK, "{path}: {body}");
            }
            let (status, now) = c.get(path).await;
            assert_eq!(status, StatusCode::OK);
            for (field, value) in fields {
                assert_eq!(
                    now["data"][*field],
                    value(round),
                    "{path} round {round}: {field} lost its write"
                );
            }
        }
        // Moving a number between agents while its flags change: both survive.
        let path = &all.number;
        let target = if round % 2 == 0 { &agent_id } else { &other_id };
        let bodies = vec![
            json!({"assigned_agent_id": target}),
            json!({"supports_inbound": round % 2 == 0}),
        ];
        for (status, body) in race(&two, path, bodies, &[]).await {
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        let (_, now) = c.get(path).await;
        assert_eq!(now["data"]["assigned_agent_id"], json!(target));
        assert_eq!(now["data"]["supports_inbound"], json!(round % 2 == 0));
    }
    two.stop().await;
}

/// Eight writers holding the same tag, half through each instance: exactly one 200, seven
/// 412, and the resource has the winner's change.
async fn one_of_eight_if_match_writers_wins_across_instances(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let c = two.caller(0);
    let agent = c.create("/api/agents", agent_body("Desk")).await;
    let tool = c.create("/api/tools", tool_body("lookup")).await;
    let paths = [
        (
            format!("/api/agents/{}", agent["agent_id"].as_str().unwrap()),
            "agent_name",
        ),
        (
            format!("/api/tools/{}", tool["tool_id"].as_str().unwrap()),
            "tool_description",
        ),
        (
            "/api/organization/settings".to_owned(),
            "call_retention_days",
        ),
    ];
    for round in 0..3 {
        for (path, field) in &paths {
            let tag = c.request(Method::GET, path).send().await.unwrap().headers()["etag"]
                .to_str()
                .unwrap()
                .to_owned();
            let bodies = (0..8)
                .map(|i| match *field {
                    "call_retention_days" => json!({ *field: 100 + round * 10 + i }),
                    _ => json!({ *field: format!("Writer {round}.{i}") }),
                })
                .collect();
            let answers = race(&two, path, bodies, &[("if-match", &tag)]).await;
            let winners: Vec<_> = answers
                .iter()
                .filter(|(s, _)| *s == StatusCode::OK)
                .collect();
            let refused = answers
                .iter()
                .filter(|(s, _)| *s == StatusCode::PRECONDITION_FAILED)
                .count();
            assert_eq!(
                (winners.len(), refused),
                (1, 7),
                "{path}: {:?}",
                answers.iter().map(|(s, _)| *s).collect::<Vec<_>>()
            );
            let (_, now) = c.get(path).await;
            assert_eq!(now["data"][*field], winners[0].1["data"][*field], "{path}");
        }
    }
    two.stop().await;
}

/// Renames racing through both instances: each audit entry's old name is the name the
/// previous write left, so the entries form one chain from the first name to the last.
async fn racing_updates_audit_their_true_old_values(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let c = two.caller(0);
    let agent = c.create("/api/agents", agent_body("Name 0")).await;
    let agent_id = agent["agent_id"].as_str().unwrap().to_owned();
    let path = format!("/api/agents/{agent_id}");
    let bodies = (1..=8)
        .map(|i| json!({"agent_name": format!("Name {i}")}))
        .collect();
    for (status, body) in race(&two, &path, bodies, &[]).await {
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, log) = c
        .get(&format!(
            "/api/audit-log?action=agent.update&resource_id={agent_id}&limit=100"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let mut links: Vec<(String, String)> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let pair = &e["changes"]["agent_name"];
            (
                pair[0].as_str().unwrap().to_owned(),
                pair[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(links.len(), 8, "{log}");
    let mut name = "Name 0".to_owned();
    while let Some(i) = links.iter().position(|(old, _)| *old == name) {
        name = links.remove(i).1;
    }
    assert!(
        links.is_empty(),
        "entries whose old value no write left: {links:?}"
    );
    let (_, now) = c.get(&path).await;
    assert_eq!(now["data"]["agent_name"], json!(name));
    two.stop().await;
}

/// Writes that read before they write (webhook tests, delivery retries, renames, creates),
/// many at once on both instances: none answers with a server error.
async fn concurrent_writes_never_answer_a_server_error(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let c = two.caller(0);
    let webhook = c
        .create(
            "/api/webhooks",
            json!({"url": "https://hooks.example.com/vp", "events": ["*"]}),
        )
        .await;
    let hook = format!("/api/webhooks/{}", webhook["webhook_id"].as_str().unwrap());
    let (status, _) = c.post(&format!("{hook}/test"), json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, deliveries) = c.get(&format!("{hook}/deliveries")).await;
    let delivery = deliveries["data"][0]["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let barrier = Arc::new(tokio::sync::Barrier::new(24));
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let (c, hook, delivery, barrier) = (
                two.caller(i),
                hook.clone(),
                delivery.clone(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                let request = match i % 4 {
                    0 => c.request(Method::POST, &format!("{hook}/test")),
                    1 => c.request(Method::POST, &format!("{hook}/deliveries/{delivery}/retry")),
                    2 => c
                        .request(Method::PATCH, &hook)
                        .json(&json!({"description": format!("writer {i}")})),
                    _ => c
                        .request(Method::POST, "/api/agents")
                        .json(&agent_body(&format!("Agent {i}"))),
                };
                barrier.wait().await;
                let (status, body) = read_json(request.send().await.expect("answered")).await;
                (i, status, body)
            })
        })
        .collect();
    for task in tasks {
        let (i, status, body) = task.await.unwrap();
        assert!(
            !status.is_server_error(),
            "writer {i} answered {status}: {body}"
        );
    }
    two.stop().await;
}

/// The tag of `path` now, and the body it answers.
async fn tagged(c: &ApiCaller, path: &str) -> (String, Value) {
    let resp = c.request(Method::GET, path).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "GET {path}");
    let tag = resp.headers()["etag"].to_str().unwrap().to_owned();
    (tag, resp.json().await.unwrap())
}

/// Every conditional write (the PATCH and DELETE of every resource with a view, revocations
/// included) checks the tag inside the write: a stale one answers 412 and changes nothing,
/// the current one passes.
async fn every_conditional_write_checks_its_tag(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let c = two.caller(0);
    let all = OneOfEach::create(&c).await;
    let key = c
        .create("/api/api-keys", json!({"name": "ci", "role": "user"}))
        .await;
    let invitation = c
        .create(
            "/api/auth/organizations/invitations",
            json!({"email": "new@example.com", "role": "user"}),
        )
        .await;
    let id = |v: &Value, field: &str| v[field].as_str().unwrap().to_owned();
    let patches = [
        (all.call.clone(), json!({"turn_count": 4})),
        (all.tool.clone(), json!({"timeout_seconds": 20})),
        (all.document.clone(), json!({"name": "Opening hours"})),
        (all.integration.clone(), json!({"name": "Main line"})),
        (
            all.number.clone(),
            json!({"assigned_agent_id": all.agent_id}),
        ),
        (all.webhook.clone(), json!({"description": "some"})),
        (all.agent.clone(), json!({"llm_temperature": 0.3})),
        (
            "/api/organization/settings".to_owned(),
            json!({"call_retention_days": 400}),
        ),
    ];
    for (i, (path, change)) in patches.iter().enumerate() {
        // The stale tag is sent to the other instance than the one that tagged it.
        let (tag, before) = tagged(&c, path).await;
        let stale = two
            .caller(i + 1)
            .request(Method::PATCH, path)
            .header("if-match", "\"0123456789abcdef0123456789abcdef\"")
            .json(change)
            .send()
            .await
            .unwrap();
        assert_eq!(
            stale.status(),
            StatusCode::PRECONDITION_FAILED,
            "PATCH {path}"
        );
        assert_eq!(tagged(&c, path).await, (tag.clone(), before), "{path}");
        let current = two
            .caller(i + 1)
            .request(Method::PATCH, path)
            .header("if-match", &tag)
            .json(change)
            .send()
            .await
            .unwrap();
        assert_eq!(current.status(), StatusCode::OK, "PATCH {path}");
    }
    let deletes = [
        all.call.clone(),
        all.tool.clone(),
        all.document.clone(),
        all.number.clone(),
        all.integration.clone(),
        all.webhook.clone(),
        all.agent.clone(),
        format!("/api/api-keys/{}", id(&key, "key_id")),
        format!(
            "/api/auth/organizations/invitations/{}",
            id(&invitation, "invite_id")
        ),
    ];
    for (i, path) in deletes.iter().enumerate() {
        let (tag, before) = tagged(&c, path).await;
        let stale = two
            .caller(i + 1)
            .request(Method::DELETE, path)
            .header("if-match", "\"0123456789abcdef0123456789abcdef\"")
            .send()
            .await
            .unwrap();
        assert_eq!(
            stale.status(),
            StatusCode::PRECONDITION_FAILED,
            "DELETE {path}"
        );
        assert_eq!(tagged(&c, path).await, (tag.clone(), before), "{path}");
        let current = two
            .caller(i + 1)
            .request(Method::DELETE, path)
            .header("if-match", &tag)
            .send()
            .await
            .unwrap();
        assert_eq!(current.status(), StatusCode::OK, "DELETE {path}");
    }
    two.stop().await;
}

/// An agent's answer is kept with its tag between reads, and follows every change: its own
/// PATCH through another instance, and a phone number assigned to it (which the agent shows).
async fn an_agents_kept_answer_follows_its_changes(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let (c, other) = (two.caller(0), two.caller(1));
    let all = OneOfEach::create(&c).await;
    let first = tagged(&c, &all.agent).await;
    assert_eq!(tagged(&c, &all.agent).await, first, "read again, unchanged");
    let patched = other
        .request(Method::PATCH, &all.agent)
        .json(&json!({"llm_temperature": 0.2}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), StatusCode::OK);
    let patch_tag = patched.headers()["etag"].to_str().unwrap().to_owned();
    let patch_body: Value = patched.json().await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let second = loop {
        let now = tagged(&c, &all.agent).await;
        if now != first || std::time::Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(second, (patch_tag, patch_body), "the PATCH's tag and body");
    assert_eq!(second.1["data"]["llm_temperature"], 0.2);
    let assigned = other
        .request(Method::PATCH, &all.number)
        .json(&json!({"assigned_agent_id": all.agent_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(assigned.status(), StatusCode::OK);
    let third = loop {
        let now = tagged(&c, &all.agent).await;
        if now != second || std::time::Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_ne!(third.0, second.0, "a new tag");
    let number_id = all.number.rsplit('/').next().unwrap();
    assert!(
        third.1["data"]["assigned_phone_number_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == number_id),
        "{}",
        third.1
    );
    two.stop().await;
}

/// An agent's read never answers from before a change committed ahead of it, though the key
/// and the agent are cached on both instances: the instance that made the change shows it on
/// the very next read, and on SQLite, where every instance reads the one file, so does the
/// other one.
async fn an_agent_read_shows_a_committed_change_at_once(ctx: &TestContext) {
    let two = TwoInstances::start(ctx).await;
    let all = OneOfEach::create(&two.caller(0)).await;
    for i in 0..2 {
        tagged(&two.caller(i), &all.agent).await;
    }
    for (i, temperature) in [0.1, 0.2, 0.3, 0.4].into_iter().enumerate() {
        let writer = two.caller(i);
        let patched = writer
            .request(Method::PATCH, &all.agent)
            .json(&json!({"llm_temperature": temperature}))
            .send()
            .await
            .unwrap();
        assert_eq!(patched.status(), StatusCode::OK);
        let (_, read) = tagged(&writer, &all.agent).await;
        assert_eq!(read["data"]["llm_temperature"], temperature, "the writer");
        if ctx.backend == Backend::Sqlite {
            let (_, read) = tagged(&two.caller(i + 1), &all.agent).await;
            assert_eq!(read["data"]["llm_temperature"], temperature, "the other");
        }
    }
    two.stop().await;
}

db_tests!(
    an_agents_kept_answer_follows_its_changes,
    an_agent_read_shows_a_committed_change_at_once,
    every_conditional_write_checks_its_tag,
    concurrent_patches_of_different_fields_all_survive,
    one_of_eight_if_match_writers_wins_across_instances,
    racing_updates_audit_their_true_old_values,
    concurrent_writes_never_answer_a_server_error,
);
