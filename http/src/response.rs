//! JSON responses and the envelopes of the API:
//!
//! - one object: `{"success": true, "data": {…}}`;
//! - a cursor list: `{"success": true, "data": […], "pagination": {"next_cursor", "has_more",
//!   "page_size"[, "total_count"]}}`;
//! - endpoints with their own shape (`{"invitations": […]}`, `{"members": […]}`, health) are
//!   serialized as they are.

use http::{HeaderValue, Response, StatusCode, header};
use serde::Serialize;
use voiceplane_core::model::Outcome;
use voiceplane_core::page::Page;

use crate::ResponseBody;
use crate::body::full;
use crate::error::internal_error_response;

/// `value` as a JSON response with `status`. A value that cannot be serialized (a bug) is
/// logged and answered with a 500.
pub(crate) fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<ResponseBody> {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            let mut response = Response::new(full(bytes));
            *response.status_mut() = status;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            tracing::error!(error = %e, "could not serialize a response");
            internal_error_response()
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a, T: ?Sized> {
    success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    data: &'a T,
}

#[derive(Serialize)]
struct ListEnvelope<'a, T> {
    success: bool,
    data: &'a [T],
    pagination: Pagination<'a>,
}

#[derive(Serialize)]
struct Pagination<'a> {
    next_cursor: Option<&'a str>,
    has_more: bool,
    page_size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_count: Option<u64>,
}

/// `{"success": true, "data": data}` with `status`.
pub(crate) fn data<T: Serialize + ?Sized>(status: StatusCode, data: &T) -> Response<ResponseBody> {
    json(
        status,
        &Envelope {
            success: true,
            message: None,
            data,
        },
    )
}

/// `200 {"success": true, "data": data}`.
pub(crate) fn ok<T: Serialize + ?Sized>(value: &T) -> Response<ResponseBody> {
    data(StatusCode::OK, value)
}

/// `201 {"success": true, "data": data}`.
pub(crate) fn created<T: Serialize + ?Sized>(value: &T) -> Response<ResponseBody> {
    data(StatusCode::CREATED, value)
}

/// `200 {"success": true, "message": outcome.message, "data": outcome.data}`: the answer of
/// state changes (revoke, validate, delete, accept).
pub(crate) fn outcome<T: Serialize>(outcome: &Outcome<T>) -> Response<ResponseBody> {
    json(
        StatusCode::OK,
        &Envelope {
            success: true,
            message: Some(&outcome.message),
            data: &outcome.data,
        },
    )
}

/// `200` with a cursor-list envelope; `total_count` only when the page has one.
pub(crate) fn page<T: Serialize>(page: &Page<T>) -> Response<ResponseBody> {
    json(
        StatusCode::OK,
        &ListEnvelope {
            success: true,
            data: &page.items,
            pagination: Pagination {
                next_cursor: page.next_cursor.as_deref(),
                has_more: page.has_more,
                page_size: page.page_size(),
                total_count: page.total_count,
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

        let r = created(&j!({"a": 1}));
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
            body(page(&p)).await,
            j!({"success": true, "data": [],
                "pagination": {"next_cursor": null, "has_more": false, "page_size": 0,
                               "total_count": 0}})
        );
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
