//! Knowledge-base documents: create (text, or a file streamed into the blob store), view,
//! list, update, delete; their processing (`processing`) and search over their chunks
//! (`search`) are in the modules beside this one.

use super::{By, Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::knowledge;
use crate::model::{
    Document, DocumentType, DocumentUpdate, EventType, NewTextDocument, Outcome, ProcessingStatus,
};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;
use crate::validate;

mod processing;
mod search;

pub use processing::DOCUMENT_PROCESS;
pub(super) use processing::{Knowledge, ProcessDocument};

/// A document name that arrives after the file it names, as in a multipart body whose `name`
/// part follows its `file` part; resolved once the file is stored. `None` means no name came.
pub type LaterName = std::pin::Pin<Box<dyn Future<Output = Result<Option<String>>> + Send>>;

/// A new knowledge-base document: text, or an uploaded file streamed from the caller.
pub enum NewDocument {
    /// Text sent as it is.
    Text(NewTextDocument),
    /// An uploaded file.
    File {
        /// The document's name, when known before the file; see `later_name` otherwise.
        name: Option<String>,
        /// Where the name comes from when it follows the file; used only when `name` is
        /// `None`. The file name is the name when neither gives one.
        later_name: Option<LaterName>,
        /// The file name the caller gave.
        filename: String,
        /// The file's media type, as declared.
        content_type: String,
        /// The file's bytes.
        body: crate::blob::ByteStream,
    },
}

/// Where an uploaded file's document name comes from.
pub enum DocumentName {
    /// Given before the file.
    Given(String),
    /// The file name, as none is given.
    FileName,
    /// Given after the file, if at all; the file name when it resolves to `None`.
    Later(LaterName),
}

impl Service {
    /// Stores a new document, text or file, pending processing.
    pub async fn document_create(&self, actor: &Actor, input: NewDocument) -> Result<Document> {
        match input {
            NewDocument::Text(text) => self.document_create_text(actor, text).await,
            NewDocument::File {
                name,
                later_name,
                filename,
                content_type,
                body,
            } => {
                let name = match name {
                    Some(name) => DocumentName::Given(name),
                    None => later_name.map_or(DocumentName::FileName, DocumentName::Later),
                };
                self.document_create_file(actor, name, &filename, &content_type, body)
                    .await
            }
        }
    }

    /// Stores a text document, pending processing.
    pub async fn document_create_text(
        &self,
        actor: &Actor,
        input: NewTextDocument,
    ) -> Result<Document> {
        actor.require(Permission::KbWrite)?;
        let name = validate::text("name", &input.name, 200)?;
        if input.text.trim().is_empty() {
            return Err(Error::invalid("text must not be empty"));
        }
        let now = self.now();
        let doc = Document {
            documentation_id: self.id(IdKind::Document),
            name,
            doc_type: DocumentType::Text,
            organization_id: actor.organization_id.clone(),
            storage_key: None,
            storage_uri: None,
            content_type: "text/plain; charset=utf-8".to_owned(),
            size: i64::try_from(input.text.len()).unwrap_or(i64::MAX),
            filename: None,
            processing_status: ProcessingStatus::Pending,
            page_count: None,
            vector_count: None,
            last_processed_at: None,
            processing_error: None,
            created_at: now,
            updated_at: now,
        };
        let event = self.event(EventType::DocumentCreated, &doc, By::Creating(actor))?;
        let job = self.processing_job(&doc.documentation_id);
        self.after_write(
            self.repo
                .document_insert(&doc, Some(&input.text), &event, &job)
                .await,
        )?;
        Ok(doc)
    }

    /// Stores an uploaded file, streamed into the blob store, as a document pending
    /// processing. The row is written only after the whole file is stored, so a name that
    /// follows the file still names it.
    pub async fn document_create_file(
        &self,
        actor: &Actor,
        name: DocumentName,
        filename: &str,
        content_type: &str,
        body: crate::blob::ByteStream,
    ) -> Result<Document> {
        actor.require(Permission::KbWrite)?;
        let filename = validate::text("filename", filename, 255)?;
        let mut later_name = None;
        // The stored name keeps only what is safe in any object store key.
        let safe: String = filename
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // A name known now is refused before a byte is stored.
        let name = match name {
            DocumentName::Given(name) => Some(validate::text("name", &name, 200)?),
            DocumentName::FileName => Some(validate::text("name", &filename, 200)?),
            DocumentName::Later(later) => {
                later_name = Some(later);
                None
            }
        };
        // Refused before a byte is stored. What the file is read as is what is recorded, so
        // that a client that sends every file as `application/octet-stream` still gets the
        // type its extension says.
        let content_type = knowledge::media_type_of(content_type, Some(&filename))
            .ok_or_else(|| {
                Error::UnsupportedMediaType(format!(
                    "knowledge-base files must be one of {}; this one is neither declared as \
                     one nor named with a matching extension",
                    knowledge::SUPPORTED_MEDIA_TYPES.join(", ")
                ))
            })?
            .to_owned();
        let blobs = self.blobs()?;
        let id = self.id(IdKind::Document);
        let key = format!("knowledge-base/{}/{id}/{safe}", actor.organization_id);
        let size = blobs.put(&key, &content_type, body).await?;
        let name = match (name, later_name) {
            (Some(name), _) => name,
            (None, later) => {
                let later = match later {
                    Some(later) => later.await,
                    None => Ok(None),
                };
                let named = later
                    .and_then(|n| validate::text("name", n.as_deref().unwrap_or(&filename), 200));
                match named {
                    Ok(name) => name,
                    Err(e) => {
                        // No row will point at the file: remove it rather than leave it
                        // orphaned.
                        let _ = blobs.delete(&key).await;
                        return Err(e);
                    }
                }
            }
        };
        let now = self.now();
        let doc = Document {
            documentation_id: id,
            name,
            doc_type: DocumentType::File,
            organization_id: actor.organization_id.clone(),
            storage_uri: Some(blobs.uri(&key)),
            storage_key: Some(key.clone()),
            content_type,
            size: i64::try_from(size).unwrap_or(i64::MAX),
            filename: Some(filename),
            processing_status: ProcessingStatus::Pending,
            page_count: None,
            vector_count: None,
            last_processed_at: None,
            processing_error: None,
            created_at: now,
            updated_at: now,
        };
        let job = self.processing_job(&doc.documentation_id);
        let inserted = match self.event(EventType::DocumentCreated, &doc, By::Creating(actor)) {
            Ok(event) => {
                self.after_write(self.repo.document_insert(&doc, None, &event, &job).await)
            }
            Err(e) => Err(e),
        };
        if let Err(e) = inserted {
            // No row points at the file: remove it rather than leave it orphaned.
            let _ = blobs.delete(&key).await;
            return Err(e);
        }
        Ok(doc)
    }

    /// One knowledge-base document of the organization.
    pub async fn document_view(&self, actor: &Actor, documentation_id: &str) -> Result<Document> {
        actor.require(Permission::KbRead)?;
        let id = IdKind::Document.parse(documentation_id)?;
        self.repo
            .document_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("knowledge-base document {id} not found")))
    }

    /// The organization's documents, newest first.
    pub async fn document_list(
        &self,
        actor: &Actor,
        params: &PageParams,
    ) -> Result<Page<Document>> {
        actor.require(Permission::KbRead)?;
        let query = PageQuery::from_params(params, IdKind::Document)?;
        let rows = self
            .repo
            .document_list(&actor.organization_id, &query)
            .await?;
        Ok(Page::from_rows(rows, &query, |d| {
            cursor_of(d.created_at, &d.documentation_id)
        }))
    }

    /// Renames a document.
    pub async fn document_update(
        &self,
        actor: &Actor,
        documentation_id: &str,
        input: DocumentUpdate,
    ) -> Result<Document> {
        actor.require(Permission::KbWrite)?;
        let id = IdKind::Document.parse(documentation_id)?;
        let name = input
            .name
            .as_deref()
            .map(|v| validate::text("name", v, 200))
            .transpose()?;
        let now = self.now();
        let change = Box::new(move |doc: &mut Document| {
            if let Some(v) = name {
                doc.name = v;
            }
            doc.updated_at = now.max(doc.updated_at);
            Ok(())
        });
        let audit = self.audited_change(actor, "document.update", "document");
        self.repo
            .document_update(&actor.organization_id, &id, change, &audit)
            .await?
            .ok_or_else(|| Error::not_found(format!("knowledge-base document {id} not found")))
    }

    /// Deletes a document with its chunks, cancelling its processing; agents that used it no
    /// longer list it.
    pub async fn document_delete(
        &self,
        actor: &Actor,
        documentation_id: &str,
    ) -> Result<Outcome<Document>> {
        actor.require(Permission::KbWrite)?;
        let id = IdKind::Document.parse(documentation_id)?;
        let doc = self
            .after_write(
                self.repo
                    .document_delete(
                        &actor.organization_id,
                        &id,
                        &self.event_stamp(EventType::DocumentDeleted, By::Deleting(actor)),
                    )
                    .await,
            )?
            .ok_or_else(|| Error::not_found(format!("knowledge-base document {id} not found")))?;
        if let (Some(key), Some(blobs)) = (&doc.storage_key, &self.blobs) {
            // The row is gone; a blob that fails to delete is only garbage, never reachable.
            if let Err(e) = blobs.delete(key).await {
                tracing::warn!(%key, error = %e, "could not delete a document's file");
            }
        }
        Ok(Outcome::new(doc, "knowledge-base document deleted"))
    }
}
