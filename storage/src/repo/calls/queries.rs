//! The call list under its filters, and call statistics: the one place where the transcript
//! filter `q` speaks each database's full-text dialect (FTS5 `MATCH` over
//! `call_messages_fts` on SQLite, `tsv @@ to_tsquery('english', …)` under a GIN index on
//! Postgres) and where the day of a call is computed from its micros.
//!
//! Every equality filter has an index `(organization_id, <column>, created_at, call_sid)`
//! (migration m0008), so a filtered page is a range scan ending in the keyset columns,
//! however deep it is. The statements are public so that benchmarks can show their plans.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, SimpleExpr, UnionType};
use sea_orm::sqlx::postgres::PgRow;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, EntityTrait, FromQueryResult, QueryFilter,
    QueryResult, QuerySelect, QueryTrait, Select, Statement, Value, Values,
};
use voiceplane_core::Result;
use voiceplane_core::model::{
    Call, CallJson, CallQuery, CallStats, StatsGroup, StatsGroupBy, StatsTotals,
};
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::CallQueryRepository;

use super::call_from;
use crate::SeaRepository;
use crate::convert::db_err;
use crate::entity::call;
use crate::kept::{Looked, page_key};
use crate::repo::keyset;

/// `terms` as a full-text query that requires every one of them, in `backend`'s syntax. The
/// terms are letters and digits only (`search_terms`), so quoting cannot be escaped from.
fn all_words(backend: DatabaseBackend, terms: &[String]) -> String {
    match backend {
        DatabaseBackend::Postgres => terms.join(" & "),
        _ => terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" AND "),
    }
}

/// `calls.call_sid` is among the calls of `organization_id` with a message matching every
/// one of `terms`. (sea-query reads `$n` placeholders on Postgres and `?` on SQLite.)
fn transcript_match(
    backend: DatabaseBackend,
    organization_id: &str,
    terms: &[String],
) -> SimpleExpr {
    let sql = match backend {
        DatabaseBackend::Postgres => {
            "calls.call_sid IN (SELECT m.call_sid FROM call_messages m \
             WHERE m.tsv @@ to_tsquery('english', $1) AND m.organization_id = $2)"
        }
        _ => {
            "calls.call_sid IN (SELECT m.call_sid FROM call_messages_fts f \
             JOIN call_messages m ON m.message_id = f.rowid \
             WHERE call_messages_fts MATCH ? AND m.organization_id = ?)"
        }
    };
    Expr::cust_with_values(sql, [all_words(backend, terms), organization_id.to_owned()])
}

/// The organization's calls restricted by `query`.
fn filtered(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
) -> Select<call::Entity> {
    let mut select = call::Entity::find().filter(call::Column::OrganizationId.eq(organization_id));
    if let Some(status) = query.status {
        select = select.filter(call::Column::Status.eq(status.as_str()));
    }
    if let Some(call_type) = query.call_type {
        select = select.filter(call::Column::CallType.eq(call_type.as_str()));
    }
    if let Some(agent_id) = &query.agent_id {
        select = select.filter(call::Column::AgentId.eq(agent_id));
    }
    if let Some(number) = &query.to_number {
        select = select.filter(call::Column::ToNumber.eq(number));
    }
    if let Some(number) = &query.from_number {
        select = select.filter(call::Column::FromNumber.eq(number));
    }
    if let Some(id) = &query.phone_number_id {
        select = select.filter(call::Column::PhoneNumberId.eq(id));
    }
    if let Some(version) = query.agent_version {
        select = select.filter(call::Column::AgentVersion.eq(version));
    }
    if let Some(successful) = query.successful {
        select = select.filter(call::Column::Successful.eq(successful));
    }
    if let Some(after) = query.created_after {
        select = select.filter(call::Column::CreatedAt.gte(after.as_micros()));
    }
    if let Some(before) = query.created_before {
        select = select.filter(call::Column::CreatedAt.lt(before.as_micros()));
    }
    if !query.terms.is_empty() {
        select = select.filter(transcript_match(backend, organization_id, &query.terms));
    }
    select
}

fn page_select(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
    page: &PageQuery,
) -> Select<call::Entity> {
    keyset(
        filtered(backend, organization_id, query),
        call::Column::CreatedAt,
        call::Column::CallSid,
        page,
    )
}

