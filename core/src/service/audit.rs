//! The audit log: the list, and the sweep that keeps it `audit.retention_days`. Entries are
//! recorded by the writes of the other areas, in their transactions; nothing changes or
//! deletes one except the sweep.

use std::sync::Arc;
use std::time::Duration;

use super::jobs::{Expiring, RetentionSweep};
use super::{Service, cursor_of};
use crate::auth::Actor;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::jobs::{JobHandler, NewJob};
use crate::model::{AuditEntry, AuditFilter};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;

/// The kind of the recurring job that deletes audit entries older than the retention period.
pub const AUDIT_SWEEP: &str = "audit.sweep";

/// Checks the filters of the list: each names something of the right shape, so a typo is a
/// 400 rather than an empty page.
fn checked(filter: &AuditFilter) -> Result<AuditFilter> {
    let mut filter = filter.clone();
    let trimmed = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    filter.action = trimmed(&filter.action);
    filter.resource_id = trimmed(&filter.resource_id);
    filter.actor_key_id = trimmed(&filter.actor_key_id);
    filter.actor_user_id = trimmed(&filter.actor_user_id);
    if let Some(action) = &filter.action {
        let well_formed = action.len() <= 64
            && action.split_once('.').is_some_and(|(resource, verb)| {
                [resource, verb].iter().all(|part| {
                    !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                })
            });
        if !well_formed {
            return Err(Error::invalid(format!(
                "action `{}` is malformed: expected `<resource>.<verb>`, e.g. `agent.update`",
                crate::ids::truncate(action, 60)
            )));
        }
    }
    if let Some(id) = &filter.resource_id
        && (id.len() > 128
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
    {
        return Err(Error::invalid(format!(
            "resource_id `{}` is malformed: expected an id such as `agent_3f9a0c1d2e4b5a6c`",
            crate::ids::truncate(id, 60)
        )));
    }
    if let Some(id) = &filter.actor_key_id {
        IdKind::ApiKey.parse(id).map_err(|_| {
            Error::invalid(format!(
                "actor_key_id `{}` is malformed: expected `apikey_` and 12 hex digits",
                crate::ids::truncate(id, 60)
            ))
        })?;
    }
    if let Some(id) = &filter.actor_user_id {
        IdKind::User.parse(id).map_err(|_| {
            Error::invalid(format!(
                "actor_user_id `{}` is malformed: expected a user id (`user_…`)",
                crate::ids::truncate(id, 60)
            ))
        })?;
    }
    if let (Some(after), Some(before)) = (filter.created_after, filter.created_before)
        && after >= before
    {
        return Err(Error::invalid(
            "created_after must be before created_before",
        ));
    }
    Ok(filter)
}

impl Service {
    /// The organization's audit log, newest first, filtered; a cursor continues only the
    /// filters it was issued for.
    pub async fn audit_list(
        &self,
        actor: &Actor,
        filter: &AuditFilter,
        params: &PageParams,
    ) -> Result<Page<AuditEntry>> {
        actor.require(Permission::AuditRead)?;
        let filter = checked(filter)?;
        let scope = filter.digest();
        let page = PageQuery::from_params_scoped(params, IdKind::Audit, &scope)?;
        let rows = self
            .repo
            .audit_list(&actor.organization_id, &filter, &page)
            .await?;
        Ok(Page::from_rows_by(rows, page.limit, |e| {
            cursor_of(e.created_at, &e.audit_id).encode_scoped(&scope)
        }))
    }

    /// Keeps audit entries for `retention` (default 365 days); the sweep deletes older ones.
    pub fn with_audit_retention(mut self, retention: Duration) -> Self {
        self.audit_retention = retention;
        self
    }

    /// The handler of [`AUDIT_SWEEP`], run as often as the events sweep.
    pub(super) fn audit_sweep_handler(&self) -> Arc<dyn JobHandler> {
        Arc::new(RetentionSweep {
            repo: self.repo.clone(),
            clock: self.clock.clone(),
            expiring: Expiring::AuditEntries,
            retention: self.audit_retention,
            interval: self.sweep_interval,
        })
    }

    /// The recurring [`AUDIT_SWEEP`] job, single across instances.
    pub(super) fn audit_sweep_job(&self) -> NewJob {
        NewJob {
            job_id: crate::jobs::new_job_id(),
            kind: AUDIT_SWEEP.to_owned(),
            payload: serde_json::json!({}),
            run_at: self.now(),
            max_attempts: 5,
            unique_key: Some(AUDIT_SWEEP.to_owned()),
        }
    }
}
