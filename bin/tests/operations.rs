//! What an operator sees of a running server: `GET /metrics` (Prometheus text format) counts
//! requests, jobs and webhook deliveries and shows the database pool; `metrics.enabled =
//! false` turns it off; and while the database is unreachable, or has terminated the server's
//! connections and refuses new ones, requests fail fast with 503 and `Retry-After`, and succeed
//! again as soon as it is back.
//!
//! The metrics tests run on the embedded default (a SQLite file) in the test's folder. The
//! database outage tests run on the schema of a Postgres `TestContext`:
//! `VOICEPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test`; without it, they
//! are skipped with a message, unless `VOICEPLANE_TEST_REQUIRE_POSTGRES=1` makes that a failure.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use voiceplane_suite::{TestContext, eventually};

use crate::support::{bootstrap_org, context, runtime, spawn_serve, voiceplane};

const MASTER_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// One sample of the text format: name, labels, value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the Prometheus text format: `# HELP`/`# TYPE` comments, and `name{l="v",…} value`
/// lines. Panics on any other line, so that the test also checks the format.
fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("`series value`");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("a number in {line:?}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("labels end with }");
                (name, parse_labels(body, line))
            }
        };
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !name.starts_with(|c: char| c.is_ascii_digit()),
            "a metric name in {line:?}"
        );
        samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    samples
}

fn parse_labels(body: &str, line: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("{line:?}"));
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => panic!("a dangling escape in {line:?}"),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => panic!("an unterminated label value in {line:?}"),
            }
        };
        labels.insert(key.trim_start_matches(',').to_owned(), value);
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    labels
}

/// The value of the sample `name` whose labels include `labels`; 0 when there is none
/// (a counter not yet incremented).
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map_or(0.0, |s| s.value)
}

