//! Who is asking, and from where: the caller [`crate::protect`] authenticated, as the
//! operation's `Actor` input finds it, and the request's context for the audit log.

use http::HeaderValue;
use http::request::Parts;
use voiceplane_core::auth::{Actor, RequestContext};
use voiceplane_core::precondition::Preconditions;

use crate::api::{Api, RequestId};
use crate::protect::ratelimit;

/// The caller as [`crate::protect`] authenticated it, handed to the operation with its
/// request. Private to the crate and never among the request's extensions, so that nothing
/// outside the adapter can pose as an authenticated caller.
#[derive(Debug)]
pub(crate) struct Authenticated(pub(crate) Box<Actor>);

/// Where the request came from, for the audit log: its id (chosen by
/// [`Api::handle`](crate::Api::handle), in the extensions of an invitee's request), the
/// client's address (the peer, or what a trusted proxy reports when rate limits name trusted
/// proxies) and the preconditions of a conditional write.
pub(crate) fn request_context(api: &Api, parts: &Parts) -> RequestContext {
    let request_id = parts.extensions.get::<RequestId>().map(|id| &id.0);
    request_context_from(parts, request_id, client_ip(api, parts))
}

/// The client's address: the peer, or what a trusted proxy reports when rate limits name
/// trusted proxies.
pub(crate) fn client_ip(api: &Api, parts: &Parts) -> Option<std::net::IpAddr> {
    let peer = ratelimit::peer_of(&parts.extensions);
    match api.limits.as_deref() {
        Some(limits) => limits.client_ip(peer, &parts.headers),
        None => peer,
    }
}

/// [`request_context`] with the request's id at hand and the client's address already found
/// by [`client_ip`].
pub(crate) fn request_context_from(
    parts: &Parts,
    request_id: Option<&HeaderValue>,
    ip: Option<std::net::IpAddr>,
) -> RequestContext {
    RequestContext {
        request_id: request_id
            .and_then(|id| id.to_str().ok())
            .map(str::to_owned),
        ip,
        preconditions: parts
            .extensions
            .get::<Preconditions>()
            .cloned()
            .unwrap_or_default(),
    }
}
