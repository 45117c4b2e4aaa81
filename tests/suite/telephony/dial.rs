//! Calls that go out (DESIGN §18): `POST /api/calls/dial`, its checks, the `call.dial` job at
//! the fake Twilio and Telnyx, the promise that nobody is called twice for one dial whatever
//! fails, hanging up, and the runtime's session.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use voiceplane_suite::*;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, ResponseTemplate};

use super::line::{
    CALLEE, CONNECTION, Line, NUMBER, Provider, RUNTIME, Runner, field, form, telephony_service,
};

const CALLS: &str = "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls.json";

/// Twilio creates the call `sid`.
pub(super) async fn twilio_creates(line: &Line, sid: &str) {
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(
            ResponseTemplate::new(201).set_body_json(json!({"sid": sid, "status": "queued"})),
        )
        .mount(&line.provider)
        .await;
}

pub(super) fn sid_of(body: &Value) -> String {
    body["data"]["call_sid"]
        .as_str()
        .expect("a call")
        .to_owned()
}

/// A dial through Twilio: 201 `queued` with what the dial carried, one create request with the
/// stream TwiML, the per-call status URL and its events, the ring timeout and machine
/// detection; the provider's id recorded; its reports move the call to the end; hanging up an
/// ended call is 409.
async fn a_twilio_dial_places_one_call_and_follows_it(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000099").await;
    let resp = line
        .c
        .request(reqwest::Method::POST, "/api/calls/dial")
        .json(&json!({"agent_id": line.agent_id, "to_number": CALLEE,
                      "from_phone_number_id": line.number_id,
                      "dynamic_variables": {"first_name": "Ada"},
                      "metadata": {"crm_id": 42}, "timezone": "Europe/Paris"}))
        .send()
        .await
        .unwrap();
    // `Location` resolves against the request's URL to the call.
    let location = resp
        .headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let (status, body) = read_json(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(location, body["data"]["call_sid"].as_str().unwrap());
    let call = &body["data"];
    let sid = sid_of(&body);
    assert_eq!(call["status"], "queued");
    assert_eq!(call["call_type"], "outbound");
    assert_eq!(call["provider"], "twilio");
    assert_eq!(call["from_number"], NUMBER);
    assert_eq!(call["to_number"], CALLEE);
    assert_eq!(call["dynamic_variables"], json!({"first_name": "Ada"}));
    assert_eq!(call["metadata"], json!({"crm_id": 42}));
    assert_eq!(call["timezone"], "Europe/Paris");

    let placed = line
        .call_until(&sid, "the provider's id is recorded", |c| {
            c["provider_call_id"].is_string()
        })
        .await;
    assert_eq!(
        placed["provider_call_id"],
        "CA00000000000000000000000000000099"
    );
    let sent = line.sent_to(CALLS).await;
    assert_eq!(sent.len(), 1);
    let f = form(&sent[0].body);
    assert_eq!(field(&f, "To"), [CALLEE]);
    assert_eq!(field(&f, "From"), [NUMBER]);
    assert_eq!(field(&f, "Timeout"), ["30"]);
    assert_eq!(field(&f, "MachineDetection"), ["Enable"]);
    assert_eq!(
        field(&f, "StatusCallbackEvent"),
        ["initiated", "ringing", "answered", "completed"]
    );
    let status_path = format!("/telephony/twilio/{}/status/{sid}", line.integration_id);
    assert_eq!(
        field(&f, "StatusCallback"),
        [line.server.url(&status_path).as_str()]
    );
    let twiml = field(&f, "Twiml")[0];
    assert!(
        twiml.contains(&format!("<Stream url=\"{RUNTIME}/{sid}\">")),
        "{twiml}"
    );

    let report = |status: &'static str| {
        vec![
            ("CallSid", "CA00000000000000000000000000000099"),
            ("CallStatus", status),
        ]
    };
    for step in ["initiated", "ringing", "in-progress"] {
        let resp = line
            .twilio_as(super::line::TOKEN, &status_path, &report(step))
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let mut answered = report("in-progress");
    answered.push(("AnsweredBy", "machine_end_beep"));
    line.twilio_as(super::line::TOKEN, &status_path, &answered)
        .await;
    let live = line.call(&sid).await;
    assert_eq!(live["status"], "in_progress");
    assert_eq!(live["answered_by"], "machine");
    let mut done = report("completed");
    done.push(("CallDuration", "7"));
    line.twilio_as(super::line::TOKEN, &status_path, &done)
        .await;
    let ended = line.call(&sid).await;
    assert_eq!(ended["status"], "completed");
    assert_eq!(ended["duration_seconds"], 7.0);
    let (status, body) = line
        .c
        .post(&format!("/api/calls/{sid}/hangup"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(line.sent_to(CALLS).await.len(), 1);
    line.close().await;
}

/// A dial through Telnyx: one `POST /v2/calls` with the connection, the stream, voiceplane's
/// id as `client_state` and as `command_id` (which Telnyx deduplicates); its events find the
/// call by `client_state` and move it.
async fn a_telnyx_dial_places_one_call_and_follows_it(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Telnyx).await;
    Mock::given(method("POST"))
        .and(path("/v2/calls"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(
                json!({"data": {"call_control_id": "v3:out-1", "call_leg_id": "leg"}}),
            ),
        )
        .mount(&line.provider)
        .await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sid = sid_of(&body);
    line.call_until(&sid, "the provider's id is recorded", |c| {
        c["provider_call_id"] == "v3:out-1"
    })
    .await;
    let sent = line.sent_to("/v2/calls").await;
    assert_eq!(sent.len(), 1);
    let dial: Value = serde_json::from_slice(&sent[0].body).unwrap();
    assert_eq!(dial["connection_id"], CONNECTION);
    assert_eq!(dial["to"], CALLEE);
    assert_eq!(dial["from"], NUMBER);
    assert_eq!(dial["command_id"], sid.as_str());
    assert_eq!(dial["stream_url"], format!("{RUNTIME}/{sid}"));
    assert_eq!(dial["answering_machine_detection"], "detect");
    assert_eq!(dial["timeout_secs"], 30);
    assert_eq!(
        dial["webhook_url"],
        line.server
            .url(&format!("/telephony/telnyx/{}/events", line.integration_id))
    );
    let state = dial["client_state"].as_str().unwrap().to_owned();
    line.telnyx(
        ctx,
        "call.machine.detection.ended",
        json!({"call_control_id": "v3:out-1", "client_state": state, "result": "human"}),
    )
    .await;
    line.telnyx(
        ctx,
        "call.answered",
        json!({"call_control_id": "v3:out-1", "client_state": state}),
    )
    .await;
    let live = line.call(&sid).await;
    assert_eq!(live["status"], "in_progress");
    assert_eq!(live["answered_by"], "human");
    line.telnyx(
        ctx,
        "call.hangup",
        json!({"call_control_id": "v3:out-1", "client_state": state, "hangup_cause": "user_busy"}),
    )
    .await;
    assert_eq!(line.call(&sid).await["status"], "busy");
    line.close().await;
}

/// Every refusal of a dial is a 4xx with a sentence, and creates no call and no job (the
/// fake provider is never asked).
async fn refused_dials_create_nothing(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000098").await;
    let check = |expected: StatusCode, extra: Value, needle: &'static str| {
        let line = &line;
        async move {
            let (status, body) = line.dial(extra.clone()).await;
            assert_eq!(status, expected, "{extra}: {body}");
            let detail = body["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(needle), "{extra}: {detail}");
        }
    };
    check(
        StatusCode::NOT_FOUND,
        json!({"agent_id": "agent_000000000000"}),
        "agent",
    )
    .await;
    check(
        StatusCode::NOT_FOUND,
        json!({"from_phone_number_id": "phon_000000000000"}),
        "phone number",
    )
    .await;
    check(
        StatusCode::BAD_REQUEST,
        json!({"to_number": "0612"}),
        "to_number",
    )
    .await;
    check(
        StatusCode::BAD_REQUEST,
        json!({"timezone": "Mars/Olympus"}),
        "timezone",
    )
    .await;
    check(
        StatusCode::BAD_REQUEST,
        json!({"dynamic_variables": {"bad name": "x"}}),
        "dynamic_variables",
    )
    .await;
    let number_path = format!("/api/phone-numbers/{}", line.number_id);
    let patch = |body: Value| {
        let line = &line;
        let number_path = number_path.clone();
        async move {
            let (status, answer) = line
                .c
                .send(reqwest::Method::PATCH, &number_path, Some(body))
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
        }
    };
    patch(json!({"supports_outbound": false})).await;
    check(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({}),
        "supports_outbound",
    )
    .await;
    patch(json!({"supports_outbound": true, "integration_id": null})).await;
    check(StatusCode::UNPROCESSABLE_ENTITY, json!({}), "integration").await;
    patch(json!({"integration_id": line.integration_id})).await;
    line.c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"runtime_stream_url": null})),
        )
        .await;
    check(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({}),
        "runtime_stream_url",
    )
    .await;
    // A Telnyx integration without its connection.
    let telnyx = line
        .c
        .create(
            "/api/integrations",
            json!({"name": "T", "provider": "telnyx", "category": "telephony",
                   "credentials": {"api_key": "k"}}),
        )
        .await;
    line.c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"runtime_stream_url": RUNTIME})),
        )
        .await;
    patch(json!({"integration_id": telnyx["integration_id"]})).await;
    check(StatusCode::UNPROCESSABLE_ENTITY, json!({}), "connection_id").await;

    let (_, all) = line.c.get("/api/calls").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 0, "{all}");
    // Another organization's agent is not found either.
    let (_, events) = line.c.get("/api/events?type=call.created").await;
    assert_eq!(events["data"].as_array().unwrap().len(), 0);
    assert!(line.provider.received_requests().await.unwrap().is_empty());
    line.close().await;
}

