//! Voices over HTTP: searching both providers, listing provider_two's shared library and
//! adding a voice from it, parameters refused before calling out, credentials, and upstream
//! failures (502) or missing keys (503) — our API on a real listener, the real provider
//! clients of `voiceplane-clients`, and fake upstreams (wiremock) on loopback.

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, db_tests, fields, keys, mount_voice_catalogue,
    voice_providers,
};
use wiremock::matchers::{any, body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY_ONE: &str = "p1-test-key-SECRET";
const KEY_TWO: &str = "p2-test-key-SECRET";
const UPSTREAM_BODY: &str = "UPSTREAM-BODY-MARKER";
const VOICE_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "gender",
    "language",
    "preview_url",
    "has_preview",
];
const LIBRARY_VOICE_FIELDS: &[&str] = &["id", "public_owner_id", "name", "preview_url"];

/// What this suite checks of every answer besides [`voiceplane_suite::read_json`]'s (which
/// include an error body being exactly `{detail}`): exactly `application/json`, and no
/// provider key or upstream body in an error's detail.
fn check_answer(status: StatusCode, headers: &HeaderMap, v: &Value) {
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    if !status.is_success() {
        let detail = v["detail"].as_str().unwrap();
        for secret in [KEY_ONE, KEY_TWO, UPSTREAM_BODY] {
            assert!(!detail.contains(secret), "{secret} leaked: {detail}");
        }
    }
}

/// A caller of the same organization with a new key of `role`.
async fn with_role(caller: &ApiCaller, role: &str) -> ApiCaller {
    let (status, v) = caller
        .post("/api/api-keys", json!({"name": role, "role": role}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    caller.with_key(v["data"]["api_key"].as_str().unwrap())
}

/// Our API with providers pointing at `upstream`, and an admin caller.
async fn setup(
    ctx: &TestContext,
    upstream: &MockServer,
    configured: bool,
) -> (TestServer, ApiCaller) {
    let voices = voice_providers(&upstream.uri(), configured.then_some((KEY_ONE, KEY_TWO)));
    let server = TestServer::start_configured(ctx, |s| s.with_voice_providers(voices)).await;
    let caller = ApiCaller {
        check: Some(check_answer),
        ..ApiCaller::bootstrap(ctx, &server, "Acme").await
    };
    (server, caller)
}

async fn upstream_requests(upstream: &MockServer) -> Vec<wiremock::Request> {
    upstream.received_requests().await.unwrap()
}

async fn search_on_both_providers(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    mount_voice_catalogue(&upstream, (KEY_ONE, KEY_TWO)).await;
    let (server, caller) = setup(ctx, &upstream, true).await;

    let (status, v) = caller
        .get("/api/voices/search?provider=provider_two&query=calm&cursor=page-1")
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(keys(&v), fields(&["voices", "has_more", "next_cursor"]));
    assert_eq!(keys(&v["voices"][0]), fields(VOICE_FIELDS));
    assert_eq!(
        v,
        json!({"voices": [{"id": "el-1", "name": "Rachel", "description": "calm",
                           "gender": "female", "language": "en",
                           "preview_url": "https://cdn.example/el-1.mp3", "has_preview": true}],
               "has_more": true, "next_cursor": "page-2"})
    );

    let (status, v) = caller
        .get("/api/voices/search?provider=provider_one&query=narrator&gender=male&language=en")
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"voices": [{"id": "ca-1", "name": "Narrator", "description": null,
                           "gender": "male", "language": "en", "preview_url": null,
                           "has_preview": true}],
               "has_more": false, "next_cursor": null})
    );

    let sent: Vec<String> = upstream_requests(&upstream)
        .await
        .iter()
        .map(|r| format!("{} {}", r.url.path(), r.url.query().unwrap_or("")))
        .collect();
    assert_eq!(
        sent,
        [
            "/v2/voices search=calm&page_size=20&next_page_token=page-1",
            "/voices limit=20&q=narrator&gender=masculine&language=en&expand%5B%5D=preview_file_url",
        ]
    );
    server.stop().await;
}

