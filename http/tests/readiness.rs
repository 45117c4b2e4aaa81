//! How the standalone server (`voiceplane_http::serve_service`) calls a tower service: each
//! connection calls its own clone while the service is ready, and a service that is not ready
//! (a concurrency limit, a buffer) still answers every request, on every connection, without
//! a connection holding back what another one waits for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

mod support;
use support::read_until;

/// Long enough for any answer here; reached only when one never comes.
const DEADLINE: Duration = Duration::from_secs(20);

type Answer = http::Response<http_body_util::Full<bytes::Bytes>>;
type Answering = Pin<Box<dyn Future<Output = Result<Answer, Infallible>> + Send>>;

fn hello() -> Answer {
    http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
        b"hello",
    )))
}

/// `service` served on a fresh port; the server stops when the test's runtime ends.
async fn serve<S>(service: S) -> std::net::SocketAddr
where
    S: tower_service::Service<http::Request<hyper::body::Incoming>, Response = Answer>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<voiceplane_http::BoxError>,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(voiceplane_http::serve_service(
        listener,
        service,
        std::future::pending(),
    ));
    addr
}

/// Sends a request on `conn`; what came back before the answer's `hello` or the connection's
/// end.
async fn request(conn: &mut TcpStream) -> String {
    conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::timeout(DEADLINE, read_until(conn, "hello"))
        .await
        .expect("an answer or the connection's end")
}

/// Sends `count` requests one after another on one keep-alive connection; each is answered.
async fn ask(addr: std::net::SocketAddr, count: usize) {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    for _ in 0..count {
        let text = request(&mut conn).await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    }
}

/// Always ready; counts its clones.
struct Counted(Arc<AtomicUsize>);

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(&self.0))
    }
}

impl<B> tower_service::Service<http::Request<B>> for Counted {
    type Response = Answer;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: http::Request<B>) -> Self::Future {
        Box::pin(async { Ok(hello()) })
    }
}

/// A ready service is cloned once for its connection, not for each request: every clone of a
/// stack counts each `Arc` in it up and down, on counts that all cores share.
#[tokio::test]
async fn a_ready_service_is_cloned_per_connection_not_per_request() {
    let clones = Arc::new(AtomicUsize::new(0));
    let addr = serve(Counted(Arc::clone(&clones))).await;
    ask(addr, 5).await;
    assert_eq!(
        clones.load(Ordering::Relaxed),
        1,
        "one clone for the connection"
    );
    ask(addr, 3).await;
    assert_eq!(clones.load(Ordering::Relaxed), 2, "and one for the next");
}

/// At most one request at a time across all clones, as tower's `ConcurrencyLimit` does it:
/// `poll_ready` acquires a permit, which the call holds until it has answered.
struct OneAtATime {
    permits: Arc<Semaphore>,
    acquiring: Option<Pin<Box<dyn Future<Output = OwnedSemaphorePermit> + Send>>>,
    permit: Option<OwnedSemaphorePermit>,
}

impl OneAtATime {
    fn new() -> Self {
        Self {
            permits: Arc::new(Semaphore::new(1)),
            acquiring: None,
            permit: None,
        }
    }
}

impl Clone for OneAtATime {
    /// A clone shares the permits, not what this one has acquired or is acquiring.
    fn clone(&self) -> Self {
        Self {
            permits: Arc::clone(&self.permits),
            acquiring: None,
            permit: None,
        }
    }
}

impl<B> tower_service::Service<http::Request<B>> for OneAtATime {
    type Response = Answer;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.permit.is_none() {
            let permits = Arc::clone(&self.permits);
            let acquiring = self.acquiring.get_or_insert_with(|| {
                Box::pin(async move { permits.acquire_owned().await.unwrap() })
            });
            let permit = std::task::ready!(acquiring.as_mut().poll(cx));
            self.acquiring = None;
            self.permit = Some(permit);
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: http::Request<B>) -> Self::Future {
        let permit = self.permit.take().expect("called when ready");
        Box::pin(async move {
            // Long enough for the other connections' requests to arrive and wait.
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop(permit);
            Ok(hello())
        })
    }
}

/// A service that is not ready at once still answers, and the copy a connection asked does
/// not keep the permit it was queued for: were it kept, the permit would wait in a connection
/// that is not asking (its request waits elsewhere), and every connection would stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_not_ready_at_once_answers_every_connection() {
    let addr = serve(OneAtATime::new()).await;
    let connections: Vec<_> = (0..4).map(|_| tokio::spawn(ask(addr, 5))).collect();
    for connection in connections {
        connection.await.unwrap();
    }
}

/// Fails when asked whether it is ready.
#[derive(Clone)]
struct Broken;

impl<B> tower_service::Service<http::Request<B>> for Broken {
    type Response = Answer;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Answer, std::io::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Err(std::io::Error::other("broken")))
    }

    fn call(&mut self, _req: http::Request<B>) -> Self::Future {
        unreachable!("never ready")
    }
}

/// A service that fails its readiness closes the connection without an answer, and the
/// server goes on accepting.
#[tokio::test]
async fn a_service_that_fails_readiness_closes_the_connection() {
    let addr = serve(Broken).await;
    for _ in 0..2 {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        assert_eq!(request(&mut conn).await, "", "no answer");
    }
}
