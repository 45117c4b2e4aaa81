//! A standalone server for an [`Api`], or for any tower service over hyper's request type:
//! HTTP/1.1 and HTTP/2 (h2c with prior knowledge) on one port, accept loop, per-connection
//! tasks, graceful shutdown.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

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
/// [`HEADER_READ_TIMEOUT`] of the connection opening or of its previous answer being sent,
/// and a connection that sends no byte within that time is closed.
/// Each connection calls its own clone of the service, cloned again for a request only when it
/// is not ready (`poll_ready`) at once. Accept errors are logged and the loop goes on (after a
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
    let drain = Drain::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The header read timeout is the connection's own (`HeaderDeadline`), not hyper's.
    builder.http1().header_read_timeout(None).keep_alive(true);
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
                    let activity = Arc::new(Activity::new());
                    let io = TokioIo::new(HeaderDeadline::new(stream, Arc::clone(&activity)));
                    let service = PerConnection {
                        inner: std::cell::RefCell::new(service.clone()),
                        peer,
                        activity,
                    };
                    let connection = builder
                        .serve_connection_with_upgrades(io, service)
                        .into_owned();
                    let connection = drain.watch(connection, |c| c.graceful_shutdown());
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
    let open = drain.connections();
    tracing::info!(connections = open, "shutting down; draining connections");
    match tokio::time::timeout(SHUTDOWN_GRACE, drain.start()).await {
        Ok(()) => tracing::info!("all connections closed"),
        Err(_) => tracing::warn!(
            grace_secs = SHUTDOWN_GRACE.as_secs(),
            "connections still open after the grace period; giving up on them"
        ),
    }
    Ok(())
}

/// The server's drain, which each connection watches to shut down gracefully when it
/// begins: hyper-util's `GracefulShutdown`, except that a connection looks at the watch only
/// once before the drain begins. hyper-util's polled it at every wake of the connection, which
/// is every request (about 200 instructions of each, a hundredth of a `/healthz`); here a
/// connection reads a flag that only the drain writes.
struct Drain {
    started: Arc<AtomicBool>,
    /// Sends once, when the drain begins; each connection holds a receiver until it ends.
    begun: watch::Sender<()>,
}

impl Drain {
    fn new() -> Self {
        Self {
            started: Arc::new(AtomicBool::new(false)),
            begun: watch::channel(()).0,
        }
    }

    /// `connection`, shut down by `graceful` when the drain begins.
    fn watch<C: Future>(
        &self,
        connection: C,
        graceful: fn(Pin<&mut C>),
    ) -> impl Future<Output = C::Output> + use<C> {
        let started = Arc::clone(&self.started);
        let mut begun = self.begun.subscribe();
        async move {
            // Outside tokio's budget, so that its first poll surely registers the task's
            // waker with the watch, where it stays: the drain wakes the task, which then sees
            // the flag and polls this again.
            let told = tokio::task::unconstrained(async move {
                let _ = begun.changed().await;
                begun
            });
            let mut told = std::pin::pin!(told);
            let mut connection = std::pin::pin!(connection);
            let mut registered = false;
            // The receiver once told, kept until the connection ends: the drain waits for it.
            let mut draining = None;
            std::future::poll_fn(|cx| {
                if draining.is_none() && (!registered || started.load(Ordering::Acquire)) {
                    match told.as_mut().poll(cx) {
                        Poll::Ready(receiver) => {
                            draining = Some(receiver);
                            graceful(connection.as_mut());
                        }
                        Poll::Pending => registered = true,
                    }
                }
                connection.as_mut().poll(cx)
            })
            .await
        }
    }

    /// The connections being watched.
    fn connections(&self) -> usize {
        self.begun.receiver_count()
    }

    /// Tells every connection to shut down gracefully, and waits until all have ended.
    async fn start(self) {
        self.started.store(true, Ordering::Release);
        let _ = self.begun.send(());
        self.begun.closed().await;
    }
}

