//! The repository traits of `voiceplane-core`, implemented once for every database SeaORM
//! speaks to, one module per area (each with its row conversions); the query helpers the areas
//! share are here.

use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Select,
};
use voiceplane_core::page::PageQuery;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use crate::convert::db_err;
use crate::entity::organization;
pub(crate) use audit::record_audit;
pub(crate) use events::{record_event, record_if_changed};

mod agents;
mod analysis;
mod api_keys;
mod audit;
pub mod calls;
mod campaigns;
pub(crate) mod changes;
mod documents;
mod events;
mod idempotency;
mod integrations;
pub(crate) mod jobs;
mod locks;
mod organizations;
mod phone_numbers;
mod retention;
mod suppressions;
mod telephony;
pub use telephony::live_outbound;
mod tools;
pub mod usage;
mod webhooks;

/// Restricts `select` to the page after `page.after`, newest first: the row-value comparison
/// `(created_at, id) < (?, ?)` is a range scan on the `(organization_id, created_at, id)`
/// index, so a deep page costs what the first one does.
fn keyset<E: EntityTrait>(
    select: Select<E>,
    created_at: E::Column,
    id: E::Column,
    page: &PageQuery,
) -> Select<E> {
    let select = match &page.after {
        Some(after) => select.filter(Expr::tuple([Expr::col(created_at), Expr::col(id)]).lt(
            Expr::tuple([
                Expr::val(after.created_at.as_micros()),
                Expr::val(after.id.clone()),
            ]),
        )),
        None => select,
    };
    select
        .order_by_desc(created_at)
        .order_by_desc(id)
        .limit(page.fetch())
}

/// `sql`, written with `$n` parameters, as a statement in the dialect of `backend` (SQLite
/// numbers them `?n`).
pub(crate) fn statement(
    backend: sea_orm::DatabaseBackend,
    sql: &str,
    values: impl IntoIterator<Item = sea_orm::Value>,
) -> sea_orm::Statement {
    let sql = match backend {
        sea_orm::DatabaseBackend::Postgres => sql.to_owned(),
        _ => sql.replace('$', "?"),
    };
    sea_orm::Statement::from_sql_and_values(backend, sql, values)
}

/// Runs `sql`, written with `$n` parameters, in the dialect of `db`; returns the rows changed.
pub(crate) async fn execute<C: ConnectionTrait>(
    db: &C,
    sql: &str,
    values: Vec<sea_orm::Value>,
) -> Result<u64> {
    Ok(db
        .execute_raw(statement(db.get_database_backend(), sql, values))
        .await
        .map_err(db_err)?
        .rows_affected())
}

/// The row `select` finds, converted; `None` when there is none.
async fn one<E, T, C>(
    db: &C,
    select: Select<E>,
    convert: impl FnOnce(E::Model) -> Result<T>,
) -> Result<Option<T>>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    select
        .one(db)
        .await
        .map_err(db_err)?
        .map(convert)
        .transpose()
}

/// Every row `select` finds, converted.
async fn all<E, T, C>(
    db: &C,
    select: Select<E>,
    convert: impl FnMut(E::Model) -> Result<T>,
) -> Result<Vec<T>>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    select
        .all(db)
        .await
        .map_err(db_err)?
        .into_iter()
        .map(convert)
        .collect()
}

/// Ids among `ids` found by `select` (already filtered by organization) in column `col`.
async fn existing_ids<E, C>(
    db: &C,
    select: Select<E>,
    col: E::Column,
    ids: &[String],
) -> Result<Vec<String>>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    select
        .select_only()
        .column(col)
        .filter(col.is_in(ids.iter().cloned()))
        .into_tuple::<String>()
        .all(db)
        .await
        .map_err(db_err)
}

/// Sets `column = now` on the row whose `key` is `id` unless `column` is already later than
/// `not_before`: a usage timestamp written at most once per row per interval, however many
/// requests race to write it.
async fn touch<E, C>(
    db: &C,
    key: E::Column,
    id: &str,
    column: E::Column,
    now: Timestamp,
    not_before: Timestamp,
) -> Result<()>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    E::update_many()
        .col_expr(column, Expr::val(now.as_micros()))
        .filter(key.eq(id))
        .filter(column.is_null().or(column.lt(not_before.as_micros())))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Serializes writes that must see a stable view of an organization's rows (reference checks,
/// the last-admin rule, integration deletion): a no-op write of the organization row takes its
/// row lock on Postgres and the database write lock on SQLite, so concurrent such
/// transactions of one organization run one after the other.
async fn lock_org<C: ConnectionTrait>(db: &C, organization_id: &str) -> Result<()> {
    organization::Entity::update_many()
        .col_expr(
            organization::Column::Name,
            Expr::col(organization::Column::Name),
        )
        .filter(organization::Column::OrganizationId.eq(organization_id))
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Fails with a 400 naming the ids of `ids` that `select` (filtered by organization) does not
/// find in `col`.
async fn require_existing<E, C>(
    db: &C,
    select: Select<E>,
    col: E::Column,
    ids: &[String],
    field: &str,
) -> Result<()>
where
    E: EntityTrait,
    C: ConnectionTrait,
{
    let found = existing_ids(db, select, col, ids).await?;
    let missing: Vec<&str> = ids
        .iter()
        .filter(|id| !found.contains(id))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{field}: {} not found in this organization",
            missing.join(", ")
        )))
    }
}
