//! Request bodies: content-type checks, size limits and JSON decoding.

use std::future::Future;
use std::pin::Pin;

use bytes::{Buf, Bytes};
use http::{HeaderMap, header};
use http_body::Body as _;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, payload_too_large};
use crate::response::BoxError;

/// A request body after routing: boxed, so that extractors are not generic over it.
pub(crate) type RequestBody = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

/// Boxes any request body into a [`RequestBody`].
pub(crate) fn boxed<B>(body: B) -> RequestBody
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    if body.is_end_stream() {
        // Most requests (every `GET`) have no body: an empty one in its place is a box of
        // nothing, which allocates nothing.
        return http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
    }
    body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(Into::into)
        .boxed_unsync()
}

/// The 415 detail for a JSON body sent with another `Content-Type`.
pub(crate) const JSON_REQUIRED: &str = "Content-Type must be application/json";

/// A parsed `Content-Type`: the lowercase `type/subtype` and the parameters, names lowercase
/// and values unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MediaType {
    pub(crate) essence: String,
    params: Vec<(String, String)>,
}

impl MediaType {
    /// Parses a `Content-Type` value, allowing whitespace around `;` and `=` as HTTP does
    /// (`mime` refuses `application/json ; charset=utf-8`, which clients send).
    pub(crate) fn parse(value: &str) -> Option<Self> {
        let mut parts = value.split(';');
        let essence = parts.next()?.trim().to_ascii_lowercase();
        let (kind, sub) = essence.split_once('/')?;
        if kind.is_empty() || sub.is_empty() || essence.contains(char::is_whitespace) {
            return None;
        }
        let params = parts
            .filter_map(|p| p.split_once('='))
            .map(|(name, value)| {
                let value = value.trim();
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value);
                (name.trim().to_ascii_lowercase(), value.to_owned())
            })
            .collect();
        Some(Self { essence, params })
    }

    /// The value of parameter `name` (lowercase).
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The request's media type: its first `Content-Type`, parsed. This is the adapter's one
/// reader of `Content-Type`; a value that does not parse is treated as absent.
pub(crate) fn media_type(headers: &HeaderMap) -> Option<MediaType> {
    MediaType::parse(headers.get(header::CONTENT_TYPE)?.to_str().ok()?)
}

/// What the `Content-Type` of a request says about JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonContentType {
    /// `application/json`, optionally with `charset=utf-8`.
    Json,
    /// `application/json` with a charset other than UTF-8.
    WrongCharset,
    /// Missing, or another media type.
    Other,
}

/// Classifies the request's `Content-Type`. Media type and parameter names are
/// case-insensitive; parameters other than `charset` are ignored.
pub(crate) fn json_content_type(headers: &HeaderMap) -> JsonContentType {
    match media_type(headers) {
        Some(media) if media.essence == "application/json" => match media.param("charset") {
            Some(c) if !c.eq_ignore_ascii_case("utf-8") && !c.eq_ignore_ascii_case("utf8") => {
                JsonContentType::WrongCharset
            }
            _ => JsonContentType::Json,
        },
        _ => JsonContentType::Other,
    }
}

/// Fails with 415 unless the request declares a UTF-8 JSON body; `detail` is the sentence of
/// the 415 for a non-JSON media type.
pub(crate) fn require_json(headers: &HeaderMap, detail: &str) -> Result<(), ApiError> {
    match json_content_type(headers) {
        JsonContentType::Json => Ok(()),
        JsonContentType::WrongCharset => Err(ApiError::unsupported_media_type(
            "JSON request bodies must be encoded in UTF-8 (charset=utf-8)",
        )),
        JsonContentType::Other => Err(ApiError::unsupported_media_type(detail)),
    }
}

/// Refuses a body whose declared `Content-Length` is over `limit` before reading any of it.
pub(crate) fn check_declared_length(headers: &HeaderMap, limit: u64) -> Result<(), ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > limit => Err(payload_too_large(limit).into()),
        _ => Ok(()),
    }
}

