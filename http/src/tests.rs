//! Request-level tests of [`Api`] over an in-memory fake repository (no database).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use voiceplane_core::auth::hash_secret;
use voiceplane_core::model::*;
use voiceplane_core::page::PageQuery;
use voiceplane_core::repo::*;
use voiceplane_core::role::Role;
use voiceplane_core::time::Timestamp;
use voiceplane_core::{Error, Result, Service};

use super::*;

const ORG: &str = "org_0123456789abcdef";
const ADMIN_SECRET: &str = "vpk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const USER_SECRET: &str = "vpk_UUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUU";
const BROKEN_AGENT: &str = "agent_ffffffffffffffff";

struct Fake {
    ready: bool,
    /// When set, `ping` signals `entered` and then waits for `release`: a request held in flight.
    gate: Option<Arc<Gate>>,
}

#[derive(Default)]
struct Gate {
    entered: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

fn key(key_id: &str, role: Role) -> ApiKey {
    ApiKey {
        key_id: key_id.into(),
        name: "k".into(),
        role,
        prefix: "vpk_AAAAAAAA".into(),
        client_id: ORG.into(),
        user_id: "user_0123456789abcdef".into(),
        status: ApiKeyStatus::Active,
        created_at: Timestamp::from_micros(1),
        last_used_at: Some(Timestamp::now()),
        expires_at: None,
    }
}

#[async_trait]
impl HealthRepository for Fake {
    async fn ping(&self) -> Result<()> {
        if let Some(gate) = &self.gate {
            gate.entered.notify_one();
            gate.release.notified().await;
        }
        if self.ready {
            Ok(())
        } else {
            Err(Error::Unavailable("the database is unreachable".into()))
        }
    }
}

#[async_trait]
impl OrganizationRepository for Fake {
    async fn bootstrap(&self, _: &BootstrapRecords) -> Result<()> {
        Ok(())
    }
    async fn user_find_by_email(&self, _: &str) -> Result<Option<User>> {
        Ok(None)
    }
    async fn user_touch_login(&self, _: &str, _: Timestamp, _: Timestamp) -> Result<()> {
        Ok(())
    }
    async fn membership_find(&self, _: &str, _: &str) -> Result<Option<Membership>> {
        Ok(None)
    }
    async fn member_list(&self, _: &str) -> Result<Vec<Member>> {
        Ok(vec![Member {
            membership_id: "mem_0123456789abcdef".into(),
            user_id: "user_0123456789abcdef".into(),
            email: "a@example.com".into(),
            name: None,
            role: Role::Admin,
            status: MemberStatus::Active,
            joined_at: Timestamp::from_micros(1),
            last_login: None,
        }])
    }
    async fn invitation_insert(&self, _: &Invitation, _: Timestamp) -> Result<()> {
        Ok(())
    }
    async fn invitation_list_pending(&self, _: &str, _: Timestamp) -> Result<Vec<Invitation>> {
        Ok(vec![])
    }
    async fn invitation_get(&self, _: Option<&str>, _: &str) -> Result<Option<Invitation>> {
        Ok(None)
    }
    async fn invitation_revoke(&self, _: &str, _: &str) -> Result<bool> {
        Ok(false)
    }
    async fn invitation_accept(&self, _: &AcceptRecords, _: Timestamp) -> Result<Member> {
        Err(Error::NotFound("not in the fake".into()))
    }
    async fn member_get(&self, _: &str, _: &str) -> Result<Option<Member>> {
        Ok(None)
    }
    async fn member_set_role(&self, _: &str, _: &str, _: Role) -> Result<Member> {
        Err(Error::NotFound("not in the fake".into()))
    }
    async fn member_remove(&self, _: &str, _: &str, _: Timestamp) -> Result<Member> {
        Err(Error::NotFound("not in the fake".into()))
    }
}

#[async_trait]
impl ApiKeyRepository for Fake {
    async fn api_key_insert(&self, _: &ApiKey, _: &str) -> Result<()> {
        Ok(())
    }
    async fn api_key_find_by_hash(&self, hash: &str) -> Result<Option<ApiKey>> {
        Ok(if hash == hash_secret(ADMIN_SECRET) {
            Some(key("apikey_aaaaaaaaaaaa", Role::Admin))
        } else if hash == hash_secret(USER_SECRET) {
            Some(key("apikey_bbbbbbbbbbbb", Role::User))
        } else {
            None
        })
    }
    async fn api_key_touch(&self, _: &str, _: Timestamp, _: Timestamp) -> Result<()> {
        Ok(())
    }
    async fn api_key_list(&self, _: &str, _: &PageQuery) -> Result<Vec<ApiKey>> {
        Ok(vec![])
    }
    async fn api_key_get(&self, _: &str, _: &str) -> Result<Option<ApiKey>> {
        Ok(None)
    }
    async fn api_key_revoke(&self, _: &str, _: &str, _: Timestamp) -> Result<bool> {
        Ok(false)
    }
}

#[async_trait]
impl CallRepository for Fake {
    async fn call_insert(&self, _: &Call) -> Result<()> {
        Ok(())
    }
    async fn call_get(&self, _: &str, _: &str) -> Result<Option<Call>> {
        Ok(None)
    }
    async fn call_update(&self, _: &Call) -> Result<()> {
        Ok(())
    }
    async fn call_list(&self, _: &str, _: &PageQuery) -> Result<Vec<Call>> {
        Ok(vec![])
    }
    async fn call_set_recording(
        &self,
        _: &str,
        _: &str,
        _: Option<&Recording>,
        _: Timestamp,
    ) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl ToolRepository for Fake {
    async fn tool_insert(&self, _: &Tool) -> Result<()> {
        Ok(())
    }
    async fn tool_get(&self, _: &str, _: &str) -> Result<Option<Tool>> {
        Ok(None)
    }
    async fn tool_list(&self, _: &str, _: &PageQuery) -> Result<Vec<Tool>> {
        Ok(vec![])
    }
    async fn tool_count(&self, _: &str) -> Result<u64> {
        Ok(7)
    }
    async fn tool_update(&self, _: &Tool) -> Result<()> {
        Ok(())
    }
    async fn tool_delete(&self, _: &str, _: &str) -> Result<Option<Tool>> {
        Ok(None)
    }
}

#[async_trait]
impl DocumentRepository for Fake {
    async fn document_insert(&self, _: &Document, _: Option<&str>) -> Result<()> {
        Ok(())
    }
    async fn document_get(&self, _: &str, _: &str) -> Result<Option<Document>> {
        Ok(None)
    }
    async fn document_list(&self, _: &str, _: &PageQuery) -> Result<Vec<Document>> {
        Ok(vec![])
    }
    async fn document_update(&self, _: &Document) -> Result<()> {
        Ok(())
    }
    async fn document_delete(&self, _: &str, _: &str) -> Result<Option<Document>> {
        Ok(None)
    }
}

#[async_trait]
impl AgentRepository for Fake {
    async fn agent_insert(&self, _: &Agent) -> Result<()> {
        Ok(())
    }
    async fn agent_get(&self, _: &str, agent_id: &str) -> Result<Option<Agent>> {
        if agent_id == BROKEN_AGENT {
            Err(Error::Internal(
                "pool error: postgres://voice:hunter2@db/voice".into(),
            ))
        } else {
            Ok(None)
        }
    }
    async fn agent_list(&self, _: &str, _: &PageQuery) -> Result<Vec<Agent>> {
        Ok(vec![])
    }
    async fn agent_update(&self, _: &Agent) -> Result<()> {
        Ok(())
    }
    async fn agent_delete(&self, _: &str, _: &str, _: Timestamp) -> Result<Option<Agent>> {
        Ok(None)
    }
}

#[async_trait]
impl PhoneNumberRepository for Fake {
    async fn phone_number_insert(&self, _: &PhoneNumber) -> Result<()> {
        Ok(())
    }
    async fn phone_number_get(&self, _: &str, _: &str) -> Result<Option<PhoneNumber>> {
        Ok(None)
    }
    async fn phone_number_list(&self, _: &str, _: &PageQuery) -> Result<Vec<PhoneNumber>> {
        Ok(vec![])
    }
    async fn phone_number_update(&self, _: &PhoneNumber) -> Result<()> {
        Ok(())
    }
    async fn phone_number_delete(&self, _: &str, _: &str) -> Result<Option<PhoneNumber>> {
        Ok(None)
    }
}

#[async_trait]
impl IntegrationRepository for Fake {
    async fn integration_insert(&self, _: &Integration, _: &str) -> Result<()> {
        Ok(())
    }
    async fn integration_get(&self, _: &str, _: &str) -> Result<Option<Integration>> {
        Ok(None)
    }
    async fn integration_get_sealed(
        &self,
        _: &str,
        _: &str,
    ) -> Result<Option<(Integration, String)>> {
        Ok(None)
    }
    async fn integration_list(&self, _: &str, _: &PageQuery) -> Result<Vec<Integration>> {
        Ok(vec![])
    }
    async fn integration_update(&self, _: &Integration, _: Option<&str>) -> Result<()> {
        Ok(())
    }
    async fn integration_delete(&self, _: &str, _: &str) -> Result<IntegrationDeletion> {
        Ok(IntegrationDeletion::NotFound)
    }
}

fn api() -> Api {
    api_with(true)
}

fn api_with(ready: bool) -> Api {
    Api::new(Arc::new(Service::new(Arc::new(Fake { ready, gate: None }))))
}

/// A request builder with the admin key and organization set.
fn authed(method: Method, uri: &str) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header("x-api-key", ADMIN_SECRET)
        .header("x-organization-id", ORG)
}

fn empty(b: http::request::Builder) -> Request<Full<Bytes>> {
    b.body(Full::default()).unwrap()
}

fn with_json(b: http::request::Builder, body: &str) -> Request<Full<Bytes>> {
    b.header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

async fn send(api: &Api, req: Request<Full<Bytes>>) -> (StatusCode, http::HeaderMap, Value) {
    let res: Response<ResponseBody> = api.handle(req).await;
    let (parts, body) = res.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    assert_eq!(
        parts.headers[header::CONTENT_TYPE],
        "application/json",
        "every response here is JSON"
    );
    let value = serde_json::from_slice(&bytes).unwrap();
    (parts.status, parts.headers, value)
}

#[tokio::test]
async fn health_endpoints_need_no_auth() {
    let (s, h, v) = send(&api(), empty(Request::get("/healthz"))).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ok"})));
    assert!(h.get(header::CACHE_CONTROL).is_none());

    let (s, _, v) = send(&api(), empty(Request::get("/readyz"))).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ready"})));

    let (s, _, v) = send(&api_with(false), empty(Request::get("/readyz"))).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(v, json!({"detail": "the database is unreachable"}));
}

#[tokio::test]
async fn routing_errors() {
    let (s, h, v) = send(&api(), empty(Request::get("/nope?x=secret"))).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v, json!({"detail": "no route for GET /nope"}));
    assert!(h.get(header::CACHE_CONTROL).is_none());

    let (s, h, v) = send(&api(), empty(Request::get("/api/nope"))).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["detail"], "no route for GET /api/nope");
    assert_eq!(h[header::CACHE_CONTROL], "no-store");

