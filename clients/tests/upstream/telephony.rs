//! The telephony probes: Twilio (Basic auth on the account) and Telnyx (Bearer on the
//! balance), valid, refused (invalid), and failing or unreachable (unavailable: no verdict).

use std::time::Duration;

use serde_json::json;
use voiceplane_clients::{HttpTelephonyValidator, TelephonySettings};
use voiceplane_core::model::CallStatus;
use voiceplane_core::telephony::gateway::{
    DialLookup, DialRequest, GatewayError, NumberWebhooks, TelephonyGateway,
};
use voiceplane_core::telephony::{ProbeOutcome, TelephonyCredentials, TelephonyValidator};
use voiceplane_core::time::Timestamp;
use wiremock::matchers::{any, basic_auth, bearer_token, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{UPSTREAM_BODY, http, only_request, refused_url};

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "twilio-token-SECRET";
const TELNYX_KEY: &str = "KEY-telnyx-SECRET";

fn validator(twilio: &str, telnyx: &str) -> HttpTelephonyValidator {
    HttpTelephonyValidator::new(
        http(),
        TelephonySettings {
            twilio_base_url: twilio.to_owned(),
            telnyx_base_url: telnyx.to_owned(),
        },
    )
    .unwrap()
}

fn twilio() -> TelephonyCredentials {
    TelephonyCredentials::Twilio {
        account_sid: SID.into(),
        auth_token: TOKEN.into(),
    }
}

fn telnyx() -> TelephonyCredentials {
    TelephonyCredentials::Telnyx {
        api_key: TELNYX_KEY.into(),
        public_key: None,
        connection_id: None,
    }
}

/// An `Invalid` outcome whose reason holds no credential; returns the reason.
fn invalid(outcome: ProbeOutcome) -> String {
    let ProbeOutcome::Invalid(reason) = outcome else {
        panic!("expected Invalid, got {outcome:?}");
    };
    clean(reason)
}

/// An `Unavailable` outcome whose reason holds no credential; returns the reason.
fn unavailable(outcome: ProbeOutcome) -> String {
    let ProbeOutcome::Unavailable(reason) = outcome else {
        panic!("expected Unavailable, got {outcome:?}");
    };
    clean(reason)
}

fn clean(reason: String) -> String {
    for secret in [SID, TOKEN, TELNYX_KEY, UPSTREAM_BODY] {
        assert!(!reason.contains(secret), "{secret} leaked into {reason:?}");
    }
    reason
}

#[tokio::test]
async fn twilio_accepts_valid_credentials() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/2010-04-01/Accounts/{SID}.json")))
        .and(basic_auth(SID, TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "sid": SID, "status": "active"
        })))
        .expect(1)
        .mount(&server)
        .await;
    let v = validator(&server.uri(), &refused_url());
    assert_eq!(v.probe(&twilio()).await, ProbeOutcome::Valid);
    assert_eq!(only_request(&server).await.url.query(), None);
}

#[tokio::test]
async fn twilio_refusing_the_token_is_invalid() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(401).set_body_string(UPSTREAM_BODY))
        .mount(&server)
        .await;
    let reason = invalid(
        validator(&server.uri(), &refused_url())
            .probe(&twilio())
            .await,
    );
    assert_eq!(reason, "twilio rejected the credentials (HTTP 401)");
}

