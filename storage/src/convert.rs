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
            matches!(
                &**inner,
                sea_orm::sqlx::Error::Io(_)
                    | sea_orm::sqlx::Error::PoolTimedOut
                    | sea_orm::sqlx::Error::PoolClosed
                    | sea_orm::sqlx::Error::WorkerCrashed
            )
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
