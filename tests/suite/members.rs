//! Members and invitations: inviting, deduplicating and accepting with the invitee's token,
//! roles, and an organization that always keeps an admin, through `Service` and over HTTP.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::Error;
use voiceplane_core::auth::Credentials;
use voiceplane_core::model::*;
use voiceplane_core::role::Role;
use voiceplane_suite::*;

async fn invitations_are_created_listed_and_deduplicated(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
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
    let other = ctx.admin("Other").await;
    assert!(
        ctx.service
            .invitation_list(&other)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn invitations_are_accepted_with_the_invitees_token(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
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
    let (_, manager) = ctx.key_with_role(&admin, Role::AgentManager).await;
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
    let (two_key, _) = ctx.key_with_role(&two_actor, Role::User).await;
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
    assert_eq!(removed.data.membership_id, me.membership_id);
    let err = ctx
        .authenticate_key(&admin.organization_id, &boot.api_key)
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
    let still = ctx
        .authenticate_key(&admin.organization_id, &two_key.api_key)
        .await;
    assert!(still.is_ok(), "keys of other members keep working");
    assert!(matches!(
        ctx.service
            .member_remove(&two_actor, &me.membership_id)
            .await,
        Err(Error::NotFound(_))
    ));
}

async fn members_and_invitations_over_http(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let (status, inv) = c
        .send(
            Method::POST,
            "/api/auth/organizations/invitations",
            Some(json!({"email": "kim@example.com", "role": "user"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let invite_id = inv["data"]["invite_id"].as_str().unwrap();
    // Accept: the invitee's JWT, no organization header.
    let token = jwt_for("user_kim0000000000000001", Some("kim@example.com"), 600);
    let invitee = ApiCaller {
        org: None,
        ..c.with_bearer(&token)
    };
    let resp = invitee
        .request(
            Method::POST,
            &format!("/api/auth/invitations/{invite_id}/accept"),
        )
        .header("X-Request-Id", "accept-kim-1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let accepted: Value = resp.json().await.unwrap();
    assert_eq!(accepted["success"], true);
    assert_eq!(accepted["data"]["role"], "user");
    let kim = accepted["data"]["membership_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The audit log records the invitee's acceptance under the request's id.
    let (status, log) = c.get("/api/audit-log").await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let by_invitee: Vec<&Value> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["request_id"] == "accept-kim-1")
        .collect();
    assert!(!by_invitee.is_empty(), "{log}");

    let (_, members) = c
        .send(Method::GET, "/api/auth/organizations/members", None)
        .await;
    let me = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "admin")
        .unwrap()["membership_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, v) = c
        .send(
            Method::PATCH,
            &format!("/api/auth/organizations/members/{me}"),
            Some(json!({"role": "user"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, v) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/members/{me}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, v) = c
        .send(
            Method::PATCH,
            &format!("/api/auth/organizations/members/{kim}"),
            Some(json!({"role": "agent_manager"})),
        )
        .await;
    assert_eq!(
        (status, &v["data"]["role"]),
        (StatusCode::OK, &json!("agent_manager")),
        "{v}"
    );
    let (status, v) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/members/{kim}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, _) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/members/{kim}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, inv) = c
        .send(
            Method::POST,
            "/api/auth/organizations/invitations",
            Some(json!({"email": "lee@example.com", "role": "user"})),
        )
        .await;
    let invite_id = inv["data"]["invite_id"].as_str().unwrap();
    let (status, v) = c
        .send(
            Method::DELETE,
            &format!("/api/auth/organizations/invitations/{invite_id}"),
            None,
        )
        .await;
    assert_eq!(
        (status, &v["data"]["status"]),
        (StatusCode::OK, &json!("revoked")),
        "{v}"
    );
    let (_, v) = c
        .send(Method::GET, "/api/auth/organizations/invitations", None)
        .await;
    assert_eq!(v, json!({"invitations": []}));
    server.stop().await;
}

db_tests!(
    invitations_are_created_listed_and_deduplicated,
    invitations_are_accepted_with_the_invitees_token,
    members_keep_at_least_one_admin,
    members_and_invitations_over_http,
);
