//! API keys: creation and listing without secrets, `last_used_at` written at most once a
//! minute, and revocation, through `Service` and over HTTP.

use reqwest::{Method, StatusCode};
use serde_json::json;
use voiceplane_core::Error;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_suite::*;

fn assert_detail<T: std::fmt::Debug>(r: Result<T, Error>, expected: Error) {
    match r {
        Err(e) => assert_eq!(e, expected),
        Ok(v) => panic!("expected {expected:?}, got {v:?}"),
    }
}

async fn api_keys_are_created_and_listed_without_secrets(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let created = ctx
        .service
        .api_key_create(
            &admin,
            serde_json::from_value(json!({"name": "ci", "role": "agent_manager"})).unwrap(),
        )
        .await
        .unwrap();
    assert!(voiceplane_core::ids::IdKind::ApiKey.matches(&created.key.key_id));
    assert_eq!(created.key.role, Role::AgentManager);
    assert_eq!(created.key.user_id, admin.user_id);
    assert_eq!(created.key.organization_id, admin.organization_id);
    let listed = serde_json::to_string(
        &ctx.service
            .api_key_list(&admin, &PageParams::default())
            .await
            .unwrap()
            .items,
    )
    .unwrap();
    assert!(listed.contains(&created.key.key_id));
    assert!(
        !listed.contains(&created.api_key),
        "the secret is never listed"
    );
    let actor = ctx.actor(&admin.organization_id, &created.api_key).await;
    assert_eq!(actor.role, Role::AgentManager);
}

async fn last_used_at_is_written_at_most_once_a_minute(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let admin = ctx.actor(&boot.organization_id, &boot.api_key).await;
    let first = ctx
        .service
        .api_key_list(&admin, &PageParams::default())
        .await
        .unwrap()
        .items[0]
        .last_used_at
        .expect("set by the first use");
    ctx.clock.advance(10);
    ctx.actor(&boot.organization_id, &boot.api_key).await;
    let second = ctx
        .service
        .api_key_list(&admin, &PageParams::default())
        .await
        .unwrap()
        .items[0]
        .last_used_at
        .unwrap();
    assert_eq!(first, second, "not rewritten within a minute");
    ctx.clock.advance(61);
    ctx.actor(&boot.organization_id, &boot.api_key).await;
    let third = ctx
        .service
        .api_key_list(&admin, &PageParams::default())
        .await
        .unwrap()
        .items[0]
        .last_used_at
        .unwrap();
    assert!(third > second);
}

async fn revoking_a_key(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let org = admin.organization_id.clone();
    let (manager_key, manager) = ctx.key_with_role(&admin, Role::AgentManager).await;
    let (user_key, user) = ctx.key_with_role(&admin, Role::User).await;

    // Users may not revoke; managers may not revoke keys above their role.
    let forbidden = Error::Forbidden("only admins and agent managers can revoke API keys".into());
    assert_detail(
        ctx.service
            .api_key_revoke(&user, &manager_key.key.key_id)
            .await,
        forbidden.clone(),
    );
    let admin_key_id = ctx
        .service
        .api_key_list(&admin, &PageParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .find(|k| k.role == Role::Admin)
        .unwrap()
        .key_id
        .clone();
    assert_detail(
        ctx.service.api_key_revoke(&manager, &admin_key_id).await,
        forbidden,
    );

    // Another organization's key and an unknown key look the same.
    let other = ctx.admin("Acme").await;
    let (foreign, _) = ctx.key_with_role(&other, Role::User).await;
    let not_found = Error::NotFound("key not found or not in this organization".into());
    assert_detail(
        ctx.service
            .api_key_revoke(&admin, &foreign.key.key_id)
            .await,
        not_found.clone(),
    );
    assert_detail(
        ctx.service
            .api_key_revoke(&admin, "apikey_ffffffffffff")
            .await,
        not_found,
    );

    // A manager revokes a user key: it stops working at once and stays listed.
    ctx.authenticate_key(&org, &user_key.api_key).await.unwrap();
    let out = ctx
        .service
        .api_key_revoke(&manager, &user_key.key.key_id)
        .await
        .unwrap();
    assert_eq!(out.data.status, ApiKeyStatus::Revoked);
    assert_eq!(out.message, "API key revoked");
    let err = ctx
        .authenticate_key(&org, &user_key.api_key)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unauthenticated(m) if m.contains("revoked")),
        "{err:?}"
    );
    let listed = ctx
        .service
        .api_key_list(&admin, &PageParams::default())
        .await
        .unwrap();
    let row = listed
        .items
        .iter()
        .find(|k| k.key_id == user_key.key.key_id)
        .unwrap();
    assert_eq!(row.status, ApiKeyStatus::Revoked);
    let again = ctx
        .service
        .api_key_revoke(&admin, &user_key.key.key_id)
        .await
        .unwrap();
    assert_eq!(again.message, "API key was already revoked");
    assert_eq!(again.data.status, ApiKeyStatus::Revoked);
}

