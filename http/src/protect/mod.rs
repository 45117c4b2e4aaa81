//! The second stage of a request, between resolving its operation and
//! [`crate::conditional`]: the caller of an operation declared [`Auth::Organization`] is
//! authenticated here, once (the operation's `Actor` input is this caller), behind the per-IP
//! limit of failed authentications, and its credential's rate limit is spent ([`ratelimit`]);
//! a provider's webhook is limited by its integration's refused signatures instead; then idempotency keys are honoured on POSTs ([`idempotency`]). Living in the adapter, this
//! protects every deployment, standalone or mounted.

pub(crate) mod idempotency;
pub(crate) mod ratelimit;

use http::request::Parts;
use http::{HeaderValue, Method, Response};
use voiceplane_core::auth::Actor;

use crate::api::{Api, RequestId};
use crate::body::RequestBody;
use crate::caller::{self, Authenticated, request_context_from};
use crate::error::ApiError;
use crate::operation::{Auth, Captures, Operation};
use crate::response::ResponseBody;
use crate::{conditional, credentials};

/// Who is asking, for keying idempotency: the organization and credential of an authenticated
/// caller, or a hash of the bearer token of an operation that takes one without an
/// organization.
fn scope_of(parts: &Parts, caller: Option<&Authenticated>) -> Option<String> {
    use voiceplane_core::auth::Principal;
    match caller {
        Some(Authenticated(actor)) => Some(match &actor.principal {
            Principal::ApiKey(key_id) => format!("{}/key:{key_id}", actor.organization_id),
            Principal::User => format!("{}/user:{}", actor.organization_id, actor.user_id),
        }),
        None => credentials::read(&parts.headers)
            .ok()
            .and_then(|c| c.bearer)
            .map(|token| format!("bearer:{}", voiceplane_core::auth::hash_secret(&token))),
    }
}

/// The key of a caller's rate-limit budget: the API key, or the user behind a JWT (across
/// organizations). Their ids as they are, borrowed: an id's kind is its prefix (`apikey_`,
/// `user_`), so a key's and a user's never meet, and the limiter copies a key only when it
/// first sees it (a string joined with `key:` or `user:` was an allocation per request).
fn budget_key(actor: &Actor) -> &String {
    use voiceplane_core::auth::Principal;
    match &actor.principal {
        Principal::ApiKey(key_id) => key_id,
        Principal::User => &actor.user_id,
    }
}

/// The per-IP limit of failed authentications around one request: a blocked client is
/// refused before its credential is looked at, and a failure spends its budget.
struct FailureBudget<'a> {
    limits: Option<&'a ratelimit::Limiters>,
    ip: Option<std::net::IpAddr>,
}

impl<'a> FailureBudget<'a> {
    /// 429 when the client is blocked.
    fn enter(api: &'a Api, parts: &Parts) -> Result<Self, ApiError> {
        let limits = api.limits.as_deref();
        let ip = caller::client_ip(api, parts);
        if let Some(l) = limits {
            l.check_blocked(ip)?;
        }
        Ok(Self { limits, ip })
    }

    /// Counts a failed authentication; 429 once the budget is spent.
    fn failed(&self) -> Result<(), ApiError> {
        match self.limits {
            Some(l) => l.auth_failed(self.ip),
            None => Ok(()),
        }
    }
}

/// Authenticates the caller of an organization operation, behind the per-IP limit of failed
/// authentications.
async fn authenticate(
    api: &Api,
    parts: &Parts,
    request_id: &HeaderValue,
) -> Result<Actor, ApiError> {
    let budget = FailureBudget::enter(api, parts)?;
    let result = match credentials::read(&parts.headers) {
        Ok(credentials) => api
            .service
            .authenticate(&credentials)
            .await
            .map(|mut actor| {
                // The address the budget found, rather than looking it up again.
                actor.request = request_context_from(parts, Some(request_id), budget.ip);
                actor
            })
            .map_err(ApiError::from),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.status() == http::StatusCode::UNAUTHORIZED => {
            budget.failed()?;
            Err(e)
        }
        other => other,
    }
}

/// Runs a provider's webhook. A refused signature counts against the integration the path
/// names, never against the client's address: Twilio and Telnyx send every tenant's webhooks
/// from the same few addresses, so one tenant's wrong token must not block the others'.
/// Past that integration's budget a refused signature is a 429; a good one is always served
/// (verified first), so that whoever knows an integration's URL cannot stop its calls.
/// Providers do not send idempotency keys (they repeat themselves, and the operations are
/// idempotent by the provider's call id) and have no credential budget.
async fn provider_webhook(
    api: &Api,
    op: &'static Operation,
    captures: Captures,
    parts: Parts,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    // Every provider path names its integration first (`ops/telephony.rs`).
    let integration = api.limits.as_ref().map(|_| captures[0].clone());
    let result = op.run(api.clone(), parts, captures, body, None).await;
    let refused = match &result {
        Ok(response) => response.status() == http::StatusCode::FORBIDDEN,
        Err(e) => e.status() == http::StatusCode::FORBIDDEN,
    };
    if refused && let (Some(limits), Some(integration)) = (&api.limits, integration) {
        limits.signature_failed(&integration)?;
    }
    result
}

/// Runs `op` behind the protections, for the request `request_id` names.
pub(crate) async fn run(
    api: &Api,
    op: &'static Operation,
    captures: Captures,
    mut parts: Parts,
    body: RequestBody,
    request_id: &HeaderValue,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut budget = None;
    let mut caller = None;
    match op.auth {
        Auth::Organization => {
            let actor = authenticate(api, &parts, request_id).await?;
            if let Some(limits) = &api.limits {
                budget = limits.check_credential(budget_key(&actor))?;
            }
            // Moved, not cloned: the operation's `Actor` input takes it from here.
            caller = Some(Authenticated(Box::new(actor)));
        }
        Auth::Provider => return provider_webhook(api, op, captures, parts, body).await,
        Auth::Invitee => {
            parts.extensions.insert(RequestId(request_id.clone()));
        }
        Auth::None => {}
    }
    // Only a POST reads its `Idempotency-Key` (other methods ignore it, however it is sent).
    let key = if parts.method == Method::POST {
        idempotency::key_of(&parts.headers)
    } else {
        Ok(None)
    };
    let result = match key {
        Err(e) => Err(e),
        Ok(Some(key)) => match scope_of(&parts, caller.as_ref()) {
            Some(scope) => {
                let scoped = idempotency::ScopedKey { scope, key };
                idempotency::run(api, op, captures, parts, body, caller, scoped).await
            }
            None => conditional::run(api, op, captures, parts, body, caller).await,
        },
        Ok(None) => conditional::run(api, op, captures, parts, body, caller).await,
    };
    let Some(budget) = budget else {
        return result;
    };
    let mut response = result.unwrap_or_else(ApiError::into_response);
    budget.apply(response.headers_mut());
    Ok(response)
}
