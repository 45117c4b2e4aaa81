//! Deliveries sent for real, by the job runner through the HTTP sender, to receivers on
//! loopback: signed per Standard Webhooks (checked with the specification's reference library),
//! retried on the schedule until a 2xx or the schedule's end, never sent to a disabled endpoint
//! or a private address unless allowed (an endpoint's host resolved within a timeout when it is
//! created or changed), and signed with both secrets after a rotation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use standardwebhooks::Webhook as Verifier;
use voiceplane_clients::{HttpWebhookSender, WebhookSenderSettings};
use voiceplane_core::Service;
use voiceplane_core::auth::Actor;
use voiceplane_core::jobs::{JobRepository, RunnerConfig};
use voiceplane_core::model::*;
use voiceplane_core::page::PageParams;
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The context's service delivering with the real sender, private targets allowed (the
/// receivers are on loopback) and the retry `schedule` in milliseconds.
fn delivering(ctx: &TestContext, schedule: &[u64], allow_private: bool) -> Arc<Service> {
    let policy = TargetPolicy { allow_private };
    // The production limit (DESIGN §11): a shorter one fails attempts of a loaded test
    // machine, and the delivery-once tests would then see a retry of a delivered event.
    let sender = HttpWebhookSender::new(WebhookSenderSettings {
        timeout: Duration::from_secs(10),
        policy,
    })
    .unwrap();
    Arc::new(
        Service::clone(&ctx.service).with_webhooks(
            Arc::new(sender),
            policy,
            schedule
                .iter()
                .map(|ms| Duration::from_millis(*ms))
                .collect(),
        ),
    )
}

