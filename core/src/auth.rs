//! Credentials: API key secrets, JWT verification, and the authenticated [`Actor`].

mod jwks;

use std::fmt;
use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use rand::RngExt;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::role::{Permission, Role};

pub use jwks::{JwksSettings, JwksSource};

/// Prefix of every API key secret.
pub const API_KEY_SECRET_PREFIX: &str = "vpk_";
const SECRET_BODY_LEN: usize = 40;
/// Length of the visible `prefix` of a key.
pub const API_KEY_PREFIX_LEN: usize = 12;

/// A freshly generated API key secret. Its `Debug` output hides the secret.
pub struct ApiKeySecret {
    secret: String,
}

impl ApiKeySecret {
    /// A new random secret: `vpk_` and 40 characters of `[A-Za-z0-9]`.
    pub fn generate() -> Self {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut rng = rand::rng();
        let mut secret = String::with_capacity(API_KEY_SECRET_PREFIX.len() + SECRET_BODY_LEN);
        secret.push_str(API_KEY_SECRET_PREFIX);
        for _ in 0..SECRET_BODY_LEN {
            secret.push(char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]));
        }
        Self { secret }
    }

    /// The full secret, to be shown once.
    pub fn expose(&self) -> &str {
        &self.secret
    }

    /// The visible prefix stored with the key.
    pub fn prefix(&self) -> &str {
        &self.secret[..API_KEY_PREFIX_LEN]
    }

    /// The hash stored in place of the secret.
    pub fn hash(&self) -> String {
        hash_secret(&self.secret)
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeySecret({}…)", self.prefix())
    }
}

/// Whether `s` has the shape of an API key secret.
pub fn is_well_formed_secret(s: &str) -> bool {
    s.strip_prefix(API_KEY_SECRET_PREFIX).is_some_and(|body| {
        body.len() == SECRET_BODY_LEN && crate::ids::every_byte(body, |b| b.is_ascii_alphanumeric())
    })
}

/// SHA-256 (lower-case hex) of a secret. Secrets carry 238 random bits, so a fast hash is
/// enough: there is nothing to brute-force.
pub fn hash_secret(secret: &str) -> String {
    hash_secret_in(secret, &mut [0; 64]).to_owned()
}

/// [`hash_secret`] written into `hex` rather than a new `String`: what a lookup by the hash
/// needs on every authenticated request.
pub(crate) fn hash_secret_in<'h>(secret: &str, hex: &'h mut [u8; 64]) -> &'h str {
    // Two digits per byte of the digest fill `hex` exactly, so this cannot fail.
    base16ct::lower::encode_str(&Sha256::digest(secret.as_bytes()), hex).unwrap_or_default()
}

/// Lower-case hex of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

/// What a request presents: the raw header values. `Debug` hides the secrets.
#[derive(Clone, Default)]
pub struct Credentials {
    /// `X-API-Key`.
    pub api_key: Option<String>,
    /// The token of `Authorization: Bearer <token>`.
    pub bearer: Option<String>,
    /// `X-Organization-Id`.
    pub organization_id: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("organization_id", &self.organization_id)
            .finish()
    }
}

/// How the caller authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// With the API key of this id.
    ApiKey(String),
    /// With a JWT for a member.
    User,
}

/// Where a request came from, as the HTTP adapter saw it: recorded with every audit entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestContext {
    /// The request's `X-Request-Id` (the caller's, or the one the adapter generated).
    pub request_id: Option<String>,
    /// The client's address: the connection's peer, or the address a trusted proxy reports.
    pub ip: Option<std::net::IpAddr>,
    /// The `If-Match`/`If-None-Match` of a conditional write, checked against the resource
    /// inside the write's transaction.
    pub preconditions: crate::precondition::Preconditions,
}

/// An authenticated caller acting in one organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The organization the request acts in.
    pub organization_id: String,
    /// The user behind the request (a key's creator for API keys).
    pub user_id: String,
    /// The role the request acts with.
    pub role: Role,
    /// How it authenticated.
    pub principal: Principal,
    /// The permissions an API key is narrowed to; `None`: all of its role's.
    pub scopes: Option<Vec<Permission>>,
    /// Where the request came from, for the audit log.
    pub request: RequestContext,
    /// The change versions read to authenticate it (an API key is checked against the
    /// credentials' version), when they were: a read later in the same request may look its
    /// caches up at these rather than read them again (`Service::agent_view_shared_at`). They
    /// age with the actor: nothing that keeps an actor beyond its request should use them.
    pub versions: Option<crate::cache::ChangeVersions>,
}

/// What an operation needs: a permission, and for a few finer rules a least role beyond the
/// permission's own, or the sentence that refuses a role lacking it. Built from a
/// [`Permission`] (`Permission::AgentsRead.into()`) or with [`Need::at_least`] /
/// [`Need::refusing_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    permission: Permission,
    /// A least role above the permission's own, and what it guards (in the 403's sentence).
    role: Option<(Role, &'static str)>,
    /// The sentence refusing a role that lacks the permission, when it is pinned.
    refusal: Option<&'static str>,
}

