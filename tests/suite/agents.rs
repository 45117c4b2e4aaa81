//! Agents: creation with their tools, documents and numbers, references that must exist in
//! the organization, and the round trip over HTTP.

use reqwest::StatusCode;
use sea_orm::ConnectionTrait;
use serde_json::json;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::*;
use voiceplane_core::{Error, Service};
use voiceplane_suite::*;

use crate::shapes::*;

async fn agent_create_and_view(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
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
    let a = ctx.admin("A").await;
    let b = ctx.admin("B").await;
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

async fn agent_round_trip_with_the_bootstrap_key(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let caller = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let created = caller.create("/api/agents", agent_body("Front desk")).await;
    assert_eq!(keys(&created), fields(AGENT_FIELDS));
    let id = created["agent_id"].as_str().unwrap();
    let (status, v) = caller.get(&format!("/api/agents/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v, json!({"success": true, "data": created}));
    assert_eq!(v["data"]["language"], "EN");
    assert_eq!(v["data"]["assigned_phone_number_ids"], json!([]));
    server.stop().await;
}

/// Reads the agent on both instances, twice each: the second read is the one a cache answers.
async fn prime(instances: [&Service; 2], actor: &Actor, id: &str) {
    for service in instances {
        for _ in 0..2 {
            service.agent_view(actor, id).await.unwrap();
        }
    }
}

/// After a change through `instances[writer]`: the writer reads it at once; so does the other
/// instance on SQLite (the version row is read per request), and on Postgres as soon as its
/// listener has the notification, which the writer waited to hear itself.
async fn shows(
    ctx: &TestContext,
    instances: [&Service; 2],
    writer: usize,
    (actor, id): (&Actor, &str),
    holds: impl Fn(&Agent) -> bool,
) {
    let writing = instances[writer].agent_view(actor, id).await.unwrap();
    assert!(
        holds(&writing),
        "the writer reads its own change: {writing:?}"
    );
    let other = instances[1 - writer];
    match ctx.backend {
        Backend::Sqlite => {
            let read = other.agent_view(actor, id).await.unwrap();
            assert!(
                holds(&read),
                "the other instance reads the change: {read:?}"
            );
        }
        Backend::Postgres => {
            eventually("the other instance reads the change", || async {
                holds(&other.agent_view(actor, id).await.unwrap())
            })
            .await;
        }
    }
}

/// Each instance caches the agents it reads; every change to an agent, its numbers or what it
/// refers to shows on the next read (see `shows`), and so does a change written to the
/// database by something other than voiceplane.
async fn an_agent_read_follows_every_change_on_every_instance(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let second = ctx.another_instance().await;
    let instances: [&Service; 2] = [&ctx.service, &second];
    let tool = ctx
        .service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap();
    let mut input = new_agent("Support");
    input.custom_tools = vec![tool.tool_id.clone()];
    let agent = ctx.service.agent_create(&admin, input).await.unwrap();
    let id = agent.agent_id.clone();
    let target = (&admin, id.as_str());
    prime(instances, &admin, &id).await;
    shows(ctx, instances, 0, target, |a| *a == agent).await;

    second
        .agent_update(
            &admin,
            &id,
            serde_json::from_value(json!({"agent_name": "Sales"})).unwrap(),
        )
        .await
        .unwrap();
    shows(ctx, instances, 1, target, |a| a.agent_name == "Sales").await;

    let number = ctx
        .service
        .phone_number_create(
            &admin,
            serde_json::from_value(json!({"phone_number": "+14155550123", "provider": "twilio"}))
                .unwrap(),
        )
        .await
        .unwrap();
    prime(instances, &admin, &id).await;
    second
        .phone_number_update(
            &admin,
            &number.phone_number_id,
            serde_json::from_value(json!({"assigned_agent_id": id})).unwrap(),
        )
        .await
        .unwrap();
    let numbered = |a: &Agent| a.assigned_phone_number_ids == [number.phone_number_id.clone()];
    shows(ctx, instances, 1, target, numbered).await;

    prime(instances, &admin, &id).await;
    ctx.service
        .phone_number_delete(&admin, &number.phone_number_id)
        .await
        .unwrap();
    shows(ctx, instances, 0, target, |a| {
        a.assigned_phone_number_ids.is_empty()
    })
    .await;

    prime(instances, &admin, &id).await;
    second.tool_delete(&admin, &tool.tool_id).await.unwrap();
    shows(ctx, instances, 1, target, |a| a.custom_tools.is_empty()).await;

    // Written past voiceplane: the database's triggers number the change, so neither
    // instance keeps its cached copy (on Postgres the notification brings it).
    prime(instances, &admin, &id).await;
    ctx.repo
        .connection()
        .execute_unprepared(&format!(
            "UPDATE agents SET agent_name = 'Outside' WHERE agent_id = '{id}'"
        ))
        .await
        .unwrap();
    for service in instances {
        eventually("the instance reads the outside change", || async {
            service.agent_view(&admin, &id).await.unwrap().agent_name == "Outside"
        })
        .await;
    }

    prime(instances, &admin, &id).await;
    ctx.service.agent_delete(&admin, &id).await.unwrap();
    let gone = ctx.service.agent_view(&admin, &id).await;
    assert!(matches!(gone, Err(Error::NotFound(_))), "{gone:?}");
    eventually("the other instance reads the deletion", || async {
        matches!(
            second.agent_view(&admin, &id).await,
            Err(Error::NotFound(_))
        )
    })
    .await;
}

db_tests!(
    agent_create_and_view,
    agent_references_must_exist_in_the_organization,
    agent_round_trip_with_the_bootstrap_key,
    an_agent_read_follows_every_change_on_every_instance,
);
