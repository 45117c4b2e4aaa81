//! The binary side of recordings: the raw audio body of an upload (its format declared, or
//! told by its first bytes when sent as `application/octet-stream`), the `Range` header of a
//! signed read, and the file answers (an attachment, or the whole file or a range of it).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;
use voiceplane_core::blob::{BlobRead, ByteStream, RangeRequest};
use voiceplane_core::service::AudioFormat;

use crate::body;
use crate::body::RequestBody;
use crate::endpoint::{Cx, FromRequest, Reply};
use crate::error::ApiError;
use crate::openapi::spec::{Input, OpSpec, Output, Schemas};
use crate::response::ResponseBody;
use crate::stream::{byte_stream, streamed};

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

impl FromRequest for AudioUpload {
    async fn from_request(cx: &mut Cx, body: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        let limit = cx.api.config.max_upload_bytes;
        body::check_declared_length(&cx.parts.headers, limit)?;
        let media = body::media_type(&cx.parts.headers);
        let declared = media.as_ref().map(|m| m.essence.as_str());
        let stream = byte_stream(body.take().unwrap_or_default(), limit);
        if declared == Some("application/octet-stream") {
            return sniffed(stream).await;
        }
        let format = declared.and_then(audio_format).ok_or_else(|| {
            ApiError::unsupported_media_type(
                "recordings must be sent with Content-Type audio/wav, audio/mpeg or \
                 application/octet-stream",
            )
        })?;
        Ok(Self { format, stream })
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.input = Input::Audio;
    }
}

/// How many leading bytes tell WAV from MP3: `RIFF`, a 4-byte size, `WAVE`.
const SNIFF_BYTES: usize = 12;

/// The audio format of a file by its first bytes: a RIFF/WAVE header, or an ID3 tag or MPEG
/// frame sync (11 set bits) at the start of an MP3.
fn sniff(head: &[u8]) -> Option<AudioFormat> {
    match head {
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'A',
            b'V',
            b'E',
            ..,
        ] => Some(AudioFormat::Wav),
        [b'I', b'D', b'3', ..] => Some(AudioFormat::Mpeg),
        [0xFF, second, ..] if second & 0xE0 == 0xE0 => Some(AudioFormat::Mpeg),
        _ => None,
    }
}

/// An `application/octet-stream` upload, its format told by its first bytes. Only the first
/// chunks, up to [`SNIFF_BYTES`], are read before the format is known; they are passed on
/// ahead of the rest, so the body is still streamed.
async fn sniffed(mut stream: ByteStream) -> Result<AudioUpload, ApiError> {
    let mut head = BytesMut::new();
    while head.len() < SNIFF_BYTES {
        match std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
            Some(chunk) => head.extend_from_slice(&chunk?),
            None => break,
        }
    }
    let format = sniff(&head)
        .ok_or_else(|| ApiError::bad_request("the recording is neither WAV nor MP3"))?;
    Ok(AudioUpload {
        format,
        stream: Box::pin(Prepended {
            head: Some(head.freeze()),
            rest: stream,
        }),
    })
}

/// `head`, then the rest of the stream it was read from.
struct Prepended {
    head: Option<Bytes>,
    rest: ByteStream,
}

impl Stream for Prepended {
    type Item = voiceplane_core::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.head.take().filter(|h| !h.is_empty()) {
            Some(head) => Poll::Ready(Some(Ok(head))),
            None => self.rest.as_mut().poll_next(cx),
        }
    }
}

/// The `Range` header, when it is one the store can answer (anything else reads the whole
/// file, as HTTP allows).
pub(crate) struct RangeHeader(pub(crate) Option<RangeRequest>);

impl FromRequest for RangeHeader {
    async fn from_request(cx: &mut Cx, _: &mut Option<RequestBody>) -> Result<Self, ApiError> {
        Ok(Self(
            cx.parts
                .headers
                .get(header::RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_range),
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

/// A `Range` header value with one byte range (RFC 9110, section 14.1.2); `None` for anything
/// else, several ranges included, which a server may answer with the whole object.
fn parse_range(value: &str) -> Option<RangeRequest> {
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let (start, end) = (start.trim(), end.trim());
    match (start.is_empty(), end.is_empty()) {
        (true, false) => end.parse().ok().map(RangeRequest::Suffix),
        (false, true) => start.parse().ok().map(RangeRequest::From),
        (false, false) => {
            let (s, e) = (start.parse().ok()?, end.parse().ok()?);
            (s <= e).then_some(RangeRequest::FromTo(s, e))
        }
        (true, true) => None,
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

#[cfg(test)]
mod tests {
    use voiceplane_core::blob::ByteRange;

    use super::*;

    #[test]
    fn ranges() {
        let r = |h: &str, size| parse_range(h).and_then(|r| r.resolve(size));
        assert_eq!(r("bytes=0-9", 100), Some(ByteRange { start: 0, end: 9 }));
        assert_eq!(r("bytes=90-", 100), Some(ByteRange { start: 90, end: 99 }));
        assert_eq!(r("bytes=-10", 100), Some(ByteRange { start: 90, end: 99 }));
        assert_eq!(r("bytes=-1000", 100), Some(ByteRange { start: 0, end: 99 }));
        assert_eq!(
            r("bytes=50-5000", 100),
            Some(ByteRange { start: 50, end: 99 })
        );
        assert_eq!(r("bytes=100-", 100), None);
        assert_eq!(
            r(" bytes= 0 - 1 ", 100),
            Some(ByteRange { start: 0, end: 1 })
        );
        assert_eq!(parse_range("bytes=5-1"), None);
        assert_eq!(parse_range("bytes=0-1,5-6"), None);
        assert_eq!(parse_range("bytes=-"), None);
        assert_eq!(parse_range("items=0-1"), None);
    }

    #[test]
    fn wav_and_mp3_are_told_by_their_first_bytes() {
        assert_eq!(
            sniff(b"RIFF\x24\x08\x00\x00WAVEfmt "),
            Some(AudioFormat::Wav)
        );
        assert_eq!(sniff(b"ID3\x04\x00"), Some(AudioFormat::Mpeg));
        assert_eq!(sniff(&[0xFF, 0xFB, 0x90]), Some(AudioFormat::Mpeg));
        assert_eq!(sniff(&[0xFF, 0xE3]), Some(AudioFormat::Mpeg));
        // A RIFF file that is not WAVE (an AVI), a short header, junk, nothing.
        assert_eq!(sniff(b"RIFF\x24\x08\x00\x00AVI LIST"), None);
        assert_eq!(sniff(b"RIFF\x24\x08"), None);
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF]), None);
        assert_eq!(sniff(b"hello"), None);
        assert_eq!(sniff(b""), None);
    }
}
