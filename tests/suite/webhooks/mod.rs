//! Webhook endpoints: their shapes and rules over HTTP, the secret (shown on create and rotate
//! only, stored sealed, the previous one kept for a day) and the lists; the deliveries are in
//! `deliveries`. The helpers both share are here.

mod deliveries;
mod sending;

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use voiceplane_core::auth::Actor;
use voiceplane_core::crypto::CredentialCipher;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_core::time::Timestamp;
use voiceplane_suite::*;

const DAY_MICROS: i64 = 24 * 3600 * 1_000_000;

/// The rows of `sql` (no parameters), column `col` of each as text.
async fn column(ctx: &TestContext, sql: &str, col: &str) -> Vec<String> {
    let db = ctx.repo.connection();
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            sql.to_owned(),
        ))
        .await
        .unwrap();
    rows.iter()
        .map(|r| r.try_get::<String>("", col).unwrap())
        .collect()
}

/// The stored row of an endpoint: `(secret_sealed, previous_secret_sealed,
/// previous_secret_expires_at)`.
async fn secrets_of(ctx: &TestContext, webhook_id: &str) -> (String, Option<String>, Option<i64>) {
    let db = ctx.repo.connection();
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!(
                "SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at \
                 FROM webhooks WHERE webhook_id = '{webhook_id}'"
            ),
        ))
        .await
        .unwrap()
        .unwrap();
    (
        row.try_get("", "secret_sealed").unwrap(),
        row.try_get("", "previous_secret_sealed").unwrap(),
        row.try_get("", "previous_secret_expires_at").unwrap(),
    )
}

/// The delivery ids named by queued `webhook.deliver` jobs.
async fn delivery_jobs(ctx: &TestContext) -> BTreeSet<String> {
    column(
        ctx,
        "SELECT payload FROM jobs WHERE kind = 'webhook.deliver' AND status = 'queued'",
        "payload",
    )
    .await
    .iter()
    .map(|p| {
        let v: Value = serde_json::from_str(p).unwrap();
        v["delivery_id"].as_str().unwrap().to_owned()
    })
    .collect()
}

fn new_webhook(events: &[&str]) -> NewWebhook {
    NewWebhook {
        url: "https://hooks.example.com/in".into(),
        events: events.iter().map(|e| (*e).to_owned()).collect(),
        description: None,
    }
}

async fn create(ctx: &TestContext, actor: &Actor, events: &[&str]) -> CreatedWebhook {
    ctx.service
        .webhook_create(actor, new_webhook(events))
        .await
        .unwrap()
}

async fn deliveries(ctx: &TestContext, actor: &Actor, webhook_id: &str) -> Vec<Delivery> {
    ctx.service
        .delivery_list(actor, webhook_id, &PageParams::default())
        .await
        .unwrap()
        .items
}

