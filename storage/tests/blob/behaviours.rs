//! What every backend must do: round trips in many chunks, empty objects, ranges, stat and
//! delete, failed writes that keep the previous object or leave none, presigned URLs, URIs
//! naming the backend, pings and refused keys.

use std::time::Duration;

use bytes::Bytes;
use voiceplane_core::Error;
use voiceplane_core::blob::{BlobStore, ByteRange};

use crate::*;

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
    if let Some(root) = fx.fs_root.as_ref().map(|f| f.path()) {
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
            // The key, never the server's folder (DESIGN §15).
            assert_eq!(uri, format!("voiceplane://{key}"));
            let root = fx.fs_root.as_ref().unwrap().path().canonicalize().unwrap();
            assert!(!uri.contains(&*root.to_string_lossy()), "{uri}");
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
