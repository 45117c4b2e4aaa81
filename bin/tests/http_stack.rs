//! The binary's HTTP stack over a real listener, as a browser or a client library meets it:
//! CORS preflights allowed and refused, gzip and br round trips of JSON, audio never
//! compressed (download and signed `Range` URL keep their exact `Content-Length`), HTTP/1.1
//! and h2c with prior knowledge on one port, the security headers, and `log.format = "json"`
//! lines carrying the request's id.
//! Runs on the embedded default (a SQLite file) in the test's folder;
//! `VOICEPLANE_TEST_POSTGRES_URL` is not needed.

use std::io::Read as _;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode, Version};
use serde_json::{Value, json};

use crate::support::{bootstrap_org, context, spawn_serve_logged, voiceplane};

const APP: &str = "https://app.example.com";

fn configured(dir: &std::path::Path) -> Command {
    let mut cmd = voiceplane(dir);
    cmd.env(
        "VOICEPLANE_HTTP__CORS_ALLOWED_ORIGINS",
        format!("{APP}, http://localhost:3000"),
    )
    .env("VOICEPLANE_LOG__FORMAT", "json");
    cmd
}

/// Decompresses a body.
type Decoder = fn(&[u8]) -> Vec<u8>;

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// Reads log lines until one is the `request completed` event of `request_id`; every line read
/// must be one JSON object.
fn request_log_line(logs: &mpsc::Receiver<String>, request_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = logs
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no log line for request {request_id}"));
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"));
        if value["message"] == "request completed" && value["span"]["request_id"] == request_id {
            return value;
        }
    }
}

