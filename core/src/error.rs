//! The one error type of voiceplane. Each variant says what went wrong in a sentence that is
//! safe to show the caller; the HTTP adapter decides the status code from the variant alone.

/// Everything an operation can fail with.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The request is malformed: a bad id, parameter, cursor or body field (HTTP 400).
    #[error("{0}")]
    InvalidInput(String),
    /// No credential, or one that is malformed, unknown, expired or revoked (HTTP 401).
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller is known but may not do this (HTTP 403).
    #[error("{0}")]
    Forbidden(String),
    /// The resource does not exist in the caller's organization (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state, e.g. a duplicate (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// The resource's current tag does not satisfy the write's `If-Match` or `If-None-Match`
    /// (HTTP 412); nothing was changed.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The request is well formed but cannot be carried out as things stand (HTTP 422): a
    /// number with no integration to connect it through, a provider that does not have it.
    #[error("{0}")]
    Unprocessable(String),
    /// The request body did not arrive within its time (HTTP 408), e.g. a CSV upload sent
    /// slower than its read deadline allows.
    #[error("{0}")]
    RequestTimeout(String),
    /// The request body is larger than allowed (HTTP 413).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The content is of a type the operation cannot read, e.g. a knowledge-base file that is
    /// not text, Markdown, HTML or PDF (HTTP 415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A limit of the organization is reached for now, e.g. its outbound calls at once; the
    /// same request later may succeed (HTTP 429, with `Retry-After`).
    #[error("{0}")]
    TooManyRequests(String),
    /// An upstream provider failed or answered garbage (HTTP 502).
    #[error("{0}")]
    Upstream(String),
    /// A backend (database, object storage, provider configuration) is unavailable (HTTP 503).
    #[error("{0}")]
    Unavailable(String),
    /// A bug or an unexpected backend failure. The text is for the log only; callers see a
    /// generic sentence (HTTP 500).
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// A 400 error with the given sentence.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidInput(msg.into())
    }

    /// A 422 error with the given sentence.
    pub fn unprocessable(msg: impl Into<String>) -> Self {
        Self::Unprocessable(msg.into())
    }

    /// A 404 error with the given sentence.
    pub fn not_found(msg: impl Into<String>) -> Self {
        Self::NotFound(msg.into())
    }

    /// A 403 error with the given sentence.
    pub fn forbidden(msg: impl Into<String>) -> Self {
        Self::Forbidden(msg.into())
    }

    /// A 401 error with the given sentence.
    pub fn unauthenticated(msg: impl Into<String>) -> Self {
        Self::Unauthenticated(msg.into())
    }

    /// A 409 error with the given sentence.
    pub fn conflict(msg: impl Into<String>) -> Self {
        Self::Conflict(msg.into())
    }

    /// The sentence the caller may see. Internal errors are replaced by a generic sentence so
    /// that no backend detail leaks.
    pub fn public_message(&self) -> String {
        match self {
            Self::Internal(_) => "internal server error".to_owned(),
            other => other.to_string(),
        }
    }
}

/// Result alias used throughout voiceplane.
pub type Result<T, E = Error> = std::result::Result<T, E>;
