//! Document processing: the durable job that turns a document into chunks (and vectors, with
//! an embeddings provider), and reprocessing.
//!
//! A document's processing is owned by one job at a time (`processing_job` in the database):
//! creating or reprocessing a document writes a new job in the same transaction, and a job
//! that no longer owns its document (deleted, or reprocessed while it ran) writes nothing.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};

use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::jobs::{Done, Job, JobError, JobHandler, NewJob, new_job_id};
use crate::knowledge::{self, DocumentProcessor, Embedder};
use crate::model::{Document, DocumentType, EventType, NewChunk, ProcessingStatus};
use crate::role::Permission;
use crate::service::{By, Service};

/// The kind of the job that processes a document.
pub const DOCUMENT_PROCESS: &str = "document.process";

/// Attempts of a processing job; the last one fails the document if the ones before it all
/// ended without a result (a runner that died, a store that did not answer).
const PROCESS_ATTEMPTS: u32 = 5;

/// Delays between the attempts of an embeddings request: a few quick retries, so that a
/// provider outage costs a document seconds, not the job's whole backoff.
const EMBED_RETRY_DELAYS: [Duration; 4] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// After this long without embeddings, a document completes without vectors: an outage of
/// the provider never keeps a document `processing` for more than 30 s (DESIGN §12).
const EMBED_BUDGET: Duration = Duration::from_secs(20);

/// What processing needs besides the repository: the parsers and, optionally, the provider.
#[derive(Clone, Default)]
pub(in crate::service) struct Knowledge {
    pub(in crate::service) processor: Option<Arc<dyn DocumentProcessor>>,
    pub(in crate::service) embedder: Option<Arc<dyn Embedder>>,
}

/// Why a run ended without chunks.
enum Failure {
    /// The document itself is the problem: it ends `failed` with this sentence.
    Document(String),
    /// Something around it did not answer: worth another attempt.
    Transient(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Transient(e)
    }
}

/// Runs [`DOCUMENT_PROCESS`] jobs.
pub(in crate::service) struct ProcessDocument(pub(in crate::service) Service);

#[async_trait]
impl JobHandler for ProcessDocument {
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError> {
        self.0.document_process(job).await
    }

    /// Parsing has its own limit; embeddings theirs ([`EMBED_BUDGET`] plus one request).
    fn timeout(&self) -> Option<Duration> {
        Some(self.0.knowledge_timeout + EMBED_BUDGET + Duration::from_secs(30))
    }
}

impl Service {
    /// Parses knowledge-base files with `processor`; without one, documents wait `pending` for
    /// an instance that has one.
    pub fn with_document_processor(
        mut self,
        processor: Arc<dyn DocumentProcessor>,
        timeout: Duration,
    ) -> Self {
        self.knowledge.processor = Some(processor);
        self.knowledge_timeout = timeout;
        self
    }

