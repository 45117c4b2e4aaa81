//! `/api/audit-log`: who changed what in the organization. Read only: entries are written by
//! the changes themselves and removed only by the retention sweep.

use voiceplane_core::auth::Actor;
use voiceplane_core::model::{AuditEntry, AuditFilter};
use voiceplane_core::page::{Page, PageParams};

use crate::endpoint::{Cx, Query};
use crate::error::ApiError;

pub(crate) async fn audit_list(
    cx: Cx,
    (): (),
    (actor, Query(filter), Query(params)): (Actor, Query<AuditFilter>, Query<PageParams>),
) -> Result<Page<AuditEntry>, ApiError> {
    Ok(cx.service().audit_list(&actor, &filter, &params).await?)
}
