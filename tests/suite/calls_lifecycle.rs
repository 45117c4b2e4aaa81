//! Deleting calls and recordings, retention policies and back-dated calls, on SQLite and
//! Postgres: a deleted call's rows, transcript and recording file are gone (on the fs store,
//! and on S3 when `VOICEPLANE_TEST_S3_ENDPOINT` names one) with `call.deleted` /
//! `recording.deleted` events; the sweep removes exactly what is older than each policy; the
//! settings and `created_at` are validated and kept to admins.

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

const DAY: i64 = 86_400;

/// The fs store in a fresh folder always, and S3 when configured.
fn stores() -> Vec<(&'static str, Arc<dyn BlobStore>, Option<std::path::PathBuf>)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("voiceplane-lifecycle-{nanos:x}"));
    let mut stores: Vec<(&'static str, Arc<dyn BlobStore>, Option<std::path::PathBuf>)> = vec![(
        "fs",
        Arc::new(OpendalBlobStore::new(BlobConfig::Fs { root: dir.clone() }).unwrap()),
        Some(dir),
    )];
    if let Some(s3) = s3_from_env("the S3 store") {
        stores.push((
            "s3",
            Arc::new(OpendalBlobStore::new(BlobConfig::S3(s3)).unwrap()),
            None,
        ));
    }
    stores
}

fn memory() -> Arc<dyn BlobStore> {
    Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap())
}

