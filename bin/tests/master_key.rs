//! The embedded default without `secrets.master_key`, through the real binary: the first start
//! generates `voiceplane-data/.master-key` (0600), integrations can be created, and after a
//! restart the stored credentials still decrypt and recording links still play. Other backends
//! keep the warning and create no file; a damaged file stops start-up naming it.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{context, spawn_serve_logged, voiceplane};

const KEY_FILE: &str = "voiceplane-data/.master-key";

fn bootstrap(cmd: Command) -> std::process::Output {
    let mut cmd = cmd;
    cmd.args([
        "bootstrap",
        "--org-name",
        "Acme",
        "--admin-email",
        "ops@example.com",
    ])
    .output()
    .unwrap()
}

fn stop(mut child: std::process::Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_embedded_default_generates_its_master_key_once_and_keeps_it() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let telnyx = rt.block_on(async {
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::path("/v2/balance"))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({})))
            .mount(&server)
            .await;
        server
    });
    let command = || {
        let mut cmd = voiceplane(dir);
        cmd.env("VOICEPLANE_TELEPHONY__TELNYX__BASE_URL", telnyx.uri());
        cmd
    };

    let out = bootstrap(command());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("generated a master key in ./voiceplane-data/.master-key; back it up"),
        "{stderr}"
    );
    let path = dir.join(KEY_FILE);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let key = std::fs::read_to_string(&path).unwrap();
    assert_eq!(key.len(), 44);
    assert!(!stderr.contains(&key), "the key is never logged");
    let boot: Value = serde_json::from_slice(&out.stdout).unwrap();
    let org = boot["organization_id"].as_str().unwrap().to_owned();
    let api_key = boot["api_key"].as_str().unwrap().to_owned();

    let http = reqwest::Client::new();
    let send = |method: reqwest::Method, url: String, body: Option<Value>| {
        let request = http
            .request(method, url)
            .header("X-API-Key", &api_key)
            .header("X-Organization-Id", &org);
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        async move {
            let resp = request.send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };

    let (first, base, before, _logs) = spawn_serve_logged(command());
    let startup = before.join("\n");
    assert!(
        startup.contains("using the master key in ./voiceplane-data/.master-key"),
        "{startup}"
    );
    assert!(!startup.contains("generated a master key"), "{startup}");
    assert!(!startup.contains("per-process key"), "{startup}");
    assert!(!startup.contains("cannot be stored"), "{startup}");
    let (integration, link) = rt.block_on(async {
        let (status, created) = send(
            reqwest::Method::POST,
            format!("{base}/api/integrations"),
            Some(
                json!({"name": "Telnyx", "provider": "telnyx", "category": "telephony",
                        "credentials": {"api_key": "KEY-telnyx-1"}}),
            ),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        let integration = created["data"]["integration_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (_, agent) = send(
            reqwest::Method::POST,
            format!("{base}/api/agents"),
            Some(
                json!({"agent_name": "Front desk", "language": "en", "stt_provider": "deepgram",
                        "tts_provider": "provider_one", "tts_voice": "a0e99841",
                        "llm_provider": "openai", "llm_model": "gpt-4o-mini",
                        "system_prompt": "You answer the phone."}),
            ),
        )
        .await;
        let (status, call) = send(
            reqwest::Method::POST,
            format!("{base}/api/calls"),
            Some(
                json!({"agent_id": agent["data"]["agent_id"], "to_number": "+15550100",
                        "call_type": "inbound"}),
            ),
        )
        .await;
        assert_eq!(status, 201, "{call}");
        let sid = call["data"]["call_sid"].as_str().unwrap().to_owned();
        let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
        wav.resize(64, 0);
        let resp = http
            .put(format!("{base}/api/calls/{sid}/recording"))
            .header("X-API-Key", &api_key)
            .header("X-Organization-Id", &org)
            .header("Content-Type", "audio/wav")
            .body(wav)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let (status, stream) = send(
            reqwest::Method::GET,
            format!("{base}/api/calls/{sid}/recording/stream"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{stream}");
        // `public_url` is unset, so the link names the configured `listen` (port 0): keep its
        // path and query.
        let url = stream["data"]["url"].as_str().unwrap();
        let link = url[url.find("/recordings/").unwrap()..].to_owned();
        let resp = http.get(format!("{base}{link}")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        (integration, link)
    });
    stop(first);

    // A new process on another port: the link was signed by the first one.
    let (second, base, _, _logs) = spawn_serve_logged(command());
    rt.block_on(async {
        let (status, validated) = send(
            reqwest::Method::POST,
            format!("{base}/api/integrations/{integration}/validate"),
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 200, "{validated}");
        assert_eq!(validated["data"]["status"], "active", "{validated}");
        let resp = http.get(format!("{base}{link}")).send().await.unwrap();
        assert_eq!(
            resp.status(),
            200,
            "the link outlives the process that signed it"
        );
    });
    stop(second);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), key);
    rt.block_on(ctx.cleanup());
}

#[test]
fn other_backends_keep_the_warning_and_a_damaged_file_stops_start_up() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let mut memory = voiceplane(dir);
    memory.env("VOICEPLANE_STORAGE__BACKEND", "memory");
    let out = bootstrap(memory);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "secrets.master_key is not set: recording URLs are signed with a per-process key"
        ),
        "{stderr}"
    );
    assert!(!dir.join(KEY_FILE).exists());

    std::fs::create_dir_all(dir.join("voiceplane-data")).unwrap();
    std::fs::write(dir.join(KEY_FILE), "hunter2-not-a-key").unwrap();
    std::fs::set_permissions(dir.join(KEY_FILE), std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = bootstrap(voiceplane(dir));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "error: the master key file ./voiceplane-data/.master-key is not the base64 of 32 bytes"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
    rt.block_on(ctx.cleanup());
}
