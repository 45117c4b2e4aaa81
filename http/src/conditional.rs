//! Entity tags and conditional requests (RFC 9110 §8.8.3 and §13), for every resource that has
//! a view: a `GET` route whose operation is a `*_view` (`agent_view`, `api_key_view`,
//! `organization_settings_view`, …).
//!
//! - The `GET` (and `HEAD`) of a view and the `PATCH` of the same path answer with a strong
//!   `ETag`: the first 128 bits of the SHA-256 of the exact JSON body, envelope included, as
//!   32 lowercase hex digits in quotes. The `PATCH` answers the same representation as the
//!   `GET` (`Data<T>` of the same `T`), so its tag is the one a `GET` right after would give.
//! - A `GET`/`HEAD` of a view with `If-None-Match` that matches (weak comparison, `*` matches
//!   any) answers `304` with the `ETag` and no body; with an `If-Match` that does not match
//!   (strong comparison), `412`.
//! - A `PATCH` or `DELETE` of a path with a view, sent with `If-Match` or `If-None-Match`, is
//!   evaluated against the view first: the view's operation runs with the request's
//!   credentials, and if its tag fails `If-Match` (or passes `If-None-Match`), the answer is
//!   `412 {"detail": …}` and the operation does not run. When the view itself fails (unknown
//!   id, no permission), its error is the answer.
//! - Any other unsafe request (no view at its path: members, a recording, collections) with
//!   an `If-Match` listing tags answers `412`, since none of its representations has a tag
//!   to match; `If-Match: *` passes and `If-None-Match` is ignored there.
//!
//! Why a hash of the body: it is exactly the representation the client holds, so the tag
//! changes whenever anything it can see changes and never otherwise, on both databases, with
//! no column or migration. Sub-second changes are seen too: every resource that can be
//! updated carries `updated_at` with microseconds (`Timestamp` is stored as microseconds and
//! serialized with them), so two updates within the same second give two tags even when they
//! set the same values. Resources without `updated_at` (organization settings, API keys,
//! invitations, events) change only in what they show, and their tag changes with it; an
//! update that leaves every field as it was leaves the tag as it was, which is what a strong
//! validator means (§8.8.1). SHA-256 rather than a faster hash because the tag must be the
//! same across processes and releases (several instances behind one load balancer, a rolling
//! upgrade); `sha2` is already in the tree (jsonwebtoken), and hashing a few kilobytes costs
//! microseconds next to the database round trip.
//!
//! The check and the write are two steps. Conditional writes to the same path (and
//! organization) are serialized within this process by a striped lock, so two clients racing
//! with the same `If-Match` on one instance cannot both win. A write without preconditions,
//! or one through another instance, can still land between another request's check and its
//! write; making that atomic would need a compare-and-set on a version in every update
//! statement of both databases.

use std::hash::{DefaultHasher, Hash, Hasher};

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};

use crate::endpoint::RequestBody;
use crate::error::ApiError;
use crate::router::{self, OPERATIONS, Operation, Route};
use crate::{Api, ResponseBody, response};

/// Number of stripes of [`WriteLocks`]: enough that unrelated paths rarely wait for each
/// other, few enough to cost nothing.
const STRIPES: usize = 64;

/// Serializes conditional writes to the same resource within this process.
pub(crate) struct WriteLocks {
    stripes: Box<[tokio::sync::Mutex<()>]>,
}

impl Default for WriteLocks {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }
}

impl std::fmt::Debug for WriteLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteLocks")
            .field("stripes", &self.stripes.len())
            .finish()
    }
}

impl WriteLocks {
    fn stripe(&self, headers: &HeaderMap, path: &str) -> &tokio::sync::Mutex<()> {
        let mut hasher = DefaultHasher::new();
        headers
            .get(crate::extract::X_ORGANIZATION_ID)
            .map(HeaderValue::as_bytes)
            .hash(&mut hasher);
        path.hash(&mut hasher);
        // The modulo keeps the index below STRIPES, so it fits a usize.
        &self.stripes[(hasher.finish() % STRIPES as u64) as usize]
    }
}

