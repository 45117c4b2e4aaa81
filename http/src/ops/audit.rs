//! `/api/audit-log`: who changed what in the organization. Read only: entries are written by
//! the changes themselves and removed only by the retention sweep.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{AuditEntry, AuditFilter};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Cx, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "audit",
    about: "The audit log: who changed what, and from where.",
    operations: &[AUDIT_LIST],
};

const AUDIT_LIST: Operation = Operation::get("/api/audit-log", handler!(audit_list)).doc(
    "List audit-log entries, newest first",
    "The organization's audit log, newest first: one entry per state change made through \
     the API (`action` `<resource>.<verb>`), with the actor (API key or user), the fields \
     changed as `[old, new]` (secrets shown as `\"[redacted]\"`), the request id and the \
     client address. Filters combine with AND: `action`, `resource_id`, `actor_key_id`, \
     `actor_user_id`, `created_after`, `created_before`; a malformed filter is a 400, and a \
     cursor only continues the filters it was issued for. Entries cannot be changed or \
     deleted; they are kept `audit.retention_days` (365). Needs `audit:read` (admin).",
);

async fn audit_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<AuditFilter>, Query<PageParams>),
) -> Result<Page<AuditEntry>, ApiError> {
    Ok(cx.service().audit_list(&actor, &filter, &params).await?)
}