#[tokio::test]
async fn telnyx_accepts_a_valid_key() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/balance"))
        .and(bearer_token(TELNYX_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "data": {"balance": "10.00", "currency": "USD"}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let v = validator(&refused_url(), &server.uri());
    assert_eq!(v.probe(&telnyx()).await, ProbeOutcome::Valid);
}

#[tokio::test]
async fn telnyx_refusing_the_key_is_invalid_and_failing_is_no_verdict() {
    for (status, expected) in [
        (401, Ok("telnyx rejected the credentials (HTTP 401)")),
        (403, Ok("telnyx rejected the credentials (HTTP 403)")),
        (404, Ok("telnyx does not know this account (HTTP 404)")),
        (
            500,
            Err("telnyx answered the credential check with HTTP 500"),
        ),
        (
            503,
            Err("telnyx answered the credential check with HTTP 503"),
        ),
        (
            429,
            Err("telnyx answered the credential check with HTTP 429"),
        ),
        (
            302,
            Err("telnyx answered the credential check with HTTP 302"),
        ),
    ] {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(
                ResponseTemplate::new(status)
                    .set_body_string(UPSTREAM_BODY)
                    .insert_header("location", "/elsewhere"),
            )
            .mount(&server)
            .await;
        let outcome = validator(&refused_url(), &server.uri())
            .probe(&telnyx())
            .await;
        match expected {
            Ok(reason) => assert_eq!(invalid(outcome), reason),
            Err(reason) => assert_eq!(unavailable(outcome), reason),
        }
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn unreachable_or_slow_providers_are_no_verdict() {
    let v = validator(&refused_url(), &refused_url());
    assert_eq!(
        unavailable(v.probe(&twilio()).await),
        "twilio could not be reached"
    );
    assert_eq!(
        unavailable(v.probe(&telnyx()).await),
        "telnyx could not be reached"
    );

    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let v = validator(&server.uri(), &server.uri());
    assert_eq!(
        unavailable(v.probe(&twilio()).await),
        "twilio did not answer within 300 ms"
    );
}

#[tokio::test]
async fn bad_base_urls_are_refused_at_build_time() {
    let err = HttpTelephonyValidator::new(
        http(),
        TelephonySettings {
            twilio_base_url: "api.twilio.com".into(),
            telnyx_base_url: "https://api.telnyx.com".into(),
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "telephony.twilio.base_url: is not an absolute URL"
    );
}

fn webhooks() -> NumberWebhooks {
    NumberWebhooks {
        twilio_voice_url: "https://vp.example/telephony/twilio/intg_1/voice".into(),
        twilio_status_url: "https://vp.example/telephony/twilio/intg_1/status".into(),
        telnyx_events_url: "https://vp.example/telephony/telnyx/intg_1/events".into(),
    }
}

/// Twilio's search matches loosely; only the number asked for is taken, and it is pointed at
/// voiceplane's voice and status webhooks.
#[tokio::test]
async fn twilio_numbers_are_found_exactly_and_connected() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!(
            "/2010-04-01/Accounts/{SID}/IncomingPhoneNumbers.json"
        )))
        .and(basic_auth(SID, TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "incoming_phone_numbers": [
                {"sid": "PN_other", "phone_number": "+141555501234"},
                {"sid": "PN_exact", "phone_number": "+14155550123"},
            ]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!(
            "/2010-04-01/Accounts/{SID}/IncomingPhoneNumbers/PN_exact.json"
        )))
        .and(basic_auth(SID, TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"sid": "PN_exact"})))
        .expect(1)
        .mount(&server)
        .await;
    let v = validator(&server.uri(), &refused_url());
    let id = v.find_number(&twilio(), "+14155550123").await.unwrap();
    assert_eq!(id, "PN_exact");
    v.connect_number(&twilio(), &id, &webhooks()).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.query(), Some("PhoneNumber=%2B14155550123"));
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&requests[1].body)
        .into_owned()
        .collect();
    let value = |name: &str| {
        form.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        value("VoiceUrl"),
        Some("https://vp.example/telephony/twilio/intg_1/voice")
    );
    assert_eq!(value("VoiceMethod"), Some("POST"));
    assert_eq!(
        value("StatusCallback"),
        Some("https://vp.example/telephony/twilio/intg_1/status")
    );
    assert_eq!(value("StatusCallbackMethod"), Some("POST"));

    // The search answers loosely matching numbers only: the account does not have this one.
    let err = v.find_number(&twilio(), "+1415555012").await.unwrap_err();
    assert!(matches!(err, GatewayError::NotFound(_)), "{err:?}");
}

