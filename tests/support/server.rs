//! The HTTP API of a test's service on a real listener: [`TestServer`] serves it on
//! `127.0.0.1:0` (optionally with a changed copy of the service), and [`http_client`] is the
//! client that talks to it.

use std::sync::Arc;

use voiceplane_core::Service;

use crate::TestContext;

/// A reqwest client for talking to test servers. reqwest shares the workspace's rustls build,
/// which carries no default crypto provider: this installs ring's first, as the server does.
pub fn http_client() -> reqwest::Client {
    voiceplane_clients::install_crypto_provider();
    reqwest::Client::new()
}

/// The HTTP API of a [`TestContext`]'s service, served on `127.0.0.1:0`.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// Starts serving `ctx.service` with the default HTTP settings.
    pub async fn start(ctx: &TestContext) -> Self {
        Self::start_with(ctx, voiceplane_http::HttpConfig::default()).await
    }

    /// Starts serving `ctx.service` with `config`.
    pub async fn start_with(ctx: &TestContext, config: voiceplane_http::HttpConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let base = format!("http://{}", listener.local_addr().expect("bound address"));
        let api = voiceplane_http::Api::new(ctx.service.clone()).with_config(config);
        Self::serve(listener, base, api)
    }

    /// Starts serving `service` (e.g. [`TestContext::another_instance`]) with the default
    /// HTTP settings.
    pub async fn start_service(service: Arc<Service>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let base = format!("http://{}", listener.local_addr().expect("bound address"));
        Self::serve(listener, base, voiceplane_http::Api::new(service))
    }

    fn serve(listener: tokio::net::TcpListener, base: String, api: voiceplane_http::Api) -> Self {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(voiceplane_http::serve(listener, api, async move {
            let _ = rx.await;
        }));
        Self {
            base,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// Starts serving a changed copy of `ctx.service` (`configure` gets the server's base URL)
    /// with the web console in front of the API, as the binary does.
    pub async fn start_with_console(
        ctx: &TestContext,
        configure: impl FnOnce(Service, &str) -> Service,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let base = format!("http://{}", listener.local_addr().expect("bound address"));
        let service = Arc::new(configure(Service::clone(&ctx.service), &base));
        let app = voiceplane_http::WithConsole::new(voiceplane_http::Api::new(service), true);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(voiceplane_http::serve_service(listener, app, async move {
            let _ = rx.await;
        }));
        Self {
            base,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// Starts serving `ctx.service` through the adapter as `build` changes it, e.g. with rate
    /// limits: `TestServer::start_api(ctx, |api| api.with_rate_limits(limits))`.
    pub async fn start_api(
        ctx: &TestContext,
        build: impl FnOnce(voiceplane_http::Api) -> voiceplane_http::Api,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let base = format!("http://{}", listener.local_addr().expect("bound address"));
        let api = build(voiceplane_http::Api::new(ctx.service.clone()));
        Self::serve(listener, base, api)
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The address it listens on, for tests that speak raw TCP.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.base
            .trim_start_matches("http://")
            .parse()
            .expect("base is http://IP:PORT")
    }

    /// Starts shutting down without waiting: the listener closes, idle connections close, and
    /// requests in flight go on. [`stop`](Self::stop) waits for the server to return.
    pub fn shut_down(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Whether the server has returned (after [`shut_down`](Self::shut_down)).
    pub fn has_returned(&self) -> bool {
        self.task.as_ref().is_none_or(|task| task.is_finished())
    }

    /// Stops accepting, lets in-flight requests finish, and waits for the server to return.
    pub async fn stop(mut self) {
        self.shut_down();
        if let Some(task) = self.task.take() {
            task.await
                .expect("server task")
                .expect("server returns cleanly");
        }
    }
}

impl TestServer {
    /// Starts serving a copy of `ctx.service` changed by `configure`, e.g. with voice
    /// providers: `TestServer::start_configured(ctx, |s| s.with_voice_providers(p))`. The copy
    /// shares `ctx`'s database, clock and JWT settings, so keys made through `ctx` work.
    pub async fn start_configured(
        ctx: &TestContext,
        configure: impl FnOnce(Service) -> Service,
    ) -> Self {
        Self::start_at(ctx, voiceplane_http::HttpConfig::default(), |s, _| {
            configure(s)
        })
        .await
    }

    /// Like [`start_configured`](Self::start_configured), with the adapter's `config`, and
    /// with the server's own base URL given to `configure` (for `voiceplane_http::Api::recording_links`).
    pub async fn start_at(
        ctx: &TestContext,
        config: voiceplane_http::HttpConfig,
        configure: impl FnOnce(Service, &str) -> Service,
    ) -> Self {
        Self::start_built(ctx, configure, |api| api.with_config(config)).await
    }

    /// Like [`start_at`](Self::start_at), with the adapter as `build` changes it (rate
    /// limits, say).
    pub async fn start_built(
        ctx: &TestContext,
        configure: impl FnOnce(Service, &str) -> Service,
        build: impl FnOnce(voiceplane_http::Api) -> voiceplane_http::Api,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let base = format!("http://{}", listener.local_addr().expect("bound address"));
        let service = Arc::new(configure(Service::clone(&ctx.service), &base));
        let api = build(voiceplane_http::Api::new(service));
        Self::serve(listener, base, api)
    }
}
