//! Behaviour tests of [`OpendalBlobStore`], run against every backend: each `async fn` below
//! becomes `name::memory`, `name::fs` and `name::s3`.
//!
//! - `memory` and `fs` (a temporary folder) always run.
//! - `s3` runs when `VOICEPLANE_TEST_S3_ENDPOINT` names an S3-compatible server, with
//!   `VOICEPLANE_TEST_S3_BUCKET` (default `voiceplane-test`), `VOICEPLANE_TEST_S3_ACCESS_KEY`
//!   (default `AK`), `VOICEPLANE_TEST_S3_SECRET_KEY` (default `SK`) and
//!   `VOICEPLANE_TEST_S3_REGION` (default `us-east-1`); otherwise it prints that it was
//!   skipped, or fails when `VOICEPLANE_TEST_REQUIRE_S3=1`. A local server that checks
//!   signatures (what `.ci/run` starts):
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

use std::collections::VecDeque;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use voiceplane_core::Error;
use voiceplane_core::blob::{BlobStore, ByteRange, ByteStream};
use voiceplane_storage::{BlobConfig, OpendalBlobStore, S3Settings};

const ENDPOINT_VAR: &str = "VOICEPLANE_TEST_S3_ENDPOINT";
const REQUIRE_VAR: &str = "VOICEPLANE_TEST_REQUIRE_S3";

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
    fs_root: Option<PathBuf>,
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

fn s3_settings(test: &str) -> Option<S3Settings> {
    let var = |name: &str, default: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    let Some(endpoint) = std::env::var(ENDPOINT_VAR).ok().filter(|v| !v.is_empty()) else {
        if std::env::var(REQUIRE_VAR).as_deref() == Ok("1") {
            panic!("{ENDPOINT_VAR} is not set but {REQUIRE_VAR}=1");
        }
        eprintln!("SKIPPED {test} on s3: {ENDPOINT_VAR} is not set");
        return None;
    };
    Some(S3Settings {
        endpoint: Some(endpoint),
        region: Some(var("VOICEPLANE_TEST_S3_REGION", "us-east-1")),
        access_key_id: Some(var("VOICEPLANE_TEST_S3_ACCESS_KEY", "AK")),
        secret_access_key: Some(var("VOICEPLANE_TEST_S3_SECRET_KEY", "SK")),
        ..S3Settings::new(var("VOICEPLANE_TEST_S3_BUCKET", "voiceplane-test"))
    })
}

