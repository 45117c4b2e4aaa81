//! Calls that come in (DESIGN §18): Twilio's voice request answered with TwiML, Telnyx's
//! `call.initiated` answered by a job, one call per provider call id, the refusals, and the
//! reports that move calls forward, on a line at the fake provider.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, ResponseTemplate};

use super::line::{CONNECTION, Line, NUMBER, Provider, RUNTIME};

/// The `<Stream url>` and `call_sid` parameter of a TwiML answer.
fn streamed(twiml: &str) -> (String, String) {
    let url = twiml
        .split("<Stream url=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no stream in {twiml}"))
        .to_owned();
    let sid = twiml
        .split("<Parameter name=\"call_sid\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no call_sid in {twiml}"))
        .to_owned();
    (url, sid)
}

async fn text(resp: reqwest::Response) -> (StatusCode, String, String) {
    let status = resp.status();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, content_type, resp.text().await.unwrap())
}

const REJECT: &str = "<Response><Reject reason=\"rejected\"/></Response>";

/// A Twilio call to a connected number: recorded `inbound`/`ringing` once however often Twilio
/// asks (eight racing requests included), answered with the stream TwiML, then moved forward
/// by the number's status callbacks — a late one ignored, the end with Twilio's duration — with
/// `call.created` and one `call.updated` per change. A bad signature is a 403 that says
/// nothing of why and changes nothing.
async fn a_twilio_call_comes_in_is_streamed_and_followed(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    let voice = [
        ("CallSid", "CA00000000000000000000000000000001"),
        ("AccountSid", super::line::SID),
        ("From", "+33612345678"),
        ("To", NUMBER),
        ("Direction", "inbound"),
        ("CallStatus", "ringing"),
    ];
    let voice_path = format!("/telephony/twilio/{}/voice", line.integration_id);
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..8 {
        racing.spawn(
            line.twilio_request(super::line::TOKEN, &voice_path, &voice)
                .send(),
        );
    }
    let mut sids = Vec::new();
    while let Some(resp) = racing.join_next().await {
        let resp = resp.unwrap().expect("the voice request is answered");
        let (status, content_type, twiml) = text(resp).await;
        assert_eq!(status, StatusCode::OK, "{twiml}");
        assert_eq!(content_type, "text/xml");
        let (url, sid) = streamed(&twiml);
        assert_eq!(url, format!("{RUNTIME}/{sid}"));
        assert!(
            twiml.contains(&format!(
                "<Parameter name=\"agent_id\" value=\"{}\"/>",
                line.agent_id
            )),
            "{twiml}"
        );
        assert!(twiml.ends_with("</Connect><Hangup/></Response>"), "{twiml}");
        sids.push(sid);
    }
    sids.sort();
    sids.dedup();
    assert_eq!(sids.len(), 1, "one call for one CallSid: {sids:?}");
    let sid = sids.remove(0);
    let calls = line.calls().await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call["call_sid"], sid.as_str());
    assert_eq!(call["call_type"], "inbound");
    assert_eq!(call["status"], "ringing");
    assert_eq!(call["provider"], "twilio");
    assert_eq!(
        call["provider_call_id"],
        "CA00000000000000000000000000000001"
    );
    assert_eq!(call["phone_number_id"], line.number_id.as_str());
    assert_eq!(call["from_number"], "+33612345678");
    assert_eq!(call["to_number"], NUMBER);
    assert_eq!(call["agent_id"], line.agent_id.as_str());
    assert_eq!(call["dynamic_variables"], json!({}));

    // A forged report: 403, the same sentence whatever is wrong, nothing moves.
    let forged = line
        .twilio_as(
            "not-the-token",
            &format!("/telephony/twilio/{}/status", line.integration_id),
            &[
                ("CallSid", "CA00000000000000000000000000000001"),
                ("CallStatus", "completed"),
            ],
        )
        .await;
    let (status, forged) = read_json(forged).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{forged}");
    let unsigned = http_client()
        .post(
            line.server
                .url(&format!("/telephony/twilio/{}/status", line.integration_id)),
        )
        .form(&[
            ("CallSid", "CA00000000000000000000000000000001"),
            ("CallStatus", "completed"),
        ])
        .send()
        .await
        .unwrap();
    let (status, unsigned) = read_json(unsigned).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(forged["detail"], unsigned["detail"]);
    let unknown_integration = line
        .twilio_as(
            super::line::TOKEN,
            "/telephony/twilio/intg_000000000000/status",
            &[("CallSid", "CA00000000000000000000000000000001")],
        )
        .await;
    let (status, unknown) = read_json(unknown_integration).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(unknown["detail"], forged["detail"]);
    assert_eq!(line.call(&sid).await["status"], "ringing");

    let report = |status: &'static str, extra: Vec<(&'static str, &'static str)>| {
        let mut form = vec![
            ("CallSid", "CA00000000000000000000000000000001"),
            ("CallStatus", status),
        ];
        form.extend(extra);
        form
    };
    let ok = line.twilio("/status", &report("in-progress", vec![])).await;
    assert_eq!(ok.status(), StatusCode::OK);
    let live = line.call(&sid).await;
    assert_eq!(live["status"], "in_progress");
    assert!(live["start_time"].is_string(), "{live}");
    // Late and repeated reports change nothing.
    line.twilio("/status", &report("ringing", vec![])).await;
    line.twilio("/status", &report("in-progress", vec![])).await;
    assert_eq!(line.call(&sid).await, live);
    line.twilio(
        "/status",
        &report("completed", vec![("CallDuration", "42")]),
    )
    .await;
    let ended = line.call(&sid).await;
    assert_eq!(ended["status"], "completed");
    assert_eq!(ended["duration_seconds"], 42.0);
    assert_eq!(ended["end_reason"], "hangup");
    assert!(ended["end_time"].is_string());
    // A terminal status is final.
    line.twilio("/status", &report("failed", vec![])).await;
    assert_eq!(line.call(&sid).await["status"], "completed");

    let (_, events) = line
        .c
        .get("/api/events?type=call.created&type=call.updated")
        .await;
    let mine: Vec<&Value> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["call_sid"] == sid.as_str())
        .collect();
    let types: Vec<&str> = mine.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types.iter().filter(|t| **t == "call.created").count(),
        1,
        "{types:?}"
    );
    assert_eq!(
        types.iter().filter(|t| **t == "call.updated").count(),
        2,
        "{types:?}"
    );
    line.close().await;
}

