//! A page of calls written to JSON straight from the database's rows: SQLite's for the direct
//! reads, Postgres's as sqlx decodes them.
//!
//! Reading a page as `call::Model`s, turning them into `Call`s and serializing those cost an
//! allocation per text column, a parse of every JSON column, and serde's escaping of every key
//! of every call: over half of a page's CPU. Here each column is read as a borrowed value and
//! written once, the keys are written as constants, and JSON columns holding the empty object
//! (most of them) are copied; other JSON columns, enums and every value are still parsed and
//! written by serde with the types `Call` has, so each is exactly what `Call` would write. The
//! keys and their order are `Call`'s: the storage tests compare the two writers call by call,
//! with every field set, so a field added to `Call` and not here fails them.

use std::collections::BTreeMap;

use rusqlite::types::ValueRef;
use sea_orm::sqlx::postgres::{PgRow, PgValueRef};
use sea_orm::sqlx::{Column as _, Postgres, Row as _, TypeInfo as _, ValueRef as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use voiceplane_core::model::{
    AnalysisStatus, CallAnalysis, CallJson, CallLatency, CallStatus, CallType, ProviderError,
    UsageCharge,
};
use voiceplane_core::telephony::TelephonyProvider;
use voiceplane_core::telephony::progress::AnsweredBy;
use voiceplane_core::time::Timestamp;

use crate::direct::Fields;

/// The columns [`write`] reads, in the order it reads them, each with what precedes its value:
/// `Call`'s fields, `client_id` being `organization_id`.
const FIELDS: [(&str, &str); 32] = [
    ("call_sid", "{\"call_sid\":"),
    ("to_number", ",\"to_number\":"),
    ("from_number", ",\"from_number\":"),
    ("agent_id", ",\"agent_id\":"),
    ("agent_name", ",\"agent_name\":"),
    ("organization_id", ",\"client_id\":"),
    ("call_type", ",\"call_type\":"),
    ("status", ",\"status\":"),
    ("recording_enabled", ",\"recording_enabled\":"),
    ("total_cost", ",\"total_cost\":"),
    ("cost_breakdown", ",\"cost_breakdown\":"),
    ("duration_seconds", ",\"duration_seconds\":"),
    ("turn_count", ",\"turn_count\":"),
    ("created_at", ",\"created_at\":"),
    ("updated_at", ",\"updated_at\":"),
    ("start_time", ",\"start_time\":"),
    ("end_time", ",\"end_time\":"),
    ("end_reason", ",\"end_reason\":"),
    ("billing_status", ",\"billing_status\":"),
    ("provider", ",\"provider\":"),
    ("provider_call_id", ",\"provider_call_id\":"),
    ("phone_number_id", ",\"phone_number_id\":"),
    ("answered_by", ",\"answered_by\":"),
    ("dynamic_variables", ",\"dynamic_variables\":"),
    ("metadata", ",\"metadata\":"),
    ("provider_error", ",\"provider_error\":"),
    ("agent_version", ",\"agent_version\":"),
    ("timezone", ",\"timezone\":"),
    ("analysis_status", ",\"analysis_status\":"),
    ("analysis", ",\"analysis\":"),
    ("analysis_error", ",\"analysis_error\":"),
    ("latency", ",\"latency\":"),
];

/// The columns of [`FIELDS`], as a decoder names them.
pub(crate) const COLUMNS: &[&str] = &{
    let mut names = [""; FIELDS.len()];
    let mut i = 0;
    while i < FIELDS.len() {
        names[i] = FIELDS[i].0;
        i += 1;
    }
    names
};

/// Why a row could not be written: its column and what is wrong with it.
#[derive(Debug)]
pub(crate) struct Invalid(String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<Invalid> for rusqlite::Error {
    fn from(e: Invalid) -> Self {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    }
}

fn invalid(column: &str, why: impl std::fmt::Display) -> Invalid {
    Invalid(format!("column calls.{column}: {why}"))
}

/// A column's value, borrowed from its row, as either database holds it (a boolean is an
/// integer, as in SQLite).
pub(crate) enum Cell<'r> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'r str),
}

