//! Events: every state change records exactly one event (two for an accepted invitation) in
//! its own transaction, whose data is what the API answered; failed writes record none; the
//! list pages newest first, with and without the repeatable `type` filter; through `Service`
//! and over HTTP.

use std::collections::BTreeSet;
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use voiceplane_core::auth::Actor;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_core::{Error, Service};
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::*;
use wiremock::MockServer;

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "tw-auth-token-events-5c1e";

/// Every event of the caller's organization, newest first, read page by page.
async fn all_events(c: &ApiCaller) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = c.get(&format!("/api/events?limit=7&cursor={cursor}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        out.extend(page["data"].as_array().unwrap().iter().cloned());
        if page["pagination"]["has_more"] != true {
            return out;
        }
        cursor = page["pagination"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
    }
}

/// What the events list showed at the last [`Log::recorded`].
struct Log {
    seen: usize,
}

impl Log {
    /// Asserts that exactly `types` were recorded since the last call, oldest first, each with
    /// a fresh `evt_` id; returns their data, oldest first.
    async fn recorded(&mut self, c: &ApiCaller, types: &[&str]) -> Vec<Value> {
        let events = all_events(c).await;
        assert_eq!(
            events.len(),
            self.seen + types.len(),
            "expected {types:?}, got {:#?}",
            &events[..events.len().saturating_sub(self.seen)]
        );
        self.seen = events.len();
        let mut new: Vec<Value> = events[..types.len()].to_vec();
        new.reverse();
        for (event, t) in new.iter().zip(types) {
            assert_eq!(event["type"], *t, "{event}");
            let id = event["event_id"].as_str().unwrap();
            assert!(voiceplane_core::ids::IdKind::Event.matches(id), "{id}");
            assert_eq!(event["event_id"].as_str().unwrap().len(), 4 + 16);
            let keys: BTreeSet<&str> = event
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(
                keys,
                BTreeSet::from(["event_id", "type", "created_at", "data"])
            );
        }
        new.into_iter().map(|e| e["data"].clone()).collect()
    }

    /// [`recorded`](Self::recorded) for one event whose data must be `answer`.
    async fn one(&mut self, c: &ApiCaller, event_type: &str, answer: &Value) {
        let data = self.recorded(c, &[event_type]).await;
        assert_eq!(&data[0], answer, "{event_type}");
    }
}

/// `method path` with `body`; asserts `status` and returns the answer's `data`.
async fn call(
    c: &ApiCaller,
    method: Method,
    path: &str,
    body: Option<Value>,
    status: u16,
) -> Value {
    let (got, answer) = c.send(method.clone(), path, body).await;
    assert_eq!(got.as_u16(), status, "{method} {path}: {answer}");
    answer["data"].clone()
}

async fn every_operation_records_its_event(ctx: &TestContext) {
    let provider = MockServer::start().await;
    mount_twilio_account(&provider, SID, TOKEN).await;
    let validator = telephony(&provider.uri());
    let blobs = Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap());
    let server =
        TestServer::start_configured(ctx, |s| s.with_telephony(validator).with_blobs(blobs)).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let mut log = Log { seen: 0 };
    log.recorded(&c, &[]).await;

    // API keys: the event carries the key, never its secret.
    let created = call(
        &c,
        Method::POST,
        "/api/api-keys",
        Some(json!({"name": "k", "role": "user"})),
        201,
    )
    .await;
    let secret = created["api_key"].as_str().unwrap().to_owned();
    let mut key = created.clone();
    key.as_object_mut().unwrap().remove("api_key");
    log.one(&c, "api_key.created", &key).await;
    let key_path = format!("/api/api-keys/{}", key["key_id"].as_str().unwrap());
    let revoked = call(&c, Method::DELETE, &key_path, None, 200).await;
    log.one(&c, "api_key.revoked", &revoked).await;
    call(&c, Method::DELETE, &key_path, None, 200).await;
    log.recorded(&c, &[]).await;

    // Tools and agents.
    let tool = call(
        &c,
        Method::POST,
        "/api/tools",
        Some(tool_body("lookup")),
        201,
    )
    .await;
    log.one(&c, "tool.created", &tool).await;
    let tool_path = format!("/api/tools/{}", tool["tool_id"].as_str().unwrap());
    let tool = call(
        &c,
        Method::PATCH,
        &tool_path,
        Some(json!({"tool_description": "new"})),
        200,
    )
    .await;
    log.one(&c, "tool.updated", &tool).await;
    let agent = call(&c, Method::POST, "/api/agents", Some(agent_body("A")), 201).await;
    log.one(&c, "agent.created", &agent).await;
    let agent_id = agent["agent_id"].as_str().unwrap().to_owned();
    let agent_path = format!("/api/agents/{agent_id}");

    // Integrations and phone numbers.
    let integration = call(
        &c,
        Method::POST,
        "/api/integrations",
        Some(twilio_body("Main", SID, TOKEN)),
        201,
    )
    .await;
    log.one(&c, "integration.created", &integration).await;
    let integration_path = format!(
        "/api/integrations/{}",
        integration["integration_id"].as_str().unwrap()
    );
    let validated = call(
        &c,
        Method::POST,
        &format!("{integration_path}/validate"),
        Some(json!({})),
        200,
    )
    .await;
    log.one(&c, "integration.validated", &validated).await;
    let number = call(
        &c,
        Method::POST,
        "/api/phone-numbers",
        Some(json!({"phone_number": "+14155550111", "integration_id": integration["integration_id"]})),
        201,
    )
    .await;
    log.one(&c, "phone_number.created", &number).await;
    let number_path = format!(
        "/api/phone-numbers/{}",
        number["phone_number_id"].as_str().unwrap()
    );
    let number = call(
        &c,
        Method::PATCH,
        &number_path,
        Some(json!({"assigned_agent_id": agent_id})),
        200,
    )
    .await;
    log.one(&c, "phone_number.updated", &number).await;
    let agent = call(
        &c,
        Method::PATCH,
        &agent_path,
        Some(json!({"agent_name": "B", "custom_tools": [tool["tool_id"]]})),
        200,
    )
    .await;
    log.one(&c, "agent.updated", &agent).await;

    // Calls and their recording: the hash is of the bytes as stored.
    let new_call = call(
        &c,
        Method::POST,
        "/api/calls",
        Some(call_body(&agent_id)),
        201,
    )
    .await;
    log.one(&c, "call.created", &new_call).await;
    let call_sid = new_call["call_sid"].as_str().unwrap().to_owned();
    let updated = call(
        &c,
        Method::PATCH,
        &format!("/api/calls/{call_sid}"),
        Some(json!({"turn_count": 3})),
        200,
    )
    .await;
    log.one(&c, "call.updated", &updated).await;
    let audio: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{call_sid}/recording"))
        .header("Content-Type", "audio/wav")
        .body(audio.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let sha256: String = Sha256::digest(&audio)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    log.one(
        &c,
        "recording.ready",
        &json!({"call_sid": call_sid, "content_type": "audio/wav", "size": audio.len(), "sha256": sha256}),
    )
    .await;

    // Knowledge base.
    let doc = call(
        &c,
        Method::POST,
        "/api/knowledge-base",
        Some(json!({"name": "FAQ", "text": "hello"})),
        201,
    )
    .await;
    log.one(&c, "document.created", &doc).await;
    let doc_path = format!(
        "/api/knowledge-base/{}",
        doc["documentation_id"].as_str().unwrap()
    );

    // Members and invitations.
    let invitation = call(
        &c,
        Method::POST,
        "/api/auth/organizations/invitations",
        Some(json!({"email": "new@example.com", "role": "agent_manager"})),
        201,
    )
    .await;
    log.one(&c, "invitation.created", &invitation).await;
    let invitee = c.with_bearer(&jwt_for("user_newcomer", Some("new@example.com"), 3600));
    let accept_path = format!(
        "/api/auth/invitations/{}/accept",
        invitation["invite_id"].as_str().unwrap()
    );
    let member = call(&invitee, Method::POST, &accept_path, None, 200).await;
    let data = log
        .recorded(&c, &["invitation.accepted", "member.added"])
        .await;
    let mut accepted = invitation.clone();
    accepted["status"] = json!("accepted");
    assert_eq!(data, vec![accepted, member.clone()]);
    let member_path = format!(
        "/api/auth/organizations/members/{}",
        member["membership_id"].as_str().unwrap()
    );
    let member = call(
        &c,
        Method::PATCH,
        &member_path,
        Some(json!({"role": "user"})),
        200,
    )
    .await;
    log.one(&c, "member.updated", &member).await;
    let member = call(&c, Method::DELETE, &member_path, None, 200).await;
    log.one(&c, "member.removed", &member).await;
    let other = call(
        &c,
        Method::POST,
        "/api/auth/organizations/invitations",
        Some(json!({"email": "later@example.com", "role": "user"})),
        201,
    )
    .await;
    log.one(&c, "invitation.created", &other).await;
    let withdrawn = call(
        &c,
        Method::DELETE,
        &format!(
            "/api/auth/organizations/invitations/{}",
            other["invite_id"].as_str().unwrap()
        ),
        None,
        200,
    )
    .await;
    log.one(&c, "invitation.revoked", &withdrawn).await;

    // Deletes: the resource as it was.
    let deleted = call(&c, Method::DELETE, &doc_path, None, 200).await;
    assert_eq!(deleted, doc);
    log.one(&c, "document.deleted", &deleted).await;
    let deleted = call(&c, Method::DELETE, &tool_path, None, 200).await;
    log.one(&c, "tool.deleted", &deleted).await;
    let deleted = call(&c, Method::DELETE, &number_path, None, 200).await;
    log.one(&c, "phone_number.deleted", &deleted).await;
    let deleted = call(&c, Method::DELETE, &integration_path, None, 200).await;
    log.one(&c, "integration.deleted", &deleted).await;
    let deleted = call(&c, Method::DELETE, &agent_path, None, 200).await;
    log.one(&c, "agent.deleted", &deleted).await;

    // No secret in any event: neither the key's nor the integration's credentials.
    let everything = serde_json::to_string(&all_events(&c).await).unwrap();
    for secret in [secret.as_str(), TOKEN, SID] {
        assert!(!everything.contains(secret), "an event holds {secret}");
    }

    // One event by id; another organization's is not found; `user` may not read events.
    let newest = &all_events(&c).await[0];
    let id = newest["event_id"].as_str().unwrap();
    assert_eq!(
        &call(&c, Method::GET, &format!("/api/events/{id}"), None, 200).await,
        newest
    );
    let stranger = ApiCaller::bootstrap(ctx, &server, "Other").await;
    call(
        &stranger,
        Method::GET,
        &format!("/api/events/{id}"),
        None,
        404,
    )
    .await;
    assert!(all_events(&stranger).await.is_empty());
    call(&c, Method::GET, "/api/events/evt_nothex", None, 400).await;
    let reader = call(
        &c,
        Method::POST,
        "/api/api-keys",
        Some(json!({"name": "r", "role": "user"})),
        201,
    )
    .await;
    let reader = c.with_key(reader["api_key"].as_str().unwrap());
    call(&reader, Method::GET, "/api/events", None, 403).await;
    call(
        &reader,
        Method::GET,
        &format!("/api/events/{id}"),
        None,
        403,
    )
    .await;
    let manager = call(
        &c,
        Method::POST,
        "/api/api-keys",
        Some(json!({"name": "m", "role": "agent_manager"})),
        201,
    )
    .await;
    let manager = c.with_key(manager["api_key"].as_str().unwrap());
    call(
        &manager,
        Method::GET,
        &format!("/api/events/{id}"),
        None,
        200,
    )
    .await;
    server.stop().await;
}

/// Every event the service lists for `actor`, newest first.
async fn events(service: &Service, actor: &Actor, types: &[EventType]) -> Vec<Event> {
    let filter = EventFilter {
        types: types.to_vec(),
        ..EventFilter::default()
    };
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let params = PageParams {
            limit: Some(2),
            cursor,
        };
        let page = service.event_list(actor, &filter, &params).await.unwrap();
        assert!(page.items.len() <= 2);
        out.extend(page.items);
        if !page.has_more {
            return out;
        }
        cursor = page.next_cursor;
    }
}

