//! Access (DESIGN §16): API keys narrowed to some permissions of their role (`scopes`),
//! refused with 403 naming the missing scope, and never created beyond what their creator
//! holds; the audit log is in `audit`.

mod audit;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;

/// Creates a key with `body` as `c`, which must answer 201; returns `data`.
async fn key(c: &ApiCaller, body: Value) -> Value {
    c.create("/api/api-keys", body).await
}

/// `c`'s answer to `method path`, which must be a 403 whose detail names `permission`.
async fn refused(c: &ApiCaller, method: Method, path: &str, body: Option<Value>, permission: &str) {
    let (status, v) = c.send(method.clone(), path, body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("`{permission}`")),
        "{method} {path} names {permission}: {detail}"
    );
}

/// A key scoped to `agents:read` reads agents and does nothing else, however high its role;
/// the key object shows its scopes, and `null` for an unscoped key.
async fn a_key_scoped_to_agents_read_reads_agents_and_nothing_else(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let agent = admin.create("/api/agents", agent_body("Ada")).await;
    let agent_path = format!("/api/agents/{}", agent["agent_id"].as_str().unwrap());
    let plain = key(&admin, json!({"name": "plain", "role": "user"})).await;
    assert_eq!(plain["scopes"], Value::Null);
    let scoped = key(
        &admin,
        json!({"name": "agents only", "role": "admin", "scopes": ["agents:read"]}),
    )
    .await;
    assert_eq!(scoped["scopes"], json!(["agents:read"]));
    let (status, viewed) = admin
        .get(&format!(
            "/api/api-keys/{}",
            scoped["key_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(viewed["data"]["scopes"], json!(["agents:read"]));

    let reader = admin.with_key(scoped["api_key"].as_str().unwrap());
    let (status, list) = reader.get("/api/agents").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    let (status, one) = reader.get(&agent_path).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["data"]["agent_name"], "Ada");

    refused(
        &reader,
        Method::POST,
        "/api/agents",
        Some(agent_body("Bo")),
        "agents:write",
    )
    .await;
    refused(
        &reader,
        Method::PATCH,
        &agent_path,
        Some(json!({"agent_name": "Bo"})),
        "agents:write",
    )
    .await;
    refused(&reader, Method::DELETE, &agent_path, None, "agents:write").await;
    refused(&reader, Method::GET, "/api/tools", None, "tools:read").await;
    refused(&reader, Method::GET, "/api/calls", None, "calls:read").await;
    refused(&reader, Method::GET, "/api/api-keys", None, "api_keys:read").await;
    refused(&reader, Method::GET, "/api/events", None, "events:read").await;
    refused(&reader, Method::GET, "/api/audit-log", None, "audit:read").await;
    refused(
        &reader,
        Method::GET,
        "/api/organization/settings",
        None,
        "settings:read",
    )
    .await;
    refused(
        &reader,
        Method::POST,
        "/api/api-keys",
        Some(json!({"name": "x", "role": "user", "scopes": ["agents:read"]})),
        "api_keys:write",
    )
    .await;
    refused(
        &reader,
        Method::DELETE,
        &format!("/api/api-keys/{}", plain["key_id"].as_str().unwrap()),
        None,
        "api_keys:write",
    )
    .await;
    // The agent is as it was: nothing the key tried changed it.
    let (_, after) = admin.get(&agent_path).await;
    assert_eq!(after["data"]["agent_name"], "Ada");
    server.stop().await;
}

/// Writing a resource includes reading it (every write answers with the resource): a key
/// scoped to `tools:write` lists and changes tools, and nothing else.
async fn a_write_scope_includes_reading_its_resource(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let scoped = key(
        &admin,
        json!({"name": "tools", "role": "agent_manager", "scopes": ["tools:write"]}),
    )
    .await;
    let writer = admin.with_key(scoped["api_key"].as_str().unwrap());
    let tool = writer.create("/api/tools", tool_body("lookup")).await;
    let path = format!("/api/tools/{}", tool["tool_id"].as_str().unwrap());
    let (status, v) = writer
        .send(
            Method::PATCH,
            &path,
            Some(json!({"tool_description": "finds orders"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, _) = writer.get("/api/tools").await;
    assert_eq!(status, StatusCode::OK);
    refused(&writer, Method::GET, "/api/agents", None, "agents:read").await;
    server.stop().await;
}

/// `POST /api/api-keys` refuses, with 400 naming the scope, a scope the key's role lacks, one
/// its creator lacks (a scoped creator included), an unknown name, an empty list, and a
/// scoped creator asking for a key of every permission of its role.
async fn scopes_never_exceed_the_role_or_the_creator(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let bad = |c: ApiCaller, body: Value, named: &'static str| async move {
        let (status, v) = c.post("/api/api-keys", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {v}");
        let detail = v["detail"].as_str().unwrap();
        assert!(detail.contains(named), "{body}: {detail}");
    };

    // Above the key's role.
    bad(
        admin.clone(),
        json!({"name": "k", "role": "user", "scopes": ["agents:read", "agents:write"]}),
        "the scope `agents:write` is not allowed to the role `user`",
    )
    .await;
    bad(
        admin.clone(),
        json!({"name": "k", "role": "agent_manager", "scopes": ["audit:read"]}),
        "`audit:read`",
    )
    .await;
    // Unknown names, including the finer permissions of before.
    for unknown in ["calls:import", "agents:admin", "everything"] {
        bad(
            admin.clone(),
            json!({"name": "k", "role": "admin", "scopes": [unknown]}),
            "unknown permission",
        )
        .await;
    }
    bad(
        admin.clone(),
        json!({"name": "k", "role": "user", "scopes": []}),
        "at least one permission",
    )
    .await;

    // A scoped creator grants only what it holds itself.
    let creator = key(
        &admin,
        json!({"name": "minter", "role": "admin",
               "scopes": ["api_keys:write", "agents:read"]}),
    )
    .await;
    let minter = admin.with_key(creator["api_key"].as_str().unwrap());
    bad(
        minter.clone(),
        json!({"name": "k", "role": "user", "scopes": ["calls:read"]}),
        "you cannot grant the scope `calls:read`",
    )
    .await;
    bad(
        minter.clone(),
        json!({"name": "k", "role": "user"}),
        "a scoped API key can only create keys with `scopes`",
    )
    .await;
    let made = key(
        &minter,
        json!({"name": "k", "role": "user", "scopes": ["agents:read"]}),
    )
    .await;
    assert_eq!(made["scopes"], json!(["agents:read"]));
    // An unscoped agent manager cannot grant what its role lacks either.
    let manager = key(&admin, json!({"name": "m", "role": "agent_manager"})).await;
    let manager = admin.with_key(manager["api_key"].as_str().unwrap());
    bad(
        manager,
        json!({"name": "k", "role": "user", "scopes": ["members:write"]}),
        "`members:write`",
    )
    .await;
    // Nothing refused was created: the admin's key, the minter, the one it made, the manager.
    let (_, keys) = admin.get("/api/api-keys").await;
    assert_eq!(keys["data"].as_array().unwrap().len(), 4, "{keys}");
    server.stop().await;
}

/// Finer rules of the roles stay as they were: revoking needs `api_keys:write` and answers
/// the pinned sentence to a `user`; importing a back-dated call needs `admin`.
async fn finer_role_rules_keep_their_sentences(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let plain = key(&admin, json!({"name": "p", "role": "user"})).await;
    let user = admin.with_key(plain["api_key"].as_str().unwrap());
    let (status, v) = user
        .send(
            Method::DELETE,
            &format!("/api/api-keys/{}", plain["key_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        v["detail"],
        "only admins and agent managers can revoke API keys"
    );
    let (status, v) = user.post("/api/agents", agent_body("x")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        v["detail"],
        "your role `user` lacks the permission `agents:write`"
    );
    server.stop().await;
}

db_tests!(
    a_key_scoped_to_agents_read_reads_agents_and_nothing_else,
    a_write_scope_includes_reading_its_resource,
    scopes_never_exceed_the_role_or_the_creator,
    finer_role_rules_keep_their_sentences,
);