/// The values of a row, in the order of [`COLUMNS`].
pub(crate) trait Cells<'r> {
    fn next_cell(&mut self, column: &str) -> Result<Cell<'r>, Invalid>;
}

impl<'r> Cells<'r> for Fields<'r, '_> {
    fn next_cell(&mut self, column: &str) -> Result<Cell<'r>, Invalid> {
        Ok(match self.next_ref().map_err(|e| invalid(column, e))? {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Integer(i),
            ValueRef::Real(f) => Cell::Real(f),
            ValueRef::Text(bytes) => {
                Cell::Text(std::str::from_utf8(bytes).map_err(|e| invalid(column, e))?)
            }
            ValueRef::Blob(_) => return Err(invalid(column, "not text")),
        })
    }
}

/// A Postgres row read by position: `plan` holds the position and type of each of
/// [`COLUMNS`].
pub(crate) struct PgCells<'r> {
    row: &'r PgRow,
    plan: &'r [(usize, PgKind)],
    next: usize,
}

/// The Postgres types a page's columns have, each decoded as such.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PgKind {
    Text,
    Int8,
    Int4,
    Int2,
    Float8,
    Float4,
    Bool,
}

impl<'r> PgCells<'r> {
    /// The position and type of each of [`COLUMNS`] in `row`, the same for every row of a
    /// statement: found once per page, not once per value.
    pub(crate) fn plan(row: &PgRow) -> Result<Vec<(usize, PgKind)>, Invalid> {
        COLUMNS
            .iter()
            .map(|name| {
                let (at, column) = row
                    .columns()
                    .iter()
                    .enumerate()
                    .find(|(_, c)| c.name() == *name)
                    .ok_or_else(|| invalid(name, "not selected"))?;
                let kind = match column.type_info().name() {
                    "TEXT" | "VARCHAR" => PgKind::Text,
                    "INT8" => PgKind::Int8,
                    "INT4" => PgKind::Int4,
                    "INT2" => PgKind::Int2,
                    "FLOAT8" => PgKind::Float8,
                    "FLOAT4" => PgKind::Float4,
                    "BOOL" => PgKind::Bool,
                    other => return Err(invalid(name, format!("unexpected type {other}"))),
                };
                Ok((at, kind))
            })
            .collect()
    }

    pub(crate) fn new(row: &'r PgRow, plan: &'r [(usize, PgKind)]) -> Self {
        Self { row, plan, next: 0 }
    }
}

impl<'r> Cells<'r> for PgCells<'r> {
    fn next_cell(&mut self, column: &str) -> Result<Cell<'r>, Invalid> {
        let (index, kind) = self.plan[self.next];
        self.next += 1;
        let raw = self
            .row
            .try_get_raw(index)
            .map_err(|e| invalid(column, e))?;
        if raw.is_null() {
            return Ok(Cell::Null);
        }
        fn pg<'r, T: sea_orm::sqlx::Decode<'r, Postgres>>(
            raw: PgValueRef<'r>,
        ) -> Result<T, sea_orm::sqlx::error::BoxDynError> {
            T::decode(raw)
        }
        let decoded = match kind {
            PgKind::Text => pg::<&str>(raw).map(Cell::Text),
            PgKind::Int8 => pg::<i64>(raw).map(Cell::Integer),
            PgKind::Int4 => pg::<i32>(raw).map(|i| Cell::Integer(i.into())),
            PgKind::Int2 => pg::<i16>(raw).map(|i| Cell::Integer(i.into())),
            PgKind::Float8 => pg::<f64>(raw).map(Cell::Real),
            PgKind::Float4 => pg::<f32>(raw).map(|f| Cell::Real(f.into())),
            PgKind::Bool => pg::<bool>(raw).map(|b| Cell::Integer(b.into())),
        };
        decoded.map_err(|e| invalid(column, e))
    }
}

/// The JSON being written.
struct Out {
    json: Vec<u8>,
}

impl Out {
    fn serde<T: Serialize + ?Sized>(&mut self, column: &str, value: &T) -> Result<(), Invalid> {
        serde_json::to_writer(&mut self.json, value).map_err(|e| invalid(column, e))
    }
}

