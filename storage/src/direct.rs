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

    /// Every row `statement` (built for SQLite) returns, decoded by `decode`.
    pub(crate) fn all<T>(
        &self,
        statement: &Statement,
        decode: fn(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        debug_assert_eq!(statement.db_backend, DbBackend::Sqlite);
        let params = values(statement)?;
        self.with(|conn| {
            let mut prepared = conn.prepare_cached(&statement.sql)?;
            let rows = prepared.query_map(rusqlite::params_from_iter(params), decode)?;
            rows.collect()
        })
    }

    /// The first row `statement` returns, decoded by `decode`.
    pub(crate) fn one<T>(
        &self,
        statement: &Statement,
        decode: fn(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>> {
        Ok(self.all(statement, decode)?.into_iter().next())
    }
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

/// The single integer of a row.
pub(crate) fn integer(row: &Row<'_>) -> rusqlite::Result<i64> {
    row.get(0)
}

pub(crate) fn api_key_row(r: &Row<'_>) -> rusqlite::Result<api_key::Model> {
    Ok(api_key::Model {
        key_id: r.get("key_id")?,
        organization_id: r.get("organization_id")?,
        user_id: r.get("user_id")?,
        name: r.get("name")?,
        role: r.get("role")?,
        prefix: r.get("prefix")?,
        secret_hash: r.get("secret_hash")?,
        status: r.get("status")?,
        created_at: r.get("created_at")?,
        last_used_at: r.get("last_used_at")?,
        expires_at: r.get("expires_at")?,
        revoked_at: r.get("revoked_at")?,
        scopes: r.get("scopes")?,
    })
}

pub(crate) fn agent_row(r: &Row<'_>) -> rusqlite::Result<agent::Model> {
    Ok(agent::Model {
        agent_id: r.get("agent_id")?,
        organization_id: r.get("organization_id")?,
        agent_name: r.get("agent_name")?,
        language: r.get("language")?,
        stt_provider: r.get("stt_provider")?,
        tts_provider: r.get("tts_provider")?,
        tts_voice: r.get("tts_voice")?,
        llm_provider: r.get("llm_provider")?,
        llm_model: r.get("llm_model")?,
        system_prompt: r.get("system_prompt")?,
        speak_first: r.get("speak_first")?,
        end_call_tool: r.get("end_call_tool")?,
        llm_temperature: r.get("llm_temperature")?,
        recording_enabled: r.get("recording_enabled")?,
        voicemail_detection: r.get("voicemail_detection")?,
        voicemail_response_delay: r.get("voicemail_response_delay")?,
        custom_tools: r.get("custom_tools")?,
        kb_document_ids: r.get("kb_document_ids")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
    })
}

pub(crate) fn phone_number_row(r: &Row<'_>) -> rusqlite::Result<phone_number::Model> {
    Ok(phone_number::Model {
        phone_number_id: r.get("phone_number_id")?,
        organization_id: r.get("organization_id")?,
        phone_number: r.get("phone_number")?,
        provider: r.get("provider")?,
        status: r.get("status")?,
        supports_inbound: r.get("supports_inbound")?,
        supports_outbound: r.get("supports_outbound")?,
        assigned_agent_id: r.get("assigned_agent_id")?,
        integration_id: r.get("integration_id")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
    })
}

pub(crate) fn call_row(r: &Row<'_>) -> rusqlite::Result<call::Model> {
    Ok(call::Model {
        call_sid: r.get("call_sid")?,
        organization_id: r.get("organization_id")?,
        agent_id: r.get("agent_id")?,
        agent_name: r.get("agent_name")?,
        to_number: r.get("to_number")?,
        from_number: r.get("from_number")?,
        call_type: r.get("call_type")?,
        status: r.get("status")?,
        recording_enabled: r.get("recording_enabled")?,
        total_cost: r.get("total_cost")?,
        duration_seconds: r.get("duration_seconds")?,
        turn_count: r.get("turn_count")?,
        start_time: r.get("start_time")?,
        end_time: r.get("end_time")?,
        end_reason: r.get("end_reason")?,
        billing_status: r.get("billing_status")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
        recording_key: r.get("recording_key")?,
        recording_content_type: r.get("recording_content_type")?,
        recording_size: r.get("recording_size")?,
        message_seq: r.get("message_seq")?,
    })
}

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
