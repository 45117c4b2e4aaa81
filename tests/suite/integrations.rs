//! Integrations: credentials stored encrypted, validation against a fake twilio on loopback,
//! and deleting one that phone numbers still reference, through `Service` and over HTTP.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_core::{Error, Service};
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TWILIO_SID: &str = "AC0123456789abcdef0123456789abcdef";

const TWILIO_TOKEN: &str = "tw-auth-token-7f3a9c";

const GOOD_SID: &str = "AC00000000000000000000000000000001";

const BAD_SID: &str = "AC00000000000000000000000000000002";

const TOKEN: &str = "auth-token-for-tests";

fn integration(sid: &str) -> Value {
    twilio_body("Main", sid, TOKEN)
}

async fn integrations_store_encrypted_credentials(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let created = ctx
        .service
        .integration_create(
            &admin,
            body(twilio_body("Main line", TWILIO_SID, TWILIO_TOKEN)),
        )
        .await
        .unwrap();
    assert!(voiceplane_core::ids::IdKind::Integration.matches(&created.integration_id));
    assert_eq!(created.status, IntegrationStatus::Active);
    assert_eq!(created.provider, "twilio");
    let shown = serde_json::to_string(&created).unwrap();
    assert!(
        !shown.contains(TWILIO_TOKEN) && !shown.contains(TWILIO_SID),
        "{shown}"
    );

    // At rest: sealed, not plain.
    let (_, sealed) = voiceplane_core::repo::IntegrationRepository::integration_get_sealed(
        &ctx.repo,
        &admin.organization_id,
        &created.integration_id,
    )
    .await
    .unwrap()
    .unwrap();
    assert!(sealed.starts_with("v1:") && !sealed.contains(TWILIO_TOKEN));

    let viewed = ctx
        .service
        .integration_view(&admin, &created.integration_id)
        .await
        .unwrap();
    assert_eq!(viewed, created);
    let page = ctx
        .service
        .integration_list(&admin, &Default::default(), &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.items, vec![created.clone()]);

    let renamed = ctx
        .service
        .integration_update(
            &admin,
            &created.integration_id,
            body(json!({"name": "Renamed"})),
        )
        .await
        .unwrap();
    assert_eq!(renamed.name, "Renamed");
    assert!(renamed.updated_at > created.updated_at);

    // Wrong shapes are 400s that never echo a credential.
    for bad in [
        json!({"name": "x", "provider": "vonage", "category": "telephony", "credentials": {}}),
        json!({"name": "x", "provider": "twilio", "category": "telephony", "credentials": {"account_sid": TWILIO_SID}}),
        json!({"name": "x", "provider": "telnyx", "category": "telephony", "credentials": {"api_key": "k", "auth_token": TWILIO_TOKEN}}),
        json!({"name": "x", "provider": "twilio", "category": "telephony", "credentials": {"account_sid": "nope", "auth_token": TWILIO_TOKEN}}),
    ] {
        let err = ctx
            .service
            .integration_create(&admin, body(bad))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
        assert!(!err.to_string().contains(TWILIO_TOKEN));
    }
    // Without a master key nothing can be stored.
    let keyless = Service::new(std::sync::Arc::new(ctx.repo.clone()));
    let err = keyless
        .integration_create(&admin, body(twilio_body("x", TWILIO_SID, TWILIO_TOKEN)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable(m) if m.contains("secrets.master_key")),
        "{err:?}"
    );
    // Users can read but not write.
    let (_, user) = ctx.key_with_role(&admin, Role::User).await;
    ctx.service
        .integration_view(&user, &created.integration_id)
        .await
        .unwrap();
    assert!(matches!(
        ctx.service
            .integration_create(&user, body(twilio_body("x", TWILIO_SID, TWILIO_TOKEN)))
            .await,
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        ctx.service
            .integration_delete(&user, &created.integration_id)
            .await,
        Err(Error::Forbidden(_))
    ));
}