/// Runs `service`'s jobs until the returned sender is used or dropped.
fn run_jobs(
    service: &Service,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let runner = service.job_runner(RunnerConfig {
        idle_check: Duration::from_millis(20),
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    (stop, task)
}

async fn endpoint(
    service: &Service,
    admin: &Actor,
    url: String,
    events: &[&str],
) -> CreatedWebhook {
    service
        .webhook_create(
            admin,
            NewWebhook {
                url,
                events: events.iter().map(|e| (*e).to_owned()).collect(),
                description: None,
            },
        )
        .await
        .unwrap()
}

/// Polls the endpoint's only delivery until `done` holds; returns it.
async fn delivery_when(
    service: &Service,
    admin: &Actor,
    webhook_id: &str,
    done: impl Fn(&Delivery) -> bool,
) -> Delivery {
    let only = || async {
        let list = service
            .delivery_list(admin, webhook_id, &PageParams::default())
            .await
            .unwrap()
            .items;
        match &list[..] {
            [only] => Some(only.clone()),
            _ => None,
        }
    };
    eventually("the delivery", || async {
        only().await.is_some_and(|d| done(&d))
    })
    .await;
    only().await.unwrap()
}

/// A receiver on loopback that answers every POST with `status`.
async fn answering(status: u16) -> MockServer {
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(status))
        .mount(&receiver)
        .await;
    receiver
}

async fn received(receiver: &MockServer) -> Vec<wiremock::Request> {
    receiver.received_requests().await.unwrap_or_default()
}

async fn an_event_is_delivered_signed_and_recorded(ctx: &TestContext) {
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let service = delivering(ctx, &[10], true);
    let admin = ctx.admin("Acme").await;
    let hook = endpoint(
        &service,
        &admin,
        format!("{}/hook", receiver.uri()),
        &["tool.created"],
    )
    .await;
    let (stop, task) = run_jobs(&service);
    let tool = service
        .tool_create(&admin, new_tool("lookup"))
        .await
        .unwrap();

    let done = delivery_when(&service, &admin, &hook.webhook.webhook_id, |d| {
        d.status == DeliveryStatus::Succeeded
    })
    .await;
    assert_eq!((done.attempts, done.last_status_code), (1, Some(204)));
    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    Verifier::new(&hook.secret)
        .unwrap()
        .verify(&request.body, &request.headers)
        .expect("the reference library accepts the signature");
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["type"], "tool.created");
    assert_eq!(body["data"]["tool_id"], tool.tool_id.as_str());
    assert_eq!(
        request.headers["webhook-id"],
        body["event_id"].as_str().unwrap()
    );
    assert_eq!(done.event_id, body["event_id"].as_str().unwrap());
    assert_eq!(request.headers["content-type"], "application/json");
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn failures_are_retried_on_the_schedule(ctx: &TestContext) {
    // Two 500s, then 200: succeeded at the third attempt, the same webhook-id each time.
    let flaky = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&flaky)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&flaky)
        .await;
    // Always 500: failed once the schedule's two delays are spent.
    let broken = answering(500).await;
    let service = delivering(ctx, &[10, 20], true);
    let admin = ctx.admin("Acme").await;
    let flaky_hook = endpoint(&service, &admin, flaky.uri(), &["*"]).await;
    let broken_hook = endpoint(&service, &admin, broken.uri(), &["*"]).await;
    let (stop, task) = run_jobs(&service);
    service.tool_create(&admin, new_tool("t")).await.unwrap();

    let ok = delivery_when(&service, &admin, &flaky_hook.webhook.webhook_id, |d| {
        d.status != DeliveryStatus::Pending
    })
    .await;
    assert_eq!((ok.status, ok.attempts), (DeliveryStatus::Succeeded, 3));
    let ids: Vec<String> = received(&flaky)
        .await
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| *id == ok.event_id));

    let failed = delivery_when(&service, &admin, &broken_hook.webhook.webhook_id, |d| {
        d.status != DeliveryStatus::Pending
    })
    .await;
    assert_eq!(
        (failed.status, failed.attempts),
        (DeliveryStatus::Failed, 3)
    );
    assert_eq!(failed.last_status_code, Some(500));
    assert!(
        failed.last_error.as_deref().unwrap().contains("500"),
        "{failed:?}"
    );
    assert_eq!(failed.next_attempt_at, None);
    assert_eq!(
        received(&broken).await.len(),
        3,
        "no attempt after the schedule"
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn disabled_endpoints_and_private_targets_get_nothing(ctx: &TestContext) {
    // Without allow_private, a loopback endpoint cannot even be created.
    let guarded = delivering(ctx, &[10], false);
    let admin = ctx.admin("Acme").await;
    let refused = guarded
        .webhook_create(
            &admin,
            NewWebhook {
                url: "http://127.0.0.1:9/hook".into(),
                events: vec!["*".into()],
                description: None,
            },
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("private"), "{refused}");

    let off = answering(200).await;
    let on = answering(200).await;
    let service = delivering(ctx, &[10], true);
    let off_hook = endpoint(&service, &admin, off.uri(), &["*"]).await;
    let on_hook = endpoint(&service, &admin, on.uri(), &["*"]).await;
    service
        .webhook_update(
            &admin,
            &off_hook.webhook.webhook_id,
            WebhookUpdate {
                status: Some(WebhookStatus::Disabled),
                ..WebhookUpdate::default()
            },
        )
        .await
        .unwrap();
    let (stop, task) = run_jobs(&service);
    service.tool_create(&admin, new_tool("t")).await.unwrap();
    // The enabled endpoint's delivery is the barrier: by then the event was fanned out.
    delivery_when(&service, &admin, &on_hook.webhook.webhook_id, |d| {
        d.status == DeliveryStatus::Succeeded
    })
    .await;
    assert!(received(&off).await.is_empty());
    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn a_rotated_endpoint_is_signed_with_both_secrets(ctx: &TestContext) {
    let receiver = answering(200).await;
    let service = delivering(ctx, &[10], true);
    let admin = ctx.admin("Acme").await;
    let before = endpoint(&service, &admin, receiver.uri(), &["*"]).await;
    let after = service
        .webhook_rotate_secret(&admin, &before.webhook.webhook_id)
        .await
        .unwrap();
    assert_ne!(before.secret, after.secret);
    let (stop, task) = run_jobs(&service);
    service.tool_create(&admin, new_tool("t")).await.unwrap();
    delivery_when(&service, &admin, &before.webhook.webhook_id, |d| {
        d.status == DeliveryStatus::Succeeded
    })
    .await;
    let request = &received(&receiver).await[0];
    let signatures = request.headers["webhook-signature"].to_str().unwrap();
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    for secret in [&before.secret, &after.secret] {
        Verifier::new(secret)
            .unwrap()
            .verify(&request.body, &request.headers)
            .expect("each secret verifies during the rotation");
    }
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Two runners on one database (as two instances would be): every event is delivered, and
/// none twice.
async fn two_runners_deliver_each_event_once(ctx: &TestContext) {
    let receiver = answering(200).await;
    let service = delivering(ctx, &[10], true);
    let admin = ctx.admin("Acme").await;
    endpoint(&service, &admin, receiver.uri(), &["tool.created"]).await;
    let count = 40;
    for i in 0..count {
        service
            .tool_create(&admin, new_tool(&format!("t{i}")))
            .await
            .unwrap();
    }
    let (stop1, task1) = run_jobs(&service);
    let (stop2, task2) = run_jobs(&service);
    eventually("every event is delivered", || async {
        received(&receiver).await.len() >= count
    })
    .await;
    // Both runners idle: nothing is left to deliver, and nothing arrived twice.
    eventually("no job is left", || async {
        ctx.repo
            .job_next_due(&["webhook.deliver".into()])
            .await
            .unwrap()
            .is_none()
    })
    .await;
    let mut ids: Vec<String> = received(&receiver)
        .await
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), count);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "an event was delivered twice");
    stop1.send(()).unwrap();
    stop2.send(()).unwrap();
    task1.await.unwrap();
    task2.await.unwrap();
}

