//! Call recordings: upload (streamed into the blob store), a URL to stream them, the bytes to
//! download, and reads through this server's own links.

use std::time::Duration;

use crate::auth::Actor;
use crate::blob::BlobStore;
use crate::blob::{BlobRead, ByteStream, RangeRequest, StreamDigest};
use crate::error::{Error, Result};
use crate::model::{Call, EventType, Recording, RecordingLink, RecordingReady};
use crate::role::Permission;
use crate::service::{By, Service};
use std::sync::Arc;

/// How long a stream URL is valid.
pub const STREAM_URL_TTL_SECS: u64 = 3600;

/// The audio formats a recording may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    /// WAV, stored as `audio/wav` with the extension `wav`.
    Wav,
    /// MP3, stored as `audio/mpeg` with the extension `mp3`.
    Mpeg,
}

impl AudioFormat {
    const ALL: [Self; 2] = [Self::Wav, Self::Mpeg];

    /// The canonical content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Wav => "audio/wav",
            Self::Mpeg => "audio/mpeg",
        }
    }

    /// The file extension of stored recordings.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Wav => "wav",
            Self::Mpeg => "mp3",
        }
    }
}

/// The content type of a recording file name by its extension.
fn content_type_of(file: &str) -> Option<&'static str> {
    let ext = file.rsplit_once('.')?.1;
    AudioFormat::ALL
        .into_iter()
        .find(|f| f.extension() == ext)
        .map(AudioFormat::content_type)
}

/// What a read through a recording link produced.
#[derive(Debug)]
pub enum SignedRead {
    /// The bytes (all of them, or the requested range) and their content type.
    Body {
        /// The read.
        read: BlobRead,
        /// `audio/wav` or `audio/mpeg`.
        content_type: &'static str,
    },
    /// The requested range lies outside the object of this size.
    Unsatisfiable {
        /// Size of the object.
        size: u64,
    },
}

/// A recording ready to be downloaded.
#[derive(Debug)]
pub struct RecordingDownload {
    /// The bytes.
    pub read: BlobRead,
    /// `recording_<to_number>.wav`.
    pub filename: String,
}

impl Service {
    pub(in crate::service) fn blobs(&self) -> Result<&Arc<dyn BlobStore>> {
        self.blobs.as_ref().ok_or_else(|| {
            Error::Unavailable("object storage is not configured on this server".to_owned())
        })
    }

    /// The recording of a call, or 404.
    async fn recording_of(&self, actor: &Actor, call_sid: &str) -> Result<(Call, Recording)> {
        let call = self.call_view(actor, call_sid).await?;
        let recording = call
            .recording
            .clone()
            .ok_or_else(|| Error::not_found(format!("call {} has no recording", call.call_sid)))?;
        Ok((call, recording))
    }

    /// Stores the recording of a call from a stream. The call row points at the new
    /// recording only once all bytes are stored; a failed upload leaves the previous
    /// recording, if any, as it was.
    pub async fn recording_upload(
        &self,
        actor: &Actor,
        call_sid: &str,
        format: AudioFormat,
        body: ByteStream,
    ) -> Result<Call> {
        actor.require(Permission::CallsWrite)?;
        let (content_type, ext) = (format.content_type(), format.extension());
        let mut call = self.call_view(actor, call_sid).await?;
        let blobs = self.blobs()?;
        let key = format!(
            "recordings/{}/{}.{ext}",
            actor.organization_id, call.call_sid
        );
        let digest = StreamDigest::default();
        let size = blobs.put(&key, content_type, digest.tap(body)).await?;
        let recording = Recording {
            key: key.clone(),
            content_type: content_type.to_owned(),
            size: i64::try_from(size).unwrap_or(i64::MAX),
        };
        let ready = RecordingReady {
            call_sid: call.call_sid.clone(),
            content_type: content_type.to_owned(),
            size: recording.size,
            sha256: digest.hex(),
        };
        let previous = call.recording.replace(recording);
        call.updated_at = self.now().max(call.updated_at);
        let event = self.event(EventType::RecordingReady, &ready, By::Creating(actor))?;
        self.after_write(
            self.repo
                .call_set_recording(
                    &actor.organization_id,
                    &call.call_sid,
                    call.recording.as_ref(),
                    call.updated_at,
                    &event,
                )
                .await,
        )?;
        if let Some(old) = previous.filter(|old| old.key != key) {
            // The row no longer points at it; failing to delete only leaves garbage behind.
            if let Err(e) = blobs.delete(&old.key).await {
                tracing::warn!(key = %old.key, error = %e, "could not delete a replaced recording");
            }
        }
        Ok(call)
    }

