//! The voiceplane API mounted under `/voice` inside an existing axum application that has
//! routes and middleware of its own.
//!
//! ```sh
//! cargo run --example axum_mount
//! curl -i http://127.0.0.1:3000/                 # the application's own route
//! curl -i http://127.0.0.1:3000/voice/healthz     # voiceplane, under the prefix
//! curl -i http://127.0.0.1:3000/voice/api/agents/agent_… -H "X-API-Key: vpk_…" -H "X-Organization-Id: org_…"
//! ```
//!
//! The voiceplane service is configured exactly like the `voiceplane` binary (defaults,
//! `./voiceplane.toml`, `VOICEPLANE_*` variables; `VOICEPLANE_LISTEN` is not used here: the
//! application listens on `127.0.0.1:3000`). Create an organization and a key with
//! `cargo run -p voiceplane -- bootstrap --org-name Acme --admin-email you@example.com`
//! against the same database.
//!
//! [`app`] builds the whole router; the suite's `mount` module includes this file and calls
//! it, so the router the test exercises is this one.

use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use voiceplane_core::Service;

/// The address the application listens on.
pub const LISTEN: &str = "127.0.0.1:3000";

/// The header the application's own middleware adds to every response, mounted ones included.
pub const APP_HEADER: &str = "x-served-by";

/// The application: its own routes `GET /` and `GET /about`, the voiceplane API under
/// `/voice` (`/voice/healthz`, `/voice/api/…`), and one middleware over all of them.
pub fn app(service: Arc<Service>) -> Router {
    Router::new()
        .route("/", get(|| async { "the existing application" }))
        .route(
            "/about",
            get(|| async { "an axum app with voiceplane under /voice" }),
        )
        // `nest_service` strips `/voice`, so the adapter sees `/api/…`, the paths it routes on.
        // Everything under the prefix, errors included, is answered by voiceplane: a JSON body
        // and an `X-Request-Id`.
        .nest_service("/voice", voiceplane_http::Api::new(service))
        // Layers added last wrap every route above, the mounted API included.
        .layer(middleware::from_fn(served_by))
}

/// The application's middleware: stamps [`APP_HEADER`] on every response.
async fn served_by(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert(APP_HEADER, HeaderValue::from_static("axum-mount-example"));
    response
}

#[tokio::main]
async fn main() -> ExitCode {
    // Held to the end of `main`: dropping it writes out the last lines.
    let _log = voiceplane_bin::init_tracing();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.report_line());
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run() -> Result<(), voiceplane_bin::Error> {
    use voiceplane_bin::Error;
    let config = voiceplane_bin::config::Config::load(None)?.config;
    let service = voiceplane_bin::build_service(&config).await?;
    let listener = tokio::net::TcpListener::bind(LISTEN)
        .await
        .map_err(|e| Error::Runtime(format!("cannot listen on {LISTEN}: {e}")))?;
    eprintln!("listening on http://{LISTEN}; voiceplane is under http://{LISTEN}/voice");
    axum::serve(listener, app(service))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Error::Runtime(format!("server failed: {e}")))
}