/// What a connection's requests are doing: shared by its IO, which enforces
/// [`HEADER_READ_TIMEOUT`], and its service, which sees each request begin and its answer end.
///
/// The timeout used to be hyper's own (`header_read_timeout`), which arms a timer for every
/// request: a boxed `Sleep` put into tokio's timer wheel when the connection waits for the
/// next request and taken out when its header arrives, about 900 instructions of a
/// `/healthz` that raw hyper does not spend (benches/README.md). Here a connection has one
/// timer, moved only when it fires before the deadline it stands for.
struct Activity {
    opened: Instant,
    /// Requests whose answer has not been sent whole.
    in_flight: AtomicUsize,
    /// Since when the connection has had nothing in flight: when it opened or when its last
    /// answer was sent whole, in nanoseconds after `opened`.
    idle_since: AtomicU64,
    /// Whether it switched protocols (a WebSocket): no request header follows, so the header
    /// deadline no longer applies (a call's media stream lasts as long as the call).
    upgraded: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            upgraded: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn is_answering(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// When the header of the next request must have arrived.
    fn header_deadline(&self) -> Instant {
        self.opened
            + Duration::from_nanos(self.idle_since.load(Ordering::Relaxed))
            + HEADER_READ_TIMEOUT
    }
}

/// One request of a connection in flight: its answer is sent whole when this is dropped (with
/// the answer's body, or with the service's future when it ends without one).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        let idle_since = u64::try_from(activity.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
        activity.idle_since.fetch_max(idle_since, Ordering::Relaxed);
        activity.in_flight.fetch_sub(1, Ordering::Release);
    }
}

/// What the first bytes of a connection showed: HTTP/2's preface starts with `PRI`, which
/// no HTTP/1.1 method does.
#[derive(Clone, Copy)]
enum Protocol {
    /// This many bytes of `PRI` seen so far.
    Unknown(usize),
    Http1,
    Http2,
}

const HTTP2_PREFACE_START: &[u8] = b"PRI";

/// A connection that fails a read with `TimedOut` once it has waited longer than
/// [`HEADER_READ_TIMEOUT`] for a request's header: from when it opened, or from when its last
/// answer was sent whole, for as long as no request is in flight. That covers a client that
/// connects and sends nothing (hyper-util's protocol detection reads the first bytes without
/// a timer), one that sends part of a header and stops or drips it, and an idle keep-alive
/// connection. HTTP/2 connections are exempt once their preface shows: between requests they
/// are idle by design, and their pings find a peer that is gone.
struct HeaderDeadline {
    stream: TcpStream,
    activity: Arc<Activity>,
    /// Fires at or before the header deadline.
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The task the timer wakes, once polled.
    armed_for: Option<std::task::Waker>,
    protocol: Protocol,
}

impl HeaderDeadline {
    fn new(stream: TcpStream, activity: Arc<Activity>) -> Self {
        let timer = Box::pin(tokio::time::sleep_until(activity.header_deadline()));
        Self {
            stream,
            activity,
            timer,
            armed_for: None,
            protocol: Protocol::Unknown(0),
        }
    }

    fn sniff(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            let Protocol::Unknown(seen) = self.protocol else {
                return;
            };
            self.protocol = if byte != HTTP2_PREFACE_START[seen] {
                Protocol::Http1
            } else if seen + 1 == HTTP2_PREFACE_START.len() {
                Protocol::Http2
            } else {
                Protocol::Unknown(seen + 1)
            };
        }
    }

    /// Whether the header deadline has passed; when it has not, the task is woken at it (or
    /// earlier, to look again).
    ///
    /// The timer stays armed while a request is in flight too. hyper may read (and find
    /// nothing) before the answer is done, and not read again until something wakes the
    /// connection: were the timer left alone then, an idle keep-alive connection would never
    /// be closed. Once armed for this task it is not polled again until it has fired.
    fn header_overdue(&mut self, cx: &mut Context<'_>) -> bool {
        if matches!(self.protocol, Protocol::Http2)
            || self.activity.upgraded.load(Ordering::Relaxed)
        {
            return false;
        }
        if !self.timer.is_elapsed()
            && self
                .armed_for
                .as_ref()
                .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return false;
        }
        // The deadline only moves later, so the timer fires at or before it; only then is it
        // moved, not at every request.
        while self.timer.as_mut().poll(cx).is_ready() {
            let deadline = if self.activity.is_answering() {
                // Looked at again a timeout later, or when the answer is sent.
                Instant::now() + HEADER_READ_TIMEOUT
            } else {
                let deadline = self.activity.header_deadline();
                if Instant::now() >= deadline {
                    return true;
                }
                deadline
            };
            self.timer.as_mut().reset(deadline);
        }
        self.armed_for = Some(cx.waker().clone());
        false
    }
}

impl AsyncRead for HeaderDeadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        match polled {
            Poll::Ready(Ok(())) if matches!(this.protocol, Protocol::Unknown(_)) => {
                this.sniff(&buf.filled()[before..]);
            }
            Poll::Pending if this.header_overdue(cx) => {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no request header within the header read timeout",
                )));
            }
            _ => {}
        }
        polled
    }
}