async fn search_rejects_bad_parameters_before_calling_out(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    let (server, caller) = setup(ctx, &upstream, true).await;
    for (query, needle) in [
        ("", "provider is required"),
        ("?query=x", "provider is required"),
        ("?provider=", "provider is required"),
        ("?provider=provider_three", "`provider_three`"),
        (
            "?provider=PROVIDER_ONE",
            "must be `provider_one` or `provider_two`",
        ),
        ("?provider=provider_one&page_size=101", "page_size"),
        ("?provider=provider_one&page_size=0", "page_size"),
        ("?provider=provider_one&page_size=x", "page_size"),
    ] {
        let (status, v) = caller.get(&format!("/api/voices/search{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {v}");
        assert!(
            v["detail"].as_str().unwrap().contains(needle),
            "{query}: {v}"
        );
    }
    assert!(upstream_requests(&upstream).await.is_empty());
    server.stop().await;
}

async fn library_lists_with_every_parameter(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/shared-voices"))
        .and(header("xi-api-key", KEY_TWO))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "voices": [{"public_owner_id": "own-1", "voice_id": "sh-1", "name": "Deep",
                        "preview_url": "https://cdn.example/sh-1.mp3", "accent": "british"}],
            "has_more": true
        })))
        .mount(&upstream)
        .await;
    let (server, caller) = setup(ctx, &upstream, true).await;

    let (status, v) = caller
        .get(
            "/api/voices/provider_two/library?query=deep&language=en&gender=male&age=old\
             &accent=british&category=professional&use_cases=narration&use_cases=news\
             &page=1&page_size=5",
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(keys(&v["voices"][0]), fields(LIBRARY_VOICE_FIELDS));
    assert_eq!(
        v,
        json!({"voices": [{"id": "sh-1", "public_owner_id": "own-1", "name": "Deep",
                           "preview_url": "https://cdn.example/sh-1.mp3"}],
               "has_more": true, "next_cursor": "2"})
    );

    // Defaults: first page, 30 per page, trending.
    let (status, v) = caller.get("/api/voices/provider_two/library").await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["next_cursor"], "1");

    let sent: Vec<String> = upstream_requests(&upstream)
        .await
        .iter()
        .map(|r| r.url.query().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        sent,
        [
            "page=1&page_size=5&search=deep&language=en&gender=male&age=old&accent=british\
             &category=professional&use_cases=narration&use_cases=news&sort=trending",
            "page=0&page_size=30&sort=trending",
        ]
    );

    for query in ["page_size=101", "page=-1", "page=first", "page_size=0"] {
        let (status, v) = caller
            .get(&format!("/api/voices/provider_two/library?{query}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {v}");
    }
    let (_, v) = caller
        .get("/api/voices/provider_two/library?page_size=101")
        .await;
    assert_eq!(v["detail"], "page_size must be between 1 and 100");
    assert_eq!(upstream_requests(&upstream).await.len(), 2);
    server.stop().await;
}

