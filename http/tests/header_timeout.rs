//! The standalone server's header read timeout (`voiceplane_http::serve_service`) over raw
//! TCP: a connection that sends no header, part of one, or nothing after its last answer is
//! closed after `HEADER_READ_TIMEOUT`, while a slow answer and an idle HTTP/2 connection are
//! not; and at shutdown an idle HTTP/2 connection is sent away at once (the suite's
//! `server.rs` covers HTTP/1.1's, without a paused clock).
//!
//! Here rather than in the suite: pausing the clock needs tokio's `test-util`, which puts a
//! mutex in tokio's clock, and the suite's dev-dependencies are those of the benches' builds
//! too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod support;
use support::read_until;

/// A service that answers `hello` to anything, after `delay`, in as many frames as `frames`
/// says, `delay` apart (the clock is paused in these tests, so the delays take no real time).
#[derive(Clone, Copy)]
struct Hello {
    delay: Duration,
    frames: usize,
}

impl Hello {
    const AT_ONCE: Hello = Hello {
        delay: Duration::ZERO,
        frames: 1,
    };
}

/// `frames` frames, `delay` apart: dots, then `hello`.
struct HelloBody {
    frames: usize,
    delay: Duration,
    sent: usize,
    pause: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl hyper::body::Body for HelloBody {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>> {
        if self.sent == self.frames {
            return std::task::Poll::Ready(None);
        }
        if let Some(pause) = &mut self.pause {
            std::task::ready!(pause.as_mut().poll(cx));
        }
        self.sent += 1;
        let delay = self.delay;
        self.pause = Some(Box::pin(tokio::time::sleep(delay)));
        let text = if self.sent == self.frames {
            "hello"
        } else {
            "."
        };
        std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(bytes::Bytes::from(text)))))
    }
}

impl<B> tower_service::Service<http::Request<B>> for Hello {
    type Response = http::Response<HelloBody>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: http::Request<B>) -> Self::Future {
        let Hello { delay, frames } = *self;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(http::Response::new(HelloBody {
                frames,
                delay,
                sent: 0,
                pause: None,
            }))
        })
    }
}

