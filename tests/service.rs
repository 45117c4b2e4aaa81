//! Library-level suite: every operation through `Service`, on SQLite and on Postgres.
//!
//! Run on SQLite only: `cargo test --test service`.
//! Run on both: `VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo test --test service`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use serde_json::json;
use voiceplane_core::auth::{Actor, Credentials};
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{BootstrapInput, Error};
use voiceplane_suite::{TestContext, db_tests, jwt_for};

fn new_agent(name: &str) -> NewAgent {
    serde_json::from_value(json!({
        "agent_name": name,
        "language": "en-us",
        "stt_provider": "deepgram",
        "tts_provider": "provider_two",
        "tts_voice": "voice_123",
        "llm_provider": "openai",
        "llm_model": "gpt-4o-mini",
        "system_prompt": "You are helpful.",
        "speak_first": true,
        "recording_enabled": true
    }))
    .unwrap()
}

fn new_call(agent_id: &str) -> NewCall {
    serde_json::from_value(json!({
        "agent_id": agent_id,
        "to_number": "+14155550123",
        "from_number": "+14155550100",
        "call_type": "outbound"
    }))
    .unwrap()
}

fn new_tool(name: &str) -> NewTool {
    serde_json::from_value(json!({
        "tool_name": name,
        "tool_description": "Looks up an order",
        "http_method": "get",
        "url": "https://api.example.com/orders",
        "headers": {"X-Shop": "1"},
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "timeout_seconds": 10
    }))
    .unwrap()
}

async fn admin(ctx: &TestContext, org: &str) -> (String, Actor) {
    let boot = ctx.bootstrap(org).await;
    let actor = ctx.actor(&boot.organization_id, &boot.api_key).await;
    (boot.organization_id, actor)
}

/// An actor with `role` in the admin's organization, through a key the admin creates.
async fn actor_with_role(ctx: &TestContext, admin: &Actor, role: Role) -> Actor {
    let created = ctx
        .service
        .api_key_create(
            admin,
            serde_json::from_value(json!({"name": "k", "role": role})).unwrap(),
        )
        .await
        .unwrap();
    ctx.actor(&admin.organization_id, &created.api_key).await
}

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

