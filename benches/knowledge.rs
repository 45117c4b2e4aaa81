//! Benchmark (not a test) of knowledge-base processing and search, on SQLite and, when
//! `VOICEPLANE_TEST_POSTGRES_URL` is set, on Postgres:
//!
//! 1. processing: a 100-page PDF (about 1,500 characters a page) from upload to `completed`
//!    through the durable job, without embeddings, in pages per second; side by side with the
//!    extraction alone (the parser's share of it);
//! 2. search: latency p50/p99 of `document_search` over 10,000 chunks (100 documents of 100
//!    chunks) for one to three words, side by side with `document_view` (one indexed read).
//!
//! ```sh
//! cargo bench --bench knowledge
//! VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench knowledge
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sea_orm::ConnectionTrait;
use voiceplane_core::auth::Actor;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::knowledge::{APPLICATION_PDF, DocumentProcessor};
use voiceplane_core::model::{DocumentSearch, NewTextDocument, ProcessingStatus};
use voiceplane_core::service::NewDocument;
use voiceplane_core::{Result, Service};
use voiceplane_extract::{Limits, Processor};
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::TestContext;
use voiceplane_suite::pdf::pdf_with_pages;
use voiceplane_suite::sample::{Words, ms, percentile};

const PDF_PAGES: usize = 100;
const PDF_RUNS: usize = 5;
const DOCUMENTS: usize = 100;
const CHUNKS_PER_DOCUMENT: usize = 100;
const SEARCHES: usize = 500;

/// The whole body as one chunk of a stream.
struct Once(Option<Bytes>);

impl futures_core::Stream for Once {
    type Item = Result<Bytes>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.take().map(Ok))
    }
}

async fn settle(service: &Service, admin: &Actor, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let doc = service.document_view(admin, id).await.unwrap();
        match doc.processing_status {
            ProcessingStatus::Completed => return,
            ProcessingStatus::Failed => panic!("{id} failed: {:?}", doc.processing_error),
            _ => {}
        }
        assert!(Instant::now() < deadline, "{id} was not processed");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn run(ctx: &TestContext, name: &str) {
    let processor = Arc::new(Processor::new(Limits::default()));
    let service = Service::clone(&ctx.service)
        .with_blobs(Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap()))
        .with_document_processor(processor.clone(), Duration::from_secs(60));
    let runner = service.job_runner(RunnerConfig {
        idle_check: Duration::from_millis(20),
        ..RunnerConfig::default()
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runner.run(async move {
        let _ = stopped.await;
    }));
    let admin = ctx.admin("Bench").await;

    // 1. A 100-page PDF through the job, and the extraction alone.
    let mut words = Words(0x9e37_79b9_7f4a_7c15);
    let pages: Vec<String> = (0..PDF_PAGES)
        .map(|_| {
            let mut page = String::new();
            while page.len() < 1500 {
                page.push_str(&words.sentence());
                page.push(' ');
            }
            page
        })
        .collect();
    let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
    let pdf = Bytes::from(pdf_with_pages(&pages));
    let (mut job, mut alone) = (Vec::new(), Vec::new());
    for _ in 0..PDF_RUNS {
        let started = Instant::now();
        let extracted = processor
            .extract(APPLICATION_PDF, pdf.clone())
            .await
            .unwrap();
        assert_eq!(extracted.pages as usize, PDF_PAGES);
        alone.push(started.elapsed());

        let started = Instant::now();
        let doc = service
            .document_create(
                &admin,
                NewDocument::File {
                    name: None,
                    later_name: None,
                    filename: "manual.pdf".into(),
                    content_type: APPLICATION_PDF.into(),
                    body: Box::pin(Once(Some(pdf.clone()))),
                },
            )
            .await
            .unwrap();
        settle(&service, &admin, &doc.documentation_id).await;
        job.push(started.elapsed());
    }
    job.sort();
    alone.sort();
    let pps = |d: Duration| PDF_PAGES as f64 / d.as_secs_f64();
    println!(
        "{name}: 100-page PDF ({} KiB): upload to completed {} median = {:.0} pages/s; \
         extraction alone {} = {:.0} pages/s",
        pdf.len() / 1024,
        ms(job[PDF_RUNS / 2]),
        pps(job[PDF_RUNS / 2]),
        ms(alone[PDF_RUNS / 2]),
        pps(alone[PDF_RUNS / 2]),
    );

    // 2. Search over 10,000 chunks. Paragraphs of ~750 characters make one chunk each.
    let org = ctx.admin("Search bench").await;
    let started = Instant::now();
    let mut ids = Vec::new();
    for d in 0..DOCUMENTS {
        let text: Vec<String> = (0..CHUNKS_PER_DOCUMENT)
            .map(|_| {
                let mut p = String::new();
                while p.len() < 700 {
                    p.push_str(&words.sentence());
                    p.push(' ');
                }
                p
            })
            .collect();
        let doc = service
            .document_create_text(
                &org,
                NewTextDocument {
                    name: format!("doc {d}"),
                    text: text.join("\n\n"),
                },
            )
            .await
            .unwrap();
        ids.push(doc.documentation_id);
    }
    for id in &ids {
        settle(&service, &org, id).await;
    }
    let chunks = ctx
        .repo
        .connection()
        .query_one_raw(sea_orm::Statement::from_string(
            ctx.repo.connection().get_database_backend(),
            "SELECT COUNT(*) FROM kb_chunks".to_owned(),
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index::<i64>(0)
        .unwrap();
    println!(
        "{name}: {DOCUMENTS} documents, {chunks} chunks in all, processed and indexed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (mut search, mut view) = (Vec::new(), Vec::new());
    let mut hits = 0usize;
    for i in 0..SEARCHES {
        let query: Vec<String> = (0..1 + i % 3).map(|_| words.word()).collect();
        let started = Instant::now();
        let found = service
            .document_search(
                &org,
                DocumentSearch {
                    query: query.join(" "),
                    document_ids: None,
                    limit: Some(5),
                },
            )
            .await
            .unwrap();
        search.push(started.elapsed());
        hits += found.len();
        let started = Instant::now();
        service
            .document_view(&org, &ids[i % ids.len()])
            .await
            .unwrap();
        view.push(started.elapsed());
    }
    search.sort();
    view.sort();
    println!(
        "{name}: search over {chunks} chunks, {SEARCHES} queries of 1-3 words (mean {:.1} hits): \
         p50 {} p99 {}; reference document_view p50 {} p99 {}",
        hits as f64 / SEARCHES as f64,
        ms(percentile(&search, 0.5)),
        ms(percentile(&search, 0.99)),
        ms(percentile(&view, 0.5)),
        ms(percentile(&view, 0.99)),
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let ctx = TestContext::sqlite().await;
    run(&ctx, "sqlite").await;
    ctx.cleanup().await;
    if let Some(ctx) = TestContext::postgres("knowledge bench").await {
        run(&ctx, "postgres").await;
        ctx.cleanup().await;
    }
}