#[test]
fn the_http_stack_over_a_real_listener() {
    let (rt, ctx) = context();
    let dir = ctx.folder();
    let (org, key) = bootstrap_org(voiceplane(dir), "ops@example.com");
    let (mut child, base, before, logs) = spawn_serve_logged(configured(dir));
    for line in &before {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("start-up lines are JSON too ({e}): {line}"));
    }
    let http = reqwest::Client::new();
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    rt.block_on(async {
        // A preflight from an allowed origin: 204 with the rules.
        let preflight = |origin: &'static str| {
            http.request(Method::OPTIONS, format!("{base}/api/agents"))
                .header("Origin", origin)
                .header("Access-Control-Request-Method", "POST")
                .header(
                    "Access-Control-Request-Headers",
                    "x-api-key,x-organization-id,content-type,idempotency-key",
                )
                .send()
        };
        let ok = preflight(APP).await.unwrap();
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        assert_eq!(header(&ok, "access-control-allow-origin").as_deref(), Some(APP));
        let methods = header(&ok, "access-control-allow-methods").unwrap();
        for m in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
            assert!(methods.split(',').any(|x| x == m), "{m} in {methods}");
        }
        let allowed = header(&ok, "access-control-allow-headers").unwrap();
        for h in [
            "x-api-key",
            "x-organization-id",
            "authorization",
            "content-type",
            "idempotency-key",
            "if-match",
        ] {
            assert!(allowed.split(',').any(|x| x == h), "{h} in {allowed}");
        }
        assert!(header(&ok, "access-control-max-age").is_some());
        // From another origin: no Access-Control-Allow-Origin, so the browser refuses.
        let refused = preflight("https://evil.example.net").await.unwrap();
        assert_eq!(header(&refused, "access-control-allow-origin"), None);

        // gzip and br of a large JSON document; the identity answer has an exact length.
        let url = format!("{base}/api/openapi.json");
        let plain = http.get(&url).send().await.unwrap();
        assert_eq!(plain.status(), StatusCode::OK);
        assert_eq!(header(&plain, "content-encoding"), None);
        let plain_len: usize = header(&plain, "content-length").unwrap().parse().unwrap();
        let plain_bytes = plain.bytes().await.unwrap();
        assert_eq!(plain_bytes.len(), plain_len);
        let document: Value = serde_json::from_slice(&plain_bytes).unwrap();
        let codecs: [(&str, Decoder); 2] = [("gzip", gunzip), ("br", unbrotli)];
        for (encoding, decode) in codecs {
            let resp = http
                .get(&url)
                .header("Accept-Encoding", encoding)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(header(&resp, "content-encoding").as_deref(), Some(encoding));
            let vary: Vec<&str> = resp
                .headers()
                .get_all("vary")
                .iter()
                .map(|v| v.to_str().unwrap())
                .collect();
            assert!(
                vary.iter().any(|v| v.eq_ignore_ascii_case("accept-encoding")),
                "{vary:?}"
            );
            assert_eq!(header(&resp, "content-length"), None);
            // Compressed in the same stage that sets the security headers: they are kept.
            assert_eq!(header(&resp, "x-frame-options").as_deref(), Some("DENY"));
            assert_eq!(
                header(&resp, "content-security-policy").as_deref(),
                Some("default-src 'none'; frame-ancestors 'none'")
            );
            let squeezed = resp.bytes().await.unwrap();
            assert!(squeezed.len() * 3 < plain_len, "{encoding}: {} of {plain_len}", squeezed.len());
            let decoded: Value = serde_json::from_slice(&decode(&squeezed)).unwrap();
            assert_eq!(decoded, document, "{encoding}");
        }
        // The client's preference among both.
        let both = http
            .get(&url)
            .header("Accept-Encoding", "gzip;q=0.5, br")
            .send()
            .await
            .unwrap();
        assert_eq!(header(&both, "content-encoding").as_deref(), Some("br"));

        // Security headers, and the request id echoed into the JSON log.
        let resp = http
            .get(format!("{base}/healthz"))
            .header("X-Request-Id", "stack-test-42")
            .header("Origin", APP)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.version(), Version::HTTP_11);
        assert_eq!(header(&resp, "x-content-type-options").as_deref(), Some("nosniff"));
        assert_eq!(header(&resp, "x-frame-options").as_deref(), Some("DENY"));
        assert_eq!(header(&resp, "referrer-policy").as_deref(), Some("no-referrer"));
        assert_eq!(
            header(&resp, "content-security-policy").as_deref(),
            Some("default-src 'none'; frame-ancestors 'none'")
        );
        assert_eq!(header(&resp, "access-control-allow-origin").as_deref(), Some(APP));
        assert!(header(&resp, "access-control-expose-headers").unwrap().contains("x-request-id"));
        let line = request_log_line(&logs, "stack-test-42");
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["span"]["path"], "/healthz");
        assert_eq!(line["span"]["operation"], "health_live", "{line}");
        assert_eq!(line["span"]["status"], 200, "{line}");
        assert!(line["span"]["latency_ms"].is_number(), "{line}");

        // HTTP/2 with prior knowledge on the same port.
        let resp = h2
            .get(format!("{base}/api/agents"))
            .header("X-API-Key", &key)
            .header("X-Organization-Id", &org)
            .header("X-Request-Id", "stack-test-h2")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.version(), Version::HTTP_2);
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(header(&resp, "x-content-type-options").as_deref(), Some("nosniff"));
        let line = request_log_line(&logs, "stack-test-h2");
        assert_eq!(line["span"]["operation"], "agent_list", "{line}");

        // Audio: never compressed, exact Content-Length, Range answered as is.
        let send = |client: &reqwest::Client, method: Method, path: String| {
            client
                .request(method, format!("{base}{path}"))
                .header("X-API-Key", &key)
                .header("X-Organization-Id", &org)
        };
        let agent: Value = send(&http, Method::POST, "/api/agents".into())
            .json(&json!({
                "agent_name": "Front desk", "language": "en", "stt_provider": "deepgram",
                "tts_provider": "provider_one", "tts_voice": "a0e99841", "llm_provider": "openai",
                "llm_model": "gpt-4o-mini"
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let call: Value = send(&http, Method::POST, "/api/calls".into())
            .json(&json!({"agent_id": agent["data"]["agent_id"], "to_number": "+14155550123", "call_type": "outbound"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let sid = call["data"]["call_sid"].as_str().unwrap().to_owned();
        // Text-like bytes, which gzip would shrink a lot if it were (wrongly) applied.
        let wav: Vec<u8> = b"RIFF....WAVEfmt ".iter().copied().cycle().take(200_000).collect();
        let up = send(&http, Method::PUT, format!("/api/calls/{sid}/recording"))
            .header("Content-Type", "audio/wav")
            .body(wav.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(up.status(), StatusCode::OK);
        for client in [&http, &h2] {
            let resp = send(client, Method::GET, format!("/api/calls/{sid}/recording/download"))
                .header("Accept-Encoding", "gzip, br")
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(header(&resp, "content-type").as_deref(), Some("audio/wav"));
            assert_eq!(header(&resp, "content-encoding"), None);
            assert_eq!(header(&resp, "content-length").as_deref(), Some("200000"));
            assert_eq!(header(&resp, "content-security-policy"), None);
            assert_eq!(header(&resp, "x-content-type-options").as_deref(), Some("nosniff"));
            assert_eq!(resp.bytes().await.unwrap().as_ref(), wav.as_slice());
        }
        let link: Value = send(&http, Method::GET, format!("/api/calls/{sid}/recording/stream"))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        // Its origin is `public_url`, which names port 0 here: keep the path and query.
        let url = link["data"]["url"].as_str().unwrap();
        let signed = &format!("{base}{}", &url[url.find("/recordings/").unwrap()..]);
        let part = http
            .get(signed)
            .header("Range", "bytes=1000-1999")
            .header("Accept-Encoding", "gzip, br")
            .send()
            .await
            .unwrap();
        assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(header(&part, "content-range").as_deref(), Some("bytes 1000-1999/200000"));
        assert_eq!(header(&part, "content-length").as_deref(), Some("1000"));
        assert_eq!(header(&part, "content-encoding"), None);
        assert_eq!(part.bytes().await.unwrap().as_ref(), &wav[1000..2000]);
        let whole = http
            .get(signed)
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(header(&whole, "content-encoding"), None);
        assert_eq!(header(&whole, "content-length").as_deref(), Some("200000"));

        // SIGTERM drains both kinds of connection at once (the HTTP/2 one gets GOAWAY): the
        // clients stay alive on this runtime meanwhile, as real ones would.
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = tokio::task::spawn_blocking(move || child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(exit.success(), "{exit:?}");
    });
    // Until the end, every line is one JSON object, and the key never appears.
    let rest: Vec<Value> = logs
        .iter()
        .map(|line| {
            assert!(!line.contains(&key), "the key never reaches the log");
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"))
        })
        .collect();
    assert!(
        rest.iter()
            .any(|l| l["message"] == "all connections closed"),
        "{rest:?}"
    );
    rt.block_on(ctx.cleanup());
}
