//! The third stage of a request: entity tags and conditional requests (RFC 9110 §8.8.3 and
//! §13), as each operation's declaration says ([`Conditional`]); then the operation runs.
//!
//! - A [`Conditional::TaggedView`] (the `GET`, and `HEAD`, of a resource) and a
//!   [`Conditional::TaggedWrite`] (its `PATCH`) answer with a strong `ETag`
//!   ([`voiceplane_core::precondition::entity_tag`] of the exact JSON body, envelope
//!   included). The `PATCH` answers the same representation as the `GET` (`Data<T>` of the
//!   same `T`), so its tag is the one a `GET` right after would give.
//! - A `GET`/`HEAD` of a view with `If-None-Match` that matches (weak comparison, `*` matches
//!   any) answers `304` with the `ETag` and no body; with an `If-Match` that does not match
//!   (strong comparison), `412`.
//! - A [`Conditional::TaggedWrite`] or [`Conditional::Write`] (a `DELETE`) sent with
//!   `If-Match` or `If-None-Match` carries them to the service as [`Preconditions`], in the
//!   caller's [`RequestContext`](voiceplane_core::auth::RequestContext). The repository checks
//!   them against the resource as its write transaction reads it, row locked, and the write
//!   happens only if they hold: a compare-and-set, so of several writers holding one tag
//!   exactly one wins, on one instance or many. When they fail the answer is
//!   `412 {"detail": …}` and nothing changed; an unknown id or a missing permission answers
//!   as without them.
//! - Any other unsafe request ([`Conditional::None`]: members, a recording, collections) with
//!   an `If-Match` listing tags answers `412`, since none of its representations has a tag
//!   to match; `If-Match: *` passes and `If-None-Match` is ignored there.
//!
//! Why a hash of the body: it is exactly the representation the client holds, so the tag
//! changes whenever anything it can see changes and never otherwise, on both databases, with
//! no column or migration. Sub-second changes are seen too: every resource that can be
//! updated carries `updated_at` with microseconds, so two updates within the same second give
//! two tags even when they set the same values. Resources without `updated_at` (organization
//! settings, API keys, invitations, events) change only in what they show, and their tag
//! changes with it; an update that leaves every field as it was leaves the tag as it was,
//! which is what a strong validator means (§8.8.1).

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::BodyExt;
use voiceplane_core::precondition::{
    Comparison, EntityTag, PRECONDITION_FAILED, Preconditions, Tags, entity_tag,
};

use crate::api::Api;
use crate::body::RequestBody;
use crate::caller::Authenticated;
use crate::error::ApiError;
use crate::operation::{Answer, Captures, Conditional, Operation};
use crate::response::{self, ResponseBody};

/// Runs `op` with the conditional-request rules of its declaration around it.
///
/// Not an `async` stage of its own: the conditions are read when it is called, and it
/// answers the handler's own boxed future where nothing follows it ([`Conditional::None`]),
/// else that future inside one that tags or compares the answer. As a stage, it kept the
/// request's parts once more and copied them down to the handler, on every request.
pub(crate) fn run(
    api: &Api,
    op: &'static Operation,
    captures: Captures,
    mut parts: Parts,
    body: RequestBody,
    mut caller: Option<Authenticated>,
) -> Answer {
    let (if_match, if_none_match) = read_conditions(&parts.headers);
    match op.conditional {
        Conditional::None => {
            let safe = parts.method == Method::GET || parts.method == Method::HEAD;
            if !safe && if_match.as_ref().is_some_and(|c| *c != Tags::Any) {
                return Box::pin(std::future::ready(Err(precondition_failed())));
            }
            op.run(api.clone(), parts, captures, body, caller)
        }
        Conditional::TaggedView => {
            let answer = op.run(api.clone(), parts, captures, body, caller);
            // Made in its box, not on the stack and copied in (as the handler's future is).
            let slot = Box::new_uninit();
            let compared = Box::write(slot, async move {
                let response = tag(answer.await?).await;
                // Nearly every read sends no condition: then its tag need not be copied out.
                if if_match.is_none() && if_none_match.is_none() {
                    return Ok(response);
                }
                let Some(etag) = etag_of(&response) else {
                    return Ok(response);
                };
                if if_match.is_some_and(|c| !c.matches(&etag, Comparison::Strong)) {
                    return Err(precondition_failed());
                }
                if if_none_match.is_some_and(|c| c.matches(&etag, Comparison::Weak)) {
                    return Ok(not_modified(response));
                }
                Ok(response)
            });
            Box::into_pin(compared)
        }
        Conditional::TaggedWrite | Conditional::Write => {
            let preconditions = Preconditions {
                if_match,
                if_none_match,
            };
            if !preconditions.is_empty() {
                // The service checks them in the write's transaction, as the caller's.
                if let Some(Authenticated(actor)) = &mut caller {
                    actor.request.preconditions = preconditions.clone();
                }
                parts.extensions.insert(preconditions);
            }
            let answer = op.run(api.clone(), parts, captures, body, caller);
            if op.conditional == Conditional::TaggedWrite {
                Box::pin(async move { Ok(tag(answer.await?).await) })
            } else {
                answer
            }
        }
    }
}

