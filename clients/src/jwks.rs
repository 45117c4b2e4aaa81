//! The identity provider's JWKS (`auth.jwks_url`): `GET {jwks_url}`, a JSON Web Key Set.
//!
//! One attempt per fetch, within [`JWKS_TIMEOUT`] and [`JWKS_MAX_BYTES`], without redirects
//! (the pool's policy); failures are `Upstream` errors that name neither the body nor the URL.
//! Which keys are used, how long they are kept and how often they are fetched is decided by
//! `voiceplane-core` ([`voiceplane_core::auth::JwksSettings`]).

use std::time::Duration;

use async_trait::async_trait;
use jsonwebtoken::jwk::JwkSet;
use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderValue};
use voiceplane_core::Result;
use voiceplane_core::auth::JwksSource;

use crate::{BuildError, Call, HttpClient, base_url};

/// The longest wait for the key set: requests that need a key wait for the fetch.
pub const JWKS_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest key set read; a provider's set is a few kilobytes.
pub const JWKS_MAX_BYTES: usize = 256 * 1024;

const FETCH: Call = Call {
    provider: "the identity provider",
    what: "the JWKS request",
    invalid: None,
    not_found: None,
    check: "auth.jwks_url",
    // A JWKS is public: a 401/403 means the URL points somewhere else than the key set.
    refused: "the key set request (a JWKS needs no credentials; check auth.jwks_url)",
};

/// Fetches a JWKS over HTTP: [`JwksSource`].
#[derive(Debug, Clone)]
pub struct HttpJwksSource {
    http: HttpClient,
    url: Url,
}

impl HttpJwksSource {
    /// A source for `jwks_url`, which must be an absolute http(s) URL (the error names
    /// `auth.jwks_url`).
    pub fn new(http: HttpClient, jwks_url: &str) -> Result<Self, BuildError> {
        Ok(Self {
            http,
            url: base_url("auth.jwks_url", jwks_url)?,
        })
    }
}

#[async_trait]
impl JwksSource for HttpJwksSource {
    async fn fetch(&self) -> Result<JwkSet> {
        let request = self.http.client.get(self.url.clone()).header(
            ACCEPT,
            HeaderValue::from_static("application/jwk-set+json, application/json"),
        );
        FETCH
            .json_within(request, JWKS_TIMEOUT, JWKS_MAX_BYTES)
            .await
    }
}