/// The view (`GET …` whose operation is a `*_view`) at `template`, if there is one.
pub(crate) fn view_at(template: &str) -> Option<&'static Operation> {
    OPERATIONS
        .iter()
        .find(|op| op.method == "GET" && op.template == template && op.id.ends_with("_view"))
}

/// Whether the success of `op` carries an `ETag`: a view, or the `PATCH` of a path that has one.
pub(crate) fn is_tagged(op: &Operation) -> bool {
    match op.method {
        "GET" => view_at(op.template).is_some_and(|view| view.id == op.id),
        "PATCH" => view_at(op.template).is_some(),
        _ => false,
    }
}

/// Whether `op` honours `If-Match` and `If-None-Match` against a view (and may answer 412).
pub(crate) fn is_conditional(op: &Operation) -> bool {
    match op.method {
        "GET" | "PATCH" => is_tagged(op),
        "DELETE" => view_at(op.template).is_some(),
        _ => false,
    }
}

/// Runs `route` with the conditional-request rules of this module around it.
pub(crate) async fn dispatch(
    api: &Api,
    route: Route,
    parts: Parts,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let (method, template) = route.definition();
    let if_match = Condition::read(&parts.headers, header::IF_MATCH);
    let if_none_match = Condition::read(&parts.headers, header::IF_NONE_MATCH);
    let safe = parts.method == Method::GET || parts.method == Method::HEAD;

    if view_at(template).is_none() {
        if !safe && if_match.as_ref().is_some_and(|c| *c != Condition::Any) {
            return Err(precondition_failed());
        }
        return router::dispatch(api, route, parts, body).await;
    }

    if method == "GET" {
        // `route` is the view itself (a view is the only GET at its template).
        let response = tag(router::dispatch(api, route, parts, body).await?).await;
        let Some(etag) = etag_of(&response) else {
            return Ok(response);
        };
        if if_match.is_some_and(|c| !c.matches(&etag, Comparison::Strong)) {
            return Err(precondition_failed());
        }
        if if_none_match.is_some_and(|c| c.matches(&etag, Comparison::Weak)) {
            return Ok(not_modified(response));
        }
        return Ok(response);
    }

    let is_patch = method == "PATCH";
    if (method != "DELETE" && !is_patch) || (if_match.is_none() && if_none_match.is_none()) {
        let response = router::dispatch(api, route, parts, body).await?;
        return Ok(if is_patch {
            tag(response).await
        } else {
            response
        });
    }

    let _guard = api
        .write_locks
        .stripe(&parts.headers, parts.uri.path())
        .lock()
        .await;
    let current = tag(router::dispatch(
        api,
        router::resolve(&Method::GET, parts.uri.path()).map_err(|_| precondition_failed())?,
        view_request(&parts),
        crate::endpoint::boxed(http_body_util::Empty::<Bytes>::new()),
    )
    .await?)
    .await;
    let Some(etag) = etag_of(&current) else {
        // The view answered without a tag (it failed): that answer stands (RFC 9110 §13.2.1).
        return Ok(current);
    };
    if if_match.is_some_and(|c| !c.matches(&etag, Comparison::Strong))
        || if_none_match.is_some_and(|c| c.matches(&etag, Comparison::Weak))
    {
        return Err(precondition_failed());
    }
    let response = router::dispatch(api, route, parts, body).await?;
    Ok(if is_patch {
        tag(response).await
    } else {
        response
    })
}

