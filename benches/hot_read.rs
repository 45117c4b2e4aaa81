//! Benchmark (not a test) of the hot read path over real HTTP: the binary's own `main`
//! (`voiceplane_bin::main_with`, run as a child process of this program, built with the bench
//! profile, i.e. release) serving SQLite, then Postgres when `VOICEPLANE_TEST_POSTGRES_URL` is set
//! (in a database of its own, `voiceplane_bench`, dropped and made again), with
//! `VOICEPLANE_BENCH_CALLS` calls (default 100,000) of one organization; beside it, a static
//! server on the same stack (`voiceplane_http::serve_service`: hyper-util, HTTP/1.1) answering a
//! fixed body of an agent's size. `wrk` drives each target in turn, in alternating rounds:
//!
//! - `static`: the static server;
//! - `agent`: `GET /api/agents/{id}` with an API key;
//! - `calls first`: `GET /api/calls?limit=50`;
//! - `calls deep`: the same page at depth `calls - 50` (its cursor built from the seeded rows).
//!
//! Printed per database: the median over rounds of requests/s, p50 and p99, the ratio of each
//! to the static server's requests/s (and deep to first page), and the server's RSS after each
//! round. `VOICEPLANE_BENCH_SOAK_SECS` (e.g. 300) then drives the agent read that long and
//! prints the RSS every 30 s.
//!
//! ```sh
//! bash benches/hot_read.sh   # checks that wrk is installed, then: cargo bench --bench hot_read
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use sea_orm::{ConnectionTrait, Database};
use voiceplane_core::page::Cursor;
use voiceplane_core::time::Timestamp;
use voiceplane_suite::sample::{seed_calls, seeded_call_sid, seeded_created_at};

const CONNECTIONS: &str = "64";
const THREADS: &str = "2";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A fixed 725-byte JSON body, the size of an agent in its envelope.
fn static_body() -> Bytes {
    let mut body = String::from("{\"success\":true,\"data\":{\"padding\":\"");
    while body.len() < 725 - 3 {
        body.push('x');
    }
    body.push_str("\"}}");
    Bytes::from(body)
}

#[derive(Clone)]
struct Static(Bytes);

impl<B> tower_service::Service<http::Request<B>> for Static {
    type Response = http::Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<B>) -> Self::Future {
        ready(Ok(http::Response::builder()
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(self.0.clone()))
            .unwrap()))
    }
}

/// Starts the static server on a runtime of its own with two workers, as the binary has on
/// this machine; returns its address.
fn start_static() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            voiceplane_http::serve_service(listener, Static(static_body()), std::future::pending())
                .await
                .unwrap();
        });
    });
    rx.recv().unwrap()
}

/// The binary under test, with its settings for one database.
struct Server {
    child: Child,
    base: String,
    org: String,
    key: String,
}

impl Server {
    fn command(bin: &Path, dir: &Path, database_url: &str) -> Command {
        let mut cmd = Command::new(bin);
        cmd.arg("voiceplane")
            .current_dir(dir)
            .env("VOICEPLANE_LISTEN", "127.0.0.1:0")
            .env("VOICEPLANE_DATABASE__URL", database_url)
            .env("VOICEPLANE_STORAGE__ROOT", dir.join("blobs"))
            // One key drives the whole load: a budget it cannot spend, so that every answer is
            // a 200 and the limiter's cost is still measured.
            .env("VOICEPLANE_RATE_LIMIT__PER_SECOND", "1000000000")
            .env("VOICEPLANE_RATE_LIMIT__BURST", "1000000000")
            .env_remove("RUST_LOG");
        cmd
    }