async fn agent_create_and_view(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    let tool = ctx
        .service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap();
    let doc = ctx
        .service
        .document_create_text(
            &admin,
            NewTextDocument {
                name: "FAQ".into(),
                text: "Opening hours: 9-5".into(),
            },
        )
        .await
        .unwrap();
    let number = ctx
        .service
        .phone_number_create(
            &admin,
            serde_json::from_value(json!({"phone_number": "+14155550111", "provider": "twilio"}))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(number.status, PhoneNumberStatus::Unassigned);
    let mut input = new_agent("Support");
    input.custom_tools = vec![tool.tool_id.clone()];
    input.kb_document_ids = vec![doc.documentation_id.clone()];
    input.assigned_phone_number_ids = vec![number.phone_number_id.clone()];
    let created = ctx.service.agent_create(&admin, input).await.unwrap();
    assert!(voiceplane_core::ids::IdKind::Agent.matches(&created.agent_id));
    assert_eq!(created.language, "EN-US");

    let viewed = ctx
        .service
        .agent_view(&admin, &created.agent_id)
        .await
        .unwrap();
    assert_eq!(viewed, created);
    assert_eq!(viewed.custom_tools, vec![tool.tool_id]);
    assert_eq!(viewed.kb_document_ids, vec![doc.documentation_id]);
    assert_eq!(
        viewed.assigned_phone_number_ids,
        vec![number.phone_number_id.clone()]
    );
    assert_eq!(viewed.llm_temperature, 0.7);

    // The other direction agrees.
    let number = ctx
        .service
        .phone_number_view(&admin, &number.phone_number_id)
        .await
        .unwrap();
    assert_eq!(
        number.assigned_agent_id.as_deref(),
        Some(created.agent_id.as_str())
    );
    assert_eq!(number.status, PhoneNumberStatus::Assigned);

    // A number created for the agent shows up on the agent too.
    let second = ctx
        .service
        .phone_number_create(
            &admin,
            serde_json::from_value(json!({
                "phone_number": "+14155550112", "provider": "telnyx",
                "assigned_agent_id": created.agent_id, "supports_outbound": false
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert!(!second.supports_outbound);
    let viewed = ctx
        .service
        .agent_view(&admin, &created.agent_id)
        .await
        .unwrap();
    assert_eq!(
        viewed.assigned_phone_number_ids,
        vec![number.phone_number_id, second.phone_number_id]
    );
}

async fn agent_references_must_exist_in_the_organization(ctx: &TestContext) {
    let (_, a) = admin(ctx, "A").await;
    let (_, b) = admin(ctx, "B").await;
    let foreign_tool = ctx
        .service
        .tool_create(&b, new_tool("theirs"))
        .await
        .unwrap();
    let mut input = new_agent("x");
    input.custom_tools = vec![foreign_tool.tool_id.clone()];
    let err = ctx.service.agent_create(&a, input).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput(m) if m.contains(&foreign_tool.tool_id)),
        "{err:?}"
    );

    let mut input = new_agent("x");
    input.kb_document_ids = vec!["doc_000000000000".into()];
    assert!(matches!(
        ctx.service.agent_create(&a, input).await,
        Err(Error::InvalidInput(_))
    ));

    let mut input = new_agent("x");
    input.assigned_phone_number_ids = vec!["not-an-id".into()];
    assert!(matches!(
        ctx.service.agent_create(&a, input).await,
        Err(Error::InvalidInput(_))
    ));

    let bad: Result<NewAgent, _> = serde_json::from_value(json!({
        "agent_name": "x", "language": "en", "stt_provider": "s", "tts_provider": "provider_three",
        "tts_voice": "v", "llm_provider": "l", "llm_model": "m"
    }));
    assert!(bad.is_err(), "unknown tts_provider is rejected");
}

async fn call_cursor_walk_returns_every_call_once_newest_first(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, new_agent("Caller"))
        .await
        .unwrap();
    let mut created = Vec::new();
    for _ in 0..125 {
        created.push(
            ctx.service
                .call_create(&admin, new_call(&agent.agent_id))
                .await
                .unwrap(),
        );
    }
    // Another organization's calls never appear.
    let (_, other) = self::admin(ctx, "Other").await;
    let other_agent = ctx
        .service
        .agent_create(&other, new_agent("Theirs"))
        .await
        .unwrap();
    ctx.service
        .call_create(&other, new_call(&other_agent.agent_id))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = Vec::new();
    loop {
        let page = ctx
            .service
            .call_list(
                &admin,
                &PageParams {
                    limit: Some(50),
                    cursor: cursor.clone(),
                },
            )
            .await
            .unwrap();
        pages.push((page.page_size(), page.has_more, page.next_cursor.is_some()));
        seen.extend(page.items.iter().map(|c| c.call_sid.clone()));
        if !page.has_more {
            break;
        }
        cursor = page.next_cursor;
    }
    assert_eq!(
        pages,
        vec![(50, true, true), (50, true, true), (25, false, false)]
    );
    let expected: Vec<String> = created.iter().rev().map(|c| c.call_sid.clone()).collect();
    assert_eq!(seen, expected, "newest first, each exactly once");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 125);
}

async fn list_parameters_are_validated(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    for limit in [0, 101] {
        let err = ctx
            .service
            .call_list(
                &admin,
                &PageParams {
                    limit: Some(limit),
                    cursor: None,
                },
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(ref m) if m.contains("limit")),
            "{err:?}"
        );
    }
    for cursor in ["garbage!", "Zm9vYmFy", ""] {
        let err = ctx
            .service
            .tool_list(
                &admin,
                &PageParams {
                    limit: None,
                    cursor: Some(cursor.into()),
                },
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(ref m) if m.contains("cursor")),
            "{err:?}"
        );
    }
    let page = ctx
        .service
        .call_list(
            &admin,
            &PageParams {
                limit: Some(100),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.page_size(), 0);
    assert!(!page.has_more);
    assert_eq!(page.next_cursor, None);
}

