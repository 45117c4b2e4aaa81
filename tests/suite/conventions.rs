//! The HTTP conventions of the API's resources, over a real listener: `Location` on every 201
//! (and it resolves), `ETag` with `If-None-Match` → 304 and `If-Match` → 412, `HEAD` on every
//! `GET` route, and `GET /api/api-keys/{key_id}` without the secret.

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};
use voiceplane_suite::*;

/// An answer read whole: status, headers, body bytes.
struct Raw {
    status: StatusCode,
    headers: HeaderMap,
    bytes: Vec<u8>,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: {}",
                self.status,
                String::from_utf8_lossy(&self.bytes)
            )
        })
    }

    fn etag(&self) -> String {
        self.headers
            .get("etag")
            .unwrap_or_else(|| panic!("no ETag on a {} answer", self.status))
            .to_str()
            .unwrap()
            .to_owned()
    }
}

async fn send(
    c: &ApiCaller,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Raw {
    let mut req = c.http.request(method, url);
    if let Some(org) = &c.org {
        req = req.header("X-Organization-Id", org);
    }
    if let Some(key) = &c.key {
        req = req.header("X-API-Key", key);
    }
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.expect("answered");
    Raw {
        status: resp.status(),
        headers: resp.headers().clone(),
        bytes: resp.bytes().await.unwrap().to_vec(),
    }
}

/// POSTs `body` to `path`, requires a 201 with a `Location`, resolves it against the URL
/// posted to (as a client does, RFC 3986 §5) and requires a GET of it to answer 200; returns
/// the created `data` and the resolved path.
async fn create_and_follow(c: &ApiCaller, path: &str, body: Value) -> (Value, String) {
    let posted = format!("{}{path}", c.base);
    let created = send(c, Method::POST, &posted, &[], Some(body)).await;
    assert_eq!(
        created.status,
        StatusCode::CREATED,
        "POST {path}: {}",
        created.json()
    );
    let location = created
        .headers
        .get("location")
        .unwrap_or_else(|| panic!("POST {path}: 201 without Location"))
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        !location.starts_with('/') && !location.contains("://"),
        "POST {path}: Location {location:?} is relative, so that it resolves under a prefix"
    );
    let resolved = Url::parse(&posted).unwrap().join(&location).unwrap();
    let followed = send(c, Method::GET, resolved.as_str(), &[], None).await;
    assert_eq!(
        followed.status,
        StatusCode::OK,
        "POST {path}: Location {location} → GET {resolved}: {}",
        followed.json()
    );
    (created.json()["data"].clone(), resolved.path().to_owned())
}

/// A server, an admin of a new organization on it, and the full URL of a new agent.
async fn an_agent(ctx: &TestContext) -> (TestServer, ApiCaller, String) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let agent = c.create("/api/agents", agent_body("Desk")).await;
    let url = server.url(&format!(
        "/api/agents/{}",
        agent["agent_id"].as_str().unwrap()
    ));
    (server, c, url)
}

async fn every_201_has_a_location_that_resolves(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;

    let (agent, at) = create_and_follow(&c, "/api/agents", agent_body("Desk")).await;
    let agent_id = agent["agent_id"].as_str().unwrap();
    assert_eq!(at, format!("/api/agents/{agent_id}"));
    let (_, at) = create_and_follow(&c, "/api/tools", tool_body("lookup")).await;
    assert!(at.starts_with("/api/tools/tool_"), "{at}");
    let (_, at) = create_and_follow(
        &c,
        "/api/integrations",
        twilio_body("Main", "AC00000000000000000000000000000001", "token"),
    )
    .await;
    assert!(at.starts_with("/api/integrations/"), "{at}");
    let (_, at) =
        create_and_follow(&c, "/api/phone-numbers", phone_number_body("+14155550100")).await;
    assert!(at.starts_with("/api/phone-numbers/"), "{at}");
    let (_, at) = create_and_follow(
        &c,
        "/api/knowledge-base",
        json!({"name": "FAQ", "text": "We open at nine."}),
    )
    .await;
    assert!(at.starts_with("/api/knowledge-base/doc"), "{at}");
    let (call, at) = create_and_follow(&c, "/api/calls", call_body(agent_id)).await;
    let call_sid = call["call_sid"].as_str().unwrap();
    assert_eq!(at, format!("/api/calls/{call_sid}"));
    let (_, at) = create_and_follow(
        &c,
        &format!("/api/calls/{call_sid}/messages"),
        json!({"messages": [{"role": "user", "text": "Hello"}]}),
    )
    .await;
    assert_eq!(at, format!("/api/calls/{call_sid}/messages"));
    let (_, at) = create_and_follow(
        &c,
        "/api/webhooks",
        json!({"url": "https://hooks.example.com/vp", "events": ["*"]}),
    )
    .await;
    assert!(at.starts_with("/api/webhooks/"), "{at}");
    let (_, at) = create_and_follow(
        &c,
        "/api/auth/organizations/invitations",
        json!({"email": "new@example.com", "role": "user"}),
    )
    .await;
    assert!(
        at.starts_with("/api/auth/organizations/invitations/inv"),
        "{at}"
    );
    let (key, at) =
        create_and_follow(&c, "/api/api-keys", json!({"name": "ci", "role": "user"})).await;
    assert_eq!(
        at,
        format!("/api/api-keys/{}", key["key_id"].as_str().unwrap())
    );

    // The same reference resolves under a prefix the adapter never sees.
    let mounted = Url::parse("https://example.com/voice/api/agents").unwrap();
    assert_eq!(
        mounted.join(&format!("agents/{agent_id}")).unwrap().path(),
        format!("/voice/api/agents/{agent_id}")
    );
    server.stop().await;
}

