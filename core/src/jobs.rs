//! Durable jobs: work that happens after the request that causes it (webhook deliveries,
//! retention sweeps, document processing), stored as rows so that nothing is lost when a
//! process dies.
//!
//! A job is written by the repository, in the same transaction as the change that causes it,
//! or with [`JobRepository::job_enqueue`]. A [`JobRunner`] in every instance claims due jobs:
//! the claim is one atomic statement that marks them `running` under a lease
//! (`FOR UPDATE SKIP LOCKED` on Postgres, so that two instances never claim the same job), runs
//! each with a time limit, and then deletes it (done), puts it back with a later `run_at`
//! (retry with exponential backoff and jitter), or marks it `failed` (out of attempts, or a
//! failure that no retry can fix). A job whose runner died is claimed again once its lease
//! has expired; every claim counts as an attempt, so a job that kills its runner every time
//! still ends `failed`. On shutdown, jobs still running after the grace period are handed back
//! without counting the attempt.
//!
//! Every run that ends is counted in [`crate::metrics::JOB_RUNS_TOTAL`] by kind and outcome.
//!
//! An idle runner does not poll the database in a loop: it sleeps until the next job of a kind
//! it has a handler for is due (jobs of other kinds are left to the instances that run them),
//! until a [`JobWaker`] tells it that a job was enqueued in this process, or at most
//! [`RunnerConfig::idle_check`] (which bounds how late a job enqueued by another instance
//! starts).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::time::{Clock, Timestamp};

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// `job_` + hex.
    pub job_id: String,
    /// What to run: the name a [`JobHandler`] is registered under, e.g. `events.sweep`.
    pub kind: String,
    /// The handler's input, JSON.
    pub payload: serde_json::Value,
    /// Claims so far, this one included.
    pub attempts: u32,
    /// Attempts after which a failing job is `failed` instead of retried.
    pub max_attempts: u32,
    /// When it is due.
    pub run_at: Timestamp,
}

/// A new random job id: `job_` + 16 hex digits.
pub fn new_job_id() -> String {
    format!("job_{:016x}", rand::random::<u64>())
}

/// A job to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// `job_` + hex.
    pub job_id: String,
    /// The handler's name.
    pub kind: String,
    /// The handler's input.
    pub payload: serde_json::Value,
    /// When it is due.
    pub run_at: Timestamp,
    /// Attempts after which a failing job is `failed`.
    pub max_attempts: u32,
    /// At most one queued or running job has this key (a recurring sweep, say): enqueueing
    /// another is a no-op while it exists.
    pub unique_key: Option<String>,
}

/// Where a job stands, for inspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting for `run_at`.
    Queued,
    /// Claimed by a runner until its lease ends.
    Running,
    /// Out of attempts, or failed for good; kept for inspection.
    Failed,
}

/// A stored job with its state, for inspection and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct JobState {
    /// The job.
    pub job: Job,
    /// Where it stands.
    pub status: JobStatus,
    /// The last failure's sentence.
    pub last_error: Option<String>,
}

/// The database side of jobs.
#[async_trait]
pub trait JobRepository: Send + Sync {
    /// Writes a job, unless one with the same `unique_key` is queued or running; returns
    /// whether it was written.
    async fn job_enqueue(&self, job: &NewJob) -> Result<bool>;
    /// Atomically claims up to `limit` jobs of `kinds` due at `now` (queued with
    /// `run_at <= now`, or running with a lease that ended before `now`) for `worker` until
    /// `lease_until`, counting an attempt for each. Two callers never get the same job.
    async fn job_claim(
        &self,
        worker: &str,
        kinds: &[String],
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Job>>;
    /// Deletes a job `worker` holds: it is done.
    async fn job_complete(&self, job_id: &str, worker: &str) -> Result<()>;
    /// Puts a job `worker` holds back in the queue, due at `run_at`, with the failure's
    /// sentence.
    async fn job_retry(
        &self,
        job_id: &str,
        worker: &str,
        run_at: Timestamp,
        error: &str,
    ) -> Result<()>;
    /// Marks a job `worker` holds as failed for good.
    async fn job_fail(&self, job_id: &str, worker: &str, error: &str) -> Result<()>;
    /// Puts a recurring job `worker` holds back in the queue, due at `run_at`, its attempts
    /// starting over. When its `run_at` is no longer `claimed_run_at` (the one it was claimed
    /// with), something hurried it while it ran: the earlier of the two holds, so that the
    /// wake-up is not lost.
    async fn job_reschedule(
        &self,
        job_id: &str,
        worker: &str,
        run_at: Timestamp,
        claimed_run_at: Timestamp,
    ) -> Result<()>;
    /// Extends the lease of a job `worker` still holds to `lease_until`: it is still running.
    async fn job_extend(&self, job_id: &str, worker: &str, lease_until: Timestamp) -> Result<()>;
    /// Hands back a job `worker` holds without counting the attempt (shutdown).
    async fn job_release(&self, job_id: &str, worker: &str) -> Result<()>;
    /// When the next queued job of `kinds` is due, or the next lease of one ends. Only the
    /// kinds a runner can claim: a due job of another kind would wake it for nothing, at once
    /// and again (an instance of another version, or without a document processor).
    async fn job_next_due(&self, kinds: &[String]) -> Result<Option<Timestamp>>;
    /// A job and its state.
    async fn job_get(&self, job_id: &str) -> Result<Option<JobState>>;
}

/// Why a job did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Worth another attempt (an upstream that did not answer, say).
    Retry(String),
    /// No retry can fix it (the payload names something that is gone).
    Fail(String),
}