async fn failed_writes_record_no_event(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let s = &ctx.service;
    let count = || async { events(s, &admin, &[]).await.len() };

    // Refused by validation, before the repository.
    let bad = s
        .tool_create(&admin, body(tool_body("no spaces allowed")))
        .await;
    assert!(matches!(bad, Err(Error::InvalidInput(_))), "{bad:?}");
    assert_eq!(count().await, 0);

    // Refused inside the repository's transaction: the write and its event roll back.
    s.phone_number_create(&admin, body(phone_number_body("+14155550123")))
        .await
        .unwrap();
    let duplicate = s
        .phone_number_create(&admin, body(phone_number_body("+14155550123")))
        .await;
    assert!(
        matches!(duplicate, Err(Error::Conflict(_))),
        "{duplicate:?}"
    );
    s.tool_create(&admin, new_tool("lookup")).await.unwrap();
    let duplicate = s.tool_create(&admin, new_tool("lookup")).await;
    assert!(
        matches!(duplicate, Err(Error::Conflict(_))),
        "{duplicate:?}"
    );
    let dangling = s
        .agent_create(
            &admin,
            body(merged(
                agent_body("A"),
                json!({"custom_tools": ["tool_0000000000000000"]}),
            )),
        )
        .await;
    assert!(
        matches!(dangling, Err(Error::InvalidInput(_))),
        "{dangling:?}"
    );
    assert_eq!(
        events(s, &admin, &[])
            .await
            .iter()
            .map(|e| e.event_type)
            .collect::<Vec<_>>(),
        [EventType::ToolCreated, EventType::PhoneNumberCreated]
    );

    // The last admin cannot be demoted or removed: no member event.
    let me = s.member_list(&admin).await.unwrap().remove(0);
    let demote = s
        .member_update(&admin, &me.membership_id, body(json!({"role": "user"})))
        .await;
    assert!(matches!(demote, Err(Error::Conflict(_))), "{demote:?}");
    assert!(s.member_remove(&admin, &me.membership_id).await.is_err());
    // A second revocation revokes nothing and records nothing.
    let (key, _) = ctx.key_with_role(&admin, Role::User).await;
    s.api_key_revoke(&admin, &key.key.key_id).await.unwrap();
    s.api_key_revoke(&admin, &key.key.key_id).await.unwrap();
    let types: Vec<EventType> = events(s, &admin, &[])
        .await
        .iter()
        .map(|e| e.event_type)
        .collect();
    assert_eq!(
        types,
        [
            EventType::ApiKeyRevoked,
            EventType::ApiKeyCreated,
            EventType::ToolCreated,
            EventType::PhoneNumberCreated
        ]
    );
    // Deleting what does not exist records nothing either.
    assert!(
        s.tool_delete(&admin, "tool_0000000000000000")
            .await
            .is_err()
    );
    assert_eq!(count().await, 4);
}

