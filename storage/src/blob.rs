//! [`OpendalBlobStore`], the [`BlobStore`] of voiceplane on OpenDAL: a folder (`fs`), process
//! memory (`memory`, for tests) or an S3-compatible bucket (`s3`).
//!
//! Bodies are streamed both ways: `put` feeds an OpenDAL writer chunk by chunk and `get`
//! hands out the reader as a stream of chunks (at most 2 MiB each from `fs`, as they arrive
//! from `s3`), so memory stays flat however large the object.
//!
//! A new object becomes visible only once its whole body is written:
//!
//! - `fs` writes into `<root>/.voiceplane-tmp/` and renames the file into place on success
//!   (temporary files of writes interrupted by a crash are swept when a store is opened, once
//!   they are a day old);
//! - `s3` sends one `PutObject` for bodies up to 8 MiB and a multipart upload (8 MiB parts, two
//!   in flight) above, completed only at the end and aborted on failure (a bucket lifecycle
//!   rule "abort incomplete multipart uploads after N days" cleans up after crashes);
//! - `memory` keeps the body aside until it is complete.
//!
//! The `s3` backend talks HTTP through reqwest with rustls on the *ring* provider: opening an
//! `s3` store installs ring's provider as the process default when no provider is installed
//! yet (the same provider `voiceplane-clients` installs; never aws-lc-rs).
//!
//! ```
//! # async fn demo() -> voiceplane_core::Result<()> {
//! use voiceplane_core::blob::BlobStore;
//! use voiceplane_storage::{BlobConfig, OpendalBlobStore};
//! let store = OpendalBlobStore::new(BlobConfig::Memory)?;
//! let body = Box::pin(OneChunk(Some(bytes::Bytes::from_static(b"RIFF...."))));
//! assert_eq!(store.put("recordings/org_1/call_1.wav", "audio/wav", body).await?, 8);
//! assert_eq!(store.stat("recordings/org_1/call_1.wav").await?.map(|m| m.size), Some(8));
//! assert_eq!(store.uri("recordings/org_1/call_1.wav"), "memory:///recordings/org_1/call_1.wav");
//! # Ok(()) }
//! # struct OneChunk(Option<bytes::Bytes>);
//! # impl futures_core::Stream for OneChunk {
//! #     type Item = voiceplane_core::Result<bytes::Bytes>;
//! #     fn poll_next(
//! #         mut self: std::pin::Pin<&mut Self>,
//! #         _: &mut std::task::Context<'_>,
//! #     ) -> std::task::Poll<Option<Self::Item>> {
//! #         std::task::Poll::Ready(self.0.take().map(Ok))
//! #     }
//! # }
//! ```

use std::fmt;
use std::future::poll_fn;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;
use opendal::{ErrorKind, FuturesBytesStream, HttpTransporter, OperationContext, Operator};
use voiceplane_core::blob::{BlobMeta, BlobRead, BlobStore, ByteRange, ByteStream};
use voiceplane_core::{Error, Result};

/// Folder under an `fs` root where objects are written before being renamed into place. Keys
/// may not start with it.
const FS_TEMP_DIR: &str = ".voiceplane-tmp";
/// Temporary files older than this are left over from a crash and are removed on start.
const FS_TEMP_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// Part size of S3 multipart uploads (S3's minimum is 5 MiB).
const S3_PART_SIZE: usize = 8 * 1024 * 1024;
/// Parts of one S3 upload sent at once.
const S3_PARTS_IN_FLIGHT: usize = 2;
/// Region used when `s3` has none configured (what S3-compatible servers expect).
pub const DEFAULT_S3_REGION: &str = "us-east-1";

/// Which backend a [`OpendalBlobStore`] uses, and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobConfig {
    /// Files under `root`, created when missing.
    Fs {
        /// The folder holding the objects.
        root: PathBuf,
    },
    /// Process memory; everything is lost when the store is dropped. For tests.
    Memory,
    /// An S3-compatible bucket.
    S3(S3Settings),
}

