//! Call recordings and knowledge-base files over HTTP, on every object store (memory, fs,
//! and S3 when `VOICEPLANE_TEST_S3_ENDPOINT` names a local S3-compatible server) and on
//! SQLite and Postgres: upload, stream URL fetched without credentials (with `Range`), a
//! tampered URL refused, download bytes and headers, failed uploads leaving the previous
//! recording intact, `application/octet-stream` uploads told WAV or MP3 by their first
//! bytes, and other organizations' calls not found.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::blob::BlobStore;
use voiceplane_core::signing::LinkSigner;
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, db_tests, http_client, multipart_document,
    multipart_document_name_last, s3_from_env,
};

const LIMIT: u64 = 1024 * 1024;
const TO: &str = "+14155550123";

/// The stores to run on: memory and the test's folder always, S3 when configured.
fn stores(ctx: &TestContext) -> Vec<(&'static str, Arc<dyn BlobStore>)> {
    let root = ctx.folder().join("blobs");
    let mut stores: Vec<(&'static str, Arc<dyn BlobStore>)> = vec![
        (
            "memory",
            Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap()),
        ),
        (
            "fs",
            Arc::new(OpendalBlobStore::new(BlobConfig::Fs { root }).unwrap()),
        ),
    ];
    if let Some(s3) = s3_from_env("the S3 store") {
        stores.push((
            "s3",
            Arc::new(OpendalBlobStore::new(BlobConfig::S3(s3)).unwrap()),
        ));
    }
    stores
}

/// Deterministic, non-repeating-looking audio bytes.
fn audio(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

async fn upload(
    c: &ApiCaller,
    sid: &str,
    content_type: &str,
    bytes: Vec<u8>,
) -> (StatusCode, Value) {
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
        .header("Content-Type", content_type)
        .body(bytes)
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap_or(Value::Null))
}

async fn download(c: &ApiCaller, sid: &str) -> reqwest::Response {
    c.request(Method::GET, &format!("/api/calls/{sid}/recording/download"))
        .send()
        .await
        .unwrap()
}

async fn call(c: &ApiCaller) -> String {
    let (_, agent) = c
        .send(Method::POST, "/api/agents", Some(json!({
            "agent_name": "A", "language": "en", "stt_provider": "s", "tts_provider": "provider_one",
            "tts_voice": "v", "llm_provider": "l", "llm_model": "m"
        })))
        .await;
    let (status, call) = c
        .send(Method::POST, "/api/calls", Some(json!({"agent_id": agent["data"]["agent_id"], "to_number": TO, "call_type": "outbound"})))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    call["data"]["call_sid"].as_str().unwrap().to_owned()
}

/// Flips one hex digit of the signature parameter of `url` (`sig=` or `X-Amz-Signature=`).
fn tamper(url: &str) -> String {
    let at = url
        .find("sig=")
        .map(|i| i + 4)
        .or_else(|| url.find("X-Amz-Signature=").map(|i| i + 16))
        .expect("a signature parameter");
    let mut bytes = url.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
    String::from_utf8(bytes).unwrap()
}