/// The index a SQLite page must walk: that of the first equality filter given (agent, then
/// numbers, then status, then type), else the keyset index. SQLite's planner, once `ANALYZE`
/// has run, judges `organization_id` useless (one organization holds every row) and may pick
/// a skip-scan of another filter's index plus a sort of all its rows: 230 ms for a page that
/// costs 0.5 ms on the right index, varying with the cursor. Postgres plans it well alone.
fn sqlite_index(query: &CallQuery) -> Option<&'static str> {
    if !query.terms.is_empty() {
        // The transcript match drives the plan; its calls are few and found by key.
        return None;
    }
    Some(if query.agent_id.is_some() {
        "ix_calls_agent"
    } else if query.phone_number_id.is_some() {
        "ix_calls_phone_number"
    } else if query.to_number.is_some() {
        "ix_calls_to_number"
    } else if query.from_number.is_some() {
        "ix_calls_from_number"
    } else if query.status.is_some() {
        "ix_calls_status"
    } else if query.call_type.is_some() {
        "ix_calls_call_type"
    } else {
        "ix_calls_keyset"
    })
}

/// The statement of one page of the call list.
///
/// Its SQL depends only on which filters are given and whether the page has a cursor (its
/// shape), and SeaORM building it for every page was a tenth of a page's CPU: each thread keeps
/// the SQL of the shapes it has built, and a page of a known shape only lists its values, in
/// the order SeaORM binds them (`list_values`; a test compares the two for every shape).
/// With words to match in transcripts the statement is always built.
pub fn list_statement(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
    page: &PageQuery,
) -> Statement {
    thread_local! {
        static SHAPES: RefCell<HashMap<(bool, u16), String>> = RefCell::default();
    }
    if !query.terms.is_empty() {
        return built_list_statement(backend, organization_id, query, page);
    }
    let shape = (
        backend == DatabaseBackend::Postgres,
        list_shape(query, page),
    );
    let sql = SHAPES.with_borrow_mut(|shapes| {
        shapes
            .entry(shape)
            .or_insert_with(|| built_list_statement(backend, organization_id, query, page).sql)
            .clone()
    });
    Statement {
        sql,
        values: Some(Values(list_values(organization_id, query, page))),
        db_backend: backend,
    }
}

/// Which filters `query` gives and whether `page` has a cursor, one bit each.
fn list_shape(query: &CallQuery, page: &PageQuery) -> u16 {
    [
        query.status.is_some(),
        query.call_type.is_some(),
        query.agent_id.is_some(),
        query.to_number.is_some(),
        query.from_number.is_some(),
        query.phone_number_id.is_some(),
        query.agent_version.is_some(),
        query.successful.is_some(),
        query.created_after.is_some(),
        query.created_before.is_some(),
        page.after.is_some(),
    ]
    .into_iter()
    .enumerate()
    .fold(0, |shape, (bit, given)| shape | (u16::from(given) << bit))
}

/// The values of [`built_list_statement`] without words to match, in the order it binds them:
/// the organization, the filters as [`filtered`] adds them, the cursor, the limit.
fn list_values(organization_id: &str, query: &CallQuery, page: &PageQuery) -> Vec<Value> {
    let text = |s: &str| Value::String(Some(s.to_owned()));
    let mut values = vec![text(organization_id)];
    values.extend(query.status.map(|s| text(s.as_str())));
    values.extend(query.call_type.map(|t| text(t.as_str())));
    values.extend(query.agent_id.as_deref().map(text));
    values.extend(query.to_number.as_deref().map(text));
    values.extend(query.from_number.as_deref().map(text));
    values.extend(query.phone_number_id.as_deref().map(text));
    values.extend(query.agent_version.map(Value::from));
    values.extend(query.successful.map(Value::from));
    values.extend(query.created_after.map(|t| Value::from(t.as_micros())));
    values.extend(query.created_before.map(|t| Value::from(t.as_micros())));
    if let Some(after) = &page.after {
        values.push(Value::from(after.created_at.as_micros()));
        values.push(text(&after.id));
    }
    values.push(Value::from(page.fetch()));
    values
}

/// [`list_statement`], built by SeaORM.
fn built_list_statement(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
    page: &PageQuery,
) -> Statement {
    let mut statement = page_select(backend, organization_id, query, page).build(backend);
    if backend == DatabaseBackend::Sqlite
        && let Some(index) = sqlite_index(query)
    {
        statement.sql = statement.sql.replacen(
            "FROM \"calls\"",
            &format!("FROM \"calls\" INDEXED BY {index}"),
            1,
        );
    }
    statement
}

