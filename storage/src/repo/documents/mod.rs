//! Knowledge-base documents: insert, read, update, delete, reprocess, and the writes of
//! processing; their chunks and the search over them are in `chunks`.

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect,
    TransactionTrait,
};
use voiceplane_core::Result;
use voiceplane_core::jobs::NewJob;
use voiceplane_core::model::{
    AuditedChange, ChunkVector, Document, DocumentSource, Event, EventStamp, NewChunk,
    ProcessingStatus, SearchHit,
};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::{Change, DocumentRepository};
use voiceplane_core::time::Timestamp;

use super::{agents, all, jobs, keyset, lock_org, record_audit, record_event};

mod chunks;

use crate::SeaRepository;
use crate::convert::{db_err, enum_str, parse_enum, ts, ts_opt};
use crate::entity::{chunk, document};

fn document_from(m: document::Model) -> Result<Document> {
    Ok(Document {
        doc_type: parse_enum("kb_documents.doc_type", &m.doc_type)?,
        processing_status: parse_enum("kb_documents.processing_status", &m.processing_status)?,
        documentation_id: m.documentation_id,
        name: m.name,
        organization_id: m.organization_id,
        storage_key: m.storage_key,
        storage_uri: m.storage_uri,
        content_type: m.content_type,
        size: m.size,
        filename: m.filename,
        page_count: m.page_count,
        vector_count: m.vector_count,
        last_processed_at: ts_opt(m.last_processed_at),
        processing_error: m.processing_error,
        created_at: ts(m.created_at),
        updated_at: ts(m.updated_at),
    })
}

fn document_row(d: &Document, text: Option<&str>) -> document::ActiveModel {
    document::ActiveModel {
        documentation_id: Set(d.documentation_id.clone()),
        organization_id: Set(d.organization_id.clone()),
        name: Set(d.name.clone()),
        doc_type: Set(enum_str(&d.doc_type)),
        storage_key: Set(d.storage_key.clone()),
        storage_uri: Set(d.storage_uri.clone()),
        content_type: Set(d.content_type.clone()),
        size: Set(d.size),
        filename: Set(d.filename.clone()),
        processing_status: Set(enum_str(&d.processing_status)),
        page_count: Set(d.page_count),
        vector_count: Set(d.vector_count),
        last_processed_at: Set(d.last_processed_at.map(Timestamp::as_micros)),
        processing_error: Set(d.processing_error.clone()),
        processing_job: sea_orm::ActiveValue::NotSet,
        text_content: Set(text.map(str::to_owned)),
        created_at: Set(d.created_at.as_micros()),
        updated_at: Set(d.updated_at.as_micros()),
    }
}