async fn on_store(ctx: &TestContext, name: &str, store: Arc<dyn BlobStore>) {
    let config = voiceplane_http::HttpConfig {
        max_upload_bytes: LIMIT,
        ..Default::default()
    };
    let signer = LinkSigner::new(b"test recording url key, 32 bytes");
    let blobs = store.clone();
    let server = TestServer::start_at(ctx, config, move |s, base| {
        s.with_blobs(blobs)
            .with_recording_links(voiceplane_http::Api::recording_links(base, signer))
    })
    .await;
    let boot = ctx.bootstrap("Acme").await;
    let c = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let sid = call(&c).await;

    // Nothing yet.
    assert_eq!(
        c.send(
            Method::GET,
            &format!("/api/calls/{sid}/recording/stream"),
            None
        )
        .await
        .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(download(&c, &sid).await.status(), StatusCode::NOT_FOUND);
    // Wrong type, too large (declared and streamed), and a broken stream store nothing.
    assert_eq!(
        upload(&c, &sid, "text/plain", b"hello".to_vec()).await.0,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        upload(&c, &sid, "audio/wav", audio(LIMIT as usize + 1, 1))
            .await
            .0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    assert_eq!(
        c.send(
            Method::GET,
            &format!("/api/calls/{sid}/recording/stream"),
            None
        )
        .await
        .0,
        StatusCode::NOT_FOUND,
        "{name}"
    );

    // A real upload.
    let wav = audio(300_000, 7);
    let (status, v) = upload(&c, &sid, "audio/wav", wav.clone()).await;
    assert_eq!(status, StatusCode::OK, "{name}: {v}");
    assert_eq!(v["data"]["call_sid"], sid.as_str());

    // The stream link plays without credentials, seeks with Range, and refuses tampering.
    let (status, link) = c
        .send(
            Method::GET,
            &format!("/api/calls/{sid}/recording/stream"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{name}: {link}");
    let data = &link["data"];
    assert_eq!(data["expires_in"], 3600);
    assert_eq!(data["content_type"], "audio/wav");
    assert_eq!(data["filename"], format!("recording_{TO}.wav"));
    let url = data["url"].as_str().unwrap();
    let anon = http_client();
    let whole = anon.get(url).send().await.unwrap();
    assert_eq!(whole.status(), StatusCode::OK, "{name}: {url}");
    assert_eq!(
        whole.bytes().await.unwrap().as_ref(),
        wav.as_slice(),
        "{name}"
    );
    let part = anon
        .get(url)
        .header("Range", "bytes=1000-1999")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT, "{name}");
    assert_eq!(
        part.headers()["content-range"],
        "bytes 1000-1999/300000",
        "{name}"
    );
    assert_eq!(
        part.bytes().await.unwrap().as_ref(),
        &wav[1000..2000],
        "{name}"
    );
    let tail = anon
        .get(url)
        .header("Range", "bytes=-10")
        .send()
        .await
        .unwrap();
    assert_eq!(tail.status(), StatusCode::PARTIAL_CONTENT, "{name}");
    assert_eq!(
        tail.bytes().await.unwrap().as_ref(),
        &wav[wav.len() - 10..],
        "{name}"
    );
    let forged = anon.get(tamper(url)).send().await.unwrap();
    assert_eq!(
        forged.status(),
        StatusCode::FORBIDDEN,
        "{name}: tampered URL"
    );
    if name != "s3" {
        // Our own links expire after an hour (S3 enforces its own with the real clock).
        ctx.clock.advance(3601);
        let expired = anon.get(url).send().await.unwrap();
        assert_eq!(
            expired.status(),
            StatusCode::FORBIDDEN,
            "{name}: expired URL"
        );
    }

    // Download: the bytes, as an attachment, with its length.
    let resp = download(&c, &sid).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "audio/wav");
    assert_eq!(
        resp.headers()["content-disposition"],
        format!("attachment; filename=\"recording_{TO}.wav\"")
    );
    assert_eq!(resp.headers()["content-length"], "300000");
    assert_eq!(
        resp.bytes().await.unwrap().as_ref(),
        wav.as_slice(),
        "{name}"
    );

    // A failed upload leaves the previous recording as it was: over the limit while streaming
    // (no Content-Length), and a client that breaks off.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..40).map(|i| Ok(audio(64 * 1024, i))).collect();
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
        .header("Content-Type", "audio/wav")
        .body(reqwest::Body::wrap_stream(tokio_stream(chunks)))
        .send()
        .await;
    if let Ok(resp) = resp {
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE, "{name}");
    }
    let mut broken: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..3).map(|i| Ok(audio(64 * 1024, i))).collect();
    broken.push(Err(std::io::Error::other("client gave up")));
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
        .header("Content-Type", "audio/wav")
        .body(reqwest::Body::wrap_stream(tokio_stream(broken)))
        .send()
        .await;
    assert!(
        resp.is_err() || !resp.unwrap().status().is_success(),
        "{name}"
    );
    let resp = download(&c, &sid).await;
    assert_eq!(
        resp.bytes().await.unwrap().as_ref(),
        wav.as_slice(),
        "{name}: previous recording intact"
    );

    // Replacing with an mp3 switches the format and removes the old file.
    let mp3 = audio(1234, 9);
    assert_eq!(
        upload(&c, &sid, "audio/mpeg", mp3.clone()).await.0,
        StatusCode::OK
    );
    let (_, link) = c
        .send(
            Method::GET,
            &format!("/api/calls/{sid}/recording/stream"),
            None,
        )
        .await;
    assert_eq!(link["data"]["content_type"], "audio/mpeg");
    assert_eq!(link["data"]["filename"], format!("recording_{TO}.mp3"));
    let fetched = anon
        .get(link["data"]["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(
        fetched.bytes().await.unwrap().as_ref(),
        mp3.as_slice(),
        "{name}"
    );
    let old_key = format!("recordings/{}/{sid}.wav", boot.organization_id);
    assert_eq!(
        store.stat(&old_key).await.unwrap(),
        None,
        "{name}: replaced file deleted"
    );

    // Another organization's call is not found, for every recording route.
    let other = ctx.bootstrap("Other").await;
    let outsider = ApiCaller::new(&server, &other.organization_id, &other.api_key);
    assert_eq!(
        download(&outsider, &sid).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        outsider
            .send(
                Method::GET,
                &format!("/api/calls/{sid}/recording/stream"),
                None
            )
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        upload(&outsider, &sid, "audio/wav", b"x".to_vec()).await.0,
        StatusCode::NOT_FOUND
    );

    // Knowledge-base files: multipart in, stored, deleted with the document.
    let file = audio(5000, 3);
    let (multipart, body) = multipart_document(
        Some("Price list"),
        "prices 2026.pdf",
        "application/pdf",
        &file,
    );
    let resp = c
        .request(Method::POST, "/api/knowledge-base")
        .header("Content-Type", multipart)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED, "{name}");
    let doc: Value = resp.json().await.unwrap();
    let d = &doc["data"];
    assert_eq!(d["type"], "file");
    assert_eq!(d["name"], "Price list");
    assert_eq!(d["filename"], "prices 2026.pdf");
    assert_eq!(d["content_type"], "application/pdf");
    assert_eq!(d["size"], 5000);
    assert_eq!(d["processing_status"], "pending");
    let key = d["storage_key"].as_str().unwrap().to_owned();
    assert!(
        key.starts_with(&format!("knowledge-base/{}/", boot.organization_id)),
        "{key}"
    );
    assert!(d["storage_uri"].as_str().unwrap().ends_with(&key), "{d}");
    assert_eq!(store.stat(&key).await.unwrap().map(|m| m.size), Some(5000));
    let id = d["documentation_id"].as_str().unwrap();
    assert_eq!(
        c.send(Method::DELETE, &format!("/api/knowledge-base/{id}"), None)
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        store.stat(&key).await.unwrap(),
        None,
        "{name}: file deleted with the document"
    );

    // Generated clients send the file before its name: the name still counts, and is
    // checked as one sent first.
    let post = |(multipart, body): (String, Vec<u8>)| {
        c.request(Method::POST, "/api/knowledge-base")
            .header("Content-Type", multipart)
            .body(body)
            .send()
    };
    let resp = post(multipart_document_name_last(
        "Menu",
        "menu.pdf",
        "application/pdf",
        &file,
    ))
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED, "{name}");
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["data"]["name"], "Menu", "{name}: {doc}");
    assert_eq!(doc["data"]["size"], 5000, "{name}: {doc}");
    let (multipart, body) = multipart_document(None, "menu.pdf", "application/pdf", &file);
    let resp = post((multipart, body)).await.unwrap();
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["data"]["name"], "menu.pdf", "{name}: {doc}");
    let too_long = "n".repeat(201);
    let resp = post(multipart_document_name_last(
        &too_long,
        "long.pdf",
        "application/pdf",
        &file,
    ))
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{name}");
    server.stop().await;
}

