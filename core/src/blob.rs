//! Object storage for recordings and knowledge-base files, behind [`BlobStore`]. Bodies move
//! as streams of [`Bytes`] chunks, never as whole files in memory.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;
use sha2::{Digest, Sha256};

use crate::error::Result;

/// A stream of body chunks; an `Err` item aborts the transfer.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// SHA-256 of the bytes a [`ByteStream`] has passed on so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamDigest(Arc<Mutex<Sha256>>);

impl StreamDigest {
    /// `body` unchanged, except that every chunk it yields is also hashed into this digest.
    pub(crate) fn tap(&self, body: ByteStream) -> ByteStream {
        Box::pin(Tapped {
            inner: body,
            digest: self.clone(),
        })
    }

    /// Lower-case hex of the hash of everything passed on.
    pub(crate) fn hex(&self) -> String {
        let hasher = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        crate::auth::to_hex(&hasher.finalize())
    }
}

struct Tapped {
    inner: ByteStream,
    digest: StreamDigest,
}

impl Stream for Tapped {
    type Item = Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(Ok(chunk))) = &polled {
            self.digest
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .update(chunk);
        }
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// An inclusive byte range `start..=end` of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// Last byte, inclusive.
    pub end: u64,
}

impl ByteRange {
    /// Number of bytes in the range.
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }

    /// Whether the range is empty (never, for a valid range; here for clippy's sake).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A range of an object asked for before its size is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// From byte `start` to the end.
    From(u64),
    /// From byte `start` to byte `end`, inclusive (or the end, if the object is shorter).
    FromTo(u64, u64),
    /// The last `n` bytes.
    Suffix(u64),
}

impl RangeRequest {
    /// The bytes this request selects in an object of `size` bytes; `None` when it selects
    /// nothing.
    pub fn resolve(self, size: u64) -> Option<ByteRange> {
        if size == 0 {
            return None;
        }
        let last = size - 1;
        match self {
            Self::From(start) if start <= last => Some(ByteRange { start, end: last }),
            Self::FromTo(start, end) if start <= last => Some(ByteRange {
                start,
                end: end.min(last),
            }),
            Self::Suffix(n) if n > 0 => Some(ByteRange {
                start: size.saturating_sub(n),
                end: last,
            }),
            _ => None,
        }
    }
}

/// What is known about a stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    /// Size in bytes.
    pub size: u64,
}

/// An object being read: its total size, the range being sent, and the bytes.
pub struct BlobRead {
    /// Size of the whole object.
    pub size: u64,
    /// The range the stream carries (`None`: the whole object).
    pub range: Option<ByteRange>,
    /// The bytes.
    pub body: ByteStream,
}

impl fmt::Debug for BlobRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobRead")
            .field("size", &self.size)
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// Object storage. Keys are relative paths such as `recordings/org_…/call_….wav`.
///
/// Failures map onto [`Error`](crate::Error): a missing object is `NotFound`; a backend that
/// cannot be reached or refuses us is `Unavailable` (503) with a sentence that names no
/// credential.
#[async_trait]
pub trait BlobStore: Send + Sync + 'static {
    /// Stores `body` under `key`, replacing any object there, and returns the bytes written.
    /// The new object becomes visible only once the whole body is written: if the stream
    /// yields an error (the caller's size limit, a dropped client), that error is returned and
    /// the previous object, if any, is left intact.
    async fn put(&self, key: &str, content_type: &str, body: ByteStream) -> Result<u64>;

    /// Reads `key`, or the `range` of it. A range starting past the end is `InvalidInput`.
    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead>;

    /// Size of `key`, or `None` when there is no such object.
    async fn stat(&self, key: &str) -> Result<Option<BlobMeta>>;

    /// Deletes `key`; deleting a missing object succeeds.
    async fn delete(&self, key: &str) -> Result<()>;

    /// A URL that reads `key` without other credentials for `expires`, when the backend can
    /// sign one itself (S3); `None` when it cannot (fs, memory), and the caller signs its own.
    async fn presign_get(&self, key: &str, expires: Duration) -> Result<Option<String>>;

    /// A URI naming `key` in this store, e.g. `s3://bucket/key`, or `voiceplane://key` where the store has no public name (fs).
    fn uri(&self, key: &str) -> String;

    /// Succeeds when the store answers.
    async fn ping(&self) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_against_the_size() {
        let r = |request: RangeRequest, size| request.resolve(size);
        use RangeRequest::{From, FromTo, Suffix};
        assert_eq!(r(FromTo(0, 9), 100), Some(ByteRange { start: 0, end: 9 }));
        assert_eq!(r(From(90), 100), Some(ByteRange { start: 90, end: 99 }));
        assert_eq!(r(Suffix(10), 100), Some(ByteRange { start: 90, end: 99 }));
        assert_eq!(r(Suffix(1000), 100), Some(ByteRange { start: 0, end: 99 }));
        assert_eq!(
            r(FromTo(50, 5000), 100),
            Some(ByteRange { start: 50, end: 99 })
        );
        assert_eq!(r(From(100), 100), None);
        assert_eq!(r(Suffix(0), 100), None);
        assert_eq!(r(From(0), 0), None);
        assert_eq!(ByteRange { start: 90, end: 99 }.len(), 10);
    }
}