async fn revoke_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (_, key) = c
        .send(
            Method::POST,
            "/api/api-keys",
            Some(json!({"name": "u", "role": "user"})),
        )
        .await;
    let key_id = key["data"]["key_id"].as_str().unwrap();
    let user = c.with_key(key["data"]["api_key"].as_str().unwrap());

    let (status, v) = user
        .send(Method::DELETE, &format!("/api/api-keys/{key_id}"), None)
        .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::FORBIDDEN,
            json!({"detail": "only admins and agent managers can revoke API keys"})
        )
    );
    let (status, v) = c
        .send(Method::DELETE, "/api/api-keys/apikey_ffffffffffff", None)
        .await;
    assert_eq!(
        (status, v),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "key not found or not in this organization"})
        )
    );
    let (status, v) = c
        .send(Method::DELETE, "/api/api-keys/apikey_nothex", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");

    let (status, v) = c
        .send(Method::DELETE, &format!("/api/api-keys/{key_id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["success"], true);
    assert_eq!(v["message"], "API key revoked");
    assert_eq!(v["data"]["status"], "revoked");
    assert_eq!(v["data"]["key_id"], key_id);
    let (status, _) = user.send(Method::GET, "/api/tools", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "revoked at once");
    // Another instance on the same database sees the revocation at once: nothing is cached.
    let (_, key2) = c
        .send(
            Method::POST,
            "/api/api-keys",
            Some(json!({"name": "u2", "role": "user"})),
        )
        .await;
    let second = TestServer::start_configured(ctx, |s| s).await;
    let on_second = ApiCaller {
        base: second.base.clone(),
        ..c.with_key(key2["data"]["api_key"].as_str().unwrap())
    };
    assert_eq!(
        on_second.send(Method::GET, "/api/tools", None).await.0,
        StatusCode::OK
    );
    let id2 = key2["data"]["key_id"].as_str().unwrap();
    assert_eq!(
        c.send(Method::DELETE, &format!("/api/api-keys/{id2}"), None)
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        on_second.send(Method::GET, "/api/tools", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    second.stop().await;
    server.stop().await;
}

/// Keys are cached by each instance; a removed member's keys stop at once on the instance that
/// removed them and on SQLite everywhere, and on another Postgres instance as soon as its
/// listener has the notification (which the removing instance waited to hear itself); over
/// HTTP that is before the client's next request (`revoke_over_http`).
async fn a_removed_members_keys_stop_on_every_instance(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let org = boot.organization_id.clone();
    let admin = ctx.actor(&org, &boot.api_key).await;
    let invitation = ctx
        .service
        .invitation_create(
            &admin,
            serde_json::from_value(json!({"email": "two@example.com", "role": "agent_manager"}))
                .unwrap(),
        )
        .await
        .unwrap();
    let token = jwt_for("user_two000000000000001", Some("two@example.com"), 600);
    let member = ctx
        .service
        .invitation_accept(Some(&token), &invitation.invite_id)
        .await
        .unwrap()
        .data;
    let two = ctx
        .service
        .authenticate(&voiceplane_core::auth::Credentials {
            api_key: None,
            bearer: Some(token),
            organization_id: Some(org.clone()),
        })
        .await
        .unwrap();
    let key = ctx
        .service
        .api_key_create(
            &two,
            serde_json::from_value(json!({"name": "two's", "role": "agent_manager"})).unwrap(),
        )
        .await
        .unwrap();
    let credentials = voiceplane_core::auth::Credentials {
        api_key: Some(key.api_key.clone()),
        bearer: None,
        organization_id: Some(org.clone()),
    };
    let second = ctx.another_instance().await;
    for _ in 0..3 {
        second.authenticate(&credentials).await.unwrap();
        ctx.authenticate_key(&org, &key.api_key).await.unwrap();
    }
    ctx.service
        .member_remove(&admin, &member.membership_id)
        .await
        .unwrap();
    let refused = Error::unauthenticated("API key has been revoked");
    assert_detail(
        ctx.authenticate_key(&org, &key.api_key).await,
        refused.clone(),
    );
    match ctx.backend {
        Backend::Sqlite => assert_detail(second.authenticate(&credentials).await, refused),
        Backend::Postgres => {
            eventually("the other instance refuses the key", || async {
                second.authenticate(&credentials).await.err() == Some(refused.clone())
            })
            .await;
        }
    }
}

db_tests!(
    api_keys_are_created_and_listed_without_secrets,
    last_used_at_is_written_at_most_once_a_minute,
    revoking_a_key,
    revoke_over_http,
    a_removed_members_keys_stop_on_every_instance,
);
