//! `/api/calls/{call_sid}/recording…` and the self-signed `/recordings/…` URLs: uploading a
//! call's recording (streamed into object storage), a playable link, a download, and reads
//! through a signed URL with `Range` support.

use http::{HeaderValue, StatusCode, header};
use schemars::JsonSchema;
use serde::Deserialize;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Call, Outcome, RecordingLink};
use voiceplane_core::service::SignedRead;

use crate::endpoint::{Cx, Data, Query};
use crate::error::ApiError;
use crate::recordings::{Attachment, AudioUpload, RangeHeader, RangeRead, binary};

pub(crate) async fn recording_upload(
    cx: Cx,
    (call_sid,): (String,),
    (actor, upload): (Actor, AudioUpload),
) -> Result<Data<Call>, ApiError> {
    let call = cx
        .service()
        .recording_upload(&actor, &call_sid, upload.format, upload.stream)
        .await?;
    Ok(Data(call))
}

pub(crate) async fn recording_stream(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Data<RecordingLink>, ApiError> {
    Ok(Data(
        cx.service().recording_stream(&actor, &call_sid).await?,
    ))
}

/// The whole file, as an attachment named after the number called.
pub(crate) async fn recording_download(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Attachment, ApiError> {
    let download = cx.service().recording_download(&actor, &call_sid).await?;
    let mut resp = binary(StatusCode::OK, download.read, "audio/wav");
    // The file name holds an E.164 number: `+` and digits, nothing to escape.
    let disposition = format!("attachment; filename=\"{}\"", download.filename);
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(Attachment(resp))
}

pub(crate) async fn recording_delete(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Call>, ApiError> {
    Ok(cx.service().recording_delete(&actor, &call_sid).await?)
}

/// The query of a link this server signed (`Api::recording_links`); `expires` is read as
/// text so that a malformed link is refused like a forged one (403), not as a bad request.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct SignedUrl {
    /// Unix time (seconds) after which the URL is refused.
    #[schemars(with = "u64")]
    expires: Option<String>,
    /// The server's signature of the path and `expires`.
    #[schemars(with = "String")]
    sig: Option<String>,
}

/// Usable as the `src` of an `<audio>` element: no credentials besides the signature, and
/// `Range` requests answered with 206.
pub(crate) async fn recording_signed_read(
    cx: Cx,
    (organization_id, file): (String, String),
    (Query(url), RangeHeader(range)): (Query<SignedUrl>, RangeHeader),
) -> Result<RangeRead, ApiError> {
    let read = cx
        .service()
        .recording_signed_read(
            &organization_id,
            &file,
            url.expires.and_then(|e| e.parse().ok()),
            url.sig.as_deref(),
            range,
        )
        .await?;
    let mut resp = match read {
        SignedRead::Body { read, content_type } => match read.range {
            Some(r) => {
                let value = format!("bytes {}-{}/{}", r.start, r.end, read.size);
                let mut resp = binary(StatusCode::PARTIAL_CONTENT, read, content_type);
                if let Ok(v) = HeaderValue::from_str(&value) {
                    resp.headers_mut().insert(header::CONTENT_RANGE, v);
                }
                resp
            }
            None => binary(StatusCode::OK, read, content_type),
        },
        SignedRead::Unsatisfiable { size } => ApiError::range_not_satisfiable(size).into_response(),
    };
    resp.headers_mut()
        .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    Ok(RangeRead(resp))
}
