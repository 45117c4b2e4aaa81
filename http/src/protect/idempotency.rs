//! `Idempotency-Key` on POSTs (draft-ietf-httpapi-idempotency-key-header, as Stripe practises
//! it): the first request with a key runs and its response is stored in the database; a retry
//! with the same key, credential and request (method, path and body bytes) within 24 hours gets
//! that response again, byte for byte, with `Idempotent-Replayed: true`, on any instance.
//!
//! - Another request under the same key: 422. The first still running: 409.
//! - What is stored: final answers, i.e. 2xx and 4xx other than 408, 409, 425 and 429. A 5xx
//!   (or one of those four) releases the key, so that the retry runs the operation again:
//!   voiceplane's writes are single transactions, so an operation that failed wrote nothing,
//!   and a conflict or throttling may clear by itself.
//! - Only complete bodies of at most [`MAX_STORED_BODY_BYTES`] are stored; a larger or
//!   streamed response is passed on as it is and releases the key.
//! - The request body is read (at most `max_body_bytes`) before the operation runs, to be
//!   hashed; a larger request with a key is refused with 413.
//! - Once claimed, the operation runs in its own task: a client that hangs up does not cancel
//!   it half-way, and its retry gets the stored answer.
//! - The answer is stored after the operation committed, so a crash or a lost commit
//!   acknowledgement in between leaves no answer to replay. The creates that must never run
//!   twice (a dial, a usage post) bind the key to what they make in their own transaction: the
//!   operation sees the key as a request extension ([`KeyBinding`]), and run again with it
//!   only answers what it made. A request that finds its key still claimed by one whose
//!   create is bound is run that way too, rather than told to wait.

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode, header};
use http_body::Body as _;
use http_body_util::BodyExt;
use tracing::Instrument;
use voiceplane_core::idempotency::{Claim, KeyBinding, StoredAnswer, fingerprint};

use crate::api::Api;
use crate::body::{RequestBody, boxed, collect_limited};
use crate::caller::Authenticated;
use crate::conditional;
use crate::error::ApiError;
use crate::operation::{Captures, Operation};
use crate::response::{ResponseBody, full};

/// The request header that carries the key.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The response header of a replayed answer.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Longest key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 255;

/// Largest response body stored for replay.
pub const MAX_STORED_BODY_BYTES: u64 = 1024 * 1024;

/// The request's key: `None` without one; 400 unless it is one header of 1 to
/// [`MAX_KEY_LEN`] visible ASCII characters.
pub(crate) fn key_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let bytes = value.as_bytes();
    if values.next().is_some()
        || !(1..=MAX_KEY_LEN).contains(&bytes.len())
        || !bytes.iter().all(u8::is_ascii_graphic)
    {
        return Err(ApiError::bad_request(format!(
            "Idempotency-Key must be sent once, as 1 to {MAX_KEY_LEN} visible ASCII characters"
        )));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// Whether a response with `status` is the final answer to its request, to be replayed.
fn is_final(status: StatusCode) -> bool {
    (status.is_success() || status.is_client_error())
        && !matches!(status.as_u16(), 408 | 409 | 425 | 429)
}

/// An `Idempotency-Key`, in the scope of the caller who sent it.
pub(crate) struct ScopedKey {
    /// Who sent it (`protect::scope_of`).
    pub(crate) scope: String,
    /// The key as sent.
    pub(crate) key: String,
}

/// Runs a POST that carries `key` in `scope`, for `caller` when it was authenticated.
pub(crate) async fn run(
    api: &Api,
    op: &'static Operation,
    captures: Captures,
    parts: Parts,
    body: RequestBody,
    caller: Option<Authenticated>,
    ScopedKey { scope, key }: ScopedKey,
) -> Result<Response<ResponseBody>, ApiError> {
    let limit = api.config.max_body_bytes;
    let bytes = collect_limited(&parts.headers, body, limit)
        .await
        .map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "a request with an Idempotency-Key may carry at most {limit} bytes; \
                         send a larger upload without one"
                    ),
                )
            } else {
                e
            }
        })?;
    let path = parts
        .uri
        .path_and_query()
        .map_or(parts.uri.path(), |p| p.as_str());
    let print = fingerprint(parts.method.as_str(), path, &bytes);
    let service = api.service.clone();
    let mut parts = parts;
    parts.extensions.insert(KeyBinding {
        scope: scope.clone(),
        key: key.clone(),
        fingerprint: print.clone(),
    });
    let token = match service.idempotency_claim(&scope, &key, &print).await? {
        Claim::Claimed { token } => token,
        Claim::Replay(stored) => return Ok(replay(stored)),
        Claim::Mismatch => {
            return Err(voiceplane_core::idempotency::mismatch().into());
        }
        Claim::InFlight if service.idempotency_bound(&scope, &key).await? => {
            // Committed, and bound: the operation answers what it made, and the claim stays
            // its holder's to complete.
            let response = conditional::run(
                api,
                op,
                captures,
                parts,
                boxed(http_body_util::Full::new(bytes)),
                caller,
            )
            .await?;
            return Ok(response);
        }
        Claim::InFlight => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "a request with this Idempotency-Key is still being processed; retry once it \
                 has finished",
            ));
        }
    };
    let api = api.clone();
    let task = async move {
        let response = match conditional::run(
            &api,
            op,
            captures,
            parts,
            boxed(http_body_util::Full::new(bytes)),
            caller,
        )
        .await
        {
            Ok(response) => response,
            Err(err) => err.into_response(),
        };
        settle(&api, &scope, &key, &token, response).await
    };
    match tokio::spawn(task.in_current_span()).await {
        Ok(response) => Ok(response),
        Err(e) => {
            // The operation panicked: nothing to replay. The key stays claimed until its lease
            // ends, since whether the operation wrote anything is unknown.
            tracing::error!(error = %e, "an idempotent request's task failed");
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error",
            ))
        }
    }
}

