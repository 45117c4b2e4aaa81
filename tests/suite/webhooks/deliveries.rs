//! Deliveries: the fan-out of every recorded event to the enabled endpoints subscribed to it
//! (a pending delivery and its `webhook.deliver` job, written with the change or not at all),
//! test deliveries, retries, and what the delivery job reads and records.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::json;
use voiceplane_core::crypto::CredentialCipher;
use voiceplane_core::jobs::JobRepository;
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::repo::WebhookRepository;
use voiceplane_suite::*;

use super::{column, create, deliveries, delivery_jobs};

async fn every_event_fans_out_to_the_enabled_endpoints_subscribed_to_it(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let all = create(ctx, &admin, &["*"]).await.webhook;
    let tools = create(ctx, &admin, &["tool.created", "tool.deleted"])
        .await
        .webhook;
    let agents = create(ctx, &admin, &["agent.created"]).await.webhook;
    let disabled = create(ctx, &admin, &["*"]).await.webhook;
    ctx.service
        .webhook_update(
            &admin,
            &disabled.webhook_id,
            WebhookUpdate {
                status: Some(WebhookStatus::Disabled),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let other_admin = ctx.admin("Other").await;
    let elsewhere = create(ctx, &other_admin, &["*"]).await.webhook;
    assert!(
        delivery_jobs(ctx).await.is_empty(),
        "creating endpoints records no event"
    );

    let tool = ctx
        .service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap();
    let event = ctx
        .service
        .event_list(&admin, &EventFilter::default(), &PageParams::default())
        .await
        .unwrap()
        .items
        .remove(0);
    assert_eq!(event.event_type, EventType::ToolCreated);
    assert_eq!(event.data["tool_id"], tool.tool_id.as_str());

    let mut scheduled = BTreeSet::new();
    for endpoint in [&all, &tools] {
        let got = deliveries(ctx, &admin, &endpoint.webhook_id).await;
        assert_eq!(got.len(), 1, "{got:?}");
        let d = &got[0];
        assert!(voiceplane_core::ids::IdKind::Delivery.matches(&d.delivery_id));
        assert_eq!(d.webhook_id, endpoint.webhook_id);
        assert_eq!(d.event_id, event.event_id);
        assert_eq!(d.event_type, "tool.created");
        assert_eq!(d.status, DeliveryStatus::Pending);
        assert_eq!(d.attempts, 0);
        assert_eq!(d.next_attempt_at, Some(event.created_at));
        assert_eq!(d.created_at, event.created_at);
        assert_eq!(
            (d.last_attempt_at, d.last_status_code, &d.last_error),
            (None, None, &None)
        );
        scheduled.insert(d.delivery_id.clone());
    }
    for endpoint in [&agents, &disabled] {
        assert!(
            deliveries(ctx, &admin, &endpoint.webhook_id)
                .await
                .is_empty()
        );
    }
    assert!(
        deliveries(ctx, &other_admin, &elsewhere.webhook_id)
            .await
            .is_empty()
    );
    assert_eq!(delivery_jobs(ctx).await, scheduled);
    let due = ctx
        .repo
        .job_next_due(&["webhook.deliver".into()])
        .await
        .unwrap()
        .unwrap();
    assert!(due <= event.created_at);

    // A change that fails writes neither its event nor a delivery nor a job.
    let err = ctx
        .service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, voiceplane_core::Error::Conflict(_)),
        "{err:?}"
    );
    assert_eq!(deliveries(ctx, &admin, &all.webhook_id).await.len(), 1);
    assert_eq!(delivery_jobs(ctx).await, scheduled);

    // A delete is delivered like any other event; a deleted endpoint takes its deliveries.
    ctx.service
        .tool_delete(&admin, &tool.tool_id)
        .await
        .unwrap();
    assert_eq!(deliveries(ctx, &admin, &tools.webhook_id).await.len(), 2);
    ctx.service
        .webhook_delete(&admin, &tools.webhook_id)
        .await
        .unwrap();
    let left = column(
        ctx,
        &format!(
            "SELECT delivery_id FROM webhook_deliveries WHERE webhook_id = '{}'",
            tools.webhook_id
        ),
        "delivery_id",
    )
    .await;
    assert!(left.is_empty(), "{left:?}");
}

