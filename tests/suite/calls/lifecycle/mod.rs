//! Deleting calls and recordings, retention policies and back-dated calls, on SQLite and
//! Postgres: a deleted call's rows, transcript and recording file are gone (on the fs store,
//! and on S3 when `VOICEPLANE_TEST_S3_ENDPOINT` names one) with `call.deleted` /
//! `recording.deleted` events; the sweep removes exactly what is older than each policy; the
//! settings and `created_at` are validated and kept to admins.

mod files;
mod retention;

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::Service;
use voiceplane_core::auth::Actor;
use voiceplane_core::blob::BlobStore;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::model::{EventFilter, EventType};
use voiceplane_core::page::PageParams;
use voiceplane_core::role::Role;
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, agent_body, db_tests, eventually, s3_from_env,
};

pub(super) const DAY: i64 = 86_400;

/// The fs store in the test's folder always, and S3 when configured.
fn stores(ctx: &TestContext) -> Vec<(&'static str, Arc<dyn BlobStore>)> {
    let root = ctx.folder().join("blobs");
    let mut stores: Vec<(&'static str, Arc<dyn BlobStore>)> = vec![(
        "fs",
        Arc::new(OpendalBlobStore::new(BlobConfig::Fs { root }).unwrap()),
    )];
    if let Some(s3) = s3_from_env("the S3 store") {
        stores.push((
            "s3",
            Arc::new(OpendalBlobStore::new(BlobConfig::S3(s3)).unwrap()),
        ));
    }
    stores
}

pub(super) fn memory() -> Arc<dyn BlobStore> {
    Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap())
}

