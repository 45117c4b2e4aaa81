//! What the binary's end-to-end tests share: a temporary working folder, the binary with a
//! clean environment, and a spawned `serve` with its log lines.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_voiceplane");

pub fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("voiceplane-e2e-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
