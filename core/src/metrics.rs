//! The names of the metrics the core records through the [`metrics`] facade. A library user
//! sees them in whatever recorder they installed; the voiceplane binary serves them at
//! `GET /metrics`. Every label has a bounded set of values.

/// Counter: job runs that ended, by `kind` (`webhook.deliver`, `document.process`, …) and
/// `outcome`: `succeeded` (done, or a recurring job scheduled again), `retried` (failed, and
/// queued again with backoff) or `failed` (out of attempts, or a failure no retry can fix).
pub const JOB_RUNS_TOTAL: &str = "voiceplane_job_runs_total";

/// Counter: webhook delivery attempts, by `outcome`: `succeeded` (the endpoint answered
/// 2xx), `retrying` (it did not; another attempt is scheduled) or `failed` (it did not and
/// the retry schedule is spent, or the endpoint is disabled).
pub const WEBHOOK_DELIVERY_ATTEMPTS_TOTAL: &str = "voiceplane_webhook_delivery_attempts_total";
