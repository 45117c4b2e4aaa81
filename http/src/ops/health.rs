//! `/healthz` and `/readyz`: liveness, answered by the adapter itself, and readiness, which
//! asks the service whether the database and object storage answer. No credentials.

use schemars::JsonSchema;
use serde::Serialize;

use crate::endpoint::{Bare, Cx};
use crate::error::ApiError;

/// `{"status": "ok"}` or `{"status": "ready"}`.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Health {
    status: HealthStatus,
}

/// What a health check found.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub(crate) enum HealthStatus {
    /// The process is up.
    Ok,
    /// The database and object storage answer.
    Ready,
}

/// The process is up; nothing else is checked, so a load balancer can tell a hung process
/// from a slow database.
pub(crate) async fn health_live(_: Cx, (): (), (): ()) -> Result<Bare<Health>, ApiError> {
    Ok(Bare(Health {
        status: HealthStatus::Ok,
    }))
}

pub(crate) async fn health_ready(cx: Cx, (): (), (): ()) -> Result<Bare<Health>, ApiError> {
    cx.service().health_ready().await?;
    Ok(Bare(Health {
        status: HealthStatus::Ready,
    }))
}