/// Stores `response` for replay when it is final and small enough, else releases the key;
/// returns the response to send, unchanged in its bytes.
async fn settle(
    api: &Api,
    scope: &str,
    key: &str,
    token: &str,
    response: Response<ResponseBody>,
) -> Response<ResponseBody> {
    let size = response.body().size_hint().exact();
    let storable = is_final(response.status()) && size.is_some_and(|n| n <= MAX_STORED_BODY_BYTES);
    if !storable {
        if let Err(e) = api.service.idempotency_release(scope, key, token).await {
            tracing::warn!(error = %e, "could not release an idempotency key");
        }
        return response;
    }
    let (parts, body) = response.into_parts();
    let body: Bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            tracing::error!(error = %e, "could not read a response body to store it");
            if let Err(e) = api.service.idempotency_release(scope, key, token).await {
                tracing::warn!(error = %e, "could not release an idempotency key");
            }
            return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
                .into_response();
        }
    };
    let stored = StoredAnswer {
        meta: encode_meta(parts.status, &parts.headers),
        body: body.to_vec(),
    };
    if let Err(e) = api
        .service
        .idempotency_complete(scope, key, token, &stored)
        .await
    {
        // The answer still goes out; a retry gets 409 until the claim's lease ends.
        tracing::warn!(error = %e, "could not store an idempotent response");
    }
    Response::from_parts(parts, full(body))
}

/// The headers a replay repeats; the others (dates, request ids, rate limits) are the
/// replay's own.
const REPLAYED_HEADERS: [HeaderName; 2] = [header::CONTENT_TYPE, header::LOCATION];

/// What a stored answer keeps beside its body: the status on the first line, then one
/// `name: value` line per [`REPLAYED_HEADERS`] present (a header value holds no line break).
/// Answers stored before this encoding are carried into it by storage's migration
/// `m0014_idempotency_answer`.
fn encode_meta(status: StatusCode, headers: &HeaderMap) -> String {
    let mut meta = status.as_str().to_owned();
    for name in REPLAYED_HEADERS {
        if let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) {
            meta.push_str(&format!("\n{name}: {value}"));
        }
    }
    meta
}

/// The status and headers [`encode_meta`] wrote; a line it cannot read is left out, and a
/// status it cannot read is a 500.
fn decode_meta(meta: &str) -> (StatusCode, HeaderMap) {
    let mut lines = meta.lines();
    let status = lines
        .next()
        .and_then(|s| StatusCode::from_bytes(s.as_bytes()).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(": ")
            && let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            )
        {
            headers.insert(name, value);
        }
    }
    (status, headers)
}

/// The stored answer, with `Idempotent-Replayed: true`.
fn replay(stored: StoredAnswer) -> Response<ResponseBody> {
    let (status, headers) = decode_meta(&stored.meta);
    let mut response = Response::new(full(stored.body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(IDEMPOTENCY_KEY, HeaderValue::from_bytes(v).unwrap());
        }
        h
    }

    #[test]
    fn keys_are_one_header_of_visible_ascii() {
        assert_eq!(key_of(&headers(&[])).unwrap(), None);
        assert_eq!(
            key_of(&headers(&[b"order-42"])).unwrap().as_deref(),
            Some("order-42")
        );
        let longest = "k".repeat(MAX_KEY_LEN);
        assert!(key_of(&headers(&[longest.as_bytes()])).unwrap().is_some());
        let too_long = "k".repeat(MAX_KEY_LEN + 1);
        for bad in [
            vec![&b""[..]],
            vec![too_long.as_bytes()],
            vec![&b"with space"[..]],
            vec![&b"caf\xc3\xa9"[..]],
            vec![&b"a"[..], &b"b"[..]],
        ] {
            let err = key_of(&headers(&bad)).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST);
            assert!(err.detail().starts_with("Idempotency-Key must be"));
        }
    }

    #[test]
    fn answers_keep_their_status_and_replayed_headers() {
        let mut sent = HeaderMap::new();
        sent.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        sent.insert(
            header::LOCATION,
            HeaderValue::from_static("/api/agents/agent_1"),
        );
        sent.insert(
            header::DATE,
            HeaderValue::from_static("Tue, 01 Dec 2026 10:00:00 GMT"),
        );
        let meta = encode_meta(StatusCode::CREATED, &sent);
        assert_eq!(
            meta,
            "201\ncontent-type: application/json\nlocation: /api/agents/agent_1"
        );
        let (status, headers) = decode_meta(&meta);
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(headers.len(), 2);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(headers[header::LOCATION], "/api/agents/agent_1");

        let (status, headers) = decode_meta("204");
        assert_eq!((status, headers.len()), (StatusCode::NO_CONTENT, 0));
        let (status, headers) = decode_meta("teapot\nnot a header");
        assert_eq!(
            (status, headers.len()),
            (StatusCode::INTERNAL_SERVER_ERROR, 0)
        );
    }

    #[test]
    fn only_final_answers_are_stored() {
        for (status, stored) in [
            (200, true),
            (201, true),
            (400, true),
            (404, true),
            (422, true),
            (408, false),
            (409, false),
            (429, false),
            (500, false),
            (502, false),
            (503, false),
        ] {
            assert_eq!(
                is_final(StatusCode::from_u16(status).unwrap()),
                stored,
                "{status}"
            );
        }
    }
}
