//! Durable jobs. The claim is the one statement that differs by database: on Postgres the due
//! rows are locked with `FOR UPDATE SKIP LOCKED`, so that concurrent claims from several
//! instances skip each other's rows instead of waiting or taking them twice; SQLite serializes
//! writers, so the same `UPDATE … RETURNING` is atomic there as it is.

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Statement, Value,
};
use voiceplane_core::jobs::{Job, JobRepository, JobState, JobStatus, NewJob};
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result};

use crate::SeaRepository;
use crate::convert::{db_err, ts};
use crate::entity::job;
use crate::exec::Exec;

const QUEUED: &str = "queued";
const RUNNING: &str = "running";
const FAILED: &str = "failed";

/// Claims due jobs and returns them. `$1` worker, `$2` lease end, `$3` now, `$4` limit, then
/// one parameter per kind.
const CLAIM: &str = "UPDATE jobs SET status = 'running', locked_by = $1, locked_until = $2, \
     attempts = attempts + 1, updated_at = $3 \
     WHERE job_id IN (SELECT job_id FROM jobs \
       WHERE ((status = 'queued' AND run_at <= $3) \
         OR (status = 'running' AND locked_until < $3)) AND kind IN ({KINDS}) \
       ORDER BY run_at LIMIT $4{LOCK}) \
     RETURNING job_id, kind, payload, attempts, max_attempts, run_at";

/// The claim statement for `kinds` kinds in the dialect of `backend`.
fn claim_sql(backend: DatabaseBackend, kinds: usize) -> String {
    let kinds: Vec<String> = (0..kinds).map(|i| format!("${}", i + 5)).collect();
    let sql = CLAIM.replace("{KINDS}", &kinds.join(", "));
    match backend {
        DatabaseBackend::Postgres => sql.replace("{LOCK}", " FOR UPDATE SKIP LOCKED"),
        // SQLite numbers its parameters `?N`.
        _ => sql.replace("{LOCK}", "").replace('$', "?"),
    }
}

fn job_from(row: &sea_orm::QueryResult) -> Result<Job> {
    let get = |e: sea_orm::DbErr| Error::Internal(format!("jobs row: {e}"));
    let payload: String = row.try_get("", "payload").map_err(get)?;
    let attempts: i32 = row.try_get("", "attempts").map_err(get)?;
    let max_attempts: i32 = row.try_get("", "max_attempts").map_err(get)?;
    Ok(Job {
        job_id: row.try_get("", "job_id").map_err(get)?,
        kind: row.try_get("", "kind").map_err(get)?,
        payload: serde_json::from_str(&payload)
            .map_err(|e| Error::Internal(format!("jobs.payload: {e}")))?,
        attempts: u32::try_from(attempts).unwrap_or(0),
        max_attempts: u32::try_from(max_attempts).unwrap_or(0),
        run_at: ts(row.try_get("", "run_at").map_err(get)?),
    })
}

fn state_from(m: job::Model) -> Result<JobState> {
    let status = match m.status.as_str() {
        QUEUED => JobStatus::Queued,
        RUNNING => JobStatus::Running,
        FAILED => JobStatus::Failed,
        other => return Err(Error::Internal(format!("jobs.status: {other}"))),
    };
    Ok(JobState {
        job: Job {
            payload: serde_json::from_str(&m.payload)
                .map_err(|e| Error::Internal(format!("jobs.payload: {e}")))?,
            job_id: m.job_id,
            kind: m.kind,
            attempts: u32::try_from(m.attempts).unwrap_or(0),
            max_attempts: u32::try_from(m.max_attempts).unwrap_or(0),
            run_at: ts(m.run_at),
        },
        status,
        last_error: m.last_error,
    })
}

/// Writes `job` on `db` (a connection or the transaction of the change that causes it); a
/// job whose `unique_key` is taken is not written. Returns whether it was.
pub(crate) async fn enqueue<C: ConnectionTrait>(
    db: &C,
    job: &NewJob,
    now: Timestamp,
) -> Result<bool> {
    Ok(enqueue_many(db, std::slice::from_ref(job), now).await? == 1)
}

