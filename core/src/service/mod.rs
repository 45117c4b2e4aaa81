//! The [`Service`]: one async method per operation, named `<resource>_<verb>`. Every method
//! takes the authenticated [`Actor`], checks its permission, validates input, and talks to the
//! repository. Nothing here knows about HTTP.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::auth::{
    Actor, ApiKeySecret, Credentials, JwtVerifier, Principal, UserClaims, hash_secret,
    is_well_formed_secret,
};
use crate::blob::BlobStore;
use crate::crypto::CredentialCipher;
use crate::error::{Error, Result};
use crate::ids::{IdGenerator, IdKind, RandomIds};
use crate::model::*;
use crate::page::{Cursor, Page, PageParams, PageQuery};
use crate::repo::{AcceptRecords, BootstrapRecords, IntegrationDeletion, Repository};
use crate::role::{Permission, Role};
use crate::signing::UrlSigner;
use crate::telephony::{ProbeOutcome, TelephonyCredentials, TelephonyProvider, TelephonyValidator};
use crate::time::{Clock, SystemClock, Timestamp};
use crate::validate;

mod agents;
mod api_keys;
mod calls;
mod documents;
pub use documents::NewDocument;
mod integrations;
mod members;
mod phone_numbers;
mod recordings;
pub use recordings::{AudioFormat, RecordingDownload, STREAM_URL_TTL_SECS, SignedRead};
mod tools;
mod voices;

/// `last_used_at` is written at most once per this many seconds per key.
const TOUCH_INTERVAL_SECS: i64 = 60;
/// How long an invitation can be accepted.
const INVITATION_TTL_SECS: i64 = 7 * 24 * 3600;

/// Input of [`Service::organization_bootstrap`].
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    /// Organization name.
    pub org_name: String,
    /// E-mail of the first admin.
    pub admin_email: String,
    /// Display name of the first admin.
    pub admin_name: Option<String>,
}

/// What bootstrap created; `api_key` is the full secret, shown once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BootstrapOutput {
    /// `org_…`
    pub organization_id: String,
    /// `user_…`
    pub user_id: String,
    /// `apikey_…`
    pub key_id: String,
    /// The admin key's secret.
    pub api_key: String,
}

/// Where self-signed recording URLs point and what signs them.
#[derive(Clone, Debug)]
struct RecordingUrls {
    public_url: String,
    signer: UrlSigner,
}

/// The voiceplane application service.
#[derive(Clone)]
pub struct Service {
    repo: Arc<dyn Repository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    jwt: Option<Arc<JwtVerifier>>,
    telephony: Option<Arc<dyn TelephonyValidator>>,
    cipher: Option<Arc<CredentialCipher>>,
    // Voice providers (issue 5) go below this line.
    voices: crate::voice::VoiceProviders,
    blobs: Option<Arc<dyn BlobStore>>,
    recording_urls: Option<RecordingUrls>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("jwt", &self.jwt.is_some())
            .finish_non_exhaustive()
    }
}

fn cursor_of(created_at: Timestamp, id: &str) -> Cursor {
    Cursor {
        created_at,
        id: id.to_owned(),
    }
}

impl Service {
    /// A service over `repo` with the system clock, random ids and no JWT verification.
    pub fn new(repo: Arc<dyn Repository>) -> Self {
        Self {
            repo,
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            jwt: None,
            telephony: None,
            cipher: None,
            voices: crate::voice::VoiceProviders::default(),
            blobs: None,
            recording_urls: None,
        }
    }