#[async_trait]
impl DocumentRepository for SeaRepository {
    async fn document_insert(
        &self,
        d: &Document,
        text: Option<&str>,
        event: &Event,
        job: &NewJob,
    ) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let mut row = document_row(d, text);
        row.processing_job = Set(Some(job.job_id.clone()));
        document::Entity::insert(row)
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, &d.organization_id, event).await?;
        jobs::enqueue(&txn, job, d.created_at).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn document_get(&self, organization_id: &str, id: &str) -> Result<Option<Document>> {
        Ok(find(&self.db, organization_id, id)
            .await?
            .map(|(doc, _)| doc))
    }

    async fn document_list(
        &self,
        organization_id: &str,
        page: &PageQuery,
    ) -> Result<Vec<Document>> {
        let select =
            document::Entity::find().filter(document::Column::OrganizationId.eq(organization_id));
        all(
            &self.db,
            keyset(
                select,
                document::Column::CreatedAt,
                document::Column::DocumentationId,
                page,
            ),
            document_from,
        )
        .await
    }

    async fn document_update(
        &self,
        organization_id: &str,
        id: &str,
        change: Change<'_, Document>,
        audit: &AuditedChange,
    ) -> Result<Option<Document>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some(before) = document::Entity::find_by_id(id.to_owned())
            .filter(document::Column::OrganizationId.eq(organization_id))
            .lock_exclusive()
            .one(&txn)
            .await
            .map_err(db_err)?
            .map(document_from)
            .transpose()?
        else {
            return Ok(None);
        };
        let d = audit.change(&before, change)?;
        // The name only: processing may be writing the other fields at the same time.
        document::Entity::update_many()
            .col_expr(document::Column::Name, Expr::value(d.name.clone()))
            .col_expr(
                document::Column::UpdatedAt,
                Expr::value(d.updated_at.as_micros()),
            )
            .filter(document::Column::DocumentationId.eq(&d.documentation_id))
            .filter(document::Column::OrganizationId.eq(&d.organization_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        let entry = audit.entry(id, Some(&before), Some(&d))?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(d))
    }

    async fn document_delete(
        &self,
        organization_id: &str,
        id: &str,
        event: &EventStamp,
    ) -> Result<Option<Document>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let Some((doc, owner)) = find(&txn, organization_id, id).await? else {
            return Ok(None);
        };
        // Chunks first: their full-text index is kept by triggers on their own deletes.
        chunk::Entity::delete_many()
            .filter(chunk::Column::DocumentationId.eq(id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        document::Entity::delete_by_id(id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if let Some(job_id) = owner {
            jobs::cancel(&txn, &job_id).await?;
        }
        agents::remove_reference(&txn, organization_id, agents::Refs::Documents, id).await?;
        record_event(&txn, organization_id, &event.with(&doc)?).await?;
        txn.commit().await.map_err(db_err)?;
        self.agents_changed().await;
        Ok(Some(doc))
    }

    async fn document_reprocess(
        &self,
        organization_id: &str,
        id: &str,
        job: &NewJob,
        now: Timestamp,
        audit: &AuditedChange,
    ) -> Result<Option<Document>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let Some((before, _)) = find(&txn, organization_id, id).await? else {
            return Ok(None);
        };
        if !take_document(&txn, id, None).await? {
            return Ok(None);
        }
        let Some((mut doc, owner)) = find(&txn, organization_id, id).await? else {
            return Ok(None);
        };
        if let Some(previous) = owner {
            jobs::cancel(&txn, &previous).await?;
        }
        doc.processing_status = ProcessingStatus::Pending;
        doc.processing_error = None;
        doc.updated_at = now.max(doc.updated_at);
        document::Entity::update_many()
            .col_expr(
                document::Column::ProcessingStatus,
                Expr::value(enum_str(&doc.processing_status)),
            )
            .col_expr(
                document::Column::ProcessingError,
                Expr::value(Option::<String>::None),
            )
            .col_expr(
                document::Column::ProcessingJob,
                Expr::value(job.job_id.clone()),
            )
            .col_expr(
                document::Column::UpdatedAt,
                Expr::value(doc.updated_at.as_micros()),
            )
            .filter(document::Column::DocumentationId.eq(id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        jobs::enqueue(&txn, job, now).await?;
        let entry = audit.entry(id, Some(&before), Some(&doc))?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(doc))
    }

    async fn document_processing_start(
        &self,
        id: &str,
        job_id: &str,
        now: Timestamp,
    ) -> Result<Option<DocumentSource>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        if !take_document(&txn, id, Some(job_id)).await? {
            return Ok(None);
        }
        let Some(row) = document::Entity::find_by_id(id.to_owned())
            .one(&txn)
            .await
            .map_err(db_err)?
        else {
            return Ok(None);
        };
        let text = row.text_content.clone();
        let mut doc = document_from(row)?;
        let previous_status = doc.processing_status;
        doc.processing_status = ProcessingStatus::Processing;
        doc.updated_at = now.max(doc.updated_at);
        document::Entity::update_many()
            .col_expr(
                document::Column::ProcessingStatus,
                Expr::value(enum_str(&doc.processing_status)),
            )
            .col_expr(
                document::Column::UpdatedAt,
                Expr::value(doc.updated_at.as_micros()),
            )
            .filter(document::Column::DocumentationId.eq(id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(DocumentSource {
            document: doc,
            text,
            previous_status,
        }))
    }

    async fn document_processing_finish(
        &self,
        d: &Document,
        job_id: &str,
        new_chunks: &[NewChunk],
        event: &Event,
    ) -> Result<bool> {
        let txn = self.db.begin().await.map_err(db_err)?;
        let done = document::Entity::update_many()
            .col_expr(
                document::Column::ProcessingStatus,
                Expr::value(enum_str(&d.processing_status)),
            )
            .col_expr(
                document::Column::ProcessingError,
                Expr::value(d.processing_error.clone()),
            )
            .col_expr(document::Column::PageCount, Expr::value(d.page_count))
            .col_expr(document::Column::VectorCount, Expr::value(d.vector_count))
            .col_expr(
                document::Column::LastProcessedAt,
                Expr::value(d.last_processed_at.map(Timestamp::as_micros)),
            )
            .col_expr(
                document::Column::UpdatedAt,
                Expr::value(d.updated_at.as_micros()),
            )
            .filter(document::Column::DocumentationId.eq(&d.documentation_id))
            .filter(document::Column::ProcessingJob.eq(job_id))
            .exec(&txn)
            .await
            .map_err(db_err)?;
        if done.rows_affected == 0 {
            // Deleted, or handed to another job while this one ran: nothing of it is kept.
            return Ok(false);
        }
        chunks::replace(&txn, d, new_chunks).await?;
        record_event(&txn, &d.organization_id, event).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn chunk_search(
        &self,
        organization_id: &str,
        terms: &[String],
        document_ids: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<SearchHit>> {
        chunks::search(&self.db, organization_id, terms, document_ids, limit).await
    }

    async fn chunk_vectors(
        &self,
        organization_id: &str,
        document_ids: Option<&[String]>,
        limit: u32,
    ) -> Result<Vec<ChunkVector>> {
        chunks::vectors(&self.db, organization_id, document_ids, limit).await
    }
}

/// Takes the write lock of the document's row before reading it (a no-op write: the row lock
/// on Postgres, the database write lock on SQLite). A SQLite transaction that reads first and
/// writes later fails with "database is locked" when another connection wrote in between;
/// one that writes first waits its turn instead. `false`: no such document, or (with
/// `job_id`) another job owns its processing.
async fn take_document<C: ConnectionTrait>(db: &C, id: &str, job_id: Option<&str>) -> Result<bool> {
    let mut update = document::Entity::update_many()
        .col_expr(
            document::Column::ProcessingJob,
            Expr::col(document::Column::ProcessingJob),
        )
        .filter(document::Column::DocumentationId.eq(id));
    if let Some(job_id) = job_id {
        update = update.filter(document::Column::ProcessingJob.eq(job_id));
    }
    let done = update.exec(db).await.map_err(db_err)?;
    Ok(done.rows_affected > 0)
}

/// The document, if it is the organization's, with the job that owns its processing: one
/// read of the row.
async fn find<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    id: &str,
) -> Result<Option<(Document, Option<String>)>> {
    let Some(row) = document::Entity::find_by_id(id.to_owned())
        .filter(document::Column::OrganizationId.eq(organization_id))
        .one(db)
        .await
        .map_err(db_err)?
    else {
        return Ok(None);
    };
    let owner = row.processing_job.clone();
    Ok(Some((document_from(row)?, owner)))
}
