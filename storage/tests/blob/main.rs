//! Behaviour tests of [`OpendalBlobStore`], run against every backend: each `async fn` of
//! `behaviours` becomes `name::memory`, `name::fs` and `name::s3`; `failures` covers a backend
//! that is itself broken (no server needed). This file holds the per-test fixture and the
//! helpers both use.
//!
//! - `memory` and `fs` (a temporary folder) always run.
//! - `s3` runs when `VOICEPLANE_TEST_S3_ENDPOINT` names an S3-compatible server (the other
//!   variables are read by `s3_env`, shared with the workspace suite); otherwise it prints
//!   that it was skipped, or fails when `VOICEPLANE_TEST_REQUIRE_S3=1`. A local server that
//!   checks signatures (what `.ci/run` starts):
//!
//! ```text
//! cargo install --locked s3s-fs@0.14.1 --features binary
//! mkdir -p /tmp/s3/voiceplane-test
//! s3s-fs --host 127.0.0.1 --port 8014 --access-key AK --secret-key SK /tmp/s3 &
//! VOICEPLANE_TEST_S3_ENDPOINT=http://127.0.0.1:8014 cargo test -p voiceplane-storage --test blob
//! ```
//!
//! Every test writes under its own key prefix, so runs may share a bucket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../tests/support/folder.rs"]
mod folder;
#[path = "../../../tests/support/s3_env.rs"]
mod s3_env;

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use voiceplane_core::Error;
use voiceplane_core::blob::{BlobStore, ByteRange, ByteStream};
use voiceplane_storage::{BlobConfig, OpendalBlobStore, S3Settings};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    Fs,
    S3,
}

/// One test's store and key prefix.
struct Fixture {
    kind: Kind,
    store: OpendalBlobStore,
    prefix: String,
    fs_root: Option<folder::TestFolder>,
    s3: Option<S3Settings>,
}

fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{nanos:x}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

impl Fixture {
    fn new(kind: Kind, test: &str) -> Option<Self> {
        let prefix = format!("vpt-{}/{test}", unique());
        let (config, fs_root, s3) = match kind {
            Kind::Memory => (BlobConfig::Memory, None, None),
            Kind::Fs => {
                let root = folder::TestFolder::new("blob");
                let config = BlobConfig::Fs {
                    root: root.path().to_owned(),
                };
                (config, Some(root), None)
            }
            Kind::S3 => {
                let settings = s3_env::s3_from_env(&format!("{test} on s3"))?;
                (BlobConfig::S3(settings.clone()), None, Some(settings))
            }
        };
        let store = OpendalBlobStore::new(config).expect("the store opens");
        Some(Self {
            kind,
            store,
            prefix,
            fs_root,
            s3,
        })
    }

    fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.prefix)
    }

    /// Removes what the test wrote on S3 (the `fs` folder goes when the fixture is dropped,
    /// even after a panic).
    async fn cleanup(self) {
        if self.kind == Kind::S3 {
            let _ = self
                .store
                .operator()
                .delete_with(&format!("{}/", self.prefix))
                .recursive(true)
                .await;
        }
    }
}

macro_rules! blob_tests {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            async fn run(kind: Kind) {
                if let Some(fx) = Fixture::new(kind, stringify!($name)) {
                    super::$name(&fx).await;
                    fx.cleanup().await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                run(Kind::Memory).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fs() {
                run(Kind::Fs).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn s3() {
                run(Kind::S3).await;
            }
        }
    )*};
}

mod behaviours;
mod failures;

/// `len` bytes that differ from one position to the next (xorshift), so that a misplaced
/// chunk shows.
fn data(len: usize, seed: u64) -> Bytes {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    Bytes::from(out)
}

/// A body stream: the given items, in order.
struct Items(VecDeque<voiceplane_core::Result<Bytes>>);

impl Stream for Items {
    type Item = voiceplane_core::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.pop_front())
    }
}

/// `body` in chunks of `chunk` bytes.
fn chunked(body: &Bytes, chunk: usize) -> ByteStream {
    let items = (0..body.len())
        .step_by(chunk)
        .map(|start| Ok(body.slice(start..(start + chunk).min(body.len()))))
        .collect();
    Box::pin(Items(items))
}

/// The first `fail_after` bytes of `body` in chunks, then an error.
fn failing(body: &Bytes, chunk: usize, fail_after: usize) -> ByteStream {
    let mut items: VecDeque<_> = (0..fail_after)
        .step_by(chunk)
        .map(|start| Ok(body.slice(start..(start + chunk).min(fail_after))))
        .collect();
    items.push_back(Err(Error::invalid("the client went away")));
    Box::pin(Items(items))
}

/// The whole body of `key` (or of `range`), chunk by chunk.
async fn read(store: &OpendalBlobStore, key: &str, range: Option<ByteRange>) -> Vec<u8> {
    read_chunks(store, key, range).await.0
}

/// The body of `key` (or of `range`) and the size of its largest chunk.
async fn read_chunks(
    store: &OpendalBlobStore,
    key: &str,
    range: Option<ByteRange>,
) -> (Vec<u8>, usize) {
    let mut read = store.get(key, range).await.expect("get");
    let mut out = Vec::new();
    let mut largest = 0;
    while let Some(chunk) = std::future::poll_fn(|cx| read.body.as_mut().poll_next(cx)).await {
        let chunk = chunk.expect("chunk");
        largest = largest.max(chunk.len());
        out.extend_from_slice(&chunk);
    }
    (out, largest)
}

fn assert_same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    // Not assert_eq! on the bytes: a multi-MiB diff is unreadable.
    if let Some(at) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!("{what}: first difference at byte {at}");
    }
}
