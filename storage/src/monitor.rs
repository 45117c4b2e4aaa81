//! What monitoring reads from the database side: the connection pool's state and the job
//! queue by kind and state. Both are cheap enough to read on every scrape: the pool's
//! numbers are two atomics, and the job counts one grouped `SELECT` over the jobs table,
//! which holds only work not yet done (done jobs are deleted) and failed jobs.

use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use voiceplane_core::Result;
use voiceplane_core::time::Timestamp;

use crate::SeaRepository;
use crate::convert::db_err;

/// The connection pool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// Connections open, in use or idle.
    pub open: u32,
    /// Open connections waiting in the pool.
    pub idle: u32,
    /// Most connections the pool opens.
    pub max: u32,
}

impl PoolStatus {
    /// Open connections lent out to a query or transaction.
    pub fn in_use(&self) -> u32 {
        self.open.saturating_sub(self.idle)
    }
}

/// The jobs of one kind, by state. The states do not overlap: their sum is every stored job
/// of the kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// The job kind, e.g. `webhook.deliver`.
    pub kind: String,
    /// Queued and due: the backlog a runner should be working through.
    pub due: u64,
    /// Queued for later (a retry after backoff, a recurring sweep).
    pub scheduled: u64,
    /// Claimed by a runner.
    pub running: u64,
    /// Failed for good, kept for inspection.
    pub failed: u64,
}

const COUNTS: &str = "SELECT kind, status, COUNT(*) AS total, \
     SUM(CASE WHEN run_at <= $1 THEN 1 ELSE 0 END) AS due \
     FROM jobs GROUP BY kind, status ORDER BY kind";

impl SeaRepository {
    /// The connection pool's state; on Postgres with the connections of hot reads (`hot.rs`),
    /// which are the pool's held apart.
    pub fn pool_status(&self) -> PoolStatus {
        let (open, idle, max) = match self.db.get_database_backend() {
            DatabaseBackend::Postgres => {
                let pool = self.db.inner.get_postgres_connection_pool();
                let ((hot_open, hot_idle), hot_max) = self
                    .hot
                    .as_ref()
                    .map_or(((0, 0), 0), |h| (h.status(), h.max()));
                (
                    pool.size() + hot_open,
                    pool.num_idle() + usize::try_from(hot_idle).unwrap_or(usize::MAX),
                    pool.options().get_max_connections() + hot_max,
                )
            }
            _ => {
                let pool = self.db.inner.get_sqlite_connection_pool();
                (
                    pool.size(),
                    pool.num_idle(),
                    pool.options().get_max_connections(),
                )
            }
        };
        PoolStatus {
            open,
            idle: u32::try_from(idle).unwrap_or(u32::MAX),
            max,
        }
    }

    /// The stored jobs by kind and state; a job is due when queued with `run_at <= now`.
    pub async fn job_counts(&self, now: Timestamp) -> Result<Vec<JobCounts>> {
        let backend = self.db.get_database_backend();
        let sql = match backend {
            DatabaseBackend::Postgres => COUNTS.to_owned(),
            _ => COUNTS.replace('$', "?"),
        };
        let rows = self
            .db
            .query_all_raw(Statement::from_sql_and_values(
                backend,
                sql,
                [now.as_micros().into()],
            ))
            .await
            .map_err(db_err)?;
        let mut counts: Vec<JobCounts> = Vec::new();
        for row in rows {
            let get =
                |e: sea_orm::DbErr| voiceplane_core::Error::Internal(format!("job counts: {e}"));
            let kind: String = row.try_get("", "kind").map_err(get)?;
            let status: String = row.try_get("", "status").map_err(get)?;
            let total: i64 = row.try_get("", "total").map_err(get)?;
            let due: Option<i64> = row.try_get("", "due").map_err(get)?;
            let (total, due) = (
                u64::try_from(total).unwrap_or(0),
                u64::try_from(due.unwrap_or(0)).unwrap_or(0),
            );
            if counts.last().is_none_or(|c| c.kind != kind) {
                counts.push(JobCounts {
                    kind,
                    ..JobCounts::default()
                });
            }
            let Some(entry) = counts.last_mut() else {
                continue;
            };
            match status.as_str() {
                "queued" => {
                    entry.due += due;
                    entry.scheduled += total.saturating_sub(due);
                }
                "running" => entry.running += total,
                _ => entry.failed += total,
            }
        }
        Ok(counts)
    }
}
