//! Authentication and authorization: bootstrap's admin key, API keys and bearer tokens
//! mapped to actors (401 and 403 over HTTP), what the `user` role may not do, and another
//! organization's resources never found; JWKS and `last_login` in modules of their own.

mod jwks;
mod last_login;

use reqwest::{Method, StatusCode};
use serde_json::json;
use voiceplane_core::auth::{Actor, Credentials};
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{BootstrapInput, Error};
use voiceplane_suite::*;

async fn bootstrap_creates_a_working_admin_key(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    assert!(boot.organization_id.starts_with("org_"));
    assert!(boot.user_id.starts_with("user_"));
    assert!(voiceplane_core::ids::IdKind::ApiKey.matches(&boot.key_id));
    assert!(voiceplane_core::auth::is_well_formed_secret(&boot.api_key));
    let actor = ctx.actor(&boot.organization_id, &boot.api_key).await;
    assert_eq!(actor.role, Role::Admin);
    assert_eq!(actor.user_id, boot.user_id);
    let members = ctx.service.member_list(&actor).await.unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].role, Role::Admin);
    assert_eq!(members[0].user_id, boot.user_id);
    let keys = ctx
        .service
        .api_key_list(&actor, &PageParams::default())
        .await
        .unwrap();
    assert_eq!(keys.items.len(), 1);
    assert_eq!(keys.items[0].key_id, boot.key_id);
    assert_eq!(keys.items[0].prefix, &boot.api_key[..12]);
    assert_eq!(keys.items[0].status, ApiKeyStatus::Active);

    // Same admin e-mail, second organization: the user is reused.
    let email = members[0].email.clone();
    let second = ctx
        .service
        .organization_bootstrap(BootstrapInput {
            org_name: "Second".into(),
            admin_email: email.to_uppercase(),
            admin_name: None,
        })
        .await
        .unwrap();
    assert_eq!(second.user_id, boot.user_id);
    assert_ne!(second.organization_id, boot.organization_id);
}