/// The request for the view of `parts`' path: the same credentials, `GET`, no query, no body.
fn view_request(parts: &Parts) -> Parts {
    let (mut view, ()) = Request::new(()).into_parts();
    view.method = Method::GET;
    view.version = parts.version;
    view.uri = http::Uri::try_from(parts.uri.path()).unwrap_or_default();
    view.headers = parts.headers.clone();
    view.headers.remove(header::CONTENT_TYPE);
    view.headers.remove(header::CONTENT_LENGTH);
    view.headers.remove(header::TRANSFER_ENCODING);
    view
}

/// `response` with its `ETag`, when it is a 200: the body is complete JSON, read at once.
async fn tag(response: Response<ResponseBody>) -> Response<ResponseBody> {
    if response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            // A complete JSON body cannot fail to be read; if one did, say so once.
            tracing::error!(error = %e, "could not read a response body to tag it");
            return response::internal_error_response();
        }
    };
    if let Ok(etag) = HeaderValue::from_str(&entity_tag(&bytes)) {
        parts.headers.insert(header::ETAG, etag);
    }
    Response::from_parts(parts, response::full(bytes))
}

/// The strong entity tag of a representation: `"<first 128 bits of its SHA-256, in hex>"`.
pub(crate) fn entity_tag(representation: &[u8]) -> String {
    let digest = Sha256::digest(representation);
    let mut tag = String::with_capacity(34);
    tag.push('"');
    for byte in &digest[..16] {
        tag.push_str(&format!("{byte:02x}"));
    }
    tag.push('"');
    tag
}

fn etag_of(response: &Response<ResponseBody>) -> Option<String> {
    let etag = response.headers().get(header::ETAG)?;
    etag.to_str().ok().map(str::to_owned)
}

/// `304 Not Modified`: the headers a 200 would have had that describe it (`ETag`), no body.
fn not_modified(response: Response<ResponseBody>) -> Response<ResponseBody> {
    let (parts, _) = response.into_parts();
    let mut not_modified = Response::new(response::full(Bytes::new()));
    *not_modified.status_mut() = StatusCode::NOT_MODIFIED;
    if let Some(etag) = parts.headers.get(header::ETAG) {
        not_modified
            .headers_mut()
            .insert(header::ETAG, etag.clone());
    }
    not_modified
}

fn precondition_failed() -> ApiError {
    ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "the precondition failed: the resource's current ETag does not satisfy If-Match or \
         If-None-Match; nothing was changed. GET it again and retry with its current ETag",
    )
}

/// How two entity tags are compared (RFC 9110 §8.8.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    /// Both strong and the same characters (`If-Match`).
    Strong,
    /// The same characters, weak or not (`If-None-Match`).
    Weak,
}

/// The value of an `If-Match` or `If-None-Match`: `*` or a list of entity tags.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Condition {
    Any,
    /// `(weak, opaque tag with its quotes)`. A list that does not parse keeps the tags read
    /// before the error: a malformed `If-Match` then matches nothing (412) and a malformed
    /// `If-None-Match` nothing either (a full answer), the safe side of both.
    Tags(Vec<(bool, String)>),
}

impl Condition {
    /// The condition of every `name` header of the request, `None` without one.
    fn read(headers: &HeaderMap, name: header::HeaderName) -> Option<Self> {
        let mut tags = Vec::new();
        let mut any = false;
        let mut present = false;
        for value in headers.get_all(name) {
            present = true;
            let Ok(value) = value.to_str() else { continue };
            if value.trim() == "*" {
                any = true;
            } else {
                parse_tags(value, &mut tags);
            }
        }
        match (present, any) {
            (false, _) => None,
            (true, true) => Some(Self::Any),
            (true, false) => Some(Self::Tags(tags)),
        }
    }

    /// Whether the current representation, tagged `etag` (a strong tag, quoted), satisfies
    /// the list; `*` matches any current representation.
    fn matches(&self, etag: &str, comparison: Comparison) -> bool {
        match self {
            Self::Any => true,
            Self::Tags(tags) => tags
                .iter()
                .any(|(weak, tag)| tag == etag && (comparison == Comparison::Weak || !weak)),
        }
    }
}

