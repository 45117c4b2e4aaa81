//! A phone line for the call tests: a server whose telephony goes to a fake provider that
//! records every request, a job runner beside it, an organization with a runtime URL, an agent,
//! an integration and a number; and the provider's side of the webhooks, signed as Twilio and
//! Telnyx sign them.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::{Method, StatusCode};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};
use voiceplane_clients::{HttpClient, HttpSettings, HttpTelephonyValidator, TelephonySettings};
use voiceplane_core::Service;
use voiceplane_core::jobs::RunnerConfig;
use voiceplane_core::service::DialSettings;
use voiceplane_core::telephony::signature::twilio_signature;
use voiceplane_suite::*;
use wiremock::{MockServer, Request};

pub(super) const SID: &str = "AC0123456789abcdef0123456789abcdef";
pub(super) const TOKEN: &str = "twilio-auth-token";
pub(super) const NUMBER: &str = "+14155550100";
pub(super) const CALLEE: &str = "+14155550199";
pub(super) const RUNTIME: &str = "wss://rt.example.com/media";
pub(super) const CONNECTION: &str = "1494404757140276705";
const SEED: [u8; 32] = [7; 32];

/// Which provider a line is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Provider {
    Twilio,
    Telnyx,
}

/// Telnyx's signing key of the tests.
fn telnyx_key() -> Ed25519KeyPair {
    Ed25519KeyPair::from_seed_unchecked(&SEED).expect("a 32-byte seed")
}

/// The base64 public key Telnyx shows its account.
pub(crate) fn telnyx_public_key() -> String {
    STANDARD.encode(telnyx_key().public_key().as_ref())
}

/// Telnyx's `telnyx-signature-ed25519` of `body` sent at `at` (Unix seconds).
pub(crate) fn telnyx_signature(at: &str, body: &str) -> String {
    let mut signed = format!("{at}|").into_bytes();
    signed.extend_from_slice(body.as_bytes());
    STANDARD.encode(telnyx_key().sign(&signed).as_ref())
}

/// The gateway of the tests: the real client at the fake provider, giving up on a request
/// after `timeout`.
pub(super) fn gateway(base: &str, timeout: Duration) -> Arc<HttpTelephonyValidator> {
    Arc::new(
        HttpTelephonyValidator::new(
            HttpClient::new(HttpSettings {
                connect_timeout: Duration::from_secs(2),
                request_timeout: timeout,
                ..HttpSettings::default()
            })
            .expect("valid HTTP settings"),
            TelephonySettings {
                twilio_base_url: base.to_owned(),
                telnyx_base_url: base.to_owned(),
            },
        )
        .expect("valid telephony settings"),
    )
}

