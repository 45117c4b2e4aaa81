//! Signing keys published by an identity provider as a JWKS (`auth.jwks_url`): fetched through a
//! [`JwksSource`], cached by `kid`, refreshed when they are older than
//! [`JwksSettings::refresh_interval`] (lazily, by the first request after that) and when a token
//! names a `kid` the cache does not hold, never more often than once per
//! [`JwksSettings::min_fetch_interval`], and one fetch at a time however many requests wait.
//! A failed fetch (unreachable, 5xx, malformed, no usable key) keeps the cached keys.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::error::{Error, Result};

/// Where the key set comes from: `voiceplane-clients` fetches it over HTTP.
#[async_trait]
pub trait JwksSource: Send + Sync + fmt::Debug {
    /// The current key set. An error (its sentence is logged, never shown to a caller) keeps
    /// the cached keys in use.
    async fn fetch(&self) -> Result<JwkSet>;
}

/// How a JWKS is fetched and kept. [`JwksSettings::new`] gives the defaults: refreshed hourly,
/// fetched at most once per 30 seconds.
#[derive(Clone)]
pub struct JwksSettings {
    /// Fetches the key set.
    pub source: Arc<dyn JwksSource>,
    /// Keys older than this are fetched again by the next request that uses them. Default 1 h.
    pub refresh_interval: Duration,
    /// The shortest time between two fetches, whatever triggers them (an unknown `kid`, an
    /// expired cache, a failed fetch). Default 30 s.
    pub min_fetch_interval: Duration,
}

impl JwksSettings {
    /// Settings with the default intervals.
    pub fn new(source: Arc<dyn JwksSource>) -> Self {
        Self {
            source,
            refresh_interval: Duration::from_secs(3600),
            min_fetch_interval: Duration::from_secs(30),
        }
    }
}

impl fmt::Debug for JwksSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwksSettings")
            .field("source", &self.source)
            .field("refresh_interval", &self.refresh_interval)
            .field("min_fetch_interval", &self.min_fetch_interval)
            .finish()
    }
}

/// One usable key of the set and the only algorithm it verifies.
pub(super) struct JwksKey {
    pub(super) key: DecodingKey,
    pub(super) alg: Algorithm,
}

#[derive(Default)]
struct State {
    keys: HashMap<String, Arc<JwksKey>>,
    /// The last fetch that succeeded.
    fetched_at: Option<Instant>,
    /// The last fetch, whatever its outcome.
    attempted_at: Option<Instant>,
    /// Whether the last fetch failed.
    failing: bool,
}

/// What the cache can say about a `kid` without fetching.
enum Lookup {
    /// Cached and fresh.
    Ready(Arc<JwksKey>),
    /// Unknown or stale; `may_fetch` says whether the fetch interval allows a fetch now.
    Wanted {
        cached: Option<Arc<JwksKey>>,
        may_fetch: bool,
    },
}

/// The cache of one JWKS, shared by every request.
pub(super) struct JwksCache {
    settings: JwksSettings,
    state: Mutex<State>,
    /// Held across a fetch so that requests waiting for the same refresh cause one fetch: each
    /// looks at the cache again once it holds the lock.
    fetching: tokio::sync::Mutex<()>,
}

impl fmt::Debug for JwksCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwksCache")
            .field("settings", &self.settings)
            .field("keys", &self.state().keys.len())
            .finish()
    }
}

impl JwksCache {
    pub(super) fn new(settings: JwksSettings) -> Self {
        Self {
            settings,
            state: Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    // The guard is never held across an await, and a panic while holding it cannot leave the
    // state half-written (each write is one assignment), so a poisoned lock is still usable.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key named `kid`: 401 when the identity provider does not publish it (after a fetch,
    /// or when the fetch interval forbids one), 503 when the set cannot be fetched and the key
    /// is not cached.
    pub(super) async fn key(&self, kid: &str) -> Result<Arc<JwksKey>> {
        match self.lookup(kid, Instant::now()) {
            Lookup::Ready(key) => return Ok(key),
            Lookup::Wanted {
                cached,
                may_fetch: false,
            } => return cached.ok_or_else(|| self.unknown_kid()),
            Lookup::Wanted {
                may_fetch: true, ..
            } => {}
        }
        let _one_fetch = self.fetching.lock().await;
        // Whoever held the lock before may just have fetched what this request needs.
        let now = Instant::now();
        match self.lookup(kid, now) {
            Lookup::Ready(key) => return Ok(key),
            Lookup::Wanted {
                cached,
                may_fetch: false,
            } => return cached.ok_or_else(|| self.unknown_kid()),
            Lookup::Wanted {
                may_fetch: true, ..
            } => {}
        }
        self.refresh(now).await;
        match self.lookup(kid, Instant::now()) {
            Lookup::Ready(key)
            | Lookup::Wanted {
                cached: Some(key), ..
            } => Ok(key),
            Lookup::Wanted { cached: None, .. } => Err(self.unknown_kid()),
        }
    }

    fn lookup(&self, kid: &str, now: Instant) -> Lookup {
        let state = self.state();
        let cached = state.keys.get(kid).cloned();
        let fresh = state
            .fetched_at
            .is_some_and(|t| now.saturating_duration_since(t) < self.settings.refresh_interval);
        match cached {
            Some(key) if fresh => Lookup::Ready(key),
            cached => Lookup::Wanted {
                cached,
                may_fetch: state.attempted_at.is_none_or(|t| {
                    now.saturating_duration_since(t) >= self.settings.min_fetch_interval
                }),
            },
        }
    }

    fn unknown_kid(&self) -> Error {
        if self.state().failing {
            Error::Unavailable(
                "the identity provider's signing keys cannot be fetched right now; try again later"
                    .to_owned(),
            )
        } else {
            Error::unauthenticated(
                "bearer token names a signing key (`kid`) that the identity provider does not publish",
            )
        }
    }

    /// Fetches the set; replaces the cached keys when that works, keeps them otherwise.
    async fn refresh(&self, started: Instant) {
        let fetched = self.settings.source.fetch().await.and_then(usable_keys);
        let mut state = self.state();
        state.attempted_at = Some(started);
        match fetched {
            Ok(keys) => {
                tracing::debug!(keys = keys.len(), "fetched the JWKS");
                state.keys = keys;
                state.fetched_at = Some(started);
                state.failing = false;
            }
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    cached_keys = state.keys.len(),
                    "could not refresh the JWKS; the cached keys stay in use"
                );
                state.failing = true;
            }
        }
    }
}

