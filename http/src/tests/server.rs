//! The standalone server: requests over TCP, and graceful shutdown with idle connections and
//! with a request in flight.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::Fixture;
use crate::{Api, serve};

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

/// Serves `api` on a fresh port until the returned sender fires.
async fn start(
    api: Api,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, api, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

#[tokio::test]
async fn serves_and_shuts_down_gracefully() {
    let (addr, stop, server) = start(Fixture::new().await.api).await;

    // A keep-alive connection that stays open and idle after its request.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let text = read_until(&mut idle, r#"{"status":"ok"}"#).await;
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("content-type: application/json"), "{text}");

    // Another request with a JSON error.
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET /api/tools HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let text = read_until(&mut conn, "\u{0}never").await;
    assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{text}");
    assert!(text.contains("cache-control: no-store"), "{text}");

    // Shutdown closes the idle connection and returns well within the grace period.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns promptly")
        .unwrap()
        .unwrap();
    let mut rest = Vec::new();
    let n = idle.read_to_end(&mut rest).await.unwrap_or(0);
    assert_eq!(n, 0, "the idle connection was closed");
    assert!(TcpStream::connect(addr).await.is_err(), "listener closed");
}

#[tokio::test]
async fn shutdown_lets_a_request_in_flight_finish() {
    let fx = Fixture::new().await;
    let (addr, stop, server) = start(fx.api.clone()).await;

    // An authenticated upload whose body is held back: with `Expect: 100-continue` the server
    // answers `100 Continue` when the handler starts reading the body, so the request is
    // inside the handler when shutdown starts.
    let body = r#"{"name": "faq", "text": "hello"}"#;
    let head = format!(
        "POST /api/knowledge-base HTTP/1.1\r\nHost: x\r\nx-api-key: {}\r\n\
         x-organization-id: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nexpect: 100-continue\r\n\r\n",
        fx.admin_key,
        fx.org,
        body.len()
    );
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(head.as_bytes()).await.unwrap();
    let text = read_until(&mut conn, "\r\n\r\n").await;
    assert!(text.starts_with("HTTP/1.1 100 Continue\r\n"), "{text}");

    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !server.is_finished(),
        "serve waits for the request in flight"
    );
    conn.write_all(body.as_bytes()).await.unwrap();

    let text = read_until(&mut conn, r#""type":"text""#).await;
    assert!(text.starts_with("HTTP/1.1 201 Created\r\n"), "{text}");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns once the request is done")
        .unwrap()
        .unwrap();
}

/// A service other than `Api`, as a tower-layered stack would be: answers `hello`.
#[derive(Clone)]
struct Hello;

impl tower_service::Service<http::Request<hyper::body::Incoming>> for Hello {
    type Response = http::Response<http_body_util::Full<bytes::Bytes>>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: http::Request<hyper::body::Incoming>) -> Self::Future {
        std::future::ready(Ok(http::Response::new(http_body_util::Full::from("hello"))))
    }
}

#[tokio::test]
async fn serve_service_serves_any_tower_service() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::serve_service(listener, Hello, async {
        let _ = stopped.await;
    }));
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let text = read_until(&mut conn, "\u{0}never").await;
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nhello"), "{text}");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// Protocol detection (HTTP/1.1 or h2c) waits for the first bytes: a client that connects and
/// sends nothing is still disconnected after the header read timeout. The clock is paused
/// and jumps ahead while the runtime is idle, so the test takes no real time.
#[tokio::test(start_paused = true)]
async fn a_silent_connection_is_closed_after_the_header_read_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::serve_service(listener, Hello, async {
        let _ = stopped.await;
    }));
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let start = tokio::time::Instant::now();
    let mut buf = [0u8; 64];
    let n = silent.read(&mut buf).await.unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(
        start.elapsed() >= crate::HEADER_READ_TIMEOUT,
        "closed after {:?}",
        start.elapsed()
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