/// Hanging up: a call not yet dialed is `canceled` and never dialed; a live Twilio call is
/// `completed` at Twilio (202); when Twilio says it is gone, it ends at once, `provider_lost`
/// (202), and hanging it up again is 409; unreachable, 502.
async fn calls_are_hung_up(ctx: &TestContext) {
    let mut line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    twilio_creates(&line, "CA00000000000000000000000000000094").await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    let (status, body) = line
        .c
        .post(&format!("/api/calls/{sid}/hangup"), json!({}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["data"]["status"], "canceled");
    line.run_jobs();
    let (_, second) = line.dial(json!({})).await;
    let live = sid_of(&second);
    line.call_until(&live, "the second dial is placed", |c| {
        c["provider_call_id"].is_string()
    })
    .await;
    // Only the second dial was sent.
    assert_eq!(line.sent_to(CALLS).await.len(), 1);
    assert_eq!(line.call(&sid).await["status"], "canceled");

    let status_path = format!("/telephony/twilio/{}/status/{live}", line.integration_id);
    line.twilio_as(
        super::line::TOKEN,
        &status_path,
        &[
            ("CallSid", "CA00000000000000000000000000000094"),
            ("CallStatus", "in-progress"),
        ],
    )
    .await;
    let call_path = "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls/CA00000000000000000000000000000094.json";
    Mock::given(method("POST"))
        .and(path(call_path))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"status": "completed"})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&line.provider)
        .await;
    Mock::given(method("POST"))
        .and(path(call_path))
        .respond_with(ResponseTemplate::new(404).set_body_json(
            json!({"code": 20404, "message": "The requested resource was not found", "status": 404}),
        ))
        .mount(&line.provider)
        .await;
    let hangup = format!("/api/calls/{live}/hangup");
    let (status, body) = line.c.post(&hangup, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let sent = line.sent_to(call_path).await;
    assert_eq!(field(&form(&sent[0].body), "Status"), ["completed"]);
    // Twilio's report of the end was lost; Twilio says the call is gone.
    assert_eq!(line.call(&live).await["status"], "in_progress");
    let (status, body) = line.c.post(&hangup, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["data"]["status"], "failed", "{body}");
    assert_eq!(body["data"]["end_reason"], "provider_lost", "{body}");
    assert_eq!(line.call(&live).await["end_reason"], "provider_lost");
    line.twilio(
        &format!("/status/{live}"),
        &[
            ("CallSid", "CA00000000000000000000000000000094"),
            ("CallStatus", "completed"),
        ],
    )
    .await;
    assert_eq!(line.call(&live).await["status"], "completed");
    let (status, body) = line.c.post(&hangup, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    line.close().await;

    // The provider failing: 502, and the call is left as it was.
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000093").await;
    Mock::given(method("POST"))
        .and(path_regex(r"/Calls/CA0+93\.json$"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&line.provider)
        .await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    line.call_until(&sid, "placed", |c| c["provider_call_id"].is_string())
        .await;
    let (status, body) = line
        .c
        .post(&format!("/api/calls/{sid}/hangup"), json!({}))
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(!body.to_string().contains(super::line::TOKEN), "{body}");
    assert_eq!(line.call(&sid).await["status"], "queued");
    line.close().await;
}

/// The runtime's one request: the call, its agent, the agent's tools in order, and the dial's
/// variables and metadata; it needs `agents:read` besides `calls:read`.
async fn the_runtime_reads_its_session(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000092").await;
    let tool = line.c.create("/api/tools", tool_body("lookup")).await;
    let tool_id = tool["tool_id"].as_str().unwrap();
    let (status, body) = line
        .c
        .send(
            reqwest::Method::PATCH,
            &format!("/api/agents/{}", line.agent_id),
            Some(json!({"custom_tools": [tool_id]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = line
        .dial(json!({"dynamic_variables": {"first_name": "Ada"}, "metadata": {"tier": "gold"}}))
        .await;
    let sid = sid_of(&body);
    let key = line
        .c
        .create(
            "/api/api-keys",
            json!({"name": "runtime", "role": "user", "scopes": ["calls:read", "agents:read"]}),
        )
        .await;
    let runtime = line.c.with_key(key["api_key"].as_str().unwrap());
    let (status, session) = runtime.get(&format!("/api/calls/{sid}/session")).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    let data = &session["data"];
    assert_eq!(data["call"]["call_sid"], sid.as_str());
    assert_eq!(data["agent"]["agent_id"], line.agent_id.as_str());
    assert_eq!(data["tools"][0]["tool_id"], tool_id);
    assert_eq!(data["dynamic_variables"], json!({"first_name": "Ada"}));
    assert_eq!(data["metadata"], json!({"tier": "gold"}));
    let narrow = line
        .c
        .create(
            "/api/api-keys",
            json!({"name": "calls only", "role": "user", "scopes": ["calls:read"]}),
        )
        .await;
    let (status, body) = line
        .c
        .with_key(narrow["api_key"].as_str().unwrap())
        .get(&format!("/api/calls/{sid}/session"))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    line.close().await;
}

/// Two instances on one database, each with a runner: a dial is sent once, and reports
/// reaching either instance apply.
async fn two_instances_send_a_dial_once(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    // A new call sid for every create, as Twilio's.
    let created = std::sync::atomic::AtomicUsize::new(0);
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(move |_: &wiremock::Request| {
            let n = created.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            ResponseTemplate::new(201).set_body_json(json!({"sid": format!("CA{n:032x}")}))
        })
        .mount(&line.provider)
        .await;
    let other = ctx.another_instance().await;
    let mut twin = None;
    let twin_server = TestServer::start_at(ctx, Default::default(), |_, base| {
        let s = telephony_service(&other, &line.provider, base, Duration::from_secs(10));
        twin = Some(s.clone());
        s
    })
    .await;
    let twin_runner = Runner::start(&twin.expect("configured"), "twin-runner");
    let mut sids = Vec::new();
    for _ in 0..6 {
        let (status, body) = line.dial(json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        sids.push(sid_of(&body));
    }
    for sid in &sids {
        line.call_until(sid, "placed", |c| c["provider_call_id"].is_string())
            .await;
    }
    assert_eq!(line.sent_to(CALLS).await.len(), sids.len());
    // A report through the other instance applies.
    let status_path = format!(
        "/telephony/twilio/{}/status/{}",
        line.integration_id, sids[0]
    );
    let url = twin_server.url(&status_path);
    let provider_sid = line.call(&sids[0]).await["provider_call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let params = vec![
        ("CallSid".to_owned(), provider_sid),
        ("CallStatus".to_owned(), "in-progress".to_owned()),
    ];
    let resp = super::line::signed_twilio(url, super::line::TOKEN, &params)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(line.call(&sids[0]).await["status"], "in_progress");
    twin_runner.stop().await;
    twin_server.stop().await;
    line.close().await;
}

/// A number on the suppression list is never dialed: the dial is a 422 naming the list, and
/// nothing is recorded; once the entry has lapsed or is deleted, the number can be called.
async fn a_suppressed_number_is_never_dialed(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000090").await;
    line.c
        .create(
            "/api/suppressions",
            json!({"phone_number": CALLEE, "reason": "opted out"}),
        )
        .await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("suppression list"),
        "{body}"
    );
    let (_, calls) = line.c.get("/api/calls").await;
    assert_eq!(calls["data"].as_array().unwrap().len(), 0);
    // An entry that lapses stops nothing once it has.
    let lapse = ctx.clock.peek().add_seconds(60).to_rfc3339();
    line.c
        .post(
            "/api/suppressions",
            json!({"phone_number": CALLEE, "expires_at": lapse}),
        )
        .await;
    let (status, _) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    ctx.clock.advance(120);
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(line.provider.received_requests().await.unwrap().len() <= 1);
    line.close().await;
}

/// The organization's calling hours hold in the callee's time zone (the dial's, else their
/// number's country's, all of them when it has several): outside them a dial is a 422
/// naming the local time and zone, and nothing is recorded. Bad settings are 400s naming the field.
async fn dials_keep_to_calling_hours(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000089").await;
    let settings = |body: Value| {
        let c = &line.c;
        async move {
            c.send(
                reqwest::Method::PATCH,
                "/api/organization/settings",
                Some(body),
            )
            .await
        }
    };
    for (bad, field) in [
        (
            json!({"calling_hours": {"start": "9:00", "end": "17:00"}}),
            "calling_hours.start",
        ),
        (
            json!({"calling_hours": {"start": "09:00", "end": "24:00"}}),
            "calling_hours.end",
        ),
        (
            json!({"calling_hours": {"start": "09:00", "end": "09:00"}}),
            "calling_hours",
        ),
        (json!({"timezone": "Europe/Atlantis"}), "timezone"),
        (json!({"max_concurrent_calls": 0}), "max_concurrent_calls"),
    ] {
        let (status, body) = settings(bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(
            body["detail"].as_str().unwrap().starts_with(field),
            "{body}"
        );
    }
    // The test clock reads 2026-01-01, shortly after midnight UTC: 09:00 in Tokyo, 19:00 the
    // day before in New York.
    let (status, body) = settings(json!({"calling_hours": {"start": "08:00", "end": "18:00"},
                                         "timezone": "Asia/Tokyo"}))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["timezone"], "Asia/Tokyo");
    assert_eq!(
        body["data"]["calling_hours"],
        json!({"start": "08:00", "end": "18:00"})
    );
    let (status, body) = line.dial(json!({"timezone": "America/New_York"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with("it is 19:"), "{detail}");
    assert!(detail.contains("America/New_York"), "{detail}");
    let (_, calls) = line.c.get("/api/calls").await;
    assert_eq!(calls["data"].as_array().unwrap().len(), 0);
    // Without a zone of its own, a callee whose country has one zone is in it: 01:00 in
    // Paris.
    let (status, body) = line.dial(json!({"to_number": "+33612345678"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with("it is 01:"), "{detail}");
    assert!(detail.contains("Europe/Paris"), "{detail}");
    // A country of several zones (the United States): every one of them, whatever the
    // organization's (19:00 in New York).
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("America/"),
        "{body}"
    );
    let (status, _) = settings(json!({"calling_hours": null})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = line.dial(json!({"timezone": "America/New_York"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    line.close().await;
}

/// `max_concurrent_calls` counts the organization's outbound calls `queued`, `ringing` or
/// `in_progress`: past it a dial is a 429 with `Retry-After` and nothing is recorded, also
/// when dials race; once a call ends, the next goes through.
async fn dials_keep_to_the_concurrency_limit(ctx: &TestContext) {
    let line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    let (status, body) = line
        .c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"max_concurrent_calls": 3})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let req = line
            .c
            .request(reqwest::Method::POST, "/api/calls/dial")
            .json(&json!({"agent_id": line.agent_id, "to_number": CALLEE,
                          "from_phone_number_id": line.number_id}));
        racing.spawn(async move { req.send().await.unwrap() });
    }
    let mut placed = Vec::new();
    let mut refused = 0;
    while let Some(resp) = racing.join_next().await {
        let resp = resp.unwrap();
        match resp.status() {
            StatusCode::CREATED => {
                let (_, body) = read_json(resp).await;
                placed.push(sid_of(&body));
            }
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(resp.headers().get("retry-after").is_some());
                refused += 1;
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!((placed.len(), refused), (3, 5));
    let (_, calls) = line.c.get("/api/calls").await;
    assert_eq!(calls["data"].as_array().unwrap().len(), 3);
    // One ends (hung up before it was dialed): room for one more.
    let (status, _) = line
        .c
        .post(&format!("/api/calls/{}/hangup", placed[0]), json!({}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    line.close().await;
}

/// A dialed call runs its agent's deployed version, or the one it pins (422 for one that does
/// not exist), and its session returns that version's configuration while the draft has
/// moved on.
async fn a_call_runs_its_agents_version(ctx: &TestContext) {
    let line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    let agent = format!("/api/agents/{}", line.agent_id);
    let prompt = |text: &str| json!({"system_prompt": text});
    let c = &line.c;
    assert_eq!(
        c.send(reqwest::Method::PATCH, &agent, Some(prompt("Version one.")))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        c.post(&format!("{agent}/publish"), json!({})).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        c.send(reqwest::Method::PATCH, &agent, Some(prompt("The draft.")))
            .await
            .0,
        StatusCode::OK
    );

    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["data"]["agent_version"], 1);
    let first = sid_of(&body);
    let (status, session) = c.get(&format!("/api/calls/{first}/session")).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(session["data"]["agent"]["system_prompt"], "Version one.");
    assert_eq!(session["data"]["agent"]["agent_id"], line.agent_id.as_str());

    assert_eq!(
        c.post(&format!("{agent}/publish"), json!({})).await.0,
        StatusCode::CREATED
    );
    let (status, body) = line.dial(json!({"agent_version": 1})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["data"]["agent_version"], 1);
    let (status, body) = line.dial(json!({"agent_version": 7})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("no published version 7"),
        "{body}"
    );
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["data"]["agent_version"], 2);
    let (_, session) = c
        .get(&format!("/api/calls/{}/session", sid_of(&body)))
        .await;
    assert_eq!(session["data"]["agent"]["system_prompt"], "The draft.");
    // The first call still reads version one.
    let (_, session) = c.get(&format!("/api/calls/{first}/session")).await;
    assert_eq!(session["data"]["agent"]["system_prompt"], "Version one.");
    // A call that comes in runs the deployed version too.
    let resp = line
        .twilio(
            "/voice",
            &[
                ("CallSid", "CA00000000000000000000000000000077"),
                ("From", "+33612345678"),
                ("To", NUMBER),
                ("CallStatus", "ringing"),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let (_, inbound) = c.get("/api/calls?call_type=inbound").await;
    assert_eq!(inbound["data"][0]["agent_version"], 2, "{inbound}");
    line.close().await;
}

/// The count of an organization's calls in flight, made in every dial's transaction, reads the
/// partial index of live calls, not all of the organization's outbound calls (SQLite's plan;
/// with the statuses bound as parameters it walked them all).
async fn the_concurrency_count_reads_only_calls_in_flight(ctx: &TestContext) {
    use sea_orm::{ConnectionTrait, DbBackend, QueryTrait, Statement, TransactionTrait};
    let backend = match ctx.backend {
        Backend::Sqlite => DbBackend::Sqlite,
        Backend::Postgres => DbBackend::Postgres,
    };
    let statement = voiceplane_storage::live_outbound("org_x").build(backend);
    let txn = ctx.repo.connection().begin().await.unwrap();
    let explain = match backend {
        DbBackend::Postgres => {
            // An empty table is read whole whatever its indexes: ask for an index plan.
            txn.execute_unprepared("SET LOCAL enable_seqscan = off")
                .await
                .unwrap();
            "EXPLAIN"
        }
        _ => "EXPLAIN QUERY PLAN",
    };
    let plan = txn
        .query_all_raw(Statement {
            sql: format!("{explain} {}", statement.sql),
            ..statement
        })
        .await
        .unwrap();
    let column = match backend {
        DbBackend::Postgres => "QUERY PLAN",
        _ => "detail",
    };
    let details: Vec<String> = plan
        .iter()
        .filter_map(|row| row.try_get::<String>("", column).ok())
        .collect();
    assert!(
        details.iter().any(|d| d.contains("ix_calls_live")),
        "{details:?}"
    );
}

/// `POST /api/calls/dial` with an `Idempotency-Key`, its answer and whether it was marked
/// replayed.
async fn dial_keyed(line: &Line, key: &str, to: &str) -> (StatusCode, Value, bool) {
    let resp = line
        .c
        .request(reqwest::Method::POST, "/api/calls/dial")
        .header("Idempotency-Key", key)
        .json(&json!({"agent_id": line.agent_id, "to_number": to,
                      "from_phone_number_id": line.number_id}))
        .send()
        .await
        .unwrap();
    let replayed = resp.headers().get("idempotent-replayed").is_some();
    let location = resp
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned());
    let (status, body) = read_json(resp).await;
    if status == StatusCode::CREATED {
        assert_eq!(location.as_deref(), Some(sid_of(&body).as_str()));
    }
    (status, body, replayed)
}

/// Runs `sql` (with Postgres's `$1`) on the test's database.
async fn sql(ctx: &TestContext, sql: &str, values: Vec<sea_orm::Value>) {
    use sea_orm::{ConnectionTrait, Statement};
    let db = ctx.repo.connection();
    let backend = db.get_database_backend();
    let sql = match backend {
        sea_orm::DatabaseBackend::Postgres => sql.to_owned(),
        _ => sql.replace('$', "?"),
    };
    db.execute_raw(Statement::from_sql_and_values(backend, sql, values))
        .await
        .unwrap();
}

/// A dial retried with its key after the server died between the call's commit and the
/// answer's storing returns the first call and rings nobody again, whatever the key's row
/// became: still claimed by the dead request (its lease running, then over), or gone (a
/// commit whose acknowledgement was lost answers 500, which releases the key). The database
/// is left as each of those leaves it; the fake provider sees one create.
async fn a_dial_retried_after_a_crash_returns_its_first_call(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000777").await;
    let (status, first, replayed) = dial_keyed(&line, "dial-once", CALLEE).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert!(!replayed);
    let call_sid = sid_of(&first);
    line.call_until(&call_sid, "the dial is placed", |c| {
        c["provider_call_id"] == "CA00000000000000000000000000000777"
    })
    .await;

    // Killed before the answer was stored: the claim stays, its lease running.
    let crashed = || async {
        sql(
            ctx,
            "UPDATE idempotency_keys SET response_meta = NULL, response_body = NULL, \
             locked_until = $1",
            vec![ctx.clock.peek().add_seconds(300).as_micros().into()],
        )
        .await;
    };
    crashed().await;
    let (status, body, replayed) = dial_keyed(&line, "dial-once", CALLEE).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(replayed);
    assert_eq!(sid_of(&body), call_sid, "the first call");
    // Its lease over, the next request takes the key over and runs again: the binding answers.
    crashed().await;
    ctx.clock.advance(301);
    let (status, body, replayed) = dial_keyed(&line, "dial-once", CALLEE).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(replayed);
    assert_eq!(sid_of(&body), call_sid);
    assert_eq!(
        body["data"]["provider_call_id"],
        "CA00000000000000000000000000000777"
    );
    // Released, as a 500 after an ambiguous commit releases it.
    sql(ctx, "DELETE FROM idempotency_keys", vec![]).await;
    let (status, body, replayed) = dial_keyed(&line, "dial-once", CALLEE).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(replayed);
    assert_eq!(sid_of(&body), call_sid);
    // Under the same key another dial is refused, whatever the key's row says.
    sql(ctx, "DELETE FROM idempotency_keys", vec![]).await;
    let (status, body, _) = dial_keyed(&line, "dial-once", "+14155550123").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("different request"),
        "{body}"
    );
    assert_eq!(line.calls().await.len(), 1, "no second call");
    assert_eq!(line.sent_to(CALLS).await.len(), 1, "no second create");
    // A new key dials anew.
    let (status, body, _) = dial_keyed(&line, "dial-twice", CALLEE).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_ne!(sid_of(&body), call_sid);
    eventually("the second dial is sent", || async {
        line.sent_to(CALLS).await.len() == 2
    })
    .await;
    let calls = line.calls().await;
    assert_eq!(calls.len(), 2, "one call per key");
    assert_eq!(line.sent_to(CALLS).await.len(), 2, "one create per key");
    line.close().await;
}

db_tests!(
    a_dial_retried_after_a_crash_returns_its_first_call,
    the_concurrency_count_reads_only_calls_in_flight,
    a_call_runs_its_agents_version,
    dials_keep_to_calling_hours,
    dials_keep_to_the_concurrency_limit,
    a_suppressed_number_is_never_dialed,
    a_twilio_dial_places_one_call_and_follows_it,
    a_telnyx_dial_places_one_call_and_follows_it,
    refused_dials_create_nothing,
    calls_are_hung_up,
    the_runtime_reads_its_session,
    two_instances_send_a_dial_once,
);
