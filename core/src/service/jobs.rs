//! The service's durable jobs: the runner that executes them, with a handler for every kind
//! of job the service enqueues, and the recurring jobs every deployment runs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::Service;
use super::deliveries::DeliverWebhook;
use crate::error::Result;
use crate::jobs::{
    Done, Job, JobError, JobHandler, JobRepository, JobRunner, JobWaker, NewJob, RunnerConfig,
};
use crate::repo::Repository;
use crate::time::Clock;
use crate::webhooks::{TargetPolicy, WebhookSender};

/// The lane of the telephony jobs (dials, Telnyx commands, reconciliation, campaign pacing):
/// its size is `RunnerConfig::lanes["telephony"]` (`jobs.lanes.telephony`).
pub const TELEPHONY_LANE: &str = "telephony";

/// The kind of the recurring job that deletes events older than the retention period.
pub const EVENTS_SWEEP: &str = "events.sweep";

/// Events deleted per statement by the sweep: small enough that no delete holds its locks
/// for long, whatever the backlog.
pub(super) const SWEEP_BATCH: u64 = 1000;

/// What a [`RetentionSweep`] deletes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Expiring {
    /// Events past `events.retention_days`.
    Events,
    /// Audit entries past `audit.retention_days`.
    AuditEntries,
}

/// Deletes the rows of one kind older than `retention`, in batches of [`SWEEP_BATCH`] so that
/// no delete holds its locks for long, then asks to run again after `interval`.
pub(super) struct RetentionSweep {
    pub(super) repo: Arc<dyn Repository>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) expiring: Expiring,
    pub(super) retention: Duration,
    pub(super) interval: Duration,
}

#[async_trait]
impl JobHandler for RetentionSweep {
    async fn run(&self, _job: &Job) -> std::result::Result<Done, JobError> {
        let now = self.clock.now();
        let cutoff = now.add_seconds(-i64::try_from(self.retention.as_secs()).unwrap_or(i64::MAX));
        let mut deleted = 0u64;
        loop {
            let n = match self.expiring {
                Expiring::Events => {
                    self.repo
                        .event_delete_older_than(cutoff, SWEEP_BATCH)
                        .await?
                }
                Expiring::AuditEntries => {
                    self.repo
                        .audit_delete_older_than(cutoff, SWEEP_BATCH)
                        .await?
                }
            };
            deleted += n;
            if n < SWEEP_BATCH {
                break;
            }
        }
        if deleted > 0 {
            tracing::info!(deleted, expiring = ?self.expiring, "expired rows deleted");
        }
        Ok(Done::RunAgainAt(now.plus(self.interval)))
    }
}

