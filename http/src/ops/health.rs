//! `/healthz` and `/readyz`: liveness, answered by the adapter itself, and readiness, which
//! asks the service whether the database and object storage answer. No credentials.

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::Serialize;

use crate::endpoint::{Bare, BareWritten, Cx, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "health",
    about: "Liveness and readiness.",
    operations: &[HEALTH_LIVE, HEALTH_READY],
};

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

const HEALTH_LIVE: Operation = Operation::get("/healthz", handler!(health_live))
    .public()
    .doc(
        "The process is up",
        "Answers `{\"status\": \"ok\"}` while the process runs; it touches neither the \
         database nor the object store. No credentials.",
    );

/// The process is up; nothing else is checked, so a load balancer can tell a hung process
/// from a slow database.
async fn health_live(_: Cx, (): (), (): ()) -> Result<BareWritten<Health<Live>>, ApiError> {
    /// The one answer of liveness, serialized once rather than at every probe (about 450
    /// instructions, a fortieth of the request), and kept for good: a `Bytes` of static
    /// memory is cloned without touching a reference count that every core would share.
    static LIVE: LazyLock<&'static [u8]> = LazyLock::new(|| {
        let body = serde_json::to_vec(&Health { status: Live::Ok });
        body.expect("a unit variant serializes").leak()
    });
    Ok(BareWritten(
        bytes::Bytes::from_static(*LIVE),
        std::marker::PhantomData,
    ))
}

const HEALTH_READY: Operation = Operation::get("/readyz", handler!(health_ready))
    .public()
    .errors(&[503])
    .doc(
        "The database and the object store answer",
        "Answers `{\"status\": \"ready\"}` when the database and the object store both answer, \
         else 503 naming the one that does not. No credentials; meant for load balancers.",
    );

async fn health_ready(cx: Cx, (): (), (): ()) -> Result<Bare<Health<Ready>>, ApiError> {
    cx.service().health_ready().await?;
    Ok(Bare(Health {
        status: Ready::Ready,
    }))
}
