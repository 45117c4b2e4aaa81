//! Telephony under faults (DESIGN §23), against a fake Twilio and Telnyx that can create a call
//! and then fail, or hang: a dial is sent once and the call it made is found and adopted; a
//! dial is checked again as it is sent (suppression, deadline, calling hours, its campaign);
//! a call whose reports are lost is asked about and ended.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use voiceplane_core::model::Call;
use voiceplane_core::repo::CallRepository;
use voiceplane_core::time::Timestamp;
use voiceplane_suite::*;
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, ResponseTemplate};

use super::dial::{sid_of, twilio_creates};
use super::line::{CALLEE, CONNECTION, Line, NUMBER, Provider};

const CALLS: &str = "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls.json";

/// The dials Twilio received (not its list's reads).
async fn creates(line: &Line) -> Vec<wiremock::Request> {
    line.sent_to(CALLS)
        .await
        .into_iter()
        .filter(|r| r.method.as_str() == "POST")
        .collect()
}

/// Twilio's date format (RFC 2822) of `at`.
fn twilio_date(at: Timestamp) -> String {
    chrono::DateTime::from_timestamp_micros(at.as_micros())
        .expect("a date in range")
        .format("%a, %d %b %Y %H:%M:%S +0000")
        .to_string()
}

/// The fake Twilio's list of calls from the line's number to the callee (what a dial's
/// reconciliation asks), holding `calls` (sid, status) created at `at`; of two lists, the one
/// of the lower `priority` answers.
async fn twilio_lists(line: &Line, calls: &[(&str, &str)], at: Timestamp, priority: u8) {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(sid, status)| {
            json!({"sid": sid, "status": status, "to": CALLEE, "from": NUMBER,
                   "date_created": twilio_date(at), "start_time": null})
        })
        .collect();
    Mock::given(method("GET"))
        .and(path(CALLS))
        .and(query_param("To", CALLEE))
        .and(query_param("From", NUMBER))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"calls": calls})))
        .with_priority(priority)
        .mount(&line.provider)
        .await;
}

/// The fake Twilio answers every dial with `status` (after creating the call, as an edge
/// that fails or times out does), at most `times` times.
async fn twilio_answers(line: &Line, status: u16, times: u64) {
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(ResponseTemplate::new(status))
        .up_to_n_times(times)
        .with_priority(1)
        .mount(&line.provider)
        .await;
}

