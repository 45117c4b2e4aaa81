//! Benchmark (not a test) of the hot read path over real HTTP: the binary's own `main`
//! (`voiceplane_bin::main_with`, run as a child process of this program, built with the bench
//! profile, i.e. release) serving SQLite, then Postgres when `VOICEPLANE_TEST_POSTGRES_URL` is set
//! (in a database of its own, `voiceplane_bench`, dropped and made again), with
//! `VOICEPLANE_BENCH_CALLS` calls (default 100,000) of one organization. Beside it, two servers
//! answering a fixed body of an agent's size (725 bytes), each a child process too:
//!
//! - `raw hyper`: hyper-util's auto builder with a `service_fn`, nothing else: the ceiling;
//! - `serve_service`: `voiceplane_http::serve_service` (the binary's accept loop, first-byte
//!   deadline and peer address) around a static tower service.
//!
//! Every server is pinned with `taskset` to the first N cores (`VOICEPLANE_BENCH_SERVER_CORES`,
//! a list such as `1,2,4,8`, default `1`; tokio sizes its workers by that affinity), and `wrk`
//! to the cores above the largest N (`VOICEPLANE_BENCH_WRK_CORES`, default all of them), so that
//! the load generator never takes the server's cores. For each N, in alternating rounds:
//!
//! - the two static servers, then, from the binary: `GET /healthz` (no credential, no database);
//! - `agent`: `GET /api/agents/{id}` with an API key;
//! - `calls first`: `GET /api/calls?limit=50`;
//! - `calls deep`: the same page at depth `calls - 50` (its cursor built from the seeded rows);
//! - `calls new`: the first page with a `created_before` later than every call, a different
//!   second for every request (a wrk script): a page never read before, which the binary's
//!   kept pages cannot answer (`calls first` and `calls deep` repeat one page, as a polling
//!   console does, and on SQLite come from memory while nothing is committed);
//! - `/healthz unlogged` and `agent unlogged`: the same two requests to a second instance of the
//!   binary started with `RUST_LOG=warn,voiceplane_bin=info`, which opens no request span and
//!   writes no request line: the difference is what the request log costs.
//!
//! Printed per database and N: the median over rounds of requests/s, p50 and p99, each as a
//! share of the raw hyper server's requests/s (deep against the first page too), the server
//! process's CPU time per request (user and system, from `/proc`; not Postgres's) and the raw
//! server's as a share of it, which a shared VM's stolen time does not blur, the server's
//! RSS after each round, and with more than one N, each target's scaling against N = the
//! smallest. `VOICEPLANE_BENCH_SOAK_SECS` (e.g. 300) then drives the agent read that long and
//! prints the RSS every 30 s. `VOICEPLANE_BENCH_PERF=<dir>` records the first round of each
//! target with `perf record --call-graph dwarf` into `<dir>/<database>-<cores>-<target>.data`
//! (the numbers of that round then include perf's own cost). `VOICEPLANE_BENCH_TARGETS` (e.g.
//! `raw hyper,agent`) runs only the targets it names.
//!
//! ```sh
//! bash benches/hot_read.sh   # checks that wrk and taskset are installed, then: cargo bench --bench hot_read
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use sea_orm::{ConnectionTrait, Database};
use voiceplane_core::page::Cursor;
use voiceplane_core::time::Timestamp;
use voiceplane_suite::sample::{seed_calls, seeded_call_sid, seeded_created_at};

const CONNECTIONS: &str = "64";

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

fn static_response(body: &Bytes) -> http::Response<Full<Bytes>> {
    http::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))
        .unwrap()
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
        ready(Ok(static_response(&self.0)))
    }
}

/// The child `<this program> static raw|stack`: a static server on a runtime sized by the
/// process's affinity, printing its address as the binary does.
fn serve_static(kind: &str) -> std::process::ExitCode {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let raw = kind == "raw";
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        eprintln!("listening on http://{}", listener.local_addr().unwrap());
        let body = static_body();
        if !raw {
            voiceplane_http::serve_service(listener, Static(body), std::future::pending())
                .await
                .unwrap();
            return;
        }
        let builder =
            hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let body = body.clone();
            let service =
                hyper::service::service_fn(move |_: http::Request<hyper::body::Incoming>| {
                    ready(Ok::<_, Infallible>(static_response(&body)))
                });
            let connection = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .into_owned();
            tokio::spawn(async move {
                let _ = connection.await;
            });
        }
    });
    std::process::ExitCode::SUCCESS
}