    /// A URL that plays the recording for an hour: presigned by the store when it can,
    /// otherwise one of this server's own [`RecordingLinks`](crate::signing::RecordingLinks).
    pub async fn recording_stream(&self, actor: &Actor, call_sid: &str) -> Result<RecordingLink> {
        actor.require(Permission::CallsRead)?;
        let (call, recording) = self.recording_of(actor, call_sid).await?;
        let ttl = Duration::from_secs(STREAM_URL_TTL_SECS);
        let url = match self.blobs()?.presign_get(&recording.key, ttl).await? {
            Some(url) => url,
            None => {
                let links = self.recording_links.as_ref().ok_or_else(|| {
                    Error::Unavailable(
                        "recording URLs cannot be signed: no public_url is configured".to_owned(),
                    )
                })?;
                let file = recording
                    .key
                    .rsplit_once('/')
                    .map_or(recording.key.as_str(), |(_, file)| file);
                let expires = self.now().as_micros() / 1_000_000 + STREAM_URL_TTL_SECS as i64;
                links.link(&actor.organization_id, file, expires)
            }
        };
        let ext = recording
            .key
            .rsplit_once('.')
            .map(|(_, e)| e)
            .unwrap_or("wav");
        Ok(RecordingLink {
            url,
            expires_in: STREAM_URL_TTL_SECS,
            content_type: recording.content_type,
            filename: format!("recording_{}.{ext}", call.to_number),
        })
    }

    /// The recording's bytes, streamed, with the attachment file name `recording_<to_number>.wav`
    /// (always `.wav`, unlike the stream link's name, which takes the stored extension).
    pub async fn recording_download(
        &self,
        actor: &Actor,
        call_sid: &str,
    ) -> Result<RecordingDownload> {
        actor.require(Permission::CallsRead)?;
        let (call, recording) = self.recording_of(actor, call_sid).await?;
        let read = self.blobs()?.get(&recording.key, None).await?;
        Ok(RecordingDownload {
            read,
            filename: format!("recording_{}.wav", call.to_number),
        })
    }

    /// Reads the recording `file` of `organization_id` through one of this server's own links:
    /// the link's signature and expiry are the only credentials (403 when either is wrong or
    /// missing).
    pub async fn recording_signed_read(
        &self,
        organization_id: &str,
        file: &str,
        expires: Option<i64>,
        signature: Option<&str>,
        range: Option<RangeRequest>,
    ) -> Result<SignedRead> {
        let refused = || Error::forbidden("this recording link is invalid or has expired");
        let links = self.recording_links.as_ref().ok_or_else(refused)?;
        let expires = expires.ok_or_else(refused)?;
        if !links.check(organization_id, file, expires, signature.unwrap_or("")) {
            return Err(refused());
        }
        if expires < self.now().as_micros() / 1_000_000 {
            return Err(refused());
        }
        let content_type = content_type_of(file).ok_or_else(refused)?;
        let key = format!("recordings/{organization_id}/{file}");
        let blobs = self.blobs()?;
        let range = match range {
            Some(request) => {
                let size = blobs
                    .stat(&key)
                    .await?
                    .ok_or_else(|| Error::not_found("this recording no longer exists"))?
                    .size;
                match request.resolve(size) {
                    Some(r) => Some(r),
                    None => return Ok(SignedRead::Unsatisfiable { size }),
                }
            }
            None => None,
        };
        let read = blobs.get(&key, range).await?;
        Ok(SignedRead::Body { read, content_type })
    }
}
