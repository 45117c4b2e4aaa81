//! The telephony credential probes, one cheap authenticated read per provider:
//!
//! - Twilio `{account_sid, auth_token}`: `GET {base}/2010-04-01/Accounts/{account_sid}.json`
//!   with Basic auth;
//! - Telnyx `{api_key}`: `GET {base}/v2/balance` with `Authorization: Bearer`.
//!
//! A 2xx is [`ProbeOutcome::Valid`]; 401, 403 or 404 (the provider says these credentials are
//! wrong) is [`ProbeOutcome::Invalid`]; anything else, or no answer in time, says nothing about
//! the credentials and is [`ProbeOutcome::Unavailable`]. Reasons never contain the credentials
//! or the provider's body.

use std::fmt;

use async_trait::async_trait;
use reqwest::Url;
use voiceplane_core::telephony::{ProbeOutcome, TelephonyCredentials, TelephonyValidator};

use crate::{BuildError, HttpClient, base_url, endpoint, human};

/// Base URLs of the telephony providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelephonySettings {
    /// `telephony.twilio.base_url`, e.g. `https://api.twilio.com`.
    pub twilio_base_url: String,
    /// `telephony.telnyx.base_url`, e.g. `https://api.telnyx.com`.
    pub telnyx_base_url: String,
}

/// Probes Twilio and Telnyx credentials over HTTP.
#[derive(Clone)]
pub struct HttpTelephonyValidator {
    http: HttpClient,
    twilio: Url,
    telnyx: Url,
}

impl fmt::Debug for HttpTelephonyValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTelephonyValidator")
            .field("twilio", &self.twilio.as_str())
            .field("telnyx", &self.telnyx.as_str())
            .finish()
    }
}

impl HttpTelephonyValidator {
    /// A validator for the providers at `settings` over `http`; fails when a base URL is not
    /// an http(s) URL.
    pub fn new(http: HttpClient, settings: TelephonySettings) -> Result<Self, BuildError> {
        Ok(Self {
            http,
            twilio: base_url("telephony.twilio.base_url", &settings.twilio_base_url)?,
            telnyx: base_url("telephony.telnyx.base_url", &settings.telnyx_base_url)?,
        })
    }

    fn request(&self, credentials: &TelephonyCredentials) -> reqwest::RequestBuilder {
        match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                let resource = format!("{account_sid}.json");
                let url = endpoint(&self.twilio, &["2010-04-01", "Accounts", &resource]);
                self.http
                    .client
                    .get(url)
                    .basic_auth(account_sid, Some(auth_token))
            }
            TelephonyCredentials::Telnyx { api_key, .. } => {
                let url = endpoint(&self.telnyx, &["v2", "balance"]);
                self.http.client.get(url).bearer_auth(api_key)
            }
        }
    }
}

#[async_trait]
impl TelephonyValidator for HttpTelephonyValidator {
    async fn probe(&self, credentials: &TelephonyCredentials) -> ProbeOutcome {
        let provider = credentials.provider().as_str();
        let request = self
            .request(credentials)
            .header(reqwest::header::ACCEPT, "application/json");
        let outcome = match request.send().await {
            Ok(response) if response.status().is_success() => ProbeOutcome::Valid,
            Ok(response) => {
                let code = response.status().as_u16();
                match code {
                    401 | 403 => ProbeOutcome::Invalid(format!(
                        "{provider} rejected the credentials (HTTP {code})"
                    )),
                    404 => ProbeOutcome::Invalid(format!(
                        "{provider} does not know this account (HTTP 404)"
                    )),
                    // 5xx, 429 and any other status are no verdict on the credentials.
                    _ => ProbeOutcome::Unavailable(format!(
                        "{provider} answered the credential check with HTTP {code}"
                    )),
                }
            }
            Err(e) if e.is_timeout() => ProbeOutcome::Unavailable(format!(
                "{provider} did not answer within {}",
                human(self.http.settings.request_timeout)
            )),
            Err(e) if e.is_connect() => {
                ProbeOutcome::Unavailable(format!("{provider} could not be reached"))
            }
            Err(_) => ProbeOutcome::Unavailable(format!("the connection to {provider} failed")),
        };
        match &outcome {
            ProbeOutcome::Valid => {}
            ProbeOutcome::Invalid(reason) => {
                tracing::info!(provider, reason = %reason, "telephony credentials did not validate");
            }
            ProbeOutcome::Unavailable(reason) => {
                tracing::warn!(provider, reason = %reason, "telephony credential check failed");
            }
        }
        outcome
    }
}