/// A resolver answering with fixed addresses, or never.
struct FakeResolver(Option<Vec<std::net::IpAddr>>);

#[async_trait::async_trait]
impl voiceplane_core::webhooks::Resolver for FakeResolver {
    async fn resolve(&self, _host: &str) -> std::io::Result<Vec<std::net::IpAddr>> {
        match &self.0 {
            Some(ips) => Ok(ips.clone()),
            None => std::future::pending().await,
        }
    }
}

/// An endpoint's host is resolved when it is created or changed: a name of a private address
/// is refused at once (400), and a resolver that never answers costs the request its timeout
/// and a 503 naming the host, not a request that hangs.
async fn an_endpoint_host_is_resolved_within_a_timeout(ctx: &TestContext) {
    let admin = ctx.admin("Acme").await;
    let with = |answer: Option<Vec<std::net::IpAddr>>| {
        Service::clone(&ctx.service)
            .with_resolver(Arc::new(FakeResolver(answer)), Duration::from_millis(100))
    };
    let hook = |url: &str| NewWebhook {
        url: url.into(),
        events: vec!["*".into()],
        description: None,
    };
    let private = with(Some(vec!["10.1.2.3".parse().unwrap()]))
        .webhook_create(&admin, hook("https://hooks.example.com/in"))
        .await
        .unwrap_err();
    assert!(
        matches!(&private, voiceplane_core::Error::InvalidInput(_))
            && private
                .to_string()
                .contains("resolves to a private address (10.1.2.3)"),
        "{private:?}"
    );

    let public = with(Some(vec!["93.184.216.34".parse().unwrap()]));
    let created = public
        .webhook_create(&admin, hook("https://hooks.example.com/in"))
        .await
        .unwrap();

    let silent = with(None);
    let timed_out = silent
        .webhook_create(&admin, hook("https://slow.example.com/in"))
        .await
        .unwrap_err();
    assert!(
        matches!(&timed_out, voiceplane_core::Error::Unavailable(_))
            && timed_out
                .to_string()
                .contains("slow.example.com could not be resolved within 0.1 s"),
        "{timed_out:?}"
    );
    let update = silent
        .webhook_update(
            &admin,
            &created.webhook.webhook_id,
            serde_json::from_value(serde_json::json!({"url": "https://slow.example.com/in"}))
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&update, voiceplane_core::Error::Unavailable(_)),
        "{update:?}"
    );
    // An IP literal needs no resolver.
    silent
        .webhook_create(&admin, hook("https://93.184.216.34/in"))
        .await
        .unwrap();
}

db_tests!(
    an_endpoint_host_is_resolved_within_a_timeout,
    an_event_is_delivered_signed_and_recorded,
    failures_are_retried_on_the_schedule,
    disabled_endpoints_and_private_targets_get_nothing,
    a_rotated_endpoint_is_signed_with_both_secrets,
    two_runners_deliver_each_event_once,
);