impl AsyncWrite for HeaderDeadline {
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

/// `inner` for one connection: puts the connection's peer address in each request's
/// extensions, where the adapter's per-IP limit of failed authentications reads it, and tells
/// the connection's [`Activity`] when each request begins and when its answer has been sent.
struct PerConnection<S> {
    inner: std::cell::RefCell<S>,
    peer: std::net::SocketAddr,
    activity: Arc<Activity>,
}

impl<S, ResBody> hyper::service::Service<Request<Incoming>> for PerConnection<S>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<ResBody>> + Clone,
    S::Error: Into<BoxError>,
{
    type Response = Response<Answer<ResBody>>;
    type Error = BoxError;
    type Future = Answering<Calling<S, Request<Incoming>>>;

    /// Calls the connection's own copy of the service when it is ready, as a service
    /// built of layers always is. hyper-util's adapter (`TowerToHyperService`) cloned the
    /// whole stack for every request instead, to wait for its readiness in the request's
    /// future: each `Arc` in it counted up and down again, on counts that every core shares.
    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let extensions = req.extensions_mut();
        if extensions.is_empty() {
            // One whose map is allocated already, when an earlier request left one.
            *extensions = crate::recycle::extensions();
        }
        extensions.insert(self.peer);
        let in_flight = InFlight::begin(&self.activity);
        // hyper calls a connection's service from the connection's task, one call at a time,
        // and nothing here calls back into it: the borrow cannot be taken twice.
        let mut inner = self.inner.borrow_mut();
        let mut asked = Context::from_waker(std::task::Waker::noop());
        let calling = match inner.poll_ready(&mut asked) {
            Poll::Ready(Ok(())) => Calling::Now {
                future: inner.call(req),
            },
            Poll::Ready(Err(error)) => Calling::Failed {
                error: Some(error.into()),
            },
            // Not ready: the request waits on a clone of its own, with its own waker, as
            // hyper-util's adapter does (which clones what it is given). The copy that was
            // asked may hold a half-made reservation (a permit it is queued for) that only
            // its next poll would complete: it is dropped here, which releases it, and the
            // connection keeps a fresh clone.
            Poll::Pending => {
                let fresh = inner.clone();
                let asked = std::mem::replace(&mut *inner, fresh);
                Calling::Later {
                    future: TowerToHyperService::new(asked).call(req),
                }
            }
        };
        Answering {
            inner: calling,
            in_flight: Some(in_flight),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request given to the service behind [`PerConnection`].
    #[project = CallingProjection]
    enum Calling<S, R>
    where
        S: tower_service::Service<R>,
    {
        /// Called at once: the service was ready.
        Now { #[pin] future: S::Future },
        /// The service failed when asked whether it was ready.
        Failed { error: Option<BoxError> },
        /// Waiting on a clone for the service to be ready.
        Later { #[pin] future: TowerToHyperServiceFuture<S, R> },
    }
}

impl<S, R> Future for Calling<S, R>
where
    S: tower_service::Service<R>,
    S::Error: Into<BoxError>,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CallingProjection::Now { future } => future.poll(cx).map_err(Into::into),
            CallingProjection::Later { future } => future.poll(cx).map_err(Into::into),
            CallingProjection::Failed { error } => match error.take() {
                Some(error) => Poll::Ready(Err(error)),
                None => panic!("a failed call polled after it was answered"),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`PerConnection`]: the inner service's, its answer's body wrapped in an
    /// [`Answer`].
    struct Answering<F> {
        #[pin]
        inner: F,
        in_flight: Option<InFlight>,
    }
}

impl<F, ResBody, E> Future for Answering<F>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
{
    type Output = Result<Response<Answer<ResBody>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        let in_flight = this.in_flight.take();
        if let (Ok(response), Some(in_flight)) = (&result, &in_flight)
            && response.status() == http::StatusCode::SWITCHING_PROTOCOLS
        {
            in_flight.0.upgraded.store(true, Ordering::Relaxed);
        }
        Poll::Ready(result.map(|response| response.map(|body| Answer { body, in_flight })))
    }
}

pin_project_lite::pin_project! {
    /// An answer's body: when hyper drops it, the answer has been sent (or never will be).
    struct Answer<B> {
        #[pin]
        body: B,
        in_flight: Option<InFlight>,
    }
}

impl<B: http_body::Body> http_body::Body for Answer<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