/// What the calls are grouped by, and the key shown for a group (an expression of it). Days
/// are grouped by the integer day number of `created_at` (micros), which is cheap per row;
/// only the groups' keys are formatted, as the UTC date `YYYY-MM-DD`.
fn grouping(backend: DatabaseBackend, by: StatsGroupBy) -> (SimpleExpr, SimpleExpr) {
    let column = |c: call::Column| (Expr::col(c), Expr::col(c));
    match by {
        StatsGroupBy::Day => (
            Expr::cust("created_at / 86400000000"),
            Expr::cust(match backend {
                DatabaseBackend::Postgres => {
                    "to_char(to_timestamp(created_at / 86400000000 * 86400) AT TIME ZONE 'UTC', \
                     'YYYY-MM-DD')"
                }
                _ => "strftime('%Y-%m-%d', created_at / 86400000000 * 86400, 'unixepoch')",
            }),
        ),
        StatsGroupBy::Agent => column(call::Column::AgentId),
        StatsGroupBy::Status => column(call::Column::Status),
        StatsGroupBy::EndReason => column(call::Column::EndReason),
        StatsGroupBy::AgentVersion => (
            Expr::col(call::Column::AgentVersion),
            Expr::cust("CAST(agent_version AS TEXT)"),
        ),
    }
}

/// `select` reduced to the aggregates, as `calls, total_cost, total_duration_seconds,
/// avg_duration_seconds`; sums are doubles on both databases (`DOUBLE PRECISION` is `REAL`
/// to SQLite).
fn aggregates(select: Select<call::Entity>) -> Select<call::Entity> {
    select
        .select_only()
        .expr_as(Expr::cust("COUNT(*)"), "calls")
        .expr_as(
            Expr::cust("CAST(COALESCE(SUM(total_cost), 0) AS DOUBLE PRECISION)"),
            "total_cost",
        )
        .expr_as(
            Expr::cust("CAST(COALESCE(SUM(duration_seconds), 0) AS DOUBLE PRECISION)"),
            "total_duration_seconds",
        )
        .expr_as(
            Expr::cust("CAST(AVG(duration_seconds) AS DOUBLE PRECISION)"),
            "avg_duration_seconds",
        )
        // Calls without a verdict are NULL to AVG, which skips them: NULL when none has one.
        .expr_as(
            Expr::cust(
                "CAST(AVG(CASE WHEN successful THEN 1.0 WHEN NOT successful THEN 0.0 END) \
                 AS DOUBLE PRECISION)",
            ),
            "success_rate",
        )
}

/// The calls of `query`'s totals, marked `total = 1` and with no key, in the columns of a
/// group's row.
fn totals_select(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
) -> Select<call::Entity> {
    aggregates(filtered(backend, organization_id, query))
        .expr_as(Expr::cust("1"), "total")
        .expr_as(Expr::cust("CAST(NULL AS TEXT)"), "key")
}

/// One row per group of `query`'s calls, marked `total = 0`.
fn groups_select(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
    by: StatsGroupBy,
) -> Select<call::Entity> {
    let (bucket, key) = grouping(backend, by);
    aggregates(filtered(backend, organization_id, query))
        .expr_as(Expr::cust("0"), "total")
        .expr_as(key, "key")
        .group_by(bucket)
}

/// The statement of call statistics: the totals row, and with `group_by` one row per key
/// after it. Totals and groups are one statement (`UNION ALL`), so that they are read from
/// one snapshot and always agree: as two statements, a call written between them (and on
/// Postgres, under READ COMMITTED, even inside one transaction) was counted by one and not
/// the other.
pub fn stats_statement(
    backend: DatabaseBackend,
    organization_id: &str,
    query: &CallQuery,
    group_by: Option<StatsGroupBy>,
) -> Statement {
    let totals = totals_select(backend, organization_id, query);
    match group_by {
        None => totals.build(backend),
        Some(by) => {
            let mut both = totals.into_query();
            both.union(
                UnionType::All,
                groups_select(backend, organization_id, query, by).into_query(),
            );
            backend.build(&both)
        }
    }
}

/// A row of [`stats_statement`].
#[derive(Debug, FromQueryResult)]
struct StatsRow {
    calls: i64,
    total_cost: f64,
    total_duration_seconds: f64,
    avg_duration_seconds: Option<f64>,
    success_rate: Option<f64>,
    total: i32,
    key: Option<String>,
}

/// The number Postgres raises at every commit that changes an organization's calls
/// (migration m0026); 0 before its first.
const CALLS_VERSION: &str = "SELECT version FROM call_versions WHERE organization_id = $1";

