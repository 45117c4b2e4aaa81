//! Usage and cost: a call's new usage items written with the call, the month's credits they
//! add to, the credit limit checked at dial time, the price book and the usage report.

use std::collections::BTreeMap;

use async_trait::async_trait;
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, QuerySelect, Statement,
    TransactionTrait,
};
use voiceplane_core::model::{
    AuditedChange, Call, PriceBook, UsageGroup, UsageGroupBy, UsageReport, UsageTotals,
    total_credits,
};
use voiceplane_core::repo::{Change, UsageRepository};
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use super::{execute, one, record_audit, statement};
use crate::SeaRepository;
use crate::convert::{db_err, from_json, to_json};
use crate::entity::{call_usage, organization, price_book};

/// The calendar month (UTC) of `at`, `YYYY-MM`: the key of the month's credits.
fn month_of(at: Timestamp) -> String {
    at.to_rfc3339().chars().take(7).collect()
}

/// Writes the usage items `after` has beyond those of `before` (a change only ever appends
/// them), and adds their credits to the month of the call's creation.
pub(crate) async fn charged<C: ConnectionTrait>(db: &C, before: &Call, after: &Call) -> Result<()> {
    let new = after
        .cost_breakdown
        .get(before.cost_breakdown.len()..)
        .unwrap_or_default();
    if new.is_empty() {
        return Ok(());
    }
    let rows = new.iter().map(|c| call_usage::ActiveModel {
        usage_id: NotSet,
        organization_id: Set(after.organization_id.clone()),
        call_sid: Set(after.call_sid.clone()),
        agent_id: Set(after.agent_id.clone()),
        call_created_at: Set(after.created_at.as_micros()),
        component: Set(c.component.as_str().to_owned()),
        provider: Set(c.provider.clone()),
        model: Set(c.model.clone()),
        quantity: Set(c.quantity),
        unit: Set(c.unit.as_str().to_owned()),
        credits: Set(c.credits),
        created_at: Set(after.updated_at.as_micros()),
        item_id: Set(c.id.clone()),
    });
    call_usage::Entity::insert_many(rows)
        .exec_without_returning(db)
        .await
        .map_err(db_err)?;
    let credits = total_credits(new);
    if credits > 0.0 {
        execute(
            db,
            "INSERT INTO credit_months (organization_id, month, credits) VALUES ($1, $2, $3) \
             ON CONFLICT (organization_id, month) \
             DO UPDATE SET credits = credit_months.credits + excluded.credits",
            vec![
                after.organization_id.clone().into(),
                month_of(after.created_at).into(),
                credits.into(),
            ],
        )
        .await?;
    }
    Ok(())
}

/// 422 when the credits of the calls created this month (that of `now`) have reached the
/// organization's `limit`. Called with the organization's row locked, like the concurrency
/// limit, so that it reads the month's credits after every dial before it.
pub(super) async fn refuse_out_of_credit<C: ConnectionTrait>(
    db: &C,
    organization_id: &str,
    limit: f64,
    now: Timestamp,
) -> Result<()> {
    #[derive(FromQueryResult)]
    struct Spent {
        credits: f64,
    }
    let month = month_of(now);
    let spent = Spent::find_by_statement(statement(
        db.get_database_backend(),
        "SELECT credits FROM credit_months WHERE organization_id = $1 AND month = $2",
        [organization_id.into(), month.clone().into()],
    ))
    .one(db)
    .await
    .map_err(db_err)?
    .map_or(0.0, |s| s.credits);
    if spent >= limit {
        return Err(Error::Unprocessable(format!(
            "the organization's calls of {month} have used {spent} credits, its \
             monthly_credit_limit of {limit}; raise the limit to dial before next month"
        )));
    }
    Ok(())
}

/// A row of [`report_statement`]: `part` 0 counts the window's calls, 1 sums its credits, 2
/// counts a group's calls, 3 sums a group's quantity and credits of one unit.
#[derive(Debug, FromQueryResult)]
struct ReportRow {
    part: i32,
    key: Option<String>,
    unit: Option<String>,
    n: i64,
    quantity: f64,
    credits: f64,
}

