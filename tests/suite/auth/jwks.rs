//! Bearer tokens checked against an identity provider's JWKS (`auth.jwks_url`), served by a
//! local server that rotates its keys, fails and disappears: RS256 and ES256 accepted, a new
//! `kid` picked up, an unknown one refused, cached keys kept through an outage, one fetch for
//! many waiting requests, no second fetch within the fetch interval, and `last_login` written
//! as for any JWT sign-in. On SQLite and Postgres, through `Service::authenticate` with the
//! HTTP source the binary uses.
//!
//! The keys under `tests/fixtures/jwks/` are throwaway test keys made with `openssl genpkey`
//! (RSA 2048, EC P-256); the `.jwk.json` files hold their public parameters, base64url-encoded
//! with openssl and python. They protect nothing.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use voiceplane_clients::{HttpClient, HttpJwksSource, HttpSettings};
use voiceplane_core::auth::{Credentials, JwksSettings, JwtSettings, JwtVerifier};
use voiceplane_core::{Error, Service};
use voiceplane_suite::{TestContext, db_tests, jwt_for};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const RSA_A: &str = include_str!("../../fixtures/jwks/rsa_a.pem");
const RSA_B: &str = include_str!("../../fixtures/jwks/rsa_b.pem");
const EC_A: &str = include_str!("../../fixtures/jwks/ec_a.pem");
const RSA_A_JWK: &str = include_str!("../../fixtures/jwks/rsa_a.jwk.json");
const RSA_B_JWK: &str = include_str!("../../fixtures/jwks/rsa_b.jwk.json");
const EC_A_JWK: &str = include_str!("../../fixtures/jwks/ec_a.jwk.json");

const ISSUER: &str = "https://idp.example.com/";
const AUDIENCE: &str = "voiceplane";

/// A public JWK of the fixtures with its `kid` (and `alg`/`use` when given).
fn jwk(params: &str, kid: &str, extra: Value) -> Value {
    let mut jwk: Value = serde_json::from_str(params).expect("fixture JWKs are JSON");
    jwk["kid"] = json!(kid);
    for (k, v) in extra.as_object().into_iter().flatten() {
        jwk[k] = v.clone();
    }
    jwk
}

/// The set served at first: an RS256 key `rsa-a` and an ES256 key `ec-a`.
fn first_set() -> Value {
    json!({"keys": [
        jwk(RSA_A_JWK, "rsa-a", json!({"alg": "RS256", "use": "sig"})),
        jwk(EC_A_JWK, "ec-a", json!({})),
    ]})
}

/// A token for `user_id` signed by `pem` with `alg`, naming `kid`.
fn token(user_id: &str, alg: Algorithm, pem: &str, kid: Option<&str>) -> String {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
        _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
    }
    .expect("fixture keys are PEM private keys");
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs()
        + 600;
    let claims = json!({"sub": user_id, "exp": exp, "iss": ISSUER, "aud": AUDIENCE});
    jsonwebtoken::encode(&header, &claims, &key).expect("signing works")
}

async fn serve(server: &MockServer, response: ResponseTemplate) {
    server.reset().await;
    Mock::given(method("GET"))
        .and(path("/.well-known/jwks.json"))
        .respond_with(response)
        .mount(server)
        .await;
}

/// How many times the JWKS was fetched from `server` since its last reset.
async fn fetches(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .expect("request recording is on")
        .len()
}

/// A service on `ctx`'s database whose bearer tokens are checked against the JWKS of `server`
/// (with `auth.issuer` and `auth.audience`), refreshed after `refresh` and fetched at most
/// once per `min_fetch`.
fn service(
    ctx: &TestContext,
    server: &MockServer,
    refresh: Duration,
    min_fetch: Duration,
) -> Arc<Service> {
    let http = HttpClient::new(HttpSettings::default()).expect("the HTTP client builds");
    let source = HttpJwksSource::new(http, &format!("{}/.well-known/jwks.json", server.uri()))
        .expect("the JWKS URL is valid");
    let jwt = JwtVerifier::new(&JwtSettings {
        issuer: Some(ISSUER.to_owned()),
        audience: Some(AUDIENCE.to_owned()),
        jwks: Some(JwksSettings {
            refresh_interval: refresh,
            min_fetch_interval: min_fetch,
            ..JwksSettings::new(Arc::new(source))
        }),
        ..Default::default()
    })
    .expect("JWKS settings are valid");
    Arc::new(
        Service::new(Arc::new(ctx.repo.clone()))
            .with_clock(ctx.clock.clone())
            .with_jwt(jwt),
    )
}

