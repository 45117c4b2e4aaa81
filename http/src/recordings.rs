//! The binary side of recordings: the raw audio body of an upload, the `Range` header of a
//! signed read, and the file answers (an attachment, or the whole file or a range of it).

use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;
use voiceplane_core::blob::{BlobRead, ByteStream, RangeRequest};
use voiceplane_core::service::AudioFormat;

use crate::endpoint::{Cx, Extract, Reply, RequestBody};
use crate::error::ApiError;
use crate::openapi::{Input, OpSpec, Output, Schemas};
use crate::stream::{byte_stream, streamed};
use crate::{ResponseBody, body};

/// A raw request body streamed to the service, in the audio format its `Content-Type`
/// declares.
pub(crate) struct AudioUpload {
    pub(crate) format: AudioFormat,
    pub(crate) stream: ByteStream,
}

/// The audio format of a declared media type, aliases included.
fn audio_format(essence: &str) -> Option<AudioFormat> {
    match essence {
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => Some(AudioFormat::Wav),
        "audio/mpeg" | "audio/mp3" => Some(AudioFormat::Mpeg),
        _ => None,
    }
}

impl Extract for AudioUpload {
    async fn extract(cx: &Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let limit = cx.api.config.max_upload_bytes;
        body::check_declared_length(&cx.parts.headers, limit)?;
        let format = body::media_type(&cx.parts.headers)
            .and_then(|m| audio_format(&m.essence))
            .ok_or_else(|| {
                ApiError::unsupported_media_type(
                    "recordings must be sent with Content-Type audio/wav or audio/mpeg",
                )
            })?;
        let stream = byte_stream(body.take().unwrap_or_default(), limit);
        Ok(Self { format, stream })
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.input = Input::Audio;
    }
}

/// The `Range` header, when it is one the store can answer (anything else reads the whole
/// file, as HTTP allows).
pub(crate) struct RangeHeader(pub(crate) Option<RangeRequest>);

impl Extract for RangeHeader {
    async fn extract(cx: &Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        Ok(Self(
            cx.parts
                .headers
                .get(header::RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(RangeRequest::parse),
        ))
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.parameters.push(json!({
            "name": "Range",
            "in": "header",
            "required": false,
            "description": "`bytes=<first>-[<last>]` or `bytes=-<suffix>`: answered with 206.",
            "schema": {"type": "string"},
        }));
    }
}

/// A binary response streaming `read`.
pub(crate) fn binary(
    status: StatusCode,
    read: BlobRead,
    content_type: &str,
) -> Response<ResponseBody> {
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

/// `200` with a WAV file as an attachment.
pub(crate) struct Attachment(pub(crate) Response<ResponseBody>);

impl Reply for Attachment {
    fn into_response(self) -> Response<ResponseBody> {
        self.0
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.output = Output::AudioAttachment;
    }
}

/// `200` with a whole recording, `206` with a range of it (or the 416 of a range outside it).
pub(crate) struct RangeRead(pub(crate) Response<ResponseBody>);

impl Reply for RangeRead {
    fn into_response(self) -> Response<ResponseBody> {
        self.0
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.output = Output::AudioRange;
    }
}
