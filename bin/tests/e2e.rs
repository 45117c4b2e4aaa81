//! The binary end to end, as the README's quick start uses it: `bootstrap` prints its JSON,
//! `serve` answers with that key, SIGTERM stops it cleanly, a bad config value is one line, and
//! webhook deliveries survive SIGKILL.
//! Runs on the embedded default (a SQLite file) in the test's folder;
//! `VOICEPLANE_TEST_POSTGRES_URL` is not needed.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{bootstrap_org, context, spawn_serve, spawn_server, voiceplane};

#[test]
fn bootstrap_serve_read_back_and_stop() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let out = voiceplane(dir)
        .args([
            "bootstrap",
            "--org-name",
            "Acme",
            "--admin-email",
            "ops@example.com",
            "--admin-name",
            "Ops",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim().lines().count(),
        1,
        "exactly one JSON line: {stdout}"
    );
    let boot: Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&str> = boot
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 4);
    for key in ["organization_id", "user_id", "key_id", "api_key"] {
        assert!(boot[key].is_string(), "{key} in {boot}");
    }
    let secret = boot["api_key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("vpk_") && secret.len() == 44);
    // The embedded default was created in the working directory.
    assert!(dir.join("voiceplane.db").exists());
    assert!(dir.join("voiceplane-data").is_dir());

    let (mut child, base, logs) = spawn_server(dir);
    let org = boot["organization_id"].as_str().unwrap().to_owned();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let created: Value = http
            .post(format!("{base}/api/agents"))
            .header("X-API-Key", &secret)
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
        assert_eq!(created["success"], true, "{created}");
        let id = created["data"]["agent_id"].as_str().unwrap();
        let resp = http
            .get(format!("{base}/api/agents/{id}"))
            .header("X-API-Key", &secret)
            .header("X-Organization-Id", &org)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let read: Value = resp.json().await.unwrap();
        assert_eq!(read, json!({"success": true, "data": created["data"]}));
    });

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "SIGTERM exits 0, got {exit:?}");
    let logs: Vec<String> = logs.iter().collect();
    let all = logs.join("\n");
    assert!(all.contains("shut down cleanly"), "{all}");
    assert!(all.contains("/api/agents"), "requests are logged: {all}");
    assert!(!all.contains(&secret), "the key never reaches the log");
    rt.block_on(ctx.cleanup());
}

#[test]
fn a_bad_config_value_is_one_line_naming_the_key() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    for (var, value, key) in [
        ("VOICEPLANE_LISTEN", "abc", "listen"),
        (
            "VOICEPLANE_HTTP__MAX_BODY_BYTES",
            "lots",
            "http.max_body_bytes",
        ),
        ("VOICEPLANE_STORAGE__BACKEND", "tape", "storage.backend"),
    ] {
        let out = voiceplane(dir)
            .env(var, value)
            .arg("migrate")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{var}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line: {stderr}");
        assert!(
            lines[0].starts_with("config error: ") && lines[0].contains(key),
            "{stderr}"
        );
    }
    // A secret in a bad value is not echoed.
    let out = voiceplane(dir)
        .env(
            "VOICEPLANE_DATABASE__URL",
            "postgres://app:hunter2@127.0.0.1:1/db",
        )
        .arg("migrate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(stderr.contains("***"), "{stderr}");
    rt.block_on(ctx.cleanup());
}