async fn sign_in(service: &Service, org: &str, token: &str) -> Result<String, Error> {
    service
        .authenticate(&Credentials {
            bearer: Some(token.to_owned()),
            organization_id: Some(org.to_owned()),
            api_key: None,
        })
        .await
        .map(|actor| actor.user_id)
}

/// `n` sign-ins with `token`, all at once; their outcomes, in no particular order.
async fn sign_in_at_once(
    service: &Arc<Service>,
    org: &str,
    token: &str,
    n: usize,
) -> Vec<Result<String, Error>> {
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (service, org, token) = (service.clone(), org.to_owned(), token.to_owned());
        requests.spawn(async move { sign_in(&service, &org, &token).await });
    }
    let mut outcomes = Vec::with_capacity(n);
    while let Some(result) = requests.join_next().await {
        outcomes.push(result.expect("the task ran"));
    }
    outcomes
}

/// A JWKS server serving [`first_set`] slowly, so that concurrent requests all arrive while
/// the first fetch is under way, and a service on it that never refreshes by itself.
async fn slow_provider(ctx: &TestContext) -> (MockServer, Arc<Service>) {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(first_set())
            .set_delay(Duration::from_millis(300)),
    )
    .await;
    let hour = Duration::from_secs(3600);
    let service = service(ctx, &server, hour, hour);
    (server, service)
}

fn assert_401(result: Result<String, Error>, expect: &str) {
    match result {
        Err(Error::Unauthenticated(m)) => assert!(m.contains(expect), "{m:?} lacks {expect:?}"),
        other => panic!("expected a 401 mentioning {expect:?}, got {other:?}"),
    }
}

async fn rs256_and_es256_keys_are_used_and_rotation_is_followed(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let (org, user) = (boot.organization_id.as_str(), boot.user_id.as_str());
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(first_set()),
    )
    .await;
    let service = service(ctx, &server, Duration::from_secs(3600), Duration::ZERO);

    let rs = token(user, Algorithm::RS256, RSA_A, Some("rsa-a"));
    assert_eq!(sign_in(&service, org, &rs).await.unwrap(), user);
    let es = token(user, Algorithm::ES256, EC_A, Some("ec-a"));
    assert_eq!(sign_in(&service, org, &es).await.unwrap(), user);
    // A sign-in through the identity provider is a sign-in like any other.
    let admin = ctx.actor(org, &boot.api_key).await;
    let member = ctx.service.member_list(&admin).await.unwrap();
    assert!(
        member
            .iter()
            .any(|m| m.user_id == user && m.last_login.is_some()),
        "last_login is written"
    );
    assert_eq!(
        fetches(&server).await,
        1,
        "cached keys are reused within the hour"
    );

    // Issuer and audience are checked as with a PEM key.
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-a".to_owned());
    let foreign = jsonwebtoken::encode(
        &header,
        &json!({"sub": user, "exp": 4_000_000_000_u64, "iss": "https://evil.example/", "aud": AUDIENCE}),
        &EncodingKey::from_rsa_pem(RSA_A.as_bytes()).unwrap(),
    )
    .unwrap();
    assert_401(sign_in(&service, org, &foreign).await, "issuer");
    // A key verifies only the algorithm it was published for; a token must name its key; no
    // HS256 secret is configured.
    assert_401(
        sign_in(
            &service,
            org,
            &token(user, Algorithm::RS256, RSA_A, Some("ec-a")),
        )
        .await,
        "is for ES256",
    );
    assert_401(
        sign_in(&service, org, &token(user, Algorithm::RS256, RSA_A, None)).await,
        "`kid`",
    );
    assert_401(
        sign_in(&service, org, &jwt_for(user, None, 600)).await,
        "HS256",
    );
    // A key the provider does not publish: one more fetch, then 401.
    assert_401(
        sign_in(
            &service,
            org,
            &token(user, Algorithm::RS256, RSA_B, Some("rsa-b")),
        )
        .await,
        "does not publish",
    );
    assert_eq!(fetches(&server).await, 2);

    // The provider rotates to `rsa-b` and drops `rsa-a`.
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({"keys": [
            jwk(RSA_B_JWK, "rsa-b", json!({"alg": "RS256"})),
        ]})),
    )
    .await;
    let rotated = token(user, Algorithm::RS256, RSA_B, Some("rsa-b"));
    assert_eq!(sign_in(&service, org, &rotated).await.unwrap(), user);
    assert_eq!(fetches(&server).await, 1, "the new kid caused one fetch");
    assert_401(sign_in(&service, org, &rs).await, "does not publish");
    server.reset().await;
}