/// How to reach an S3-compatible bucket. `Debug` never shows the secret key.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// The bucket.
    pub bucket: String,
    /// The endpoint, e.g. `http://127.0.0.1:9000` or `https://s3.eu-west-1.amazonaws.com`;
    /// `None`: AWS S3 (`https://s3.amazonaws.com`).
    pub endpoint: Option<String>,
    /// The region; `None`: [`DEFAULT_S3_REGION`].
    pub region: Option<String>,
    /// The access key id. Without a key pair, credentials come from the AWS environment
    /// (`AWS_ACCESS_KEY_ID`…, `~/.aws`, instance metadata).
    pub access_key_id: Option<String>,
    /// The secret access key.
    pub secret_access_key: Option<String>,
    /// Path-style URLs (`https://endpoint/bucket/key`, what most S3-compatible servers want)
    /// rather than virtual-host style (`https://bucket.endpoint/key`). Default `true`.
    pub path_style: bool,
}

impl S3Settings {
    /// Settings for `bucket` on AWS S3, path-style, with credentials from the environment.
    pub fn new(bucket: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            path_style: true,
        }
    }
}

impl fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field(
                "secret_access_key",
                &self.secret_access_key.as_ref().map(|_| "***"),
            )
            .field("path_style", &self.path_style)
            .finish()
    }
}

#[derive(Debug, Clone)]
enum Backend {
    /// A folder on this machine; its path never leaves the process.
    Fs,
    Memory,
    S3 {
        bucket: String,
    },
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Self::Fs => "fs",
            Self::Memory => "memory",
            Self::S3 { .. } => "s3",
        }
    }
}

/// The [`BlobStore`] on OpenDAL. Cheap to clone (the operator is shared).
///
/// Errors: a missing object is [`Error::NotFound`]; every other backend failure is
/// [`Error::Unavailable`] with the sentence `object storage is unavailable: <reason>` (the
/// reason names no credential; the full error is logged at WARN); a malformed key or a range
/// starting past the end is [`Error::InvalidInput`].
#[derive(Clone)]
pub struct OpendalBlobStore {
    op: Operator,
    backend: Backend,
}

