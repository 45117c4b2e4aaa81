//! Conversions between rows and domain types, and from database errors to domain errors.

use sea_orm::{DbErr, RuntimeErr, SqlErr};
use serde::Serialize;
use serde::de::DeserializeOwned;
use voiceplane_core::Error;
use voiceplane_core::time::Timestamp;

/// Maps a database error: unreachable database → 503, everything else → 500 (logged, never
/// shown). Unique violations are mapped by the caller, who knows what was duplicated.
pub(crate) fn db_err(e: DbErr) -> Error {
    let unavailable = match &e {
        DbErr::Conn(_) | DbErr::ConnectionAcquire(_) => true,
        DbErr::Exec(RuntimeErr::SqlxError(inner)) | DbErr::Query(RuntimeErr::SqlxError(inner)) => {
            connection_lost(inner)
        }
        _ => false,
    };
    if unavailable {
        tracing::error!(error = %e, "database unavailable");
        Error::Unavailable("the database is unavailable; try again shortly".to_owned())
    } else {
        Error::Internal(format!("database error: {e}"))
    }
}

/// Whether `e` says that the connection or the server is gone rather than that the statement
/// was wrong. Postgres ends the connections of a backend it terminates (a failover, a restart,
/// `pg_terminate_backend`) with an error of its own before closing them: the pool hands out a
/// connection that was given back within the last second without pinging it (`lib.rs`), so
/// that error, not a socket error, is what the next statement on it reads.
fn connection_lost(e: &sea_orm::sqlx::Error) -> bool {
    use sea_orm::sqlx::Error as E;
    match e {
        E::Io(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed => true,
        E::Database(db) => db.code().is_some_and(|code| lost_sqlstate(&code)),
        _ => false,
    }
}

/// SQLSTATEs of a lost connection or a server that is not taking work: class 08
/// (connection exception), `57P01` admin_shutdown (a terminated backend), `57P02`
/// crash_shutdown, `57P03` cannot_connect_now, `53300` too_many_connections. SQLite's codes are
/// decimal numbers without a leading zero, so none of them matches.
fn lost_sqlstate(code: &str) -> bool {
    code.len() == 5
        && (code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300"))
}

/// Like [`db_err`], but a unique violation becomes a 409 with `conflict` as its sentence.
pub(crate) fn db_err_unique(e: DbErr, conflict: impl FnOnce() -> String) -> Error {
    match e.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => Error::Conflict(conflict()),
        _ => db_err(e),
    }
}

pub(crate) fn ts(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros)
}

pub(crate) fn ts_opt(micros: Option<i64>) -> Option<Timestamp> {
    micros.map(Timestamp::from_micros)
}

/// The wire name of a serde-tagged enum (`Role::AgentManager` → `agent_manager`).
pub(crate) fn enum_str<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Parses a stored enum; an unknown value means the row is corrupt.
pub(crate) fn parse_enum<T: DeserializeOwned>(column: &str, value: &str) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::String(value.to_owned()))
        .map_err(|_| Error::Internal(format!("column {column} holds unknown value {value:?}")))
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("encoding JSON column: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(column: &str, value: &str) -> Result<T, Error> {
    serde_json::from_str(value)
        .map_err(|e| Error::Internal(format!("column {column} holds invalid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::lost_sqlstate;

    #[test]
    fn a_lost_connection_is_told_from_a_bad_statement() {
        for code in ["57P01", "57P02", "57P03", "08006", "08003", "53300"] {
            assert!(lost_sqlstate(code), "{code}");
        }
        // A unique violation, a syntax error, a lock timeout, SQLite's busy and I/O errors.
        for code in ["23505", "42601", "55P03", "5", "10", "2067", "08"] {
            assert!(!lost_sqlstate(code), "{code}");
        }
    }
}