async fn the_list_pages_and_filters_by_type(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let s = &ctx.service;
    let mut tools = Vec::new();
    let mut agents = Vec::new();
    for i in 0..3 {
        tools.push(
            s.tool_create(&admin, new_tool(&format!("t{i}")))
                .await
                .unwrap(),
        );
        agents.push(
            s.agent_create(&admin, new_agent(&format!("a{i}")))
                .await
                .unwrap(),
        );
        s.call_create(&admin, new_call(&agents[i].agent_id))
            .await
            .unwrap();
    }

    // Unfiltered: all nine, newest first, with no repeats across pages.
    let all = events(s, &admin, &[]).await;
    assert_eq!(all.len(), 9);
    assert!(
        all.windows(2)
            .all(|w| (w[0].created_at, &w[0].event_id) > (w[1].created_at, &w[1].event_id))
    );
    let ids: BTreeSet<&str> = all.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids.len(), 9);

    // Filtered by two types: the same order, only those types, data as created.
    let some = events(
        s,
        &admin,
        &[EventType::ToolCreated, EventType::AgentCreated],
    )
    .await;
    let expected: Vec<&Event> = all
        .iter()
        .filter(|e| {
            matches!(
                e.event_type,
                EventType::ToolCreated | EventType::AgentCreated
            )
        })
        .collect();
    assert_eq!(some.iter().collect::<Vec<_>>(), expected);
    let mut created: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    for (i, a) in agents.iter().enumerate() {
        created.insert(2 * i + 1, serde_json::to_value(a).unwrap());
    }
    created.reverse();
    assert_eq!(
        some.iter().map(|e| e.data.clone()).collect::<Vec<_>>(),
        created
    );
    assert!(
        events(s, &admin, &[EventType::WebhookTest])
            .await
            .is_empty()
    );

    // The same over HTTP, with the type repeated; an unknown type is refused by name.
    let server = TestServer::start(ctx).await;
    let boot_key = ctx
        .key_with_role(&admin, Role::AgentManager)
        .await
        .0
        .api_key;
    let c = ApiCaller::new(&server, &admin.organization_id, &boot_key);
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = c
            .get(&format!(
                "/api/events?type=tool.created&type=agent.created&limit=4&cursor={cursor}"
            ))
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(
            page["pagination"]["page_size"],
            page["data"].as_array().unwrap().len()
        );
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["event_id"].as_str().unwrap().to_owned()),
        );
        if page["pagination"]["has_more"] != true {
            break;
        }
        cursor = page["pagination"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    let expected: Vec<String> = expected.iter().map(|e| e.event_id.clone()).collect();
    assert_eq!(seen, expected);
    let (status, answer) = c.get("/api/events?type=call.exploded").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("`call.exploded`"),
        "{answer}"
    );
    let (status, _) = c.get("/api/events?limit=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    server.stop().await;
}