/// Deletes a job, whatever its state, on `db` (the transaction of the change that makes it
/// pointless). A runner still running it finds nothing to record at its end.
pub(crate) async fn cancel<C: ConnectionTrait>(db: &C, job_id: &str) -> Result<()> {
    job::Entity::delete_by_id(job_id.to_owned())
        .exec(db)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Writes `jobs` in one statement, skipping those whose `unique_key` is taken; returns how
/// many were written.
pub(crate) async fn enqueue_many<C: Exec>(db: &C, jobs: &[NewJob], now: Timestamp) -> Result<u64> {
    if jobs.is_empty() {
        return Ok(0);
    }
    let backend = db.backend();
    let mut rows = Vec::with_capacity(jobs.len());
    let mut values: Vec<Value> = vec![now.as_micros().into()];
    for job in jobs {
        let n = values.len();
        rows.push(format!(
            "(${}, ${}, ${}, 'queued', 0, ${}, ${}, ${}, $1, $1)",
            n + 1,
            n + 2,
            n + 3,
            n + 4,
            n + 5,
            n + 6
        ));
        values.extend([
            job.job_id.clone().into(),
            job.kind.clone().into(),
            job.payload.to_string().into(),
            i32::try_from(job.max_attempts).unwrap_or(i32::MAX).into(),
            job.run_at.as_micros().into(),
            job.unique_key.clone().into(),
        ]);
    }
    let mut sql = format!(
        "INSERT INTO jobs (job_id, kind, payload, status, attempts, max_attempts, run_at, \
         unique_key, created_at, updated_at) VALUES {} ON CONFLICT DO NOTHING",
        rows.join(", ")
    );
    if backend != DatabaseBackend::Postgres {
        // SQLite numbers its parameters `?N`.
        sql = sql.replace('$', "?");
    }
    db.run(Statement::from_sql_and_values(backend, sql, values))
        .await
}

/// The rows `worker` holds with this id.
fn held(job_id: &str, worker: &str) -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(job::Column::JobId.eq(job_id))
        .add(job::Column::Status.eq(RUNNING))
        .add(job::Column::LockedBy.eq(worker))
}