/// Events recorded while the receiver is down, the server killed with SIGKILL and started
/// again: every event still reaches the receiver once it is up.
#[test]
fn deliveries_survive_sigkill() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let with_env = |mut cmd: Command| {
        cmd.env(
            "VOICEPLANE_SECRETS__MASTER_KEY",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        )
        .env("VOICEPLANE_WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true")
        // A job running when the process is killed is run again after its lease.
        .env("VOICEPLANE_JOBS__LEASE_SECS", "2")
        .env("VOICEPLANE_WEBHOOKS__RETRY_SCHEDULE", ["1"; 60].join(","));
        cmd
    };
    let (org, key) = bootstrap_org(with_env(voiceplane(dir)), "ops@example.com");
    // The receiver's port, closed for now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The log receivers are kept alive so that the servers' stderr keeps being drained.
    let spawn = || spawn_serve(with_env(voiceplane(dir)));
    let http = reqwest::Client::new();
    let post = |base: String, path: &'static str, body: Value| {
        let (http, org, key) = (http.clone(), org.clone(), key.clone());
        async move {
            let answer: Value = http
                .post(format!("{base}{path}"))
                .header("X-API-Key", key)
                .header("X-Organization-Id", org)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(answer["success"], true, "{answer}");
            answer
        }
    };

    let (mut first, base, _first_logs) = spawn();
    let events = rt.block_on(async {
        let url = format!("http://127.0.0.1:{port}/hook");
        post(
            base.clone(),
            "/api/webhooks",
            json!({"url": url, "events": ["tool.created"]}),
        )
        .await;
        let mut tools = Vec::new();
        for i in 0..5 {
            let tool = post(
                base.clone(),
                "/api/tools",
                json!({"tool_name": format!("t{i}"), "tool_description": "d", "http_method": "GET",
                       "url": "https://example.com/x"}),
            )
            .await;
            tools.push(tool["data"]["tool_id"].as_str().unwrap().to_owned());
        }
        tools
    });
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();

    let (mut second, _, _second_logs) = spawn();
    rt.block_on(async {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        let receiver = wiremock::MockServer::builder()
            .listener(listener)
            .start()
            .await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(wiremock::ResponseTemplate::new(200))
            .mount(&receiver)
            .await;
        // A job claimed when the process died waits out its lease (2 s) before it is claimed
        // again; the others are due within a second.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let mut delivered: Vec<String> = receiver
                .received_requests()
                .await
                .unwrap_or_default()
                .iter()
                .map(|r| {
                    let body: Value = serde_json::from_slice(&r.body).unwrap();
                    body["data"]["tool_id"].as_str().unwrap().to_owned()
                })
                .collect();
            delivered.sort();
            delivered.dedup();
            if delivered.len() == events.len() {
                let mut expected = events.clone();
                expected.sort();
                assert_eq!(delivered, expected);
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "delivered {delivered:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    second.kill().unwrap();
    second.wait().unwrap();
    rt.block_on(ctx.cleanup());
}

/// A dial in flight when the server is killed with SIGKILL, then started again: the provider
/// was asked to dial once, and the restarted server, rather than dialing again, finds the call
/// in the provider's list and adopts it.
#[test]
fn a_dial_is_never_sent_twice_across_sigkill() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let twilio = rt.block_on(wiremock::MockServer::start());
    let sid = "AC0123456789abcdef0123456789abcdef";
    let calls = format!("/2010-04-01/Accounts/{sid}/Calls.json");
    rt.block_on(
        // Slow enough that the server dies while the request is in flight.
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .and(wiremock::matchers::path(calls.clone()))
            .respond_with(
                wiremock::ResponseTemplate::new(201)
                    .set_body_json(json!({"sid": "CA0123456789abcdef0123456789abcdef"}))
                    .set_delay(Duration::from_secs(30)),
            )
            .mount(&twilio),
    );
    // Twilio did create the call: asked after the restart, it lists it.
    rt.block_on(
        wiremock::Mock::given(wiremock::matchers::method("GET"))
            .and(wiremock::matchers::path(calls.clone()))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({
                "calls": [{"sid": "CA0123456789abcdef0123456789abcdef", "status": "ringing",
                           "date_created": chrono::Utc::now().to_rfc2822()}]
            })))
            .mount(&twilio),
    );
    let twilio_url = twilio.uri();
    let with_env = |mut cmd: Command| {
        cmd.env(
            "VOICEPLANE_SECRETS__MASTER_KEY",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        )
        .env("VOICEPLANE_TELEPHONY__TWILIO__BASE_URL", &twilio_url)
        .env("VOICEPLANE_JOBS__LEASE_SECS", "2");
        cmd
    };
    let (org, key) = bootstrap_org(with_env(voiceplane(dir)), "ops@example.com");
    let http = reqwest::Client::new();
    let send = |method: reqwest::Method, base: &str, path: &str, body: Option<Value>| {
        let mut req = http
            .request(method, format!("{base}{path}"))
            .header("X-API-Key", &key)
            .header("X-Organization-Id", &org);
        if let Some(body) = body {
            req = req.json(&body);
        }
        async move {
            let answer: Value = req.send().await.unwrap().json().await.unwrap();
            assert_eq!(answer["success"], true, "{answer}");
            answer["data"].clone()
        }
    };
    let (mut first, base, _first_logs) = spawn_serve(with_env(voiceplane(dir)));
    let call_sid = rt.block_on(async {
        use reqwest::Method as M;
        send(
            M::PATCH,
            &base,
            "/api/organization/settings",
            Some(json!({"runtime_stream_url": "wss://rt.example.com/media"})),
        )
        .await;
        let integration = send(
            M::POST,
            &base,
            "/api/integrations",
            Some(
                json!({"name": "Twilio", "provider": "twilio", "category": "telephony",
                        "credentials": {"account_sid": sid, "auth_token": "token"}}),
            ),
        )
        .await;
        let agent = send(
            M::POST,
            &base,
            "/api/agents",
            Some(json!({
                "agent_name": "Caller", "language": "en", "stt_provider": "deepgram",
                "tts_provider": "provider_one", "tts_voice": "a0e99841", "llm_provider": "openai",
                "llm_model": "gpt-4o-mini", "system_prompt": "You call people."
            })),
        )
        .await;
        let number = send(
            M::POST,
            &base,
            "/api/phone-numbers",
            Some(json!({"phone_number": "+14155550100",
                        "integration_id": integration["integration_id"]})),
        )
        .await;
        let call = send(
            M::POST,
            &base,
            "/api/calls/dial",
            Some(
                json!({"agent_id": agent["agent_id"], "to_number": "+14155550199",
                        "from_phone_number_id": number["phone_number_id"]}),
            ),
        )
        .await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while twilio
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the dial was never sent"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        call["call_sid"].as_str().unwrap().to_owned()
    });
    first.kill().unwrap(); // SIGKILL, with the provider's answer still on its way
    first.wait().unwrap();

    let (mut second, base, _second_logs) = spawn_serve(with_env(voiceplane(dir)));
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let call = send(
                reqwest::Method::GET,
                &base,
                &format!("/api/calls/{call_sid}"),
                None,
            )
            .await;
            if call["provider_call_id"].is_string() {
                assert_eq!(
                    call["provider_call_id"], "CA0123456789abcdef0123456789abcdef",
                    "{call}"
                );
                assert_eq!(call["status"], "ringing", "{call}");
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{call}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let sent = twilio.received_requests().await.unwrap_or_default();
        assert_eq!(
            sent.iter()
                .filter(|r| r.method.as_str() == "POST" && r.url.path() == calls)
                .count(),
            1,
            "the provider was asked more than once"
        );
    });
    second.kill().unwrap();
    second.wait().unwrap();
    rt.block_on(ctx.cleanup());
}