/// `resource_id` keeps one resource's history: a call's creation, changes and recording, and
/// nothing of another call or of its agent; a malformed id is a 400.
async fn the_list_filters_by_resource(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Histories").await;
    let agent = c.create("/api/agents", agent_body("Agent")).await;
    let call = |status: &'static str| {
        let c = &c;
        let agent_id = agent["agent_id"].clone();
        async move {
            c.create(
                "/api/calls",
                json!({"agent_id": agent_id, "to_number": "+14155550100",
                       "call_type": "inbound", "status": status}),
            )
            .await["call_sid"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let sid = call("in_progress").await;
    let other = call("queued").await;
    let (status, _) = c
        .send(
            reqwest::Method::PATCH,
            &format!("/api/calls/{sid}"),
            Some(json!({"status": "completed"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = c.get(&format!("/api/events?resource_id={sid}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let history: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["call.updated", "call.created"]);
    let (_, body) = c
        .get(&format!(
            "/api/events?resource_id={other}&type=call.updated"
        ))
        .await;
    assert!(body["data"].as_array().unwrap().is_empty(), "{body}");
    let (_, body) = c
        .get(&format!(
            "/api/events?resource_id={}",
            agent["agent_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(body["data"][0]["type"], "agent.created");
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    let (status, _) = c.get("/api/events?resource_id=call%27%20OR%201=1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    server.stop().await;
}

async fn the_retention_sweep_deletes_old_events_in_batches(ctx: &TestContext) {
    use voiceplane_core::repo::EventRepository;
    let admin = ctx.admin("Acme").await;
    for i in 0..5 {
        ctx.service
            .tool_create(&admin, new_tool(&format!("t{i}")))
            .await
            .unwrap();
    }
    let all = events(&ctx.service, &admin, &[]).await;
    // Strictly before the fourth-oldest: the three oldest go, two at a time.
    let cutoff = all[1].created_at;
    assert_eq!(
        ctx.repo.event_delete_older_than(cutoff, 2).await.unwrap(),
        2
    );
    assert_eq!(
        ctx.repo.event_delete_older_than(cutoff, 2).await.unwrap(),
        1
    );
    assert_eq!(
        ctx.repo.event_delete_older_than(cutoff, 2).await.unwrap(),
        0
    );
    let left = events(&ctx.service, &admin, &[]).await;
    assert_eq!(left, all[..2].to_vec());
}

db_tests!(
    every_operation_records_its_event,
    failed_writes_record_no_event,
    the_list_pages_and_filters_by_type,
    the_list_filters_by_resource,
    the_retention_sweep_deletes_old_events_in_batches,
);
