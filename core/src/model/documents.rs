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
    /// When processing last ended.
    pub last_processed_at: Option<Timestamp>,
    /// Why processing failed, in a sentence the owner can act on; `null` unless `failed`.
    pub processing_error: Option<String>,
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

/// Body of `POST /api/knowledge-base/search`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DocumentSearch {
    /// What to look for, 1–1000 characters.
    pub query: String,
    /// Only chunks of these documents; all of the organization's when absent.
    #[serde(default)]
    pub document_ids: Option<Vec<String>>,
    /// Results, 1–50 (default 5).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One chunk that matched a search, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SearchHit {
    /// The document the chunk belongs to.
    pub documentation_id: String,
    /// The chunk's position in its document, from 0.
    pub chunk_index: i64,
    /// The chunk's text.
    pub text: String,
    /// Relevance in `[0, 1]`, higher is better: lexical, blended with vector similarity when
    /// the document has vectors.
    pub score: f64,
}

/// A chunk of a processed document, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    /// Position in the document, from 0.
    pub chunk_index: i64,
    /// The text.
    pub text: String,
    /// Its embedding, when a provider made one.
    pub embedding: Option<Vec<f32>>,
}

/// A stored chunk with its embedding, for vector ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkVector {
    /// The document.
    pub documentation_id: String,
    /// Position in the document.
    pub chunk_index: i64,
    /// The text.
    pub text: String,
    /// The embedding.
    pub embedding: Vec<f32>,
}

/// What processing reads of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSource {
    /// The document, now `processing`.
    pub document: Document,
    /// The content of a text document.
    pub text: Option<String>,
    /// The status it had before this run marked it `processing`.
    pub previous_status: ProcessingStatus,
}