/// Reads the whole body, at most `limit` bytes. A declared `Content-Length` (or body size
/// hint) above the limit is refused before anything is read; a body that turns out longer
/// while reading is refused as soon as it crosses the limit. Both are 413.
pub(crate) async fn collect_limited(
    headers: &HeaderMap,
    body: RequestBody,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let limit_u64 = u64::try_from(limit).unwrap_or(u64::MAX);
    check_declared_length(headers, limit_u64)?;
    if body.size_hint().lower() > limit_u64 {
        return Err(payload_too_large(limit_u64).into());
    }
    // Boxed so that the future is checked `Send` here, with concrete types: inside the
    // extractors' generic futures the compiler cannot prove it (rust-lang/rust#102211).
    let collected: Pin<Box<dyn Future<Output = _> + Send>> =
        Box::pin(Limited::new(body, limit).collect());
    match collected.await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => {
            Err(payload_too_large(limit_u64).into())
        }
        Err(err) => {
            tracing::debug!(error = %err, "could not read the request body");
            Err(ApiError::bad_request("the request body could not be read"))
        }
    }
}

/// Decodes a JSON body into `T`. `415` unless `Content-Type` is JSON (with `wrong_type` as
/// the detail), `413` above `limit`, `400` when empty, not JSON, or not the expected shape
/// (the detail carries serde's message, which names unknown or missing fields).
pub(crate) async fn read_json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: RequestBody,
    limit: usize,
    wrong_type: &str,
) -> Result<T, ApiError> {
    require_json(headers, wrong_type)?;
    let bytes = collect_limited(headers, body, limit).await?;
    decode_json(&bytes)
}

/// Decodes `bytes` as JSON into `T`, with the 400 details of [`read_json`].
pub(crate) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("request body is required"));
    }
    serde_json::from_slice(bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            ApiError::bad_request(format!("request body is invalid: {e}"))
        }
        _ => ApiError::bad_request(format!("request body is not valid JSON: {e}")),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use http::{HeaderValue, StatusCode};
    use http_body::Frame;

    use http_body::Body;
    use http_body_util::Full;

    use super::*;
    use crate::body::boxed;

    fn with_type(ct: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        h
    }

    #[test]
    fn content_types() {
        use JsonContentType::*;
        assert_eq!(json_content_type(&HeaderMap::new()), Other);
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=UTF-8",
            "application/json; charset=\"utf-8\"",
            "application/json ; version=2",
        ] {
            assert_eq!(json_content_type(&with_type(ok)), Json, "{ok}");
        }
        for other in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "application/problem+json",
            "",
        ] {
            assert_eq!(json_content_type(&with_type(other)), Other, "{other}");
        }
        assert_eq!(
            json_content_type(&with_type("application/json; charset=latin1")),
            WrongCharset
        );
        let err = require_json(&with_type("text/plain"), JSON_REQUIRED).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(err.detail(), JSON_REQUIRED);
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        name: String,
    }

    #[test]
    fn json_decoding_errors_are_400_with_serde_message() {
        let e = decode_json::<Input>(b"").unwrap_err();
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(e.detail(), "request body is required");
        assert_eq!(
            decode_json::<Input>(b"  \n").unwrap_err().detail(),
            "request body is required"
        );
        let e = decode_json::<Input>(b"{not json").unwrap_err();
        assert!(
            e.detail().starts_with("request body is not valid JSON: "),
            "{}",
            e.detail()
        );
        let e = decode_json::<Input>(br#"{"name":"a","nope":1}"#).unwrap_err();
        assert!(
            e.detail().contains("unknown field `nope`"),
            "{}",
            e.detail()
        );
        let e = decode_json::<Input>(b"{}").unwrap_err();
        assert!(
            e.detail().contains("missing field `name`"),
            "{}",
            e.detail()
        );
        assert!(decode_json::<Input>(br#"{"name":"a"}"#).is_ok());
    }

    /// A body without a size hint, delivered in chunks.
    struct Chunks(VecDeque<Bytes>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    fn chunks(n: usize, size: usize) -> Chunks {
        Chunks((0..n).map(|_| Bytes::from(vec![b' '; size])).collect())
    }

    #[tokio::test]
    async fn size_limits() {
        // Declared too large: refused before reading.
        let mut h = with_type("application/json");
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("11"));
        let e = collect_limited(&h, boxed(Full::new(Bytes::from_static(b"{}"))), 10)
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.detail(), "request body exceeds the limit of 10 bytes");

        // Size hint too large.
        let e = collect_limited(
            &HeaderMap::new(),
            boxed(Full::new(Bytes::from(vec![0; 11]))),
            10,
        )
        .await
        .unwrap_err();
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);

        // Streamed past the limit without a declared length.
        let e = collect_limited(&HeaderMap::new(), boxed(chunks(3, 4)), 10)
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);

        // Exactly at the limit.
        let b = collect_limited(&HeaderMap::new(), boxed(chunks(2, 5)), 10)
            .await
            .unwrap();
        assert_eq!(b.len(), 10);
    }
}