async fn adding_a_shared_voice(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/voices/add/own-1/sh-1"))
        .and(header("xi-api-key", KEY_TWO))
        .and(body_json(json!({"new_name": "Support line"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"voice_id": "acct-7"})))
        .mount(&upstream)
        .await;
    let (server, admin) = setup(ctx, &upstream, true).await;
    let body = json!({"public_owner_id": "own-1", "voice_id": "sh-1", "name": "Support line"});

    // 200 (not 201): the answer is the provider's plain `{voice_id}`; nothing is created here.
    let (status, v) = admin
        .post("/api/voices/provider_two/library/add", body.clone())
        .await;
    assert_eq!((status, v), (StatusCode::OK, json!({"voice_id": "acct-7"})));

    let manager = with_role(&admin, "agent_manager").await;
    let (status, _) = manager
        .post("/api/voices/provider_two/library/add", body.clone())
        .await;
    assert_eq!(status, StatusCode::OK);

    let user = with_role(&admin, "user").await;
    let (status, v) = user
        .post("/api/voices/provider_two/library/add", body.clone())
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{v}");
    // Users may still read.
    Mock::given(method("GET"))
        .and(path("/v1/shared-voices"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"voices": [], "has_more": false})),
        )
        .mount(&upstream)
        .await;
    let (status, v) = user.get("/api/voices/provider_two/library").await;
    assert_eq!(
        (status, v),
        (
            StatusCode::OK,
            json!({"voices": [], "has_more": false, "next_cursor": null})
        )
    );

    for field in ["public_owner_id", "voice_id", "name"] {
        let mut partial = body.clone();
        partial.as_object_mut().unwrap().remove(field);
        let (status, v) = admin
            .post("/api/voices/provider_two/library/add", partial)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {v}");
        assert_eq!(v["detail"], format!("{field} is required"));
    }
    for bad in [
        json!({"public_owner_id": "own-1", "voice_id": "sh-1", "name": "  "}),
        json!({"public_owner_id": "../x", "voice_id": "sh-1", "name": "n"}),
        json!({"public_owner_id": "own-1", "voice_id": 7, "name": "n"}),
        json!({"public_owner_id": "own-1", "voice_id": "sh-1", "name": "n", "extra": 1}),
    ] {
        let (status, v) = admin
            .post("/api/voices/provider_two/library/add", bad.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {v}");
    }
    // Two successful adds reached the upstream; the refused ones did not.
    let adds = upstream_requests(&upstream)
        .await
        .into_iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(adds, 2);
    server.stop().await;
}

async fn voice_endpoints_need_credentials(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    let (server, admin) = setup(ctx, &upstream, true).await;
    let anonymous = ApiCaller { key: None, ..admin };
    for (method, path) in [
        (Method::GET, "/api/voices/search?provider=provider_one"),
        (Method::GET, "/api/voices/provider_two/library"),
        (Method::POST, "/api/voices/provider_two/library/add"),
    ] {
        let (status, v) = anonymous.send(method, path, Some(json!({}))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {v}");
    }
    assert!(upstream_requests(&upstream).await.is_empty());
    server.stop().await;
}

async fn upstream_failures_are_502_and_missing_keys_503(ctx: &TestContext) {
    let upstream = MockServer::start().await;
    Mock::given(any())
        .respond_with(
            ResponseTemplate::new(500).set_body_string(format!("{UPSTREAM_BODY} {KEY_TWO}")),
        )
        .mount(&upstream)
        .await;
    let (server, caller) = setup(ctx, &upstream, true).await;
    let add = json!({"public_owner_id": "o", "voice_id": "v", "name": "n"});
    for (method, path) in [
        (Method::GET, "/api/voices/search?provider=provider_one"),
        (Method::GET, "/api/voices/search?provider=provider_two"),
        (Method::GET, "/api/voices/provider_two/library"),
        (Method::POST, "/api/voices/provider_two/library/add"),
    ] {
        let body = (method == Method::POST).then(|| add.clone());
        let (status, v) = caller.send(method, path, body).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{path}: {v}");
        assert!(
            v["detail"].as_str().unwrap().contains("(HTTP 500)"),
            "{path}: {v}"
        );
    }
    server.stop().await;

    let (server, caller) = setup(ctx, &upstream, false).await;
    let before = upstream_requests(&upstream).await.len();
    for (method, path, provider) in [
        (
            Method::GET,
            "/api/voices/search?provider=provider_one",
            "provider_one",
        ),
        (
            Method::GET,
            "/api/voices/search?provider=provider_two",
            "provider_two",
        ),
        (
            Method::GET,
            "/api/voices/provider_two/library",
            "provider_two",
        ),
        (
            Method::POST,
            "/api/voices/provider_two/library/add",
            "provider_two",
        ),
    ] {
        let body = (method == Method::POST).then(|| add.clone());
        let (status, v) = caller.send(method, path, body).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {v}");
        assert_eq!(
            v["detail"],
            format!("{provider} is not configured: set providers.{provider}.api_key")
        );
    }
    assert_eq!(upstream_requests(&upstream).await.len(), before);
    server.stop().await;
}

db_tests!(
    search_on_both_providers,
    search_rejects_bad_parameters_before_calling_out,
    library_lists_with_every_parameter,
    adding_a_shared_voice,
    voice_endpoints_need_credentials,
    upstream_failures_are_502_and_missing_keys_503,
);
