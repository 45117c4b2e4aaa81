//! Knowledge-base documents.

use async_trait::async_trait;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, TransactionTrait};
use voiceplane_core::Result;
use voiceplane_core::model::{Document, Event, EventStamp};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::DocumentRepository;
use voiceplane_core::time::Timestamp;

use super::{agents, all, keyset, lock_org, one, record_event};
use crate::SeaRepository;
use crate::convert::{db_err, enum_str, parse_enum, ts, ts_opt};
use crate::entity::document;

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
        text_content: Set(text.map(str::to_owned)),
        created_at: Set(d.created_at.as_micros()),
        updated_at: Set(d.updated_at.as_micros()),
    }
}

#[async_trait]
impl DocumentRepository for SeaRepository {
    async fn document_insert(&self, d: &Document, text: Option<&str>, event: &Event) -> Result<()> {
        let txn = self.db.begin().await.map_err(db_err)?;
        document::Entity::insert(document_row(d, text))
            .exec_without_returning(&txn)
            .await
            .map_err(db_err)?;
        record_event(&txn, &d.organization_id, event).await?;
        txn.commit().await.map_err(db_err)
    }

    async fn document_get(&self, organization_id: &str, id: &str) -> Result<Option<Document>> {
        one(
            &self.db,
            document::Entity::find_by_id(id.to_owned())
                .filter(document::Column::OrganizationId.eq(organization_id)),
            document_from,
        )
        .await
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

    async fn document_update(&self, d: &Document) -> Result<()> {
        // Metadata only: the content column is left as it is.
        let mut row = document_row(d, None);
        row.text_content = sea_orm::ActiveValue::NotSet;
        row.created_at = sea_orm::ActiveValue::NotSet;
        document::Entity::update_many()
            .set(row)
            .filter(document::Column::DocumentationId.eq(&d.documentation_id))
            .filter(document::Column::OrganizationId.eq(&d.organization_id))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn document_delete(
        &self,
        organization_id: &str,
        id: &str,
        event: &EventStamp,
    ) -> Result<Option<Document>> {
        let txn = self.db.begin().await.map_err(db_err)?;
        lock_org(&txn, organization_id).await?;
        let Some(doc) = one(
            &txn,
            document::Entity::find_by_id(id.to_owned())
                .filter(document::Column::OrganizationId.eq(organization_id)),
            document_from,
        )
        .await?
        else {
            return Ok(None);
        };
        document::Entity::delete_by_id(id.to_owned())
            .exec(&txn)
            .await
            .map_err(db_err)?;
        agents::remove_reference(&txn, organization_id, agents::Refs::Documents, id).await?;
        record_event(&txn, organization_id, &event.with(&doc)?).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(Some(doc))
    }
}