async fn credentials_are_checked(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let other = ctx.bootstrap("Other").await;
    let org = boot.organization_id.clone();
    let auth = |api_key: Option<&str>, bearer: Option<&str>, org: Option<&str>| {
        let creds = Credentials {
            api_key: api_key.map(str::to_owned),
            bearer: bearer.map(str::to_owned),
            organization_id: org.map(str::to_owned),
        };
        let service = ctx.service.clone();
        async move { service.authenticate(&creds).await }
    };
    let unauth =
        |r: Result<Actor, Error>| assert!(matches!(r, Err(Error::Unauthenticated(_))), "{r:?}");
    unauth(auth(None, None, Some(&org)).await);
    unauth(auth(Some("vpk_short"), None, Some(&org)).await);
    unauth(auth(Some(&format!("vpk_{}", "A".repeat(40))), None, Some(&org)).await);
    unauth(auth(None, Some("not.a.jwt"), Some(&org)).await);
    unauth(auth(None, Some(&jwt_for(&boot.user_id, None, -3600)), Some(&org)).await);
    // Org mismatch is a 403.
    let r = auth(Some(&boot.api_key), None, Some(&other.organization_id)).await;
    assert!(matches!(r, Err(Error::Forbidden(_))), "{r:?}");
    // Missing organization header is a 400.
    let r = auth(Some(&boot.api_key), None, None).await;
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");

    // A JWT for a member acts with the membership's role; a non-member gets 403.
    let actor = auth(None, Some(&jwt_for(&boot.user_id, None, 3600)), Some(&org))
        .await
        .unwrap();
    assert_eq!(actor.role, Role::Admin);
    assert_eq!(actor.organization_id, org);
    let r = auth(None, Some(&jwt_for(&other.user_id, None, 3600)), Some(&org)).await;
    assert!(matches!(r, Err(Error::Forbidden(_))), "{r:?}");

    // Expired keys stop working and are listed as expired.
    let admin = ctx.actor(&org, &boot.api_key).await;
    let expires_at = ctx.clock.peek().add_seconds(3600);
    let short = ctx
        .service
        .api_key_create(
            &admin,
            NewApiKey {
                name: "short".into(),
                role: Role::User,
                expires_at: Some(expires_at),
                scopes: None,
            },
        )
        .await
        .unwrap();
    auth(Some(&short.api_key), None, Some(&org)).await.unwrap();
    ctx.clock.advance(7200);
    let r = auth(Some(&short.api_key), None, Some(&org)).await;
    assert!(
        matches!(&r, Err(Error::Unauthenticated(m)) if m.contains("expired")),
        "{r:?}"
    );
    let keys = ctx
        .service
        .api_key_list(&admin, &PageParams::default())
        .await
        .unwrap();
    let listed = keys
        .items
        .iter()
        .find(|k| k.key_id == short.key.key_id)
        .unwrap();
    assert_eq!(listed.status, ApiKeyStatus::Expired);
    // Past expiry is refused at creation.
    let past = NewApiKey {
        name: "p".into(),
        role: Role::User,
        expires_at: Some(Timestamp::from_micros(0)),
        scopes: None,
    };
    assert!(matches!(
        ctx.service.api_key_create(&admin, past).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn credentials_map_to_401_and_403(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let other = ctx.bootstrap("Other").await;
    let agent = c.create("/api/agents", agent_body("A")).await;
    let path = format!("/api/agents/{}", agent["agent_id"].as_str().unwrap());

    let anonymous = ApiCaller {
        key: None,
        ..c.clone()
    };
    // Missing credentials: refused before anything else is looked at (the POST below has no
    // body), and no cache may keep the refusal.
    let resp = anonymous.request(Method::GET, &path).send().await.unwrap();
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let (status, v) = read_json(resp).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("missing credentials"),
        "{v}"
    );
    let (status, _) = read_json(
        anonymous
            .request(Method::POST, "/api/agents")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Unknown key, malformed key, non-Bearer Authorization, expired JWT: never echoed.
    for (name, value) in [
        ("X-API-Key", format!("vpk_{}", "x".repeat(40))),
        ("X-API-Key", "letmein".to_owned()),
        ("Authorization", "Basic dXNlcjpwYXNz".to_owned()),
        (
            "Authorization",
            format!("Bearer {}", jwt_for("user_0123456789abcdef", None, -600)),
        ),
    ] {
        let (status, v) = read_json(
            anonymous
                .request(Method::GET, &path)
                .header(name, &value)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {v}");
        assert!(!v.to_string().contains(&value), "{name}: {v}");
        if value.starts_with("Basic") {
            assert_eq!(
                v["detail"],
                "Authorization header must use the Bearer scheme"
            );
        }
    }
    // Expired key.
    let expires_at = ctx.clock.peek().add_seconds(600).to_rfc3339();
    let short = c
        .create(
            "/api/api-keys",
            json!({"name": "short", "role": "user", "expires_at": expires_at}),
        )
        .await;
    let short_caller = c.with_key(short["api_key"].as_str().unwrap());
    assert_eq!(short_caller.get(&path).await.0, StatusCode::OK);
    ctx.clock.advance(3600);
    let (status, v) = short_caller.get(&path).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(v["detail"].as_str().unwrap().contains("expired"));

    // A valid key used for another organization, existing or not: 403; for none: 400.
    let mismatched = ApiCaller::new(&server, &other.organization_id, c.key.as_deref().unwrap());
    assert_eq!(mismatched.get(&path).await.0, StatusCode::FORBIDDEN);
    let unknown_org = ApiCaller {
        org: Some("org_fedcba9876543210".to_owned()),
        ..c.clone()
    };
    assert_eq!(unknown_org.get(&path).await.0, StatusCode::FORBIDDEN);
    let no_org = ApiCaller {
        org: None,
        ..c.clone()
    };
    assert_eq!(no_org.get(&path).await.0, StatusCode::BAD_REQUEST);

    // A member's JWT works; the same user's JWT in a foreign org is 403.
    let members = c.get("/api/auth/organizations/members").await.1;
    let user_id = members["members"][0]["user_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let jwt_caller = c.with_bearer(&jwt_for(&user_id, None, 600));
    let (status, v) = jwt_caller.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let foreign = ApiCaller {
        org: Some(other.organization_id.clone()),
        ..jwt_caller
    };
    assert_eq!(foreign.get(&path).await.0, StatusCode::FORBIDDEN);

    // The other organization's admin sees a 404, as for an unknown id.
    let outsider = ApiCaller::new(&server, &other.organization_id, &other.api_key);
    assert_eq!(outsider.get(&path).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        outsider.get("/api/agents/agent_ffffffffffffffff").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        outsider.get("/api/agents/not-an-id").await.0,
        StatusCode::BAD_REQUEST
    );
    server.stop().await;
}

async fn user_role_cannot_create(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let user = ctx.key_with_role(&admin, Role::User).await.1;
    let agent = ctx
        .service
        .agent_create(&admin, new_agent("a"))
        .await
        .unwrap();

    let forbidden = |r: Result<(), Error>| assert!(matches!(r, Err(Error::Forbidden(_))), "{r:?}");
    forbidden(
        ctx.service
            .agent_create(&user, new_agent("x"))
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .tool_create(&user, new_tool("x"))
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .call_create(&user, new_call(&agent.agent_id))
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .document_create_text(
                &user,
                NewTextDocument {
                    name: "d".into(),
                    text: "t".into(),
                },
            )
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .phone_number_create(
                &user,
                serde_json::from_value(json!({"phone_number": "+14155550100", "provider": "x"}))
                    .unwrap(),
            )
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .api_key_create(
                &user,
                serde_json::from_value(json!({"name": "k", "role": "user"})).unwrap(),
            )
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .invitation_create(
                &user,
                NewInvitation {
                    email: "x@example.com".into(),
                    role: Role::User,
                },
            )
            .await
            .map(drop),
    );
    // Reads are allowed.
    ctx.service
        .agent_view(&user, &agent.agent_id)
        .await
        .unwrap();
    ctx.service
        .call_list(
            &user,
            &CallFilter::default(),
            &CallSearch::default(),
            &PageParams::default(),
        )
        .await
        .unwrap();
    ctx.service.member_list(&user).await.unwrap();

    // An agent manager can create, but neither invite nor mint an admin key.
    let manager = ctx.key_with_role(&admin, Role::AgentManager).await.1;
    ctx.service
        .tool_create(&manager, new_tool("m"))
        .await
        .unwrap();
    forbidden(
        ctx.service
            .invitation_create(
                &manager,
                NewInvitation {
                    email: "y@example.com".into(),
                    role: Role::User,
                },
            )
            .await
            .map(drop),
    );
    forbidden(
        ctx.service
            .api_key_create(
                &manager,
                serde_json::from_value(json!({"name": "k", "role": "admin"})).unwrap(),
            )
            .await
            .map(drop),
    );
}

async fn user_role_gets_403_on_create(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let admin = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let key = admin
        .create("/api/api-keys", json!({"name": "viewer", "role": "user"}))
        .await;
    let user = admin.with_key(key["api_key"].as_str().unwrap());
    let agent = admin.create("/api/agents", agent_body("A")).await;
    for (path, body) in [
        ("/api/agents", agent_body("B")),
        (
            "/api/tools",
            json!({"tool_name": "t", "tool_description": "d", "url": "https://x.example"}),
        ),
        (
            "/api/calls",
            json!({"agent_id": agent["agent_id"], "to_number": "+14155550100", "call_type": "preview"}),
        ),
        (
            "/api/phone-numbers",
            json!({"phone_number": "+14155550100", "provider": "twilio"}),
        ),
        ("/api/knowledge-base", json!({"name": "n", "text": "t"})),
        ("/api/api-keys", json!({"name": "k", "role": "user"})),
        (
            "/api/auth/organizations/invitations",
            json!({"email": "a@example.com", "role": "user"}),
        ),
    ] {
        let (status, v) = user.post(path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {v}");
    }
    let (status, _) = user
        .get(&format!(
            "/api/agents/{}",
            agent["agent_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await;
}

async fn another_organizations_resources_are_not_found(ctx: &TestContext) {
    let a = ctx.admin("A").await;
    let b = ctx.admin("B").await;
    let agent = ctx
        .service
        .agent_create(&a, new_agent("A's"))
        .await
        .unwrap();
    let call = ctx
        .service
        .call_create(&a, new_call(&agent.agent_id))
        .await
        .unwrap();
    let doc = ctx
        .service
        .document_create_text(
            &a,
            NewTextDocument {
                name: "d".into(),
                text: "t".into(),
            },
        )
        .await
        .unwrap();
    let number = ctx
        .service
        .phone_number_create(
            &a,
            serde_json::from_value(json!({"phone_number": "+14155550199", "provider": "twilio"}))
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(matches!(
        ctx.service.agent_view(&b, &agent.agent_id).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service.call_view(&b, &call.call_sid).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service.document_view(&b, &doc.documentation_id).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service
            .phone_number_view(&b, &number.phone_number_id)
            .await,
        Err(Error::NotFound(_))
    ));
    // Unknown ids look the same, malformed ones are a 400.
    assert!(matches!(
        ctx.service.agent_view(&a, "agent_ffffffffffffffff").await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service.agent_view(&a, "agent_XYZ").await,
        Err(Error::InvalidInput(_))
    ));
    // A call in B may not reference A's agent.
    assert!(matches!(
        ctx.service.call_create(&b, new_call(&agent.agent_id)).await,
        Err(Error::InvalidInput(_))
    ));
}

db_tests!(
    bootstrap_creates_a_working_admin_key,
    credentials_are_checked,
    credentials_map_to_401_and_403,
    user_role_cannot_create,
    user_role_gets_403_on_create,
    another_organizations_resources_are_not_found,
);
