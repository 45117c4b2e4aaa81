//! Streamed endpoints: recording upload, stream link, download, the self-signed recording
//! URLs with `Range` support, and multipart knowledge-base uploads.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Body;
use voiceplane_core::Error;
use voiceplane_core::auth::Actor;
use voiceplane_core::blob::{BlobRead, RangeRequest};
use voiceplane_core::model::Document;
use voiceplane_core::service::SignedRead;

use crate::error::ApiError;
use crate::stream::{byte_stream, streamed, too_large};
use crate::{Api, BoxError, ResponseBody, response};

type Reply = Result<Response<ResponseBody>, ApiError>;

/// The declared `Content-Length`, if any.
fn content_length(parts: &Parts) -> Option<u64> {
    parts
        .headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Refuses a body whose declared length is over the upload limit before reading any of it.
fn check_declared_length(api: &Api, parts: &Parts) -> Result<(), ApiError> {
    match content_length(parts) {
        Some(len) if len > api.config.max_upload_bytes => {
            Err(too_large(api.config.max_upload_bytes).into())
        }
        _ => Ok(()),
    }
}

fn header_str(parts: &Parts, name: header::HeaderName) -> Option<&str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// `PUT /api/calls/{call_sid}/recording`: the raw body streamed into object storage.
pub(crate) async fn upload<B>(
    api: &Api,
    actor: &Actor,
    parts: &Parts,
    body: B,
    call_sid: &str,
) -> Reply
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let content_type = header_str(parts, header::CONTENT_TYPE).unwrap_or("");
    check_declared_length(api, parts)?;
    let stream = byte_stream(body, api.config.max_upload_bytes);
    let call = api
        .service
        .recording_upload(actor, call_sid, content_type, stream)
        .await?;
    Ok(response::ok(&call))
}

/// A binary response streaming `read`.
fn binary(status: StatusCode, read: BlobRead, content_type: &str) -> Response<ResponseBody> {
    let length = read.range.map_or(read.size, |r| r.len());
    let mut resp = Response::new(streamed(read.body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    resp
}

/// `GET /api/calls/{call_sid}/recording/download`: the whole file as an attachment.
pub(crate) async fn download(api: &Api, actor: &Actor, call_sid: &str) -> Reply {
    let download = api.service.recording_download(actor, call_sid).await?;
    let mut resp = binary(StatusCode::OK, download.read, "audio/wav");
    // The file name holds an E.164 number: `+` and digits, nothing to escape.
    let disposition = format!("attachment; filename=\"{}\"", download.filename);
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

/// `GET /recordings/{organization_id}/{file}?expires=…&sig=…`: a self-signed recording URL,
/// usable as the `src` of an `<audio>` element; answers `Range` requests with 206.
pub(crate) async fn signed(api: &Api, parts: &Parts, organization_id: &str, file: &str) -> Reply {
    let mut expires = None;
    let mut sig = None;
    for (k, v) in form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "expires" if expires.is_none() => expires = Some(v.into_owned()),
            "sig" if sig.is_none() => sig = Some(v.into_owned()),
            _ => {}
        }
    }
    let range = header_str(parts, header::RANGE).and_then(RangeRequest::parse);
    let read = api
        .service
        .recording_signed_read(
            organization_id,
            file,
            expires.as_deref(),
            sig.as_deref(),
            range,
        )
        .await?;
    let mut resp = match read {
        SignedRead::Body { read, content_type } => {
            let range = read.range;
            let size = read.size;
            match range {
                Some(r) => {
                    let mut resp = binary(StatusCode::PARTIAL_CONTENT, read, content_type);
                    let value = format!("bytes {}-{}/{size}", r.start, r.end);
                    if let Ok(v) = HeaderValue::from_str(&value) {
                        resp.headers_mut().insert(header::CONTENT_RANGE, v);
                    }
                    resp
                }
                None => binary(StatusCode::OK, read, content_type),
            }
        }
        SignedRead::Unsatisfiable { size } => {
            let mut resp = response::json(
                StatusCode::RANGE_NOT_SATISFIABLE,
                &serde_json::json!({"detail": format!("the requested range is outside the recording's {size} bytes")}),
            );
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            resp
        }
    };
    resp.headers_mut()
        .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    Ok(resp)
}

/// A multipart field as the core's byte stream.
struct FieldStream(multer::Field<'static>);

impl Stream for FieldStream {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0).poll_next(cx).map(|item| {
            item.map(|r| {
                r.map_err(|e| match e {
                    multer::Error::StreamReadFailed(inner) => match inner.downcast::<Error>() {
                        Ok(core) => *core,
                        Err(other) => Error::invalid(format!("the upload broke off: {other}")),
                    },
                    other => Error::invalid(format!("the multipart body is malformed: {other}")),
                })
            })
        })
    }
}

/// Errors of the request body in a form multer accepts, keeping the core error inside.
struct BoxedErrors<S>(S);

impl<S: Stream<Item = Result<Bytes, Error>> + Unpin> Stream for BoxedErrors<S> {
    type Item = Result<Bytes, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0)
            .poll_next(cx)
            .map(|item| item.map(|r| r.map_err(|e| Box::new(e) as BoxError)))
    }
}

/// `POST /api/knowledge-base` with `multipart/form-data`: a `file` part (streamed into object
/// storage) and an optional `name` part before it.
pub(crate) async fn document_upload<B>(
    api: &Api,
    actor: &Actor,
    parts: &Parts,
    body: B,
) -> Result<Document, ApiError>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let content_type = header_str(parts, header::CONTENT_TYPE).unwrap_or("");
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| ApiError::bad_request("multipart/form-data needs a boundary parameter"))?;
    check_declared_length(api, parts)?;
    let stream = BoxedErrors(byte_stream(body, api.config.max_upload_bytes));
    let mut multipart = multer::Multipart::new(stream, boundary);
    let mut name: Option<String> = None;
    loop {
        let field = multipart
            .next_field()
            .await
            .map_err(|e| ApiError::bad_request(format!("the multipart body is malformed: {e}")))?
            .ok_or_else(|| ApiError::bad_request("the multipart body has no `file` part"))?;
        match field.name() {
            Some("name") => {
                let text = field.text().await.map_err(|e| {
                    ApiError::bad_request(format!("the `name` part is malformed: {e}"))
                })?;
                name = Some(text);
            }
            Some("file") => {
                let filename = field
                    .file_name()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::bad_request("the `file` part needs a filename"))?;
                let ct = field
                    .content_type()
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "application/octet-stream".to_owned());
                let doc = api
                    .service
                    .document_create_file(
                        actor,
                        name.as_deref(),
                        &filename,
                        &ct,
                        Box::pin(FieldStream(field)),
                    )
                    .await?;
                return Ok(doc);
            }
            _ => {} // unknown parts are skipped
        }
    }
}

/// Whether the request declares a multipart body.
pub(crate) fn is_multipart(parts: &Parts) -> bool {
    header_str(parts, header::CONTENT_TYPE).is_some_and(|ct| {
        ct.trim_start()
            .to_ascii_lowercase()
            .starts_with("multipart/form-data")
    })
}