    let (s, h, v) = send(&api(), empty(Request::delete("/api/tools"))).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(h[header::ALLOW], "POST, GET");
    assert!(v["detail"].as_str().unwrap().contains("DELETE"));
}

#[tokio::test]
async fn authentication_failures() {
    let (s, h, v) = send(&api(), empty(Request::get("/api/tools"))).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("missing credentials")
    );
    assert_eq!(h[header::CACHE_CONTROL], "no-store");

    let req = Request::get("/api/tools")
        .header(header::AUTHORIZATION, "Basic dXNlcjpwYXNz")
        .header("x-organization-id", ORG);
    let (s, _, v) = send(&api(), empty(req)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(
        v,
        json!({"detail": "Authorization header must use the Bearer scheme"})
    );

    let unknown = "vpk_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ";
    let req = Request::get("/api/tools")
        .header("x-api-key", unknown)
        .header("x-organization-id", ORG);
    let (s, _, v) = send(&api(), empty(req)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(
        !v.to_string().contains(unknown),
        "credentials are not echoed"
    );

    let req = Request::get("/api/tools")
        .header("x-api-key", ADMIN_SECRET)
        .header("x-organization-id", "org_fedcba9876543210");
    let (s, _, _) = send(&api(), empty(req)).await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    let req = Request::get("/api/tools").header("x-api-key", ADMIN_SECRET);
    let (s, _, _) = send(&api(), empty(req)).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "X-Organization-Id is required");
}