async fn an_outage_keeps_the_cached_keys(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let (org, user) = (boot.organization_id.as_str(), boot.user_id.as_str());
    // Not from wiremock's pool, whose servers outlive their handle: this one stops when dropped.
    let server = MockServer::builder().start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(first_set()),
    )
    .await;
    // Keys are stale at once, so that every request tries to refresh them.
    let service = service(ctx, &server, Duration::ZERO, Duration::ZERO);
    let rs = token(user, Algorithm::RS256, RSA_A, Some("rsa-a"));
    assert_eq!(sign_in(&service, org, &rs).await.unwrap(), user);

    for failure in [
        ResponseTemplate::new(500),
        ResponseTemplate::new(200).set_body_string("<html>maintenance</html>"),
        ResponseTemplate::new(200).set_body_json(json!({"keys": []})),
    ] {
        serve(&server, failure).await;
        assert_eq!(
            sign_in(&service, org, &rs).await.unwrap(),
            user,
            "cached keys stay in use"
        );
        assert_eq!(fetches(&server).await, 1, "a refresh was attempted");
    }
    // A key the cache does not hold cannot be checked while the provider fails: 503, not 401.
    match sign_in(
        &service,
        org,
        &token(user, Algorithm::RS256, RSA_B, Some("rsa-b")),
    )
    .await
    {
        Err(Error::Unavailable(m)) => assert!(m.contains("try again later"), "{m}"),
        other => panic!("expected 503, got {other:?}"),
    }

    // The provider is gone altogether.
    let address = *server.address();
    drop(server);
    // The server stops on its own task: wait until it refuses connections.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(address).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the JWKS server still accepts connections"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sign_in(&service, org, &rs).await.unwrap(), user);
    let es = token(user, Algorithm::ES256, EC_A, Some("ec-a"));
    assert_eq!(sign_in(&service, org, &es).await.unwrap(), user);
}

async fn waiting_requests_share_one_fetch_and_the_interval_holds(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let org = boot.organization_id.clone();
    let user = boot.user_id.clone();
    let (server, service) = slow_provider(ctx).await;

    let rs = token(&user, Algorithm::RS256, RSA_A, Some("rsa-a"));
    for outcome in sign_in_at_once(&service, &org, &rs, 16).await {
        assert_eq!(outcome.unwrap(), user);
    }
    assert_eq!(fetches(&server).await, 1, "16 waiting requests, one fetch");

    // Unknown kids within the fetch interval: refused without another fetch, however many
    // arrive at once.
    let unknown = token(&user, Algorithm::RS256, RSA_B, Some("rsa-b"));
    for outcome in sign_in_at_once(&service, &org, &unknown, 16).await {
        assert_401(outcome, "does not publish");
    }
    let other = token(&user, Algorithm::RS256, RSA_B, Some("rsa-c"));
    assert_401(sign_in(&service, &org, &other).await, "does not publish");
    assert_eq!(fetches(&server).await, 1, "no fetch within the interval");
}

async fn unknown_kids_on_a_cold_cache_cause_one_fetch(ctx: &TestContext) {
    let boot = ctx.bootstrap("Acme").await;
    let org = boot.organization_id.clone();
    let user = boot.user_id.clone();
    let (server, service) = slow_provider(ctx).await;
    let unknown = token(&user, Algorithm::RS256, RSA_B, Some("rsa-b"));
    for outcome in sign_in_at_once(&service, &org, &unknown, 16).await {
        assert_401(outcome, "does not publish");
    }
    assert_eq!(fetches(&server).await, 1, "16 unknown kids, one fetch");
    // The fetched keys serve without another fetch.
    let rs = token(&user, Algorithm::RS256, RSA_A, Some("rsa-a"));
    assert_eq!(sign_in(&service, &org, &rs).await.unwrap(), user);
    assert_eq!(fetches(&server).await, 1);
}

db_tests!(
    rs256_and_es256_keys_are_used_and_rotation_is_followed,
    an_outage_keeps_the_cached_keys,
    waiting_requests_share_one_fetch_and_the_interval_holds,
    unknown_kids_on_a_cold_cache_cause_one_fetch,
);