/// A runner of `service`'s jobs that checks often.
pub(crate) struct Runner {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Runner {
    pub(crate) fn start(service: &Service, worker: &str) -> Self {
        let runner = service.job_runner(RunnerConfig {
            worker: worker.to_owned(),
            idle_check: Duration::from_millis(25),
            backoff_base: Duration::from_millis(50),
            ..RunnerConfig::default()
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(runner.run(async move {
            let _ = stopped.await;
        }));
        Self {
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the runner stops");
        }
    }
}

/// A line: the server, its fake provider, and what the organization holds.
pub(super) struct Line {
    pub(super) provider: MockServer,
    pub(super) server: TestServer,
    pub(super) service: Service,
    pub(super) c: ApiCaller,
    pub(super) integration_id: String,
    pub(super) number_id: String,
    pub(super) agent_id: String,
    runner: Option<Runner>,
}

/// `service` with telephony at `provider`, its webhooks under `base`.
pub(super) fn telephony_service(
    service: &Service,
    provider: &MockServer,
    base: &str,
    timeout: Duration,
) -> Service {
    Service::clone(service)
        .with_telephony_gateway(
            gateway(&provider.uri(), timeout),
            voiceplane_http::Api::telephony_webhooks(base),
        )
        .with_dial_settings(DialSettings {
            retry_delay: Duration::from_millis(20),
            ..DialSettings::default()
        })
}

/// Twilio's form post of `params` to `url` (on any instance), signed with `token`, to send.
pub(super) fn signed_twilio(
    url: String,
    token: &str,
    params: &[(String, String)],
) -> reqwest::RequestBuilder {
    let signature = twilio_signature(token, &url, params);
    http_client()
        .post(url)
        .header("x-twilio-signature", signature)
        .form(params)
}

impl Line {
    /// A line at `kind` with a job runner.
    pub(super) async fn open(ctx: &TestContext, kind: Provider) -> Self {
        Self::open_with(ctx, kind, Duration::from_secs(10), true).await
    }

    /// A line at `kind` whose gateway gives up after `timeout`, with a runner when `run_jobs`.
    pub(super) async fn open_with(
        ctx: &TestContext,
        kind: Provider,
        timeout: Duration,
        run_jobs: bool,
    ) -> Self {
        Self::open_built(ctx, kind, timeout, run_jobs, |api| api).await
    }

    /// A line whose adapter `build` changes (rate limits, say).
    pub(super) async fn open_built(
        ctx: &TestContext,
        kind: Provider,
        timeout: Duration,
        run_jobs: bool,
        build: impl FnOnce(voiceplane_http::Api) -> voiceplane_http::Api,
    ) -> Self {
        Self::open_configured(ctx, kind, timeout, run_jobs, |s| s, build).await
    }

    /// A line whose service `configure` changes, and its adapter `build`.
    pub(super) async fn open_configured(
        ctx: &TestContext,
        kind: Provider,
        timeout: Duration,
        run_jobs: bool,
        configure: impl FnOnce(Service) -> Service,
        build: impl FnOnce(voiceplane_http::Api) -> voiceplane_http::Api,
    ) -> Self {
        let provider = MockServer::start().await;
        let mut service = None;
        let server = TestServer::start_built(
            ctx,
            |_, base| {
                let s = configure(telephony_service(&ctx.service, &provider, base, timeout));
                service = Some(s.clone());
                s
            },
            build,
        )
        .await;
        let service = service.expect("the server was configured");
        let c = ApiCaller::bootstrap(ctx, &server, "Phone Co").await;
        let (status, body) = c
            .send(
                Method::PATCH,
                "/api/organization/settings",
                Some(json!({"runtime_stream_url": RUNTIME})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let integration = match kind {
            Provider::Twilio => twilio_body("Twilio", SID, TOKEN),
            Provider::Telnyx => json!({
                "name": "Telnyx", "provider": "telnyx", "category": "telephony",
                "credentials": {"api_key": "KEYtelnyx", "public_key": telnyx_public_key(),
                                "connection_id": CONNECTION}
            }),
        };
        let integration = c.create("/api/integrations", integration).await;
        let integration_id = integration["integration_id"].as_str().unwrap().to_owned();
        let mut agent = agent_body("Receptionist");
        agent["voicemail_detection"] = json!(true);
        let agent = c.create("/api/agents", agent).await;
        let agent_id = agent["agent_id"].as_str().unwrap().to_owned();
        let provider_name = match kind {
            Provider::Twilio => "twilio",
            Provider::Telnyx => "telnyx",
        };
        let number = c
            .create(
                "/api/phone-numbers",
                json!({"phone_number": NUMBER, "provider": provider_name,
                       "integration_id": integration_id, "assigned_agent_id": agent_id}),
            )
            .await;
        let number_id = number["phone_number_id"].as_str().unwrap().to_owned();
        let runner = run_jobs.then(|| Runner::start(&service, "line-runner"));
        Self {
            provider,
            server,
            service,
            c,
            integration_id,
            number_id,
            agent_id,
            runner,
        }
    }

    /// Starts a job runner (for a line opened without one).
    pub(super) fn run_jobs(&mut self) {
        if self.runner.is_none() {
            self.runner = Some(Runner::start(&self.service, "line-runner-late"));
        }
    }

    pub(super) async fn close(mut self) {
        if let Some(runner) = self.runner.take() {
            runner.stop().await;
        }
        self.server.stop().await;
    }

    /// The requests the provider received at `path`.
    pub(super) async fn sent_to(&self, path: &str) -> Vec<Request> {
        self.provider
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.url.path() == path)
            .collect()
    }

    /// Twilio's form post to `path` on this server, signed with `token`, to send.
    pub(super) fn twilio_request(
        &self,
        token: &str,
        path: &str,
        params: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let owned: Vec<(String, String)> = params
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        signed_twilio(self.server.url(path), token, &owned)
    }

    /// Twilio's form post to `path` on this server, signed with `token`.
    pub(super) async fn twilio_as(
        &self,
        token: &str,
        path: &str,
        params: &[(&str, &str)],
    ) -> reqwest::Response {
        self.twilio_request(token, path, params)
            .send()
            .await
            .expect("the webhook is answered")
    }

    /// Twilio's signed form post to `path` of this line's integration.
    pub(super) async fn twilio(&self, path: &str, params: &[(&str, &str)]) -> reqwest::Response {
        let path = format!("/telephony/twilio/{}{path}", self.integration_id);
        self.twilio_as(TOKEN, &path, params).await
    }

    /// Telnyx's event `event_type` with `payload`, signed now (by the service's clock) and
    /// shifted by `skew_secs`.
    pub(super) async fn telnyx_at(
        &self,
        ctx: &TestContext,
        event_type: &str,
        payload: Value,
        skew_secs: i64,
    ) -> reqwest::Response {
        let body =
            json!({"data": {"event_type": event_type, "id": format!("evt-{}", rand_suffix()),
                                   "occurred_at": "2026-01-01T00:00:00Z", "payload": payload}})
            .to_string();
        let at = (ctx.clock.peek().as_micros() / 1_000_000 + skew_secs).to_string();
        let signature = telnyx_signature(&at, &body);
        http_client()
            .post(
                self.server
                    .url(&format!("/telephony/telnyx/{}/events", self.integration_id)),
            )
            .header("content-type", "application/json")
            .header("telnyx-timestamp", at)
            .header("telnyx-signature-ed25519", signature)
            .body(body)
            .send()
            .await
            .expect("the webhook is answered")
    }

    /// Telnyx's event, signed now.
    pub(super) async fn telnyx(
        &self,
        ctx: &TestContext,
        event_type: &str,
        payload: Value,
    ) -> reqwest::Response {
        self.telnyx_at(ctx, event_type, payload, 0).await
    }

    /// The call `call_sid` as the API shows it.
    pub(super) async fn call(&self, call_sid: &str) -> Value {
        let (status, body) = self.c.get(&format!("/api/calls/{call_sid}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["data"].clone()
    }

    /// The calls of this line's number.
    pub(super) async fn calls(&self) -> Vec<Value> {
        let (status, body) = self
            .c
            .get(&format!("/api/calls?phone_number_id={}", self.number_id))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["data"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until the call `call_sid` satisfies `done`; answers it as it then is.
    pub(super) async fn call_until(
        &self,
        call_sid: &str,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        eventually(what, || async { done(&self.call(call_sid).await) }).await;
        self.call(call_sid).await
    }

    /// `POST /api/calls/dial` to the callee from this line's number.
    pub(super) async fn dial(&self, extra: Value) -> (StatusCode, Value) {
        let body = merged(
            json!({"agent_id": self.agent_id, "to_number": CALLEE,
                   "from_phone_number_id": self.number_id}),
            extra,
        );
        self.c.post("/api/calls/dial", body).await
    }
}

fn rand_suffix() -> u64 {
    rand::random()
}

/// The fields of a form body.
pub(super) fn form(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// The values of field `name` of `form`.
pub(super) fn field<'f>(form: &'f [(String, String)], name: &str) -> Vec<&'f str> {
    form.iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .collect()
}
