//! Files of deleted recordings: deleted by a durable job, retried until the store accepts.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use voiceplane_core::Service;
use voiceplane_core::blob::BlobStore;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_suite::{ApiCaller, TestContext, TestServer, db_tests, eventually};

use super::{agent, call, gone, memory, upload};

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

db_tests!(file_deletes_are_retried_and_spare_a_new_upload);