impl Need {
    /// `permission`, and also at least `role` for `what` (e.g. importing back-dated calls).
    pub const fn at_least(permission: Permission, role: Role, what: &'static str) -> Self {
        Self {
            permission,
            role: Some((role, what)),
            refusal: None,
        }
    }

    /// `permission`, refusing a role that lacks it with `sentence`.
    pub const fn refusing_with(permission: Permission, sentence: &'static str) -> Self {
        Self {
            permission,
            role: None,
            refusal: Some(sentence),
        }
    }
}

impl From<Permission> for Need {
    fn from(permission: Permission) -> Self {
        Self {
            permission,
            role: None,
            refusal: None,
        }
    }
}

impl Actor {
    /// Whether the caller holds `permission`: its role holds it and, for a scoped key, its
    /// scopes name it.
    pub fn holds(&self, permission: Permission) -> bool {
        self.role.allows(permission)
            && self
                .scopes
                .as_ref()
                .is_none_or(|scopes| permission.granted_by(scopes))
    }

    /// The one permission check: fails with 403 unless the actor's role holds the needed
    /// permission (and the least role a finer rule asks), and a scoped key's scopes name it.
    pub fn require(&self, need: impl Into<Need>) -> Result<()> {
        let need = need.into();
        let permission = need.permission;
        if !self.role.allows(permission) {
            return Err(Error::forbidden(match need.refusal {
                Some(sentence) => sentence.to_owned(),
                None => format!(
                    "your role `{}` lacks the permission `{}`",
                    self.role, permission
                ),
            }));
        }
        if let Some((role, what)) = need.role
            && self.role < role
        {
            return Err(Error::forbidden(format!(
                "{what} needs the role `{role}`; your role is `{}`",
                self.role
            )));
        }
        if self
            .scopes
            .as_ref()
            .is_some_and(|scopes| !permission.granted_by(scopes))
        {
            return Err(Error::forbidden(format!(
                "this API key's scopes do not include the permission `{permission}`"
            )));
        }
        Ok(())
    }
}

/// Claims voiceplane reads from a JWT.
#[derive(Debug, Clone, Deserialize)]
pub struct UserClaims {
    /// The user id (`user_…`).
    pub sub: String,
    /// Expiry (seconds since the epoch); required.
    pub exp: i64,
    /// The user's e-mail.
    #[serde(default)]
    pub email: Option<String>,
    /// The user's display name.
    #[serde(default)]
    pub name: Option<String>,
}

/// JWT settings: an HS256 secret, and either a PEM public key (RSA for RS256, EC P-256 for
/// ES256) or a JWKS of RS256 and ES256 keys, and optional issuer and audience. `Debug` hides the
/// secret.
#[derive(Clone, Default)]
pub struct JwtSettings {
    /// HS256 shared secret.
    pub hs256_secret: Option<String>,
    /// PEM public key for RS256 or ES256.
    pub public_key_pem: Option<String>,
    /// Required `iss`, when set.
    pub issuer: Option<String>,
    /// Required `aud`, when set.
    pub audience: Option<String>,
    /// The identity provider's JWKS (`auth.jwks_url`); RS256 and ES256 tokens are then checked
    /// against it and must name their key in `kid`. Excludes `public_key_pem`.
    pub jwks: Option<JwksSettings>,
}

impl fmt::Debug for JwtSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtSettings")
            .field(
                "hs256_secret",
                &self.hs256_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("public_key_pem", &self.public_key_pem.is_some())
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("jwks", &self.jwks)
            .finish()
    }
}

/// Verifies bearer tokens against the configured keys. Clones share one JWKS cache.
#[derive(Clone)]
pub struct JwtVerifier {
    keys: Vec<(DecodingKey, Validation)>,
    jwks: Option<Arc<jwks::JwksCache>>,
    /// The issuer and audience checks, for the algorithm of a JWKS key.
    jwks_validation: [Validation; 2],
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("keys", &self.keys.len())
            .field("jwks", &self.jwks)
            .finish()
    }
}

