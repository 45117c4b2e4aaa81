//! # voiceplane-storage
//!
//! The SeaORM implementation of [`voiceplane_core::repo::Repository`], one code path for SQLite
//! and Postgres, with its `sea-orm-migration` migrations.
//!
//! ```no_run
//! # async fn demo() -> voiceplane_core::Result<()> {
//! use voiceplane_storage::{DatabaseOptions, SeaRepository};
//! let repo = SeaRepository::connect(&DatabaseOptions::new("sqlite://voiceplane.db?mode=rwc")).await?;
//! repo.migrate().await?;
//! let service = voiceplane_core::Service::new(std::sync::Arc::new(repo));
//! # let _ = service; Ok(()) }
//! ```

use voiceplane_core::{Error, Result};

/// How to reach the database.
#[derive(Clone)]
pub struct DatabaseOptions {
    /// `sqlite://path?mode=rwc`, `sqlite::memory:` or `postgres://user:pass@host/db`.
    pub url: String,
    /// Postgres schema to use instead of `public` (tests use one schema each).
    pub schema: Option<String>,
    /// Pool size; defaults depend on the database.
    pub max_connections: Option<u32>,
}

impl DatabaseOptions {
    /// Options for `url` with default pool settings.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: None,
        }
    }
}

impl std::fmt::Debug for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseOptions")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

/// `url` with any password replaced by `***`, for logs and errors.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let creds = &url[scheme_end + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &creds[..colon],
                    &url[at..]
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// The SeaORM repository.
#[derive(Clone, Debug)]
pub struct SeaRepository {}

impl SeaRepository {
    /// Connects (SQLite in WAL mode with foreign keys and a busy timeout). Does not migrate.
    pub async fn connect(options: &DatabaseOptions) -> Result<Self> {
        let _ = options;
        Err(Error::Unavailable("not implemented yet".into()))
    }

    /// Applies pending migrations.
    pub async fn migrate(&self) -> Result<()> {
        Ok(())
    }
}