/// A server and a job runner over `ctx`'s service with `blobs`.
pub(super) struct Setup {
    pub(super) server: TestServer,
    pub(super) service: Service,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Setup {
    pub(super) async fn start(ctx: &TestContext, blobs: Arc<dyn BlobStore>) -> Self {
        let service = Service::clone(&ctx.service)
            .with_blobs(blobs.clone())
            .with_retention_sweep_interval(Duration::from_secs(60));
        let server = TestServer::start_configured(ctx, |s| s.with_blobs(blobs)).await;
        let runner = service.job_runner(RunnerConfig {
            worker: "w1".to_owned(),
            idle_check: Duration::from_millis(50),
            backoff_base: Duration::from_millis(50),
            ..RunnerConfig::default()
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(runner.run(async move {
            let _ = stopped.await;
        }));
        Self {
            server,
            service,
            stop,
            task,
        }
    }

    pub(super) async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap();
        self.server.stop().await;
    }
}

pub(super) async fn agent(c: &ApiCaller) -> String {
    let agent = c.create("/api/agents", agent_body("A")).await;
    agent["agent_id"].as_str().unwrap().to_owned()
}

/// A new call of `agent_id`, created `days_ago` days before the test clock's now.
pub(super) async fn call(
    ctx: &TestContext,
    c: &ApiCaller,
    agent_id: &str,
    days_ago: i64,
) -> String {
    let created_at = ctx.clock.peek().add_seconds(-days_ago * DAY);
    let call = c
        .create(
            "/api/calls",
            json!({"agent_id": agent_id, "to_number": "+14155550123", "call_type": "outbound",
                   "created_at": created_at.to_rfc3339()}),
        )
        .await;
    call["call_sid"].as_str().unwrap().to_owned()
}

pub(super) async fn upload(c: &ApiCaller, sid: &str, bytes: usize) {
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
        .header("Content-Type", "audio/wav")
        .body(vec![7u8; bytes])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

pub(super) fn sql(ctx: &TestContext, postgres: &str) -> String {
    match ctx.backend {
        voiceplane_suite::Backend::Postgres => postgres.to_owned(),
        voiceplane_suite::Backend::Sqlite => postgres.replace('$', "?"),
    }
}

/// Appends two transcript lines to the call with SQL: the transcript API is not needed here.
pub(super) async fn transcript(ctx: &TestContext, org: &str, sid: &str) {
    use sea_orm::ConnectionTrait;
    let db = ctx.repo.connection();
    for seq in [1i64, 2] {
        db.execute_raw(sea_orm::Statement::from_sql_and_values(
            db.get_database_backend(),
            sql(
                ctx,
                "INSERT INTO call_messages (organization_id, call_sid, seq, role, text, created_at) \
                 VALUES ($1, $2, $3, 'user', 'hello there', 0)",
            ),
            [org.into(), sid.into(), seq.into()],
        ))
        .await
        .unwrap();
    }
}

pub(super) async fn transcript_len(ctx: &TestContext, sid: &str) -> i64 {
    use sea_orm::ConnectionTrait;
    let db = ctx.repo.connection();
    let row = db
        .query_one_raw(sea_orm::Statement::from_sql_and_values(
            db.get_database_backend(),
            sql(
                ctx,
                "SELECT COUNT(*) AS n FROM call_messages WHERE call_sid = $1",
            ),
            [sid.into()],
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

pub(super) async fn events(ctx: &TestContext, admin: &Actor, t: EventType) -> Vec<Value> {
    let filter = EventFilter {
        types: vec![t],
        ..EventFilter::default()
    };
    ctx.service
        .event_list(admin, &filter, &PageParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.data)
        .collect()
}

pub(super) async fn gone(store: &Arc<dyn BlobStore>, key: &str) {
    eventually(&format!("{key} is deleted"), || async {
        match store.stat(key).await {
            Ok(found) => found.is_none(),
            // A store that answers late on a loaded machine is asked again; one that never
            // answers fails at the deadline.
            Err(voiceplane_core::Error::Unavailable(_)) => false,
            Err(e) => panic!("stat {key}: {e:?}"),
        }
    })
    .await;
}

async fn delete_on_store(ctx: &TestContext, name: &str, store: Arc<dyn BlobStore>) {
    let setup = Setup::start(ctx, store.clone()).await;
    let boot = ctx.bootstrap(&format!("Acme {name}")).await;
    let org = boot.organization_id.clone();
    let admin = ctx.actor(&org, &boot.api_key).await;
    let c = ApiCaller::new(&setup.server, &org, &boot.api_key);
    let (manager_key, _) = ctx.key_with_role(&admin, Role::AgentManager).await;
    let manager = c.with_key(&manager_key.api_key);
    let (user_key, _) = ctx.key_with_role(&admin, Role::User).await;
    let user = c.with_key(&user_key.api_key);
    let other = ApiCaller::bootstrap(ctx, &setup.server, "Other").await;

    let agent_id = agent(&c).await;
    let sid = call(ctx, &c, &agent_id, 0).await;
    let kept = call(ctx, &c, &agent_id, 0).await;
    upload(&c, &sid, 1000).await;
    upload(&c, &kept, 10).await;
    transcript(ctx, &org, &sid).await;
    transcript(ctx, &org, &kept).await;
    let key = format!("recordings/{org}/{sid}.wav");
    let kept_key = format!("recordings/{org}/{kept}.wav");
    assert!(store.stat(&key).await.unwrap().is_some());

    // Another organization's caller does not find it; a `user` may not delete.
    for path in [
        format!("/api/calls/{sid}"),
        format!("/api/calls/{sid}/recording"),
    ] {
        assert_eq!(
            other.send(Method::DELETE, &path, None).await.0,
            StatusCode::NOT_FOUND
        );
        let (status, body) = user.send(Method::DELETE, &path, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    assert_eq!(
        c.send(Method::DELETE, "/api/calls/call_doesnotexist", None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );

    // The recording alone: the call and its transcript stay.
    let (status, body) = manager
        .send(Method::DELETE, &format!("/api/calls/{sid}/recording"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["message"], "recording deleted");
    assert_eq!(body["data"]["call_sid"], sid.as_str());
    gone(&store, &key).await;
    let (status, _) = c.get(&format!("/api/calls/{sid}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(transcript_len(ctx, &sid).await, 2);
    let (status, body) = c.get(&format!("/api/calls/{sid}/recording/stream")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = manager
        .send(Method::DELETE, &format!("/api/calls/{sid}/recording"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("has no recording"),
        "{body}"
    );
    assert_eq!(
        events(ctx, &admin, EventType::RecordingDeleted).await,
        vec![json!({"call_sid": sid, "content_type": "audio/wav", "size": 1000})]
    );

    // With a recording again, then the whole call, a second later (events list newest first).
    upload(&c, &sid, 500).await;
    ctx.clock.advance(1);

    // The whole call: answered as it was, then nothing of it is left.
    let (_, before) = c.get(&format!("/api/calls/{sid}")).await;
    let (status, body) = c
        .send(Method::DELETE, &format!("/api/calls/{sid}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["message"], "call deleted");
    assert_eq!(body["data"], before["data"]);
    assert_eq!(
        c.get(&format!("/api/calls/{sid}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(transcript_len(ctx, &sid).await, 0);
    gone(&store, &key).await;
    assert_eq!(
        c.send(Method::DELETE, &format!("/api/calls/{sid}"), None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        events(ctx, &admin, EventType::CallDeleted).await,
        vec![before["data"].clone()]
    );
    let recordings = events(ctx, &admin, EventType::RecordingDeleted).await;
    assert_eq!(recordings.len(), 2, "{recordings:?}");
    assert_eq!(
        recordings[0],
        json!({"call_sid": sid, "content_type": "audio/wav", "size": 500})
    );

    // The other call is untouched.
    assert_eq!(transcript_len(ctx, &kept).await, 2);
    assert!(store.stat(&kept_key).await.unwrap().is_some());
    let download = c
        .request(
            Method::GET,
            &format!("/api/calls/{kept}/recording/download"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(download.status(), StatusCode::OK);
    setup.stop().await;
}

async fn deleting_calls_and_recordings(ctx: &TestContext) {
    for (name, store) in stores(ctx) {
        delete_on_store(ctx, name, store).await;
    }
}

/// `created_at` on `POST /api/calls`: admins only, RFC 3339, not in the future.
async fn created_at_is_for_admins_and_not_in_the_future(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let boot = ctx.bootstrap("Acme").await;
    let admin = ctx.actor(&boot.organization_id, &boot.api_key).await;
    let c = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let agent_id = agent(&c).await;
    let body = |at: Value| {
        json!({"agent_id": agent_id, "to_number": "+14155550123", "call_type": "inbound",
               "created_at": at})
    };
    let now = ctx.clock.peek();
    let past = now.add_seconds(-400 * DAY).to_rfc3339();
    let (status, call) = c.post("/api/calls", body(json!(past))).await;
    assert_eq!(status, StatusCode::CREATED, "{call}");
    assert_eq!(call["data"]["created_at"], past.as_str());
    assert_ne!(call["data"]["updated_at"], past.as_str());
    // The list stays newest first by created_at.
    let newer = c.create("/api/calls", body(json!(now.to_rfc3339()))).await;
    let (_, list) = c.get("/api/calls").await;
    assert_eq!(list["data"][0]["call_sid"], newer["call_sid"]);
    assert_eq!(list["data"][1]["call_sid"], call["data"]["call_sid"]);

    let future = now.add_seconds(1).to_rfc3339();
    let (status, err) = c.post("/api/calls", body(json!(future))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["detail"], "created_at must not be in the future");
    for bad in [json!("yesterday"), json!(12), json!("2025-13-01T00:00:00Z")] {
        let (status, err) = c.post("/api/calls", body(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {err}");
    }

    let (key, _) = ctx.key_with_role(&admin, Role::AgentManager).await;
    let manager = c.with_key(&key.api_key);
    let (status, err) = manager.post("/api/calls", body(json!(past))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .contains("importing a call with `created_at` needs the role `admin`"),
        "{err}"
    );
    // Without it, an agent manager records calls as before.
    let mut plain = body(Value::Null);
    plain.as_object_mut().unwrap().remove("created_at");
    assert_eq!(
        manager.post("/api/calls", plain).await.0,
        StatusCode::CREATED
    );
    server.stop().await;
}

db_tests!(
    deleting_calls_and_recordings,
    created_at_is_for_admins_and_not_in_the_future,
);