/// A `Stream` over a vector of results, for `reqwest::Body::wrap_stream`.
fn tokio_stream(
    items: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    struct Iter(std::vec::IntoIter<Result<Vec<u8>, std::io::Error>>);
    impl futures_core::Stream for Iter {
        type Item = Result<Vec<u8>, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }
    Iter(items.into_iter())
}

async fn recordings_on_every_store(ctx: &TestContext) {
    for (name, store) in stores(ctx) {
        on_store(ctx, name, store).await;
    }
}

/// The content type of `sid`'s recording, from its stream link.
async fn stored_type(c: &ApiCaller, sid: &str) -> Value {
    let (status, link) = c
        .send(
            Method::GET,
            &format!("/api/calls/{sid}/recording/stream"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{link}");
    link["data"]["content_type"].clone()
}

/// `application/octet-stream` uploads are WAV or MP3 by their first bytes, even when those
/// arrive a byte at a time, and are stored whole; anything else is refused and stores nothing.
async fn octet_stream_recordings_are_told_by_their_bytes(ctx: &TestContext) {
    let signer = LinkSigner::new(b"test recording url key, 32 bytes");
    let blobs: Arc<dyn BlobStore> = Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap());
    let server = TestServer::start_at(ctx, Default::default(), move |s, base| {
        s.with_blobs(blobs)
            .with_recording_links(voiceplane_http::Api::recording_links(base, signer))
    })
    .await;
    let boot = ctx.bootstrap("Acme").await;
    let c = ApiCaller::new(&server, &boot.organization_id, &boot.api_key);
    let octets = "application/octet-stream";

    let junk = call(&c).await;
    let (status, v) = upload(&c, &junk, octets, b"hello, not audio".to_vec()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["detail"], "the recording is neither WAV nor MP3");
    let (status, v) = upload(&c, &junk, octets, Vec::new()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(download(&c, &junk).await.status(), StatusCode::NOT_FOUND);

    let mut wav = b"RIFF\x24\x08\x00\x00WAVEfmt ".to_vec();
    wav.extend(audio(4000, 5));
    let mut id3 = b"ID3\x04\x00".to_vec();
    id3.extend(audio(3000, 6));
    let mut frames = vec![0xFF, 0xFB, 0x90, 0x64];
    frames.extend(audio(3000, 8));
    for (bytes, expected) in [
        (&wav, "audio/wav"),
        (&id3, "audio/mpeg"),
        (&frames, "audio/mpeg"),
    ] {
        let sid = call(&c).await;
        let (status, v) = upload(&c, &sid, octets, bytes.clone()).await;
        assert_eq!(status, StatusCode::OK, "{expected}: {v}");
        assert_eq!(stored_type(&c, &sid).await, expected);
    }

    // The header split over many small chunks: still told apart, and every byte kept.
    let sid = call(&c).await;
    let mut chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        wav[..12].iter().map(|b| Ok(vec![*b])).collect();
    chunks.push(Ok(wav[12..].to_vec()));
    let resp = c
        .request(Method::PUT, &format!("/api/calls/{sid}/recording"))
        .header("Content-Type", octets)
        .body(reqwest::Body::wrap_stream(tokio_stream(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(stored_type(&c, &sid).await, "audio/wav");
    let body = download(&c, &sid).await.bytes().await.unwrap();
    assert_eq!(body.as_ref(), wav.as_slice());
    server.stop().await;
}

db_tests!(
    recordings_on_every_store,
    octet_stream_recordings_are_told_by_their_bytes
);