/// What a group is, over the calls and over their items: the expression grouped by, and the
/// key shown. Days are grouped by the integer day number of the micros (cheap per row); only
/// the groups' keys become text.
fn grouping(by: UsageGroupBy, created_at: &str) -> (String, String) {
    match by {
        UsageGroupBy::Day => {
            let bucket = format!("{created_at} / 86400000000");
            let key = format!("CAST({bucket} AS TEXT)");
            (bucket, key)
        }
        UsageGroupBy::Agent => ("agent_id".to_owned(), "agent_id".to_owned()),
        UsageGroupBy::Component => ("component".to_owned(), "component".to_owned()),
        UsageGroupBy::Provider => ("provider".to_owned(), "provider".to_owned()),
    }
}

/// The usage report in one statement (`UNION ALL`), so that its parts come from one snapshot
/// and agree. With groups, the totals the groups add up to are not read again: credits are
/// the sum of the groups', and so are calls grouped by day or agent (every call is in one
/// group); calls grouped by component or provider can be in several, so they are counted.
pub fn report_statement(
    backend: DbBackend,
    organization_id: &str,
    after: Option<Timestamp>,
    before: Option<Timestamp>,
    group_by: Option<UsageGroupBy>,
) -> Statement {
    let mut values: Vec<sea_orm::Value> = vec![organization_id.into()];
    let mut window = |column: &str| {
        let mut w = String::new();
        for (bound, op) in [(after, ">="), (before, "<")] {
            if let Some(at) = bound {
                values.push(at.as_micros().into());
                w.push_str(&format!(" AND {column} {op} ${}", values.len()));
            }
        }
        w
    };
    let calls_where = format!("organization_id = $1{}", window("created_at"));
    let items_where = format!("organization_id = $1{}", window("call_created_at"));
    let zero = "CAST(0 AS DOUBLE PRECISION)";
    let none = "CAST(NULL AS TEXT)";
    let credits = "CAST(COALESCE(SUM(credits), 0) AS DOUBLE PRECISION)";
    let mut parts = Vec::new();
    if !matches!(group_by, Some(UsageGroupBy::Day | UsageGroupBy::Agent)) {
        parts.push(format!(
            "SELECT 0 AS part, {none} AS key, {none} AS unit, COUNT(*) AS n, {zero} AS quantity, \
             {zero} AS credits FROM calls WHERE {calls_where}"
        ));
    }
    match group_by {
        None => parts.push(format!(
            "SELECT 1 AS part, {none} AS key, {none} AS unit, 0 AS n, {zero} AS quantity, \
             {credits} AS credits FROM call_usage WHERE {items_where}"
        )),
        Some(by) => {
            let (bucket, key) = grouping(by, "call_created_at");
            parts.push(match by {
                UsageGroupBy::Day | UsageGroupBy::Agent => {
                    let (bucket, key) = grouping(by, "created_at");
                    format!(
                        "SELECT 2 AS part, {key} AS key, {none} AS unit, COUNT(*) AS n, \
                         {zero} AS quantity, {zero} AS credits FROM calls \
                         WHERE {calls_where} GROUP BY {bucket}"
                    )
                }
                UsageGroupBy::Component | UsageGroupBy::Provider => format!(
                    "SELECT 2 AS part, {key} AS key, {none} AS unit, COUNT(DISTINCT call_sid) AS n, \
                     {zero} AS quantity, {zero} AS credits \
                     FROM call_usage WHERE {items_where} GROUP BY {bucket}"
                ),
            });
            parts.push(format!(
                "SELECT 3 AS part, {key} AS key, unit, COUNT(*) AS n, \
                 CAST(SUM(quantity) AS DOUBLE PRECISION) AS quantity, {credits} AS credits \
                 FROM call_usage WHERE {items_where} GROUP BY {bucket}, unit"
            ));
        }
    }
    statement(backend, &parts.join(" UNION ALL "), values)
}

