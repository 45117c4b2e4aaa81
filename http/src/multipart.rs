//! The body of `POST /api/knowledge-base`: JSON `{name, text}`, or `multipart/form-data` with a
//! `file` part (streamed to the service, never buffered) and an optional `name` part before
//! or after it. A `name` after the file is read once the file is stored, so generated clients
//! that send the file first keep their name.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use voiceplane_core::Error;
use voiceplane_core::model::NewTextDocument;
use voiceplane_core::service::{LaterName, NewDocument};

use crate::body::RequestBody;
use crate::body::{check_declared_length, media_type, read_json};
use crate::endpoint::{Cx, FromRequest};
use crate::error::ApiError;
use crate::openapi::spec::{Input, OpSpec, Schemas};
use crate::response::BoxError;
use crate::stream::byte_stream;

/// The 415 detail of `POST /api/knowledge-base` for anything but JSON or multipart.
const KB_JSON_REQUIRED: &str = "Content-Type must be application/json with {\"name\", \"text\"}, \
     or multipart/form-data with a `file` part";

/// A new document's body, as sent.
pub(crate) enum NewDocumentBody {
    /// JSON text.
    Text(NewTextDocument),
    /// A multipart body, read up to its `file` part by [`NewDocumentBody::into_input`].
    Multipart(multer::Multipart<'static>),
}

impl FromRequest for NewDocumentBody {
    async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let headers = &cx.parts.headers;
        let body = body.take().unwrap_or_default();
        let media = media_type(headers).filter(|m| m.essence == "multipart/form-data");
        let Some(media) = media else {
            let limit = cx.api.config.max_body_bytes;
            return Ok(Self::Text(
                read_json(headers, body, limit, KB_JSON_REQUIRED).await?,
            ));
        };
        let boundary = media
            .param("boundary")
            .filter(|b| !b.is_empty())
            .ok_or_else(|| ApiError::bad_request("multipart/form-data needs a boundary parameter"))?
            .to_owned();
        let limit = cx.api.config.max_upload_bytes;
        check_declared_length(headers, limit)?;
        let stream = BoxedErrors(byte_stream(body, limit));
        Ok(Self::Multipart(multer::Multipart::new(stream, boundary)))
    }

    fn describe(spec: &mut OpSpec, schemas: &mut Schemas) {
        spec.input = Input::JsonOrMultipart(schemas.input::<NewTextDocument>());
    }
}

impl NewDocumentBody {
    /// The service's input: the text, or the file part's stream with the `name` part read
    /// before it, or else read from the rest of the body once the file is stored. Unknown
    /// parts are skipped.
    pub(crate) async fn into_input(self) -> Result<NewDocument, ApiError> {
        let mut multipart = match self {
            Self::Text(text) => return Ok(NewDocument::Text(text)),
            Self::Multipart(multipart) => multipart,
        };
        let mut name: Option<String> = None;
        loop {
            let field = multipart
                .next_field()
                .await
                .map_err(|e| {
                    ApiError::bad_request(format!("the multipart body is malformed: {e}"))
                })?
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
                    let content_type = field
                        .content_type()
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "application/octet-stream".to_owned());
                    let later_name = match name {
                        Some(_) => None,
                        None => Some(Box::pin(name_after_file(multipart)) as LaterName),
                    };
                    return Ok(NewDocument::File {
                        name,
                        later_name,
                        filename,
                        content_type,
                        body: Box::pin(FieldStream(Some(field))),
                    });
                }
                _ => {}
            }
        }
    }
}

/// The first `name` part of what follows the `file` part, if any. Runs after the file stream
/// has ended and been dropped, as multer reads one part at a time.
async fn name_after_file(
    mut multipart: multer::Multipart<'static>,
) -> Result<Option<String>, Error> {
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| Error::invalid(format!("the multipart body is malformed: {e}")))?
    {
        if field.name() == Some("name") {
            let text = field
                .text()
                .await
                .map_err(|e| Error::invalid(format!("the `name` part is malformed: {e}")))?;
            return Ok(Some(text));
        }
    }
    Ok(None)
}

/// A multipart field as the core's byte stream. The field is let go as soon as it ends, so
/// that the parts after it can be read even while the stream itself is still held.
struct FieldStream(Option<multer::Field<'static>>);

impl Stream for FieldStream {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(field) = self.0.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(field).poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.0 = None;
        }
        polled.map(|item| {
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
