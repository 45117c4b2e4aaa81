//! The management surface through `Service`, on SQLite and Postgres: revoking keys,
//! integrations, CRUD of tools, agents, numbers and documents, members and invitations.
//!
//! Run on SQLite only: `cargo test --test management`; add `VOICEPLANE_TEST_POSTGRES_URL`
//! for both databases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use voiceplane_core::auth::{Actor, Credentials};
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_core::{Error, Service};
use voiceplane_suite::{TestContext, db_tests, jwt_for};

const TWILIO_SID: &str = "AC0123456789abcdef0123456789abcdef";
const TWILIO_TOKEN: &str = "tw-auth-token-7f3a9c";

fn body<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn agent(name: &str) -> NewAgent {
    body(json!({
        "agent_name": name, "language": "en", "stt_provider": "deepgram",
        "tts_provider": "provider_one", "tts_voice": "v", "llm_provider": "openai",
        "llm_model": "gpt-4o"
    }))
}

fn tool(name: &str) -> NewTool {
    body(json!({"tool_name": name, "tool_description": "d", "url": "https://x.example/api"}))
}

fn twilio(name: &str) -> NewIntegration {
    body(json!({
        "name": name, "provider": "twilio", "category": "telephony",
        "credentials": {"account_sid": TWILIO_SID, "auth_token": TWILIO_TOKEN}
    }))
}

fn number(n: &str) -> NewPhoneNumber {
    body(json!({"phone_number": n, "provider": "twilio"}))
}

async fn admin(ctx: &TestContext) -> Actor {
    let boot = ctx.bootstrap("Acme").await;
    ctx.actor(&boot.organization_id, &boot.api_key).await
}

async fn key(ctx: &TestContext, admin: &Actor, role: Role) -> (CreatedApiKey, Actor) {
    let created = ctx
        .service
        .api_key_create(
            admin,
            NewApiKey {
                name: "k".into(),
                role,
                expires_at: None,
            },
        )
        .await
        .unwrap();
    let actor = ctx.actor(&admin.organization_id, &created.api_key).await;
    (created, actor)
}

fn auth(
    service: &Service,
    org: &str,
    secret: &str,
) -> impl std::future::Future<Output = Result<Actor, Error>> {
    let creds = Credentials {
        api_key: Some(secret.to_owned()),
        organization_id: Some(org.to_owned()),
        bearer: None,
    };
    let service = service.clone();
    async move { service.authenticate(&creds).await }
}

fn assert_detail<T: std::fmt::Debug>(r: Result<T, Error>, expected: Error) {
    match r {
        Err(e) => assert_eq!(e, expected),
        Ok(v) => panic!("expected {expected:?}, got {v:?}"),
    }
}