impl Fixture {
    fn new(kind: Kind, test: &str) -> Option<Self> {
        let prefix = format!("vpt-{}/{test}", unique());
        let (config, fs_root, s3) = match kind {
            Kind::Memory => (BlobConfig::Memory, None, None),
            Kind::Fs => {
                let root = std::env::temp_dir().join(format!("voiceplane-blob-{}", unique()));
                (BlobConfig::Fs { root: root.clone() }, Some(root), None)
            }
            Kind::S3 => {
                let settings = s3_settings(test)?;
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

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(root) = &self.fs_root {
            let _ = std::fs::remove_dir_all(root);
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

blob_tests!(
    round_trip_in_many_chunks,
    empty_object,
    ranges,
    stat_and_delete,
    failed_put_keeps_the_previous_object,
    failed_put_leaves_no_new_object,
    presign,
    uri_names_the_backend,
    ping_answers,
    bad_keys_are_refused,
);

// ----- helpers -------------------------------------------------------------------------------

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

// ----- behaviours ----------------------------------------------------------------------------

async fn round_trip_in_many_chunks(fx: &Fixture) {
    let key = fx.key("big.wav");
    // 20 MiB and a bit, in 64 KiB chunks: several S3 multipart parts and a short last one.
    let body = data(20 * 1024 * 1024 + 12_345, 1);
    let written = fx
        .store
        .put(&key, "audio/wav", chunked(&body, 64 * 1024))
        .await
        .expect("put");
    assert_eq!(written, body.len() as u64);
    let read_back = fx.store.get(&key, None).await.expect("get");
    assert_eq!(read_back.size, body.len() as u64);
    assert_eq!(read_back.range, None);
    drop(read_back);
    let (got, largest) = read_chunks(&fx.store, &key, None).await;
    assert_same(&got, &body, "round trip");
    eprintln!("{:?}: largest chunk read {largest} bytes", fx.kind);
    if fx.kind != Kind::Memory {
        // Streamed from disk (OpenDAL reads files 2 MiB at a time) or the network: memory
        // stays flat however large the object.
        assert!(largest <= 2 * 1024 * 1024, "{largest}-byte chunk");
    }

    // Replacing it with a smaller body leaves only the new bytes.
    let small = data(1000, 2);
    fx.store
        .put(&key, "audio/wav", chunked(&small, 300))
        .await
        .expect("replace");
    assert_same(&read(&fx.store, &key, None).await, &small, "replaced");
}

async fn empty_object(fx: &Fixture) {
    let key = fx.key("empty.wav");
    let written = fx
        .store
        .put(&key, "audio/wav", chunked(&Bytes::new(), 1))
        .await
        .expect("put");
    assert_eq!(written, 0);
    assert_eq!(fx.store.stat(&key).await.expect("stat").unwrap().size, 0);
    assert!(read(&fx.store, &key, None).await.is_empty());
    let err = fx
        .store
        .get(&key, Some(ByteRange { start: 0, end: 0 }))
        .await
        .expect_err("no byte to range over");
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
}

async fn ranges(fx: &Fixture) {
    let key = fx.key("ranges.wav");
    let size = 3 * 1024 * 1024 + 7;
    let body = data(size, 3);
    fx.store
        .put(&key, "audio/wav", chunked(&body, 100_000))
        .await
        .expect("put");
    let last = size as u64 - 1;
    for (start, end) in [
        (0, 0),
        (0, 99),
        (1_000_000, 1_999_999),
        (last, last),
        (12_345, last),
    ] {
        let range = ByteRange { start, end };
        let read_back = fx.store.get(&key, Some(range)).await.expect("get range");
        assert_eq!(read_back.size, size as u64);
        assert_eq!(read_back.range, Some(range));
        drop(read_back);
        let got = read(&fx.store, &key, Some(range)).await;
        assert_same(
            &got,
            &body[start as usize..=end as usize],
            &format!("{start}-{end}"),
        );
    }

    // An end past the object is cut at its last byte.
    let read_back = fx
        .store
        .get(
            &key,
            Some(ByteRange {
                start: last - 9,
                end: last + 1000,
            }),
        )
        .await
        .expect("get");
    assert_eq!(
        read_back.range,
        Some(ByteRange {
            start: last - 9,
            end: last
        })
    );
    drop(read_back);
    let got = read(
        &fx.store,
        &key,
        Some(ByteRange {
            start: last - 9,
            end: u64::MAX - 1,
        }),
    )
    .await;
    assert_same(&got, &body[size - 10..], "clamped");

    // A range starting past the end is an error.
    for start in [size as u64, size as u64 + 100] {
        let err = fx
            .store
            .get(
                &key,
                Some(ByteRange {
                    start,
                    end: start + 10,
                }),
            )
            .await
            .expect_err("past the end");
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    }
}

async fn stat_and_delete(fx: &Fixture) {
    let key = fx.key("gone.wav");
    assert_eq!(fx.store.stat(&key).await.expect("stat missing"), None);
    let err = fx.store.get(&key, None).await.expect_err("missing");
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");

    let body = data(4096, 4);
    fx.store
        .put(&key, "audio/mpeg", chunked(&body, 1000))
        .await
        .expect("put");
    assert_eq!(fx.store.stat(&key).await.expect("stat").unwrap().size, 4096);

    fx.store.delete(&key).await.expect("delete");
    assert_eq!(fx.store.stat(&key).await.expect("stat deleted"), None);
    let err = fx.store.get(&key, None).await.expect_err("deleted");
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let err = fx
        .store
        .get(&key, Some(ByteRange { start: 0, end: 1 }))
        .await
        .expect_err("deleted");
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    // Deleting again, or something that never existed, succeeds.
    fx.store.delete(&key).await.expect("delete again");
    fx.store
        .delete(&fx.key("never.wav"))
        .await
        .expect("delete missing");
}

async fn failed_put_keeps_the_previous_object(fx: &Fixture) {
    let key = fx.key("kept.wav");
    let old = data(2 * 1024 * 1024 + 1, 5);
    fx.store
        .put(&key, "audio/wav", chunked(&old, 64 * 1024))
        .await
        .expect("put");

    // Fails after 18 MiB: on S3, two parts are uploaded before the abort.
    let new = data(24 * 1024 * 1024, 6);
    let err = fx
        .store
        .put(
            &key,
            "audio/wav",
            failing(&new, 64 * 1024, 18 * 1024 * 1024),
        )
        .await
        .expect_err("the stream fails");
    assert_eq!(
        err,
        Error::invalid("the client went away"),
        "the caller's error comes back"
    );
    assert_eq!(
        fx.store.stat(&key).await.expect("stat").unwrap().size,
        old.len() as u64
    );
    assert_same(&read(&fx.store, &key, None).await, &old, "previous object");

    // A failure on the very first chunk too.
    let err = fx
        .store
        .put(&key, "audio/wav", failing(&new, 64 * 1024, 0))
        .await
        .expect_err("the stream fails");
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    assert_same(&read(&fx.store, &key, None).await, &old, "previous object");
    assert_no_temp_files(fx);
}

async fn failed_put_leaves_no_new_object(fx: &Fixture) {
    let key = fx.key("never-complete.wav");
    let new = data(10 * 1024 * 1024, 7);
    fx.store
        .put(
            &key,
            "audio/wav",
            failing(&new, 64 * 1024, 9 * 1024 * 1024 + 5),
        )
        .await
        .expect_err("the stream fails");
    assert_eq!(fx.store.stat(&key).await.expect("stat"), None);
    let err = fx.store.get(&key, None).await.expect_err("nothing there");
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert_no_temp_files(fx);
}

/// On `fs`, an aborted write leaves nothing in the temporary folder.
fn assert_no_temp_files(fx: &Fixture) {
    if let Some(root) = &fx.fs_root {
        let left: Vec<_> = std::fs::read_dir(root.join(".voiceplane-tmp"))
            .expect("temporary folder")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

async fn presign(fx: &Fixture) {
    let key = fx.key("presigned.wav");
    let body = data(300_000, 8);
    fx.store
        .put(&key, "audio/wav", chunked(&body, 50_000))
        .await
        .expect("put");
    let url = fx
        .store
        .presign_get(&key, Duration::from_secs(3600))
        .await
        .expect("presign");
    let Some(url) = url else {
        assert_ne!(fx.kind, Kind::S3, "s3 presigns");
        return;
    };
    assert_eq!(fx.kind, Kind::S3, "only s3 presigns");
    let secret = fx.s3.as_ref().and_then(|s| s.secret_access_key.clone());
    if let Some(secret) = secret.filter(|s| s.len() >= 4) {
        assert!(!url.contains(&secret), "the URL carries no secret key");
    }

    // No credentials but the URL (opening the s3 store installed the TLS provider).
    let http = reqwest::Client::new();
    let res = http.get(&url).send().await.expect("GET presigned");
    assert_eq!(res.status().as_u16(), 200);
    assert_same(&res.bytes().await.unwrap(), &body, "presigned GET");

    let res = http
        .get(&url)
        .header("Range", "bytes=1000-1999")
        .send()
        .await
        .expect("GET presigned range");
    assert_eq!(res.status().as_u16(), 206);
    let content_range = res
        .headers()
        .get("content-range")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(content_range.as_deref(), Some("bytes 1000-1999/300000"));
    assert_same(&res.bytes().await.unwrap(), &body[1000..2000], "range");

    let res = http
        .get(&url)
        .header("Range", "bytes=-10")
        .send()
        .await
        .expect("GET presigned suffix");
    assert_eq!(res.status().as_u16(), 206);
    assert_same(
        &res.bytes().await.unwrap(),
        &body[body.len() - 10..],
        "suffix",
    );

    // One character of the signature changed.
    let marker = "X-Amz-Signature=";
    let at = url.find(marker).expect("a SigV4 signature") + marker.len() + 5;
    let mut tampered = url.clone().into_bytes();
    tampered[at] = if tampered[at] == b'0' { b'1' } else { b'0' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_ne!(tampered, url);
    let res = http.get(&tampered).send().await.expect("GET tampered");
    assert_eq!(res.status().as_u16(), 403);

    // Another key under the same signature.
    let other = url.replacen("presigned.wav", "presigned.wa0", 1);
    let res = http.get(&other).send().await.expect("GET other key");
    assert_eq!(res.status().as_u16(), 403);
}

async fn uri_names_the_backend(fx: &Fixture) {
    let key = fx.key("a.wav");
    let uri = fx.store.uri(&key);
    match fx.kind {
        Kind::Memory => assert_eq!(uri, format!("memory:///{key}")),
        Kind::S3 => {
            let bucket = &fx.s3.as_ref().unwrap().bucket;
            assert_eq!(uri, format!("s3://{bucket}/{key}"));
        }
        Kind::Fs => {
            let root = fx.fs_root.as_ref().unwrap().canonicalize().unwrap();
            assert_eq!(uri, format!("file://{}/{key}", root.display()));
            fx.store
                .put(&key, "audio/wav", chunked(&data(10, 9), 3))
                .await
                .expect("put");
            let path = uri.strip_prefix("file://").unwrap();
            assert_eq!(std::fs::read(path).unwrap(), data(10, 9).to_vec());
        }
    }
    assert_eq!(
        fx.store.backend_name(),
        match fx.kind {
            Kind::Memory => "memory",
            Kind::Fs => "fs",
            Kind::S3 => "s3",
        }
    );
}

async fn ping_answers(fx: &Fixture) {
    fx.store.ping().await.expect("ping");
}

async fn bad_keys_are_refused(fx: &Fixture) {
    for key in [
        "",
        "/etc/passwd",
        "../escape.wav",
        "a/../../b",
        ".voiceplane-tmp/x",
    ] {
        let err = fx
            .store
            .put(key, "audio/wav", chunked(&data(3, 1), 1))
            .await
            .expect_err(key);
        assert!(matches!(err, Error::InvalidInput(_)), "{key}: {err:?}");
        assert!(fx.store.stat(key).await.is_err(), "{key}");
    }
}

// ----- failures of the backend itself (no server needed) -------------------------------------

/// An S3 endpoint nobody listens on: every operation is a 503 naming no credential.
#[tokio::test]
async fn unreachable_s3_is_unavailable_without_leaking_the_secret() {
    let secret = "very-secret-key-1234567890";
    let config = BlobConfig::S3(S3Settings {
        endpoint: Some("http://127.0.0.1:9".to_owned()),
        access_key_id: Some("AKIDTEST".to_owned()),
        secret_access_key: Some(secret.to_owned()),
        ..S3Settings::new("nowhere")
    });
    assert!(!format!("{config:?}").contains(secret));
    let store = OpendalBlobStore::new(config).expect("opening contacts nothing");
    assert!(!format!("{store:?}").contains(secret));

    let check = |err: Error| {
        let Error::Unavailable(message) = &err else {
            panic!("expected Unavailable, got {err:?}");
        };
        assert!(
            message.starts_with("object storage is unavailable: "),
            "{message}"
        );
        assert!(!message.contains(secret), "{message}");
        assert!(!message.contains("AKIDTEST"), "{message}");
    };
    check(store.ping().await.expect_err("ping"));
    check(store.stat("a/b.wav").await.expect_err("stat"));
    check(store.get("a/b.wav", None).await.expect_err("get"));
    check(store.delete("a/b.wav").await.expect_err("delete"));
    check(
        store
            .put("a/b.wav", "audio/wav", chunked(&data(10, 1), 5))
            .await
            .expect_err("put"),
    );
    // Presigning is local: it works without the server.
    let url = store
        .presign_get("a/b.wav", Duration::from_secs(60))
        .await
        .expect("presign")
        .expect("s3 presigns");
    assert!(
        url.starts_with("http://127.0.0.1:9/nowhere/a/b.wav?"),
        "{url}"
    );
    assert!(!url.contains(secret));

    // Virtual-host style puts the bucket in the host name.
    let store = OpendalBlobStore::new(BlobConfig::S3(S3Settings {
        endpoint: Some("http://s3.example.test".to_owned()),
        access_key_id: Some("AKIDTEST".to_owned()),
        secret_access_key: Some(secret.to_owned()),
        path_style: false,
        ..S3Settings::new("nowhere")
    }))
    .expect("opens");
    let url = store
        .presign_get("a/b.wav", Duration::from_secs(60))
        .await
        .expect("presign")
        .expect("s3 presigns");
    assert!(
        url.starts_with("http://nowhere.s3.example.test/a/b.wav?"),
        "{url}"
    );
}

/// An `fs` store whose folder disappeared is not ready.
#[tokio::test]
async fn fs_ping_fails_when_the_root_is_gone() {
    let root = std::env::temp_dir().join(format!("voiceplane-blob-{}", unique()));
    let store = OpendalBlobStore::new(BlobConfig::Fs { root: root.clone() }).expect("opens");
    store.ping().await.expect("ready");
    std::fs::remove_dir_all(&root).unwrap();
    let err = store.ping().await.expect_err("root gone");
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
}

/// Stale temporary files of an `fs` root are swept when a store opens; fresh ones stay.
#[tokio::test]
async fn fs_sweeps_stale_temporary_files() {
    let root = std::env::temp_dir().join(format!("voiceplane-blob-{}", unique()));
    let temp = root.join(".voiceplane-tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let stale = temp.join("stale");
    let fresh = temp.join("fresh");
    std::fs::write(&stale, b"x").unwrap();
    std::fs::write(&fresh, b"x").unwrap();
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(two_days_ago)
        .unwrap();
    OpendalBlobStore::new(BlobConfig::Fs { root: root.clone() }).expect("opens");
    assert!(!stale.exists());
    assert!(fresh.exists());
    std::fs::remove_dir_all(&root).unwrap();
}
