//! Failures of the backend itself, no server needed: an unreachable S3 endpoint, an `fs`
//! root that disappeared, and stale temporary files swept when a store opens.

use std::time::Duration;

use voiceplane_core::Error;
use voiceplane_core::blob::BlobStore;
use voiceplane_storage::{BlobConfig, OpendalBlobStore, S3Settings};

use crate::folder::TestFolder;
use crate::*;

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
    let folder = TestFolder::new("blob");
    let root = folder.path().to_owned();
    let store = OpendalBlobStore::new(BlobConfig::Fs { root: root.clone() }).expect("opens");
    store.ping().await.expect("ready");
    std::fs::remove_dir_all(&root).unwrap();
    let err = store.ping().await.expect_err("root gone");
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
}

/// Stale temporary files of an `fs` root are swept when a store opens; fresh ones stay.
#[tokio::test]
async fn fs_sweeps_stale_temporary_files() {
    let folder = TestFolder::new("blob");
    let root = folder.path().to_owned();
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
}