impl fmt::Debug for OpendalBlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpendalBlobStore")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl OpendalBlobStore {
    /// Opens the store. `fs` creates its root (and temporary folder) when missing; `s3`
    /// contacts nothing yet (see [`BlobStore::ping`]) and installs ring's rustls provider as
    /// the process default when none is installed. A bad setting is
    /// [`Error::InvalidInput`]; a root that cannot be created is [`Error::Unavailable`].
    pub fn new(config: BlobConfig) -> Result<Self> {
        match config {
            BlobConfig::Memory => {
                let op = Operator::new(opendal::services::Memory::default())
                    .map_err(|e| build_error("memory", e))?;
                Ok(Self {
                    op,
                    backend: Backend::Memory,
                })
            }
            BlobConfig::Fs { root } => Self::open_fs(&root),
            BlobConfig::S3(settings) => Self::open_s3(&settings),
        }
    }

    fn open_fs(root: &Path) -> Result<Self> {
        if root.as_os_str().is_empty() {
            return Err(Error::invalid("the fs storage root must name a folder"));
        }
        let temp = root.join(FS_TEMP_DIR);
        std::fs::create_dir_all(&temp).map_err(|e| {
            tracing::warn!(root = %root.display(), error = %e, "cannot create the storage folder");
            Error::Unavailable(format!(
                "object storage is unavailable: cannot create the folder {}: {}",
                root.display(),
                e.kind()
            ))
        })?;
        let root = root.canonicalize().map_err(|e| {
            Error::Unavailable(format!(
                "object storage is unavailable: cannot resolve the folder {}: {}",
                root.display(),
                e.kind()
            ))
        })?;
        let temp = root.join(FS_TEMP_DIR);
        sweep_stale_temp_files(&temp);
        let (Some(root_str), Some(temp_str)) = (root.to_str(), temp.to_str()) else {
            return Err(Error::invalid(
                "the fs storage root must be a valid UTF-8 path",
            ));
        };
        let builder = opendal::services::Fs::default()
            .root(root_str)
            .atomic_write_dir(temp_str);
        let op = Operator::new(builder).map_err(|e| build_error("fs", e))?;
        Ok(Self {
            op,
            backend: Backend::Fs,
        })
    }

    fn open_s3(settings: &S3Settings) -> Result<Self> {
        let bucket = settings.bucket.trim();
        if bucket.is_empty() {
            return Err(Error::invalid("the s3 storage needs a bucket"));
        }
        let mut builder = opendal::services::S3::default().bucket(bucket).region(
            settings
                .region
                .as_deref()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or(DEFAULT_S3_REGION),
        );
        if let Some(endpoint) = settings
            .endpoint
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            builder = builder.endpoint(endpoint.trim_end_matches('/'));
        }
        match (&settings.access_key_id, &settings.secret_access_key) {
            (Some(id), Some(secret)) => {
                // Static keys: read nothing from the environment or instance metadata.
                builder = builder
                    .access_key_id(id)
                    .secret_access_key(secret)
                    .disable_config_load()
                    .disable_ec2_metadata();
            }
            (None, None) => {}
            _ => {
                return Err(Error::invalid(
                    "the s3 storage needs both an access key id and a secret access key, or neither",
                ));
            }
        }
        if !settings.path_style {
            builder = builder.enable_virtual_host_style();
        }
        let op = Operator::new(builder).map_err(|e| build_error("s3", e))?;

        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // Between two reads of a response body, not for the whole transfer.
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| {
                tracing::warn!(error = %e, "cannot build the object storage HTTP client");
                Error::Unavailable(
                    "object storage is unavailable: cannot build its HTTP client".to_owned(),
                )
            })?;
        let transport = opendal_http_transport_reqwest::ReqwestTransport::new(client);
        let op = op.with_context(
            OperationContext::new().with_http_transport(HttpTransporter::new(transport)),
        );
        Ok(Self {
            op,
            backend: Backend::S3 {
                bucket: bucket.to_owned(),
            },
        })
    }

    /// The backend's name: `fs`, `memory` or `s3`.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The underlying OpenDAL operator, for tooling and tests.
    pub fn operator(&self) -> &Operator {
        &self.op
    }

    /// Maps an OpenDAL error: NotFound stays a 404, everything else is a 503 whose sentence
    /// names the kind of failure only; the whole error goes to the log.
    fn fail(&self, operation: &'static str, key: &str, err: &opendal::Error) -> Error {
        if err.kind() == ErrorKind::NotFound {
            return Error::not_found("the stored object was not found");
        }
        tracing::warn!(
            backend = self.backend.name(),
            operation,
            key,
            error = %err,
            "object storage operation failed"
        );
        Error::Unavailable(format!("object storage is unavailable: {}", reason(err)))
    }
}

/// A short, credential-free reason for an OpenDAL error.
fn reason(err: &opendal::Error) -> &'static str {
    match err.kind() {
        ErrorKind::PermissionDenied => "access was denied",
        ErrorKind::ConfigInvalid => "it is misconfigured",
        ErrorKind::RateLimited => "it is rate-limiting requests",
        ErrorKind::Unsupported => "the operation is not supported",
        ErrorKind::RangeNotSatisfied => "the range is not satisfiable",
        ErrorKind::NotFound => "not found",
        _ if err.is_temporary() => "it did not answer in time or failed temporarily",
        _ => "it failed unexpectedly",
    }
}

fn build_error(backend: &'static str, err: opendal::Error) -> Error {
    tracing::warn!(backend, error = %err, "cannot set up object storage");
    Error::invalid(format!(
        "the {backend} object storage settings are invalid: {}",
        reason(&err)
    ))
}

