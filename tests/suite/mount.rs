//! The axum example's own router (`examples/axum_mount.rs`, included below, not a copy) served
//! on a real listener: the application's routes, the voiceplane API under `/voice`, and the
//! application's middleware over both.
//!
//! Runs on SQLite only: the mount does not depend on the database.

#[allow(dead_code)] // the example's `main` is not called here
#[path = "../../examples/axum_mount.rs"]
mod axum_mount;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::{ApiCaller, TestContext, http_client};

/// Serves `axum_mount::app` on `127.0.0.1:0`; returns its base URL and a stop switch.
async fn serve_example(
    ctx: &TestContext,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let app = axum_mount::app(ctx.service.clone());
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });
    (base, stop, task)
}

fn served_by(res: &reqwest::Response) -> Option<&str> {
    res.headers()
        .get(axum_mount::APP_HEADER)
        .and_then(|v| v.to_str().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_is_mounted_under_voice_inside_the_app() {
    let ctx = TestContext::sqlite().await;
    let org = ctx.bootstrap("Mounted").await;
    let (base, stop, task) = serve_example(&ctx).await;
    let client = http_client();

    // The application's own routes, with its middleware.
    for (path, body) in [
        ("/", "the existing application"),
        ("/about", "an axum app with voiceplane under /voice"),
    ] {
        let res = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_eq!(served_by(&res), Some("axum-mount-example"), "{path}");
        assert_eq!(res.text().await.unwrap(), body);
    }

    // voiceplane under the prefix: no auth on health, the app's middleware applied.
    let res = client
        .get(format!("{base}/voice/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(served_by(&res), Some("axum-mount-example"));
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"status": "ok"}));

    // A real write and read through the mount, with the bootstrap key.
    let voice = ApiCaller::at(&format!("{base}/voice"), &org.organization_id, &org.api_key);
    let res = voice
        .request(Method::POST, "/api/agents")
        .json(&json!({
            "agent_name": "Mounted desk",
            "language": "en",
            "stt_provider": "deepgram",
            "tts_provider": "provider_one",
            "tts_voice": "voice_1",
            "llm_provider": "openai",
            "llm_model": "gpt-4o-mini"
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(served_by(&res), Some("axum-mount-example"));
    assert_eq!(res.headers()["cache-control"], "no-store");
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let created: Value = res.json().await.unwrap();
    let agent_id = created["data"]["agent_id"].as_str().unwrap().to_owned();
    // The adapter never saw `/voice`, yet its Location resolves under it.
    let posted = reqwest::Url::parse(&format!("{base}/voice/api/agents")).unwrap();
    assert_eq!(
        posted.join(&location).unwrap().path(),
        format!("/voice/api/agents/{agent_id}")
    );

    let res = voice
        .request(Method::GET, &format!("/api/agents/{agent_id}"))
        .header("X-Request-Id", "mount-test-1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(served_by(&res), Some("axum-mount-example"));
    assert_eq!(res.headers()["x-request-id"], "mount-test-1");
    let viewed: Value = res.json().await.unwrap();
    assert_eq!(viewed["data"], created["data"]);
    assert_eq!(viewed["data"]["agent_name"], "Mounted desk");

    let res = voice
        .request(Method::GET, "/api/api-keys")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let keys: Value = res.json().await.unwrap();
    assert_eq!(keys["data"][0]["key_id"], org.key_id.as_str());

    // Errors under the prefix are voiceplane's: JSON detail, request id, app middleware.
    let res = client
        .get(format!("{base}/voice/api/calls"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(served_by(&res), Some("axum-mount-example"));
    assert!(res.headers().contains_key("x-request-id"));
    assert!(res.json::<Value>().await.unwrap()["detail"].is_string());

    let res = client
        .get(format!("{base}/voice/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"detail": "no route for GET /nope"}),
        "the adapter sees the path without the prefix"
    );

    // Outside the prefix, voiceplane's routes do not exist: the app answers.
    let res = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(!res.headers().contains_key("x-request-id"));

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
    ctx.cleanup().await;
}
