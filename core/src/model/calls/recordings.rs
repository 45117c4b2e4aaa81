//! Call recordings: where one is stored, and the link that streams it.

use serde::Serialize;

/// Where a call's recording is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// Blob key: `recordings/<organization_id>/<call_sid>.<ext>`.
    pub key: String,
    /// `audio/wav` or `audio/mpeg`.
    pub content_type: String,
    /// Size in bytes.
    pub size: i64,
}

/// The data of a `recording.ready` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RecordingReady {
    /// The call the recording belongs to.
    pub call_sid: String,
    /// `audio/wav` or `audio/mpeg`.
    pub content_type: String,
    /// Size in bytes.
    pub size: i64,
    /// SHA-256 of the stored bytes, lower-case hex.
    pub sha256: String,
}

/// The answer of `GET /api/calls/{call_sid}/recording/stream`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RecordingLink {
    /// A URL that reads the recording without other credentials, with `Range` support.
    pub url: String,
    /// Seconds the URL stays valid (3600).
    pub expires_in: u64,
    /// `audio/wav` or `audio/mpeg`.
    pub content_type: String,
    /// A suggested file name.
    pub filename: String,
}

/// The data of a `recording.deleted` event: the recording as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RecordingDeleted {
    /// The call the recording belonged to.
    pub call_sid: String,
    /// `audio/wav` or `audio/mpeg`.
    pub content_type: String,
    /// Size in bytes.
    pub size: i64,
}
