//! What calls through a provider cost (DESIGN §21): the `telephony` item a provider's duration
//! adds by itself, and `monthly_credit_limit` refusing dials once the month's credits reach it.

use reqwest::{Method, StatusCode};
use serde_json::json;
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use super::line::{Line, Provider, TOKEN};

const CALLS: &str = "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls.json";

/// A dial that lasts 61 s at Twilio gets one `telephony` item of 2 minutes at the price of
/// Twilio minutes, whatever reports repeat; once the month's credits reach the limit a dial is
/// a 422 that creates nothing; raising the limit lets the next one through.
async fn a_provider_duration_is_charged_and_the_credit_limit_refuses_dials(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"sid": "CA00000000000000000000000000000077"})),
        )
        .mount(&line.provider)
        .await;
    let (status, body) = line
        .c
        .send(
            Method::PUT,
            "/api/organization/prices",
            Some(
                json!({"prices": [{"component": "telephony", "provider": "twilio",
                                    "unit": "minutes", "credits_per_unit": 1.5}]}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sid = body["data"]["call_sid"].as_str().unwrap().to_owned();
    line.call_until(&sid, "the dial is placed", |c| {
        c["provider_call_id"].is_string()
    })
    .await;
    let status_path = format!("/telephony/twilio/{}/status/{sid}", line.integration_id);
    let report = |status: &'static str| {
        vec![
            ("CallSid", "CA00000000000000000000000000000077"),
            ("CallStatus", status),
            ("CallDuration", "61"),
        ]
    };
    for step in ["in-progress", "completed", "completed"] {
        let resp = line.twilio_as(TOKEN, &status_path, &report(step)).await;
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let ended = line.call(&sid).await;
    assert_eq!(ended["status"], "completed");
    assert_eq!(
        ended["cost_breakdown"],
        json!([{"component": "telephony", "provider": "twilio", "model": null,
                "quantity": 2.0, "unit": "minutes", "credits": 3.0}])
    );
    assert_eq!(ended["total_cost"], 3.0);
    let (_, usage) = line.c.get("/api/usage?group_by=component").await;
    assert_eq!(usage["data"]["totals"]["credits"], 3.0, "{usage}");

    let settings = |limit: f64| {
        let c = &line.c;
        async move {
            let (status, body) = c
                .send(
                    Method::PATCH,
                    "/api/organization/settings",
                    Some(json!({"monthly_credit_limit": limit})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["data"]["monthly_credit_limit"], limit);
        }
    };
    settings(3.0).await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("monthly_credit_limit"),
        "{body}"
    );
    assert_eq!(
        line.calls().await.len(),
        1,
        "a refused dial creates no call"
    );
    assert_eq!(line.sent_to(CALLS).await.len(), 1);
    for bad in [json!(0), json!(-5), json!("lots")] {
        let (status, _) = line
            .c
            .send(
                Method::PATCH,
                "/api/organization/settings",
                Some(json!({"monthly_credit_limit": bad})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }
    settings(3.5).await;
    let (status, body) = line.dial(json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    line.close().await;
}

db_tests!(a_provider_duration_is_charged_and_the_credit_limit_refuses_dials);
