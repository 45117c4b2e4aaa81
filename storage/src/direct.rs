//! The hot reads of a SQLite file, run on the calling thread.
//!
//! sqlx gives every SQLite connection a thread of its own and hands each statement and each
//! row across a channel to it and back. On a two-core machine that hand-off cost more than
//! everything else a read does: an authenticated agent read (two statements) spent about 55 %
//! of its CPU in futex waits and wake-ups (see docs/ARCHITECTURE.md, "The hot read path").
//! These reads run the same SQL, built by SeaORM for SQLite, through rusqlite on the task's own
//! thread instead: the credential version, a key by the hash of its secret, an agent with its
//! numbers, and a page of calls. Each is a read of a few rows through an index, tens of
//! microseconds, so it runs inline rather than on a blocking thread (which would be a hand-off
//! again). Everything else, and every write, still goes through SeaORM and sqlx.
//!
//! Connections are opened on demand, kept idle for the next read, and are read-only
//! (`query_only`); in WAL mode a reader never waits for a writer. They share the file's
//! committed state with the pool, as any two connections outside a transaction do. An
//! in-memory database (one connection by definition) is read through sqlx as before.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::types::Value as Lite;
use rusqlite::{Connection, OpenFlags, Row};
use sea_orm::{DbBackend, Statement, Value};
use voiceplane_core::cache::ChangeVersions;
use voiceplane_core::{Error, Result};

use crate::entity::{agent, api_key, call, phone_number};

/// Idle connections kept for the next reads.
const MAX_IDLE: usize = 8;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct DirectReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

/// The file of a `sqlite:` URL, unless it names an in-memory database.
pub(crate) fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    Some(PathBuf::from(path))
}

fn failed(e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(
                code.code,
                rusqlite::ErrorCode::DatabaseBusy
                    | rusqlite::ErrorCode::DatabaseLocked
                    | rusqlite::ErrorCode::CannotOpen
            ) =>
        {
            Error::Unavailable(format!("the database cannot be read: {e}"))
        }
        e => Error::Internal(format!("direct read failed: {e}")),
    }
}

impl DirectReads {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            idle: Mutex::default(),
        }
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "query_only", true)?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(conn)
    }

    /// Runs `read` on an idle connection (or a new one), then keeps the connection.
    fn with<T>(&self, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let taken = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match taken {
            Some(conn) => conn,
            None => self.open().map_err(failed)?,
        };
        let result = read(&conn).map_err(failed);
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
        result
    }

    /// Every row `statement` (built for SQLite) returns, decoded by `decoder`.
    pub(crate) fn all<T>(&self, statement: &Statement, decoder: &Decoder<T>) -> Result<Vec<T>> {
        debug_assert_eq!(statement.db_backend, DbBackend::Sqlite);
        let params = values(statement)?;
        self.with(|conn| {
            let mut prepared = conn.prepare_cached(&statement.sql)?;
            // Columns are found by name once per statement, not once per row and field.
            let at = decoder
                .names
                .iter()
                .map(|name| prepared.column_index(name))
                .collect::<rusqlite::Result<Vec<usize>>>()?;
            let rows = prepared.query_map(rusqlite::params_from_iter(params), |row| {
                (decoder.build)(&mut Fields {
                    row,
                    at: &at,
                    next: 0,
                })
            })?;
            rows.collect()
        })
    }

    /// The first row `statement` returns, decoded by `decoder`.
    pub(crate) fn one<T>(&self, statement: &Statement, decoder: &Decoder<T>) -> Result<Option<T>> {
        Ok(self.all(statement, decoder)?.into_iter().next())
    }
}

/// How rows of one shape are read: the columns by name, and a constructor that takes their
/// values in that order ([`decoder!`] writes both from one list, so they cannot disagree).
pub(crate) struct Decoder<T> {
    names: &'static [&'static str],
    build: fn(&mut Fields<'_, '_>) -> rusqlite::Result<T>,
}

/// The values of one row, in the order of a [`Decoder`]'s names.
pub(crate) struct Fields<'r, 's> {
    row: &'r Row<'s>,
    at: &'r [usize],
    next: usize,
}

impl Fields<'_, '_> {
    fn next<V: rusqlite::types::FromSql>(&mut self) -> rusqlite::Result<V> {
        let index = self.at[self.next];
        self.next += 1;
        self.row.get(index)
    }
}