/// Telnyx is searched by digits; connecting sets the number's connection and that Call
/// Control application's event URL.
#[tokio::test]
async fn telnyx_numbers_are_found_by_digits_and_connected() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/phone_numbers"))
        .and(query_param("filter[phone_number]", "14155550123"))
        .and(bearer_token(TELNYX_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"id": "1293384261075731499", "phone_number": "+14155550123"}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(bearer_token(TELNYX_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": {}})))
        .expect(2)
        .mount(&server)
        .await;
    let v = validator(&refused_url(), &server.uri());
    let credentials = TelephonyCredentials::Telnyx {
        api_key: TELNYX_KEY.into(),
        public_key: None,
        connection_id: Some("1494404757140276705".into()),
    };
    let id = v.find_number(&credentials, "+14155550123").await.unwrap();
    assert_eq!(id, "1293384261075731499");
    v.connect_number(&credentials, &id, &webhooks())
        .await
        .unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests[1].url.path(),
        "/v2/phone_numbers/1293384261075731499"
    );
    assert_eq!(
        requests[1].body_json::<serde_json::Value>().unwrap(),
        json!({"connection_id": "1494404757140276705"})
    );
    assert_eq!(
        requests[2].url.path(),
        "/v2/call_control_applications/1494404757140276705"
    );
    assert_eq!(
        requests[2].body_json::<serde_json::Value>().unwrap(),
        json!({"webhook_event_url": "https://vp.example/telephony/telnyx/intg_1/events"})
    );
}

/// A refusal carries the provider's code and message, an outage says only that, and neither
/// carries a credential.
#[tokio::test]
async fn provider_refusals_and_outages_are_told_apart() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "code": 20003, "message": "Authenticate", "more_info": UPSTREAM_BODY
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string(UPSTREAM_BODY))
        .mount(&server)
        .await;
    let v = validator(&server.uri(), &refused_url());
    let err = v.find_number(&twilio(), "+14155550123").await.unwrap_err();
    assert_eq!(
        err,
        GatewayError::Rejected {
            code: "20003".into(),
            message: "twilio: Authenticate".into()
        }
    );
    let err = v
        .connect_number(&twilio(), "PN_1", &webhooks())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        GatewayError::Overloaded("twilio answered with HTTP 503".into())
    );
    let err = v.find_number(&telnyx(), "+14155550123").await.unwrap_err();
    assert_eq!(
        err,
        GatewayError::Unavailable("telnyx could not be reached".into())
    );
}

fn dial_request() -> DialRequest {
    DialRequest {
        call_sid: "call_0123456789abcdef01234567".into(),
        agent_id: "agent_0123456789abcdef".into(),
        to: "+14155550199".into(),
        from: "+14155550100".into(),
        stream_url: "wss://rt.example.com/media/call_0123456789abcdef01234567".into(),
        stream_token: None,
        status_url: "https://vp.example.com/telephony/twilio/int_1/status/call_0".into(),
        events_url: "https://vp.example.com/telephony/telnyx/int_1/events".into(),
        ring_timeout_secs: 30,
        machine_detection: false,
    }
}

/// What a failed dial proves decides what may follow it (DESIGN §23): a 429 or a refused
/// connection reached nothing (`Unavailable`), a 503 may have come from an edge that passed it
/// on (`Overloaded`), and a 500, 502 or 504 may come after the call was made (`Unknown`).
#[tokio::test]
async fn dial_failures_are_told_apart_by_what_they_prove() {
    for (status, expected) in [
        (
            429,
            GatewayError::Unavailable("twilio answered with HTTP 429".into()),
        ),
        (
            503,
            GatewayError::Overloaded("twilio answered with HTTP 503".into()),
        ),
        (
            500,
            GatewayError::Unknown("twilio answered with HTTP 500".into()),
        ),
        (
            502,
            GatewayError::Unknown("twilio answered with HTTP 502".into()),
        ),
        (
            504,
            GatewayError::Unknown("twilio answered with HTTP 504".into()),
        ),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_string(UPSTREAM_BODY))
            .mount(&server)
            .await;
        let v = validator(&server.uri(), &server.uri());
        let err = v.dial(&twilio(), &dial_request()).await.unwrap_err();
        assert_eq!(err, expected, "HTTP {status}");
    }
    let v = validator(&refused_url(), &refused_url());
    let err = v.dial(&twilio(), &dial_request()).await.unwrap_err();
    assert!(matches!(err, GatewayError::Unavailable(_)), "{err:?}");
}

