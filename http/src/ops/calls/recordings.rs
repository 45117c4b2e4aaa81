//! `/api/calls/{call_sid}/recording…` and the self-signed `/recordings/…` URLs: uploading a
//! call's recording (streamed into object storage), a playable link, a download, and reads
//! through a signed URL with `Range` support; and the links themselves, made from the route
//! and query declared here.

use std::sync::Arc;

use http::{HeaderValue, StatusCode, header};
use schemars::JsonSchema;
use serde::Deserialize;
use voiceplane_core::auth::Actor;
use voiceplane_core::model::{Call, Outcome, RecordingLink};
use voiceplane_core::service::SignedRead;
use voiceplane_core::signing::{LinkSigner, RecordingLinks};

use crate::audio::{Attachment, AudioUpload, RangeHeader, RangeRead, binary};
use crate::endpoint::{Cx, Data, Query, handler};
use crate::error::ApiError;
use crate::operation::{Area, Operation};

pub(crate) const AREA: Area = Area {
    tag: "recordings",
    about: "Call recordings.",
    operations: &[
        RECORDING_UPLOAD,
        RECORDING_STREAM,
        RECORDING_DOWNLOAD,
        RECORDING_DELETE,
        RECORDING_SIGNED_READ,
    ],
};

const RECORDING_UPLOAD: Operation = Operation::put(
    "/api/calls/{call_sid}/recording",
    handler!(recording_upload),
)
.doc(
    "Upload the call's recording (replaces a previous one)",
    "Streams the call's recording into object storage, replacing a previous one once the \
     new one is fully stored (a failed upload leaves the old one). Send `audio/wav` or \
     `audio/mpeg`, or `application/octet-stream` and let the first bytes tell the format \
     (400 when they are neither WAV nor MP3); 413 over `http.max_upload_bytes`. Records \
     `recording.ready`. Needs `calls:write` (agent_manager or admin).",
);

async fn recording_upload(
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

const RECORDING_STREAM: Operation = Operation::get(
    "/api/calls/{call_sid}/recording/stream",
    handler!(recording_stream),
)
.doc(
    "A URL that plays the recording for an hour, with Range support",
    "A URL that plays the recording for an hour without other credentials and answers \
     `Range` requests (usable as an `<audio>` source). 404 when the call has no \
     recording. Needs `calls:read` (every role).",
);

async fn recording_stream(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Data<RecordingLink>, ApiError> {
    Ok(Data(
        cx.service().recording_stream(&actor, &call_sid).await?,
    ))
}

const RECORDING_DOWNLOAD: Operation = Operation::get(
    "/api/calls/{call_sid}/recording/download",
    handler!(recording_download),
)
.doc(
    "Download the recording as a WAV attachment",
    "The recording's bytes as a WAV attachment with an exact `Content-Length`, streamed \
     from the object store. 404 when the call has no recording. Needs `calls:read` (every \
     role).",
);

/// The whole file, as an attachment named after the number called.
async fn recording_download(
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

const RECORDING_DELETE: Operation = Operation::delete(
    "/api/calls/{call_sid}/recording",
    handler!(recording_delete),
)
.doc(
    "Delete the call's recording",
    "Deletes the call's recording (the call stays) and records `recording.deleted`; the \
     file goes from the object store shortly after. 404 when the call has no recording. \
     Needs `calls:write` (agent_manager or admin).",
);

async fn recording_delete(
    cx: Cx,
    (call_sid,): (String,),
    (actor,): (Actor,),
) -> Result<Outcome<Call>, ApiError> {
    Ok(cx.service().recording_delete(&actor, &call_sid).await?)
}

/// The query of a link this server signed ([`SignedLinks`]); `expires` is read as
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

const RECORDING_SIGNED_READ: Operation = Operation::get(
    "/recordings/{organization_id}/{file}",
    handler!(recording_signed_read),
)
.public()
.errors(&[403, 404, 416, 503])
.doc(
    "Read a recording through a URL signed by this server (the `url` of recording_stream)",
    "Serves a recording through the URL `recording_stream` gave, on the `fs` and `memory` \
     stores; the `expires` and `sig` query parameters are the credential. 200 with the \
     whole file, 206 for a `Range` request, 416 for a range outside it, 403 for a tampered \
     or expired link.",
);

/// The links [`RECORDING_SIGNED_READ`] serves: its path, with `expires` and `sig` (the
/// [`SignedUrl`] it reads) in the query; the signature binds the path and the expiry.
struct SignedLinks {
    /// The external base URL, without a trailing `/`.
    public_url: String,
    signer: LinkSigner,
}

/// The route's path for `file` of `organization_id`, its parameters put in one pass (ids and
/// recording file names need no escaping).
fn signed_path(organization_id: &str, file: &str) -> String {
    RECORDING_SIGNED_READ
        .template
        .split('/')
        .map(|segment| match segment {
            "{organization_id}" => organization_id,
            "{file}" => file,
            fixed => fixed,
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl RecordingLinks for SignedLinks {
    fn link(&self, organization_id: &str, file: &str, expires: i64) -> String {
        let path = signed_path(organization_id, file);
        let sig = self.signer.sign(&path, expires);
        format!("{}{path}?expires={expires}&sig={sig}", self.public_url)
    }

    fn check(&self, organization_id: &str, file: &str, expires: i64, signature: &str) -> bool {
        self.signer
            .verify(&signed_path(organization_id, file), expires, signature)
    }
}

// Beside the route and query it writes, rather than with the rest of `Api`.
impl crate::Api {
    /// The links through which this API serves recordings itself, under `public_url` (its
    /// external base URL, e.g. `https://voice.example.com`), signed by `signer`: what
    /// [`Service::with_recording_links`](voiceplane_core::Service::with_recording_links) takes
    /// for stores that cannot presign.
    pub fn recording_links(public_url: &str, signer: LinkSigner) -> Arc<dyn RecordingLinks> {
        Arc::new(SignedLinks {
            public_url: public_url.trim_end_matches('/').to_owned(),
            signer,
        })
    }
}

/// Usable as the `src` of an `<audio>` element: no credentials besides the signature, and
/// `Range` requests answered with 206.
async fn recording_signed_read(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_name_the_route_and_carry_their_signature() {
        let signer = LinkSigner::new(b"test recording url key, 32 bytes");
        // The signed path is the one links carried when core built them: links still valid.
        assert_eq!(
            signed_path("org_1", "call_1.wav"),
            "/recordings/org_1/call_1.wav"
        );
        let links = crate::Api::recording_links("https://voice.example.com/", signer.clone());
        let link = links.link("org_1", "call_1.wav", 1_800_000_000);
        let sig = signer.sign("/recordings/org_1/call_1.wav", 1_800_000_000);
        assert_eq!(
            link,
            format!(
                "https://voice.example.com/recordings/org_1/call_1.wav?expires=1800000000&sig={sig}"
            )
        );
        assert!(links.check("org_1", "call_1.wav", 1_800_000_000, &sig));
        assert!(!links.check("org_2", "call_1.wav", 1_800_000_000, &sig));
        assert!(!links.check("org_1", "call_1.wav", 1_800_000_001, &sig));
        assert!(!links.check("{file}", "org_1", 1_800_000_000, &sig));
    }
}