/// A [`Decoder`] of `$module::$model` reading each listed field from the column of its name; struct
/// expressions evaluate their fields in the order written, which is the names' order, and the
/// compiler insists on every field of the model.
macro_rules! decoder {
    ($module:ident :: $model:ident { $($field:ident),* $(,)? }) => {
        Decoder {
            names: &[$(stringify!($field)),*],
            build: |f| Ok($module::$model { $($field: f.next()?),* }),
        }
    };
}

/// The statement's values as SQLite values.
fn values(statement: &Statement) -> Result<Vec<Lite>> {
    let Some(values) = &statement.values else {
        return Ok(Vec::new());
    };
    values
        .0
        .iter()
        .map(|v| {
            Ok(match v {
                Value::String(Some(s)) => Lite::Text(s.clone()),
                Value::BigInt(Some(n)) => Lite::Integer(*n),
                Value::Int(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::SmallInt(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::TinyInt(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::BigUnsigned(Some(n)) => Lite::Integer(
                    i64::try_from(*n).map_err(|_| Error::Internal("value out of range".into()))?,
                ),
                Value::Unsigned(Some(n)) => Lite::Integer(i64::from(*n)),
                Value::Bool(Some(b)) => Lite::Integer(i64::from(*b)),
                Value::Double(Some(x)) => Lite::Real(*x),
                Value::Float(Some(x)) => Lite::Real(f64::from(*x)),
                Value::Bytes(Some(b)) => Lite::Blob(b.clone()),
                Value::String(None)
                | Value::BigInt(None)
                | Value::Int(None)
                | Value::SmallInt(None)
                | Value::TinyInt(None)
                | Value::BigUnsigned(None)
                | Value::Unsigned(None)
                | Value::Bool(None)
                | Value::Double(None)
                | Value::Float(None)
                | Value::Bytes(None) => Lite::Null,
                other => {
                    return Err(Error::Internal(format!(
                        "no SQLite value for {other:?} in a direct read"
                    )));
                }
            })
        })
        .collect()
}

/// The numbers of the change version row.
pub(crate) static VERSIONS: Decoder<ChangeVersions> = Decoder {
    names: &["credentials", "agents"],
    build: |f| {
        Ok(ChangeVersions {
            credentials: f.next()?,
            agents: f.next()?,
        })
    },
};

pub(crate) static API_KEY: Decoder<api_key::Model> = decoder!(api_key::Model {
    key_id,
    organization_id,
    user_id,
    name,
    role,
    prefix,
    secret_hash,
    status,
    created_at,
    last_used_at,
    expires_at,
    revoked_at,
    scopes,
});

pub(crate) static AGENT: Decoder<agent::Model> = decoder!(agent::Model {
    agent_id,
    organization_id,
    agent_name,
    language,
    stt_provider,
    tts_provider,
    tts_voice,
    llm_provider,
    llm_model,
    system_prompt,
    speak_first,
    end_call_tool,
    llm_temperature,
    recording_enabled,
    voicemail_detection,
    voicemail_response_delay,
    custom_tools,
    kb_document_ids,
    created_at,
    updated_at,
});

pub(crate) static PHONE_NUMBER: Decoder<phone_number::Model> = decoder!(phone_number::Model {
    phone_number_id,
    organization_id,
    phone_number,
    provider,
    status,
    supports_inbound,
    supports_outbound,
    assigned_agent_id,
    integration_id,
    created_at,
    updated_at,
});

pub(crate) static CALL: Decoder<call::Model> = decoder!(call::Model {
    call_sid,
    organization_id,
    agent_id,
    agent_name,
    to_number,
    from_number,
    call_type,
    status,
    recording_enabled,
    total_cost,
    duration_seconds,
    turn_count,
    start_time,
    end_time,
    end_reason,
    billing_status,
    created_at,
    updated_at,
    recording_key,
    recording_content_type,
    recording_size,
    message_seq,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_are_read_directly() {
        assert_eq!(
            sqlite_file("sqlite:///tmp/a.db?mode=rwc"),
            Some(PathBuf::from("/tmp/a.db"))
        );
        assert_eq!(
            sqlite_file("sqlite://data/v.db"),
            Some(PathBuf::from("data/v.db"))
        );
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("sqlite://x.db?mode=memory"), None);
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
    }
}
