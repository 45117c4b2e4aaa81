//! Knowledge-base documents: the document, its kind and processing state, and the create and
//! update bodies.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Kind of knowledge-base document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DocumentType {
    /// An uploaded file.
    File,
    /// Text given inline.
    Text,
}

/// Processing state of a knowledge-base document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProcessingStatus {
    /// Waiting to be processed.
    Pending,
    /// Being processed.
    Processing,
    /// Ready.
    Completed,
    /// Processing failed.
    Failed,
}

/// A knowledge-base document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Document {
    /// `doc_…`
    pub documentation_id: String,
    /// Name.
    pub name: String,
    /// `file` or `text`.
    #[serde(rename = "type")]
    pub doc_type: DocumentType,
    /// The id of the organization it belongs to.
    #[serde(rename = "client_id")]
    pub organization_id: String,
    /// Object-storage key of the content, for files.
    pub storage_key: Option<String>,
    /// Object-storage URI of the content, for files.
    pub storage_uri: Option<String>,
    /// MIME type.
    pub content_type: String,
    /// Size in bytes.
    pub size: i64,
    /// Original file name, for files.
    pub filename: Option<String>,
    /// Processing state.
    pub processing_status: ProcessingStatus,
    /// Pages found by processing.
    pub page_count: Option<i64>,
    /// Vectors produced by processing.
    pub vector_count: Option<i64>,
    /// When processing last ran.
    pub last_processed_at: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// JSON body of `POST /api/knowledge-base`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTextDocument {
    /// Name, 1–200 characters.
    pub name: String,
    /// The text, non-empty.
    pub text: String,
}

/// Body of `PATCH /api/knowledge-base/{documentation_id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DocumentUpdate {
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
}