async fn endpoints_have_their_shapes_and_the_secret_shows_once(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (status, created) = c
        .send(
            Method::POST,
            "/api/webhooks",
            Some(json!({"url": "https://hooks.example.com/in",
                "events": ["call.created", "tool.created"], "description": "CRM"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let created = created["data"].clone();
    let shape = fields(&[
        "webhook_id",
        "url",
        "events",
        "description",
        "status",
        "created_at",
        "updated_at",
    ]);
    let mut with_secret = shape.clone();
    with_secret.insert("secret".to_owned());
    assert_eq!(keys(&created), with_secret);
    let id = created["webhook_id"].as_str().unwrap().to_owned();
    assert!(voiceplane_core::ids::IdKind::Webhook.matches(&id), "{id}");
    assert_eq!(id.len(), 4 + 12);
    assert_eq!(created["status"], "enabled");
    assert_eq!(created["events"], json!(["call.created", "tool.created"]));
    assert_eq!(created["description"], "CRM");
    let secret = created["secret"].as_str().unwrap().to_owned();
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    assert_eq!(key.len(), 32);

    // Stored sealed, bound to the endpoint: never the plaintext.
    let (sealed, previous, expires) = secrets_of(ctx, &id).await;
    assert!(!sealed.contains(&secret) && !sealed.contains(&secret[6..]));
    let cipher = CredentialCipher::new(&MASTER_KEY);
    assert_eq!(
        cipher.open(&sealed, id.as_bytes()).unwrap(),
        secret.as_bytes()
    );
    assert_eq!((previous, expires), (None, None));

    // No other answer shows it.
    let path = format!("/api/webhooks/{id}");
    let (status, view) = c.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&view["data"]), shape);
    let (_, list) = c.get("/api/webhooks").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(keys(&list["data"][0]), shape);
    let (status, patched) = c
        .send(
            Method::PATCH,
            &path,
            Some(json!({"events": ["*"], "status": "disabled", "url": "http://h.example.com/x"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(keys(&patched["data"]), shape);
    assert_eq!(patched["data"]["events"], json!(["*"]));
    assert_eq!(patched["data"]["status"], "disabled");
    assert_eq!(patched["data"]["url"], "http://h.example.com/x");
    assert_eq!(patched["data"]["description"], "CRM");

    // Rotation: a new secret, the old one kept sealed for 24 hours.
    let (status, rotated) = c
        .send(Method::POST, &format!("{path}/rotate-secret"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let rotated = rotated["data"].clone();
    assert_eq!(keys(&rotated), with_secret);
    let new_secret = rotated["secret"].as_str().unwrap();
    assert_ne!(new_secret, secret);
    let (now_sealed, previous, expires) = secrets_of(ctx, &id).await;
    assert_eq!(
        cipher.open(&now_sealed, id.as_bytes()).unwrap(),
        new_secret.as_bytes()
    );
    assert_eq!(previous.as_deref(), Some(sealed.as_str()));
    let updated = Timestamp::parse_rfc3339(rotated["updated_at"].as_str().unwrap(), "t").unwrap();
    assert_eq!(expires, Some(updated.as_micros() + DAY_MICROS));

    let (status, deleted) = c.send(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["message"], "webhook deleted");
    assert_eq!(c.get(&path).await.0, StatusCode::NOT_FOUND);
    server.stop().await;
}

async fn bad_input_roles_and_other_organizations(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let long = "d".repeat(501);
    for (body, says) in [
        (
            json!({"url": "ftp://h.example.com", "events": ["*"]}),
            "http:// or https://",
        ),
        (json!({"url": "not a url", "events": ["*"]}), "url"),
        (
            json!({"url": "https://h.example.com", "events": []}),
            "at least one",
        ),
        (
            json!({"url": "https://h.example.com", "events": ["call.exploded"]}),
            "`call.exploded`",
        ),
        (
            json!({"url": "https://h.example.com", "events": ["*", "call.created"]}),
            "\"*\"",
        ),
        (
            json!({"url": "https://h.example.com", "events": ["*"], "description": long}),
            "500",
        ),
        (
            json!({"url": "https://h.example.com", "events": ["*"], "secret": "x"}),
            "secret",
        ),
    ] {
        let (status, answer) = c.post("/api/webhooks", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(says),
            "{body}: {answer}"
        );
    }
    assert_eq!(
        column(ctx, "SELECT webhook_id FROM webhooks", "webhook_id")
            .await
            .len(),
        0
    );

    let created = c
        .create(
            "/api/webhooks",
            json!({"url": "https://h.example.com", "events": ["*"]}),
        )
        .await;
    let path = format!("/api/webhooks/{}", created["webhook_id"].as_str().unwrap());
    let (status, answer) = c
        .send(Method::PATCH, &path, Some(json!({"events": ["nope.nope"]})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");

    // A `user` manages no endpoint.
    let user_key = c
        .create("/api/api-keys", json!({"name": "u", "role": "user"}))
        .await;
    let user = c.with_key(user_key["api_key"].as_str().unwrap());
    assert_eq!(user.get("/api/webhooks").await.0, StatusCode::FORBIDDEN);
    assert_eq!(user.get(&path).await.0, StatusCode::FORBIDDEN);
    let (status, _) = user
        .post(
            "/api/webhooks",
            json!({"url": "https://h.example.com", "events": ["*"]}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Another organization's endpoint does not exist for this one.
    let other = ApiCaller::bootstrap(ctx, &server, "Other").await;
    let delivery = c.send(Method::POST, &format!("{path}/test"), None).await.1["data"].clone();
    let retry = format!(
        "{path}/deliveries/{}/retry",
        delivery["delivery_id"].as_str().unwrap()
    );
    for (method, p) in [
        (Method::GET, path.clone()),
        (Method::PATCH, path.clone()),
        (Method::DELETE, path.clone()),
        (Method::POST, format!("{path}/rotate-secret")),
        (Method::POST, format!("{path}/test")),
        (Method::GET, format!("{path}/deliveries")),
        (Method::POST, retry.clone()),
    ] {
        let body = (method == Method::PATCH).then(|| json!({"status": "disabled"}));
        let (status, answer) = other.send(method.clone(), &p, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {p}: {answer}");
    }
    assert_eq!(c.get(&path).await.1["data"]["status"], "enabled");
    server.stop().await;
}

async fn the_lists_page_newest_first(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let mut made = Vec::new();
    for _ in 0..5 {
        made.push(create(ctx, &admin, &["*"]).await.webhook.webhook_id);
    }
    let endpoint = made[0].clone();
    let mut tests = Vec::new();
    for _ in 0..5 {
        tests.push(
            ctx.service
                .webhook_test(&admin, &endpoint)
                .await
                .unwrap()
                .delivery_id,
        );
    }
    made.reverse();
    tests.reverse();
    let mut params = PageParams {
        limit: Some(2),
        ..Default::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = ctx.service.webhook_list(&admin, &params).await.unwrap();
        seen.extend(page.items.into_iter().map(|w| w.webhook_id));
        match page.next_cursor {
            Some(c) => params.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, made);
    let mut params = PageParams {
        limit: Some(2),
        ..Default::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = ctx
            .service
            .delivery_list(&admin, &endpoint, &params)
            .await
            .unwrap();
        seen.extend(page.items.into_iter().map(|d| d.delivery_id));
        match page.next_cursor {
            Some(c) => params.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, tests);
    let (_, user) = ctx.key_with_role(&admin, Role::User).await;
    assert!(matches!(
        ctx.service
            .delivery_list(&user, &endpoint, &PageParams::default())
            .await,
        Err(voiceplane_core::Error::Forbidden(_))
    ));
}

db_tests!(
    endpoints_have_their_shapes_and_the_secret_shows_once,
    bad_input_roles_and_other_organizations,
    the_lists_page_newest_first,
);
