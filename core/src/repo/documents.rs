//! The database side of knowledge-base documents and their chunks: [`DocumentRepository`].

use async_trait::async_trait;

use super::Change;
use crate::error::Result;
use crate::jobs::NewJob;
use crate::model::{
    AuditedChange, ChunkVector, Document, DocumentSource, Event, EventStamp, NewChunk, SearchHit,
};
use crate::page::PageQuery;
use crate::time::Timestamp;

/// Knowledge-base documents and their chunks.
#[async_trait]
pub trait DocumentRepository: Send + Sync {
    /// Stores a new document (`text` is the content of text documents) with its event and the
    /// job that processes it, which from then on owns its processing.
    async fn document_insert(
        &self,
        document: &Document,
        text: Option<&str>,
        event: &Event,
        job: &NewJob,
    ) -> Result<()>;
    /// The document, if it belongs to the organization.
    async fn document_get(
        &self,
        organization_id: &str,
        documentation_id: &str,
    ) -> Result<Option<Document>>;
    /// Up to `page.fetch()` documents after the cursor, newest first.
    async fn document_list(&self, organization_id: &str, page: &PageQuery)
    -> Result<Vec<Document>>;
    /// Applies `change` to the document's name and `updated_at` (processing may be writing
    /// the other fields), with its audit entry; `None` when there is no such document.
    async fn document_update(
        &self,
        organization_id: &str,
        documentation_id: &str,
        change: Change<'_, Document>,
        audit: &AuditedChange,
    ) -> Result<Option<Document>>;
    /// Deletes the document, its chunks and its processing job, and removes it from every
    /// agent's `kb_document_ids`, atomically, with `event` carrying the document as it was.
    async fn document_delete(
        &self,
        organization_id: &str,
        documentation_id: &str,
        event: &EventStamp,
    ) -> Result<Option<Document>>;
    /// Puts the document back to `pending` (no error, processed fields kept) and hands its
    /// processing to `job`, written in the same transaction; the job that owned it before is
    /// cancelled. `None` when the document is not the organization's.
    async fn document_reprocess(
        &self,
        organization_id: &str,
        documentation_id: &str,
        job: &NewJob,
        now: Timestamp,
        audit: &AuditedChange,
    ) -> Result<Option<Document>>;
    /// Marks the document `processing` and returns what processing reads, if `job_id` still
    /// owns its processing; `None` when the document is gone or another job took over.
    async fn document_processing_start(
        &self,
        documentation_id: &str,
        job_id: &str,
        now: Timestamp,
    ) -> Result<Option<DocumentSource>>;
    /// Writes the end of processing (`document`'s status, counts, error and times), replaces
    /// the document's chunks with `chunks`, and records `event`, atomically, if `job_id` still
    /// owns its processing; returns whether it did.
    async fn document_processing_finish(
        &self,
        document: &Document,
        job_id: &str,
        chunks: &[NewChunk],
        event: &Event,
    ) -> Result<bool>;
    /// The organization's chunks that contain any of `terms` (see
    /// [`crate::knowledge::search_terms`]), best lexical match first, with a score in `(0, 1)`;
    /// only chunks of `document_ids` when given.
    async fn chunk_search(
        &self,
        organization_id: &str,
        terms: &[String],
        document_ids: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<SearchHit>>;
    /// The organization's chunks that have an embedding (only of `document_ids` when given),
    /// at most `limit`.
    async fn chunk_vectors(
        &self,
        organization_id: &str,
        document_ids: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<ChunkVector>>;
}