impl JwtVerifier {
    /// Builds a verifier; `Ok(None)` when no key is configured. A PEM that is neither an RSA
    /// nor an EC public key is an error naming `auth.jwt_public_key_pem`; a PEM key and a JWKS
    /// together are an error naming `auth.jwks_url`. Nothing is fetched yet: the first token
    /// that needs the JWKS does that.
    pub fn new(settings: &JwtSettings) -> Result<Option<Self>> {
        let mut keys = Vec::new();
        let validation = |alg| {
            let mut v = Validation::new(alg);
            v.set_required_spec_claims(&["exp", "sub"]);
            v.leeway = 30;
            match &settings.issuer {
                Some(iss) => v.set_issuer(&[iss]),
                None => v.iss = None,
            }
            match &settings.audience {
                Some(aud) => v.set_audience(&[aud]),
                None => v.validate_aud = false,
            }
            v
        };
        if let Some(secret) = settings.hs256_secret.as_deref().filter(|s| !s.is_empty()) {
            keys.push((
                DecodingKey::from_secret(secret.as_bytes()),
                validation(Algorithm::HS256),
            ));
        }
        let pem = settings.public_key_pem.as_deref().filter(|s| !s.is_empty());
        if pem.is_some() && settings.jwks.is_some() {
            return Err(Error::invalid(
                "auth.jwks_url cannot be combined with auth.jwt_public_key_pem; keep one (the JWKS serves the identity provider's keys itself)",
            ));
        }
        if let Some(pem) = pem {
            let pem = pem.as_bytes();
            if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
                keys.push((key, validation(Algorithm::RS256)));
            } else if let Ok(key) = DecodingKey::from_ec_pem(pem) {
                keys.push((key, validation(Algorithm::ES256)));
            } else {
                return Err(Error::invalid(
                    "auth.jwt_public_key_pem is neither an RSA nor an EC (P-256) public key in PEM form",
                ));
            }
        }
        let jwks = settings
            .jwks
            .clone()
            .map(|s| Arc::new(jwks::JwksCache::new(s)));
        if keys.is_empty() && jwks.is_none() {
            return Ok(None);
        }
        Ok(Some(Self {
            keys,
            jwks,
            jwks_validation: [validation(Algorithm::RS256), validation(Algorithm::ES256)],
        }))
    }

    /// Verifies signature, expiry, issuer and audience, and returns the claims. With a JWKS,
    /// RS256 and ES256 tokens are checked against the key their `kid` names, which may fetch
    /// the set (see [`JwksSettings`]).
    pub async fn verify(&self, token: &str) -> Result<UserClaims> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Error::unauthenticated("bearer token is not a well-formed JWT"))?;
        if let Some(jwks) = &self.jwks
            && matches!(header.alg, Algorithm::RS256 | Algorithm::ES256)
        {
            let kid = header.kid.as_deref().ok_or_else(|| {
                Error::unauthenticated(
                    "bearer token lacks the `kid` header that names its signing key",
                )
            })?;
            let key = jwks.key(kid).await?;
            if key.alg != header.alg {
                return Err(Error::unauthenticated(format!(
                    "bearer token is signed with {:?}, but the key its `kid` names is for {:?}",
                    header.alg, key.alg
                )));
            }
            // JWKS keys are only ever RS256 or ES256 (see `jwks::signing_algorithm`).
            let [rs256, es256] = &self.jwks_validation;
            let validation = if key.alg == Algorithm::RS256 {
                rs256
            } else {
                es256
            };
            return decode(token, &key.key, validation);
        }
        let Some((key, validation)) = self
            .keys
            .iter()
            .find(|(_, v)| v.algorithms.contains(&header.alg))
        else {
            return Err(Error::unauthenticated(format!(
                "bearer token is signed with {:?}, which this server does not accept",
                header.alg
            )));
        };
        decode(token, key, validation)
    }
}

/// Decodes and checks `token` with `key`, in the sentences of a 401.
fn decode(token: &str, key: &DecodingKey, validation: &Validation) -> Result<UserClaims> {
    jsonwebtoken::decode::<UserClaims>(token, key, validation)
            .map(|data| data.claims)
            .map_err(|e| {
                Error::unauthenticated(match e.kind() {
                    ErrorKind::ExpiredSignature => "bearer token has expired".to_owned(),
                    ErrorKind::InvalidSignature => "bearer token signature is invalid".to_owned(),
                    ErrorKind::InvalidIssuer => "bearer token has the wrong issuer".to_owned(),
                    ErrorKind::InvalidAudience => "bearer token has the wrong audience".to_owned(),
                    ErrorKind::ImmatureSignature => "bearer token is not valid yet".to_owned(),
                    ErrorKind::MissingRequiredClaim(c) => {
                        format!("bearer token lacks the `{c}` claim")
                    }
                    ErrorKind::Json(_) => "bearer token claims are malformed: `sub` (string) and `exp` (number) are required".to_owned(),
                    _ => "bearer token is invalid".to_owned(),
                })
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_hashes_to_its_sha256_in_lower_case_hex() {
        // FIPS 180-2's example.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(hash_secret("abc"), abc);
        assert_eq!(hash_secret_in("abc", &mut [0; 64]), abc);
    }

    #[test]
    fn secrets_have_the_pinned_shape() {
        let s = ApiKeySecret::generate();
        assert!(is_well_formed_secret(s.expose()));
        assert_eq!(s.prefix().len(), 12);
        assert!(s.expose().starts_with(s.prefix()));
        assert_eq!(s.hash(), hash_secret(s.expose()));
        assert!(!format!("{s:?}").contains(s.expose()));
        assert!(!is_well_formed_secret("vpk_short"));
    }
}