    /// Embeds chunks and search queries with `embedder`.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.knowledge.embedder = Some(embedder);
        self
    }

    /// A job that processes the document, to write with the change that calls for it.
    pub(in crate::service) fn processing_job(&self, documentation_id: &str) -> NewJob {
        NewJob {
            job_id: new_job_id(),
            kind: DOCUMENT_PROCESS.to_owned(),
            payload: serde_json::json!({ "documentation_id": documentation_id }),
            run_at: self.now(),
            max_attempts: PROCESS_ATTEMPTS,
            unique_key: None,
        }
    }

    /// Processes a document again from its stored content: back to `pending` at once, then
    /// through `processing` to `completed` or `failed`. A run in progress is superseded.
    pub async fn document_reprocess(
        &self,
        actor: &Actor,
        documentation_id: &str,
    ) -> Result<Document> {
        actor.require(Permission::KbWrite)?;
        let id = IdKind::Document.parse(documentation_id)?;
        let job = self.processing_job(&id);
        // The audit entry says what reprocessing resets, from the document as the write
        // reads it.
        let audit = self.audited_change(actor, "document.reprocess", "document");
        let doc = self
            .repo
            .document_reprocess(&actor.organization_id, &id, &job, self.now(), &audit)
            .await?
            .ok_or_else(|| Error::not_found(format!("knowledge-base document {id} not found")))?;
        self.jobs.wake();
        Ok(doc)
    }

    /// One run of a [`DOCUMENT_PROCESS`] job.
    async fn document_process(&self, job: &Job) -> std::result::Result<Done, JobError> {
        let Some(id) = job.payload["documentation_id"].as_str() else {
            return Err(JobError::Fail("the job names no document".to_owned()));
        };
        let Some(source) = self
            .repo
            .document_processing_start(id, &job.job_id, self.now())
            .await?
        else {
            // Deleted, or reprocessed by another job.
            return Ok(Done::Finished);
        };
        let doc = source.document;
        let last = job.attempts >= job.max_attempts;
        if last && source.previous_status == ProcessingStatus::Processing {
            // Every attempt before this one ended without a result: whatever kills the run
            // would kill this one too.
            return self
                .document_finish(
                    doc,
                    job,
                    Err(
                        "processing was interrupted repeatedly; reprocess the document to \
                         try again"
                            .to_owned(),
                    ),
                )
                .await;
        }
        let result = match self.read_and_chunk(&doc, source.text).await {
            Ok(done) => Ok(done),
            Err(Failure::Document(sentence)) => Err(sentence),
            Err(Failure::Transient(e)) if !last => return Err(JobError::Retry(e.to_string())),
            Err(Failure::Transient(e)) => {
                tracing::warn!(documentation_id = %doc.documentation_id, error = %e, "document processing gave up");
                Err(
                    "the document's content could not be read; reprocess the document to \
                     try again"
                        .to_owned(),
                )
            }
        };
        self.document_finish(doc, job, result).await
    }

    /// Records the end of a run: `completed` with its pages and chunks, or `failed` with the
    /// sentence, with the `document.processed` event.
    async fn document_finish(
        &self,
        mut doc: Document,
        job: &Job,
        result: std::result::Result<(u32, Vec<NewChunk>), String>,
    ) -> std::result::Result<Done, JobError> {
        let now = self.now();
        let chunks = match result {
            Ok((pages, chunks)) => {
                doc.processing_status = ProcessingStatus::Completed;
                doc.processing_error = None;
                doc.page_count = Some(i64::from(pages));
                doc.vector_count = Some(
                    i64::try_from(chunks.iter().filter(|c| c.embedding.is_some()).count())
                        .unwrap_or(i64::MAX),
                );
                chunks
            }
            Err(sentence) => {
                doc.processing_status = ProcessingStatus::Failed;
                doc.processing_error = Some(sentence);
                doc.vector_count = Some(0);
                Vec::new()
            }
        };
        doc.last_processed_at = Some(now);
        doc.updated_at = now.max(doc.updated_at);
        let event = self.event(EventType::DocumentProcessed, &doc, By::System)?;
        if self.after_write(
            self.repo
                .document_processing_finish(&doc, &job.job_id, &chunks, &event)
                .await,
        )? {
            tracing::info!(
                documentation_id = %doc.documentation_id,
                status = ?doc.processing_status,
                chunks = chunks.len(),
                "document processed"
            );
        }
        Ok(Done::Finished)
    }

    /// The document's pages and chunks, embedded when a provider is configured.
    async fn read_and_chunk(
        &self,
        doc: &Document,
        text: Option<String>,
    ) -> std::result::Result<(u32, Vec<NewChunk>), Failure> {
        let processor = self
            .knowledge
            .processor
            .clone()
            .ok_or_else(|| Error::Unavailable("no document processor".to_owned()))?;
        let (media_type, bytes) = match doc.doc_type {
            DocumentType::Text => (
                knowledge::TEXT_PLAIN,
                Bytes::from(text.unwrap_or_default().into_bytes()),
            ),
            DocumentType::File => {
                let media_type =
                    knowledge::media_type_of(&doc.content_type, doc.filename.as_deref())
                        .ok_or_else(|| {
                            Failure::Document(format!(
                                "files of type {} cannot be processed; upload text, Markdown, \
                             HTML or PDF",
                                doc.content_type
                            ))
                        })?;
                (
                    media_type,
                    self.read_file(doc, processor.max_bytes()).await?,
                )
            }
        };
        let extracted = processor
            .extract(media_type, bytes)
            .await
            .map_err(Failure::Document)?;
        let texts = processor.chunk(&extracted.text);
        if texts.is_empty() {
            return Err(Failure::Document(
                "the document contains no text to index".to_owned(),
            ));
        }
        let vectors = match &self.knowledge.embedder {
            Some(embedder) => embed_with_retries(embedder.as_ref(), &texts, doc).await,
            None => None,
        };
        let mut vectors = vectors.map(Vec::into_iter);
        let chunks = texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| NewChunk {
                chunk_index: i64::try_from(i).unwrap_or(i64::MAX),
                text,
                embedding: vectors.as_mut().and_then(Iterator::next),
            })
            .collect();
        Ok((extracted.pages, chunks))
    }

    /// A document's file, or its first `max_bytes` + 1 bytes when it is longer: enough for
    /// the processor to refuse it without holding all of it.
    async fn read_file(
        &self,
        doc: &Document,
        max_bytes: u64,
    ) -> std::result::Result<Bytes, Failure> {
        let key = doc
            .storage_key
            .as_deref()
            .ok_or_else(|| Failure::Document("the document has no file".to_owned()))?;
        let read = match self.blobs()?.get(key, None).await {
            Ok(read) => read,
            Err(Error::NotFound(_)) => {
                return Err(Failure::Document(
                    "the document's file is missing from storage; upload it again".to_owned(),
                ));
            }
            Err(e) => return Err(e.into()),
        };
        let mut body = read.body;
        let cap = usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX);
        let mut buf = BytesMut::with_capacity(usize::try_from(read.size).unwrap_or(0).min(cap));
        while let Some(chunk) = poll_fn(|cx| body.as_mut().poll_next(cx)).await {
            let chunk = chunk?;
            let room = cap - buf.len();
            buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if buf.len() == cap {
                break;
            }
        }
        Ok(buf.freeze())
    }
}

/// The vectors of `texts`, or `None` once [`EMBED_BUDGET`] is spent on failed attempts: the
/// document then completes without vectors (a later reprocess adds them).
async fn embed_with_retries(
    embedder: &dyn Embedder,
    texts: &[String],
    doc: &Document,
) -> Option<Vec<Vec<f32>>> {
    let started = tokio::time::Instant::now();
    let mut delays = EMBED_RETRY_DELAYS.iter();
    loop {
        let error = match embedder.embed(texts).await {
            Ok(vectors) if vectors.len() == texts.len() => return Some(vectors),
            Ok(_) => Error::Upstream("the embeddings provider skipped inputs".to_owned()),
            Err(e) => e,
        };
        match delays.next() {
            Some(delay) if started.elapsed() + *delay < EMBED_BUDGET => {
                tokio::time::sleep(*delay).await;
            }
            _ => {
                tracing::warn!(documentation_id = %doc.documentation_id, %error, "document indexed without vectors: embeddings failed");
                return None;
            }
        }
    }
}