async fn test_and_retry_schedule_a_delivery_to_one_endpoint(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let target = c
        .create(
            "/api/webhooks",
            json!({"url": "https://h.example.com/a", "events": ["tool.created"]}),
        )
        .await;
    let bystander = c
        .create(
            "/api/webhooks",
            json!({"url": "https://h.example.com/b", "events": ["*"]}),
        )
        .await;
    let id = target["webhook_id"].as_str().unwrap();
    let path = format!("/api/webhooks/{id}");

    let (status, answer) = c.send(Method::POST, &format!("{path}/test"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let delivery = answer["data"].clone();
    assert_eq!(
        keys(&delivery),
        fields(&[
            "delivery_id",
            "webhook_id",
            "event_id",
            "event_type",
            "status",
            "attempts",
            "last_attempt_at",
            "next_attempt_at",
            "last_status_code",
            "last_error",
            "created_at",
        ])
    );
    assert_eq!(delivery["event_type"], "webhook.test");
    assert_eq!(delivery["status"], "pending");
    assert_eq!(delivery["attempts"], 0);
    let delivery_id = delivery["delivery_id"].as_str().unwrap().to_owned();
    let (_, event) = c
        .get(&format!(
            "/api/events/{}",
            delivery["event_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(event["data"]["type"], "webhook.test");
    assert_eq!(event["data"]["data"], json!({"webhook_id": id}));
    assert_eq!(
        delivery_jobs(ctx).await,
        BTreeSet::from([delivery_id.clone()])
    );
    let (_, listed) = c.get(&format!("{path}/deliveries")).await;
    assert_eq!(listed["data"], json!([delivery]));
    let (_, none) = c
        .get(&format!(
            "/api/webhooks/{}/deliveries",
            bystander["webhook_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(none["data"], json!([]), "a test goes to its endpoint only");

    // A finished delivery retried: pending again, due now, with a job of its own.
    ctx.repo
        .delivery_record_attempt(
            &delivery_id,
            &DeliveryAttempt {
                at: ctx.clock.peek(),
                status_code: Some(500),
                error: Some("HTTP 500".into()),
                status: DeliveryStatus::Failed,
                next_attempt_at: None,
            },
        )
        .await
        .unwrap();
    let before = column(ctx, "SELECT job_id FROM jobs", "job_id").await.len();
    let (status, answer) = c
        .send(
            Method::POST,
            &format!("{path}/deliveries/{delivery_id}/retry"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let retried = &answer["data"];
    assert_eq!(retried["status"], "pending");
    assert_eq!(retried["attempts"], 1);
    assert_eq!(retried["last_status_code"], 500);
    assert!(retried["next_attempt_at"].is_string(), "{retried}");
    assert_eq!(
        column(ctx, "SELECT job_id FROM jobs", "job_id").await.len(),
        before + 1
    );
    let missing = format!("{path}/deliveries/dlv_0000000000000000/retry");
    assert_eq!(
        c.send(Method::POST, &missing, None).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, _) = c
        .send(Method::POST, &format!("{path}/deliveries/nope/retry"), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    server.stop().await;
}

async fn a_test_that_fails_writes_neither_event_nor_delivery(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let endpoint = create(ctx, &admin, &["*"]).await.webhook;
    let first = ctx
        .service
        .webhook_test(&admin, &endpoint.webhook_id)
        .await
        .unwrap();
    // The same delivery id again: the delivery's insert fails after the event was written.
    let event = EventStamp {
        event_id: "evt_00000000000000aa".into(),
        event_type: EventType::WebhookTest,
        created_at: ctx.clock.peek(),
        audit: None,
        preconditions: Default::default(),
    }
    .with(&json!({"webhook_id": endpoint.webhook_id}))
    .unwrap();
    let again = Delivery {
        event_id: event.event_id.clone(),
        ..first.clone()
    };
    let jobs_before = delivery_jobs(ctx).await;
    ctx.repo
        .webhook_test(
            &admin.organization_id,
            &event,
            &again,
            &again.job(event.created_at),
        )
        .await
        .unwrap_err();
    let events = column(ctx, "SELECT event_id FROM events", "event_id").await;
    assert!(!events.contains(&event.event_id), "{events:?}");
    assert_eq!(delivery_jobs(ctx).await, jobs_before);
}

async fn the_delivery_job_reads_its_target_and_records_attempts(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let created = create(ctx, &admin, &["*"]).await;
    let endpoint = created.webhook;
    ctx.service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap();
    let delivery = deliveries(ctx, &admin, &endpoint.webhook_id)
        .await
        .remove(0);
    let event = ctx
        .service
        .event_view(&admin, &delivery.event_id)
        .await
        .unwrap();

    let target = ctx
        .repo
        .delivery_target(&delivery.delivery_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(target.delivery, delivery);
    assert_eq!(target.organization_id, admin.organization_id);
    assert_eq!(target.url, endpoint.url);
    assert_eq!(target.webhook_status, WebhookStatus::Enabled);
    let cipher = CredentialCipher::new(&MASTER_KEY);
    let opened = cipher
        .open(&target.secret_sealed, endpoint.webhook_id.as_bytes())
        .unwrap();
    assert_eq!(opened, created.secret.as_bytes());
    assert_eq!(
        (
            target.previous_secret_sealed.as_deref(),
            target.previous_secret_expires_at
        ),
        (None, None)
    );
    assert_eq!(target.event, event);

    let rotated = ctx
        .service
        .webhook_rotate_secret(&admin, &endpoint.webhook_id)
        .await
        .unwrap();
    let after = ctx
        .repo
        .delivery_target(&delivery.delivery_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        after.previous_secret_sealed,
        Some(target.secret_sealed.clone())
    );
    assert_eq!(
        after.previous_secret_expires_at,
        Some(rotated.webhook.updated_at.add_seconds(24 * 3600))
    );

    let at = ctx.clock.peek();
    let next = at.add_seconds(5);
    for n in 1..=2u32 {
        ctx.repo
            .delivery_record_attempt(
                &delivery.delivery_id,
                &DeliveryAttempt {
                    at,
                    status_code: Some(503),
                    error: Some("HTTP 503".into()),
                    status: DeliveryStatus::Pending,
                    next_attempt_at: Some(next),
                },
            )
            .await
            .unwrap();
        let d = deliveries(ctx, &admin, &endpoint.webhook_id)
            .await
            .remove(0);
        assert_eq!(d.attempts, n);
        assert_eq!(d.last_attempt_at, Some(at));
        assert_eq!(d.last_status_code, Some(503));
        assert_eq!(d.last_error.as_deref(), Some("HTTP 503"));
        assert_eq!(d.next_attempt_at, Some(next));
    }
    ctx.repo
        .delivery_record_attempt(
            &delivery.delivery_id,
            &DeliveryAttempt {
                at,
                status_code: Some(204),
                error: None,
                status: DeliveryStatus::Succeeded,
                next_attempt_at: None,
            },
        )
        .await
        .unwrap();
    let d = deliveries(ctx, &admin, &endpoint.webhook_id)
        .await
        .remove(0);
    assert_eq!(
        (d.status, d.attempts, d.last_error, d.next_attempt_at),
        (DeliveryStatus::Succeeded, 3, None, None)
    );
    assert!(
        ctx.repo
            .delivery_target("dlv_0000000000000000")
            .await
            .unwrap()
            .is_none()
    );
}

db_tests!(
    every_event_fans_out_to_the_enabled_endpoints_subscribed_to_it,
    test_and_retry_schedule_a_delivery_to_one_endpoint,
    a_test_that_fails_writes_neither_event_nor_delivery,
    the_delivery_job_reads_its_target_and_records_attempts,
);
