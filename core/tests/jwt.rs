//! Bearer token verification with each supported key type. The PEM files under `fixtures/`
//! are throwaway test keys made with `openssl genpkey`; they protect nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;
use voiceplane_core::Error;
use voiceplane_core::auth::{JwksSettings, JwksSource, JwtSettings, JwtVerifier};

const RSA_PRIVATE: &str = include_str!("fixtures/rsa_private.pem");
const RSA_PUBLIC: &str = include_str!("fixtures/rsa_public.pem");
const EC_PRIVATE: &str = include_str!("fixtures/ec_private.pem");
const EC_PUBLIC: &str = include_str!("fixtures/ec_public.pem");

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims(extra: serde_json::Value) -> serde_json::Value {
    let mut c =
        json!({"sub": "user_0123456789abcdef", "exp": now() + 600, "email": "a@example.com"});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn sign(alg: Algorithm, key: &EncodingKey, claims: &serde_json::Value) -> String {
    encode(&Header::new(alg), claims, key).unwrap()
}

fn verifier(settings: JwtSettings) -> JwtVerifier {
    JwtVerifier::new(&settings)
        .unwrap()
        .expect("a key is configured")
}

async fn rejected(v: &JwtVerifier, token: &str, expect: &str) {
    match v.verify(token).await {
        Err(Error::Unauthenticated(m)) => {
            assert!(m.contains(expect), "{m:?} should mention {expect:?}")
        }
        other => panic!("expected 401 mentioning {expect:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn hs256() {
    let v = verifier(JwtSettings {
        hs256_secret: Some("s3cret".into()),
        ..Default::default()
    });
    let key = EncodingKey::from_secret(b"s3cret");
    let c = v
        .verify(&sign(Algorithm::HS256, &key, &claims(json!({}))))
        .await
        .unwrap();
    assert_eq!(c.sub, "user_0123456789abcdef");
    assert_eq!(c.email.as_deref(), Some("a@example.com"));
    rejected(
        &v,
        &sign(
            Algorithm::HS256,
            &EncodingKey::from_secret(b"other"),
            &claims(json!({})),
        ),
        "signature",
    )
    .await;
    rejected(
        &v,
        &sign(
            Algorithm::HS256,
            &key,
            &claims(json!({"exp": now() - 3600})),
        ),
        "expired",
    )
    .await;
    rejected(
        &v,
        &sign(Algorithm::HS256, &key, &json!({"sub": "user_x"})),
        "exp",
    )
    .await;
    rejected(&v, "not-a-token", "well-formed").await;
}

#[tokio::test]
async fn rs256_with_a_public_key_pem() {
    let v = verifier(JwtSettings {
        public_key_pem: Some(RSA_PUBLIC.into()),
        ..Default::default()
    });
    let key = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    let c = v
        .verify(&sign(Algorithm::RS256, &key, &claims(json!({}))))
        .await
        .unwrap();
    assert_eq!(c.sub, "user_0123456789abcdef");
    // Algorithm confusion: an HS256 token "signed" with the public key must not pass.
    let forged = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(RSA_PUBLIC.as_bytes()),
        &claims(json!({})),
    );
    rejected(&v, &forged, "HS256").await;
}

#[tokio::test]
async fn es256_with_a_public_key_pem() {
    let v = verifier(JwtSettings {
        public_key_pem: Some(EC_PUBLIC.into()),
        ..Default::default()
    });
    let key = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
    let c = v
        .verify(&sign(Algorithm::ES256, &key, &claims(json!({}))))
        .await
        .unwrap();
    assert_eq!(c.sub, "user_0123456789abcdef");
    // A token signed by another EC key fails.
    let other = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    rejected(
        &v,
        &sign(Algorithm::RS256, &other, &claims(json!({}))),
        "RS256",
    )
    .await;
}

#[tokio::test]
async fn issuer_and_audience_are_enforced_when_configured() {
    let v = verifier(JwtSettings {
        hs256_secret: Some("s".into()),
        issuer: Some("https://idp.example.com/".into()),
        audience: Some("voiceplane".into()),
        ..Default::default()
    });
    let key = EncodingKey::from_secret(b"s");
    let good = claims(json!({"iss": "https://idp.example.com/", "aud": "voiceplane"}));
    v.verify(&sign(Algorithm::HS256, &key, &good))
        .await
        .unwrap();
    rejected(
        &v,
        &sign(
            Algorithm::HS256,
            &key,
            &claims(json!({"iss": "https://evil.example/", "aud": "voiceplane"})),
        ),
        "issuer",
    )
    .await;
    rejected(
        &v,
        &sign(
            Algorithm::HS256,
            &key,
            &claims(json!({"iss": "https://idp.example.com/", "aud": "someone-else"})),
        ),
        "audience",
    )
    .await;
    // Without configured audience, a token carrying one is still accepted.
    let plain = verifier(JwtSettings {
        hs256_secret: Some("s".into()),
        ..Default::default()
    });
    plain
        .verify(&sign(Algorithm::HS256, &key, &good))
        .await
        .unwrap();
}

#[test]
fn configuration_errors_name_the_key() {
    assert!(JwtVerifier::new(&JwtSettings::default()).unwrap().is_none());
    let err = JwtVerifier::new(&JwtSettings {
        public_key_pem: Some("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("auth.jwt_public_key_pem"), "{err}");

    // A JWKS alone is a configuration; with a PEM key it is an error naming `auth.jwks_url`.
    let jwks = JwksSettings::new(std::sync::Arc::new(NoKeys));
    let only_jwks = JwtSettings {
        jwks: Some(jwks.clone()),
        ..Default::default()
    };
    assert!(JwtVerifier::new(&only_jwks).unwrap().is_some());
    let err = JwtVerifier::new(&JwtSettings {
        public_key_pem: Some(RSA_PUBLIC.into()),
        jwks: Some(jwks),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("auth.jwks_url cannot be combined"),
        "{err}"
    );
}

#[derive(Debug)]
struct NoKeys;

#[async_trait::async_trait]
impl JwksSource for NoKeys {
    async fn fetch(&self) -> voiceplane_core::Result<jsonwebtoken::jwk::JwkSet> {
        Err(Error::Upstream("no keys here".into()))
    }
}

#[tokio::test]
async fn without_a_kid_or_a_fetchable_key_a_jwks_refuses() {
    let v = verifier(JwtSettings {
        jwks: Some(JwksSettings::new(std::sync::Arc::new(NoKeys))),
        ..Default::default()
    });
    let key = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    let no_kid = sign(Algorithm::RS256, &key, &claims(json!({})));
    rejected(&v, &no_kid, "`kid`").await;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".into());
    let with_kid = encode(&header, &claims(json!({})), &key).unwrap();
    assert!(matches!(
        v.verify(&with_kid).await,
        Err(Error::Unavailable(_))
    ));
    // HS256 needs `auth.jwt_secret`, which is not set.
    let hs = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(b"x"),
        &claims(json!({})),
    );
    rejected(&v, &hs, "HS256").await;
}