/// A Telnyx call to a connected number: 200 at once, recorded once, answered by a job that
/// streams it to the runtime with voiceplane's id as `client_state` and a `command_id`; then
/// `call.answered` and `call.hangup` move it. A signature too old, or by another key, is 403.
async fn a_telnyx_call_comes_in_and_is_answered_by_a_job(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Telnyx).await;
    Mock::given(method("POST"))
        .and(path_regex(r"^/v2/calls/.*/actions/answer$"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": {"result": "ok"}})))
        .mount(&line.provider)
        .await;
    let incoming = json!({"call_control_id": "v3:incoming-1", "connection_id": CONNECTION,
                          "direction": "incoming", "from": "+33612345678", "to": NUMBER,
                          "state": "parked"});
    for _ in 0..3 {
        let resp = line.telnyx(ctx, "call.initiated", incoming.clone()).await;
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let calls = line.calls().await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    let sid = calls[0]["call_sid"].as_str().unwrap().to_owned();
    assert_eq!(calls[0]["provider"], "telnyx");
    assert_eq!(calls[0]["provider_call_id"], "v3:incoming-1");
    assert_eq!(calls[0]["status"], "ringing");

    let answer_path = "/v2/calls/v3:incoming-1/actions/answer";
    eventually("the answer is sent", || async {
        !line.sent_to(answer_path).await.is_empty()
    })
    .await;
    let answers = line.sent_to(answer_path).await;
    assert_eq!(answers.len(), 1);
    let body: Value = serde_json::from_slice(&answers[0].body).unwrap();
    assert_eq!(body["stream_url"], format!("{RUNTIME}/{sid}"));
    assert_eq!(body["stream_track"], "inbound_track");
    assert_eq!(body["stream_bidirectional_mode"], "rtp");
    assert_eq!(body["stream_bidirectional_codec"], "PCMU");
    assert_eq!(
        body["client_state"],
        voiceplane_core::telephony::client_state(&sid, None)
    );
    assert!(body["command_id"].is_string(), "{body}");
    assert_eq!(
        answers[0].headers.get("authorization").unwrap(),
        "Bearer KEYtelnyx"
    );

    let state = voiceplane_core::telephony::client_state(&sid, None);
    let old = line
        .telnyx_at(
            ctx,
            "call.answered",
            json!({"call_control_id": "v3:incoming-1"}),
            -301,
        )
        .await;
    assert_eq!(old.status(), StatusCode::FORBIDDEN);
    assert_eq!(line.call(&sid).await["status"], "ringing");
    line.telnyx(
        ctx,
        "call.answered",
        json!({"call_control_id": "v3:incoming-1", "client_state": state}),
    )
    .await;
    assert_eq!(line.call(&sid).await["status"], "in_progress");
    // Unknown events and calls: 200, ignored.
    let other = line
        .telnyx(
            ctx,
            "call.speak.ended",
            json!({"call_control_id": "v3:incoming-1"}),
        )
        .await;
    assert_eq!(other.status(), StatusCode::OK);
    let stranger = line
        .telnyx(
            ctx,
            "call.hangup",
            json!({"call_control_id": "v3:nobody", "hangup_cause": "normal_clearing"}),
        )
        .await;
    assert_eq!(stranger.status(), StatusCode::OK);
    line.telnyx(
        ctx,
        "call.hangup",
        json!({"call_control_id": "v3:incoming-1", "hangup_cause": "normal_clearing"}),
    )
    .await;
    let ended = line.call(&sid).await;
    assert_eq!(ended["status"], "completed");
    assert_eq!(ended["end_reason"], "hangup");
    assert!(ended["duration_seconds"].as_f64().unwrap() >= 0.0);
    line.close().await;
}

/// Refusals: a number voiceplane does not know is rejected and nothing is recorded; a number
/// without an agent, or that takes no inbound calls, is rejected and the call recorded
/// `failed` (`rejected`); without a runtime URL likewise. Telnyx's rejection is a job.
async fn calls_that_cannot_be_taken_are_rejected(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    let ask = |call: &'static str, to: &'static str| {
        let line = &line;
        async move {
            let resp = line
                .twilio(
                    "/voice",
                    &[("CallSid", call), ("From", "+33612345678"), ("To", to)],
                )
                .await;
            text(resp).await
        }
    };
    let (status, _, twiml) = ask("CA00000000000000000000000000000010", "+14155550111").await;
    assert_eq!(status, StatusCode::OK);
    assert!(twiml.ends_with(REJECT), "{twiml}");
    let (_, all) = line.c.get("/api/calls").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 0, "{all}");

    let number_path = format!("/api/phone-numbers/{}", line.number_id);
    let (status, body) = line
        .c
        .send(
            reqwest::Method::PATCH,
            &number_path,
            Some(json!({"supports_inbound": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, _, twiml) = ask("CA00000000000000000000000000000011", NUMBER).await;
    assert!(twiml.ends_with(REJECT), "{twiml}");
    let (_, _, again) = ask("CA00000000000000000000000000000011", NUMBER).await;
    assert!(again.ends_with(REJECT), "{again}");
    let calls = line.calls().await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["status"], "failed");
    assert_eq!(calls[0]["end_reason"], "rejected");

    line.c
        .send(
            reqwest::Method::PATCH,
            &number_path,
            Some(json!({"supports_inbound": true, "assigned_agent_id": null})),
        )
        .await;
    let (_, _, twiml) = ask("CA00000000000000000000000000000012", NUMBER).await;
    assert!(twiml.ends_with(REJECT), "{twiml}");
    line.c
        .send(
            reqwest::Method::PATCH,
            &number_path,
            Some(json!({"assigned_agent_id": line.agent_id})),
        )
        .await;
    line.c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"runtime_stream_url": null})),
        )
        .await;
    let (_, _, twiml) = ask("CA00000000000000000000000000000013", NUMBER).await;
    assert!(twiml.ends_with(REJECT), "{twiml}");
    let calls = line.calls().await;
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|c| c["status"] == "failed" && c["end_reason"] == "rejected")
    );
    line.close().await;

    let line = Line::open(ctx, Provider::Telnyx).await;
    Mock::given(method("POST"))
        .and(path_regex(r"^/v2/calls/.*/actions/reject$"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": {}})))
        .mount(&line.provider)
        .await;
    line.c
        .send(
            reqwest::Method::PATCH,
            &format!("/api/phone-numbers/{}", line.number_id),
            Some(json!({"supports_inbound": false})),
        )
        .await;
    line.telnyx(
        ctx,
        "call.initiated",
        json!({"call_control_id": "v3:refused", "direction": "incoming",
               "from": "+33612345678", "to": NUMBER}),
    )
    .await;
    let path = "/v2/calls/v3:refused/actions/reject";
    eventually("the rejection is sent", || async {
        !line.sent_to(path).await.is_empty()
    })
    .await;
    let body: Value = serde_json::from_slice(&line.sent_to(path).await[0].body).unwrap();
    assert_eq!(body["cause"], "CALL_REJECTED");
    assert!(
        line.sent_to("/v2/calls/v3:refused/actions/answer")
            .await
            .is_empty()
    );
    line.close().await;
}

/// The webhooks read at most 64 KiB (413 beyond), and bad signatures are counted per
/// integration, never per address (the providers send every tenant's webhooks from the same
/// few): after 100 bad signatures from one address, past the integration's budget they get 429,
/// while a well signed webhook from that address is still served, another integration's bad
/// signature is still a 403, and the address's API requests are neither blocked nor charged.
async fn webhooks_are_bounded_and_bad_signatures_are_limited_per_integration(ctx: &TestContext) {
    use voiceplane_http::RateLimits;
    let line = Line::open_built(
        ctx,
        Provider::Twilio,
        std::time::Duration::from_secs(10),
        false,
        |api| {
            api.with_rate_limits(RateLimits {
                auth_failures_per_minute: 3,
                ..RateLimits::default()
            })
        },
    )
    .await;
    let big = "x".repeat(65 * 1024);
    let resp = line
        .twilio(
            "/voice",
            &[
                ("CallSid", "CA00000000000000000000000000000020"),
                ("Pad", &big),
            ],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(line.calls().await.is_empty());
    let voice = [
        ("CallSid", "CA00000000000000000000000000000021"),
        ("From", "+33612345678"),
        ("To", NUMBER),
    ];
    let path = format!("/telephony/twilio/{}/voice", line.integration_id);
    let mut statuses = Vec::new();
    for _ in 0..100 {
        let resp = line.twilio_as("forged", &path, &voice).await;
        if resp.status() == StatusCode::TOO_MANY_REQUESTS {
            let retry: u64 = resp.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=60).contains(&retry), "{retry}");
        }
        statuses.push(resp.status());
    }
    // The budget of 3 (and what refills meanwhile, one each 20 s), then 429s.
    assert_eq!(statuses[..3], [StatusCode::FORBIDDEN; 3]);
    let limited = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert!(limited >= 90, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::FORBIDDEN || *s == StatusCode::TOO_MANY_REQUESTS)
    );
    assert!(line.calls().await.is_empty(), "nothing forged is recorded");

    // Twilio's own request, from the same address, to the same integration: served.
    let resp = line.twilio("/voice", &voice).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(line.calls().await.len(), 1);

    // Another integration's budget is its own.
    let mut other = line.integration_id.clone();
    let last = if other.ends_with('0') { "1" } else { "0" };
    other.replace_range(other.len() - 1.., last);
    let resp = line
        .twilio_as(
            "forged",
            &format!("/telephony/twilio/{other}/voice"),
            &voice,
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);

    // The address was never charged: a good key is served, a wrong one is a plain 401.
    let (status, _) = line.c.get("/api/calls").await;
    assert_eq!(status, StatusCode::OK);
    let wrong = line.c.with_key(&format!("vpk_{}", "x".repeat(40)));
    let (status, _) = wrong.get("/api/calls").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    line.close().await;
}