/// Twilio's calls from the number to the callee created since the dial's mark (by
/// `date_created`, RFC 2822), oldest first, with their status; a call's state by its sid; a
/// sid Twilio does not know is gone (20404).
#[tokio::test]
async fn a_twilio_dials_calls_are_listed_and_a_calls_state_read() {
    let server = MockServer::start().await;
    let calls = format!("/2010-04-01/Accounts/{SID}/Calls.json");
    Mock::given(method("GET"))
        .and(path(calls.clone()))
        .and(query_param("To", "+14155550199"))
        .and(query_param("From", "+14155550100"))
        .and(query_param("StartTime>", "2026-01-01"))
        .and(basic_auth(SID, TOKEN))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"calls": [
            {"sid": "CAlate", "status": "in-progress", "date_created": "Thu, 01 Jan 2026 00:00:09 +0000"},
            {"sid": "CAbefore", "status": "completed", "date_created": "Wed, 31 Dec 2025 23:58:00 +0000"},
            {"sid": "CAfirst", "status": "ringing", "date_created": "Thu, 01 Jan 2026 00:00:05 +0000"},
        ]})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!(
            "/2010-04-01/Accounts/{SID}/Calls/CAfirst.json"
        )))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"sid": "CAfirst", "status": "completed", "duration": "61"})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!(
            "/2010-04-01/Accounts/{SID}/Calls/CAgone.json"
        )))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"code": 20404, "message": "not found", "status": 404})),
        )
        .mount(&server)
        .await;
    let v = validator(&server.uri(), &server.uri());
    let lookup = DialLookup {
        call_sid: "call_0123456789abcdef01234567".into(),
        to: "+14155550199".into(),
        from: "+14155550100".into(),
        since: Timestamp::parse_rfc3339("2026-01-01T00:00:00Z", "since").unwrap(),
    };
    let found = v.find_dialed(&twilio(), &lookup).await.unwrap();
    let ids: Vec<&str> = found.iter().map(|c| c.provider_call_id.as_str()).collect();
    assert_eq!(ids, ["CAfirst", "CAlate"]);
    assert_eq!(found[0].status, Some(CallStatus::Ringing));
    assert_eq!(found[1].status, Some(CallStatus::InProgress));
    let state = v.call_state(&twilio(), "CAfirst").await.unwrap();
    assert_eq!(state.status, Some(CallStatus::Completed));
    assert_eq!(state.duration_seconds, Some(61.0));
    let gone = v.call_state(&twilio(), "CAgone").await.unwrap_err();
    assert!(gone.call_is_gone(), "{gone:?}");
}

/// Telnyx: the connection's active calls, matched by the dial's `client_state`; a call that
/// is no longer alive is gone.
#[tokio::test]
async fn a_telnyx_dials_call_is_found_by_its_client_state() {
    let server = MockServer::start().await;
    let lookup = DialLookup {
        call_sid: "call_0123456789abcdef01234567".into(),
        to: "+14155550199".into(),
        from: "+14155550100".into(),
        since: Timestamp::from_micros(0),
    };
    let state = voiceplane_core::telephony::client_state(&lookup.call_sid, None);
    Mock::given(method("GET"))
        .and(path("/v2/connections/conn-1/active_calls"))
        .and(bearer_token(TELNYX_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {"call_control_id": "v3:other", "client_state": "b3RoZXI="},
                {"call_control_id": "v3:ours", "client_state": state},
            ],
            "meta": {"total_items": 2}
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/calls/v3:ended"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": {"call_control_id": "v3:ended", "is_alive": false}})),
        )
        .mount(&server)
        .await;
    let credentials = TelephonyCredentials::Telnyx {
        api_key: TELNYX_KEY.into(),
        public_key: None,
        connection_id: Some("conn-1".into()),
    };
    let v = validator(&server.uri(), &server.uri());
    let found = v.find_dialed(&credentials, &lookup).await.unwrap();
    let ids: Vec<&str> = found.iter().map(|c| c.provider_call_id.as_str()).collect();
    assert_eq!(ids, ["v3:ours"]);
    let gone = v.call_state(&credentials, "v3:ended").await.unwrap_err();
    assert!(gone.call_is_gone(), "{gone:?}");
}