/// A 500, 502 or 504 from Twilio after it created the call: exactly one create request is
/// sent per dial, the job finds the call in Twilio's list and adopts it with the status Twilio
/// gives (a call of the list that another call of ours holds is not taken). A dial whose
/// answer never comes is not sent again either: the call waits, queued, while Twilio is
/// asked, and ends `dial_outcome_unknown` once the reconciliation window has passed without
/// Twilio showing it; a later report still moves it.
async fn an_ambiguous_dial_is_never_sent_again_and_its_call_is_adopted(ctx: &TestContext) {
    for (status, theirs, sid) in [
        (
            500,
            "CA000000000000000000000000000005aa",
            "CA00000000000000000000000000000500",
        ),
        (
            502,
            "CA000000000000000000000000000005ab",
            "CA00000000000000000000000000000502",
        ),
        (
            504,
            "CA000000000000000000000000000005ac",
            "CA00000000000000000000000000000504",
        ),
    ] {
        let line = Line::open(ctx, Provider::Twilio).await;
        twilio_answers(&line, status, u64::MAX).await;
        twilio_lists(&line, &[(theirs, "queued")], ctx.clock.peek(), 5).await;
        let (_, body) = line.dial(json!({})).await;
        let first = sid_of(&body);
        let first = line
            .call_until(&first, "the first dial adopts the call Twilio made", |c| {
                c["provider_call_id"].is_string()
            })
            .await;
        assert_eq!(first["provider_call_id"], theirs, "HTTP {status}");
        // Twilio now lists that call beside the one the next dial makes: the next dial takes
        // the one no call of ours holds.
        twilio_lists(
            &line,
            &[(theirs, "ringing"), (sid, "ringing")],
            ctx.clock.peek(),
            1,
        )
        .await;
        let (_, body) = line.dial(json!({})).await;
        let ours = sid_of(&body);
        let adopted = line
            .call_until(&ours, "the dial adopts the call Twilio made", |c| {
                c["provider_call_id"].is_string()
            })
            .await;
        assert_eq!(adopted["provider_call_id"], sid, "HTTP {status}");
        assert_eq!(adopted["status"], "ringing", "HTTP {status}: {adopted}");
        assert_eq!(creates(&line).await.len(), 2, "HTTP {status}");
        line.close().await;
    }

    let line = Line::open_with(ctx, Provider::Twilio, Duration::from_millis(400), true).await;
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"sid": "CA00000000000000000000000000000097"}))
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&line.provider)
        .await;
    twilio_lists(&line, &[], ctx.clock.peek(), 5).await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sid = sid_of(&body);
    eventually("Twilio is asked for the dial's call", || async {
        line.provider
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .any(|r| r.method.as_str() == "GET" && r.url.path() == CALLS)
    })
    .await;
    assert_eq!(line.call(&sid).await["status"], "queued");
    ctx.clock.advance(301);
    let failed = line
        .call_until(&sid, "the unknown outcome is recorded", |c| {
            c["status"] == "failed"
        })
        .await;
    assert_eq!(failed["end_reason"], "dial_outcome_unknown");
    assert_eq!(creates(&line).await.len(), 1);
    // Twilio did place it after all, and says so.
    line.twilio(
        &format!("/status/{sid}"),
        &[
            ("CallSid", "CA00000000000000000000000000000097"),
            ("CallStatus", "ringing"),
        ],
    )
    .await;
    let moved = line.call(&sid).await;
    assert_eq!(moved["status"], "ringing");
    assert_eq!(moved["end_reason"], Value::Null);
    assert_eq!(
        moved["provider_call_id"],
        "CA00000000000000000000000000000097"
    );
    line.close().await;
}

/// A 503 that created nothing (Twilio's list shows no call of the dial) is sent again and the
/// call proceeds; a 503 after which Twilio shows the call is adopted, never sent again. A
/// refusal is `provider_rejected` with Twilio's code and message, sent once.
async fn a_503_is_sent_again_only_when_nothing_was_created(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_answers(&line, 503, 1).await;
    twilio_creates(&line, "CA00000000000000000000000000000096").await;
    twilio_lists(&line, &[], ctx.clock.peek(), 5).await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    let placed = line
        .call_until(&sid, "the retried dial is placed", |c| {
            c["provider_call_id"].is_string()
        })
        .await;
    assert_eq!(
        placed["provider_call_id"],
        "CA00000000000000000000000000000096"
    );
    assert_eq!(creates(&line).await.len(), 2);
    line.close().await;

    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_answers(&line, 503, u64::MAX).await;
    twilio_lists(
        &line,
        &[("CA00000000000000000000000000000503", "queued")],
        ctx.clock.peek(),
        5,
    )
    .await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    let adopted = line
        .call_until(&sid, "the 503's call is adopted", |c| {
            c["provider_call_id"].is_string()
        })
        .await;
    assert_eq!(
        adopted["provider_call_id"],
        "CA00000000000000000000000000000503"
    );
    assert_eq!(creates(&line).await.len(), 1);
    line.close().await;

    let line = Line::open(ctx, Provider::Twilio).await;
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"code": 21211, "message": "The 'To' number is not a valid phone number.",
                   "status": 400}),
        ))
        .mount(&line.provider)
        .await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    let refused = line
        .call_until(&sid, "the refusal is recorded", |c| c["status"] == "failed")
        .await;
    assert_eq!(refused["end_reason"], "provider_rejected");
    assert_eq!(refused["provider_error"]["code"], "21211");
    assert!(
        refused["provider_error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a valid phone number"),
        "{refused}"
    );
    assert!(!refused.to_string().contains(super::line::TOKEN));
    assert_eq!(creates(&line).await.len(), 1);
    line.close().await;
}