/// `taskset -c <cores> <this program> …`.
fn pinned(bin: &Path, cores: &str) -> Command {
    let mut cmd = Command::new("taskset");
    cmd.arg("-c").arg(cores).arg(bin);
    cmd
}

/// Reads a child's stderr up to the line with its address, then keeps reading it so that the
/// child never blocks on a full pipe (the request log goes on, as a log collector would read it).
fn address_of(stderr: ChildStderr) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines.next().expect("the server logs its address").unwrap();
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on ".len()..];
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines.by_ref() {});
    base
}

/// A child process serving HTTP, killed when dropped.
struct Process {
    child: Child,
    base: String,
}

impl Process {
    fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let base = address_of(child.stderr.take().unwrap());
        Self { child, base }
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

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary's settings for one database.
fn voiceplane(bin: &Path, cores: Option<&str>, dir: &Path, database_url: &str) -> Command {
    let mut cmd = match cores {
        Some(cores) => pinned(bin, cores),
        None => Command::new(bin),
    };
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

/// `voiceplane serve` for one database.
fn serving(bin: &Path, cores: Option<&str>, dir: &Path, database_url: &str) -> Command {
    let mut cmd = voiceplane(bin, cores, dir, database_url);
    cmd.arg("serve");
    cmd
}

/// The organization and API key `bootstrap` made.
fn bootstrap(bin: &Path, dir: &Path, database_url: &str) -> (String, String) {
    let out = voiceplane(bin, None, dir, database_url)
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
    (field("organization_id"), field("api_key"))
}

/// One wrk run's results.
#[derive(Clone, Copy, Debug)]
struct Sample {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// The server's CPU time (user and system) per request, in microseconds: unlike req/s,
    /// it leaves out the time a shared VM's other tenants take from the server's core.
    cpu_us: f64,
}

/// The CPU time process `pid` has used, user and system, in clock ticks (`/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which is in parentheses and may hold spaces:
    // utime and stime are the 14th and 15th of the line, the 12th and 13th after it.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Clock ticks per second, as `/proc` counts them.
fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
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

/// Where wrk runs: its cores and one thread per core.
struct Load {
    cores: String,
    threads: usize,
}

/// A wrk script asking each request for the first page of calls created before a second of
/// the year 2100 no request asked for before (one Lua state per wrk thread: each thread counts
/// from its own start, far apart).
const NEW_PAGES: &str = r#"
local n = 0
local first = 4102444800
function setup(thread)
  thread:set("first", first)
  first = first + 100000000
end
function request()
  n = n + 1
  return wrk.format(nil, "/api/calls?limit=50&created_before=" .. os.date("!%Y-%m-%dT%H:%M:%SZ", first + n))
end
"#;

fn wrk(load: &Load, url: &str, headers: &[String], secs: u64) -> Sample {
    let mut cmd = Command::new("taskset");
    cmd.arg("-c")
        .arg(&load.cores)
        .arg("wrk")
        .args(["-c", CONNECTIONS, "--latency"])
        .arg("-t")
        .arg(load.threads.to_string())
        .arg("-d")
        .arg(format!("{secs}s"));
    for h in headers {
        cmd.arg("-H").arg(h);
    }
    // `…/api/calls?new`: every request a page of its own.
    if let Some(base) = url.strip_suffix("/api/calls?new") {
        let script = std::env::temp_dir().join(format!("hot-read-new-{}.lua", std::process::id()));
        std::fs::write(&script, NEW_PAGES).unwrap();
        cmd.arg("-s").arg(&script);
        let sample = run_wrk(cmd, &format!("{base}/"));
        let _ = std::fs::remove_file(script);
        return sample;
    }
    run_wrk(cmd, url)
}

fn run_wrk(mut cmd: Command, url: &str) -> Sample {
    let out = cmd
        .arg(url)
        .output()
        .expect("wrk runs (apt-get install wrk)");
    let text = String::from_utf8_lossy(&out.stdout);
    // taskset's own complaint (`failed to execute wrk`) when wrk is not installed.
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains("Non-2xx") && !text.contains("Socket errors"),
        "every answer of {url} is a 200:\n{text}\n{errors}"
    );
    let field = |prefix: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .unwrap_or_else(|| panic!("wrk printed `{prefix}`:\n{text}\n{errors}"))
            .trim()
            .to_owned()
    };
    Sample {
        rps: field("Requests/sec:").parse().unwrap(),
        p50_ms: to_ms(&field("50%")),
        p99_ms: to_ms(&field("99%")),
        cpu_us: f64::NAN,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Whether `VOICEPLANE_BENCH_TARGETS` (labels separated by commas; default all) names `label`.
fn selected(label: &str) -> bool {
    std::env::var("VOICEPLANE_BENCH_TARGETS")
        .map_or(true, |list| list.split(',').any(|l| l.trim() == label))
}

/// The `n` cores from `first` on, as a `taskset` list.
fn core_list(first: usize, n: usize) -> String {
    if n == 1 {
        first.to_string()
    } else {
        format!("{first}-{}", first + n - 1)
    }
}

/// A database seeded for the run: the organization, its key, an agent and the deep cursor.
struct Seeded {
    dir: PathBuf,
    url: String,
    org: String,
    key: String,
    agent_id: String,
    deep: String,
    calls: usize,
}

async fn seed(name: &str, bin: &Path, dir: PathBuf, url: String) -> Seeded {
    let (org, key) = bootstrap(bin, &dir, &url);
    let calls: usize = env_or("VOICEPLANE_BENCH_CALLS", 100_000);
    // A server only long enough to create the agent through the API.
    let server = Process::spawn(serving(bin, None, &dir, &url));
    let agent: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/api/agents", server.base))
        .header("X-API-Key", &key)
        .header("X-Organization-Id", &org)
        .json(&voiceplane_suite::agent_body("Bench agent"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    drop(server);
    let agent_id = agent["data"]["agent_id"].as_str().unwrap().to_owned();
    let db = Database::connect(&url).await.unwrap();
    let started = Instant::now();
    seed_calls(&db, &org, std::slice::from_ref(&agent_id), calls).await;
    db.close().await.unwrap();
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
    Seeded {
        dir,
        url,
        org,
        key,
        agent_id,
        deep,
        calls,
    }
}

/// The rounds of one database with the servers on `cores` cores; returns the medians by
/// target.
async fn measure(
    name: &str,
    bin: &Path,
    seeded: &Seeded,
    cores: usize,
    load: &Load,
) -> Vec<(&'static str, Sample)> {
    let rounds: usize = env_or("VOICEPLANE_BENCH_ROUNDS", 3);
    let secs: u64 = env_or("VOICEPLANE_BENCH_SECS", 10);
    let on = core_list(0, cores);
    let raw = Process::spawn({
        let mut cmd = pinned(bin, &on);
        cmd.args(["static", "raw"]);
        cmd
    });
    let stack = Process::spawn({
        let mut cmd = pinned(bin, &on);
        cmd.args(["static", "stack"]);
        cmd
    });
    let server = Process::spawn(serving(bin, Some(&on), &seeded.dir, &seeded.url));
    // The same binary with its request log off: what the log line and its span cost. The
    // binary's own INFO lines stay on, its address among them.
    let unlogged = Process::spawn({
        let mut cmd = serving(bin, Some(&on), &seeded.dir, &seeded.url);
        cmd.env("RUST_LOG", "warn,voiceplane_bin=info");
        cmd
    });
    // Warm the binary's caches and pools the way a running server has them.
    let status = reqwest::Client::new()
        .patch(format!("{}/api/agents/{}", server.base, seeded.agent_id))
        .header("X-API-Key", &seeded.key)
        .header("X-Organization-Id", &seeded.org)
        .json(&serde_json::json!({"agent_name": "Bench agent"}))
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "the warm-up PATCH: {status}");
    let status = reqwest::Client::new()
        .get(format!("{}/api/agents/{}", unlogged.base, seeded.agent_id))
        .header("X-API-Key", &seeded.key)
        .header("X-Organization-Id", &seeded.org)
        .send()
        .await
        .unwrap()
        .status();
    assert!(
        status.is_success(),
        "the unlogged server's warm-up GET: {status}"
    );

    let headers = vec![
        format!("X-API-Key: {}", seeded.key),
        format!("X-Organization-Id: {}", seeded.org),
    ];
    // Each target: its label, its URL, its headers and the process it measures.
    let (raw_pid, stack_pid) = (raw.child.id(), stack.child.id());
    let (server_pid, unlogged_pid) = (server.child.id(), unlogged.child.id());
    let targets = [
        ("raw hyper", format!("{}/", raw.base), vec![], raw_pid),
        (
            "serve_service",
            format!("{}/", stack.base),
            vec![],
            stack_pid,
        ),
        (
            "/healthz",
            format!("{}/healthz", server.base),
            vec![],
            server_pid,
        ),
        (
            "agent",
            format!("{}/api/agents/{}", server.base, seeded.agent_id),
            headers.clone(),
            server_pid,
        ),
        (
            "calls first",
            format!("{}/api/calls?limit=50", server.base),
            headers.clone(),
            server_pid,
        ),
        (
            "calls deep",
            format!("{}/api/calls?limit=50&cursor={}", server.base, seeded.deep),
            headers.clone(),
            server_pid,
        ),
        (
            "calls new",
            format!("{}/api/calls?new", server.base),
            headers.clone(),
            server_pid,
        ),
        (
            "/healthz unlogged",
            format!("{}/healthz", unlogged.base),
            vec![],
            unlogged_pid,
        ),
        (
            "agent unlogged",
            format!("{}/api/agents/{}", unlogged.base, seeded.agent_id),
            headers.clone(),
            unlogged_pid,
        ),
    ];
    let perf_dir = std::env::var_os("VOICEPLANE_BENCH_PERF").map(PathBuf::from);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); targets.len()];
    let tick_hz = ticks_per_second();
    for round in 1..=rounds {
        for (i, &(label, ref url, ref headers, pid)) in targets.iter().enumerate() {
            if !selected(label) {
                samples[i].push(Sample {
                    rps: f64::NAN,
                    p50_ms: f64::NAN,
                    p99_ms: f64::NAN,
                    cpu_us: f64::NAN,
                });
                continue;
            }
            // The first round of each target under `perf record`, when asked.
            let perf = perf_dir.as_ref().filter(|_| round == 1).map(|dir| {
                let file = dir.join(format!(
                    "{name}-{cores}-{}.data",
                    label.replace(['/', ' '], "")
                ));
                let mut perf = Command::new("perf");
                perf.args(["record", "-q", "-F", "1999"]);
                // Flat (self time only) with `VOICEPLANE_BENCH_PERF_GRAPH=none`, e.g. for a
                // build without debug info.
                match std::env::var("VOICEPLANE_BENCH_PERF_GRAPH") {
                    Ok(g) if g == "none" => {}
                    Ok(g) => drop(perf.arg("--call-graph").arg(g)),
                    Err(_) => drop(perf.args(["--call-graph", "dwarf,16384"])),
                }
                perf.arg("-p")
                    .arg(pid.to_string())
                    .arg("-o")
                    .arg(file)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("perf runs")
            });
            let before = cpu_ticks(pid);
            let mut sample = wrk(load, url, headers, secs);
            let ticks = (cpu_ticks(pid) - before) as f64;
            sample.cpu_us = ticks / tick_hz * 1e6 / (sample.rps * secs as f64);
            samples[i].push(sample);
            if let Some(mut perf) = perf {
                // SIGINT ends the recording and writes the file.
                let _ = Command::new("kill")
                    .arg("-INT")
                    .arg(perf.id().to_string())
                    .status();
                let _ = perf.wait();
            }
        }
        println!(
            "{name} ({cores} core(s)): round {round}/{rounds}: server RSS {:.1} MiB",
            server.rss_mib()
        );
    }
    let summary: Vec<(&'static str, Sample)> = targets
        .iter()
        .zip(&samples)
        .map(|(&(label, ..), s)| {
            let sample = Sample {
                rps: median(s.iter().map(|x| x.rps).collect()),
                p50_ms: median(s.iter().map(|x| x.p50_ms).collect()),
                p99_ms: median(s.iter().map(|x| x.p99_ms).collect()),
                cpu_us: median(s.iter().map(|x| x.cpu_us).collect()),
            };
            (label, sample)
        })
        .collect();
    let raw_sample = summary[0].1;
    println!(
        "{name}: server on cores {on}, wrk -t{} -c{CONNECTIONS} -d{secs}s on cores {}, median of {rounds} rounds, {} calls",
        load.threads, load.cores, seeded.calls
    );
    println!(
        "{name}: {:<17} {:>10} {:>9} {:>9} {:>9} {:>11} {:>9}",
        "target", "req/s", "p50 ms", "p99 ms", "/raw", "CPU us/req", "raw/CPU"
    );
    for (label, s) in &summary {
        println!(
            "{name}: {label:<17} {:>10.0} {:>9.3} {:>9.3} {:>8.1}% {:>11.1} {:>8.1}%",
            s.rps,
            s.p50_ms,
            s.p99_ms,
            100.0 * s.rps / raw_sample.rps,
            s.cpu_us,
            100.0 * raw_sample.cpu_us / s.cpu_us
        );
    }
    println!(
        "{name}: deep page / first page latency (p50): {:.2}",
        summary[5].1.p50_ms / summary[4].1.p50_ms
    );

    let soak: u64 = env_or("VOICEPLANE_BENCH_SOAK_SECS", 0);
    if soak > 0 {
        let (_, url, headers, _) = &targets[3];
        let mut elapsed = 0;
        println!("{name}: soak: RSS {:.1} MiB at 0 s", server.rss_mib());
        while elapsed < soak {
            let step = 30.min(soak - elapsed);
            let s = wrk(load, url, headers, step);
            elapsed += step;
            println!(
                "{name}: soak: RSS {:.1} MiB at {elapsed} s ({:.0} req/s)",
                server.rss_mib(),
                s.rps
            );
        }
    }
    summary
}

async fn run(name: &str, bin: &Path, seeded: Seeded, plan: &[usize], load: &Load) {
    let mut by_cores = Vec::new();
    for &cores in plan {
        by_cores.push((cores, measure(name, bin, &seeded, cores, load).await));
    }
    if let [(base_cores, base), rest @ ..] = by_cores.as_slice()
        && !rest.is_empty()
    {
        println!("{name}: scaling, req/s against {base_cores} core(s) (linear = the core ratio)");
        for (cores, summary) in rest {
            let linear = *cores as f64 / *base_cores as f64;
            for ((label, s), (_, b)) in summary.iter().zip(base) {
                let gain = s.rps / b.rps;
                println!(
                    "{name}: {cores} cores {label:<17} {:>10.0} req/s  {gain:>5.2}x  ({:.2} of linear)",
                    s.rps,
                    gain / linear
                );
            }
        }
    }
    std::fs::remove_dir_all(&seeded.dir).unwrap();
}

/// The binary's allocator (bin/src/main.rs), since this program runs as the binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // The children: `<this program> voiceplane serve …` is the binary itself.
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "voiceplane") {
        return voiceplane_bin::main_with(args);
    }
    if args.peek().is_some_and(|a| a == "static") {
        let kind = args.nth(1).unwrap();
        return serve_static(&kind.to_string_lossy());
    }
    let bin = std::env::current_exe().unwrap();
    voiceplane_clients::install_crypto_provider();
    let total = std::thread::available_parallelism().unwrap().get();
    let plan: Vec<usize> = std::env::var("VOICEPLANE_BENCH_SERVER_CORES")
        .unwrap_or_else(|_| "1".into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("VOICEPLANE_BENCH_SERVER_CORES is a list of counts")
        })
        .collect();
    let most = *plan.iter().max().unwrap();
    assert!(
        most < total,
        "the servers need {most} core(s) and wrk at least one more; this machine has {total}"
    );
    let wrk_cores: usize = env_or("VOICEPLANE_BENCH_WRK_CORES", total - most).min(total - most);
    let load = Load {
        cores: core_list(most, wrk_cores),
        threads: wrk_cores,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile_dir("sqlite");
        let url = format!("sqlite://{}?mode=rwc", dir.join("bench.db").display());
        let seeded = seed("sqlite", &bin, dir, url).await;
        run("sqlite", &bin, seeded, &plan, &load).await;

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
            let seeded = seed("postgres", &bin, tempfile_dir("postgres"), url).await;
            run("postgres", &bin, seeded, &plan, &load).await;
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