impl From<Error> for JobError {
    /// Unavailable backends and upstreams are transient; everything else is not.
    fn from(e: Error) -> Self {
        match e {
            Error::Unavailable(_) | Error::Upstream(_) | Error::Internal(_) => {
                Self::Retry(e.to_string())
            }
            other => Self::Fail(other.to_string()),
        }
    }
}

/// How a run ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// The job is finished and deleted.
    Finished,
    /// A recurring job: run it again at this time (its attempts start over).
    RunAgainAt(Timestamp),
}

/// Runs one kind of job.
#[async_trait]
pub trait JobHandler: Send + Sync {
    /// Runs `job`; called at least once per job, so it must tolerate running twice.
    async fn run(&self, job: &Job) -> std::result::Result<Done, JobError>;

    /// How long one run may take, when this kind needs another limit than
    /// [`RunnerConfig::timeout`].
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

/// Wakes the runners of this process when a job is enqueued, so that an idle runner starts it
/// at once instead of at its next check.
#[derive(Debug, Clone)]
pub struct JobWaker(Arc<watch::Sender<u64>>);

impl Default for JobWaker {
    fn default() -> Self {
        Self(Arc::new(watch::channel(0).0))
    }
}

impl JobWaker {
    /// Wakes every lane of every runner of this process, idle or about to be: each looks for
    /// due jobs of its kinds once more.
    pub fn wake(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// Settings of a [`JobRunner`].
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// This runner's name in the lease, unique among running instances.
    pub worker: String,
    /// How long a claim holds a job; a runner that dies releases it after this.
    pub lease: Duration,
    /// How long one run may take; longer is a failed attempt (retried).
    pub timeout: Duration,
    /// Jobs run at once in the general lane (every kind not put in a lane of its own).
    pub concurrency: u32,
    /// Jobs run at once in each named lane (see [`JobRunner::with_handler_in`]); a lane not
    /// named here runs [`Self::concurrency`] at once.
    pub lanes: HashMap<String, u32>,
    /// Delay before the first retry; doubled at each attempt.
    pub backoff_base: Duration,
    /// Longest delay between attempts.
    pub backoff_max: Duration,
    /// Longest sleep while idle (bounds the start of jobs enqueued by other instances).
    pub idle_check: Duration,
    /// How long running jobs may finish after shutdown is asked before they are handed back.
    pub shutdown_grace: Duration,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            worker: format!("runner-{:08x}", rand::random::<u32>()),
            lease: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            concurrency: 4,
            lanes: HashMap::new(),
            backoff_base: Duration::from_secs(5),
            backoff_max: Duration::from_secs(3600),
            idle_check: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Claims and runs due jobs until shut down.
pub struct JobRunner {
    repo: Arc<dyn JobRepository>,
    clock: Arc<dyn Clock>,
    handlers: HashMap<String, Arc<dyn JobHandler>>,
    /// The lane of each kind put in one; the others run in the general lane.
    lane_of: HashMap<String, String>,
    waker: JobWaker,
    config: RunnerConfig,
}

/// The name of the general lane, in logs.
const GENERAL_LANE: &str = "general";

impl JobRunner {
    /// A runner over `repo` with no handlers yet; `waker` is the one the enqueuing side holds.
    pub fn new(
        repo: Arc<dyn JobRepository>,
        clock: Arc<dyn Clock>,
        waker: JobWaker,
        config: RunnerConfig,
    ) -> Self {
        Self {
            repo,
            clock,
            handlers: HashMap::new(),
            lane_of: HashMap::new(),
            waker,
            config,
        }
    }

    /// Runs jobs of `kind` with `handler`, in the general lane.
    pub fn with_handler(mut self, kind: &str, handler: Arc<dyn JobHandler>) -> Self {
        self.handlers.insert(kind.to_owned(), handler);
        self.lane_of.remove(kind);
        self
    }

    /// Runs jobs of `kind` with `handler` in the lane `lane`: its own runs at once
    /// ([`RunnerConfig::lanes`]) and its own claims, so that no job of another lane, however
    /// slow or many, delays it.
    pub fn with_handler_in(mut self, lane: &str, kind: &str, handler: Arc<dyn JobHandler>) -> Self {
        self.handlers.insert(kind.to_owned(), handler);
        self.lane_of.insert(kind.to_owned(), lane.to_owned());
        self
    }

    /// Each lane's name, kinds (sorted) and jobs run at once.
    fn lanes(&self) -> Vec<(String, Vec<String>, u32)> {
        let mut lanes: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for kind in self.kinds() {
            let lane = self.lane_of.get(&kind).map_or(GENERAL_LANE, String::as_str);
            lanes.entry(lane).or_default().push(kind);
        }
        lanes
            .into_iter()
            .map(|(lane, kinds)| {
                let concurrency = self
                    .config
                    .lanes
                    .get(lane)
                    .copied()
                    .unwrap_or(self.config.concurrency)
                    .max(1);
                (lane.to_owned(), kinds, concurrency)
            })
            .collect()
    }

    /// The delay before the attempt after `attempts` failed ones: `backoff_base · 2^(n-1)`,
    /// capped at `backoff_max`, minus up to a quarter at random so that jobs that failed
    /// together do not retry together.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let exp = attempts.saturating_sub(1).min(30);
        let full = self
            .config
            .backoff_base
            .saturating_mul(1u32 << exp)
            .min(self.config.backoff_max);
        let jitter = rand::random::<f64>() * 0.25;
        full.mul_f64(1.0 - jitter)
    }

    /// Claims and runs jobs until `shutdown` resolves, each lane on its own; then lets
    /// running jobs finish for [`RunnerConfig::shutdown_grace`] and hands back the rest.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        let this = Arc::new(self);
        let (stop, stopped) = watch::channel(false);
        let mut lanes = JoinSet::new();
        for (_, kinds, concurrency) in this.lanes() {
            lanes.spawn(this.clone().run_lane(kinds, concurrency, stopped.clone()));
        }
        shutdown.await;
        let _ = stop.send(true);
        while lanes.join_next().await.is_some() {}
    }

