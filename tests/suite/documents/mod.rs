//! Knowledge-base documents (`/api/knowledge-base`): created, viewed, updated and deleted
//! through `Service` (`crud`); and processed through the HTTP API with a job runner beside the
//! server: each type extracted and chunked, failures that end `failed` (`processing`),
//! embeddings from a fake OpenAI-compatible upstream (`embeddings`), reprocessing, crashes,
//! and search (`search`). This file holds what the processing modules share.

mod crud;
mod embeddings;
mod processing;
mod search;

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::Service;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::knowledge::{DocumentProcessor, Embedder};
use voiceplane_extract::{Limits, Processor};
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::*;

/// The processor the binary uses, with small caps for the tests that reach them.
pub(super) fn processor() -> Arc<dyn DocumentProcessor> {
    Arc::new(Processor::new(Limits {
        max_pages: 20,
        max_bytes: 256 * 1024,
        ..Limits::default()
    }))
}

/// A runner of `service`'s jobs that checks often; stop it by sending on the channel.
pub(super) fn spawn_runner(
    service: &Service,
    worker: &str,
    lease: Duration,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let runner = service.job_runner(RunnerConfig {
        worker: worker.to_owned(),
        lease,
        idle_check: Duration::from_millis(50),
        backoff_base: Duration::from_millis(50),
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    (stop, task)
}

/// `ctx`'s service with an object store, a document processor and, optionally, embeddings.
pub(super) fn configured(
    ctx: &TestContext,
    processor: Arc<dyn DocumentProcessor>,
    embedder: Option<Arc<dyn Embedder>>,
) -> Service {
    let blobs = OpendalBlobStore::new(BlobConfig::Memory).expect("memory store opens");
    let service = Service::clone(&ctx.service)
        .with_blobs(Arc::new(blobs))
        .with_document_processor(processor, Duration::from_secs(20));
    match embedder {
        Some(embedder) => service.with_embedder(embedder),
        None => service,
    }
}

/// A server and a job runner over one configured service, and an admin's caller.
pub(super) struct Kb {
    pub(super) server: TestServer,
    pub(super) c: ApiCaller,
    runner: Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    )>,
}

impl Kb {
    pub(super) async fn start(ctx: &TestContext, embedder: Option<Arc<dyn Embedder>>) -> Self {
        Self::start_with(ctx, configured(ctx, processor(), embedder), true).await
    }

    /// Serves `service`, with a runner when `run_jobs`.
    pub(super) async fn start_with(ctx: &TestContext, service: Service, run_jobs: bool) -> Self {
        let served = service.clone();
        let server = TestServer::start_configured(ctx, move |_| served).await;
        let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
        let runner = run_jobs.then(|| spawn_runner(&service, "kb-runner", Duration::from_secs(30)));
        Self { server, c, runner }
    }

    /// Uploads `bytes` as the file `filename` declared as `content_type`.
    pub(super) async fn upload(
        &self,
        c: &ApiCaller,
        filename: &str,
        content_type: &str,
        bytes: &[u8],
    ) -> (StatusCode, Value) {
        let (multipart, body) = multipart_document(None, filename, content_type, bytes);
        let resp = c
            .request(Method::POST, "/api/knowledge-base")
            .header("Content-Type", multipart)
            .body(body)
            .send()
            .await
            .expect("upload is answered");
        read_json(resp).await
    }

    /// Uploads a file that must be accepted; returns its id.
    pub(super) async fn file(&self, filename: &str, content_type: &str, bytes: &[u8]) -> String {
        let (status, v) = self.upload(&self.c, filename, content_type, bytes).await;
        assert_eq!(status, StatusCode::CREATED, "{filename}: {v}");
        v["data"]["documentation_id"]
            .as_str()
            .expect("an id")
            .to_owned()
    }

    /// Creates a text document as `c`; returns its id.
    pub(super) async fn text(c: &ApiCaller, name: &str, text: &str) -> String {
        let doc = c
            .create("/api/knowledge-base", json!({"name": name, "text": text}))
            .await;
        doc["documentation_id"].as_str().expect("an id").to_owned()
    }

    /// The document once processing has ended, `completed` or `failed`.
    pub(super) async fn settled(&self, id: &str) -> Value {
        settled(&self.c, id).await
    }

    /// `POST /api/knowledge-base/search` as `c`.
    pub(super) async fn search(c: &ApiCaller, body: Value) -> (StatusCode, Value) {
        c.post("/api/knowledge-base/search", body).await
    }

    pub(super) async fn stop(mut self) {
        if let Some((stop, task)) = self.runner.take() {
            let _ = stop.send(());
            task.await.expect("runner ends");
        }
        self.server.stop().await;
    }
}

/// The document `id` as `c` sees it once processing has ended.
pub(super) async fn settled(c: &ApiCaller, id: &str) -> Value {
    let path = format!("/api/knowledge-base/{id}");
    eventually(&format!("{id} is processed"), || async {
        let (_, v) = c.get(&path).await;
        matches!(
            v["data"]["processing_status"].as_str(),
            Some("completed" | "failed")
        )
    })
    .await;
    let (status, v) = c.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    v["data"].clone()
}