/// Installs rustls' *ring* provider as the process default unless one is installed already.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err: another thread installed one first, which is all we need.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Removes files of `dir` not modified for [`FS_TEMP_MAX_AGE`]: writes interrupted by a
/// crash. Best effort.
fn sweep_stale_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > FS_TEMP_MAX_AGE);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Keys are relative paths of non-empty segments, without `.` or `..` segments, outside the
/// temporary folder.
fn check_key(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && !key.starts_with('/')
        && !key.contains('\\')
        && !key.contains('\0')
        && key
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
        && key.split('/').next() != Some(FS_TEMP_DIR);
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!("invalid object key {key:?}")))
    }
}

/// The next item of `stream`.
async fn next<S: Stream + Unpin + ?Sized>(stream: &mut S) -> Option<S::Item> {
    poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

#[async_trait]
impl BlobStore for OpendalBlobStore {
    async fn put(&self, key: &str, content_type: &str, mut body: ByteStream) -> Result<u64> {
        check_key(key)?;
        let mut writer = self.op.writer_with(key);
        if self.op.info().capability().write_with_content_type {
            writer = writer.content_type(content_type);
        }
        if let Backend::S3 { .. } = self.backend {
            writer = writer.chunk(S3_PART_SIZE).concurrent(S3_PARTS_IN_FLIGHT);
        }
        let mut writer = writer.await.map_err(|e| self.fail("put", key, &e))?;
        let mut written: u64 = 0;
        loop {
            match next(&mut body).await {
                Some(Ok(chunk)) => {
                    if chunk.is_empty() {
                        continue;
                    }
                    let len = chunk.len() as u64;
                    if let Err(e) = writer.write(chunk).await {
                        let _ = writer.abort().await;
                        return Err(self.fail("put", key, &e));
                    }
                    written += len;
                }
                Some(Err(e)) => {
                    // The caller's error (size limit, client gone): drop what was written so
                    // far; the previous object, if any, stays.
                    if let Err(abort) = writer.abort().await {
                        tracing::warn!(
                            backend = self.backend.name(),
                            key,
                            error = %abort,
                            "could not abort an object write"
                        );
                    }
                    return Err(e);
                }
                None => break,
            }
        }
        if let Err(e) = writer.close().await {
            let _ = writer.abort().await;
            return Err(self.fail("put", key, &e));
        }
        Ok(written)
    }

    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead> {
        check_key(key)?;
        let meta = self
            .op
            .stat(key)
            .await
            .map_err(|e| self.fail("get", key, &e))?;
        if meta.is_dir() {
            return Err(Error::not_found("the stored object was not found"));
        }
        let size = meta.content_length();
        let range = match range {
            None => None,
            Some(r) if r.start > r.end => {
                return Err(Error::invalid("the byte range ends before it starts"));
            }
            Some(r) if r.start >= size => {
                return Err(Error::invalid(format!(
                    "the byte range starts at {} but the object has {size} bytes",
                    r.start
                )));
            }
            Some(r) => Some(ByteRange {
                start: r.start,
                end: r.end.min(size - 1),
            }),
        };
        let bytes = match range {
            Some(r) => r.start..r.end + 1,
            None => 0..size,
        };
        let stream = if bytes.is_empty() {
            None
        } else {
            let reader = self
                .op
                .reader(key)
                .await
                .map_err(|e| self.fail("get", key, &e))?;
            Some(
                reader
                    .into_bytes_stream(bytes)
                    .await
                    .map_err(|e| self.fail("get", key, &e))?,
            )
        };
        Ok(BlobRead {
            size,
            range,
            body: Box::pin(ReadStream {
                inner: stream,
                store: self.clone(),
                key: key.to_owned(),
            }),
        })
    }

    async fn stat(&self, key: &str) -> Result<Option<BlobMeta>> {
        check_key(key)?;
        match self.op.stat(key).await {
            Ok(meta) if meta.is_dir() => Ok(None),
            Ok(meta) => Ok(Some(BlobMeta {
                size: meta.content_length(),
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.fail("stat", key, &e)),
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        check_key(key)?;
        match self.op.delete(key).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(self.fail("delete", key, &e)),
            _ => Ok(()),
        }
    }

    async fn presign_get(&self, key: &str, expires: Duration) -> Result<Option<String>> {
        check_key(key)?;
        if !self.op.info().capability().presign_read {
            return Ok(None);
        }
        let signed = self
            .op
            .presign_read(key, expires)
            .await
            .map_err(|e| self.fail("presign", key, &e))?;
        Ok(Some(signed.uri().to_string()))
    }

    fn uri(&self, key: &str) -> String {
        let key = key.trim_start_matches('/');
        match &self.backend {
            // The server's disk layout is nobody's business (DESIGN §15).
            Backend::Fs => format!("voiceplane://{key}"),
            Backend::Memory => format!("memory:///{key}"),
            Backend::S3 { bucket } => format!("s3://{bucket}/{key}"),
        }
    }

    async fn ping(&self) -> Result<()> {
        let result = match &self.backend {
            Backend::Memory => Ok(()),
            // The root folder must still be there (a missing one would make every write
            // recreate it somewhere nobody looks). OpenDAL answers for "/" without looking,
            // so look at the temporary folder inside it.
            Backend::Fs => self
                .op
                .stat(&format!("{FS_TEMP_DIR}/"))
                .await
                .and_then(|meta| {
                    if meta.is_dir() {
                        Ok(())
                    } else {
                        Err(opendal::Error::new(
                            ErrorKind::NotADirectory,
                            "the storage root is not a folder",
                        ))
                    }
                }),
            // One ListObjects of at most one key: proves the endpoint answers, the
            // credentials are accepted and the bucket exists (a missing bucket is an error
            // here, not an empty listing).
            Backend::S3 { .. } => match self.op.lister_with("/").limit(1).await {
                Ok(mut lister) => match next(&mut lister).await {
                    Some(Err(e)) => Err(e),
                    _ => Ok(()),
                },
                Err(e) => Err(e),
            },
        };
        result.map_err(|e| {
            tracing::warn!(
                backend = self.backend.name(),
                error = %e,
                "object storage readiness check failed"
            );
            Error::Unavailable(format!("object storage is unavailable: {}", reason(&e)))
        })
    }
}

/// The body of a [`BlobRead`]: OpenDAL's chunk stream with its errors mapped. `None` for an
/// empty object.
struct ReadStream {
    inner: Option<FuturesBytesStream>,
    store: OpendalBlobStore,
    key: String,
}

impl Stream for ReadStream {
    type Item = Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match std::task::ready!(Pin::new(inner).poll_next(cx)) {
            Some(Ok(chunk)) => Poll::Ready(Some(Ok(chunk))),
            None => {
                this.inner = None;
                Poll::Ready(None)
            }
            Some(Err(io)) => {
                this.inner = None;
                let err = match io.downcast::<opendal::Error>() {
                    Ok(err) => this.store.fail("get", &this.key, &err),
                    Err(io) => {
                        tracing::warn!(
                            backend = this.store.backend.name(),
                            key = %this.key,
                            error = %io,
                            "object storage read failed"
                        );
                        Error::Unavailable(
                            "object storage is unavailable: reading the object failed".to_owned(),
                        )
                    }
                };
                Poll::Ready(Some(Err(err)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked() {
        assert!(check_key("recordings/org_1/call_1.wav").is_ok());
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/../b",
            "./a",
            "a/",
            ".voiceplane-tmp/x",
            "a\\b",
        ] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn debug_hides_the_secret_key() {
        let settings = S3Settings {
            access_key_id: Some("AKIDEXAMPLE".into()),
            secret_access_key: Some("wJalrXUtnFEMI/K7MDENG".into()),
            ..S3Settings::new("b")
        };
        let shown = format!("{:?}", BlobConfig::S3(settings));
        assert!(!shown.contains("wJalrXUtnFEMI"), "{shown}");
        assert!(shown.contains("***"), "{shown}");
        assert!(shown.contains("AKIDEXAMPLE"), "{shown}");
    }
}