    /// One lane: claims due jobs of `kinds` while fewer than `concurrency` of them run.
    async fn run_lane(
        self: Arc<Self>,
        kinds: Vec<String>,
        concurrency: u32,
        mut stopped: watch::Receiver<bool>,
    ) {
        let this = self;
        let mut woken = this.waker.subscribe();
        let mut running: JoinSet<()> = JoinSet::new();
        let held: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        loop {
            while running.try_join_next().is_some() {}
            let free = concurrency.saturating_sub(running.len() as u32);
            let claimed = if free == 0 {
                Vec::new()
            } else {
                this.claim(&kinds, free).await
            };
            let idle = claimed.is_empty();
            for job in claimed {
                Self::track(&held, &job.job_id, true);
                let this = this.clone();
                let held = held.clone();
                running.spawn(async move {
                    let id = job.job_id.clone();
                    this.execute(job).await;
                    Self::track(&held, &id, false);
                });
            }
            if !idle && free > 0 {
                continue;
            }
            let wait = if free == 0 {
                this.config.idle_check
            } else {
                this.until_next_due(&kinds).await
            };
            if *stopped.borrow() {
                break;
            }
            tokio::select! {
                _ = stopped.changed() => break,
                _ = woken.changed() => {}
                () = tokio::time::sleep(wait) => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
            }
        }
        let grace = tokio::time::sleep(this.config.shutdown_grace);
        tokio::pin!(grace);
        while !running.is_empty() {
            tokio::select! {
                _ = running.join_next() => {}
                () = &mut grace => break,
            }
        }
        running.abort_all();
        while running.join_next().await.is_some() {}
        let unfinished = std::mem::take(&mut *held.lock().unwrap_or_else(|p| p.into_inner()));
        for job_id in unfinished {
            if let Err(e) = this.repo.job_release(&job_id, &this.config.worker).await {
                tracing::warn!(%job_id, error = %e, "could not hand back a job; its lease will");
            }
        }
    }

