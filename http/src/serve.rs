//! A standalone server for an [`Api`], or for any tower service over hyper's request type:
//! HTTP/1.1 and HTTP/2 (h2c with prior knowledge) on one port, accept loop, per-connection
//! tasks, graceful shutdown.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::{Api, BoxError};

/// A client must send a request's complete header within this time, or its connection is
/// closed. A connection that sends nothing at all is closed after this time too, whichever
/// protocol it would have spoken.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// After shutdown is requested, in-flight connections get at most this long to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Pause after an accept error that is not about one connection (e.g. too many open files),
/// so that the loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// How often an HTTP/2 connection with requests in flight pings its peer, and how long it
/// waits for the answer: a peer that vanished without closing is noticed and its streams
/// are dropped.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves `api` on `listener` until `shutdown` resolves: [`serve_service`] with the bare
/// adapter.
pub async fn serve(
    listener: TcpListener,
    api: Api,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    serve_service(listener, api, shutdown).await
}

/// Serves any tower service (e.g. an [`Api`] wrapped in tower layers) on `listener` until
/// `shutdown` resolves.
///
/// Each connection speaks HTTP/1.1, or HTTP/2 when it opens with the HTTP/2 preface (h2c
/// with prior knowledge; there is no `Upgrade: h2c` and no TLS here). It runs in its own
/// task with `TCP_NODELAY` set; an HTTP/1.1 client must send each request header within
/// [`HEADER_READ_TIMEOUT`], and a connection that sends no byte within that time is closed.
/// The service is cloned per request. Accept errors are logged and the loop goes on (after a
/// short pause for errors such as `EMFILE`). When `shutdown` resolves the listener is
/// closed, idle HTTP/1.1 keep-alive connections are closed, HTTP/2 connections get a
/// `GOAWAY`, and requests in flight are allowed to finish for up to [`SHUTDOWN_GRACE`]; then
/// the function returns.
pub async fn serve_service<S, B>(
    listener: TcpListener,
    service: S,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
                    }
                    let io = TokioIo::new(FirstByteDeadline::new(stream, HEADER_READ_TIMEOUT));
                    let service = WithPeer {
                        inner: service.clone(),
                        peer,
                    };
                    let connection = builder
                        .serve_connection(io, TowerToHyperService::new(service))
                        .into_owned();
                    let connection = graceful.watch(connection);
                    tokio::spawn(async move {
                        if let Err(e) = connection.await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                    });
                }
                Err(e) if is_connection_error(&e) => {
                    tracing::debug!(error = %e, "a connection failed while being accepted");
                }
                Err(e) => {
                    tracing::error!(error = %e, "accept failed; retrying shortly");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    let open = graceful.count();
    tracing::info!(connections = open, "shutting down; draining connections");
    match tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await {
        Ok(()) => tracing::info!("all connections closed"),
        Err(_) => tracing::warn!(
            grace_secs = SHUTDOWN_GRACE.as_secs(),
            "connections still open after the grace period; giving up on them"
        ),
    }
    Ok(())
}

/// A connection that fails its first read with `TimedOut` when no byte arrived within the
/// deadline. hyper-util's protocol detection reads the first bytes without a timer of its
/// own (HTTP/1.1's header timeout starts after it), so without this a client could hold a
/// connection, and its task, by connecting and sending nothing.
struct FirstByteDeadline {
    stream: TcpStream,
    /// Until the first byte arrives.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl FirstByteDeadline {
    fn new(stream: TcpStream, timeout: Duration) -> Self {
        Self {
            stream,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
        }
    }
}

impl AsyncRead for FirstByteDeadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if let Some(deadline) = &mut this.deadline {
            match polled {
                // A byte (or the end of the stream, which ends the connection anyway).
                Poll::Ready(_) => this.deadline = None,
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no request within the header read timeout",
                    )));
                }
                Poll::Pending => {}
            }
        }
        polled
    }
}

impl AsyncWrite for FirstByteDeadline {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// Errors that concern one incoming connection only; the next accept is fine.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// `inner` with the connection's peer address in each request's extensions, where the
/// adapter's per-IP limit of failed authentications reads it.
#[derive(Clone)]
struct WithPeer<S> {
    inner: S,
    peer: std::net::SocketAddr,
}

impl<S, B> tower_service::Service<Request<B>> for WithPeer<S>
where
    S: tower_service::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        req.extensions_mut().insert(self.peer);
        self.inner.call(req)
    }
}