/// `response` with its `ETag`, when it is a 200: the body is complete JSON, read at once. An
/// answer kept with its tag (`represent.rs`) has it already.
async fn tag(response: Response<ResponseBody>) -> Response<ResponseBody> {
    if response.status() != StatusCode::OK || response.headers().contains_key(header::ETAG) {
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
    if let Some(etag) = etag_of_body(&bytes) {
        parts.headers.insert(header::ETAG, etag);
    }
    Response::from_parts(parts, response::full(bytes))
}

/// The `ETag` header of a complete body: its [`entity_tag`] (always a valid header value).
pub(crate) fn etag_of_body(body: &[u8]) -> Option<HeaderValue> {
    HeaderValue::from_str(&entity_tag(body)).ok()
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
    ApiError::new(StatusCode::PRECONDITION_FAILED, PRECONDITION_FAILED)
}

/// The `If-Match` and `If-None-Match` of a request, each `None` when not sent, read in one
/// pass over its headers: a lookup of each name hashed it, about 150 instructions apiece on
/// requests that nearly never send either.
fn read_conditions(headers: &HeaderMap) -> (Option<Tags>, Option<Tags>) {
    let mut if_match = Condition::default();
    let mut if_none_match = Condition::default();
    for (name, value) in headers {
        if *name == header::IF_MATCH {
            if_match.add(value);
        } else if *name == header::IF_NONE_MATCH {
            if_none_match.add(value);
        }
    }
    (if_match.tags(), if_none_match.tags())
}

/// One conditional header's values, as they are read. A list that does not parse keeps the
/// tags read before the error: a malformed `If-Match` then matches nothing (412) and a
/// malformed `If-None-Match` nothing either (a full answer), the safe side of both.
#[derive(Default)]
struct Condition {
    tags: Vec<EntityTag>,
    any: bool,
    present: bool,
}

impl Condition {
    fn add(&mut self, value: &HeaderValue) {
        self.present = true;
        let Ok(value) = value.to_str() else { return };
        if value.trim() == "*" {
            self.any = true;
        } else {
            parse_tags(value, &mut self.tags);
        }
    }

    fn tags(self) -> Option<Tags> {
        match (self.present, self.any) {
            (false, _) => None,
            (true, true) => Some(Tags::Any),
            (true, false) => Some(Tags::List(self.tags)),
        }
    }
}

/// Appends the entity tags of `#entity-tag` (`W/"a", "b"`) to `out`, stopping at the first
/// thing that is not one.
fn parse_tags(list: &str, out: &mut Vec<EntityTag>) {
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
        out.push(EntityTag {
            weak,
            tag: format!("\"{}\"", &after_quote[..end]),
        });
        rest = &after_quote[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(values: &[&str]) -> Option<Tags> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::IF_MATCH, HeaderValue::from_str(v).unwrap());
        }
        read_conditions(&headers).0
    }

    fn tags(list: &[(bool, &str)]) -> Tags {
        Tags::List(
            list.iter()
                .map(|(weak, tag)| EntityTag {
                    weak: *weak,
                    tag: (*tag).to_owned(),
                })
                .collect(),
        )
    }

    #[test]
    fn lists_stars_and_weak_tags_are_read() {
        assert_eq!(condition(&[]), None);
        assert_eq!(condition(&[" * "]), Some(Tags::Any));
        assert_eq!(
            condition(&[r#""a", W/"b""#, r#""c,d""#]),
            Some(tags(&[
                (false, r#""a""#),
                (true, r#""b""#),
                (false, r#""c,d""#)
            ]))
        );
        // Garbage keeps what came before it and matches nothing else.
        assert_eq!(
            condition(&[r#""a", b, "c""#]),
            Some(tags(&[(false, r#""a""#)]))
        );
        assert_eq!(condition(&["nope"]), Some(Tags::List(vec![])));
    }

    #[test]
    fn each_condition_is_read_from_its_own_header() {
        let mut headers = HeaderMap::new();
        headers.append(header::ACCEPT, HeaderValue::from_static("*/*"));
        headers.append(header::IF_NONE_MATCH, HeaderValue::from_static(r#""a""#));
        headers.append(header::HOST, HeaderValue::from_static("example.com"));
        headers.append(header::IF_NONE_MATCH, HeaderValue::from_static(r#"W/"b""#));
        assert_eq!(
            read_conditions(&headers),
            (None, Some(tags(&[(false, r#""a""#), (true, r#""b""#)])))
        );
        headers.append(header::IF_MATCH, HeaderValue::from_static("*"));
        assert_eq!(read_conditions(&headers).0, Some(Tags::Any));
    }

    /// The tag a response carries is the one the service computes inside a conditional
    /// write from the same resource: the two must never drift apart.
    #[tokio::test]
    async fn the_tag_of_an_answer_is_the_services_tag_of_its_data() {
        let data =
            serde_json::json!({"agent_id": "agent_1", "agent_name": "Désk", "n": [1.5, null]});
        let response = tag(response::ok(&data)).await;
        let etag = etag_of(&response).unwrap();
        assert_eq!(etag, voiceplane_core::precondition::tag_of(&data).unwrap());
        assert!(
            Preconditions {
                if_match: Some(tags(&[(false, &etag)])),
                if_none_match: None,
            }
            .check(&data)
            .is_ok()
        );
    }
}