fn text<'a>(column: &str, value: Cell<'a>) -> Result<Option<&'a str>, Invalid> {
    match value {
        Cell::Null => Ok(None),
        Cell::Text(text) => Ok(Some(text)),
        _ => Err(invalid(column, "not text")),
    }
}

fn integer(column: &str, value: Cell<'_>) -> Result<Option<i64>, Invalid> {
    match value {
        Cell::Null => Ok(None),
        Cell::Integer(i) => Ok(Some(i)),
        _ => Err(invalid(column, "not an integer")),
    }
}

/// As rusqlite reads an `f64`: a real, or an integer (SQLite stores integral reals so).
#[allow(clippy::cast_precision_loss)]
fn real(column: &str, value: Cell<'_>) -> Result<Option<f64>, Invalid> {
    match value {
        Cell::Null => Ok(None),
        Cell::Real(f) => Ok(Some(f)),
        Cell::Integer(i) => Ok(Some(i as f64)),
        Cell::Text(_) => Err(invalid(column, "not a number")),
    }
}

fn required<T>(column: &str, value: Option<T>) -> Result<T, Invalid> {
    value.ok_or_else(|| invalid(column, "is NULL"))
}

/// The next column, as the `Call` field of its type writes it.
struct Row<'c, C> {
    cells: &'c mut C,
    at: usize,
    out: Out,
}

impl<'r, C: Cells<'r>> Row<'_, C> {
    /// The next column's name and value, with what precedes its value written.
    fn next(&mut self) -> Result<(&'static str, Cell<'r>), Invalid> {
        let (column, key) = FIELDS[self.at];
        self.at += 1;
        let value = self.cells.next_cell(column)?;
        self.out.json.extend_from_slice(key.as_bytes());
        Ok((column, value))
    }

    fn string(&mut self) -> Result<&'r str, Invalid> {
        let (column, value) = self.next()?;
        let value = required(column, text(column, value)?)?;
        self.out.serde(column, value)?;
        Ok(value)
    }

    fn optional_string(&mut self) -> Result<(), Invalid> {
        let (column, value) = self.next()?;
        let value = text(column, value)?;
        self.out.serde(column, &value)
    }

    /// An enum stored as its wire name, checked as `call_from` checks it.
    fn enumeration<T: Serialize + DeserializeOwned>(
        &mut self,
        optional: bool,
    ) -> Result<(), Invalid> {
        let (column, value) = self.next()?;
        let value = match text(column, value)? {
            Some(name) => Some(
                crate::convert::parse_enum::<T>(column, name).map_err(|e| invalid(column, e))?,
            ),
            None if optional => None,
            None => return Err(invalid(column, "is NULL")),
        };
        self.out.serde(column, &value)
    }

    fn boolean(&mut self) -> Result<(), Invalid> {
        let (column, value) = self.next()?;
        let value = required(column, integer(column, value)?)? != 0;
        self.out.serde(column, &value)
    }

    fn real(&mut self, optional: bool) -> Result<(), Invalid> {
        let (column, value) = self.next()?;
        let value = real(column, value)?;
        if !optional {
            required(column, value)?;
        }
        self.out.serde(column, &value)
    }

    fn integer(&mut self, optional: bool) -> Result<(), Invalid> {
        let (column, value) = self.next()?;
        let value = integer(column, value)?;
        if !optional {
            required(column, value)?;
        }
        self.out.serde(column, &value)
    }

    fn timestamp(&mut self, optional: bool) -> Result<Option<Timestamp>, Invalid> {
        let (column, value) = self.next()?;
        let value = integer(column, value)?.map(Timestamp::from_micros);
        if !optional {
            required(column, value)?;
        }
        self.out.serde(column, &value)?;
        Ok(value)
    }

    /// A JSON column holding a `T`: `NULL` is written as `null_as` (an error without one); an
    /// object type's empty object is copied; anything else goes through `T`.
    fn json<T: Serialize + DeserializeOwned>(
        &mut self,
        null_as: Option<&[u8]>,
        object: bool,
    ) -> Result<(), Invalid> {
        let (column, value) = self.next()?;
        match (text(column, value)?, null_as) {
            (None, Some(null_as)) => self.out.json.extend_from_slice(null_as),
            (None, None) => return Err(invalid(column, "is NULL")),
            (Some("{}"), _) if object => self.out.json.extend_from_slice(b"{}"),
            (Some(stored), _) => {
                let parsed: T = serde_json::from_str(stored).map_err(|e| invalid(column, e))?;
                self.out.serde(column, &parsed)?;
            }
        }
        Ok(())
    }
}

