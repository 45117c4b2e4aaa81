//! A standalone HTTP/1.1 server for an [`Api`]: accept loop, per-connection tasks, graceful
//! shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::Api;

/// A client must send a request's complete header within this time, or its connection is
/// closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// After shutdown is requested, in-flight connections get at most this long to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Pause after an accept error that is not about one connection (e.g. too many open files),
/// so that the loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Serves `api` over HTTP/1.1 on `listener` until `shutdown` resolves.
///
/// Each connection runs in its own task with `TCP_NODELAY` set and a header read timeout of
/// [`HEADER_READ_TIMEOUT`]. Accept errors are logged and the loop goes on (after a short
/// pause for errors such as `EMFILE`). When `shutdown` resolves the listener is closed, idle
/// keep-alive connections are closed, and requests in flight are allowed to finish for up to
/// [`SHUTDOWN_GRACE`]; then the function returns.
pub async fn serve(
    listener: TcpListener,
    api: Api,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
                    }
                    let api = api.clone();
                    let service = service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                        // The client's address, for the per-IP limit of failed authentications.
                        req.extensions_mut().insert(peer);
                        let api = api.clone();
                        async move { Ok::<_, Infallible>(api.handle(req).await) }
                    });
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
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

/// Errors that concern one incoming connection only; the next accept is fine.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