    fn track(held: &std::sync::Mutex<Vec<String>>, job_id: &str, add: bool) {
        let mut held = held.lock().unwrap_or_else(|p| p.into_inner());
        if add {
            held.push(job_id.to_owned());
        } else {
            held.retain(|id| id != job_id);
        }
    }

    /// The kinds this runner has handlers for, sorted: it claims, and waits for, only these,
    /// so that an instance of another version leaves the rest alone.
    pub fn kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self.handlers.keys().cloned().collect();
        kinds.sort();
        kinds
    }

    async fn claim(&self, kinds: &[String], limit: u32) -> Vec<Job> {
        let now = self.clock.now();
        let lease_until = now.plus(self.config.lease);
        match self
            .repo
            .job_claim(&self.config.worker, kinds, now, lease_until, limit)
            .await
        {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::warn!(error = %e, "could not claim jobs");
                Vec::new()
            }
        }
    }

    /// How long to sleep while idle: until the next due job, at most `idle_check`.
    async fn until_next_due(&self, kinds: &[String]) -> Duration {
        let cap = self.config.idle_check;
        match self.repo.job_next_due(kinds).await {
            Ok(Some(due)) => due.saturating_since(self.clock.now()).min(cap),
            Ok(None) => cap,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the next due job");
                cap
            }
        }
    }

    /// Runs one claimed job and records how it ended.
    async fn execute(&self, job: Job) {
        let worker = &self.config.worker;
        let outcome = match self.handlers.get(&job.kind) {
            None => Err(JobError::Retry(format!(
                "no handler for jobs of kind {}",
                job.kind
            ))),
            Some(handler) => {
                let limit = handler.timeout().unwrap_or(self.config.timeout);
                let run = tokio::time::timeout(limit, handler.run(&job));
                tokio::pin!(run);
                // The lease is renewed while the job runs, so that a run longer than the
                // lease is not claimed again by another runner; a runner that dies stops
                // renewing and its jobs come back once the lease ends.
                let renew_every = (self.config.lease / 3).max(Duration::from_millis(100));
                loop {
                    tokio::select! {
                        result = &mut run => break match result {
                            Ok(result) => result,
                            Err(_) => Err(JobError::Retry(format!(
                                "timed out after {} s",
                                limit.as_secs_f64()
                            ))),
                        },
                        () = tokio::time::sleep(renew_every) => {
                            let until = self.clock.now().plus(self.config.lease);
                            if let Err(e) = self.repo.job_extend(&job.job_id, worker, until).await {
                                tracing::warn!(job_id = %job.job_id, error = %e, "could not renew a job's lease");
                            }
                        }
                    }
                }
            }
        };
        let ended = |outcome: &'static str| {
            metrics::counter!(crate::metrics::JOB_RUNS_TOTAL, "kind" => job.kind.clone(), "outcome" => outcome)
                .increment(1);
        };
        let recorded = match outcome {
            Ok(Done::Finished) => {
                ended("succeeded");
                self.repo.job_complete(&job.job_id, worker).await
            }
            Ok(Done::RunAgainAt(run_at)) => {
                ended("succeeded");
                self.repo
                    .job_reschedule(&job.job_id, worker, run_at, job.run_at)
                    .await
            }
            Err(JobError::Retry(reason)) if job.attempts < job.max_attempts => {
                ended("retried");
                let run_at = self.clock.now().plus(self.backoff(job.attempts));
                tracing::info!(job_id = %job.job_id, kind = %job.kind, attempts = job.attempts, %reason, "job failed; retrying");
                self.repo
                    .job_retry(&job.job_id, worker, run_at, &reason)
                    .await
            }
            Err(JobError::Retry(reason) | JobError::Fail(reason)) => {
                ended("failed");
                tracing::warn!(job_id = %job.job_id, kind = %job.kind, attempts = job.attempts, %reason, "job failed for good");
                self.repo.job_fail(&job.job_id, worker, &reason).await
            }
        };
        if let Err(e) = recorded {
            // The lease runs out and the job is claimed again: at least once, never lost.
            tracing::warn!(job_id = %job.job_id, error = %e, "could not record a job's end");
        }
    }
}