async fn revoking_a_key(ctx: &TestContext) {
    let admin = admin(ctx).await;
    let org = admin.organization_id.clone();
    let (manager_key, manager) = key(ctx, &admin, Role::AgentManager).await;
    let (user_key, user) = key(ctx, &admin, Role::User).await;

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
    let other = self::admin(ctx).await;
    let (foreign, _) = key(ctx, &other, Role::User).await;
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
    auth(&ctx.service, &org, &user_key.api_key).await.unwrap();
    let out = ctx
        .service
        .api_key_revoke(&manager, &user_key.key.key_id)
        .await
        .unwrap();
    assert_eq!(out.data.status, ApiKeyStatus::Revoked);
    assert_eq!(out.message, "API key revoked");
    let err = auth(&ctx.service, &org, &user_key.api_key)
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

async fn integrations_store_encrypted_credentials(ctx: &TestContext) {
    let admin = admin(ctx).await;
    let created = ctx
        .service
        .integration_create(&admin, twilio("Main line"))
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
        .integration_create(&admin, twilio("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable(m) if m.contains("secrets.master_key")),
        "{err:?}"
    );
    // Users can read but not write.
    let (_, user) = key(ctx, &admin, Role::User).await;
    ctx.service
        .integration_view(&user, &created.integration_id)
        .await
        .unwrap();
    assert!(matches!(
        ctx.service.integration_create(&user, twilio("x")).await,
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
    let admin = admin(ctx).await;
    let intg = ctx
        .service
        .integration_create(&admin, twilio("Main"))
        .await
        .unwrap();
    let mut input = number("+14155550101");
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

async fn tools_are_managed(ctx: &TestContext) {
    let admin = admin(ctx).await;
    let t = ctx
        .service
        .tool_create(&admin, tool("lookup"))
        .await
        .unwrap();
    let full = ctx.service.tool_view(&admin, &t.tool_id).await.unwrap();
    assert_eq!(full, t);
    assert_eq!(full.url, "https://x.example/api");
    let updated = ctx
        .service
        .tool_update(
            &admin,
            &t.tool_id,
            body(json!({"timeout_seconds": 5, "headers": {"X-K": "v"}})),
        )
        .await
        .unwrap();
    assert_eq!(updated.timeout_seconds, 5);
    assert_eq!(updated.tool_name, "lookup", "untouched fields stay");
    assert_eq!(
        ctx.service.tool_view(&admin, &t.tool_id).await.unwrap(),
        updated
    );
    assert!(
        serde_json::from_value::<ToolUpdate>(json!({"nme": "x"})).is_err(),
        "unknown fields are refused"
    );
    assert!(matches!(
        ctx.service
            .tool_update(&admin, &t.tool_id, body(json!({"timeout_seconds": 0})))
            .await,
        Err(Error::InvalidInput(_))
    ));
    ctx.service
        .tool_create(&admin, tool("other"))
        .await
        .unwrap();
    assert!(matches!(
        ctx.service
            .tool_update(&admin, &t.tool_id, body(json!({"tool_name": "other"})))
            .await,
        Err(Error::Conflict(_))
    ));

    // Deleting a tool takes it off the agents that used it.
    let mut input = agent("A");
    input.custom_tools = vec![t.tool_id.clone()];
    let a = ctx.service.agent_create(&admin, input).await.unwrap();
    let deleted = ctx.service.tool_delete(&admin, &t.tool_id).await.unwrap();
    assert_eq!(deleted.tool_id, t.tool_id);
    assert!(
        ctx.service
            .agent_view(&admin, &a.agent_id)
            .await
            .unwrap()
            .custom_tools
            .is_empty()
    );
    assert!(matches!(
        ctx.service.tool_view(&admin, &t.tool_id).await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ctx.service.tool_delete(&admin, &t.tool_id).await,
        Err(Error::NotFound(_))
    ));
}

async fn documents_are_managed(ctx: &TestContext) {
    let admin = admin(ctx).await;
    let mut docs = Vec::new();
    for i in 0..3 {
        docs.push(
            ctx.service
                .document_create_text(
                    &admin,
                    NewTextDocument {
                        name: format!("d{i}"),
                        text: "t".into(),
                    },
                )
                .await
                .unwrap(),
        );
    }
    let page = ctx
        .service
        .document_list(
            &admin,
            &PageParams {
                limit: Some(2),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        page.items
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["d2", "d1"]
    );
    assert!(page.has_more);
    let renamed = ctx
        .service
        .document_update(
            &admin,
            &docs[0].documentation_id,
            DocumentUpdate {
                name: Some("Prices".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.service
            .document_view(&admin, &docs[0].documentation_id)
            .await
            .unwrap(),
        renamed
    );
    let mut input = agent("A");
    input.kb_document_ids = vec![
        docs[0].documentation_id.clone(),
        docs[1].documentation_id.clone(),
    ];
    let a = ctx.service.agent_create(&admin, input).await.unwrap();
    ctx.service
        .document_delete(&admin, &docs[0].documentation_id)
        .await
        .unwrap();
    assert_eq!(
        ctx.service
            .agent_view(&admin, &a.agent_id)
            .await
            .unwrap()
            .kb_document_ids,
        vec![docs[1].documentation_id.clone()]
    );
}

async fn phone_assignment_stays_consistent_both_ways(ctx: &TestContext) {
    let admin = admin(ctx).await;
    let n1 = ctx
        .service
        .phone_number_create(&admin, number("+14155550201"))
        .await
        .unwrap();
    let n2 = ctx
        .service
        .phone_number_create(&admin, number("+14155550202"))
        .await
        .unwrap();
    let n3 = ctx
        .service
        .phone_number_create(&admin, number("+14155550203"))
        .await
        .unwrap();
    let mut input = agent("A");
    input.assigned_phone_number_ids = vec![n1.phone_number_id.clone(), n2.phone_number_id.clone()];
    let a = ctx.service.agent_create(&admin, input).await.unwrap();
    let b = ctx.service.agent_create(&admin, agent("B")).await.unwrap();

    // Agent side: A keeps n2, takes n3, drops n1.
    let updated = ctx
        .service
        .agent_update(
            &admin,
            &a.agent_id,
            body(json!({"assigned_phone_number_ids": [n2.phone_number_id, n3.phone_number_id], "agent_name": "A2"})),
        )
        .await
        .unwrap();
    assert_eq!(updated.agent_name, "A2");
    assert_eq!(
        updated.assigned_phone_number_ids,
        vec![n2.phone_number_id.clone(), n3.phone_number_id.clone()]
    );
    let n1v = ctx
        .service
        .phone_number_view(&admin, &n1.phone_number_id)
        .await
        .unwrap();
    assert_eq!(
        (n1v.assigned_agent_id, n1v.status),
        (None, PhoneNumberStatus::Unassigned)
    );

    // Number side: n3 moves to B.
    let moved = ctx
        .service
        .phone_number_update(
            &admin,
            &n3.phone_number_id,
            body(json!({"assigned_agent_id": b.agent_id})),
        )
        .await
        .unwrap();
    assert_eq!(moved.status, PhoneNumberStatus::Assigned);
    assert_eq!(
        ctx.service
            .agent_view(&admin, &a.agent_id)
            .await
            .unwrap()
            .assigned_phone_number_ids,
        vec![n2.phone_number_id.clone()]
    );
    assert_eq!(
        ctx.service
            .agent_view(&admin, &b.agent_id)
            .await
            .unwrap()
            .assigned_phone_number_ids,
        vec![n3.phone_number_id.clone()]
    );
    // Agent lists carry the same numbers.
    let listed = ctx
        .service
        .agent_list(&admin, &PageParams::default())
        .await
        .unwrap();
    let listed_b = listed
        .items
        .iter()
        .find(|x| x.agent_id == b.agent_id)
        .unwrap();
    assert_eq!(
        listed_b.assigned_phone_number_ids,
        vec![n3.phone_number_id.clone()]
    );

    // Referencing a number of another organization, or an unknown agent, is a 400.
    let other = self::admin(ctx).await;
    let foreign = ctx
        .service
        .phone_number_create(&other, number("+14155550299"))
        .await
        .unwrap();
    let err = ctx
        .service
        .agent_update(
            &admin,
            &a.agent_id,
            body(json!({"assigned_phone_number_ids": [foreign.phone_number_id]})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput(m) if m.contains(&foreign.phone_number_id)),
        "{err:?}"
    );
    let err = ctx
        .service
        .phone_number_update(
            &admin,
            &n1.phone_number_id,
            body(json!({"assigned_agent_id": "agent_ffffffffffffffff"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");

    // Deleting an agent frees its numbers.
    let gone = ctx.service.agent_delete(&admin, &b.agent_id).await.unwrap();
    assert_eq!(gone.agent_id, b.agent_id);
    let n3v = ctx
        .service
        .phone_number_view(&admin, &n3.phone_number_id)
        .await
        .unwrap();
    assert_eq!(
        (n3v.assigned_agent_id, n3v.status),
        (None, PhoneNumberStatus::Unassigned)
    );
    assert!(matches!(
        ctx.service.agent_view(&admin, &b.agent_id).await,
        Err(Error::NotFound(_))
    ));

    let page = ctx
        .service
        .phone_number_list(&admin, &PageParams::default())
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
    assert_eq!(
        page.items[0].phone_number_id, n3.phone_number_id,
        "newest first"
    );
}

async fn invitations_are_accepted_with_the_invitees_token(ctx: &TestContext) {
    let admin = admin(ctx).await;
    let inv = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "new@example.com".into(),
                role: Role::AgentManager,
            },
        )
        .await
        .unwrap();
    let user_id = "user_invitee0000000001";
    // Wrong e-mail, missing token, bad token.
    let wrong = jwt_for(user_id, Some("other@example.com"), 600);
    assert!(matches!(
        ctx.service
            .invitation_accept(Some(&wrong), &inv.invite_id)
            .await,
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        ctx.service.invitation_accept(None, &inv.invite_id).await,
        Err(Error::Unauthenticated(_))
    ));
    assert!(matches!(
        ctx.service
            .invitation_accept(Some("garbage"), &inv.invite_id)
            .await,
        Err(Error::Unauthenticated(_))
    ));

    let token = jwt_for(user_id, Some("New@Example.com"), 600);
    let out = ctx
        .service
        .invitation_accept(Some(&token), &inv.invite_id)
        .await
        .unwrap();
    assert_eq!(out.data.user_id, user_id);
    assert_eq!(out.data.role, Role::AgentManager);
    assert_eq!(out.data.email, "new@example.com");
    assert!(
        ctx.service
            .invitation_list(&admin)
            .await
            .unwrap()
            .is_empty(),
        "no longer pending"
    );
    let members = ctx.service.member_list(&admin).await.unwrap();
    assert!(
        members
            .iter()
            .any(|m| m.user_id == user_id && m.role == Role::AgentManager)
    );
    // The new member can act in the organization with their JWT.
    let actor = ctx
        .service
        .authenticate(&Credentials {
            bearer: Some(token.clone()),
            organization_id: Some(admin.organization_id.clone()),
            api_key: None,
        })
        .await
        .unwrap();
    assert_eq!(actor.role, Role::AgentManager);
    // Twice: 409.
    assert!(matches!(
        ctx.service
            .invitation_accept(Some(&token), &inv.invite_id)
            .await,
        Err(Error::Conflict(_))
    ));

    // Expired invitations cannot be accepted; revoked ones neither.
    let late = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "late@example.com".into(),
                role: Role::User,
            },
        )
        .await
        .unwrap();
    ctx.clock.advance(8 * 24 * 3600);
    let late_token = jwt_for("user_late00000000000001", Some("late@example.com"), 600);
    let err = ctx
        .service
        .invitation_accept(Some(&late_token), &late.invite_id)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("expired")),
        "{err:?}"
    );
    let revoked = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "rev@example.com".into(),
                role: Role::User,
            },
        )
        .await
        .unwrap();
    let out = ctx
        .service
        .invitation_revoke(&admin, &revoked.invite_id)
        .await
        .unwrap();
    assert_eq!(out.data.status, InvitationStatus::Revoked);
    assert!(
        ctx.service
            .invitation_list(&admin)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        ctx.service
            .invitation_revoke(&admin, &revoked.invite_id)
            .await,
        Err(Error::Conflict(_))
    ));
    let rev_token = jwt_for("user_rev000000000000001", Some("rev@example.com"), 600);
    assert!(matches!(
        ctx.service
            .invitation_accept(Some(&rev_token), &revoked.invite_id)
            .await,
        Err(Error::Conflict(_))
    ));
}

async fn members_keep_at_least_one_admin(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let admin = ctx.actor(&boot.organization_id, &boot.api_key).await;
    let me = ctx.service.member_list(&admin).await.unwrap().remove(0);
    // The only admin can be neither demoted nor removed.
    let err = ctx
        .service
        .member_update(&admin, &me.membership_id, MemberUpdate { role: Role::User })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert!(matches!(
        ctx.service.member_remove(&admin, &me.membership_id).await,
        Err(Error::Conflict(_))
    ));

    // A second member, promoted: now the first admin may step down.
    let inv = ctx
        .service
        .invitation_create(
            &admin,
            NewInvitation {
                email: "two@example.com".into(),
                role: Role::User,
            },
        )
        .await
        .unwrap();
    let token = jwt_for("user_two000000000000001", Some("two@example.com"), 600);
    let two = ctx
        .service
        .invitation_accept(Some(&token), &inv.invite_id)
        .await
        .unwrap()
        .data;
    let (_, manager) = key(ctx, &admin, Role::AgentManager).await;
    assert!(matches!(
        ctx.service
            .member_update(
                &manager,
                &two.membership_id,
                MemberUpdate { role: Role::Admin }
            )
            .await,
        Err(Error::Forbidden(_))
    ));
    let promoted = ctx
        .service
        .member_update(
            &admin,
            &two.membership_id,
            MemberUpdate { role: Role::Admin },
        )
        .await
        .unwrap();
    assert_eq!(promoted.role, Role::Admin);
    let demoted = ctx
        .service
        .member_update(
            &admin,
            &me.membership_id,
            MemberUpdate {
                role: Role::AgentManager,
            },
        )
        .await
        .unwrap();
    assert_eq!(demoted.role, Role::AgentManager);

    // Removing a member revokes the keys they created; their JWT no longer works here.
    let two_actor = ctx
        .service
        .authenticate(&Credentials {
            bearer: Some(token.clone()),
            organization_id: Some(admin.organization_id.clone()),
            api_key: None,
        })
        .await
        .unwrap();
    let (two_key, _) = key(ctx, &two_actor, Role::User).await;
    let other_admin = ctx.service.member_list(&admin).await.unwrap();
    assert_eq!(
        other_admin.iter().filter(|m| m.role == Role::Admin).count(),
        1
    );
    // The remaining admin (two) removes the first user.
    let removed = ctx
        .service
        .member_remove(&two_actor, &me.membership_id)
        .await
        .unwrap();
    assert_eq!(removed.membership_id, me.membership_id);
    let err = auth(&ctx.service, &admin.organization_id, &boot.api_key)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unauthenticated(m) if m.contains("revoked")),
        "{err:?}"
    );
    let err = ctx
        .service
        .authenticate(&Credentials {
            bearer: Some(jwt_for(&me.user_id, None, 600)),
            organization_id: Some(admin.organization_id.clone()),
            api_key: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    let still = auth(&ctx.service, &admin.organization_id, &two_key.api_key).await;
    assert!(still.is_ok(), "keys of other members keep working");
    assert!(matches!(
        ctx.service
            .member_remove(&two_actor, &me.membership_id)
            .await,
        Err(Error::NotFound(_))
    ));
}

db_tests!(
    revoking_a_key,
    integrations_store_encrypted_credentials,
    deleting_a_referenced_integration_is_refused,
    tools_are_managed,
    documents_are_managed,
    phone_assignment_stays_consistent_both_ways,
    invitations_are_accepted_with_the_invitees_token,
    members_keep_at_least_one_admin,
);
