//! The audit log: one entry per change a caller makes, in the change's transaction, with the
//! actor, field-level changes, request id and client address; never a secret; for admins
//! only, filtered and paged; kept `audit.retention_days` by a sweep.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::model::AuditFilter;
use voiceplane_core::page::PageParams;
use voiceplane_suite::*;

/// `method path` as `c` with `X-Request-Id: request_id`.
async fn send_as(
    c: &ApiCaller,
    method: Method,
    path: &str,
    body: Option<Value>,
    request_id: &str,
) -> (StatusCode, Value) {
    let mut req = c.request(method, path).header("X-Request-Id", request_id);
    if let Some(body) = body {
        req = req.json(&body);
    }
    read_json(req.send().await.expect("answered")).await
}

/// The whole audit log as `c` reads it with `query`, newest first, every page.
async fn audit_log(c: &ApiCaller, query: &str) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/api/audit-log?limit=2{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let (status, page) = c.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {page}");
        entries.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["pagination"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return entries,
        }
    }
}

fn actions(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect()
}

/// Create, update, delete and revoke each record an entry: who (the key), what (`action`,
/// resource), the fields that changed as `[old, new]`, the caller's `X-Request-Id` and the
/// client's address.
async fn changes_are_recorded_with_actor_request_and_ip(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let boot = ctx.bootstrap("Acme").await;
    let admin = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let (status, agent) = send_as(
        &admin,
        Method::POST,
        "/api/agents",
        Some(agent_body("Ada")),
        "req-create-1",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{agent}");
    let agent_id = agent["data"]["agent_id"].as_str().unwrap().to_owned();
    let path = format!("/api/agents/{agent_id}");
    let (status, _) = send_as(
        &admin,
        Method::PATCH,
        &path,
        Some(json!({"agent_name": "Grace", "llm_temperature": 0.2})),
        "req-update-2",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send_as(&admin, Method::DELETE, &path, None, "req-delete-3").await;
    assert_eq!(status, StatusCode::OK);
    let (status, created) = send_as(
        &admin,
        Method::POST,
        "/api/api-keys",
        Some(json!({"name": "ci", "role": "user", "scopes": ["calls:read"]})),
        "req-key-4",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let key_id = created["data"]["key_id"].as_str().unwrap().to_owned();
    let (status, _) = send_as(
        &admin,
        Method::DELETE,
        &format!("/api/api-keys/{key_id}"),
        None,
        "req-revoke-5",
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let log = audit_log(&admin, "").await;
    assert_eq!(
        actions(&log),
        [
            "api_key.revoke",
            "api_key.create",
            "agent.delete",
            "agent.update",
            "agent.create"
        ]
    );
    for (entry, request_id) in log.iter().zip([
        "req-revoke-5",
        "req-key-4",
        "req-delete-3",
        "req-update-2",
        "req-create-1",
    ]) {
        assert_eq!(
            keys(entry),
            fields(&[
                "audit_id",
                "actor",
                "action",
                "resource_type",
                "resource_id",
                "changes",
                "request_id",
                "ip",
                "created_at"
            ])
        );
        assert!(entry["audit_id"].as_str().unwrap().starts_with("aud_"));
        assert_eq!(entry["request_id"], request_id);
        assert_eq!(entry["ip"], "127.0.0.1");
        assert_eq!(
            entry["actor"],
            json!({"type": "api_key", "key_id": boot.key_id})
        );
    }
    let [revoke, key_create, delete, update, create] = &log[..] else {
        unreachable!()
    };
    assert_eq!(create["resource_type"], "agent");
    assert_eq!(create["resource_id"], agent_id.as_str());
    assert_eq!(create["changes"]["agent_name"], json!([null, "Ada"]));
    assert_eq!(update["resource_id"], agent_id.as_str());
    assert_eq!(update["changes"]["agent_name"], json!(["Ada", "Grace"]));
    assert_eq!(update["changes"]["llm_temperature"], json!([0.7, 0.2]));
    assert!(
        update["changes"].get("language").is_none(),
        "an unchanged field is not listed: {update}"
    );
    assert_eq!(delete["changes"]["agent_name"], json!(["Grace", null]));
    assert_eq!(key_create["resource_id"], key_id.as_str());
    assert_eq!(
        key_create["changes"]["scopes"],
        json!([null, ["calls:read"]])
    );
    assert_eq!(revoke["resource_type"], "api_key");
    assert_eq!(revoke["changes"]["status"], json!(["active", "revoked"]));

    // A JWT member is recorded as the user.
    let member = admin
        .with_bearer(&jwt_for(&boot.user_id, None, 600))
        .create("/api/tools", tool_body("lookup"))
        .await;
    let log = audit_log(&admin, "&action=tool.create").await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["resource_id"], member["tool_id"]);
    assert_eq!(
        log[0]["actor"],
        json!({"type": "user", "user_id": boot.user_id})
    );
    server.stop().await;
}

/// Integration credentials, key secrets, webhook secrets and a tool's authorization header
/// never reach the audit log; that a secret changed does, without its value.
async fn secrets_never_reach_the_audit_log(ctx: &TestContext) {
    const TOKEN: &str = "twilio-token-AUDIT-SECRET-0001";
    const NEW_TOKEN: &str = "twilio-token-AUDIT-SECRET-0002";
    const HEADER: &str = "Bearer tool-AUDIT-SECRET-0003";
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let mut secrets = vec![TOKEN.to_owned(), NEW_TOKEN.to_owned(), HEADER.to_owned()];

    let integration = admin
        .create(
            "/api/integrations",
            twilio_body("main", "AC5ec7e7000000000000000000000000aa", TOKEN),
        )
        .await;
    let integration_path = format!(
        "/api/integrations/{}",
        integration["integration_id"].as_str().unwrap()
    );
    let (status, v) = admin
        .send(
            Method::PATCH,
            &integration_path,
            Some(json!({"name": "renamed", "credentials": {
                "account_sid": "AC5ec7e7000000000000000000000000aa", "auth_token": NEW_TOKEN}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let key = admin
        .create("/api/api-keys", json!({"name": "ci", "role": "user"}))
        .await;
    secrets.push(key["api_key"].as_str().unwrap().to_owned());
    let webhook = admin
        .create(
            "/api/webhooks",
            json!({"url": "https://hooks.example.com/vp", "events": ["*"]}),
        )
        .await;
    secrets.push(webhook["secret"].as_str().unwrap().to_owned());
    let (status, rotated) = admin
        .post(
            &format!(
                "/api/webhooks/{}/rotate-secret",
                webhook["webhook_id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    secrets.push(rotated["data"]["secret"].as_str().unwrap().to_owned());
    let mut tool = tool_body("crm");
    tool["headers"] = json!({"Authorization": HEADER});
    admin.create("/api/tools", tool).await;

    let log = audit_log(&admin, "").await;
    assert_eq!(
        actions(&log),
        [
            "tool.create",
            "webhook.rotate_secret",
            "webhook.create",
            "api_key.create",
            "integration.update",
            "integration.create"
        ]
    );
    let text = serde_json::to_string(&log).unwrap();
    for secret in &secrets {
        assert!(!text.contains(secret.as_str()), "{secret} is in {text}");
    }
    assert_eq!(
        log[4]["changes"]["credentials"],
        json!(["[redacted]", "[redacted]"])
    );
    assert_eq!(log[4]["changes"]["name"], json!(["main", "renamed"]));
    assert_eq!(
        log[1]["changes"]["secret"],
        json!(["[redacted]", "[redacted]"])
    );
    assert_eq!(
        log[0]["changes"]["headers"],
        json!([null, {"Authorization": "[redacted]"}])
    );
    server.stop().await;
}

/// Only admins read the log (403 naming `audit:read` otherwise); each filter keeps only its
/// entries, a malformed one is a 400, and a cursor continues only its own filters. No route
/// changes or deletes an entry.
async fn the_log_is_for_admins_and_filters_work(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let boot = ctx.bootstrap("Acme").await;
    let admin = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let manager_key = admin
        .create(
            "/api/api-keys",
            json!({"name": "m", "role": "agent_manager"}),
        )
        .await;
    let manager = admin.with_key(manager_key["api_key"].as_str().unwrap());
    let user_key = admin
        .create("/api/api-keys", json!({"name": "u", "role": "user"}))
        .await;
    let user = admin.with_key(user_key["api_key"].as_str().unwrap());
    for c in [&manager, &user] {
        let (status, v) = c.get("/api/audit-log").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            v["detail"].as_str().unwrap().contains("`audit:read`"),
            "{v}"
        );
    }

    let first = manager.create("/api/tools", tool_body("one")).await;
    ctx.clock.advance(60);
    let middle = ctx.clock.peek();
    let second = admin.create("/api/tools", tool_body("two")).await;
    let (status, _) = admin
        .send(
            Method::DELETE,
            &format!("/api/tools/{}", first["tool_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let tool_creates = audit_log(&admin, "&action=tool.create").await;
    assert_eq!(tool_creates.len(), 2);
    let about_first = audit_log(
        &admin,
        &format!("&resource_id={}", first["tool_id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(actions(&about_first), ["tool.delete", "tool.create"]);
    let by_manager = audit_log(
        &admin,
        &format!("&actor_key_id={}", manager_key["key_id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(actions(&by_manager), ["tool.create"]);
    assert_eq!(by_manager[0]["resource_id"], first["tool_id"]);
    let since = audit_log(
        &admin,
        &format!("&created_after={}&action=tool.create", middle.to_rfc3339()),
    )
    .await;
    assert_eq!(since.len(), 1);
    assert_eq!(since[0]["resource_id"], second["tool_id"]);
    let before = audit_log(&admin, &format!("&created_before={}", middle.to_rfc3339())).await;
    assert_eq!(
        actions(&before),
        ["tool.create", "api_key.create", "api_key.create"]
    );
    assert!(
        audit_log(&admin, &format!("&actor_user_id={}", boot.user_id))
            .await
            .is_empty(),
        "no change was made with a JWT"
    );

    for bad in [
        "action=tool",
        "action=Tool.Create",
        "actor_key_id=key_1",
        "actor_user_id=someone",
        "resource_id=a%20b",
        "created_after=yesterday",
        "created_before=2026-13-01T00:00:00Z",
        "created_after=2026-02-01T00:00:00Z&created_before=2026-01-01T00:00:00Z",
    ] {
        let (status, v) = admin.get(&format!("/api/audit-log?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {v}");
    }
    let (_, page) = admin.get("/api/audit-log?limit=1&action=tool.create").await;
    let cursor = page["pagination"]["next_cursor"].as_str().unwrap();
    let (status, v) = admin
        .get(&format!("/api/audit-log?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");

    for method in [Method::POST, Method::PATCH, Method::DELETE, Method::PUT] {
        let (status, _) = admin.send(method.clone(), "/api/audit-log", None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
    server.stop().await;
}

/// A change that fails leaves no entry: its entry was written in its transaction.
async fn an_entry_rolls_back_with_its_change(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    ctx.service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap();
    let again = ctx.service.tool_create(&admin, new_tool("lookup")).await;
    assert!(
        matches!(again, Err(voiceplane_core::Error::Conflict(_))),
        "{again:?}"
    );
    let mut agent = new_agent("Ada");
    agent.custom_tools = vec!["tool_00000000000000000000dead".to_owned()];
    assert!(ctx.service.agent_create(&admin, agent).await.is_err());
    let log = ctx
        .service
        .audit_list(&admin, &AuditFilter::default(), &PageParams::default())
        .await
        .unwrap();
    let actions: Vec<&str> = log.items.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["tool.create"]);
}

/// The sweep, scheduled once however many instances ask, deletes entries older than the
/// retention period and keeps the others.
async fn the_sweep_deletes_entries_past_retention(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    for name in ["old-1", "old-2"] {
        ctx.service
            .tool_create(&admin, new_tool(name))
            .await
            .unwrap();
    }
    ctx.clock.advance(366 * 24 * 3600);
    ctx.service
        .tool_create(&admin, new_tool("recent"))
        .await
        .unwrap();
    let list = || async {
        ctx.service
            .audit_list(&admin, &AuditFilter::default(), &PageParams::default())
            .await
            .unwrap()
            .items
    };
    assert_eq!(list().await.len(), 3);
    ctx.service.jobs_schedule_recurring().await.unwrap();
    ctx.service.jobs_schedule_recurring().await.unwrap();
    let config = RunnerConfig {
        idle_check: Duration::from_millis(20),
        ..RunnerConfig::default()
    };
    let runner = ctx.service.job_runner(config);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    eventually("the expired entries are gone", || async {
        list().await.len() == 1
    })
    .await;
    assert_eq!(
        list().await[0].changes["tool_name"],
        json!([null, "recent"])
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// A change sent without an `X-Request-Id`, or with one the API does not accept (or two), is
/// recorded under the id the API generated and answered with.
async fn a_generated_request_id_is_the_one_recorded(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let boot = ctx.bootstrap("Acme").await;
    let admin = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let mut answered = Vec::new();
    let sent: [&[&str]; 4] = [&[], &["has space"], &[""], &["first-id", "second-id"]];
    for values in sent {
        let mut req = admin
            .request(Method::POST, "/api/agents")
            .json(&agent_body("Ada"));
        for value in values {
            req = req.header("X-Request-Id", *value);
        }
        let res = req.send().await.expect("answered");
        assert_eq!(res.status(), StatusCode::CREATED);
        let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert_eq!(id.len(), 16, "a generated id: {id}");
        answered.push(id);
    }
    answered.reverse();
    let log = audit_log(&admin, "").await;
    let recorded: Vec<&str> = log
        .iter()
        .map(|e| e["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, answered);
}

db_tests!(
    changes_are_recorded_with_actor_request_and_ip,
    a_generated_request_id_is_the_one_recorded,
    secrets_never_reach_the_audit_log,
    the_log_is_for_admins_and_filters_work,
    an_entry_rolls_back_with_its_change,
    the_sweep_deletes_entries_past_retention,
);
