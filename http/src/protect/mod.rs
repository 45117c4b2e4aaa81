//! Protection between routing and the operation: the caller is authenticated once here (the
//! operation's `Actor` extractor reuses the result) behind the per-IP limit of failed
//! authentications, its credential's rate limit is spent ([`ratelimit`]), then idempotency keys
//! are honoured on POSTs ([`idempotency`]). Living in the adapter, this protects every
//! deployment, standalone or mounted.

pub(crate) mod idempotency;
pub(crate) mod ratelimit;

use std::collections::HashMap;
use std::sync::OnceLock;

use http::request::Parts;
use http::{Method, Response};
use voiceplane_core::auth::{Actor, RequestContext};

use crate::endpoint::RequestBody;
use crate::error::ApiError;
use crate::openapi::{Auth, Schemas};
use crate::router::{OPERATIONS, Route};
use crate::{Api, ResponseBody, conditional, extract};

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

/// The key of a caller's rate-limit budget: the API key, or the user behind a JWT (across
/// organizations).
fn budget_key(actor: &Actor) -> String {
    use voiceplane_core::auth::Principal;
    match &actor.principal {
        Principal::ApiKey(key_id) => format!("key:{key_id}"),
        Principal::User => format!("user:{}", actor.user_id),
    }
}

/// Where the request came from, for the audit log: its id (chosen by [`Api::handle`]) and the
/// client's address (the peer, or what a trusted proxy reports when rate limits name trusted
/// proxies).
pub(crate) fn request_context(api: &Api, parts: &Parts) -> RequestContext {
    let peer = ratelimit::peer_of(&parts.extensions);
    let ip = match api.limits.as_deref() {
        Some(limits) => limits.client_ip(peer, &parts.headers),
        None => peer,
    };
    RequestContext {
        request_id: parts
            .extensions
            .get::<crate::RequestId>()
            .and_then(|id| id.0.to_str().ok())
            .map(str::to_owned),
        ip: ip.map(|ip| ip.to_string()),
        preconditions: preconditions_of(parts),
    }
}

/// The preconditions `conditional::dispatch` found for the write `parts` asks for; none for
/// any other request.
pub(crate) fn preconditions_of(parts: &Parts) -> voiceplane_core::precondition::Preconditions {
    parts.extensions.get().cloned().unwrap_or_default()
}

/// Authenticates the caller of an organization operation, behind the per-IP limit of failed
/// authentications.
async fn authenticate(api: &Api, parts: &Parts) -> Result<Actor, ApiError> {
    let limits = api.limits.as_deref();
    let ip =
        limits.and_then(|l| l.client_ip(ratelimit::peer_of(&parts.extensions), &parts.headers));
    if let Some(l) = limits {
        l.check_blocked(ip)?;
    }
    let result = match extract::credentials(&parts.headers) {
        Ok(credentials) => api
            .service
            .authenticate(&credentials)
            .await
            .map(|mut actor| {
                actor.request = request_context(api, parts);
                actor
            })
            .map_err(ApiError::from),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.status() == http::StatusCode::UNAUTHORIZED => {
            if let Some(l) = limits {
                l.auth_failed(ip)?;
            }
            Err(e)
        }
        other => other,
    }
}

/// Runs `route` behind the protections.
pub(crate) async fn run(
    api: &Api,
    route: Route,
    mut parts: Parts,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut budget = None;
    let actor = match auth_of(route.operation_id()) {
        Auth::Organization => {
            let actor = authenticate(api, &parts).await?;
            if let Some(limits) = &api.limits {
                budget = limits.check_credential(&budget_key(&actor))?;
            }
            parts.extensions.insert(Authenticated(actor.clone()));
            Some(actor)
        }
        Auth::Public | Auth::BearerOnly => None,
    };
    let result = match idempotency::key_of(&parts.headers) {
        Err(e) if parts.method == Method::POST => Err(e),
        Ok(Some(key)) if parts.method == Method::POST => match scope_of(actor.as_ref(), &parts) {
            Some(scope) => idempotency::run(api, route, parts, body, scope, key).await,
            None => conditional::dispatch(api, route, parts, body).await,
        },
        _ => conditional::dispatch(api, route, parts, body).await,
    };
    let Some(budget) = budget else {
        return result;
    };
    let mut response = result.unwrap_or_else(ApiError::into_response);
    budget.apply(response.headers_mut());
    Ok(response)
}
