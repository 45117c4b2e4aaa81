//! JSON responses and the envelopes of the API:
//!
//! - one object: `{"success": true, "data": {…}}`;
//! - a cursor list: `{"success": true, "data": […], "pagination": {"next_cursor", "has_more",
//!   "page_size"[, "total_count"]}}`;
//! - endpoints with their own shape (`{"invitations": […]}`, `{"members": […]}`, health) are
//!   serialized as they are.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use schemars::JsonSchema;
use serde::Serialize;
use voiceplane_core::model::Outcome;
use voiceplane_core::page::Page;

use crate::error::ApiError;

/// The error type of response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of every response: boxed, so that complete JSON bodies and streamed ones share
/// one type. `Send` but not `Sync`, as streams from object storage are.
pub type ResponseBody = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, BoxError>;

/// A complete response body holding `bytes`.
pub(crate) fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// `bytes`, JSON already, as a response with `status`.
fn json_bytes(status: StatusCode, bytes: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    *response.headers_mut() = crate::recycle::headers();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `value` as a JSON response with `status`. A value that cannot be serialized (a bug) is
/// logged and answered with a 500.
pub(crate) fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<ResponseBody> {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(status, bytes),
        Err(e) => {
            tracing::error!(error = %e, "could not serialize a response");
            internal_error_response()
        }
    }
}

/// The answer to a `HEAD`: `response` with the same status and headers and no body, its
/// `Content-Length` that of the body a `GET` would have sent, when that length is known
/// (RFC 9110 §9.3.2). hyper keeps such a header on a body-less answer to `HEAD`. A 304 gets
/// none: its length would have to be that of the 200 it stands for (§8.6).
pub(crate) fn without_body(response: Response<ResponseBody>) -> Response<ResponseBody> {
    use http_body::Body as _;
    let (mut parts, body) = response.into_parts();
    if let Some(length) = body.size_hint().exact()
        && parts.status != StatusCode::NOT_MODIFIED
        && !parts.headers.contains_key(header::CONTENT_LENGTH)
    {
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    Response::from_parts(parts, full(Bytes::new()))
}

/// The response sent when even serializing a response failed.
pub(crate) fn internal_error_response() -> Response<ResponseBody> {
    json_bytes(
        StatusCode::INTERNAL_SERVER_ERROR,
        &br#"{"detail":"internal server error"}"#[..],
    )
}

/// `"success": true`, always: serialized as `true` and described as the constant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Success;

impl Serialize for Success {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(true)
    }
}

impl JsonSchema for Success {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Success".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "boolean", "const": true})
    }
}

/// `{"success": true, "data": …}`: one resource.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct DataEnvelope<'a, T: ?Sized> {
    success: Success,
    data: &'a T,
}

/// `{"success": true, "message": "…", "data": …}`: the answer of a state change.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct OutcomeEnvelope<'a, T> {
    success: Success,
    /// What happened, as a sentence.
    message: &'a str,
    data: &'a T,
}

/// `{"success": true, "data": […], "pagination": {…}}`: one page of a cursor list.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct ListEnvelope<'a, T, P = Pagination<'a>> {
    success: Success,
    data: &'a [T],
    pagination: P,
}

/// Where the page stands in its list.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Pagination<'a> {
    /// Pass as `cursor` for the next page; `null` when `has_more` is false.
    next_cursor: Option<&'a str>,
    /// Whether more items follow.
    has_more: bool,
    /// Number of items on this page.
    page_size: usize,
}

/// Where the page stands in its list, and how long the whole list is.
#[derive(Serialize, JsonSchema)]
pub(crate) struct CountedPagination<'a> {
    #[serde(flatten)]
    page: Pagination<'a>,
    /// Number of items in the whole list.
    total_count: u64,
}

impl<'a> Pagination<'a> {
    fn of<T>(page: &'a Page<T>) -> Self {
        Self::new(page.next_cursor.as_deref(), page.has_more, page.page_size())
    }

    pub(crate) fn new(next_cursor: Option<&'a str>, has_more: bool, page_size: usize) -> Self {
        Self {
            next_cursor,
            has_more,
            page_size,
        }
    }
}

/// The bytes of `{"success": true, "data": data}`.
pub(crate) fn data_bytes<T: Serialize + ?Sized>(
    data: &T,
) -> Result<Vec<u8>, crate::error::ApiError> {
    serde_json::to_vec(&DataEnvelope {
        success: Success,
        data,
    })
    .map_err(|e| {
        crate::error::ApiError::from(voiceplane_core::Error::Internal(format!(
            "could not serialize a response: {e}"
        )))
    })
}

/// `200` with `body`, JSON written before, and its `ETag`.
pub(crate) fn tagged(body: Bytes, etag: HeaderValue) -> Response<ResponseBody> {
    let mut response = json_bytes(StatusCode::OK, body);
    response.headers_mut().insert(header::ETAG, etag);
    response
}

/// `{"success": true, "data": data}` with `status`.
pub(crate) fn data<T: Serialize + ?Sized>(status: StatusCode, data: &T) -> Response<ResponseBody> {
    json(
        status,
        &DataEnvelope {
            success: Success,
            data,
        },
    )
}