/// The call of a row as `Call` serializes it, reading [`COLUMNS`] in order.
pub(crate) fn write<'r>(cells: &mut impl Cells<'r>) -> Result<CallJson, Invalid> {
    let mut row = Row {
        cells,
        at: 0,
        out: Out {
            json: Vec::with_capacity(768),
        },
    };
    let call_sid = row.string()?.to_owned();
    row.string()?; // to_number
    row.optional_string()?; // from_number
    row.string()?; // agent_id
    row.optional_string()?; // agent_name
    row.string()?; // organization_id, as client_id
    row.enumeration::<CallType>(false)?;
    row.enumeration::<CallStatus>(false)?;
    row.boolean()?; // recording_enabled
    row.real(false)?; // total_cost
    row.json::<Vec<UsageCharge>>(Some(b"[]"), false)?; // cost_breakdown
    row.real(true)?; // duration_seconds
    row.integer(false)?; // turn_count
    let created_at = row.timestamp(false)?.unwrap_or(Timestamp::from_micros(0));
    row.timestamp(false)?; // updated_at
    row.timestamp(true)?; // start_time
    row.timestamp(true)?; // end_time
    row.optional_string()?; // end_reason
    row.optional_string()?; // billing_status
    row.enumeration::<TelephonyProvider>(true)?;
    row.optional_string()?; // provider_call_id
    row.optional_string()?; // phone_number_id
    row.enumeration::<AnsweredBy>(true)?;
    row.json::<BTreeMap<String, String>>(None, true)?; // dynamic_variables
    row.json::<serde_json::Map<String, serde_json::Value>>(None, true)?; // metadata
    row.json::<Option<ProviderError>>(Some(b"null"), false)?; // provider_error
    row.integer(true)?; // agent_version
    row.optional_string()?; // timezone
    row.enumeration::<AnalysisStatus>(true)?;
    row.json::<Option<CallAnalysis>>(Some(b"null"), false)?; // analysis
    row.optional_string()?; // analysis_error
    row.json::<Option<CallLatency>>(Some(b"null"), false)?; // latency
    let mut json = row.out.json;
    json.push(b'}');
    let json = String::from_utf8(json).map_err(|e| invalid("call_sid", e))?;
    Ok(CallJson {
        created_at,
        call_sid,
        json,
    })
}

