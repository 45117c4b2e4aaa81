//! `examples/runtime/runtime.py`, the runtime of docs/RUNTIME.md, against a real server: an
//! incoming Twilio call is streamed to it by a client that plays Twilio's messages
//! (`stream_client.py`); it reads the call's session with its scoped key and appends its one
//! transcript message. Runs under the reference Python of the signature checks, which `.ci/run`
//! gives `websockets`; skipped without it, unless required.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use voiceplane_suite::*;

use super::line::{Line, NUMBER, Provider, TOKEN};
use super::signatures::reference_python;

/// The runtime's process, killed when the test ends however it ends.
struct Runtime(Child);

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn the_example_runtime_answers_a_stream(ctx: &TestContext) {
    let Some(python) = reference_python("the runtime example") else {
        return;
    };
    let line = Line::open(ctx, Provider::Twilio).await;
    let voice = [
        ("CallSid", "CA00000000000000000000000000000077"),
        ("From", "+33612345678"),
        ("To", NUMBER),
    ];
    let path = format!("/telephony/twilio/{}/voice", line.integration_id);
    let twiml = line
        .twilio_as(TOKEN, &path, &voice)
        .await
        .text()
        .await
        .unwrap();
    let call_sid = twiml
        .split("name=\"call_sid\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a stream for the call")
        .to_owned();
    let key = line
        .c
        .create(
            "/api/api-keys",
            json!({"name": "runtime", "role": "agent_manager",
                   "scopes": ["calls:read", "calls:write", "agents:read"]}),
        )
        .await;
    let port = free_port();
    let root = env!("CARGO_MANIFEST_DIR");
    let _runtime = Runtime(
        Command::new(&python)
            .arg(format!("{root}/examples/runtime/runtime.py"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("VOICEPLANE_URL", &line.server.base)
            .env("VOICEPLANE_API_KEY", key["api_key"].as_str().unwrap())
            .env("VOICEPLANE_ORG_ID", line.c.org.as_deref().unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the runtime starts"),
    );
    eventually("the runtime listens", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
    })
    .await;
    let url = format!("ws://127.0.0.1:{port}/media/{call_sid}");
    let agent_id = line.agent_id.clone();
    let played = tokio::task::spawn_blocking(move || {
        Command::new(&python)
            .arg(format!("{root}/tests/suite/telephony/stream_client.py"))
            .args([
                &url,
                &call_sid,
                "CA00000000000000000000000000000077",
                &agent_id,
            ])
            .status()
    });
    let status = tokio::time::timeout(Duration::from_secs(30), played)
        .await
        .expect("the stream is played within 30 s")
        .unwrap()
        .expect("the client runs");
    assert!(status.success(), "{status}");
    let sid = line.calls().await[0]["call_sid"]
        .as_str()
        .unwrap()
        .to_owned();
    let messages = format!("/api/calls/{sid}/messages");
    eventually("the runtime appends its message", || async {
        let (status, body) = line.c.get(&messages).await;
        status == StatusCode::OK && !body["data"].as_array().unwrap().is_empty()
    })
    .await;
    let (_, body) = line.c.get(&messages).await;
    let text = body["data"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("received 8000 bytes of audio") && text.contains("50 media messages"),
        "{text}"
    );
    assert_eq!(body["data"][0]["role"], "system");
    line.close().await;
}

db_tests!(the_example_runtime_answers_a_stream);