/// `200 {"success": true, "data": data}`.
#[cfg(test)]
pub(crate) fn ok<T: Serialize + ?Sized>(value: &T) -> Response<ResponseBody> {
    data(StatusCode::OK, value)
}

/// `200 {"success": true, "message": outcome.message, "data": outcome.data}`: the answer of
/// state changes (revoke, validate, delete, accept).
pub(crate) fn outcome<T: Serialize>(outcome: &Outcome<T>) -> Response<ResponseBody> {
    json(
        StatusCode::OK,
        &OutcomeEnvelope {
            success: Success,
            message: &outcome.message,
            data: &outcome.data,
        },
    )
}

/// `200` with a cursor-list envelope.
pub(crate) fn page<T: Serialize>(page: &Page<T>) -> Response<ResponseBody> {
    json(
        StatusCode::OK,
        &ListEnvelope {
            success: Success,
            data: &page.items,
            pagination: Pagination::of(page),
        },
    )
}

/// A cursor-list envelope of items already written as JSON: the bytes [`page`] writes for
/// the items they were written from.
pub(crate) fn page_of_json<T>(
    items: &[T],
    pagination: Pagination<'_>,
    json: impl Fn(&T) -> &str,
) -> Result<Vec<u8>, ApiError> {
    let size = items.iter().map(|item| json(item).len() + 1).sum::<usize>();
    let mut body = Vec::with_capacity(size + 128);
    body.extend_from_slice(br#"{"success":true,"data":["#);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(json(item).as_bytes());
    }
    body.extend_from_slice(br#"],"pagination":"#);
    serde_json::to_writer(&mut body, &pagination).map_err(|e| {
        ApiError::from(voiceplane_core::Error::Internal(format!(
            "could not serialize a page: {e}"
        )))
    })?;
    body.push(b'}');
    Ok(body)
}

/// `200` with `body`, JSON written earlier.
pub(crate) fn ok_json(body: Bytes) -> Response<ResponseBody> {
    json_bytes(StatusCode::OK, body)
}

/// `200` with a cursor-list envelope whose pagination has `total_count`.
pub(crate) fn counted_page<T: Serialize>(page: &Page<T>) -> Response<ResponseBody> {
    json(
        StatusCode::OK,
        &ListEnvelope {
            success: Success,
            data: &page.items,
            pagination: CountedPagination {
                page: Pagination::of(page),
                // Only lists whose service counts them are answered as counted.
                total_count: page.total_count.unwrap_or(page.items.len() as u64),
            },
        },
    )
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use serde_json::{Value, json as j};

    use super::*;

    async fn body(r: Response<ResponseBody>) -> Value {
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn envelopes() {
        let r = ok(&j!({"a": 1}));
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(body(r).await, j!({"success": true, "data": {"a": 1}}));

        let r = data(StatusCode::CREATED, &j!({"a": 1}));
        assert_eq!(r.status(), StatusCode::CREATED);

        let p = Page {
            items: vec![1, 2],
            has_more: true,
            next_cursor: Some("abc".into()),
            total_count: None,
        };
        assert_eq!(
            body(page(&p)).await,
            j!({"success": true, "data": [1, 2],
                "pagination": {"next_cursor": "abc", "has_more": true, "page_size": 2}})
        );
        let p = Page::<u8> {
            items: vec![],
            has_more: false,
            next_cursor: None,
            total_count: Some(0),
        };
        assert_eq!(
            body(counted_page(&p)).await,
            j!({"success": true, "data": [],
                "pagination": {"next_cursor": null, "has_more": false, "page_size": 0,
                               "total_count": 0}})
        );
    }

    #[tokio::test]
    async fn a_page_of_json_is_the_page_of_its_values() {
        for (items, has_more, next_cursor) in [
            (vec![], false, None),
            (vec![j!({"a": 1})], false, None),
            (
                vec![j!({"a": "x\"y"}), j!([1, 2]), j!(null)],
                true,
                Some("abc".to_owned()),
            ),
        ] {
            let typed = Page {
                items,
                has_more,
                next_cursor,
                total_count: None,
            };
            let written = Page {
                items: typed.items.iter().map(Value::to_string).collect::<Vec<_>>(),
                has_more: typed.has_more,
                next_cursor: typed.next_cursor.clone(),
                total_count: None,
            };
            let bytes = |r: Response<ResponseBody>| async {
                r.into_body().collect().await.unwrap().to_bytes()
            };
            let raw = ok_json(Bytes::from(
                page_of_json(&written.items, Pagination::of(&written), String::as_str).unwrap(),
            ));
            assert_eq!(raw.headers()[header::CONTENT_TYPE], "application/json");
            assert_eq!(bytes(raw).await, bytes(page(&typed)).await);
        }
    }

    #[tokio::test]
    async fn unserializable_values_give_a_generic_500() {
        struct Bad;
        impl Serialize for Bad {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("secret internals"))
            }
        }
        let r = ok(&Bad);
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body(r).await, j!({"detail": "internal server error"}));
    }
}