impl SeaRepository {
    /// A page of calls on Postgres, as JSON. A page read twice is kept with its
    /// organization's calls version, read before the page, and answered while a read of the
    /// version (one row, one round trip) finds it unchanged: no commit has changed a call of
    /// the organization since, on any instance. A page matching words in transcripts is always
    /// read: removing a transcript leaves its call's row alone.
    async fn postgres_page(
        &self,
        organization_id: &str,
        query: &CallQuery,
        page: &PageQuery,
    ) -> Result<Arc<Vec<CallJson>>> {
        let statement = list_statement(DatabaseBackend::Postgres, organization_id, query, page);
        if !query.terms.is_empty() {
            // Through the pool: a search may be slow, and must not hold up the hot reads.
            let rows = PgRows::Pooled(self.db.query_all_raw(statement).await.map_err(db_err)?);
            return Ok(Arc::new(super::json::postgres_page(&rows.rows())?));
        }
        let key = page_key(&statement);
        let version = match self.pages.look(&key) {
            Looked::Kept(kept) => {
                let version = self.calls_version(organization_id).await?;
                if version == kept.mark {
                    return Ok(kept.calls);
                }
                Some(version)
            }
            Looked::Again => Some(self.calls_version(organization_id).await?),
            Looked::First => None,
        };
        let calls = super::json::postgres_page(&self.postgres_rows(statement).await?.rows())?;
        let calls = Arc::new(calls);
        if let Some(version) = version {
            self.pages.keep(key, version, &calls);
        }
        Ok(calls)
    }

    /// The calls version of `organization_id` (see [`CALLS_VERSION`]), one read for the
    /// requests waiting together (`versions.rs`).
    async fn calls_version(&self, organization_id: &str) -> Result<i64> {
        self.call_versions
            .current(organization_id, async || {
                let statement = Statement::from_sql_and_values(
                    DatabaseBackend::Postgres,
                    CALLS_VERSION,
                    [Value::from(organization_id)],
                );
                let rows = self.postgres_rows(statement).await?;
                rows.rows().first().map_or(Ok(0), |row| {
                    sea_orm::sqlx::Row::try_get::<i64, _>(*row, 0)
                        .map_err(|e| db_err(sea_orm::DbErr::Type(e.to_string())))
                })
            })
            .await
    }

    /// The rows of `statement` on a connection of the hot reads (`hot.rs`), or through the
    /// pool while those are not yet taken.
    async fn postgres_rows(&self, statement: Statement) -> Result<PgRows> {
        if let Some(hot) = &self.hot
            && let Some(rows) = hot.all(&statement).await.map_err(db_err)?
        {
            return Ok(PgRows::Hot(rows));
        }
        let rows = self.db.query_all_raw(statement).await.map_err(db_err)?;
        Ok(PgRows::Pooled(rows))
    }
}

/// Rows of Postgres, as a hot connection or the pool returned them.
enum PgRows {
    Hot(Vec<PgRow>),
    Pooled(Vec<QueryResult>),
}

impl PgRows {
    fn rows(&self) -> Vec<&PgRow> {
        match self {
            Self::Hot(rows) => rows.iter().collect(),
            Self::Pooled(rows) => rows.iter().filter_map(QueryResult::try_as_pg_row).collect(),
        }
    }
}

#[async_trait]
impl CallQueryRepository for SeaRepository {
    async fn call_list(
        &self,
        organization_id: &str,
        query: &CallQuery,
        page: &PageQuery,
    ) -> Result<Vec<Call>> {
        let backend = self.db.get_database_backend();
        let statement = list_statement(backend, organization_id, query, page);
        if let Some(direct) = self.direct() {
            return direct
                .run(move |reads| reads.all(&statement, &crate::direct::CALL))
                .await?
                .into_iter()
                .map(call_from)
                .collect();
        }
        call::Entity::find()
            .from_raw_sql(statement)
            .all(&self.db)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(call_from)
            .collect()
    }

    async fn call_list_json(
        &self,
        organization_id: &str,
        query: &CallQuery,
        page: &PageQuery,
    ) -> Result<Arc<Vec<CallJson>>> {
        let backend = self.db.get_database_backend();
        let Some(direct) = self.direct() else {
            if backend == DatabaseBackend::Postgres {
                return self.postgres_page(organization_id, query, page).await;
            }
            let calls = self.call_list(organization_id, query, page).await?;
            return Ok(Arc::new(CallJson::of_all(&calls)?));
        };
        direct
            .calls_page(list_statement(backend, organization_id, query, page))
            .await
    }