/// What routes an incoming call (the number's agent, the organization's runtime URL, the
/// integration's token) is kept by every instance between calls, and follows each change
/// made through another instance.
async fn an_incoming_calls_route_follows_changes_made_elsewhere(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    let other = ctx.another_instance().await;
    let twin = TestServer::start_at(ctx, Default::default(), |_, base| {
        super::line::telephony_service(
            &other,
            &line.provider,
            base,
            std::time::Duration::from_secs(10),
        )
    })
    .await;
    let voice_path = format!("/telephony/twilio/{}/voice", line.integration_id);
    let calls = std::sync::atomic::AtomicUsize::new(0);
    // A new call to the twin, signed with `token`: its status and TwiML.
    let ring = |token: &'static str| {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let params: Vec<(String, String)> = [
            ("CallSid", format!("CA{n:032x}")),
            ("From", "+33612345678".to_owned()),
            ("To", NUMBER.to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let request = super::line::signed_twilio(twin.url(&voice_path), token, &params);
        async move {
            let resp = request.send().await.unwrap();
            let (status, _, twiml) = text(resp).await;
            (status, twiml)
        }
    };
    // Rings until `done` holds (another instance's change may take a moment to be heard).
    let until = |token: &'static str, done: fn(StatusCode, &str) -> bool| {
        let ring = &ring;
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let (status, twiml) = ring(token).await;
                if done(status, &twiml) || std::time::Instant::now() > deadline {
                    return (status, twiml);
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    let (status, twiml) = ring(super::line::TOKEN).await;
    assert_eq!(status, StatusCode::OK, "{twiml}");
    assert!(streamed(&twiml).0.starts_with(RUNTIME), "{twiml}");

    let moved = "wss://moved.example.com/media";
    let (status, body) = line
        .c
        .send(
            Method::PATCH,
            "/api/organization/settings",
            Some(json!({"runtime_stream_url": moved})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, twiml) = until(super::line::TOKEN, |_, t| t.contains("moved.example.com")).await;
    assert_eq!(status, StatusCode::OK, "{twiml}");
    assert!(streamed(&twiml).0.starts_with(moved), "{twiml}");

    let rotated = "a-new-twilio-auth-token";
    let (status, body) = line
        .c
        .send(
            Method::PATCH,
            &format!("/api/integrations/{}", line.integration_id),
            Some(json!({"credentials": {"account_sid": super::line::SID, "auth_token": rotated}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, twiml) = until(super::line::TOKEN, |s, _| s == StatusCode::FORBIDDEN).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the old token: {twiml}");
    let (status, twiml) = ring(rotated).await;
    assert_eq!(status, StatusCode::OK, "the new token: {twiml}");

    let (status, body) = line
        .c
        .send(
            Method::PATCH,
            &format!("/api/phone-numbers/{}", line.number_id),
            Some(json!({"assigned_agent_id": null})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, twiml) = until(rotated, |_, t| t.ends_with(REJECT)).await;
    assert_eq!(status, StatusCode::OK, "{twiml}");
    assert!(twiml.ends_with(REJECT), "no agent, rejected: {twiml}");
    twin.stop().await;
    line.close().await;
}

db_tests!(
    an_incoming_calls_route_follows_changes_made_elsewhere,
    webhooks_are_bounded_and_bad_signatures_are_limited_per_integration,
    a_twilio_call_comes_in_is_streamed_and_followed,
    a_telnyx_call_comes_in_and_is_answered_by_a_job,
    calls_that_cannot_be_taken_are_rejected,
);
