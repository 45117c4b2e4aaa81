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

/// The `outcome`s of [`JOB_RUNS_TOTAL`].
pub const JOB_OUTCOMES: [&str; 3] = ["succeeded", "retried", "failed"];

/// The `outcome`s of [`WEBHOOK_DELIVERY_ATTEMPTS_TOTAL`].
pub const WEBHOOK_OUTCOMES: [&str; 3] = ["succeeded", "retrying", "failed"];

/// Exports the counters of a runner with handlers for `kinds` (see
/// [`JobRunner::kinds`](crate::jobs::JobRunner::kinds)) at 0 in the recorder installed now:
/// [`JOB_RUNS_TOTAL`] for each kind and outcome, and [`WEBHOOK_DELIVERY_ATTEMPTS_TOTAL`] for
/// each outcome when webhooks are delivered. Prometheus cannot tell a series that does not
/// exist yet from a target that does not report it, so `rate()` and alerts on a series that
/// appears only at its first event miss that event; call this once the recorder is installed.
pub fn export_job_counters(kinds: &[String]) {
    for kind in kinds {
        for outcome in JOB_OUTCOMES {
            metrics::counter!(JOB_RUNS_TOTAL, "kind" => kind.clone(), "outcome" => outcome)
                .increment(0);
        }
    }
    if kinds.iter().any(|k| k == crate::model::WEBHOOK_DELIVER) {
        for outcome in WEBHOOK_OUTCOMES {
            metrics::counter!(WEBHOOK_DELIVERY_ATTEMPTS_TOTAL, "outcome" => outcome).increment(0);
        }
    }
}