/// The RS256 and ES256 (P-256) signing keys of `set` that have a `kid`; an error when there is
/// none, which is treated like any failed fetch.
fn usable_keys(set: JwkSet) -> Result<HashMap<String, Arc<JwksKey>>> {
    let keys: HashMap<_, _> = set
        .keys
        .iter()
        .filter_map(|jwk| {
            let kid = jwk.common.key_id.clone()?;
            let alg = signing_algorithm(jwk)?;
            let key = DecodingKey::from_jwk(jwk).ok()?;
            Some((kid, Arc::new(JwksKey { key, alg })))
        })
        .collect();
    if keys.is_empty() {
        return Err(Error::Upstream(
            "the JWKS holds no RS256 or ES256 (P-256) signing key with a `kid`".to_owned(),
        ));
    }
    Ok(keys)
}

/// The algorithm a JWK verifies: RS256 for RSA keys, ES256 for P-256 keys, as its `alg` says or
/// implied by its type when it has none. Encryption keys and every other kind are skipped, so
/// that a token can never pick an algorithm its key was not published for.
fn signing_algorithm(jwk: &Jwk) -> Option<Algorithm> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let alg = jwk.common.key_algorithm;
    match &jwk.algorithm {
        AlgorithmParameters::RSA(_) if matches!(alg, None | Some(KeyAlgorithm::RS256)) => {
            Some(Algorithm::RS256)
        }
        AlgorithmParameters::EllipticCurve(p)
            if p.curve == EllipticCurve::P256
                && matches!(alg, None | Some(KeyAlgorithm::ES256)) =>
        {
            Some(Algorithm::ES256)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwk(value: serde_json::Value) -> Jwk {
        serde_json::from_value(value).expect("a JWK")
    }

    #[test]
    fn only_rs256_and_p256_signing_keys_are_used() {
        let n = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";
        let rsa = |extra: serde_json::Value| {
            let mut v = serde_json::json!({"kty": "RSA", "n": n, "e": "AQAB"});
            for (k, x) in extra.as_object().into_iter().flatten() {
                v[k] = x.clone();
            }
            jwk(v)
        };
        assert_eq!(
            signing_algorithm(&rsa(serde_json::json!({}))),
            Some(Algorithm::RS256)
        );
        assert_eq!(
            signing_algorithm(&rsa(serde_json::json!({"alg": "RS256", "use": "sig"}))),
            Some(Algorithm::RS256)
        );
        assert_eq!(
            signing_algorithm(&rsa(serde_json::json!({"use": "enc"}))),
            None
        );
        assert_eq!(
            signing_algorithm(&rsa(serde_json::json!({"alg": "PS256"}))),
            None
        );
        let ec = |crv: &str| {
            jwk(serde_json::json!({
                "kty": "EC", "crv": crv,
                "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
            }))
        };
        assert_eq!(signing_algorithm(&ec("P-256")), Some(Algorithm::ES256));
        assert_eq!(signing_algorithm(&ec("P-384")), None);
        let oct = jwk(serde_json::json!({"kty": "oct", "k": "c2VjcmV0", "alg": "HS256"}));
        assert_eq!(signing_algorithm(&oct), None);

        // Keys without a `kid` cannot be picked; a set with nothing usable is an error.
        let set = JwkSet {
            keys: vec![rsa(serde_json::json!({})), oct],
        };
        assert!(matches!(usable_keys(set), Err(Error::Upstream(_))));
        let set = JwkSet {
            keys: vec![rsa(serde_json::json!({"kid": "k1"}))],
        };
        assert_eq!(usable_keys(set).expect("one usable key").len(), 1);
    }
}
