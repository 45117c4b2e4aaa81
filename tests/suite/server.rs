//! The standalone server (`voiceplane_http::serve`) over raw TCP: at shutdown idle keep-alive
//! connections and the listener close and a request in flight still gets its answer, and a
//! connection that never sends a byte is closed after the header read timeout.
//!
//! Runs on SQLite only: the server does not depend on the database.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use voiceplane_suite::{TestContext, TestServer, eventually};

/// How long `serve` may take to return once nothing keeps it: far more than it needs, far
/// less than the 30 s grace it would give a connection that is still open.
const PROMPTLY: Duration = Duration::from_secs(5);

/// Reads from `stream` until `needle` appears (or the peer closes); returns what was read.
async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if text.contains(needle) || n == 0 {
            return text;
        }
    }
}

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

/// A service that answers `hello` to anything.
#[derive(Clone)]
struct Hello;

impl<B> tower_service::Service<http::Request<B>> for Hello {
    type Response = http::Response<http_body_util::Full<bytes::Bytes>>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: http::Request<B>) -> Self::Future {
        std::future::ready(Ok(http::Response::new(http_body_util::Full::from("hello"))))
    }
}

/// Protocol detection (HTTP/1.1 or h2c) waits for the first bytes: a client that connects and
/// sends nothing is still disconnected after the header read timeout. The clock is paused
/// and jumps ahead while the runtime is idle, so the test takes no real time; that is why it
/// serves a bare service and not a `TestServer`, whose database pool would see its own
/// timeouts jump too.
#[tokio::test(start_paused = true)]
async fn a_silent_connection_is_closed_after_the_header_read_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(voiceplane_http::serve_service(listener, Hello, async {
        let _ = stopped.await;
    }));
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let start = tokio::time::Instant::now();
    let mut buf = [0u8; 64];
    let n = silent.read(&mut buf).await.unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(
        start.elapsed() >= voiceplane_http::HEADER_READ_TIMEOUT,
        "closed after {:?}",
        start.elapsed()
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