fn has(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> bool {
    samples.iter().any(|s| {
        s.name == name
            && labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    })
}

/// `voiceplane bootstrap` with `env`: the organization id and the admin key.
fn bootstrap(dir: &Path, env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = voiceplane(dir);
    cmd.envs(env.iter().copied());
    bootstrap_org(cmd, "ops@example.com")
}

/// `voiceplane serve` with `env`; killed when dropped.
struct Server {
    child: Child,
    base: String,
    // Kept so that the server's stderr keeps being drained.
    _logs: std::sync::mpsc::Receiver<String>,
}

impl Server {
    fn spawn(dir: &Path, env: &[(&str, &str)]) -> Self {
        let mut cmd: Command = voiceplane(dir);
        cmd.envs(env.iter().copied());
        let (child, base, logs) = spawn_serve(cmd);
        Self {
            child,
            base,
            _logs: logs,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn scrape(http: &reqwest::Client, base: &str) -> Vec<Sample> {
    let resp = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    parse(&resp.text().await.unwrap())
}

#[test]
fn metrics_count_requests_jobs_and_deliveries() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let env = [
        ("VOICEPLANE_SECRETS__MASTER_KEY", MASTER_KEY),
        ("VOICEPLANE_WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
    ];
    let (org, key) = bootstrap(dir, &env);
    let server = Server::spawn(dir, &env);
    let base = server.base.clone();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let before = scrape(&http, &base).await;
        let list = [("operation", "agent_list"), ("status", "200")];
        let listed_before = value(&before, "voiceplane_http_requests_total", &list);

        const N: usize = 7;
        for _ in 0..N {
            let resp = http
                .get(format!("{base}/api/agents"))
                .header("X-API-Key", &key)
                .header("X-Organization-Id", &org)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
        }
        let resp = http.get(format!("{base}/api/agents")).send().await.unwrap();
        assert_eq!(resp.status(), 401);
        for path in ["/nope", "/api/agents/agent_0123456789abcdef/nothing/here"] {
            let resp = http.get(format!("{base}{path}")).send().await.unwrap();
            assert_eq!(resp.status(), 404);
        }

        let after = scrape(&http, &base).await;
        assert_eq!(
            value(&after, "voiceplane_http_requests_total", &list) - listed_before,
            N as f64,
            "{after:?}"
        );
        assert!(
            value(
                &after,
                "voiceplane_http_requests_total",
                &[("operation", "agent_list"), ("status", "401")]
            ) >= 1.0
        );
        assert!(
            value(
                &after,
                "voiceplane_http_requests_total",
                &[("operation", "unmatched"), ("status", "404")]
            ) >= 2.0
        );
        // Unknown paths share one label value: no series per path.
        assert!(
            after
                .iter()
                .filter(|s| s.name == "voiceplane_http_requests_total")
                .all(|s| !s.labels["operation"].contains('/')),
            "{after:?}"
        );
        // The latency histogram, in seconds, with buckets.
        let op = [("operation", "agent_list")];
        assert!(
            value(
                &after,
                "voiceplane_http_request_duration_seconds_count",
                &op
            ) >= N as f64
        );
        assert!(has(
            &after,
            "voiceplane_http_request_duration_seconds_sum",
            &op
        ));
        assert!(
            value(
                &after,
                "voiceplane_http_request_duration_seconds_bucket",
                &[("operation", "agent_list"), ("le", "+Inf")]
            ) >= N as f64
        );
        assert!(has(
            &after,
            "voiceplane_http_request_duration_seconds_bucket",
            &[("operation", "agent_list"), ("le", "0.005")]
        ));
        // The database pool, read at scrape time (SQLite file: 8 connections).
        assert!(has(
            &after,
            "voiceplane_db_pool_connections",
            &[("state", "in_use")]
        ));
        assert!(has(
            &after,
            "voiceplane_db_pool_connections",
            &[("state", "idle")]
        ));
        assert_eq!(
            value(&after, "voiceplane_db_pool_max_connections", &[]),
            8.0
        );
        // The recurring sweeps wait in the queue.
        assert_eq!(
            value(
                &after,
                "voiceplane_jobs",
                &[("kind", "events.sweep"), ("state", "scheduled")]
            ),
            1.0,
            "{after:?}"
        );

        // A webhook test delivery: a job runs and an attempt succeeds.
        let receiver = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(wiremock::ResponseTemplate::new(204))
            .mount(&receiver)
            .await;
        let created: Value = http
            .post(format!("{base}/api/webhooks"))
            .header("X-API-Key", &key)
            .header("X-Organization-Id", &org)
            .json(&json!({"url": format!("{}/hook", receiver.uri()), "events": ["*"]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let webhook = created["data"]["webhook_id"].as_str().unwrap();
        let resp = http
            .post(format!("{base}/api/webhooks/{webhook}/test"))
            .header("X-API-Key", &key)
            .header("X-Organization-Id", &org)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        let deadline = Instant::now() + Duration::from_secs(30);
        let done = loop {
            let samples = scrape(&http, &base).await;
            let ran = value(
                &samples,
                "voiceplane_job_runs_total",
                &[("kind", "webhook.deliver"), ("outcome", "succeeded")],
            );
            if ran >= 1.0 {
                break samples;
            }
            assert!(
                Instant::now() < deadline,
                "no delivery job ran: {samples:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            value(
                &done,
                "voiceplane_webhook_delivery_attempts_total",
                &[("outcome", "succeeded")]
            ) >= 1.0,
            "{done:?}"
        );
        assert_eq!(
            value(
                &done,
                "voiceplane_jobs",
                &[("kind", "webhook.deliver"), ("state", "due")]
            ),
            0.0
        );

        // Typed and described.
        let text = http
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for line in [
            "# TYPE voiceplane_http_requests_total counter",
            "# TYPE voiceplane_http_request_duration_seconds histogram",
            "# TYPE voiceplane_jobs gauge",
            "# HELP voiceplane_db_pool_connections ",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }

        // Only GET and HEAD.
        let resp = http.post(format!("{base}/metrics")).send().await.unwrap();
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.headers()["allow"], "GET, HEAD");
        let resp = http.head(format!("{base}/metrics")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
    });
    drop(server);
    rt.block_on(ctx.cleanup());
}

/// The metric names of README's "Metrics" table, and its list of job kinds.
fn documented() -> (Vec<String>, Vec<String>) {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme
        .split("### Metrics")
        .nth(1)
        .expect("README has a Metrics section");
    let section = section.split("\n## ").next().unwrap();
    let names: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("| `voiceplane_"))
        .map(|rest| format!("voiceplane_{}", rest.split('`').next().unwrap()))
        .collect();
    let kinds: Vec<String> = section
        .split("Job kinds: ")
        .nth(1)
        .expect("README lists the job kinds")
        .split("`.")
        .next()
        .unwrap()
        .split(',')
        .map(|kind| kind.trim().trim_matches('`').to_owned())
        .collect();
    (names, kinds)
}

/// The first scrape, before any request, lists every series README documents: each metric,
/// the job counters and gauges of every documented kind, and the webhook attempts of every
/// outcome at 0.
#[test]
fn metrics_list_every_documented_series_from_start_up() {
    let (names, kinds) = documented();
    assert!(names.len() >= 7, "{names:?}");
    assert!(kinds.len() >= 5, "{kinds:?}");
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let env = [("VOICEPLANE_SECRETS__MASTER_KEY", MASTER_KEY)];
    let server = Server::spawn(dir, &env);
    rt.block_on(async {
        let http = reqwest::Client::new();
        let first = scrape(&http, &server.base).await;
        for name in &names {
            assert!(
                first
                    .iter()
                    .any(|s| s.name == *name || s.name == format!("{name}_count")),
                "{name} is documented but not exported at start-up: {first:?}"
            );
        }
        for kind in &kinds {
            for outcome in ["succeeded", "retried", "failed"] {
                let labels = [("kind", kind.as_str()), ("outcome", outcome)];
                // Present, though not always 0: the recurring sweeps run at start.
                assert!(
                    has(&first, "voiceplane_job_runs_total", &labels),
                    "{labels:?}: {first:?}"
                );
            }
            for state in ["due", "scheduled", "running", "failed"] {
                let labels = [("kind", kind.as_str()), ("state", state)];
                assert!(
                    has(&first, "voiceplane_jobs", &labels),
                    "{labels:?}: {first:?}"
                );
            }
        }
        for outcome in ["succeeded", "retrying", "failed"] {
            let labels = [("outcome", outcome)];
            assert!(
                has(
                    &first,
                    "voiceplane_webhook_delivery_attempts_total",
                    &labels
                ),
                "{labels:?}: {first:?}"
            );
            assert_eq!(
                value(
                    &first,
                    "voiceplane_webhook_delivery_attempts_total",
                    &labels
                ),
                0.0
            );
        }
    });
    drop(server);
    rt.block_on(ctx.cleanup());
}

#[test]
fn metrics_can_be_turned_off() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let server = Server::spawn(dir, &[("VOICEPLANE_METRICS__ENABLED", "false")]);
    rt.block_on(async {
        let http = reqwest::Client::new();
        let resp = http
            .get(format!("{}/metrics", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
        let body: Value = resp.json().await.unwrap();
        assert!(body["detail"].is_string(), "{body}");
        let resp = http
            .get(format!("{}/healthz", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    });
    drop(server);
    rt.block_on(ctx.cleanup());
}

/// A TCP proxy in front of Postgres on a fixed local port, which can be stopped (listener and
/// every forwarded connection closed: the database "refuses") and started again, or made to
/// refuse new connections only, the forwarded ones left to the database to end.
struct Proxy {
    port: u16,
    upstream: String,
    accepting: Option<tokio::task::JoinHandle<()>>,
    forwarders: Arc<Mutex<JoinSet<()>>>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut proxy = Self {
            port,
            upstream,
            accepting: None,
            forwarders: Arc::default(),
        };
        proxy.run(listener);
        proxy
    }

    fn run(&mut self, listener: TcpListener) {
        let upstream = self.upstream.clone();
        let forwarders = self.forwarders.clone();
        self.accepting = Some(tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                let upstream = upstream.clone();
                let mut forwarders = forwarders.lock().unwrap();
                forwarders.spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                while forwarders.try_join_next().is_some() {}
            }
        }));
    }

    /// Closes the listener: new connections are refused, open ones go on.
    async fn refuse_new(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Refuses new connections and closes every open one.
    async fn stop(&mut self) {
        self.refuse_new().await;
        // Aborting a forwarder drops both of its sockets.
        self.forwarders.lock().unwrap().abort_all();
    }

    async fn restart(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.run(listener);
    }
}

/// How long a request may take while the database is unreachable: far less than the 60 s
/// acquire timeout the server runs with, so only the short connect wait answers in time,
/// and far more than that wait (500 ms), so a loaded machine does not fail the test.
const FAIL_FAST: Duration = Duration::from_secs(20);

#[test]
fn requests_fail_fast_while_the_database_is_unreachable() {
    let rt = runtime();
    let test = "requests_fail_fast_while_the_database_is_unreachable";
    let Some(ctx) = rt.block_on(TestContext::postgres(test)) else {
        return;
    };
    let url = reqwest::Url::parse(&ctx.database_url()).unwrap();
    let upstream = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let mut proxy = rt.block_on(Proxy::start(upstream));
    let mut through = url.clone();
    through.set_host(Some("127.0.0.1")).unwrap();
    through.set_port(Some(proxy.port)).unwrap();
    let dir = ctx.folder();
    let env = [
        ("VOICEPLANE_DATABASE__URL", through.as_str()),
        ("VOICEPLANE_DATABASE__ACQUIRE_TIMEOUT_SECS", "60"),
    ];
    let (org, key) = bootstrap(dir, &env);
    // The binary wrote to the context's schema, which cleanup drops: its key works there.
    rt.block_on(ctx.actor(&org, &key));
    let server = Server::spawn(dir, &env);
    let base = server.base.clone();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let list = || {
            http.get(format!("{base}/api/agents"))
                .header("X-API-Key", &key)
                .header("X-Organization-Id", &org)
                .send()
        };
        for _ in 0..3 {
            assert_eq!(list().await.unwrap().status(), 200);
        }

        proxy.stop().await;
        let mut leaks = ctx.database_names();
        leaks.extend(["127.0.0.1".to_owned(), proxy.port.to_string()]);
        for _ in 0..3 {
            let resp = tokio::time::timeout(FAIL_FAST, list())
                .await
                .expect("a 503 without waiting for a connection")
                .unwrap();
            assert_eq!(resp.status(), 503);
            assert!(resp.headers().contains_key("retry-after"));
            let body: Value = resp.json().await.unwrap();
            let detail = body["detail"].as_str().unwrap();
            assert!(detail.contains("database"), "{detail}");
            for leak in leaks.iter().map(String::as_str).chain(["postgres"]) {
                assert!(!detail.contains(leak), "{detail}");
            }
        }

        proxy.restart().await;
        eventually(
            "the server answers again once the database is back",
            || async {
                let status = list().await.unwrap().status();
                assert!(status == 200 || status == 503, "{status}");
                status == 200
            },
        )
        .await;
        proxy.stop().await;
    });
    drop(server);
    rt.block_on(ctx.cleanup());
}

/// A failover or a restart as Postgres does it: every backend of the server is terminated
/// (`pg_terminate_backend`, which sends each connection an error before closing it) and new
/// connections are refused. The pool lends a connection given back within the last second
/// without pinging it, so a request right after reads that error on a dead connection: it is
/// still a fast 503 with `Retry-After`, never a 500, and the server recovers once the
/// database takes connections again.
#[test]
fn terminated_connections_answer_503_while_the_database_refuses_new_ones() {
    let rt = runtime();
    let test = "terminated_connections_answer_503";
    let Some(ctx) = rt.block_on(TestContext::postgres(test)) else {
        return;
    };
    let url = reqwest::Url::parse(&ctx.database_url()).unwrap();
    let upstream = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let mut proxy = rt.block_on(Proxy::start(upstream));
    // Names the server's connections, so that only they are terminated.
    let application = format!("vp_terminated_{}", std::process::id());
    let mut through = url.clone();
    through.set_host(Some("127.0.0.1")).unwrap();
    through.set_port(Some(proxy.port)).unwrap();
    through
        .query_pairs_mut()
        .append_pair("application_name", &application);
    let dir = ctx.folder();
    let env = [
        ("VOICEPLANE_DATABASE__URL", through.as_str()),
        ("VOICEPLANE_DATABASE__ACQUIRE_TIMEOUT_SECS", "60"),
    ];
    let (org, key) = bootstrap(dir, &env);
    rt.block_on(ctx.actor(&org, &key));
    let server = Server::spawn(dir, &env);
    let base = server.base.clone();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let created: Value = http
            .post(format!("{base}/api/agents"))
            .header("X-API-Key", &key)
            .header("X-Organization-Id", &org)
            .json(&json!({
                "agent_name": "Front desk", "language": "en", "stt_provider": "deepgram",
                "tts_provider": "provider_one", "tts_voice": "a0e99841", "llm_provider": "openai",
                "llm_model": "gpt-4o-mini", "system_prompt": "You answer the phone for Acme."
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let agent = created["data"]["agent_id"].as_str().unwrap().to_owned();
        let get = || {
            http.get(format!("{base}/api/agents/{agent}"))
                .header("X-API-Key", &key)
                .header("X-Organization-Id", &org)
                .send()
        };
        // Several requests at once, twice, leave the pool with several connections, all of
        // them given back just now.
        for _ in 0..2 {
            let mut answers = JoinSet::new();
            for _ in 0..6 {
                answers.spawn(get());
            }
            while let Some(answer) = answers.join_next().await {
                assert_eq!(answer.unwrap().unwrap().status(), 200);
            }
        }

        proxy.refuse_new().await;
        let terminate = format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = '{application}'"
        );
        let admin = ctx.repo.connection();
        sea_orm::ConnectionTrait::execute_unprepared(admin, &terminate)
            .await
            .unwrap();
        let gone =
            format!("SELECT 1 FROM pg_stat_activity WHERE application_name = '{application}'");
        eventually("the server's backends are gone", || async {
            sea_orm::ConnectionTrait::query_one_raw(
                admin,
                sea_orm::Statement::from_string(sea_orm::DatabaseBackend::Postgres, gone.clone()),
            )
            .await
            .unwrap()
            .is_none()
        })
        .await;

        let mut leaks = ctx.database_names();
        leaks.extend(["127.0.0.1".to_owned(), proxy.port.to_string()]);
        for attempt in 0..4 {
            let started = Instant::now();
            let resp = tokio::time::timeout(FAIL_FAST, get())
                .await
                .expect("a 503 without waiting for a connection")
                .unwrap();
            let status = resp.status();
            let retry_after = resp.headers().contains_key("retry-after");
            let body: Value = resp.json().await.unwrap();
            assert_eq!(status, 503, "attempt {attempt}: {body}");
            assert!(retry_after, "attempt {attempt}");
            let detail = body["detail"].as_str().unwrap();
            assert!(detail.contains("database"), "{detail}");
            for leak in leaks
                .iter()
                .map(String::as_str)
                .chain(["postgres", "57P01"])
            {
                assert!(!detail.contains(leak), "{detail}");
            }
            eprintln!("attempt {attempt}: 503 in {:?}", started.elapsed());
        }

        proxy.restart().await;
        eventually(
            "the server answers again once the database takes connections",
            || async {
                let status = get().await.unwrap().status();
                assert!(status == 200 || status == 503, "{status}");
                status == 200
            },
        )
        .await;
        proxy.stop().await;
    });
    drop(server);
    rt.block_on(ctx.cleanup());
}
