//! What the binary's end-to-end tests share: a test's context (its folder is the binary's
//! working directory) with a runtime for the test's async parts, the binary with a clean
//! environment, and a spawned `serve` with its log lines.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use voiceplane_suite::TestContext;

pub const BIN: &str = env!("CARGO_BIN_EXE_voiceplane");

/// A runtime for the test's async parts (its clients, fake upstreams and proxies), and the
/// test's context on SQLite. The binary runs in [`TestContext::folder`], on its embedded
/// default there unless the test points it at [`TestContext::database_url`]; the test ends
/// with `rt.block_on(ctx.cleanup())`, which removes the folder.
pub fn context() -> (tokio::runtime::Runtime, TestContext) {
    let rt = runtime();
    let ctx = rt.block_on(TestContext::sqlite());
    (rt, ctx)
}

/// A multi-threaded runtime, with the crypto provider reqwest needs installed.
pub fn runtime() -> tokio::runtime::Runtime {
    voiceplane_clients::install_crypto_provider();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The binary with a clean environment except for what the test sets, run in `dir`.
pub fn voiceplane(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "info");
    cmd
}

/// Runs `cmd bootstrap` for an organization with the admin `email`, which must succeed, and
/// returns the organization id and the admin API key it printed.
pub fn bootstrap_org(mut cmd: Command, email: &str) -> (String, String) {
    let out = cmd
        .args(["bootstrap", "--org-name", "Acme", "--admin-email", email])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let boot: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        boot["organization_id"].as_str().unwrap().to_owned(),
        boot["api_key"].as_str().unwrap().to_owned(),
    )
}

/// Spawns `serve` on port 0 and returns the child, its base URL and the stream of its stderr.
pub fn spawn_server(dir: &Path) -> (Child, String, mpsc::Receiver<String>) {
    spawn_serve(voiceplane(dir))
}

/// Spawns `cmd serve` on port 0, like [`spawn_server`].
pub fn spawn_serve(cmd: Command) -> (Child, String, mpsc::Receiver<String>) {
    let (child, base, _, logs) = spawn_serve_logged(cmd);
    (child, base, logs)
}

/// Spawns `cmd serve` on port 0, like [`spawn_serve`], and also returns the log lines written
/// before the server listened.
pub fn spawn_serve_logged(
    mut cmd: Command,
) -> (Child, String, Vec<String>, mpsc::Receiver<String>) {
    let mut child = cmd
        .env("VOICEPLANE_LISTEN", "127.0.0.1:0")
        .arg("serve")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut before = Vec::new();
    let base = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the server logs its address: {before:?}"));
        if let Some(at) = line.find("listening on ") {
            // Text lines end with the URL; JSON lines (`log.format = "json"`) close a string.
            let rest = &line[at + "listening on ".len()..];
            let end = rest.find(['"', ' ']).unwrap_or(rest.len());
            break rest[..end].trim().to_owned();
        }
        before.push(line);
    };
    (child, base, before, rx)
}
