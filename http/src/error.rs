//! The one mapping from [`voiceplane_core::Error`] to an HTTP status, and the error response
//! every failure goes through: `{"detail": "<sentence>"}` with `Content-Type:
//! application/json`.

use http::{HeaderName, HeaderValue, Method, Response, StatusCode, header};
use schemars::JsonSchema;
use serde::Serialize;
use voiceplane_core::Error;

use crate::response::ResponseBody;

/// The HTTP status of a domain error. This is the only place where a status is derived from
/// a [`voiceplane_core::Error`].
pub fn status_for(err: &Error) -> StatusCode {
    match err {
        Error::InvalidInput(_) => StatusCode::BAD_REQUEST,
        Error::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
        Error::Forbidden(_) => StatusCode::FORBIDDEN,
        Error::NotFound(_) => StatusCode::NOT_FOUND,
        Error::Conflict(_) => StatusCode::CONFLICT,
        Error::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
        Error::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Error::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
        Error::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        Error::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Error::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
        Error::Upstream(_) => StatusCode::BAD_GATEWAY,
        Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Seconds a client should wait before retrying a 503.
pub(crate) const RETRY_AFTER_SECS: u32 = 5;

/// A failed request as the adapter answers it: a status and a sentence safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    status: StatusCode,
    detail: String,
    /// Headers the status calls for: `Allow` on a 405, `Content-Range` on a 416.
    header: Option<(HeaderName, String)>,
    /// Further headers (`Retry-After` and `RateLimit-*` on a 429).
    more: Vec<(HeaderName, String)>,
}

/// `{"detail": "<sentence>"}`: the body of every error.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub(crate) struct ErrorBody<'a> {
    /// A human-readable sentence.
    detail: &'a str,
}

/// The error of a body, JSON or streamed upload, larger than `limit` bytes.
pub(crate) fn payload_too_large(limit: u64) -> Error {
    Error::PayloadTooLarge(format!("request body exceeds the limit of {limit} bytes"))
}

impl ApiError {
    /// An error with this status and detail; a 503 says when to try again (`Retry-After`), so
    /// that clients and load balancers back off instead of hammering a backend that is down.
    pub(crate) fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        let header = (status == StatusCode::SERVICE_UNAVAILABLE)
            .then(|| (header::RETRY_AFTER, RETRY_AFTER_SECS.to_string()));
        Self {
            status,
            detail: detail.into(),
            header,
            more: Vec::new(),
        }
    }

    /// The same error with the header `name: value` too.
    pub(crate) fn with_header(mut self, name: HeaderName, value: String) -> Self {
        self.more.push((name, value));
        self
    }

    /// 400 with `detail`.
    pub(crate) fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 401 with `detail`.
    pub(crate) fn unauthenticated(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, detail)
    }

    /// 415 with `detail`.
    pub(crate) fn unsupported_media_type(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, detail)
    }

    /// 404 for a path no route matches.
    pub(crate) fn no_route(method: &Method, path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!("no route for {method} {}", truncate(path, 200)),
        )
    }

    /// 405 with the methods the path accepts.
    pub(crate) fn method_not_allowed(method: &Method, path: &str, allow: &[&str]) -> Self {
        let allow = allow.join(", ");
        Self {
            status: StatusCode::METHOD_NOT_ALLOWED,
            detail: format!(
                "method {method} is not allowed for {}; allowed: {allow}",
                truncate(path, 200)
            ),
            header: Some((header::ALLOW, allow)),
            more: Vec::new(),
        }
    }

    /// 416 for a range outside an object of `size` bytes, with `Content-Range: bytes */size`.
    pub(crate) fn range_not_satisfiable(size: u64) -> Self {
        Self {
            status: StatusCode::RANGE_NOT_SATISFIABLE,
            detail: format!("the requested range is outside the recording's {size} bytes"),
            header: Some((header::CONTENT_RANGE, format!("bytes */{size}"))),
            more: Vec::new(),
        }
    }

    /// The status this error answers with.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The detail sentence.
    #[cfg(test)]
    pub(crate) fn detail(&self) -> &str {
        &self.detail
    }

    /// The response: `{"detail": …}`, JSON, plus the header its status calls for.
    pub(crate) fn into_response(self) -> Response<ResponseBody> {
        let mut response = crate::response::json(
            self.status,
            &ErrorBody {
                detail: &self.detail,
            },
        );
        for (name, value) in self.header.into_iter().chain(self.more) {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        if let Error::Internal(text) = &err {
            tracing::error!(error = %text, "internal error");
        }
        let error = Self::new(status_for(&err), err.public_message());
        match err {
            // A limit that holds for now: the caller may try again shortly.
            Error::TooManyRequests(_) => {
                error.with_header(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())
            }
            _ => error,
        }
    }
}

/// Cuts `s` to at most `max` characters for echoing in a detail.
fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_503_says_when_to_retry() {
        let unavailable = ApiError::from(Error::Unavailable("db".into())).into_response();
        assert_eq!(
            unavailable.headers().get(header::RETRY_AFTER).unwrap(),
            &RETRY_AFTER_SECS.to_string()
        );
        let invalid = ApiError::from(Error::InvalidInput("x".into())).into_response();
        assert!(invalid.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn every_variant_has_its_status() {
        let cases = [
            (Error::InvalidInput("x".into()), 400),
            (Error::Unauthenticated("x".into()), 401),
            (Error::Forbidden("x".into()), 403),
            (Error::NotFound("x".into()), 404),
            (Error::Conflict("x".into()), 409),
            (Error::RequestTimeout("x".into()), 408),
            (Error::PayloadTooLarge("x".into()), 413),
            (Error::UnsupportedMediaType("x".into()), 415),
            (Error::Upstream("x".into()), 502),
            (Error::Unavailable("x".into()), 503),
            (Error::Internal("x".into()), 500),
        ];
        for (err, status) in cases {
            assert_eq!(status_for(&err).as_u16(), status, "{err:?}");
            let api = ApiError::from(err);
            assert_eq!(api.status().as_u16(), status);
        }
    }

    #[test]
    fn details_are_the_public_message() {
        let e = ApiError::from(Error::not_found("agent agent_1 not found"));
        assert_eq!(e.detail(), "agent agent_1 not found");
        let e = ApiError::from(Error::Internal("connection refused to db:5432".into()));
        assert_eq!(e.detail(), "internal server error");
    }

    #[test]
    fn method_not_allowed_carries_allow() {
        let r = ApiError::method_not_allowed(&Method::DELETE, "/api/calls", &["POST", "GET"])
            .into_response();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[header::ALLOW], "POST, GET");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn range_not_satisfiable_carries_content_range() {
        let r = ApiError::range_not_satisfiable(42).into_response();
        assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes */42");
    }

    #[test]
    fn long_paths_are_cut_in_details() {
        let path = format!("/{}", "a".repeat(1000));
        let e = ApiError::no_route(&Method::GET, &path);
        assert!(e.detail().len() < 230);
    }
}