    async fn call_stats(
        &self,
        organization_id: &str,
        query: &CallQuery,
        group_by: Option<StatsGroupBy>,
    ) -> Result<CallStats> {
        let backend = self.db.get_database_backend();
        let rows =
            StatsRow::find_by_statement(stats_statement(backend, organization_id, query, group_by))
                .all(&self.db)
                .await
                .map_err(db_err)?;
        let mut totals = StatsTotals {
            calls: 0,
            total_cost: 0.0,
            total_duration_seconds: 0.0,
            avg_duration_seconds: None,
            success_rate: None,
        };
        let mut groups = Vec::new();
        for row in rows {
            if row.total == 1 {
                totals = StatsTotals {
                    calls: row.calls,
                    total_cost: row.total_cost,
                    total_duration_seconds: row.total_duration_seconds,
                    avg_duration_seconds: row.avg_duration_seconds,
                    success_rate: row.success_rate,
                };
            } else {
                groups.push(StatsGroup {
                    key: row.key,
                    calls: row.calls,
                    total_cost: row.total_cost,
                    total_duration_seconds: row.total_duration_seconds,
                    avg_duration_seconds: row.avg_duration_seconds,
                    success_rate: row.success_rate,
                });
            }
        }
        // The same order on both databases, whose NULL orders differ: keys ascending, the
        // calls without a key last.
        groups.sort_by(|a, b| (a.key.is_none(), &a.key).cmp(&(b.key.is_none(), &b.key)));
        Ok(CallStats { totals, groups })
    }
}

#[cfg(test)]
mod tests {
    use voiceplane_core::model::{CallStatus, CallType};
    use voiceplane_core::page::Cursor;
    use voiceplane_core::time::Timestamp;

    use super::*;

    /// The query and page of `shape` (see [`list_shape`]), with values that differ by `n`.
    fn of_shape(shape: u16, n: i64) -> (CallQuery, PageQuery) {
        let given = |bit: u16| shape & (1 << bit) != 0;
        let text = |bit: u16, what: &str| given(bit).then(|| format!("{what}_{n}"));
        let at = |bit: u16, micros: i64| given(bit).then(|| Timestamp::from_micros(micros + n));
        let query = CallQuery {
            status: given(0).then_some(if n == 0 {
                CallStatus::Completed
            } else {
                CallStatus::Failed
            }),
            call_type: given(1).then_some(if n == 0 {
                CallType::Inbound
            } else {
                CallType::Outbound
            }),
            agent_id: text(2, "agent"),
            to_number: text(3, "+1555000"),
            from_number: text(4, "+1555111"),
            phone_number_id: text(5, "pn"),
            agent_version: given(6).then_some(3 + n),
            successful: given(7).then_some(n == 0),
            created_after: at(8, 1_700_000_000_000_000),
            created_before: at(9, 1_800_000_000_000_000),
            terms: Vec::new(),
        };
        let page = PageQuery {
            limit: u32::try_from(20 + n).unwrap_or(20),
            after: given(10).then(|| Cursor {
                created_at: Timestamp::from_micros(1_750_000_000_000_000 + n),
                id: format!("call_{n}"),
            }),
        };
        (query, page)
    }

    #[test]
    fn a_kept_statement_is_what_seaorm_builds_for_every_shape() {
        for backend in [DatabaseBackend::Sqlite, DatabaseBackend::Postgres] {
            for shape in 0..(1u16 << 11) {
                let (first, first_page) = of_shape(shape, 0);
                assert_eq!(list_shape(&first, &first_page), shape);
                // The first page of a shape builds and keeps its SQL; the second reuses it.
                let _ = list_statement(backend, "org_a", &first, &first_page);
                let (query, page) = of_shape(shape, 1);
                let kept = list_statement(backend, "org_b", &query, &page);
                let built = built_list_statement(backend, "org_b", &query, &page);
                assert_eq!(kept.sql, built.sql, "{backend:?}, shape {shape:#b}");
                assert_eq!(kept.values, built.values, "{backend:?}, shape {shape:#b}");
            }
        }
    }

    #[test]
    fn words_to_match_are_always_built() {
        let query = CallQuery {
            terms: vec!["refund".into()],
            ..CallQuery::default()
        };
        let page = PageQuery {
            limit: 10,
            after: None,
        };
        let statement = list_statement(DatabaseBackend::Sqlite, "org", &query, &page);
        assert!(statement.sql.contains("MATCH"));
        assert_eq!(
            statement.values,
            built_list_statement(DatabaseBackend::Sqlite, "org", &query, &page).values
        );
    }
}
