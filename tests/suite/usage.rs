//! Usage and cost (DESIGN §21): the price book, usage items priced when recorded, the call's
//! `cost_breakdown` and derived `total_cost`, and the usage report computed by the database.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::role::Role;
use voiceplane_suite::*;

async fn put(c: &ApiCaller, path: &str, body: Value) -> (StatusCode, Value) {
    c.send(Method::PUT, path, Some(body)).await
}

async fn call_of(c: &ApiCaller, agent_id: &str, created_at: Option<&str>) -> String {
    let mut body = json!({"agent_id": agent_id, "to_number": "+14155550100",
                          "call_type": "outbound", "status": "completed"});
    if let Some(at) = created_at {
        body["created_at"] = json!(at);
    }
    c.create("/api/calls", body).await["call_sid"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn item(component: &str, provider: &str, model: Option<&str>, quantity: f64, unit: &str) -> Value {
    json!({"component": component, "provider": provider, "model": model,
           "quantity": quantity, "unit": unit})
}

const PRICES: &str = "/api/organization/prices";

/// The price book replaced and read back, its refusals; items priced by the model's price,
/// else the provider's, else `null`; `total_cost` their sum and no longer settable; a price
/// change leaves recorded items alone; the refusals of a usage post; who may do what.
async fn usage_is_priced_when_recorded(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Metered").await;
    let (status, body) = c.get(PRICES).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!({"prices": []}));
    let book = json!({"prices": [
        {"component": "llm", "provider": "openai", "unit": "input_tokens", "credits_per_unit": 0.001},
        {"component": "llm", "provider": "openai", "model": "gpt-4o", "unit": "input_tokens",
         "credits_per_unit": 0.01},
        {"component": "stt", "provider": "deepgram", "unit": "seconds", "credits_per_unit": 0.5},
    ]});
    let (status, body) = put(&c, PRICES, book.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["prices"].as_array().unwrap().len(), 3);
    assert_eq!(body["data"]["prices"][1]["model"], "gpt-4o");
    for (bad, says) in [
        (
            json!({"prices": [book["prices"][0].clone(), book["prices"][0].clone()]}),
            "prices[1]",
        ),
        (
            json!({"prices": [{"component": "llm", "provider": "x", "unit": "requests",
                               "credits_per_unit": -1}]}),
            "credits_per_unit",
        ),
        (
            json!({"prices": [{"component": "llm", "provider": " ", "unit": "requests",
                               "credits_per_unit": 1}]}),
            "provider",
        ),
    ] {
        let (status, body) = put(&c, PRICES, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["detail"].as_str().unwrap().contains(says), "{body}");
    }
    let (status, _) = put(&c, PRICES, json!({"prices": [{"component": "video"}]})).await;
    assert!(status.is_client_error());
    assert_eq!(c.get(PRICES).await.1["data"], body_of(&book));

    let agent = c.create("/api/agents", agent_body("Metered")).await;
    let agent_id = agent["agent_id"].as_str().unwrap();
    let sid = call_of(&c, agent_id, None).await;
    let usage = format!("/api/calls/{sid}/usage");
    // Before any usage, total_cost is whatever was recorded.
    let (status, body) = c
        .send(
            Method::PATCH,
            &format!("/api/calls/{sid}"),
            Some(json!({"total_cost": 4.0})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["cost_breakdown"], json!([]));

    let (status, body) = c
        .post(
            &usage,
            json!({"items": [
                item("llm", "openai", Some("gpt-4o"), 1000.0, "input_tokens"),
                item("llm", "openai", Some("gpt-4o-mini"), 2000.0, "input_tokens"),
                item("stt", "deepgram", None, 30.0, "seconds"),
                item("tts", "elevenlabs", None, 500.0, "characters"),
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let call = &body["data"];
    let credits: Vec<Value> = call["cost_breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["credits"].clone())
        .collect();
    assert_eq!(credits, [json!(10.0), json!(2.0), json!(15.0), Value::Null]);
    assert_eq!(call["total_cost"], 27.0);
    assert_eq!(call["cost_breakdown"][3]["provider"], "elevenlabs");
    assert_eq!(call["cost_breakdown"][3]["unit"], "characters");
    assert_eq!(c.get(&format!("/api/calls/{sid}")).await.1["data"], *call);

    let (status, body) = c
        .send(
            Method::PATCH,
            &format!("/api/calls/{sid}"),
            Some(json!({"total_cost": 1.0})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("cost_breakdown"),
        "{body}"
    );

    // A new price applies to items recorded from now on only.
    let (status, _) = put(
        &c,
        PRICES,
        json!({"prices": [{"component": "tts", "provider": "elevenlabs", "unit": "characters",
                           "credits_per_unit": 0.002}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = c
        .post(
            &usage,
            json!({"items": [item("tts", "elevenlabs", Some("turbo"), 500.0, "characters")]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let breakdown = body["data"]["cost_breakdown"].as_array().unwrap();
    assert_eq!(breakdown.len(), 5);
    assert_eq!(breakdown[0]["credits"], 10.0);
    assert_eq!(breakdown[3]["credits"], Value::Null);
    assert_eq!(breakdown[4]["credits"], 1.0);
    assert_eq!(body["data"]["total_cost"], 28.0);

    for (bad, says) in [
        (json!({"items": []}), "items"),
        (
            json!({"items": [item("llm", "openai", None, 0.0, "input_tokens")]}),
            "items[0].quantity",
        ),
        (
            json!({"items": [item("llm", "openai", None, 1.0, "input_tokens"),
                             item("llm", "", None, 1.0, "input_tokens")]}),
            "items[1].provider",
        ),
        (
            json!({"items": (0..101).map(|_| item("llm", "o", None, 1.0, "requests")).collect::<Vec<_>>()}),
            "1 to 100",
        ),
    ] {
        let (status, body) = c.post(&usage, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["detail"].as_str().unwrap().contains(says), "{body}");
    }
    let (status, _) = c
        .post(
            &usage,
            json!({"items": [item("llm", "o", None, 1.0, "hours")]}),
        )
        .await;
    assert!(status.is_client_error());
    assert_eq!(
        c.get(&format!("/api/calls/{sid}")).await.1["data"]["cost_breakdown"]
            .as_array()
            .unwrap()
            .len(),
        5,
        "refused posts add nothing"
    );
    let (status, _) = c
        .post(
            "/api/calls/call_000000000000000000000000/usage",
            json!({"items": [item("llm", "o", None, 1.0, "requests")]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Each post is a `call.updated`; the price book's change is audited.
    let (_, events) = c.get("/api/events?type=call.updated").await;
    assert!(
        events["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["data"]["total_cost"] == 28.0),
        "{events}"
    );
    let (_, audit) = c.get("/api/audit-log?action=prices.update").await;
    assert_eq!(audit["data"].as_array().unwrap().len(), 2, "{audit}");

    let admin = ctx
        .actor(c.org.as_deref().unwrap(), c.key.as_deref().unwrap())
        .await;
    let (key, _) = ctx.key_with_role(&admin, Role::User).await;
    let user = c.with_key(&key.api_key);
    assert_eq!(user.get(PRICES).await.0, StatusCode::FORBIDDEN);
    assert_eq!(
        user.post(
            &usage,
            json!({"items": [item("llm", "o", None, 1.0, "requests")]})
        )
        .await
        .0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(user.get("/api/usage").await.0, StatusCode::OK);
    let other = ApiCaller::bootstrap(ctx, &server, "Elsewhere").await;
    assert_eq!(other.get(PRICES).await.1["data"], json!({"prices": []}));
    assert_eq!(
        other
            .post(
                &usage,
                json!({"items": [item("llm", "o", None, 1.0, "requests")]})
            )
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    server.stop().await;
}

/// The book as the API answers it: every price with its `model`, `null` when not given.
fn body_of(book: &Value) -> Value {
    let mut book = book.clone();
    for price in book["prices"].as_array_mut().unwrap() {
        if price.get("model").is_none() {
            price["model"] = Value::Null;
        }
    }
    book
}

/// Usage posted to one call by 12 requests at once: every item is kept, the total is their
/// sum, and the report and the month's credits count each once.
async fn concurrent_usage_posts_lose_nothing(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Racing").await;
    let (status, _) = put(
        &c,
        PRICES,
        json!({"prices": [{"component": "llm", "provider": "openai", "unit": "requests",
                           "credits_per_unit": 1}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let agent = c.create("/api/agents", agent_body("Busy")).await;
    let sid = call_of(&c, agent["agent_id"].as_str().unwrap(), None).await;
    let mut tasks = Vec::new();
    for i in 1..=12 {
        let c = c.clone();
        let path = format!("/api/calls/{sid}/usage");
        tasks.push(tokio::spawn(async move {
            c.post(
                &path,
                json!({"items": [item("llm", "openai", None, f64::from(i), "requests")]}),
            )
            .await
            .0
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK);
    }
    let call = c.get(&format!("/api/calls/{sid}")).await.1["data"].clone();
    let mut quantities: Vec<f64> = call["cost_breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["quantity"].as_f64().unwrap())
        .collect();
    quantities.sort_by(f64::total_cmp);
    assert_eq!(quantities, (1..=12).map(f64::from).collect::<Vec<_>>());
    assert_eq!(call["total_cost"], 78.0);
    let (_, usage) = c.get("/api/usage").await;
    assert_eq!(usage["data"]["totals"]["credits"], 78.0);
    // The month's credits, which the dial checks, add every post once.
    use sea_orm::ConnectionTrait;
    let db = ctx.repo.connection();
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            format!(
                "SELECT credits FROM credit_months WHERE organization_id = '{}'",
                c.org.as_deref().unwrap()
            ),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.try_get_by_index::<f64>(0).unwrap(), 78.0);
    server.stop().await;
}

/// Calls on three days by two agents with items: the totals equal the sum of the items, and
/// every grouping and window agrees with it.
async fn the_usage_report_adds_up_the_items(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Reported").await;
    let (status, _) = put(
        &c,
        PRICES,
        json!({"prices": [
            {"component": "stt", "provider": "deepgram", "unit": "seconds", "credits_per_unit": 0.5},
            {"component": "llm", "provider": "openai", "unit": "output_tokens", "credits_per_unit": 0.25},
        ]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let a = c.create("/api/agents", agent_body("A")).await["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = c.create("/api/agents", agent_body("B")).await["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut posted = 0.0;
    for (agent, day, seconds, tokens) in [
        (&a, "2025-12-29T10:00:00Z", 10.0, 4.0),
        (&a, "2025-12-30T23:59:59Z", 20.0, 8.0),
        (&b, "2025-12-30T00:00:00Z", 2.0, 0.0),
        (&b, "2025-12-31T12:00:00Z", 6.0, 40.0),
    ] {
        let sid = call_of(&c, agent, Some(day)).await;
        let mut items = vec![item("stt", "deepgram", None, seconds, "seconds")];
        if tokens > 0.0 {
            items.push(item(
                "llm",
                "openai",
                Some("gpt-4o"),
                tokens,
                "output_tokens",
            ));
        }
        let (status, body) = c
            .post(
                &format!("/api/calls/{sid}/usage"),
                json!({ "items": items }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        posted += body["data"]["total_cost"].as_f64().unwrap();
    }
    // A call without usage counts as a call, with no credits.
    call_of(&c, &a, Some("2025-12-31T13:00:00Z")).await;

    let (status, body) = c.get("/api/usage").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["data"]["totals"],
        json!({"calls": 5, "credits": posted})
    );
    assert_eq!(body["data"]["groups"], json!([]));
    assert_eq!(posted, 0.5 * 38.0 + 0.25 * 52.0);

    let (_, body) = c.get("/api/usage?group_by=day").await;
    let days = &body["data"]["groups"];
    assert_eq!(
        days,
        &json!([
            {"key": "2025-12-29", "calls": 1, "credits": 6.0,
             "quantities": {"output_tokens": 4.0, "seconds": 10.0}},
            {"key": "2025-12-30", "calls": 2, "credits": 13.0,
             "quantities": {"output_tokens": 8.0, "seconds": 22.0}},
            {"key": "2025-12-31", "calls": 2, "credits": 13.0,
             "quantities": {"output_tokens": 40.0, "seconds": 6.0}},
        ])
    );
    let (_, body) = c.get("/api/usage?group_by=agent").await;
    let agents = body["data"]["groups"].as_array().unwrap();
    let of = |id: &str| agents.iter().find(|g| g["key"] == id).unwrap().clone();
    assert_eq!(of(&a)["calls"], 3);
    assert_eq!(of(&a)["credits"], 15.0 + 3.0);
    assert_eq!(of(&b)["calls"], 2);
    assert_eq!(
        of(&b)["quantities"],
        json!({"output_tokens": 40.0, "seconds": 8.0})
    );
    let (_, body) = c.get("/api/usage?group_by=component").await;
    assert_eq!(
        body["data"]["groups"],
        json!([
            {"key": "llm", "calls": 3, "credits": 13.0, "quantities": {"output_tokens": 52.0}},
            {"key": "stt", "calls": 4, "credits": 19.0, "quantities": {"seconds": 38.0}},
        ])
    );
    let (_, body) = c.get("/api/usage?group_by=provider").await;
    let providers: Vec<&str> = body["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["deepgram", "openai"]);

    let (_, body) = c
        .get("/api/usage?created_after=2025-12-30T00:00:00Z&created_before=2025-12-31T00:00:00Z&group_by=day")
        .await;
    assert_eq!(body["data"]["totals"], json!({"calls": 2, "credits": 13.0}));
    assert_eq!(body["data"]["groups"].as_array().unwrap().len(), 1);
    for bad in [
        "/api/usage?created_after=2025-12-31T00:00:00Z&created_before=2025-12-30T00:00:00Z",
        "/api/usage?group_by=week",
        "/api/usage?created_after=yesterday",
    ] {
        let (status, body) = c.get(bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let other = ApiCaller::bootstrap(ctx, &server, "Elsewhere").await;
    assert_eq!(
        other.get("/api/usage").await.1["data"]["totals"],
        json!({"calls": 0, "credits": 0.0})
    );
    server.stop().await;
}

/// Posts `body` to `path` with the `Idempotency-Key` `key`; the answer and whether it was
/// marked replayed.
async fn post_keyed(
    c: &ApiCaller,
    path: &str,
    key: &str,
    body: Value,
) -> (StatusCode, Value, bool) {
    let resp = c
        .request(Method::POST, path)
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let replayed = resp.headers().get("idempotent-replayed").is_some();
    let (status, body) = read_json(resp).await;
    (status, body, replayed)
}

/// Items with client ids: a post sent again adds nothing and answers as the first did, one
/// that repeats some ids adds only the others, an id naming another item is a 409, and bad
/// ids are a 400 with a sentence; the month's credits count each item once. A post under an
/// `Idempotency-Key` whose stored answer was lost (the key's row gone, as after a crash
/// between the commit and the answer) charges once too.
async fn a_retried_usage_post_charges_once(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Retrying").await;
    let (status, body) = put(
        &c,
        PRICES,
        json!({"prices": [{"component": "stt", "provider": "deepgram", "unit": "seconds",
                           "credits_per_unit": 0.5}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let agent = c.create("/api/agents", agent_body("Retried")).await;
    let call_sid = call_of(&c, agent["agent_id"].as_str().unwrap(), None).await;
    let usage = format!("/api/calls/{call_sid}/usage");
    let with_id = |id: &str, seconds: f64| {
        let mut item = item("stt", "deepgram", None, seconds, "seconds");
        item["id"] = json!(id);
        item
    };
    let first_body = json!({"items": [with_id("stt-1", 10.0), with_id("stt-2", 20.0)]});
    let (status, first) = c.post(&usage, first_body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["data"]["total_cost"], 15.0);
    assert_eq!(first["data"]["cost_breakdown"][0]["id"], "stt-1");
    for _ in 0..2 {
        let (status, again) = c.post(&usage, first_body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{again}");
        assert_eq!(again["data"], first["data"], "answered as the first was");
    }
    // Some ids known, one new: only the new one is added.
    let (status, body) = c
        .post(
            &usage,
            json!({"items": [with_id("stt-2", 20.0), with_id("stt-3", 2.0)]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["cost_breakdown"].as_array().unwrap().len(), 3);
    assert_eq!(body["data"]["total_cost"], 16.0);
    // An id is its item's for good.
    let (status, body) = c
        .post(&usage, json!({"items": [with_id("stt-1", 99.0)]}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("items[0].id `stt-1`"),
        "{body}"
    );
    // Bad ids.
    for (items, says) in [
        (
            json!([with_id("", 1.0)]),
            "items[0].id must be 1 to 64 characters",
        ),
        (
            json!([with_id("ok", 1.0), with_id(&"x".repeat(65), 1.0)]),
            "items[1].id must be 1 to 64 characters",
        ),
        (
            json!([
                with_id("twice", 1.0),
                item("stt", "deepgram", None, 1.0, "seconds"),
                with_id("twice", 2.0)
            ]),
            "items[2].id `twice` repeats items[0].id",
        ),
    ] {
        let (status, body) = c.post(&usage, json!({"items": items})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["detail"].as_str().unwrap().contains(says), "{body}");
    }
    let longest = "y".repeat(64);
    let (status, body) = c
        .post(&usage, json!({"items": [with_id(&longest, 2.0)]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["total_cost"], 17.0);

    // Under an Idempotency-Key, without ids: the answer stored after the commit is lost.
    let keyed = json!({"items": [item("stt", "deepgram", None, 4.0, "seconds")]});
    let (status, body, replayed) = post_keyed(&c, &usage, "usage-1", keyed.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!replayed);
    assert_eq!(body["data"]["total_cost"], 19.0);
    forget_idempotency_answers(ctx).await;
    let (status, again, replayed) = post_keyed(&c, &usage, "usage-1", keyed).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert!(replayed, "the key's binding answers");
    assert_eq!(again["data"], body["data"]);
    let (status, body, _) = post_keyed(
        &c,
        &usage,
        "usage-1",
        json!({"items": [item("stt", "deepgram", None, 5.0, "seconds")]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    let (status, report) = c.get("/api/usage").await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(
        report["data"]["totals"]["credits"], 19.0,
        "charged once each"
    );
    server.stop().await;
}

/// What a crash between a create's commit and the storing of its answer leaves of the keys'
/// rows: none (a key released, or never stored).
async fn forget_idempotency_answers(ctx: &TestContext) {
    use sea_orm::ConnectionTrait;
    ctx.repo
        .connection()
        .execute_unprepared("DELETE FROM idempotency_keys")
        .await
        .unwrap();
}

db_tests!(
    a_retried_usage_post_charges_once,
    usage_is_priced_when_recorded,
    concurrent_usage_posts_lose_nothing,
    the_usage_report_adds_up_the_items,
);