async fn etags_answer_304_and_412(ctx: &TestContext) {
    let (server, c, url) = an_agent(ctx).await;

    let first = send(&c, Method::GET, &url, &[], None).await;
    assert_eq!(first.status, StatusCode::OK);
    let etag = first.etag();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong: {etag}"
    );
    assert_eq!(send(&c, Method::GET, &url, &[], None).await.etag(), etag);

    // If-None-Match: the tag, weakly, in a list or `*` → 304 with the tag and no body.
    let weak = format!("W/{etag}");
    let listed = format!("\"other\", {etag}");
    for value in [etag.as_str(), weak.as_str(), listed.as_str(), "*"] {
        let r = send(&c, Method::GET, &url, &[("if-none-match", value)], None).await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED, "If-None-Match: {value}");
        assert_eq!(r.etag(), etag);
        assert!(r.bytes.is_empty());
    }
    let head = send(&c, Method::HEAD, &url, &[("if-none-match", &etag)], None).await;
    assert_eq!(
        (head.status, head.etag()),
        (StatusCode::NOT_MODIFIED, etag.clone())
    );
    assert!(
        head.headers.get("content-length").is_none_or(|l| l != "0"),
        "a 304 never claims an empty representation"
    );
    let r = send(
        &c,
        Method::GET,
        &url,
        &[("if-none-match", "\"other\"")],
        None,
    )
    .await;
    assert_eq!((r.status, r.etag()), (StatusCode::OK, etag.clone()));

    // If-Match that does not match: 412 {detail}, and nothing changed.
    let rename = json!({"agent_name": "Renamed"});
    for value in ["\"stale\"", weak.as_str()] {
        let r = send(
            &c,
            Method::PATCH,
            &url,
            &[("if-match", value)],
            Some(rename.clone()),
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::PRECONDITION_FAILED,
            "If-Match: {value}"
        );
        assert_eq!(keys(&r.json()), fields(&["detail"]));
        assert!(r.json()["detail"].as_str().unwrap().len() > 20);
    }
    let r = send(&c, Method::DELETE, &url, &[("if-match", "\"stale\"")], None).await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let unchanged = send(&c, Method::GET, &url, &[], None).await;
    assert_eq!(unchanged.json(), first.json());
    assert_eq!(unchanged.etag(), etag);

    // A matching If-Match: the update happens, and its answer carries the new tag, the one a
    // GET gives next.
    let patched = send(
        &c,
        Method::PATCH,
        &url,
        &[("if-match", &etag)],
        Some(rename),
    )
    .await;
    assert_eq!(patched.status, StatusCode::OK);
    assert_eq!(patched.json()["data"]["agent_name"], "Renamed");
    let renamed_tag = patched.etag();
    assert_ne!(renamed_tag, etag);
    assert_eq!(
        send(&c, Method::GET, &url, &[], None).await.etag(),
        renamed_tag
    );
    let r = send(&c, Method::GET, &url, &[("if-none-match", &etag)], None).await;
    assert_eq!(r.status, StatusCode::OK, "the old tag no longer matches");

    // Back to the first name within the same second: every field the client sees is as
    // before except `updated_at`, and the tag still differs from the first one.
    let back = send(
        &c,
        Method::PATCH,
        &url,
        &[("if-match", &renamed_tag)],
        Some(json!({"agent_name": "Desk"})),
    )
    .await;
    assert_eq!(back.status, StatusCode::OK);
    let (before, after) = (&first.json()["data"], &back.json()["data"]);
    let second = |v: &Value| v["updated_at"].as_str().unwrap()[..19].to_owned();
    assert_eq!(second(before), second(after), "both updates in one second");
    assert_ne!(before["updated_at"], after["updated_at"]);
    assert_ne!(back.etag(), etag);
    assert_ne!(back.etag(), renamed_tag);

    // `*` matches any existing resource; a DELETE with the current tag deletes.
    let star = send(
        &c,
        Method::PATCH,
        &url,
        &[("if-match", "*")],
        Some(json!({})),
    )
    .await;
    assert_eq!(star.status, StatusCode::OK);
    let current = star.etag();
    let r = send(
        &c,
        Method::DELETE,
        &url,
        &[("if-match", &renamed_tag)],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let r = send(&c, Method::DELETE, &url, &[("if-match", &current)], None).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = send(&c, Method::DELETE, &url, &[("if-match", "*")], None).await;
    assert_eq!(
        r.status,
        StatusCode::NOT_FOUND,
        "a deleted resource: the view's 404"
    );

    // A singleton: the organization's settings.
    let settings = server.url("/api/organization/settings");
    let tag = send(&c, Method::GET, &settings, &[], None).await.etag();
    let r = send(&c, Method::GET, &settings, &[("if-none-match", &tag)], None).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    let policy = json!({"recording_retention_days": 30});
    let changed = send(
        &c,
        Method::PATCH,
        &settings,
        &[("if-match", &tag)],
        Some(policy),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK);
    assert_ne!(changed.etag(), tag);
    let policy = json!({"recording_retention_days": 60});
    let stale = send(
        &c,
        Method::PATCH,
        &settings,
        &[("if-match", &tag)],
        Some(policy),
    )
    .await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    let now = send(&c, Method::GET, &settings, &[], None).await;
    assert_eq!(now.json()["data"]["recording_retention_days"], 30);

    // Without a view, nothing has a tag to match: a listed If-Match fails, `*` passes.
    let agents = server.url("/api/agents");
    let r = send(
        &c,
        Method::POST,
        &agents,
        &[("if-match", "\"x\"")],
        Some(agent_body("No")),
    )
    .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let r = send(
        &c,
        Method::POST,
        &agents,
        &[("if-match", "*")],
        Some(agent_body("Yes")),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    server.stop().await;
}

/// For every resource that can be updated, the tag of the PATCH's answer is the one the GET
/// right after gives, and a `If-Match` with it passes: the two answers are the same bytes.
async fn a_patch_answers_the_tag_a_get_gives(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let all = OneOfEach::create(&c).await;
    let cases = [
        (
            all.call.clone(),
            json!({"status": "completed", "start_time": "2026-01-01T00:00:00Z",
                   "end_time": "2026-01-01T00:01:30Z", "total_cost": 1.1, "turn_count": 4}),
        ),
        (
            all.tool.clone(),
            json!({"timeout_seconds": 20, "headers": {"X-B": "2", "X-A": "1"}}),
        ),
        (all.document.clone(), json!({"name": "Opening hours"})),
        (all.integration.clone(), json!({"name": "Main line"})),
        (
            all.number.clone(),
            json!({"assigned_agent_id": all.agent_id}),
        ),
        (
            all.webhook.clone(),
            json!({"events": ["tool.created", "agent.updated"], "description": "some"}),
        ),
        (
            all.agent.clone(),
            json!({"llm_temperature": 0.3, "system_prompt": "Be kind."}),
        ),
        (
            "/api/organization/settings".to_owned(),
            json!({"call_retention_days": 400}),
        ),
    ];
    for (path, change) in cases {
        let url = server.url(&path);
        let before = send(&c, Method::GET, &url, &[], None).await.etag();
        let patched = send(
            &c,
            Method::PATCH,
            &url,
            &[("if-match", &before)],
            Some(change),
        )
        .await;
        assert_eq!(patched.status, StatusCode::OK, "{path}: {}", patched.json());
        assert_ne!(patched.etag(), before, "{path}");
        let viewed = send(&c, Method::GET, &url, &[], None).await;
        assert_eq!(
            viewed.bytes, patched.bytes,
            "{path}: the PATCH answers what GET shows"
        );
        assert_eq!(viewed.etag(), patched.etag(), "{path}");
    }
    server.stop().await;
}

/// Clients racing to update one resource with the same tag: exactly one wins, the others get
/// 412 (the check and the write of conditional requests are serialized per resource).
async fn one_of_racing_conditional_writers_wins(ctx: &TestContext) {
    let (server, c, url) = an_agent(ctx).await;
    let etag = send(&c, Method::GET, &url, &[], None).await.etag();
    let writers = (0..6).map(|i| {
        let (c, url, etag) = (c.clone(), url.clone(), etag.clone());
        tokio::spawn(async move {
            let rename = json!({"agent_name": format!("Writer {i}")});
            send(
                &c,
                Method::PATCH,
                &url,
                &[("if-match", &etag)],
                Some(rename),
            )
            .await
            .status
        })
    });
    let mut statuses = Vec::new();
    for writer in writers.collect::<Vec<_>>() {
        statuses.push(writer.await.unwrap());
    }
    let won = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::PRECONDITION_FAILED)
        .count();
    assert_eq!((won, refused), (1, 5), "{statuses:?}");
    server.stop().await;
}