/// The calls of Postgres `rows` (a page of `calls` rows), as `Call` serializes them.
pub(crate) fn postgres_page(rows: &[&PgRow]) -> voiceplane_core::Result<Vec<CallJson>> {
    let failed = |e: Invalid| voiceplane_core::Error::Internal(format!("a calls page: {e}"));
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let plan = PgCells::plan(first).map_err(failed)?;
    rows.iter()
        .map(|row| write(&mut PgCells::new(row, &plan)).map_err(failed))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sea_orm::{ConnectionTrait as _, EntityTrait as _, TransactionTrait as _};
    use serde_json::json;
    use voiceplane_core::model::{Call, CallQuery, UsageComponent, UsageUnit};
    use voiceplane_core::page::PageQuery;
    use voiceplane_core::repo::CallQueryRepository as _;

    use super::*;
    use crate::entity::call;
    use crate::{DatabaseOptions, SeaRepository};

    /// Calls with every field set, or none, and text that JSON must escape.
    fn calls(org: &str) -> Vec<Call> {
        let statuses = [
            CallStatus::Queued,
            CallStatus::Ringing,
            CallStatus::InProgress,
            CallStatus::Completed,
            CallStatus::Failed,
            CallStatus::Busy,
            CallStatus::NoAnswer,
            CallStatus::Canceled,
        ];
        let types = [CallType::Inbound, CallType::Outbound, CallType::Preview];
        (0..16)
            .map(|i| {
                let mut c = Call::new(
                    format!("call_{i:016x}"),
                    org,
                    None,
                    types[i % 3],
                    format!("+1415555{i:04}"),
                    Timestamp::from_micros(1_764_000_000_123_456 + i as i64 * 1_000_001),
                );
                c.status = statuses[i % statuses.len()];
                if i.is_multiple_of(2) {
                    continue_full(&mut c, i);
                }
                c
            })
            .collect()
    }

    fn continue_full(c: &mut Call, i: usize) {
        c.from_number = Some("+16505550100".into());
        c.agent_id = format!("agent_{i}");
        c.agent_name = Some("Dana \"the\" agent\\ \u{e9}\u{1F600}\n\t\u{1}".into());
        c.recording_enabled = true;
        c.total_cost = 0.1 + i as f64 / 3.0;
        c.cost_breakdown = vec![UsageCharge {
            id: None,
            component: UsageComponent::Llm,
            provider: "openai".into(),
            model: Some("gpt-4o".into()),
            quantity: 1234.0,
            unit: UsageUnit::InputTokens,
            credits: Some(0.5),
        }];
        c.duration_seconds = Some(61.5);
        c.turn_count = 7;
        c.updated_at = Timestamp::from_micros(1_764_000_100_000_000);
        c.start_time = Some(Timestamp::from_micros(1_764_000_001_000_000));
        c.end_time = Some(Timestamp::from_micros(253_402_300_799_999_999));
        c.end_reason = Some("customer_hangup".into());
        c.billing_status = Some("billed".into());
        c.provider = Some(if i.is_multiple_of(4) {
            TelephonyProvider::Twilio
        } else {
            TelephonyProvider::Telnyx
        });
        c.provider_call_id = Some(format!("CA{i}"));
        c.phone_number_id = Some("pn_1".into());
        c.answered_by = Some([AnsweredBy::Human, AnsweredBy::Machine, AnsweredBy::Unknown][i % 3]);
        c.dynamic_variables = [("name".to_owned(), "Zoë <b>".to_owned())].into();
        c.metadata = json!({"b": [1, 2.5, null, true], "a": {"nested": "x\u{7f}"}, "big": 9007199254740993_u64})
            .as_object()
            .unwrap()
            .clone();
        c.provider_error = Some(ProviderError {
            code: "21215".into(),
            message: "Geo permission \"denied\"".into(),
        });
        c.agent_version = Some(3);
        c.timezone = Some("Europe/Paris".into());
        c.analysis_status = Some(
            [
                AnalysisStatus::Pending,
                AnalysisStatus::Completed,
                AnalysisStatus::Failed,
            ][i % 3],
        );
        c.analysis = Some(CallAnalysis {
            summary: Some("Booked.".into()),
            successful: Some(true),
            fields: json!({"date": "2026-12-01", "count": 2})
                .as_object()
                .unwrap()
                .clone(),
            model: "gpt-4o-mini".into(),
            analyzed_at: Timestamp::from_micros(1_764_000_200_000_001),
        });
        c.analysis_error = Some("none".into());
    }

    /// Each row of a page is exactly what `Call` serializes to, on a file database (where the
    /// direct reads run).
    #[tokio::test]
    async fn rows_are_written_as_calls_serialize() {
        let dir = std::env::temp_dir().join(format!("vp-call-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.join("c.db").display());
        let repo = SeaRepository::connect(&DatabaseOptions::new(url))
            .await
            .unwrap();
        assert!(repo.direct().is_some(), "a file database is read directly");
        written_as_serialized(&repo).await;
        drop(repo);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A page read again with nothing committed in between comes from memory once it has
    /// been read twice (it needs no reader, even with every reader busy); every commit,
    /// through the pool or by another connection to the file (another process), is in the
    /// next read of the page.
    #[tokio::test]
    async fn a_kept_page_follows_every_commit() {
        let dir = std::env::temp_dir().join(format!("vp-call-pages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.db");
        let url = format!("sqlite://{}?mode=rwc", file.display());
        let repo = SeaRepository::connect(&DatabaseOptions::new(url))
            .await
            .unwrap();
        let org = "org_0000000000000001";
        seed(&repo, org).await;
        let statuses = async || first_statuses(&repo, org).await;
        let first = statuses().await;
        assert_eq!(
            first.len(),
            6,
            "a page of 5 reads one more call, to know of a next page"
        );
        assert_eq!(first[0], "call_000000000000000f canceled");

        assert_eq!(statuses().await, first, "read again, and kept");
        let direct = repo.direct().unwrap();
        let busy = direct.hold_readers().await;
        let again = tokio::time::timeout(std::time::Duration::from_secs(5), statuses())
            .await
            .expect("a kept page needs no reader");
        assert_eq!(again, first);
        drop(busy);

        repo.db
            .execute_unprepared(
                "UPDATE calls SET status = 'completed' WHERE call_sid = 'call_000000000000000f'",
            )
            .await
            .unwrap();
        let after_pool = statuses().await;
        assert_eq!(after_pool[0], "call_000000000000000f completed");
        assert_eq!(after_pool[1..], first[1..]);

        let other = rusqlite::Connection::open(&file).unwrap();
        other
            .execute(
                "UPDATE calls SET status = 'busy' WHERE call_sid = 'call_000000000000000e'",
                [],
            )
            .unwrap();
        let after_other = statuses().await;
        assert_eq!(after_other[1], "call_000000000000000e busy");
        // A commit to another table is a commit too: the page is read again, and unchanged.
        other
            .execute("UPDATE organizations SET name = 'U'", [])
            .unwrap();
        assert_eq!(statuses().await, after_other);
        drop((other, repo));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// On Postgres a page read twice is answered from memory, without reading `calls`,
    /// until a commit changes a call of its organization: by this instance, by another, by
    /// any statement.
    #[tokio::test]
    async fn a_kept_postgres_page_follows_every_commit_to_its_calls() {
        let Some((url, schema)) = crate::test_postgres("call_pages") else {
            return;
        };
        let options = DatabaseOptions {
            schema: Some(schema.clone()),
            ..DatabaseOptions::new(url)
        };
        let repo = SeaRepository::connect(&options).await.unwrap();
        let org = "org_0000000000000001";
        let mut written = seed(&repo, org).await;
        let other_org = "org_0000000000000002";
        repo.db
            .execute_unprepared(&format!(
                "INSERT INTO organizations (organization_id, name, created_at) \
                 VALUES ('{other_org}', 'U', 0)"
            ))
            .await
            .unwrap();
        let statuses = async || first_statuses(&repo, org).await;
        // While another transaction holds `calls` locked, only a kept page can be answered.
        let kept = async || -> Vec<String> {
            let lock = repo.db.begin().await.unwrap();
            lock.execute_unprepared("LOCK TABLE calls IN ACCESS EXCLUSIVE MODE")
                .await
                .unwrap();
            let page = tokio::time::timeout(std::time::Duration::from_secs(5), statuses())
                .await
                .expect("a kept page reads no call");
            lock.rollback().await.unwrap();
            page
        };
        let first = statuses().await;
        assert_eq!(first.len(), 6);
        assert_eq!(first[0], "call_000000000000000f canceled");
        assert_eq!(statuses().await, first, "read again, and kept");
        assert_eq!(kept().await, first);

        // Another organization's calls change: this page stays kept.
        let mut foreign = written[0].clone();
        foreign.call_sid = "call_1000000000000000".to_owned();
        foreign.organization_id = other_org.to_owned();
        foreign.provider_call_id = None;
        call::Entity::insert(crate::repo::calls::call_row(&foreign).unwrap())
            .exec_without_returning(&repo.db)
            .await
            .unwrap();
        assert_eq!(kept().await, first);

        repo.db
            .execute_unprepared(
                "UPDATE calls SET status = 'completed' WHERE call_sid = 'call_000000000000000f'",
            )
            .await
            .unwrap();
        let updated = statuses().await;
        assert_eq!(updated[0], "call_000000000000000f completed");
        assert_eq!(updated[1..], first[1..]);

        // Another instance inserts a call: the next read shows it.
        let instance = SeaRepository::connect(&options).await.unwrap();
        let mut newest = written.pop().unwrap();
        newest.call_sid = "call_2000000000000000".to_owned();
        newest.created_at = newest.created_at.add_seconds(1);
        newest.provider_call_id = None;
        call::Entity::insert(crate::repo::calls::call_row(&newest).unwrap())
            .exec_without_returning(&instance.db)
            .await
            .unwrap();
        let inserted = statuses().await;
        assert_eq!(inserted[0].split(' ').next(), Some("call_2000000000000000"));
        assert_eq!(inserted[1..], updated[..5]);
        assert_eq!(statuses().await, inserted);
        assert_eq!(kept().await, inserted);

        instance
            .db
            .execute_unprepared("DELETE FROM calls WHERE call_sid = 'call_2000000000000000'")
            .await
            .unwrap();
        assert_eq!(statuses().await, updated);
        assert_eq!(statuses().await, updated);
        // A writer whose search path does not hold the schema (an operator's psql) still
        // raises the version.
        let txn = instance.db.begin().await.unwrap();
        txn.execute_unprepared("SET LOCAL search_path = public")
            .await
            .unwrap();
        txn.execute_unprepared(&format!(
            "UPDATE {schema}.calls SET status = 'failed' WHERE call_sid = 'call_000000000000000f'"
        ))
        .await
        .unwrap();
        txn.commit().await.unwrap();
        assert_eq!(statuses().await[0], "call_000000000000000f failed");
        instance
            .db
            .execute_unprepared("TRUNCATE calls CASCADE")
            .await
            .unwrap();
        assert_eq!(statuses().await, Vec::<String>::new());
        drop(instance);
        repo.db
            .execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    }

    /// The same on Postgres (rows decoded by sqlx), in a schema of its own.
    #[tokio::test]
    async fn postgres_rows_are_written_as_calls_serialize() {
        let Some((url, schema)) = crate::test_postgres("call_json") else {
            return;
        };
        let repo = SeaRepository::connect(&DatabaseOptions {
            schema: Some(schema.clone()),
            ..DatabaseOptions::new(url)
        })
        .await
        .unwrap();
        written_as_serialized(&repo).await;
        repo.db
            .execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    }

    /// The first page of 5 calls of `org` as JSON, each as `<call_sid> <status>`.
    async fn first_statuses(repo: &SeaRepository, org: &str) -> Vec<String> {
        let page = PageQuery {
            limit: 5,
            after: None,
        };
        let calls = repo
            .call_list_json(org, &CallQuery::default(), &page)
            .await
            .unwrap();
        calls
            .iter()
            .map(|c| {
                let call: serde_json::Value = serde_json::from_str(&c.json).unwrap();
                format!("{} {}", c.call_sid, call["status"].as_str().unwrap())
            })
            .collect()
    }

    /// The schema migrated, and organization `org` with every call of [`calls`], which it
    /// returns as written.
    async fn seed(repo: &SeaRepository, org: &str) -> Vec<Call> {
        repo.migrate().await.unwrap();
        repo.db
            .execute_unprepared(&format!(
                "INSERT INTO organizations (organization_id, name, created_at) VALUES ('{org}', 'T', 0)"
            ))
            .await
            .unwrap();
        let written = calls(org);
        for c in &written {
            call::Entity::insert(crate::repo::calls::call_row(c).unwrap())
                .exec_without_returning(&repo.db)
                .await
                .unwrap();
        }
        written
    }

    /// Every call of [`calls`] written, then read back typed and as JSON: the JSON of each is
    /// `Call`'s own.
    async fn written_as_serialized(repo: &SeaRepository) {
        let org = "org_0000000000000001";
        let mut expected = seed(repo, org).await;
        expected.reverse();
        let page = PageQuery {
            limit: 100,
            after: None,
        };
        let query = CallQuery::default();
        let typed = repo.call_list(org, &query, &page).await.unwrap();
        assert_eq!(typed, expected, "the calls read back as written");
        let written = repo.call_list_json(org, &query, &page).await.unwrap();
        assert_eq!(written.len(), expected.len());
        for (call, json) in typed.iter().zip(written.iter()) {
            assert_eq!(json.json, serde_json::to_string(call).unwrap());
            assert_eq!(
                (json.created_at, &json.call_sid),
                (call.created_at, &call.call_sid)
            );
        }
    }
}