impl SeaRepository {
    async fn job_update(
        &self,
        job_id: &str,
        worker: &str,
        set: Vec<(job::Column, sea_orm::sea_query::SimpleExpr)>,
    ) -> Result<()> {
        let mut update = job::Entity::update_many().filter(held(job_id, worker));
        for (col, value) in set {
            update = update.col_expr(col, value);
        }
        update
            .col_expr(
                job::Column::UpdatedAt,
                Expr::value(Timestamp::now().as_micros()),
            )
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[async_trait]
impl JobRepository for SeaRepository {
    async fn job_enqueue(&self, job: &NewJob) -> Result<bool> {
        enqueue(&self.db, job, Timestamp::now()).await
    }

    async fn job_claim(
        &self,
        worker: &str,
        kinds: &[String],
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Job>> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let backend = self.db.get_database_backend();
        let mut values: Vec<Value> = vec![
            worker.into(),
            lease_until.as_micros().into(),
            now.as_micros().into(),
            i64::from(limit).into(),
        ];
        values.extend(kinds.iter().map(|k| Value::from(k.clone())));
        let rows = self
            .db
            .query_all_raw(Statement::from_sql_and_values(
                backend,
                claim_sql(backend, kinds.len()),
                values,
            ))
            .await
            .map_err(db_err)?;
        let mut jobs = rows.iter().map(job_from).collect::<Result<Vec<_>>>()?;
        // RETURNING gives no order; run the oldest due first.
        jobs.sort_by_key(|j| j.run_at);
        Ok(jobs)
    }

    async fn job_complete(&self, job_id: &str, worker: &str) -> Result<()> {
        job::Entity::delete_many()
            .filter(held(job_id, worker))
            .exec(&self.db)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn job_retry(
        &self,
        job_id: &str,
        worker: &str,
        run_at: Timestamp,
        error: &str,
    ) -> Result<()> {
        self.job_update(
            job_id,
            worker,
            vec![
                (job::Column::Status, Expr::value(QUEUED)),
                (job::Column::RunAt, Expr::value(run_at.as_micros())),
                (job::Column::LockedBy, Expr::value(Option::<String>::None)),
                (job::Column::LockedUntil, Expr::value(Option::<i64>::None)),
                (job::Column::LastError, Expr::value(error)),
            ],
        )
        .await
    }

    async fn job_fail(&self, job_id: &str, worker: &str, error: &str) -> Result<()> {
        // The unique key is freed so that a recurring job can be scheduled again.
        self.job_update(
            job_id,
            worker,
            vec![
                (job::Column::Status, Expr::value(FAILED)),
                (job::Column::LockedBy, Expr::value(Option::<String>::None)),
                (job::Column::LockedUntil, Expr::value(Option::<i64>::None)),
                (job::Column::LastError, Expr::value(error)),
                (job::Column::UniqueKey, Expr::value(Option::<String>::None)),
            ],
        )
        .await
    }

    async fn job_reschedule(
        &self,
        job_id: &str,
        worker: &str,
        run_at: Timestamp,
        claimed_run_at: Timestamp,
    ) -> Result<()> {
        let backend = self.db.get_database_backend();
        let earlier = match backend {
            DatabaseBackend::Postgres => "LEAST(run_at, $1)",
            _ => "MIN(run_at, $1)",
        };
        let sql = format!(
            "UPDATE jobs SET status = 'queued', \
             run_at = CASE WHEN run_at <> $2 THEN {earlier} ELSE $1 END, attempts = 0, \
             locked_by = NULL, locked_until = NULL, last_error = NULL, updated_at = $3 \
             WHERE job_id = $4 AND status = 'running' AND locked_by = $5"
        );
        super::execute(
            &self.db,
            &sql,
            vec![
                run_at.as_micros().into(),
                claimed_run_at.as_micros().into(),
                Timestamp::now().as_micros().into(),
                job_id.into(),
                worker.into(),
            ],
        )
        .await?;
        Ok(())
    }

    async fn job_extend(&self, job_id: &str, worker: &str, lease_until: Timestamp) -> Result<()> {
        self.job_update(
            job_id,
            worker,
            vec![(
                job::Column::LockedUntil,
                Expr::value(lease_until.as_micros()),
            )],
        )
        .await
    }

    async fn job_release(&self, job_id: &str, worker: &str) -> Result<()> {
        self.job_update(
            job_id,
            worker,
            vec![
                (job::Column::Status, Expr::value(QUEUED)),
                (job::Column::LockedBy, Expr::value(Option::<String>::None)),
                (job::Column::LockedUntil, Expr::value(Option::<i64>::None)),
                (
                    job::Column::Attempts,
                    Expr::col(job::Column::Attempts).sub(1),
                ),
            ],
        )
        .await
    }

    async fn job_next_due(&self, kinds: &[String]) -> Result<Option<Timestamp>> {
        if kinds.is_empty() {
            return Ok(None);
        }
        let queued = job::Entity::find()
            .filter(job::Column::Status.eq(QUEUED))
            .filter(job::Column::Kind.is_in(kinds))
            .order_by_asc(job::Column::RunAt)
            .limit(1)
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(|m| m.run_at);
        let lease = job::Entity::find()
            .filter(job::Column::Status.eq(RUNNING))
            .filter(job::Column::Kind.is_in(kinds))
            .order_by_asc(job::Column::LockedUntil)
            .limit(1)
            .one(&self.db)
            .await
            .map_err(db_err)?
            .and_then(|m| m.locked_until);
        Ok(queued.into_iter().chain(lease).min().map(ts))
    }

    async fn job_get(&self, job_id: &str) -> Result<Option<JobState>> {
        job::Entity::find_by_id(job_id)
            .one(&self.db)
            .await
            .map_err(db_err)?
            .map(state_from)
            .transpose()
    }
}