impl Service {
    /// A runner for this service's jobs, over its repository and clock; jobs this service
    /// enqueues wake it at once. Run it with [`JobRunner::run`] in every instance.
    pub fn job_runner(&self, config: RunnerConfig) -> JobRunner {
        let repo: Arc<dyn JobRepository> = self.repo.clone();
        let runner = JobRunner::new(repo, self.clock.clone(), self.jobs.clone(), config)
            .with_handler(
                EVENTS_SWEEP,
                Arc::new(RetentionSweep {
                    repo: self.repo.clone(),
                    clock: self.clock.clone(),
                    expiring: Expiring::Events,
                    retention: self.event_retention,
                    interval: self.sweep_interval,
                }),
            );
        let runner = runner
            .with_handler(
                crate::idempotency::IDEMPOTENCY_SWEEP,
                self.idempotency_sweep_handler(),
            )
            .with_handler(super::AUDIT_SWEEP, self.audit_sweep_handler());
        let runner = self
            .retention_handlers()
            .into_iter()
            .fold(runner, |runner, (kind, handler)| {
                runner.with_handler(kind, handler)
            });
        // Without a processor, documents wait (pending) for an instance that has one.
        let runner = match &self.knowledge.processor {
            Some(_) => runner.with_handler(
                super::documents::DOCUMENT_PROCESS,
                Arc::new(super::documents::ProcessDocument(self.clone())),
            ),
            None => runner,
        };
        // Without a gateway, calls (and campaigns) wait (queued) for an instance that has one.
        // Their jobs run in a lane of their own: a person waiting for a call, or a call
        // waiting to be answered, never waits behind an analysis or a document.
        let runner = match &self.gateway {
            Some(_) => runner
                .with_handler_in(
                    TELEPHONY_LANE,
                    super::telephony::CALL_DIAL,
                    Arc::new(super::telephony::DialCall(self.clone())),
                )
                .with_handler_in(
                    TELEPHONY_LANE,
                    super::telephony::TELNYX_ANSWER,
                    Arc::new(super::telephony::TelnyxCommand(self.clone())),
                )
                .with_handler_in(
                    TELEPHONY_LANE,
                    super::telephony::TELNYX_REJECT,
                    Arc::new(super::telephony::TelnyxCommand(self.clone())),
                )
                .with_handler_in(
                    TELEPHONY_LANE,
                    super::telephony::CALLS_RECONCILE,
                    Arc::new(super::telephony::ReconcileCalls(self.clone())),
                )
                .with_handler_in(
                    TELEPHONY_LANE,
                    super::campaigns::CAMPAIGN_PACE,
                    Arc::new(super::campaigns::PaceCampaign(self.clone())),
                ),
            None => runner,
        };
        // Without a client, analyses wait (pending) for an instance that has one.
        let runner = match &self.analyzer {
            Some(_) => runner.with_handler(
                crate::model::CALL_ANALYZE,
                Arc::new(super::analysis::AnalyzeCall(self.clone())),
            ),
            None => runner,
        };
        // Without a sender, deliveries wait (pending) for an instance that has one.
        match &self.webhooks.sender {
            Some(sender) => runner.with_handler(
                crate::model::WEBHOOK_DELIVER,
                Arc::new(DeliverWebhook {
                    repo: self.repo.clone(),
                    clock: self.clock.clone(),
                    cipher: self.cipher.clone(),
                    sender: sender.clone(),
                    schedule: self.webhooks.schedule.clone(),
                }),
            ),
            None => runner,
        }
    }

    /// Delivers webhooks with `sender`, to endpoints `policy` allows, retrying after each
    /// delay of `schedule` (the default is [`super::DEFAULT_RETRY_SCHEDULE`]).
    pub fn with_webhooks(
        mut self,
        sender: Arc<dyn WebhookSender>,
        policy: TargetPolicy,
        schedule: Vec<Duration>,
    ) -> Self {
        self.webhooks.sender = Some(sender);
        self.webhooks.policy = policy;
        self.webhooks.schedule = schedule;
        self
    }

    /// Resolves the host of an endpoint's URL with `resolver` when it is created or changed,
    /// waiting at most `timeout` (e.g. [`RESOLVE_TIMEOUT`](crate::webhooks::RESOLVE_TIMEOUT)),
    /// so that a name of a private address is refused at once rather than at its first
    /// delivery; no answer in time is a 503. Without one, hostnames are judged at delivery
    /// only, by the sender.
    pub fn with_resolver(
        mut self,
        resolver: Arc<dyn crate::webhooks::Resolver>,
        timeout: Duration,
    ) -> Self {
        self.webhooks.resolver = Some((resolver, timeout));
        self
    }

    /// Keeps events for `retention` (default 30 days); the sweep deletes older ones.
    pub fn with_event_retention(mut self, retention: Duration) -> Self {
        self.event_retention = retention;
        self
    }

    /// Runs the events and audit-log sweeps every `interval` (default an hour).
    pub fn with_sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval;
        self
    }

    /// Wakes this process's runners after a job was written.
    pub fn job_waker(&self) -> &JobWaker {
        &self.jobs
    }

    /// Makes sure every recurring job is scheduled (the events, retention, idempotency-key and
    /// audit-log sweeps); a no-op
    /// for those that already are, so every instance may call it at start.
    pub async fn jobs_schedule_recurring(&self) -> Result<()> {
        let events = NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: EVENTS_SWEEP.to_owned(),
            payload: serde_json::json!({}),
            run_at: self.now(),
            max_attempts: 5,
            unique_key: Some(EVENTS_SWEEP.to_owned()),
        };
        let mut enqueued = false;
        let mut recurring = vec![
            events,
            self.retention_sweep_job(),
            self.idempotency_sweep_job(),
            self.audit_sweep_job(),
        ];
        if self.gateway.is_some() {
            recurring.push(self.reconcile_job());
        }
        for job in recurring {
            enqueued |= self.repo.job_enqueue(&job).await?;
        }
        if enqueued {
            self.jobs.wake();
        }
        Ok(())
    }
}