    fn start(bin: &Path, dir: &Path, database_url: &str) -> Server {
        let out = Self::command(bin, dir, database_url)
            .args([
                "bootstrap",
                "--org-name",
                "Bench",
                "--admin-email",
                "bench@example.com",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bootstrap succeeds: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let boot: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let field = |k: &str| boot[k].as_str().unwrap().to_owned();
        let (org, key) = (field("organization_id"), field("api_key"));
        let mut child = Self::command(bin, dir, database_url)
            .arg("serve")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = loop {
            let line = lines.next().expect("the server logs its address").unwrap();
            if let Some(at) = line.find("listening on http://") {
                let rest = &line[at + "listening on ".len()..];
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        // The request log goes on: read it so the server never blocks on a full pipe, as a log
        // collector would.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        Server {
            child,
            base,
            org,
            key,
        }
    }

    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        kb / 1024.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One wrk run's results.
#[derive(Clone, Copy, Debug)]
struct Sample {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn to_ms(v: &str) -> f64 {
    let (n, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic()).unwrap());
    let n: f64 = n.parse().unwrap();
    match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        other => panic!("unknown wrk unit {other}"),
    }
}

fn wrk(url: &str, headers: &[String], secs: u64) -> Sample {
    let mut cmd = Command::new("wrk");
    cmd.args(["-t", THREADS, "-c", CONNECTIONS, "--latency"])
        .arg("-d")
        .arg(format!("{secs}s"));
    for h in headers {
        cmd.arg("-H").arg(h);
    }
    let out = cmd
        .arg(url)
        .output()
        .expect("wrk runs (apt-get install wrk)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("Non-2xx") && !text.contains("Socket errors"),
        "every answer of {url} is a 200:\n{text}"
    );
    let field = |prefix: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .unwrap_or_else(|| panic!("wrk printed `{prefix}`:\n{text}"))
            .trim()
            .to_owned()
    };
    Sample {
        rps: field("Requests/sec:").parse().unwrap(),
        p50_ms: to_ms(&field("50%")),
        p99_ms: to_ms(&field("99%")),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn http_json(method: reqwest::Method, url: &str, server: &Server, body: serde_json::Value) {
    let status = reqwest::Client::new()
        .request(method, url)
        .header("X-API-Key", &server.key)
        .header("X-Organization-Id", &server.org)
        .json(&body)
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "{url}: {status}");
}

async fn run(name: &str, bin: &Path, dir: &Path, database_url: &str, static_addr: SocketAddr) {
    let server = Server::start(bin, dir, database_url);
    let calls: usize = env_or("VOICEPLANE_BENCH_CALLS", 100_000);
    let rounds: usize = env_or("VOICEPLANE_BENCH_ROUNDS", 3);
    let secs: u64 = env_or("VOICEPLANE_BENCH_SECS", 10);

    let client = reqwest::Client::new();
    let agent: serde_json::Value = client
        .post(format!("{}/api/agents", server.base))
        .header("X-API-Key", &server.key)
        .header("X-Organization-Id", &server.org)
        .json(&voiceplane_suite::agent_body("Bench agent"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let agent_id = agent["data"]["agent_id"].as_str().unwrap().to_owned();
    let db = Database::connect(database_url).await.unwrap();
    let started = Instant::now();
    seed_calls(&db, &server.org, std::slice::from_ref(&agent_id), calls).await;
    println!(
        "{name}: seeded {calls} calls in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The cursor after the first `calls - 50` calls, newest first: the last page.
    let last = 50;
    let deep = Cursor {
        created_at: Timestamp::from_micros(seeded_created_at(last, calls)),
        id: seeded_call_sid(last),
    }
    .encode();
    // Warm the binary's caches and pools the way a running server has them.
    http_json(
        reqwest::Method::PATCH,
        &format!("{}/api/agents/{agent_id}", server.base),
        &server,
        serde_json::json!({"agent_name": "Bench agent"}),
    )
    .await;

    let headers = vec![
        format!("X-API-Key: {}", server.key),
        format!("X-Organization-Id: {}", server.org),
    ];
    let targets = [
        ("static", format!("http://{static_addr}/"), vec![]),
        (
            "agent",
            format!("{}/api/agents/{agent_id}", server.base),
            headers.clone(),
        ),
        (
            "calls first",
            format!("{}/api/calls?limit=50", server.base),
            headers.clone(),
        ),
        (
            "calls deep",
            format!("{}/api/calls?limit=50&cursor={deep}", server.base),
            headers.clone(),
        ),
    ];
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); targets.len()];
    for round in 1..=rounds {
        for (i, (_, url, headers)) in targets.iter().enumerate() {
            samples[i].push(wrk(url, headers, secs));
        }
        println!(
            "{name}: round {round}/{rounds}: server RSS {:.1} MiB",
            server.rss_mib()
        );
    }
    let summary: Vec<Sample> = samples
        .iter()
        .map(|s| Sample {
            rps: median(s.iter().map(|x| x.rps).collect()),
            p50_ms: median(s.iter().map(|x| x.p50_ms).collect()),
            p99_ms: median(s.iter().map(|x| x.p99_ms).collect()),
        })
        .collect();
    println!(
        "{name}: wrk -t{THREADS} -c{CONNECTIONS} -d{secs}s, median of {rounds} rounds, {calls} calls"
    );
    println!(
        "{name}: {:<12} {:>10} {:>9} {:>9} {:>9}",
        "target", "req/s", "p50 ms", "p99 ms", "/static"
    );
    for ((label, _, _), s) in targets.iter().zip(&summary) {
        println!(
            "{name}: {label:<12} {:>10.0} {:>9.3} {:>9.3} {:>8.1}%",
            s.rps,
            s.p50_ms,
            s.p99_ms,
            100.0 * s.rps / summary[0].rps
        );
    }
    println!(
        "{name}: deep page / first page latency (p50): {:.2}",
        summary[3].p50_ms / summary[2].p50_ms
    );

    let soak: u64 = env_or("VOICEPLANE_BENCH_SOAK_SECS", 0);
    if soak > 0 {
        let (_, url, headers) = &targets[1];
        let mut elapsed = 0;
        println!("{name}: soak: RSS {:.1} MiB at 0 s", server.rss_mib());
        while elapsed < soak {
            let step = 30.min(soak - elapsed);
            let s = wrk(url, headers, step);
            elapsed += step;
            println!(
                "{name}: soak: RSS {:.1} MiB at {elapsed} s ({:.0} req/s)",
                server.rss_mib(),
                s.rps
            );
        }
    }
}

fn main() -> std::process::ExitCode {
    // The child: `<this program> voiceplane serve …` is the binary itself.
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "voiceplane") {
        return voiceplane_bin::main_with(args);
    }
    let bin = std::env::current_exe().unwrap();
    voiceplane_clients::install_crypto_provider();
    let static_addr = start_static();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile_dir("sqlite");
        let url = format!("sqlite://{}?mode=rwc", dir.join("bench.db").display());
        run("sqlite", &bin, &dir, &url, static_addr).await;
        std::fs::remove_dir_all(&dir).unwrap();

        if let Ok(admin_url) = std::env::var("VOICEPLANE_TEST_POSTGRES_URL") {
            let admin = Database::connect(&admin_url).await.unwrap();
            admin
                .execute_unprepared("DROP DATABASE IF EXISTS voiceplane_bench")
                .await
                .unwrap();
            admin
                .execute_unprepared("CREATE DATABASE voiceplane_bench")
                .await
                .unwrap();
            let (server, _) = admin_url.rsplit_once('/').unwrap();
            let url = format!("{server}/voiceplane_bench");
            let dir = tempfile_dir("postgres");
            run("postgres", &bin, &dir, &url, static_addr).await;
            std::fs::remove_dir_all(&dir).unwrap();
            admin
                .execute_unprepared("DROP DATABASE voiceplane_bench WITH (FORCE)")
                .await
                .unwrap();
        }
    });
    std::process::ExitCode::SUCCESS
}

fn tempfile_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("voiceplane-hot-read-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
