//! The keys of the work the server does in the background: how long events and audit entries
//! are kept (`events.*`, `audit.*`), the durable job runner (`jobs.*`), the retention sweep
//! (`retention.*`) and webhook delivery (`webhooks.*`).

use serde::{Deserialize, Serialize};

use super::lenient::{deserialize_bool, deserialize_usize};

/// `events.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsSettings {
    /// `events.retention_days`: events older than this many days are deleted by an hourly
    /// sweep.
    #[serde(deserialize_with = "deserialize_usize")]
    pub retention_days: usize,
}

impl Default for EventsSettings {
    fn default() -> Self {
        Self { retention_days: 30 }
    }
}

/// `audit.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    /// `audit.retention_days`: audit-log entries older than this many days are deleted by an
    /// hourly sweep.
    #[serde(deserialize_with = "deserialize_usize")]
    pub retention_days: usize,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            retention_days: 365,
        }
    }
}

/// `jobs.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobsSettings {
    /// `jobs.lease_secs`: how long a claimed job is reserved for its runner; a job whose
    /// process died is run again after this.
    #[serde(deserialize_with = "deserialize_usize")]
    pub lease_secs: usize,
    /// `jobs.lanes.*`: the lanes of jobs that run apart from the others.
    pub lanes: JobLanes,
}

impl Default for JobsSettings {
    fn default() -> Self {
        Self {
            lease_secs: 60,
            lanes: JobLanes::default(),
        }
    }
}

/// `jobs.lanes.*`: how many jobs of each lane run at once in an instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobLanes {
    /// `jobs.lanes.telephony`: dials, Telnyx answers and rejections, reconciliation and
    /// campaign pacing, which never wait behind the other jobs (default 8).
    #[serde(deserialize_with = "deserialize_usize")]
    pub telephony: usize,
}

impl Default for JobLanes {
    fn default() -> Self {
        Self { telephony: 8 }
    }
}

/// `retention.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// `retention.sweep_interval_secs`: how often the sweep deletes the recordings,
    /// transcripts and calls older than their organization's retention policy.
    #[serde(deserialize_with = "deserialize_usize")]
    pub sweep_interval_secs: usize,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            sweep_interval_secs: 3600,
        }
    }
}

/// `webhooks.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhooksSettings {
    /// `webhooks.retry_schedule`: the delays between delivery attempts, in seconds,
    /// comma-separated; after the last one a delivery is `failed`.
    pub retry_schedule: String,
    /// `webhooks.allow_private_targets`: whether endpoints may be loopback, private or
    /// link-local addresses (for a receiver on the same network; off by default).
    #[serde(deserialize_with = "deserialize_bool")]
    pub allow_private_targets: bool,
}

impl Default for WebhooksSettings {
    fn default() -> Self {
        Self {
            retry_schedule: voiceplane_core::service::DEFAULT_RETRY_SCHEDULE
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(","),
            allow_private_targets: false,
        }
    }
}

impl WebhooksSettings {
    /// The retry schedule as delays; `None` when it does not parse.
    pub fn schedule(&self) -> Option<Vec<std::time::Duration>> {
        self.retry_schedule
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<u64>()
                    .ok()
                    .map(std::time::Duration::from_secs)
            })
            .collect()
    }
}