/// Appends the entity tags of `#entity-tag` (`W/"a", "b"`) to `out`, stopping at the first
/// thing that is not one.
fn parse_tags(list: &str, out: &mut Vec<(bool, String)>) {
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return;
        }
        let weak = rest.starts_with("W/");
        if weak {
            rest = &rest[2..];
        }
        let Some(after_quote) = rest.strip_prefix('"') else {
            return;
        };
        let Some(end) = after_quote.find('"') else {
            return;
        };
        out.push((weak, format!("\"{}\"", &after_quote[..end])));
        rest = &after_quote[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(values: &[&str]) -> Option<Condition> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::IF_MATCH, HeaderValue::from_str(v).unwrap());
        }
        Condition::read(&headers, header::IF_MATCH)
    }

    #[test]
    fn lists_stars_and_weak_tags_are_read() {
        assert_eq!(condition(&[]), None);
        assert_eq!(condition(&[" * "]), Some(Condition::Any));
        assert_eq!(
            condition(&[r#""a", W/"b""#, r#""c,d""#]),
            Some(Condition::Tags(vec![
                (false, r#""a""#.into()),
                (true, r#""b""#.into()),
                (false, r#""c,d""#.into()),
            ]))
        );
        // Garbage keeps what came before it and matches nothing else.
        assert_eq!(
            condition(&[r#""a", b, "c""#]),
            Some(Condition::Tags(vec![(false, r#""a""#.into())]))
        );
        assert_eq!(condition(&["nope"]), Some(Condition::Tags(vec![])));
    }

    #[test]
    fn strong_and_weak_comparison() {
        let tag = r#""abc""#;
        let strong = condition(&[r#""abc""#]).unwrap();
        let weak = condition(&[r#"W/"abc""#]).unwrap();
        let other = condition(&[r#""abd", "x""#]).unwrap();
        assert!(strong.matches(tag, Comparison::Strong));
        assert!(strong.matches(tag, Comparison::Weak));
        assert!(!weak.matches(tag, Comparison::Strong));
        assert!(weak.matches(tag, Comparison::Weak));
        assert!(!other.matches(tag, Comparison::Weak));
        assert!(Condition::Any.matches(tag, Comparison::Strong));
    }

    #[test]
    fn tags_are_quoted_hex_of_the_bytes() {
        let a = entity_tag(b"{\"a\":1}");
        assert_eq!(a.len(), 34);
        assert!(a.starts_with('"') && a.ends_with('"'));
        assert!(a[1..33].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, entity_tag(b"{\"a\":1}"));
        assert_ne!(a, entity_tag(b"{\"a\":2}"));
    }

    #[test]
    fn views_and_their_writes_are_conditional() {
        let op = |method: &str, template: &str| {
            OPERATIONS
                .iter()
                .find(|o| o.method == method && o.template == template)
                .unwrap()
        };
        assert!(is_tagged(op("GET", "/api/agents/{agent_id}")));
        assert!(is_tagged(op("PATCH", "/api/agents/{agent_id}")));
        assert!(is_tagged(op("GET", "/api/organization/settings")));
        assert!(is_tagged(op("PATCH", "/api/organization/settings")));
        assert!(is_tagged(op("GET", "/api/api-keys/{key_id}")));
        assert!(!is_tagged(op("DELETE", "/api/agents/{agent_id}")));
        assert!(is_conditional(op("DELETE", "/api/agents/{agent_id}")));
        assert!(!is_tagged(op("GET", "/api/agents")));
        assert!(!is_tagged(op(
            "PATCH",
            "/api/auth/organizations/members/{membership_id}"
        )));
        assert!(!is_tagged(op(
            "GET",
            "/api/calls/{call_sid}/recording/stream"
        )));
        assert!(!is_conditional(op(
            "DELETE",
            "/api/calls/{call_sid}/recording"
        )));
    }
}
