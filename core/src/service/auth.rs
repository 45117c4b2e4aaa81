//! Authentication: resolving a request's API key or bearer token to the [`Actor`] it acts as
//! in the organization named by `X-Organization-Id`.

use super::Service;
use crate::auth::{
    Actor, Credentials, Principal, UserClaims, hash_secret_in, is_well_formed_secret,
};
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{ApiKey, ApiKeyStatus, MemberStatus};

/// A key's `last_used_at` and a user's `last_login` are written at most once per this many
/// seconds each.
const TOUCH_INTERVAL_SECS: i64 = 60;

impl Service {
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
        let mut hex = [0; 64];
        let hash = hash_secret_in(secret, &mut hex);
        // The version first: a revocation committed after this read leaves a key read below
        // cached under the older version, so the next request reads it again.
        let versions = self.repo.change_versions().await?;
        let key = self
            .keys
            .get_or_read(hash, versions.credentials, || {
                self.repo.api_key_find_by_hash(hash)
            })
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
        if key.organization_id != org {
            return Err(Error::forbidden(
                "this API key belongs to a different organization than X-Organization-Id",
            ));
        }
        let stale = key
            .last_used_at
            .is_none_or(|t| t.add_seconds(TOUCH_INTERVAL_SECS) <= now);
        if stale {
            // Best effort: a failed touch must not fail the request it describes.
            match self
                .repo
                .api_key_touch(&key.key_id, now, now.add_seconds(-TOUCH_INTERVAL_SECS))
                .await
            {
                Ok(()) => self.keys.update(hash, |key| ApiKey {
                    last_used_at: Some(now),
                    ..key.clone()
                }),
                Err(e) => {
                    tracing::warn!(key_id = %key.key_id, error = %e, "could not record API key use");
                }
            }
        }
        Ok(Actor {
            organization_id: key.organization_id.clone(),
            user_id: key.user_id.clone(),
            role: key.role,
            principal: Principal::ApiKey(key.key_id.clone()),
            scopes: key.scopes.clone(),
            request: Default::default(),
            versions: Some(versions),
        })
    }

    /// Verifies a bearer token and its `sub`; 401 when no JWT key is configured.
    pub(super) async fn verify_user_token(&self, token: &str) -> Result<UserClaims> {
        let jwt = self.jwt.as_ref().ok_or_else(|| {
            Error::unauthenticated(
                "bearer tokens are not accepted: this server has no JWT key configured",
            )
        })?;
        let claims = jwt.verify(token).await?;
        if !IdKind::User.matches(&claims.sub) {
            return Err(Error::unauthenticated(
                "bearer token `sub` is not a user id (`user_…`)",
            ));
        }
        Ok(claims)
    }

    async fn authenticate_bearer(&self, token: &str, org: &str) -> Result<Actor> {
        let claims = self.verify_user_token(token).await?;
        let membership = self
            .repo
            .membership_find(org, &claims.sub)
            .await?
            .filter(|m| m.status == MemberStatus::Active)
            .ok_or_else(|| Error::forbidden("you are not a member of this organization"))?;
        // Unconditional here because the membership row does not carry `last_login`; the
        // repository's condition keeps it to one write per user per interval. Best effort, like
        // the key touch: a failed write must not fail the request it describes.
        let now = self.now();
        if let Err(e) = self
            .repo
            .user_touch_login(
                &membership.user_id,
                now,
                now.add_seconds(-TOUCH_INTERVAL_SECS),
            )
            .await
        {
            tracing::warn!(user_id = %membership.user_id, error = %e, "could not record sign-in");
        }
        Ok(Actor {
            organization_id: membership.organization_id,
            user_id: membership.user_id,
            role: membership.role,
            principal: Principal::User,
            scopes: None,
            request: Default::default(),
            versions: None,
        })
    }
}