async fn deleting_a_referenced_integration_is_refused(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let intg = ctx
        .service
        .integration_create(&admin, body(twilio_body("Main", TWILIO_SID, TWILIO_TOKEN)))
        .await
        .unwrap();
    let mut input: NewPhoneNumber = body(phone_number_body("+14155550101"));
    input.integration_id = Some(intg.integration_id.clone());
    input.provider = None;
    let n1 = ctx
        .service
        .phone_number_create(&admin, input.clone())
        .await
        .unwrap();
    assert_eq!(n1.provider, "twilio");
    input.phone_number = "+14155550102".into();
    let n2 = ctx
        .service
        .phone_number_create(&admin, input)
        .await
        .unwrap();

    let err = ctx
        .service
        .integration_delete(&admin, &intg.integration_id)
        .await
        .unwrap_err();
    let Error::Conflict(detail) = &err else {
        panic!("{err:?}")
    };
    for n in [&n1, &n2] {
        assert!(
            detail.contains(&n.phone_number) && detail.contains(&n.phone_number_id),
            "{detail}"
        );
    }
    assert!(detail.contains("remove or reassign them first"), "{detail}");

    // Detach one, delete the other: then the integration and its credentials go.
    ctx.service
        .phone_number_update(
            &admin,
            &n1.phone_number_id,
            body(json!({"integration_id": null})),
        )
        .await
        .unwrap();
    ctx.service
        .phone_number_delete(&admin, &n2.phone_number_id)
        .await
        .unwrap();
    let out = ctx
        .service
        .integration_delete(&admin, &intg.integration_id)
        .await
        .unwrap();
    assert_eq!(out.data.integration_id, intg.integration_id);
    assert!(matches!(
        ctx.service
            .integration_view(&admin, &intg.integration_id)
            .await,
        Err(Error::NotFound(_))
    ));
    let sealed = voiceplane_core::repo::IntegrationRepository::integration_get_sealed(
        &ctx.repo,
        &admin.organization_id,
        &intg.integration_id,
    )
    .await
    .unwrap();
    assert!(sealed.is_none(), "credentials are gone with the row");
    assert!(matches!(
        ctx.service
            .integration_delete(&admin, &intg.integration_id)
            .await,
        Err(Error::NotFound(_))
    ));
}

async fn integration_validate_against_a_fake_provider(ctx: &TestContext) {
    let provider = MockServer::start().await;
    mount_twilio_account(&provider, GOOD_SID, TOKEN).await;
    Mock::given(method("GET"))
        .and(path(format!("/2010-04-01/Accounts/{BAD_SID}.json")))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"message": "Authenticate"})))
        .mount(&provider)
        .await;
    let validator = telephony(&provider.uri());
    let server = TestServer::start_configured(ctx, |s| s.with_telephony(validator)).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;

    for (sid, expected) in [(GOOD_SID, "active"), (BAD_SID, "invalid")] {
        let (status, created) = c
            .send(Method::POST, "/api/integrations", Some(integration(sid)))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        assert!(!created.to_string().contains(TOKEN));
        let id = created["data"]["integration_id"].as_str().unwrap();
        // JSON is required.
        let resp = c
            .request(Method::POST, &format!("/api/integrations/{id}/validate"))
            .header("Content-Type", "text/plain")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let (status, v) = c
            .send(
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["success"], true);
        assert!(v["message"].is_string());
        assert_eq!(v["data"]["status"], expected, "{v}");
        assert_ne!(
            v["data"]["updated_at"], created["data"]["updated_at"],
            "updated_at changes"
        );
        assert!(!v.to_string().contains(TOKEN));
        let (_, viewed) = c
            .send(Method::GET, &format!("/api/integrations/{id}"), None)
            .await;
        assert_eq!(viewed["data"]["status"], expected);
    }
    server.stop().await;
}

