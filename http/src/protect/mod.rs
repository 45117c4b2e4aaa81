//! Protection between routing and the operation: the caller is authenticated once here (the
//! operation's `Actor` extractor reuses the result), then idempotency keys are honoured on POSTs
//! ([`idempotency`]). Living in the adapter, this protects every deployment, standalone or
//! mounted.

pub(crate) mod idempotency;

use std::collections::HashMap;
use std::sync::OnceLock;

use http::request::Parts;
use http::{Method, Response};
use voiceplane_core::auth::Actor;

use crate::endpoint::RequestBody;
use crate::error::ApiError;
use crate::openapi::{Auth, Schemas};
use crate::router::{self, OPERATIONS, Route};
use crate::{Api, ResponseBody, extract};

/// The caller as this module authenticated it, in the request's extensions. Private to the
/// crate, so that nothing outside the adapter can pose as an authenticated caller.
#[derive(Debug, Clone)]
pub(crate) struct Authenticated(pub(crate) Actor);

/// How each operation authenticates, from the route table, computed once.
fn auth_of(operation_id: &str) -> Auth {
    static AUTH: OnceLock<HashMap<&'static str, Auth>> = OnceLock::new();
    let table = AUTH.get_or_init(|| {
        let mut schemas = Schemas::new();
        OPERATIONS
            .iter()
            .map(|op| (op.id, (op.describe)(&mut schemas).auth))
            .collect()
    });
    table.get(operation_id).copied().unwrap_or_default()
}

/// Who is asking, for keying idempotency: the organization and credential of an authenticated
/// caller, or a hash of the bearer token of an operation that takes one without an
/// organization.
fn scope_of(actor: Option<&Actor>, parts: &Parts) -> Option<String> {
    use voiceplane_core::auth::Principal;
    match actor {
        Some(actor) => Some(match &actor.principal {
            Principal::ApiKey(key_id) => format!("{}/key:{key_id}", actor.organization_id),
            Principal::User => format!("{}/user:{}", actor.organization_id, actor.user_id),
        }),
        None => extract::credentials(&parts.headers)
            .ok()
            .and_then(|c| c.bearer)
            .map(|token| format!("bearer:{}", voiceplane_core::auth::hash_secret(&token))),
    }
}

/// Runs `route` behind the protections.
pub(crate) async fn run(
    api: &Api,
    route: Route,
    mut parts: Parts,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let actor = match auth_of(route.operation_id()) {
        Auth::Organization => {
            let credentials = extract::credentials(&parts.headers)?;
            let actor = api.service.authenticate(&credentials).await?;
            parts.extensions.insert(Authenticated(actor.clone()));
            Some(actor)
        }
        Auth::Public | Auth::BearerOnly => None,
    };
    if parts.method == Method::POST
        && let Some(key) = idempotency::key_of(&parts.headers)?
        && let Some(scope) = scope_of(actor.as_ref(), &parts)
    {
        return idempotency::run(api, route, parts, body, scope, key).await;
    }
    router::dispatch(api, route, parts, body).await
}