/// `YYYY-MM-DD` of an integer day number since the epoch.
fn day_name(day: &str) -> String {
    day.parse::<i64>().map_or_else(
        |_| day.to_owned(),
        |d| {
            Timestamp::from_micros(d.saturating_mul(86_400_000_000))
                .to_rfc3339()
                .chars()
                .take(10)
                .collect()
        },
    )
}

#[async_trait]
impl UsageRepository for SeaRepository {
    async fn price_book(&self, organization_id: &str) -> Result<PriceBook> {
        Ok(one(
            &self.db,
            price_book::Entity::find_by_id(organization_id.to_owned()),
            |m| from_json::<PriceBook>("price_books.prices", &m.prices),
        )
        .await?
        .unwrap_or_default())
    }

    async fn price_book_set(
        &self,
        organization_id: &str,
        change: Change<'_, PriceBook>,
        audit: &AuditedChange,
        now: Timestamp,
    ) -> Result<PriceBook> {
        let txn = self.db.begin().await.map_err(db_err)?;
        // Two replacements of one book take turns (the first has no row to lock).
        one(
            &txn,
            organization::Entity::find_by_id(organization_id.to_owned())
                .lock(sea_orm::sea_query::LockType::NoKeyUpdate),
            |_| Ok(()),
        )
        .await?
        .ok_or_else(|| Error::not_found("this organization no longer exists"))?;
        let before = one(
            &txn,
            price_book::Entity::find_by_id(organization_id.to_owned()),
            |m| from_json::<PriceBook>("price_books.prices", &m.prices),
        )
        .await?
        .unwrap_or_default();
        let after = audit.change(&before, change)?;
        execute(
            &txn,
            "INSERT INTO price_books (organization_id, prices, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (organization_id) \
             DO UPDATE SET prices = excluded.prices, updated_at = excluded.updated_at",
            vec![
                organization_id.into(),
                to_json(&after)?.into(),
                now.as_micros().into(),
            ],
        )
        .await?;
        let entry = audit.entry(organization_id, Some(&before), Some(&after))?;
        record_audit(&txn, organization_id, &entry).await?;
        txn.commit().await.map_err(db_err)?;
        Ok(after)
    }

    async fn usage_report(
        &self,
        organization_id: &str,
        after: Option<Timestamp>,
        before: Option<Timestamp>,
        group_by: Option<UsageGroupBy>,
    ) -> Result<UsageReport> {
        let backend = self.db.get_database_backend();
        let rows = ReportRow::find_by_statement(report_statement(
            backend,
            organization_id,
            after,
            before,
            group_by,
        ))
        .all(&self.db)
        .await
        .map_err(db_err)?;
        let mut totals = UsageTotals {
            calls: 0,
            credits: 0.0,
        };
        let mut groups: BTreeMap<String, UsageGroup> = BTreeMap::new();
        let name = |key: Option<String>| {
            let key = key.unwrap_or_default();
            match group_by {
                Some(UsageGroupBy::Day) => day_name(&key),
                _ => key,
            }
        };
        let counted = !matches!(group_by, Some(UsageGroupBy::Day | UsageGroupBy::Agent));
        for row in rows {
            match row.part {
                0 => totals.calls = row.n,
                1 => totals.credits = row.credits,
                part => {
                    if part == 2 && !counted {
                        totals.calls += row.n;
                    }
                    if part == 3 {
                        totals.credits += row.credits;
                    }
                    let key = name(row.key);
                    let group = groups.entry(key.clone()).or_insert_with(|| UsageGroup {
                        key,
                        calls: 0,
                        credits: 0.0,
                        quantities: BTreeMap::new(),
                    });
                    if part == 2 {
                        group.calls = row.n;
                    } else {
                        group.credits += row.credits;
                        *group
                            .quantities
                            .entry(row.unit.unwrap_or_default())
                            .or_default() += row.quantity;
                    }
                }
            }
        }
        Ok(UsageReport {
            totals,
            groups: groups.into_values().collect(),
        })
    }
}
