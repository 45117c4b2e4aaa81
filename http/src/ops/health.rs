//! `/healthz` and `/readyz`: liveness, answered by the adapter itself, and readiness, which
//! asks the service whether the database and object storage answer. No credentials.

use schemars::JsonSchema;
use serde::Serialize;

use crate::endpoint::{Bare, Cx};
use crate::error::ApiError;

/// `{"status": …}`: what a health check found.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Health<S> {
    status: S,
}

/// `"ok"`: the process is up.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) enum Live {
    #[serde(rename = "ok")]
    Ok,
}

/// `"ready"`: the database and the object store answer.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) enum Ready {
    #[serde(rename = "ready")]
    Ready,
}

/// The process is up; nothing else is checked, so a load balancer can tell a hung process
/// from a slow database.
pub(crate) async fn health_live(_: Cx, (): (), (): ()) -> Result<Bare<Health<Live>>, ApiError> {
    Ok(Bare(Health { status: Live::Ok }))
}

pub(crate) async fn health_ready(cx: Cx, (): (), (): ()) -> Result<Bare<Health<Ready>>, ApiError> {
    cx.service().health_ready().await?;
    Ok(Bare(Health {
        status: Ready::Ready,
    }))
}