async fn tools_list_reports_total_count(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    for i in 0..7 {
        ctx.service
            .tool_create(&admin, new_tool(&format!("tool_{i}")))
            .await
            .unwrap();
    }
    let page = ctx
        .service
        .tool_list(
            &admin,
            &PageParams {
                limit: Some(3),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.total_count, Some(7));
    assert_eq!(page.page_size(), 3);
    assert!(page.has_more);
    assert_eq!(page.items[0].tool_name, "tool_6");
    assert_eq!(page.items[0].http_method, "GET");
    assert_eq!(page.items[0].timeout_seconds, 10);
    let next = ctx
        .service
        .tool_list(
            &admin,
            &PageParams {
                limit: Some(5),
                cursor: page.next_cursor,
            },
        )
        .await
        .unwrap();
    assert_eq!(next.page_size(), 4);
    assert_eq!(next.items.last().unwrap().tool_name, "tool_0");
    assert_eq!(next.total_count, Some(7));

    let dup = ctx
        .service
        .tool_create(&admin, new_tool("tool_3"))
        .await
        .unwrap_err();
    assert!(matches!(dup, Error::Conflict(_)), "{dup:?}");
    let mut bad = new_tool("ok");
    bad.url = "ftp://x".into();
    assert!(matches!(
        ctx.service.tool_create(&admin, bad).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn another_organizations_resources_are_not_found(ctx: &TestContext) {
    let (_, a) = admin(ctx, "A").await;
    let (_, b) = admin(ctx, "B").await;
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

async fn user_role_cannot_create(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    let user = actor_with_role(ctx, &admin, Role::User).await;
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
        .call_list(&user, &PageParams::default())
        .await
        .unwrap();
    ctx.service.member_list(&user).await.unwrap();

    // An agent manager can create, but neither invite nor mint an admin key.
    let manager = actor_with_role(ctx, &admin, Role::AgentManager).await;
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
    };
    assert!(matches!(
        ctx.service.api_key_create(&admin, past).await,
        Err(Error::InvalidInput(_))
    ));
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

async fn api_keys_are_created_and_listed_without_secrets(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
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
    assert_eq!(created.key.client_id, admin.organization_id);
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

async fn calls_are_recorded_viewed_and_updated(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, new_agent("Caller"))
        .await
        .unwrap();
    let call = ctx
        .service
        .call_create(&admin, new_call(&agent.agent_id))
        .await
        .unwrap();
    assert!(call.call_sid.starts_with("call_"));
    assert_eq!(call.status, CallStatus::Queued);
    assert_eq!(call.agent_name.as_deref(), Some("Caller"));
    assert!(call.recording_enabled, "inherits the agent's setting");
    let update: CallUpdate = serde_json::from_value(json!({
        "status": "completed",
        "start_time": "2026-01-01T10:00:00Z",
        "end_time": "2026-01-01T10:01:30.5Z",
        "end_reason": "user_hangup",
        "total_cost": 1.25,
        "turn_count": 6,
        "billing_status": "billed"
    }))
    .unwrap();
    let updated = ctx
        .service
        .call_update(&admin, &call.call_sid, update)
        .await
        .unwrap();
    assert_eq!(updated.duration_seconds, Some(90.5));
    let viewed = ctx.service.call_view(&admin, &call.call_sid).await.unwrap();
    assert_eq!(viewed, updated);
    assert_eq!(viewed.status, CallStatus::Completed);
    assert_eq!(viewed.turn_count, 6);
    assert!(viewed.updated_at > call.updated_at);

    let backwards: CallUpdate =
        serde_json::from_value(json!({"end_time": "2026-01-01T09:00:00Z"})).unwrap();
    assert!(matches!(
        ctx.service
            .call_update(&admin, &call.call_sid, backwards)
            .await,
        Err(Error::InvalidInput(_))
    ));
    assert!(serde_json::from_value::<CallUpdate>(json!({"colour": "red"})).is_err());
    let mut bad = new_call(&agent.agent_id);
    bad.to_number = "555-1234".into();
    assert!(matches!(
        ctx.service.call_create(&admin, bad).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn phone_numbers_are_unique_per_organization(ctx: &TestContext) {
    let (_, a) = admin(ctx, "A").await;
    let (_, b) = admin(ctx, "B").await;
    let body = || -> NewPhoneNumber {
        serde_json::from_value(json!({"phone_number": "+442071838750", "provider": "twilio"}))
            .unwrap()
    };
    let n = ctx.service.phone_number_create(&a, body()).await.unwrap();
    assert!(voiceplane_core::ids::IdKind::PhoneNumber.matches(&n.phone_number_id));
    assert!(n.supports_inbound && n.supports_outbound);
    assert!(matches!(
        ctx.service.phone_number_create(&a, body()).await,
        Err(Error::Conflict(_))
    ));
    ctx.service.phone_number_create(&b, body()).await.unwrap();
    let no_provider: NewPhoneNumber =
        serde_json::from_value(json!({"phone_number": "+442071838751"})).unwrap();
    assert!(matches!(
        ctx.service.phone_number_create(&a, no_provider).await,
        Err(Error::InvalidInput(_))
    ));
    let bad_intg: NewPhoneNumber = serde_json::from_value(
        json!({"phone_number": "+442071838752", "integration_id": "intg_000000000000"}),
    )
    .unwrap();
    assert!(matches!(
        ctx.service.phone_number_create(&a, bad_intg).await,
        Err(Error::InvalidInput(_))
    ));
}

async fn documents_are_created_and_viewed(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    let doc = ctx
        .service
        .document_create_text(
            &admin,
            NewTextDocument {
                name: "Prices".into(),
                text: "Tea: 2€".into(),
            },
        )
        .await
        .unwrap();
    assert!(voiceplane_core::ids::IdKind::Document.matches(&doc.documentation_id));
    assert_eq!(doc.doc_type, DocumentType::Text);
    assert_eq!(doc.size, "Tea: 2€".len() as i64);
    assert_eq!(doc.processing_status, ProcessingStatus::Pending);
    let viewed = ctx
        .service
        .document_view(&admin, &doc.documentation_id)
        .await
        .unwrap();
    assert_eq!(viewed, doc);
    assert!(matches!(
        ctx.service
            .document_create_text(
                &admin,
                NewTextDocument {
                    name: "".into(),
                    text: "x".into()
                }
            )
            .await,
        Err(Error::InvalidInput(_))
    ));
}

async fn invitations_are_created_listed_and_deduplicated(ctx: &TestContext) {
    let (_, admin) = admin(ctx, "Acme").await;
    let inv = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "New@Example.com".into(),
                role: Role::AgentManager,
            },
        )
        .await
        .unwrap();
    assert!(inv.invite_id.starts_with("inv_"));
    assert_eq!(inv.email, "new@example.com");
    assert_eq!(inv.status, InvitationStatus::Pending);
    assert_eq!(inv.invited_by, admin.user_id);
    assert_eq!(inv.expires_at, inv.created_at.add_seconds(7 * 24 * 3600));
    let listed = ctx.service.invitation_list(&admin).await.unwrap();
    assert_eq!(listed, vec![inv.clone()]);

    let dup = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "new@example.com".into(),
                role: Role::User,
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(dup, Error::Conflict(_)), "{dup:?}");

    // Once expired it is no longer pending, and the address can be invited again.
    ctx.clock.advance(8 * 24 * 3600);
    assert!(
        ctx.service
            .invitation_list(&admin)
            .await
            .unwrap()
            .is_empty()
    );
    let again = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "new@example.com".into(),
                role: Role::User,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.service.invitation_list(&admin).await.unwrap(),
        vec![again]
    );
    // Other organizations don't see it.
    let (_, other) = self::admin(ctx, "Other").await;
    assert!(
        ctx.service
            .invitation_list(&other)
            .await
            .unwrap()
            .is_empty()
    );
}

db_tests!(
    bootstrap_creates_a_working_admin_key,
    agent_create_and_view,
    agent_references_must_exist_in_the_organization,
    call_cursor_walk_returns_every_call_once_newest_first,
    list_parameters_are_validated,
    tools_list_reports_total_count,
    another_organizations_resources_are_not_found,
    user_role_cannot_create,
    credentials_are_checked,
    last_used_at_is_written_at_most_once_a_minute,
    api_keys_are_created_and_listed_without_secrets,
    calls_are_recorded_viewed_and_updated,
    phone_numbers_are_unique_per_organization,
    documents_are_created_and_viewed,
    invitations_are_created_listed_and_deduplicated,
);

/// Instances starting together on a fresh database all migrate successfully.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_migrations_on_a_fresh_database() {
    use voiceplane_storage::{DatabaseOptions, SeaRepository};
    let path = std::env::temp_dir().join(format!("voiceplane-migrate-{}.db", std::process::id()));
    let mut targets = vec![DatabaseOptions::new(format!(
        "sqlite://{}?mode=rwc",
        path.display()
    ))];
    if let Ok(url) = std::env::var(voiceplane_suite::POSTGRES_URL_VAR) {
        let mut pg = DatabaseOptions::new(url);
        pg.schema = Some(format!(
            "vpt_{}_migrate{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            std::process::id()
        ));
        targets.push(pg);
    }
    for options in targets {
        let mut repos = Vec::new();
        for _ in 0..4 {
            repos.push(SeaRepository::connect(&options).await.unwrap());
        }
        let tasks: Vec<_> = repos
            .iter()
            .cloned()
            .map(|r| tokio::spawn(async move { r.migrate().await }))
            .collect();
        for task in tasks {
            task.await
                .unwrap()
                .expect("every instance's migration succeeds");
        }
        voiceplane_core::repo::HealthRepository::ping(&repos[0])
            .await
            .unwrap();
        if let Some(schema) = &options.schema {
            use sea_orm::ConnectionTrait;
            repos[0]
                .connection()
                .execute_unprepared(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .await
                .unwrap();
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
