//! The standalone server (`voiceplane_http::serve`) over raw TCP: at shutdown idle keep-alive
//! connections and the listener close and a request in flight still gets its answer. (The
//! header read timeout is tested beside the server, in `http/tests/header_timeout.rs`, where
//! the clock can be paused without tokio's `test-util` in the benches' build.)
//!
//! Runs on SQLite only: the server does not depend on the database.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use voiceplane_suite::{TestContext, TestServer, eventually};

// The http crate's own server tests' helpers, read from their file: depending on that crate's
// tests would build it a second time.
#[path = "../../http/tests/support/mod.rs"]
mod support;
use support::read_until;

/// How long `serve` may take to return once nothing keeps it: far more than it needs, far
/// less than the 30 s grace it would give a connection that is still open.
const PROMPTLY: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_idle_connections_and_the_listener() {
    let ctx = TestContext::sqlite().await;
    let server = TestServer::start(&ctx).await;
    let addr = server.addr();

    // A keep-alive connection that stays open and idle after its request.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let text = read_until(&mut idle, r#"{"status":"ok"}"#).await;
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("content-type: application/json"), "{text}");

    // Another connection is served meanwhile.
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET /api/tools HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let text = read_until(&mut conn, "\u{0}never").await;
    assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{text}");

    // The idle connection does not hold the server for its grace period.
    tokio::time::timeout(PROMPTLY, server.stop())
        .await
        .expect("serve returns promptly");
    let mut rest = Vec::new();
    let n = idle.read_to_end(&mut rest).await.unwrap_or(0);
    assert_eq!(n, 0, "the idle connection was closed");
    assert!(TcpStream::connect(addr).await.is_err(), "listener closed");
    ctx.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_request_in_flight_finish() {
    let ctx = TestContext::sqlite().await;
    let boot = ctx.bootstrap("Acme").await;
    let mut server = TestServer::start(&ctx).await;
    let addr = server.addr();

    // An authenticated upload whose body is held back: with `Expect: 100-continue` the server
    // answers `100 Continue` when the handler starts reading the body, so the request is
    // inside the handler when shutdown starts.
    let body = r#"{"name": "faq", "text": "hello"}"#;
    let head = format!(
        "POST /api/knowledge-base HTTP/1.1\r\nHost: x\r\nx-api-key: {}\r\n\
         x-organization-id: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nexpect: 100-continue\r\n\r\n",
        boot.api_key,
        boot.organization_id,
        body.len()
    );
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(head.as_bytes()).await.unwrap();
    let text = read_until(&mut conn, "\r\n\r\n").await;
    assert!(text.starts_with("HTTP/1.1 100 Continue\r\n"), "{text}");

    server.shut_down();
    // Once the listener is gone the server is draining: it must still be waiting for the
    // request whose body has not arrived.
    eventually("the listener closes", || async {
        TcpStream::connect(addr).await.is_err()
    })
    .await;
    assert!(
        !server.has_returned(),
        "serve waits for the request in flight"
    );
    conn.write_all(body.as_bytes()).await.unwrap();

    let text = read_until(&mut conn, r#""type":"text""#).await;
    assert!(text.starts_with("HTTP/1.1 201 Created\r\n"), "{text}");
    tokio::time::timeout(PROMPTLY, server.stop())
        .await
        .expect("serve returns once the request is done");
    ctx.cleanup().await;
}