/// Event types of the caller's organization, newest first (one page is enough here).
async fn event_types(c: &ApiCaller) -> Vec<String> {
    let (status, page) = c.get("/api/events?limit=100").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// A provider that cannot say whether the credentials work (unreachable, 5xx, 429) is a 502
/// naming it; the integration keeps its status and `updated_at`, and no event is recorded.
/// A 401/403/404 is a verdict: `invalid`.
async fn integration_validate_without_a_verdict_changes_nothing(ctx: &TestContext) {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let failing = MockServer::start().await;
    for (sid, status) in [
        ("AC00000000000000000000000000000500", 500),
        ("AC00000000000000000000000000000503", 503),
        ("AC00000000000000000000000000000429", 429),
        ("AC00000000000000000000000000000403", 403),
        ("AC00000000000000000000000000000404", 404),
    ] {
        Mock::given(method("GET"))
            .and(path(format!("/2010-04-01/Accounts/{sid}.json")))
            .respond_with(ResponseTemplate::new(status).set_body_string("upstream-body-3f9a"))
            .mount(&failing)
            .await;
    }
    let bootstrap = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &bootstrap, "Acme").await;
    bootstrap.stop().await;

    let failing_uri = failing.uri();
    let cases = [
        (closed.as_str(), GOOD_SID, "twilio could not be reached"),
        (
            failing_uri.as_str(),
            "AC00000000000000000000000000000500",
            "twilio answered the credential check with HTTP 500",
        ),
        (
            failing_uri.as_str(),
            "AC00000000000000000000000000000503",
            "twilio answered the credential check with HTTP 503",
        ),
        (
            failing_uri.as_str(),
            "AC00000000000000000000000000000429",
            "twilio answered the credential check with HTTP 429",
        ),
    ];
    for (base, sid, reason) in cases {
        let server = TestServer::start_configured(ctx, |s| s.with_telephony(telephony(base))).await;
        let c = ApiCaller {
            base: server.base.clone(),
            ..c.clone()
        };
        let (_, created) = c
            .send(Method::POST, "/api/integrations", Some(integration(sid)))
            .await;
        let id = created["data"]["integration_id"].as_str().unwrap();
        let events_before = event_types(&c).await;
        let (status, v) = c
            .send(
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{v}");
        let detail = v["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(reason) && detail.contains("the integration is unchanged"),
            "{detail}"
        );
        assert!(!v.to_string().contains("upstream-body-3f9a"), "{v}");
        assert!(!v.to_string().contains(TOKEN), "{v}");
        let (_, viewed) = c
            .send(Method::GET, &format!("/api/integrations/{id}"), None)
            .await;
        assert_eq!(
            viewed["data"], created["data"],
            "status and updated_at unchanged"
        );
        assert_eq!(event_types(&c).await, events_before, "no event recorded");
        server.stop().await;
    }

    // 403 and 404 are the provider's verdict on the credentials.
    let server =
        TestServer::start_configured(ctx, |s| s.with_telephony(telephony(&failing.uri()))).await;
    let c = ApiCaller {
        base: server.base.clone(),
        ..c.clone()
    };
    for sid in [
        "AC00000000000000000000000000000403",
        "AC00000000000000000000000000000404",
    ] {
        let (_, created) = c
            .send(Method::POST, "/api/integrations", Some(integration(sid)))
            .await;
        let id = created["data"]["integration_id"].as_str().unwrap();
        let (status, v) = c
            .send(
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await;
        assert_eq!(
            (status, &v["data"]["status"]),
            (StatusCode::OK, &json!("invalid")),
            "{v}"
        );
        assert_eq!(event_types(&c).await[0], "integration.validated");
    }
    server.stop().await;
}

async fn integration_delete_conflict_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (_, created) = c
        .send(
            Method::POST,
            "/api/integrations",
            Some(integration(GOOD_SID)),
        )
        .await;
    let id = created["data"]["integration_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, number) = c
        .send(
            Method::POST,
            "/api/phone-numbers",
            Some(json!({"phone_number": "+14155550123", "integration_id": id})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{number}");
    let (status, v) = c
        .send(Method::DELETE, &format!("/api/integrations/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let detail = v["detail"].as_str().unwrap();
    assert!(
        detail.contains("+14155550123") && detail.contains("remove or reassign them first"),
        "{detail}"
    );
    let nid = number["data"]["phone_number_id"].as_str().unwrap();
    let (status, v) = c
        .send(Method::DELETE, &format!("/api/phone-numbers/{nid}"), None)
        .await;
    assert_eq!(
        (status, &v["message"]),
        (StatusCode::OK, &json!("phone number deleted"))
    );
    let (status, v) = c
        .send(Method::DELETE, &format!("/api/integrations/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["integration_id"], id.as_str());
    assert!(v["message"].is_string());
    let (status, _) = c
        .send(Method::GET, &format!("/api/integrations/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

/// `GET /api/integrations?status=` lists only the integrations with that status, page by page,
/// and names the accepted values when given another.
async fn integration_list_filters_by_status(ctx: &TestContext) {
    let provider = MockServer::start().await;
    mount_twilio_account(&provider, GOOD_SID, TOKEN).await;
    Mock::given(method("GET"))
        .and(path(format!("/2010-04-01/Accounts/{BAD_SID}.json")))
        .respond_with(ResponseTemplate::new(401))
        .mount(&provider)
        .await;
    let validator = telephony(&provider.uri());
    let server = TestServer::start_configured(ctx, |s| s.with_telephony(validator)).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;

    // Three invalid and two active, interleaved.
    let mut invalid = Vec::new();
    for sid in [BAD_SID, GOOD_SID, BAD_SID, GOOD_SID, BAD_SID] {
        let (_, created) = c
            .send(Method::POST, "/api/integrations", Some(integration(sid)))
            .await;
        let id = created["data"]["integration_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, v) = c
            .send(
                Method::POST,
                &format!("/api/integrations/{id}/validate"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        if sid == BAD_SID {
            invalid.push(id);
        }
    }
    invalid.reverse(); // newest first

    // Two pages of the invalid ones; the cursor keeps the filter's order.
    let (status, first) = c
        .send(
            Method::GET,
            "/api/integrations?status=invalid&limit=2",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let ids = |v: &Value| -> Vec<String> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["integration_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&first), invalid[..2]);
    assert_eq!(first["pagination"]["has_more"], true);
    let cursor = first["pagination"]["next_cursor"].as_str().unwrap();
    let (_, second) = c
        .send(
            Method::GET,
            &format!("/api/integrations?status=invalid&limit=2&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(ids(&second), invalid[2..]);
    assert_eq!(second["pagination"]["has_more"], false);

    let (_, active) = c
        .send(Method::GET, "/api/integrations?status=active", None)
        .await;
    assert_eq!(ids(&active).len(), 2);
    assert!(
        active["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["status"] == "active")
    );
    let (_, all) = c.send(Method::GET, "/api/integrations", None).await;
    assert_eq!(ids(&all).len(), 5);

    let (status, v) = c
        .send(Method::GET, "/api/integrations?status=broken", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.starts_with("status is invalid"), "{detail}");
    assert!(
        detail.contains("`active`") && detail.contains("`invalid`"),
        "{detail}"
    );

    // The same filter through the service.
    let admin = ctx
        .actor(c.org.as_deref().unwrap(), c.key.as_deref().unwrap())
        .await;
    let filter = IntegrationFilter {
        status: Some(IntegrationStatus::Active),
    };
    let page = ctx
        .service
        .integration_list(&admin, &filter, &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(
        page.items
            .iter()
            .all(|i| i.status == IntegrationStatus::Active)
    );
    server.stop().await;
}

db_tests!(
    integrations_store_encrypted_credentials,
    deleting_a_referenced_integration_is_refused,
    integration_validate_against_a_fake_provider,
    integration_validate_without_a_verdict_changes_nothing,
    integration_delete_conflict_over_http,
    integration_list_filters_by_status,
);