/// `service` served on a fresh port, with its address and what stops it.
async fn serve_paused(
    service: Hello,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(voiceplane_http::serve_service(listener, service, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

/// Reads `conn` to its end (the server closing it); returns when that happened and what came.
async fn read_to_close(
    conn: &mut (impl tokio::io::AsyncRead + Unpin),
) -> (tokio::time::Instant, String) {
    let mut text = Vec::new();
    let mut chunk = [0u8; 1024];
    let read = async {
        loop {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(TIMEOUT * 4, read)
        .await
        .expect("the server closes the connection");
    (
        tokio::time::Instant::now(),
        String::from_utf8_lossy(&text).into_owned(),
    )
}

const TIMEOUT: Duration = voiceplane_http::HEADER_READ_TIMEOUT;

/// Protocol detection (HTTP/1.1 or h2c) waits for the first bytes: a client that connects and
/// sends nothing is still disconnected after the header read timeout. The clock is paused
/// and jumps ahead while the runtime is idle, so the tests of the timeout take no real time;
/// that is why they serve a bare service and not a `TestServer`, whose database pool would
/// see its own timeouts jump too.
#[tokio::test(start_paused = true)]
async fn a_silent_connection_is_closed_after_the_header_read_timeout() {
    let (addr, stop, server) = serve_paused(Hello::AT_ONCE).await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let start = tokio::time::Instant::now();
    let (closed, text) = read_to_close(&mut silent).await;
    assert_eq!(text, "", "closed without an answer");
    assert!(
        closed - start >= TIMEOUT,
        "closed after {:?}",
        closed - start
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// A client that sends part of a header and then nothing (slowloris), or that drips its
/// header a byte at a time, is disconnected once the header read timeout has passed since
/// it began: the bytes it sends do not restart the clock.
#[tokio::test(start_paused = true)]
async fn a_header_sent_too_slowly_is_cut_off_at_the_header_read_timeout() {
    let (addr, stop, server) = serve_paused(Hello::AT_ONCE).await;

    let mut partial = TcpStream::connect(addr).await.unwrap();
    let start = tokio::time::Instant::now();
    partial
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (closed, text) = read_to_close(&mut partial).await;
    assert_eq!(text, "", "closed without an answer");
    let waited = closed - start;
    assert!(
        waited >= TIMEOUT && waited < TIMEOUT * 2,
        "closed after {waited:?}"
    );

    let dripping = TcpStream::connect(addr).await.unwrap();
    let start = tokio::time::Instant::now();
    let (mut reader, mut writer) = dripping.into_split();
    let drip = tokio::spawn(async move {
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: ".iter().cycle() {
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(TIMEOUT / 10).await;
        }
    });
    let (closed, text) = read_to_close(&mut reader).await;
    let waited = closed - start;
    assert_eq!(text, "", "closed without an answer");
    assert!(
        waited >= TIMEOUT && waited <= TIMEOUT + TIMEOUT / 5,
        "closed after {waited:?}"
    );
    drip.abort();

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// After an answer, a keep-alive connection must send its next request's header within the
/// timeout too.
#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_read_timeout() {
    let (addr, stop, server) = serve_paused(Hello::AT_ONCE).await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    for _ in 0..2 {
        conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut conn, "hello").await;
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        // Most of the timeout, then the next request: each one has a timeout of its own.
        tokio::time::sleep(TIMEOUT * 9 / 10).await;
    }
    let answered = tokio::time::Instant::now() - TIMEOUT * 9 / 10;
    let (closed, text) = read_to_close(&mut conn).await;
    assert_eq!(text, "", "closed without a further answer");
    let idle = closed - answered;
    assert!(
        idle >= TIMEOUT && idle < TIMEOUT * 2,
        "closed after {idle:?} idle"
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// The timeout is the header's alone: an answer that takes several times as long to begin,
/// and then to stream, reaches the client whole, and the connection serves the next request.
#[tokio::test(start_paused = true)]
async fn a_slow_answer_is_not_cut_off_by_the_header_read_timeout() {
    let (addr, stop, server) = serve_paused(Hello {
        delay: TIMEOUT * 2,
        frames: 3,
    })
    .await;
    let mut conn = TcpStream::connect(addr).await.unwrap();
    for _ in 0..2 {
        let start = tokio::time::Instant::now();
        conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut conn, "hello").await;
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(tokio::time::Instant::now() - start >= TIMEOUT * 6);
    }
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// An HTTP/2 client of the server at `addr` (h2c with prior knowledge), and the task driving
/// its connection.
async fn h2c(
    addr: std::net::SocketAddr,
) -> (
    hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>,
    tokio::task::JoinHandle<hyper::Result<()>>,
) {
    let conn = TcpStream::connect(addr).await.unwrap();
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(conn),
    )
    .await
    .unwrap();
    (sender, tokio::spawn(connection))
}

/// Sends `GET /` over `sender` and checks that `Hello` answers it.
async fn get_hello(
    sender: &mut hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>,
    addr: std::net::SocketAddr,
) {
    let request = http::Request::get(format!("http://{addr}/"))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&body[..], b"hello");
}

/// An HTTP/2 connection (h2c with prior knowledge) is not held to HTTP/1.1's header timeout:
/// it may stay idle between requests (its pings tell whether the peer is still there).
#[tokio::test(start_paused = true)]
async fn an_idle_http2_connection_stays_open() {
    let (addr, stop, server) = serve_paused(Hello::AT_ONCE).await;
    let (mut sender, driving) = h2c(addr).await;
    for _ in 0..2 {
        get_hello(&mut sender, addr).await;
        tokio::time::sleep(TIMEOUT * 3).await;
    }
    drop(sender);
    driving.abort();
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// At shutdown an idle HTTP/2 connection is told to go away at once: the server returns
/// without waiting for anything else to wake the connection. (The clock is paused and moves
/// on by itself while everything waits, so a connection nobody told shows as the time until
/// its next timer, or the whole grace period, gone by.)
#[tokio::test(start_paused = true)]
async fn shutdown_sends_an_idle_http2_connection_away_at_once() {
    let (addr, stop, server) = serve_paused(Hello::AT_ONCE).await;
    let (mut sender, driving) = h2c(addr).await;
    get_hello(&mut sender, addr).await;
    // Idle after its request, for less than its keep-alive interval: nothing but the drain
    // wakes the connection before its next ping, due 30 s after its last activity.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let asked = tokio::time::Instant::now();
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "the server waited {:?} for an idle connection",
        asked.elapsed()
    );
    drop(sender);
    driving.abort();
}

/// Answers `101` and then echoes what the upgraded connection sends.
#[derive(Clone, Copy)]
struct Echo;

impl<B: Send + 'static> tower_service::Service<http::Request<B>> for Echo {
    type Response = http::Response<http_body_util::Empty<bytes::Bytes>>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let upgrading = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            let Ok(upgraded) = upgrading.await else {
                return;
            };
            let mut io = hyper_util::rt::TokioIo::new(upgraded);
            let mut buf = [0u8; 64];
            while let Ok(n) = io.read(&mut buf).await {
                if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        });
        Box::pin(async {
            let mut answer = http::Response::new(http_body_util::Empty::new());
            *answer.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
            answer.headers_mut().insert(
                http::header::UPGRADE,
                http::HeaderValue::from_static("echo"),
            );
            answer.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("upgrade"),
            );
            Ok(answer)
        })
    }
}

/// A connection that switched protocols (a call's media WebSocket) is no longer waiting for
/// a request header: it stays open however long it is quiet (calls last minutes).
#[tokio::test(start_paused = true)]
async fn an_upgraded_connection_outlives_the_header_read_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(voiceplane_http::serve_service(listener, Echo, async {
        let _ = stopped.await;
    }));
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(
        b"GET /media HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
    )
    .await
    .unwrap();
    let text = read_until(&mut conn, "\r\n\r\n").await;
    assert!(text.starts_with("HTTP/1.1 101 "), "{text}");
    for _ in 0..3 {
        tokio::time::sleep(TIMEOUT * 2).await;
        conn.write_all(b"ping").await.unwrap();
        assert_eq!(read_until(&mut conn, "ping").await, "ping");
    }
    drop(conn);
    stop.send(()).unwrap();
    let _ = tokio::time::timeout(TIMEOUT, server).await;
}