#[tokio::test]
async fn authentication_comes_before_body_checks() {
    let req = Request::post("/api/agents").body(Full::default()).unwrap();
    let (s, _, _) = send(&api(), req).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn lists_and_envelopes() {
    let (s, h, v) = send(&api(), empty(authed(Method::GET, "/api/tools?limit=5"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h[header::CACHE_CONTROL], "no-store");
    assert_eq!(
        v,
        json!({"success": true, "data": [], "pagination":
            {"next_cursor": null, "has_more": false, "page_size": 0, "total_count": 7}})
    );

    let (s, _, v) = send(&api(), empty(authed(Method::GET, "/api/calls"))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["pagination"],
        json!({"next_cursor": null, "has_more": false, "page_size": 0})
    );

    let (s, _, v) = send(&api(), empty(authed(Method::GET, "/api/api-keys"))).await;
    assert_eq!((s, v["success"].clone()), (StatusCode::OK, json!(true)));

    let (s, _, v) = send(
        &api(),
        empty(authed(Method::GET, "/api/auth/organizations/invitations")),
    )
    .await;
    assert_eq!((s, v), (StatusCode::OK, json!({"invitations": []})));

    let (s, _, v) = send(
        &api(),
        empty(authed(Method::GET, "/api/auth/organizations/members")),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert!(v.get("success").is_none());
    assert_eq!(v["members"][0]["membership_id"], "mem_0123456789abcdef");
}

#[tokio::test]
async fn query_errors() {
    let (s, _, v) = send(&api(), empty(authed(Method::GET, "/api/calls?limit=abc"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        json!({"detail": "limit must be an integer between 1 and 100"})
    );
    let (s, _, _) = send(&api(), empty(authed(Method::GET, "/api/calls?limit=101"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = send(&api(), empty(authed(Method::GET, "/api/calls?cursor=%%%"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = send(&api(), empty(authed(Method::GET, "/api/calls?foo=bar"))).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn creates_answer_201_with_the_envelope() {
    let req = with_json(
        authed(Method::POST, "/api/auth/organizations/invitations"),
        r#"{"email": "New@Example.com", "role": "user"}"#,
    );
    let (s, _, v) = send(&api(), req).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(v["success"], true);
    assert!(v["data"]["invite_id"].as_str().unwrap().starts_with("inv_"));

    let req = with_json(
        authed(Method::POST, "/api/api-keys"),
        r#"{"name": "ci", "role": "agent_manager"}"#,
    );
    let (s, _, v) = send(&api(), req).await;
    assert_eq!(s, StatusCode::CREATED);
    assert!(v["data"]["api_key"].as_str().unwrap().starts_with("vpk_"));
    assert!(v["data"]["key_id"].as_str().unwrap().starts_with("apikey_"));

    let req = with_json(
        authed(Method::POST, "/api/knowledge-base"),
        r#"{"name": "faq", "text": "hello"}"#,
    );
    let (s, _, v) = send(&api(), req).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(v["data"]["type"], "text");
}

#[tokio::test]
async fn forbidden_for_a_lower_role() {
    let req = Request::post("/api/api-keys")
        .header("x-api-key", USER_SECRET)
        .header("x-organization-id", ORG)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"name": "x", "role": "admin"}"#,
        )))
        .unwrap();
    let (s, _, _) = send(&api(), req).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn body_errors() {
    // No Content-Type.
    let req = authed(Method::POST, "/api/tools")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let (s, _, v) = send(&api(), req).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        v,
        json!({"detail": "Content-Type must be application/json"})
    );

    // The knowledge base takes JSON or multipart, and says so.
    let req = authed(Method::POST, "/api/knowledge-base")
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from_static(b"hello")))
        .unwrap();
    let (s, _, v) = send(&api(), req).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("multipart/form-data")
    );
    let req = authed(Method::POST, "/api/knowledge-base")
        .header(header::CONTENT_TYPE, "multipart/form-data; boundary=x")
        .body(Full::new(Bytes::from_static(b"--x--\r\n")))
        .unwrap();
    let (s, _, v) = send(&api(), req).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["detail"].as_str().unwrap().contains("`file`"), "{v}");

    let (s, _, v) = send(&api(), with_json(authed(Method::POST, "/api/tools"), "")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v, json!({"detail": "request body is required"}));

    let (s, _, v) = send(&api(), with_json(authed(Method::POST, "/api/tools"), "{")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .starts_with("request body is not valid JSON: ")
    );

    let (s, _, v) = send(
        &api(),
        with_json(
            authed(Method::PATCH, "/api/calls/call_abc"),
            r#"{"bogus": 1}"#,
        ),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("unknown field `bogus`")
    );

    let small = api().with_config(HttpConfig {
        max_body_bytes: 16,
        ..Default::default()
    });
    let body = format!(r#"{{"name": "{}", "text": "x"}}"#, "n".repeat(64));
    let (s, _, v) = send(
        &small,
        with_json(authed(Method::POST, "/api/knowledge-base"), &body),
    )
    .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        v,
        json!({"detail": "request body exceeds the limit of 16 bytes"})
    );
}

#[tokio::test]
async fn not_found_and_internal_errors() {
    let (s, _, v) = send(
        &api(),
        empty(authed(Method::GET, "/api/agents/agent_0123456789abcdef")),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(
        v,
        json!({"detail": "agent agent_0123456789abcdef not found"})
    );

    let (s, _, _) = send(&api(), empty(authed(Method::GET, "/api/agents/nonsense"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    let (s, _, v) = send(
        &api(),
        empty(authed(Method::GET, &format!("/api/agents/{BROKEN_AGENT}"))),
    )
    .await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(v, json!({"detail": "internal server error"}));
}

#[tokio::test]
async fn works_as_a_tower_service() {
    use tower_service::Service as _;
    let mut svc = api();
    std::future::poll_fn(|cx| {
        tower_service::Service::<Request<Full<Bytes>>>::poll_ready(&mut svc, cx)
    })
    .await
    .unwrap();
    let res = svc.call(empty(Request::get("/healthz"))).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    fn assert_mountable<S: Clone + Send + Sync + 'static>(_: &S) {}
    assert_mountable(&svc);
}

mod server {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Reads from `stream` until `needle` appears; returns what was read.
    async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if text.contains(needle) || n == 0 {
                return text;
            }
        }
    }

    #[tokio::test]
    async fn serves_and_shuts_down_gracefully() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, api(), async {
            let _ = stopped.await;
        }));

        // A keep-alive connection that stays open and idle after its request.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut idle, r#"{"status":"ok"}"#).await;
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("content-type: application/json"), "{text}");

        // Another request with a JSON error.
        let mut conn = TcpStream::connect(addr).await.unwrap();
        conn.write_all(b"GET /api/tools HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut conn, "\u{0}never").await;
        assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{text}");
        assert!(text.contains("cache-control: no-store"), "{text}");

        // Shutdown closes the idle connection and returns well within the grace period.
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("serve returns promptly")
            .unwrap()
            .unwrap();
        let mut rest = Vec::new();
        let n = idle.read_to_end(&mut rest).await.unwrap_or(0);
        assert_eq!(n, 0, "the idle connection was closed");
        assert!(TcpStream::connect(addr).await.is_err(), "listener closed");
    }

    #[tokio::test]
    async fn shutdown_lets_a_request_in_flight_finish() {
        let gate = Arc::new(Gate::default());
        let api = Api::new(Arc::new(Service::new(Arc::new(Fake {
            ready: true,
            gate: Some(gate.clone()),
        }))));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, api, async {
            let _ = stopped.await;
        }));

        let mut conn = TcpStream::connect(addr).await.unwrap();
        conn.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        // The request is inside the handler when shutdown starts.
        gate.entered.notified().await;
        stop.send(()).unwrap();
        tokio::task::yield_now().await;
        assert!(
            !server.is_finished(),
            "serve waits for the request in flight"
        );
        gate.release.notify_one();

        let text = read_until(&mut conn, r#"{"status":"ready"}"#).await;
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("serve returns once the request is done")
            .unwrap()
            .unwrap();
    }
}

mod request_id {
    use super::*;

    async fn request_id(req: Request<Full<Bytes>>) -> (StatusCode, Option<String>) {
        let res = api().handle(req).await;
        let id = res.headers().get(REQUEST_ID_HEADER).map(|v| {
            assert_eq!(
                res.headers().get_all(REQUEST_ID_HEADER).iter().count(),
                1,
                "exactly one X-Request-Id"
            );
            v.to_str().unwrap().to_owned()
        });
        (res.status(), id)
    }

    fn is_generated(id: &str) -> bool {
        id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    #[tokio::test]
    async fn a_sane_caller_id_is_echoed_on_success_and_error() {
        let sent = "req-7f3a:trace/01~ABC";
        let (s, id) =
            request_id(empty(Request::get("/healthz").header("x-request-id", sent))).await;
        assert_eq!((s, id.as_deref()), (StatusCode::OK, Some(sent)));

        // Errors carry it too: no route, no credentials, bad body.
        let (s, id) = request_id(empty(Request::get("/nope").header("X-Request-Id", sent))).await;
        assert_eq!((s, id.as_deref()), (StatusCode::NOT_FOUND, Some(sent)));
        let (s, id) = request_id(empty(
            Request::get("/api/calls").header("x-request-id", sent),
        ))
        .await;
        assert_eq!((s, id.as_deref()), (StatusCode::UNAUTHORIZED, Some(sent)));
        let (s, id) = request_id(with_json(
            authed(Method::POST, "/api/tools").header("x-request-id", sent),
            "{",
        ))
        .await;
        assert_eq!((s, id.as_deref()), (StatusCode::BAD_REQUEST, Some(sent)));

        let longest = "x".repeat(MAX_REQUEST_ID_LEN);
        let (_, id) = request_id(empty(
            Request::get("/healthz").header("x-request-id", &longest),
        ))
        .await;
        assert_eq!(id.as_deref(), Some(longest.as_str()));
    }

    #[tokio::test]
    async fn a_missing_id_is_generated_fresh_for_each_request() {
        let (_, first) = request_id(empty(Request::get("/healthz"))).await;
        let (_, second) = request_id(empty(Request::get("/nope"))).await;
        let (first, second) = (first.unwrap(), second.unwrap());
        assert!(is_generated(&first), "{first}");
        assert!(is_generated(&second), "{second}");
        assert_ne!(first, second);
    }

    #[tokio::test]
    async fn an_unacceptable_id_is_replaced() {
        let too_long = "x".repeat(MAX_REQUEST_ID_LEN + 1);
        let with_space = "abc def";
        let non_ascii = HeaderValue::from_bytes("caf\u{e9}".as_bytes()).unwrap();
        for value in [
            HeaderValue::from_str(&too_long).unwrap(),
            HeaderValue::from_static(""),
            HeaderValue::from_static(with_space),
            HeaderValue::from_static("tab\there"),
            non_ascii,
        ] {
            let (_, id) = request_id(empty(
                Request::get("/healthz").header("x-request-id", value.clone()),
            ))
            .await;
            let id = id.unwrap();
            assert!(is_generated(&id), "{value:?} gave {id}");
        }

        // Sent twice: neither is trusted.
        let (_, id) = request_id(empty(
            Request::get("/healthz")
                .header("x-request-id", "one")
                .header("x-request-id", "two"),
        ))
        .await;
        assert!(is_generated(&id.unwrap()));
    }
}