/// Headers that differ between two answers for reasons of their own.
fn comparable(headers: &HeaderMap) -> Vec<(String, HeaderValue)> {
    let mut out: Vec<(String, HeaderValue)> = headers
        .iter()
        .filter(|(name, _)| !["date", "x-request-id"].contains(&name.as_str()))
        .map(|(name, value)| (name.as_str().to_owned(), value.clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

async fn head_is_get_without_the_body(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let agent = c.create("/api/agents", agent_body("Desk")).await;
    let resource = format!("/api/agents/{}", agent["agent_id"].as_str().unwrap());
    let missing = "/api/agents/agent_0000000000000000";
    for path in [
        resource.as_str(),
        "/api/agents",
        "/api/openapi.json",
        missing,
    ] {
        let get = send(&c, Method::GET, &server.url(path), &[], None).await;
        let head = send(&c, Method::HEAD, &server.url(path), &[], None).await;
        assert_eq!(head.status, get.status, "{path}");
        assert!(head.bytes.is_empty(), "{path}");
        assert_eq!(
            head.headers["content-length"],
            get.bytes.len().to_string().as_str(),
            "{path}"
        );
        assert_eq!(
            comparable(&head.headers),
            comparable(&get.headers),
            "{path}"
        );
    }
    let r = send(&c, Method::DELETE, &server.url("/api/agents"), &[], None).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers["allow"], "POST, GET, HEAD");
    server.stop().await;
}

async fn one_api_key_is_shown_without_its_secret(ctx: &TestContext) {
    let server = TestServer::start(ctx).await;
    let c = ApiCaller::bootstrap(ctx, &server, "Acme").await;
    let created = c
        .create("/api/api-keys", json!({"name": "reader", "role": "user"}))
        .await;
    let secret = created["api_key"].as_str().unwrap();
    let path = format!("/api/api-keys/{}", created["key_id"].as_str().unwrap());

    // Read with the key's own role (the list's permission), the same shape as a list item.
    let reader = c.with_key(secret);
    let (status, one) = reader.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    let raw = serde_json::to_string(&one).unwrap();
    assert!(!raw.contains(secret), "the secret is never shown again");
    assert!(one["data"].get("api_key").is_none());
    let (_, list) = c.get("/api/api-keys").await;
    let item = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key_id"] == created["key_id"])
        .unwrap();
    assert_eq!(keys(&one["data"]), keys(item));
    assert_eq!(one["data"]["name"], "reader");
    assert_eq!(one["data"]["status"], "active");

    // Another organization's admin, and an unknown key: 404.
    let other = ApiCaller::bootstrap(ctx, &server, "Other").await;
    let (status, v) = other.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{v}");
    let unknown: String = path
        .chars()
        .enumerate()
        .map(|(i, ch)| {
            if i >= "/api/api-keys/apikey_".len() {
                '0'
            } else {
                ch
            }
        })
        .collect();
    let (status, _) = c.get(&unknown).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

db_tests!(
    every_201_has_a_location_that_resolves,
    etags_answer_304_and_412,
    a_patch_answers_the_tag_a_get_gives,
    one_of_racing_conditional_writers_wins,
    head_is_get_without_the_body,
    one_api_key_is_shown_without_its_secret,
);