/// A server and a job runner over `ctx`'s service with `blobs`.
struct Setup {
    server: TestServer,
    service: Service,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Setup {
    async fn start(ctx: &TestContext, blobs: Arc<dyn BlobStore>) -> Self {
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

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap();
        self.server.stop().await;
    }
}

async fn agent(c: &ApiCaller) -> String {
    let agent = c.create("/api/agents", agent_body("A")).await;
    agent["agent_id"].as_str().unwrap().to_owned()
}

/// A new call of `agent_id`, created `days_ago` days before the test clock's now.
async fn call(ctx: &TestContext, c: &ApiCaller, agent_id: &str, days_ago: i64) -> String {
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

async fn upload(c: &ApiCaller, sid: &str, bytes: usize) {
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
        .header("Content-Type", "audio/wav")
        .body(vec![7u8; bytes])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

fn sql(ctx: &TestContext, postgres: &str) -> String {
    match ctx.backend {
        voiceplane_suite::Backend::Postgres => postgres.to_owned(),
        voiceplane_suite::Backend::Sqlite => postgres.replace('$', "?"),
    }
}

/// Appends two transcript lines to the call with SQL: the transcript API is not needed here.
async fn transcript(ctx: &TestContext, org: &str, sid: &str) {
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

async fn transcript_len(ctx: &TestContext, sid: &str) -> i64 {
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

async fn events(ctx: &TestContext, admin: &Actor, t: EventType) -> Vec<Value> {
    let filter = EventFilter { types: vec![t] };
    ctx.service
        .event_list(admin, &filter, &PageParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.data)
        .collect()
}

async fn gone(store: &Arc<dyn BlobStore>, key: &str) {
    eventually(&format!("{key} is deleted"), || async {
        store.stat(key).await.unwrap().is_none()
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
    for (name, store, dir) in stores() {
        delete_on_store(ctx, name, store).await;
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

async fn patch_settings(c: &ApiCaller, body: Value) -> (StatusCode, Value) {
    c.send(Method::PATCH, "/api/organization/settings", Some(body))
        .await
}

/// Each policy removes exactly what is older than it, with the events of a manual delete;
/// the recurring job applies them.
async fn retention_removes_what_is_older_than_each_policy(ctx: &TestContext) {
    let store = memory();
    let setup = Setup::start(ctx, store.clone()).await;
    let boot = ctx.bootstrap("Acme").await;
    let org = boot.organization_id.clone();
    let admin = ctx.actor(&org, &boot.api_key).await;
    let c = ApiCaller::new(&setup.server, &org, &boot.api_key);
    let agent_id = agent(&c).await;
    let mut sids = Vec::new();
    for days_ago in [100, 40, 10, 1] {
        let sid = call(ctx, &c, &agent_id, days_ago).await;
        upload(&c, &sid, 100).await;
        transcript(ctx, &org, &sid).await;
        sids.push(sid);
    }
    // Another organization without a policy keeps its old call whole.
    let other = ApiCaller::bootstrap(ctx, &setup.server, "Other").await;
    let other_agent = agent(&other).await;
    let other_sid = call(ctx, &other, &other_agent, 100).await;
    upload(&other, &other_sid, 100).await;
    let key = |sid: &str| format!("recordings/{org}/{sid}.wav");
    let has_recording = |sid: String| {
        let c = &c;
        async move {
            c.get(&format!("/api/calls/{sid}/recording/stream")).await.0 != StatusCode::NOT_FOUND
        }
    };

    // Recordings older than 30 days.
    let (status, body) = patch_settings(&c, json!({"recording_retention_days": 30})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(setup.service.retention_sweep().await.unwrap(), 2);
    for (sid, kept) in sids.iter().zip([false, false, true, true]) {
        assert_eq!(has_recording(sid.clone()).await, kept, "{sid}");
        assert_eq!(transcript_len(ctx, sid).await, 2);
    }
    gone(&store, &key(&sids[0])).await;
    gone(&store, &key(&sids[1])).await;
    assert!(store.stat(&key(&sids[2])).await.unwrap().is_some());
    let deleted = events(ctx, &admin, EventType::RecordingDeleted).await;
    let mut named: Vec<&str> = deleted
        .iter()
        .map(|d| d["call_sid"].as_str().unwrap())
        .collect();
    named.sort_unstable();
    let mut expected = vec![sids[0].as_str(), sids[1].as_str()];
    expected.sort_unstable();
    assert_eq!(named, expected);
    assert_eq!(deleted[0]["size"], 100);

    // Transcripts older than 5 days; no event names them.
    let (status, body) = patch_settings(
        &c,
        json!({"recording_retention_days": null, "transcript_retention_days": 5}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["recording_retention_days"], Value::Null);
    assert_eq!(setup.service.retention_sweep().await.unwrap(), 3);
    for (sid, len) in sids.iter().zip([0, 0, 0, 2]) {
        assert_eq!(transcript_len(ctx, sid).await, len, "{sid}");
    }
    assert!(has_recording(sids[2].clone()).await);
    assert_eq!(
        events(ctx, &admin, EventType::RecordingDeleted).await.len(),
        2
    );
    assert!(events(ctx, &admin, EventType::CallDeleted).await.is_empty());

    // Calls older than 7 days, by the recurring job, a second later.
    ctx.clock.advance(1);
    let (_, before) = c.get(&format!("/api/calls/{}", sids[2])).await;
    let (status, body) = patch_settings(
        &c,
        json!({"transcript_retention_days": null, "call_retention_days": 7}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    setup.service.jobs_schedule_recurring().await.unwrap();
    eventually("the sweep deletes the old calls", || async {
        c.get(&format!("/api/calls/{}", sids[2])).await.0 == StatusCode::NOT_FOUND
    })
    .await;
    for (sid, kept) in sids.iter().zip([false, false, false, true]) {
        let status = c.get(&format!("/api/calls/{sid}")).await.0;
        assert_eq!(status == StatusCode::OK, kept, "{sid}");
    }
    gone(&store, &key(&sids[2])).await;
    assert!(has_recording(sids[3].clone()).await);
    assert_eq!(transcript_len(ctx, &sids[3]).await, 2);
    let calls = events(ctx, &admin, EventType::CallDeleted).await;
    assert_eq!(calls.len(), 3);
    assert!(calls.contains(&before["data"]), "{calls:?}");
    let recordings = events(ctx, &admin, EventType::RecordingDeleted).await;
    assert_eq!(recordings.len(), 3);
    assert_eq!(recordings[0]["call_sid"], sids[2].as_str());

    assert_eq!(
        other.get(&format!("/api/calls/{other_sid}")).await.0,
        StatusCode::OK
    );
    let other_key = format!(
        "recordings/{}/{other_sid}.wav",
        other.org.as_deref().unwrap()
    );
    assert!(store.stat(&other_key).await.unwrap().is_some());
    setup.stop().await;
}

/// More old calls than one transaction takes: the sweep goes on until none is left.
async fn the_sweep_removes_a_backlog_in_batches(ctx: &TestContext) {
    use voiceplane_core::model::OrganizationSettingsUpdate;
    let admin = ctx.admin("Acme").await;
    let agent = ctx
        .service
        .agent_create(&admin, voiceplane_suite::new_agent("A"))
        .await
        .unwrap();
    let old = ctx.clock.peek().add_seconds(-3 * DAY);
    for _ in 0..501 {
        let mut input = voiceplane_suite::new_call(&agent.agent_id);
        input.created_at = Some(old);
        ctx.service.call_create(&admin, input).await.unwrap();
    }
    let recent = ctx
        .service
        .call_create(&admin, voiceplane_suite::new_call(&agent.agent_id))
        .await
        .unwrap();
    ctx.service
        .organization_settings_update(
            &admin,
            OrganizationSettingsUpdate {
                call_retention_days: Some(Some(2)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(ctx.service.retention_sweep().await.unwrap(), 501);
    let left = ctx
        .service
        .call_list(&admin, &PageParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].call_sid, recent.call_sid);
    assert_eq!(ctx.service.retention_sweep().await.unwrap(), 0);
}

/// GET/PATCH of the retention policy: admins only, whole days from 1 to 36500 or null.
async fn retention_settings_are_validated(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let boot = ctx.bootstrap("Acme").await;
    let admin = ctx.actor(&boot.organization_id, &boot.api_key).await;
    let c = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let none = json!({"recording_retention_days": null, "transcript_retention_days": null,
                      "call_retention_days": null});
    let (status, body) = c.get("/api/organization/settings").await;
    assert_eq!((status, &body["data"]), (StatusCode::OK, &none), "{body}");

    for bad in [
        json!({"call_retention_days": 0}),
        json!({"call_retention_days": -1}),
        json!({"recording_retention_days": 100_000}),
        json!({"transcript_retention_days": "30"}),
        json!({"transcript_retention_days": 1.5}),
        json!({"retention": 3}),
    ] {
        let (status, body) = patch_settings(&c, bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (_, body) = patch_settings(&c, json!({"call_retention_days": 0})).await;
    assert_eq!(
        body["detail"],
        "call_retention_days must be between 1 and 36500 days, or null to keep forever"
    );

    let (status, body) = patch_settings(
        &c,
        json!({"recording_retention_days": 1, "call_retention_days": 36_500}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let set = json!({"recording_retention_days": 1, "transcript_retention_days": null,
                     "call_retention_days": 36_500});
    assert_eq!(body["data"], set);
    // Absent is unchanged; null clears.
    let (_, body) = patch_settings(&c, json!({"transcript_retention_days": 90})).await;
    assert_eq!(body["data"]["recording_retention_days"], 1);
    assert_eq!(body["data"]["transcript_retention_days"], 90);
    let (_, body) = patch_settings(&c, json!({"recording_retention_days": null})).await;
    assert_eq!(body["data"]["recording_retention_days"], Value::Null);
    assert_eq!(
        c.get("/api/organization/settings").await.1["data"],
        body["data"]
    );

    for role in [Role::AgentManager, Role::User] {
        let (key, _) = ctx.key_with_role(&admin, role).await;
        let other = c.with_key(&key.api_key);
        assert_eq!(
            other.get("/api/organization/settings").await.0,
            StatusCode::FORBIDDEN
        );
        let (status, _) = patch_settings(&other, json!({"call_retention_days": 1})).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    // Another organization's policy is its own.
    let other = ApiCaller::bootstrap(ctx, &server, "Other").await;
    assert_eq!(
        other.get("/api/organization/settings").await.1["data"],
        none
    );
    server.stop().await;
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
        err["detail"].as_str().unwrap().contains("calls:import"),
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

/// A store whose first `fails` deletes answer 503, counting every delete.
struct FlakyDeletes {
    inner: Arc<dyn BlobStore>,
    fails: std::sync::atomic::AtomicU32,
    deletes: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl BlobStore for FlakyDeletes {
    async fn put(
        &self,
        key: &str,
        content_type: &str,
        body: voiceplane_core::blob::ByteStream,
    ) -> voiceplane_core::Result<u64> {
        self.inner.put(key, content_type, body).await
    }
    async fn get(
        &self,
        key: &str,
        range: Option<voiceplane_core::blob::ByteRange>,
    ) -> voiceplane_core::Result<voiceplane_core::blob::BlobRead> {
        self.inner.get(key, range).await
    }
    async fn stat(
        &self,
        key: &str,
    ) -> voiceplane_core::Result<Option<voiceplane_core::blob::BlobMeta>> {
        self.inner.stat(key).await
    }
    async fn delete(&self, key: &str) -> voiceplane_core::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        self.deletes.fetch_add(1, SeqCst);
        if self
            .fails
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(voiceplane_core::Error::Unavailable(
                "object storage does not answer".to_owned(),
            ));
        }
        self.inner.delete(key).await
    }
    async fn presign_get(
        &self,
        key: &str,
        expires: Duration,
    ) -> voiceplane_core::Result<Option<String>> {
        self.inner.presign_get(key, expires).await
    }
    fn uri(&self, key: &str) -> String {
        self.inner.uri(key)
    }
    async fn ping(&self) -> voiceplane_core::Result<()> {
        self.inner.ping().await
    }
}

async fn blob_jobs(ctx: &TestContext) -> i64 {
    use sea_orm::ConnectionTrait;
    let db = ctx.repo.connection();
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM jobs WHERE kind = 'blob.delete'",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

/// A file delete the store refuses is retried until it succeeds; a delete's job written
/// before a new upload of the same call leaves the new file alone.
async fn file_deletes_are_retried_and_spare_a_new_upload(ctx: &TestContext) {
    let flaky = Arc::new(FlakyDeletes {
        inner: memory(),
        fails: 2.into(),
        deletes: 0.into(),
    });
    let store: Arc<dyn BlobStore> = flaky.clone();
    let server = TestServer::start_configured(ctx, {
        let store = store.clone();
        |s| s.with_blobs(store)
    })
    .await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let org = c.org.clone().unwrap();
    let agent_id = agent(&c).await;
    let (refused, renewed) = (
        call(ctx, &c, &agent_id, 0).await,
        call(ctx, &c, &agent_id, 0).await,
    );
    upload(&c, &refused, 10).await;
    upload(&c, &renewed, 10).await;
    for path in [
        format!("/api/calls/{refused}"),
        format!("/api/calls/{renewed}/recording"),
    ] {
        assert_eq!(c.send(Method::DELETE, &path, None).await.0, StatusCode::OK);
    }
    upload(&c, &renewed, 20).await;
    assert_eq!(blob_jobs(ctx).await, 2, "nothing runs the jobs yet");

    let runner = Service::clone(&ctx.service)
        .with_blobs(store.clone())
        .job_runner(RunnerConfig {
            worker: "w1".to_owned(),
            idle_check: Duration::from_millis(20),
            backoff_base: Duration::from_millis(20),
            backoff_max: Duration::from_millis(100),
            ..RunnerConfig::default()
        });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    // The retries are due by the runner's clock, which the test clock holds still: move it.
    eventually("both file jobs are done", || async {
        ctx.clock.advance(1);
        blob_jobs(ctx).await == 0
    })
    .await;
    gone(&store, &format!("recordings/{org}/{refused}.wav")).await;
    assert_eq!(flaky.deletes.load(std::sync::atomic::Ordering::SeqCst), 3);
    let meta = store
        .stat(&format!("recordings/{org}/{renewed}.wav"))
        .await
        .unwrap()
        .expect("the new recording is kept");
    assert_eq!(meta.size, 20);
    stop.send(()).unwrap();
    task.await.unwrap();
    server.stop().await;
}

db_tests!(
    file_deletes_are_retried_and_spare_a_new_upload,
    deleting_calls_and_recordings,
    retention_removes_what_is_older_than_each_policy,
    the_sweep_removes_a_backlog_in_batches,
    retention_settings_are_validated,
    created_at_is_for_admins_and_not_in_the_future,
);