/// Telnyx answering 504 after it created the call: one `POST /v2/calls`, and the call is
/// found among the connection's active calls by its `client_state` and adopted.
async fn an_ambiguous_telnyx_dial_is_found_by_its_client_state(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Telnyx).await;
    Mock::given(method("POST"))
        .and(path("/v2/calls"))
        .respond_with(ResponseTemplate::new(504))
        .mount(&line.provider)
        .await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    let state = voiceplane_core::telephony::client_state(&sid, None);
    Mock::given(method("GET"))
        .and(path(format!("/v2/connections/{CONNECTION}/active_calls")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {"call_control_id": "v3:someone-else", "client_state": "b3RoZXI=",
                 "call_duration": 12, "record_type": "call"},
                {"call_control_id": "v3:ours", "client_state": state,
                 "call_duration": 1, "record_type": "call"},
            ],
            "meta": {"total_items": 2}
        })))
        .mount(&line.provider)
        .await;
    let adopted = line
        .call_until(&sid, "the Telnyx call is adopted", |c| {
            c["provider_call_id"].is_string()
        })
        .await;
    assert_eq!(adopted["provider_call_id"], "v3:ours");
    assert_eq!(
        line.sent_to("/v2/calls")
            .await
            .iter()
            .filter(|r| r.method.as_str() == "POST")
            .count(),
        1
    );
    line.close().await;
}

/// A dial marked as sent by an instance that died before it learnt the outcome is never
/// sent again: Twilio is asked, and without a call of the dial it ends
/// `dial_outcome_unknown` once the reconciliation window has passed.
async fn an_interrupted_dial_is_never_sent_again(ctx: &TestContext) {
    let mut line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    twilio_creates(&line, "CA00000000000000000000000000000095").await;
    twilio_lists(&line, &[], ctx.clock.peek(), 5).await;
    let (_, body) = line.dial(json!({})).await;
    let sid = sid_of(&body);
    let org = body["data"]["client_id"].as_str().unwrap().to_owned();
    let stamp = voiceplane_core::model::EventStamp {
        event_id: "evt_00000000000000ff".into(),
        event_type: voiceplane_core::model::EventType::CallUpdated,
        created_at: ctx.clock.peek(),
        audit: None,
        preconditions: Default::default(),
    };
    let at = ctx.clock.peek();
    ctx.repo
        .call_update(
            &org,
            &sid,
            Box::new(move |c: &mut Call| {
                c.dial_started_at = Some(at);
                Ok(())
            }),
            &stamp,
        )
        .await
        .unwrap();
    line.run_jobs();
    eventually("Twilio is asked for the dial's call", || async {
        !line
            .provider
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    })
    .await;
    ctx.clock.advance(301);
    let unknown = line
        .call_until(&sid, "the restarted job gives up", |c| {
            c["status"] == "failed"
        })
        .await;
    assert_eq!(unknown["end_reason"], "dial_outcome_unknown");
    assert!(creates(&line).await.is_empty());
    line.close().await;
}