    /// Uses `clock` for every timestamp.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses `ids` to make identifiers.
    pub fn with_ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.ids = ids;
        self
    }

    /// Accepts bearer tokens verified by `jwt`.
    pub fn with_jwt(mut self, jwt: Option<JwtVerifier>) -> Self {
        self.jwt = jwt.map(Arc::new);
        self
    }

    /// Probes telephony credentials with `validator` when integrations are validated.
    pub fn with_telephony(mut self, validator: Arc<dyn TelephonyValidator>) -> Self {
        self.telephony = Some(validator);
        self
    }

    /// Encrypts integration credentials at rest with `cipher`; without one, integrations
    /// cannot be created (503).
    pub fn with_cipher(mut self, cipher: CredentialCipher) -> Self {
        self.cipher = Some(Arc::new(cipher));
        self
    }

    /// Searches voices and uses provider_two's shared library through `providers`; a
    /// provider left `None` answers 503 "… is not configured".
    pub fn with_voice_providers(mut self, providers: crate::voice::VoiceProviders) -> Self {
        self.voices = providers;
        self
    }

    /// Stores recordings and knowledge-base files in `blobs`; without a store those
    /// operations answer 503.
    pub fn with_blobs(mut self, blobs: Arc<dyn BlobStore>) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Signs recording URLs under `public_url` (the external base URL of the HTTP API, e.g.
    /// `https://voice.example.com`) for stores that cannot presign.
    pub fn with_recording_urls(mut self, public_url: &str, signer: UrlSigner) -> Self {
        self.recording_urls = Some(RecordingUrls {
            public_url: public_url.trim_end_matches('/').to_owned(),
            signer,
        });
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn id(&self, kind: IdKind) -> String {
        self.ids.generate(kind)
    }

    // Health

    /// Succeeds when the database and the object store answer.
    pub async fn health_ready(&self) -> Result<()> {
        let checked = match self.repo.ping().await {
            Ok(()) => match &self.blobs {
                Some(blobs) => blobs.ping().await,
                None => Ok(()),
            },
            Err(e) => Err(e),
        };
        // Whatever the failure, the instance is not ready: a load balancer reads 503.
        checked.map_err(|e| match e {
            Error::Unavailable(_) => e,
            other => {
                tracing::warn!(error = %other, "readiness check failed");
                Error::Unavailable(
                    "not ready: the database or object storage does not answer".to_owned(),
                )
            }
        })
    }

    /// Resolves the request's credentials to an [`Actor`] in the organization named by
    /// `X-Organization-Id`. 401 for missing, malformed, unknown, expired or revoked
    /// credentials; 403 when the credential does not belong to that organization.
    pub async fn authenticate(&self, creds: &Credentials) -> Result<Actor> {
        let api_key = creds
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let bearer = creds
            .bearer
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        if api_key.is_none() && bearer.is_none() {
            return Err(Error::unauthenticated(
                "missing credentials: send an X-API-Key header or an Authorization: Bearer token",
            ));
        }
        let org = creds
            .organization_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Error::invalid("the X-Organization-Id header is required"))?;
        if !IdKind::Organization.matches(org) {
            return Err(Error::invalid(
                "X-Organization-Id is malformed: expected `org_` followed by hex digits",
            ));
        }
        match (api_key, bearer) {
            (Some(secret), _) => self.authenticate_api_key(secret, org).await,
            (None, Some(token)) => self.authenticate_bearer(token, org).await,
            (None, None) => unreachable!("checked above"),
        }
    }

    async fn authenticate_api_key(&self, secret: &str, org: &str) -> Result<Actor> {
        if !is_well_formed_secret(secret) {
            return Err(Error::unauthenticated("API key is malformed"));
        }
        let key = self
            .repo
            .api_key_find_by_hash(&hash_secret(secret))
            .await?
            .ok_or_else(|| Error::unauthenticated("API key is not valid"))?;
        let now = self.now();
        match key.status_at(now) {
            ApiKeyStatus::Revoked => {
                return Err(Error::unauthenticated("API key has been revoked"));
            }
            ApiKeyStatus::Expired => return Err(Error::unauthenticated("API key has expired")),
            ApiKeyStatus::Active => {}
        }
        if key.client_id != org {
            return Err(Error::forbidden(
                "this API key belongs to a different organization than X-Organization-Id",
            ));
        }
        let stale = key
            .last_used_at
            .is_none_or(|t| t.add_seconds(TOUCH_INTERVAL_SECS) <= now);
        if stale {
            // Best effort: a failed touch must not fail the request it describes.
            if let Err(e) = self
                .repo
                .api_key_touch(&key.key_id, now, now.add_seconds(-TOUCH_INTERVAL_SECS))
                .await
            {
                tracing::warn!(key_id = %key.key_id, error = %e, "could not record API key use");
            }
        }
        Ok(Actor {
            organization_id: key.client_id,
            user_id: key.user_id,
            role: key.role,
            principal: Principal::ApiKey(key.key_id),
        })
    }

    /// Verifies a bearer token and its `sub`; 401 when no JWT key is configured.
    fn verify_user_token(&self, token: &str) -> Result<UserClaims> {
        let jwt = self.jwt.as_ref().ok_or_else(|| {
            Error::unauthenticated(
                "bearer tokens are not accepted: this server has no JWT key configured",
            )
        })?;
        let claims = jwt.verify(token)?;
        if !IdKind::User.matches(&claims.sub) {
            return Err(Error::unauthenticated(
                "bearer token `sub` is not a user id (`user_…`)",
            ));
        }
        Ok(claims)
    }

    async fn authenticate_bearer(&self, token: &str, org: &str) -> Result<Actor> {
        let claims = self.verify_user_token(token)?;
        let membership = self
            .repo
            .membership_find(org, &claims.sub)
            .await?
            .filter(|m| m.status == MemberStatus::Active)
            .ok_or_else(|| Error::forbidden("you are not a member of this organization"))?;
        Ok(Actor {
            organization_id: membership.organization_id,
            user_id: membership.user_id,
            role: membership.role,
            principal: Principal::User,
        })
    }

    /// Creates an organization, its first admin (or reuses the user with that e-mail), the
    /// admin membership and an admin API key, atomically.
    pub async fn organization_bootstrap(&self, input: BootstrapInput) -> Result<BootstrapOutput> {
        let org_name = validate::text("org-name", &input.org_name, 200)?;
        let email = validate::email("admin-email", &input.admin_email)?;
        let admin_name = input
            .admin_name
            .as_deref()
            .map(|n| validate::text("admin-name", n, 200))
            .transpose()?;
        let now = self.now();
        let organization = Organization {
            organization_id: self.id(IdKind::Organization),
            name: org_name,
            created_at: now,
        };
        let (user, user_is_new) = match self.repo.user_find_by_email(&email).await? {
            Some(user) => (user, false),
            None => (
                User {
                    user_id: self.id(IdKind::User),
                    email,
                    name: admin_name,
                    created_at: now,
                    last_login: None,
                },
                true,
            ),
        };
        let membership = Membership {
            membership_id: self.id(IdKind::Membership),
            organization_id: organization.organization_id.clone(),
            user_id: user.user_id.clone(),
            role: Role::Admin,
            status: MemberStatus::Active,
            created_at: now,
        };
        let secret = ApiKeySecret::generate();
        let api_key = ApiKey {
            key_id: self.id(IdKind::ApiKey),
            name: "bootstrap admin key".to_owned(),
            role: Role::Admin,
            prefix: secret.prefix().to_owned(),
            client_id: organization.organization_id.clone(),
            user_id: user.user_id.clone(),
            status: ApiKeyStatus::Active,
            created_at: now,
            last_used_at: None,
            expires_at: None,
        };
        let records = BootstrapRecords {
            organization,
            user,
            user_is_new,
            membership,
            api_key,
            secret_hash: secret.hash(),
        };
        self.repo.bootstrap(&records).await?;
        Ok(BootstrapOutput {
            organization_id: records.organization.organization_id,
            user_id: records.user.user_id,
            key_id: records.api_key.key_id,
            api_key: secret.expose().to_owned(),
        })
    }

    /// Checks a list of ids of `kind` named `field` in a body: well-formed, at most 100, no
    /// duplicates. Whether they exist is checked by the repository inside its transaction.
    pub(crate) fn check_ids(kind: IdKind, field: &str, ids: &[String]) -> Result<Vec<String>> {
        if ids.len() > 100 {
            return Err(Error::invalid(format!("{field} may list at most 100 ids")));
        }
        let mut seen = BTreeSet::new();
        for id in ids {
            if !kind.matches(id) {
                return Err(Error::invalid(format!(
                    "{field}: `{}` is not a valid {}",
                    crate::ids::truncate(id, 80),
                    kind.field()
                )));
            }
            if !seen.insert(id.as_str()) {
                return Err(Error::invalid(format!("{field}: `{id}` is listed twice")));
            }
        }
        Ok(ids.to_vec())
    }

    pub(crate) async fn referenced_agent(&self, actor: &Actor, agent_id: &str) -> Result<Agent> {
        if !IdKind::Agent.matches(agent_id) {
            return Err(Error::invalid(format!(
                "agent_id `{}` is not a valid agent id",
                crate::ids::truncate(agent_id, 80)
            )));
        }
        self.repo
            .agent_get(&actor.organization_id, agent_id)
            .await?
            .ok_or_else(|| {
                Error::invalid(format!(
                    "agent_id: agent {agent_id} not found in this organization"
                ))
            })
    }
}