/// What a dial is checked against is checked again as it is sent: a number suppressed while
/// its dial waited is never rung (`suppressed`); a dial not sent within the deadline of its
/// request never is (`dial_expired`); calling hours that closed meanwhile stop it
/// (`outside_calling_hours`). None reaches the provider.
async fn dials_are_checked_again_as_they_are_sent(ctx: &TestContext) {
    let mut line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    twilio_creates(&line, "CA00000000000000000000000000000090").await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let suppressed = sid_of(&body);
    let (status, body) = line
        .c
        .post("/api/suppressions", json!({"phone_number": CALLEE}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    line.run_jobs();
    let ended = line
        .call_until(&suppressed, "the suppressed dial ends", |c| {
            c["status"] == "failed"
        })
        .await;
    assert_eq!(ended["end_reason"], "suppressed");
    assert!(creates(&line).await.is_empty());
    line.close().await;

    let mut line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    twilio_creates(&line, "CA00000000000000000000000000000091").await;
    let (_, body) = line.dial(json!({})).await;
    let late = sid_of(&body);
    // The runners were down past the deadline.
    ctx.clock.advance(61);
    line.run_jobs();
    let expired = line
        .call_until(&late, "the late dial expires", |c| c["status"] == "failed")
        .await;
    assert_eq!(expired["end_reason"], "dial_expired");
    assert!(creates(&line).await.is_empty());
    line.close().await;

    // The test clock reads shortly after midnight UTC: 09:00 in Tokyo.
    let mut line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    twilio_creates(&line, "CA00000000000000000000000000000092").await;
    let settings = |hours: Value| {
        let c = &line.c;
        async move {
            let (status, body) = c
                .send(
                    reqwest::Method::PATCH,
                    "/api/organization/settings",
                    Some(json!({"calling_hours": hours})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    settings(json!({"start": "08:00", "end": "18:00"})).await;
    let (status, body) = line.dial(json!({"timezone": "Asia/Tokyo"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let closed = sid_of(&body);
    settings(json!({"start": "10:00", "end": "18:00"})).await;
    line.run_jobs();
    let ended = line
        .call_until(&closed, "the dial outside the hours ends", |c| {
            c["status"] == "failed"
        })
        .await;
    assert_eq!(ended["end_reason"], "outside_calling_hours");
    assert!(creates(&line).await.is_empty());
    line.close().await;
}

/// A callee without a zone of their own in a country of several zones is called only when it
/// is inside the calling hours in every one of them: at 08:00 in New York (05:00 in Los
/// Angeles) a US number is refused, whatever the organization's zone; with the callee's zone
/// given as New York's, it is not.
async fn a_callee_in_a_country_of_many_zones_is_called_within_all_of_them(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line, "CA00000000000000000000000000000089").await;
    // 2026-01-01T13:00Z: 08:00 in New York.
    ctx.clock.advance(13 * 3600);
    let (status, body) = line
        .c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"calling_hours": {"start": "08:00", "end": "21:00"},
                        "timezone": "America/New_York"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("outside the calling hours"), "{detail}");
    assert!(!detail.contains("America/New_York"), "{detail}");
    assert!(line.calls().await.is_empty());
    let (status, body) = line.dial(json!({"timezone": "America/New_York"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    line.close().await;
}

/// Calls whose reports are lost: one Twilio reports nothing on past its ring timeout is asked
/// about and takes the status and duration Twilio gives; one Twilio no longer knows ends
/// `provider_lost` (and frees its concurrency slot); a report that comes after all still
/// moves it.
async fn calls_that_outlive_their_reports_are_asked_about(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    line.service.jobs_schedule_recurring().await.unwrap();
    let (status, _) = line
        .c
        .send(
            reqwest::Method::PATCH,
            "/api/organization/settings",
            Some(json!({"max_concurrent_calls": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let ended_id = "CA00000000000000000000000000000088";
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"sid": ended_id})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&line.provider)
        .await;
    let (_, body) = line.dial(json!({})).await;
    let ended = sid_of(&body);
    line.call_until(&ended, "placed", |c| c["provider_call_id"].is_string())
        .await;
    Mock::given(method("GET"))
        .and(path(format!(
            "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls/{ended_id}.json"
        )))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"sid": ended_id, "status": "completed", "duration": "42"})),
        )
        .mount(&line.provider)
        .await;
    ctx.clock.advance(91);
    let completed = line
        .call_until(&ended, "the silent call takes Twilio's status", |c| {
            c["status"] == "completed"
        })
        .await;
    assert_eq!(completed["duration_seconds"], 42.0);

    let lost_id = "CA00000000000000000000000000000087";
    twilio_creates(&line, lost_id).await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let lost = sid_of(&body);
    line.call_until(&lost, "placed", |c| c["provider_call_id"].is_string())
        .await;
    // The one slot is taken.
    let (status, _) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    Mock::given(method("GET"))
        .and(path(format!(
            "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls/{lost_id}.json"
        )))
        .respond_with(ResponseTemplate::new(404).set_body_json(
            json!({"code": 20404, "message": "The requested resource was not found", "status": 404}),
        ))
        .mount(&line.provider)
        .await;
    ctx.clock.advance(91);
    let gone = line
        .call_until(&lost, "the lost call ends", |c| c["status"] == "failed")
        .await;
    assert_eq!(gone["end_reason"], "provider_lost");
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the slot is free again: {body}"
    );
    line.twilio(
        &format!("/status/{lost}"),
        &[
            ("CallSid", lost_id),
            ("CallStatus", "completed"),
            ("CallDuration", "7"),
        ],
    )
    .await;
    let reported = line.call(&lost).await;
    assert_eq!(reported["status"], "completed");
    assert_eq!(reported["end_reason"], "hangup");
    line.close().await;
}

/// A campaign paused after its pacer wrote a call but before the call was sent: the dial is
/// never sent, the call is `canceled` (`campaign_paused`), and its recipient is `pending`
/// again with the attempt given back, to be dialed once the campaign runs again.
async fn a_campaign_paused_before_its_dial_is_sent_never_sends_it(ctx: &TestContext) {
    use voiceplane_core::model::{CallType, Event, EventType};
    use voiceplane_core::repo::{CampaignDial, CampaignRepository};
    let mut line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    twilio_creates(&line, "CA00000000000000000000000000000086").await;
    let created = line
        .c
        .create(
            "/api/campaigns",
            json!({"name": "Renewals", "agent_id": line.agent_id,
                   "from_phone_number_ids": [line.number_id]}),
        )
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let (status, _) = line
        .c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [{"to_number": CALLEE}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    // The pacer's write, exactly as it makes it: the call, its dial job, the recipient claimed.
    let (_, listed) = line.c.get(&format!("{path}/recipients")).await;
    let recipient_id = listed["data"][0]["recipient_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let org = line.c.org.clone().unwrap();
    let sid = "call_0000000000000000000000aa".to_owned();
    let now = ctx.clock.peek();
    let mut call = Call::new(
        sid.clone(),
        &org,
        None,
        CallType::Outbound,
        CALLEE.into(),
        now,
    );
    call.agent_id = line.agent_id.clone();
    call.from_number = Some(NUMBER.into());
    call.provider = Some(voiceplane_core::telephony::TelephonyProvider::Twilio);
    call.phone_number_id = Some(line.number_id.clone());
    call.campaign_id = created["campaign_id"].as_str().map(str::to_owned);
    call.recipient_id = Some(recipient_id);
    let event = Event {
        event_id: "evt_00000000000000aa".into(),
        event_type: EventType::CallCreated,
        created_at: now,
        data: serde_json::to_value(&call).unwrap(),
        audit: None,
    };
    let job = voiceplane_core::jobs::NewJob {
        job_id: voiceplane_core::jobs::new_job_id(),
        kind: voiceplane_core::service::CALL_DIAL.into(),
        payload: json!({"organization_id": org, "call_sid": sid}),
        run_at: now,
        max_attempts: 5,
        unique_key: Some(format!("call.dial:{sid}")),
    };
    let placed = ctx
        .repo
        .campaign_dial(&call, &event, &[job], 0)
        .await
        .unwrap();
    assert!(matches!(placed, CampaignDial::Placed));
    let (status, _) = line.c.post(&format!("{path}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    line.run_jobs();
    let stopped = line
        .call_until(&sid, "the paused campaign's dial is stopped", |c| {
            c["status"] == "canceled"
        })
        .await;
    assert_eq!(stopped["end_reason"], "campaign_paused");
    let (_, listed) = line.c.get(&format!("{path}/recipients")).await;
    let recipient = &listed["data"][0];
    assert_eq!(recipient["status"], "pending", "{recipient}");
    assert_eq!(recipient["attempts"], 0, "{recipient}");
    assert_eq!(recipient["last_outcome"], "campaign_paused", "{recipient}");
    assert!(creates(&line).await.is_empty());
    line.close().await;
}

db_tests!(
    a_campaign_paused_before_its_dial_is_sent_never_sends_it,
    an_ambiguous_dial_is_never_sent_again_and_its_call_is_adopted,
    a_503_is_sent_again_only_when_nothing_was_created,
    an_ambiguous_telnyx_dial_is_found_by_its_client_state,
    an_interrupted_dial_is_never_sent_again,
    dials_are_checked_again_as_they_are_sent,
    a_callee_in_a_country_of_many_zones_is_called_within_all_of_them,
    calls_that_outlive_their_reports_are_asked_about,
);
