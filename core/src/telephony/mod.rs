//! Telephony integrations: the providers, the shape of their credentials, the probe that
//! tells whether stored credentials work, what voiceplane asks of a provider
//! ([`gateway`]), how its reports move a call forward ([`progress`]), how its webhooks are
//! verified ([`signature`]) and the TwiML it answers Twilio with ([`twiml`]).

pub mod gateway;
pub mod progress;
pub mod signature;
pub mod twiml;

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Telephony providers an integration can hold credentials for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TelephonyProvider {
    /// Twilio: `{account_sid, auth_token}`.
    Twilio,
    /// Telnyx: `{api_key, public_key?, connection_id?}`.
    Telnyx,
}

impl TelephonyProvider {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Twilio => "twilio",
            Self::Telnyx => "telnyx",
        }
    }

    /// Parses a wire name; anything else is a 400 listing the known providers.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "twilio" => Ok(Self::Twilio),
            "telnyx" => Ok(Self::Telnyx),
            other => Err(Error::invalid(format!(
                "provider must be `twilio` or `telnyx`, not `{}`",
                crate::ids::truncate(other, 40)
            ))),
        }
    }
}

/// Credentials of one provider, checked for shape. `Debug` never shows them.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TelephonyCredentials {
    /// Twilio account SID and auth token.
    Twilio {
        /// `AC` followed by 32 hex digits.
        account_sid: String,
        /// The account's auth token.
        auth_token: String,
    },
    /// Telnyx API key, and what placing and receiving calls needs besides.
    Telnyx {
        /// The API key (v2).
        api_key: String,
        /// The account's public key (base64 Ed25519) that signs its webhooks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_key: Option<String>,
        /// The Call Control application calls go through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connection_id: Option<String>,
    },
}

impl fmt::Debug for TelephonyCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Twilio { account_sid, .. } => f
                .debug_struct("Twilio")
                .field("account_sid", account_sid)
                .field("auth_token", &"<redacted>")
                .finish(),
            Self::Telnyx {
                public_key,
                connection_id,
                ..
            } => f
                .debug_struct("Telnyx")
                .field("api_key", &"<redacted>")
                .field("public_key", &public_key.is_some())
                .field("connection_id", &connection_id.is_some())
                .finish(),
        }
    }
}

fn credential_field(
    obj: &serde_json::Map<String, serde_json::Value>,
    provider: TelephonyProvider,
    name: &str,
) -> Result<String> {
    match obj.get(name) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() && s.len() <= 512 => {
            Ok(s.trim().to_owned())
        }
        Some(_) => Err(Error::invalid(format!(
            "credentials.{name} must be a non-empty string"
        ))),
        None => Err(Error::invalid(format!(
            "credentials.{name} is required for {} integrations",
            provider.as_str()
        ))),
    }
}

impl TelephonyCredentials {
    /// Checks `value` against the credential shape of `provider`: the fields it needs, as
    /// non-empty strings, and no others. Errors name the field but never echo a value.
    pub fn parse(provider: TelephonyProvider, value: &serde_json::Value) -> Result<Self> {
        let obj = value
            .as_object()
            .ok_or_else(|| Error::invalid("credentials must be a JSON object"))?;
        let allowed: &[&str] = match provider {
            TelephonyProvider::Twilio => &["account_sid", "auth_token"],
            TelephonyProvider::Telnyx => &["api_key", "public_key", "connection_id"],
        };
        if let Some(extra) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(Error::invalid(format!(
                "credentials.{} is not a {} credential; expected {}",
                crate::ids::truncate(extra, 40),
                provider.as_str(),
                allowed.join(", ")
            )));
        }
        match provider {
            TelephonyProvider::Twilio => {
                let account_sid = credential_field(obj, provider, "account_sid")?;
                let ok = account_sid.len() == 34
                    && account_sid.starts_with("AC")
                    && account_sid[2..].bytes().all(|b| b.is_ascii_hexdigit());
                if !ok {
                    return Err(Error::invalid(
                        "credentials.account_sid must be `AC` followed by 32 hex digits",
                    ));
                }
                let auth_token = credential_field(obj, provider, "auth_token")?;
                Ok(Self::Twilio {
                    account_sid,
                    auth_token,
                })
            }
            TelephonyProvider::Telnyx => {
                let optional = |name| {
                    obj.contains_key(name)
                        .then(|| credential_field(obj, provider, name))
                        .transpose()
                };
                let public_key = optional("public_key")?;
                if let Some(key) = &public_key {
                    use base64::Engine as _;
                    let decoded = base64::engine::general_purpose::STANDARD.decode(key);
                    if !decoded.is_ok_and(|bytes| bytes.len() == 32) {
                        return Err(Error::invalid(
                            "credentials.public_key must be the account's Ed25519 public key \
                             in base64 (32 bytes)",
                        ));
                    }
                }
                Ok(Self::Telnyx {
                    api_key: credential_field(obj, provider, "api_key")?,
                    public_key,
                    connection_id: optional("connection_id")?,
                })
            }
        }
    }

    /// What a provider's webhooks are verified with: Twilio's auth token, Telnyx's public key
    /// (`None` while a Telnyx integration has none).
    pub fn webhook_key(&self) -> Option<&str> {
        match self {
            Self::Twilio { auth_token, .. } => Some(auth_token),
            Self::Telnyx { public_key, .. } => public_key.as_deref(),
        }
    }

    /// The provider these credentials are for.
    pub fn provider(&self) -> TelephonyProvider {
        match self {
            Self::Twilio { .. } => TelephonyProvider::Twilio,
            Self::Telnyx { .. } => TelephonyProvider::Telnyx,
        }
    }
}

/// voiceplane's call id as Telnyx's `client_state` (base64), which Telnyx sends back with
/// every event of the call and in its media stream's `start`: followed by the stream's token
/// (after a space) when the built-in runtime takes the stream.
pub fn client_state(call_sid: &str, stream_token: Option<&str>) -> String {
    use base64::Engine as _;
    let state = match stream_token {
        Some(token) => format!("{call_sid} {token}"),
        None => call_sid.to_owned(),
    };
    base64::engine::general_purpose::STANDARD.encode(state)
}

/// What a `client_state` of [`client_state`] carries: the call id and the token, if any.
fn client_state_parts(state: &str) -> Option<(String, Option<String>)> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(state)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (sid, token) = match text.split_once(' ') {
        Some((sid, token)) => (sid.to_owned(), Some(token.to_owned())),
        None => (text, None),
    };
    crate::ids::IdKind::Call
        .matches(&sid)
        .then_some((sid, token))
}

/// The call id a `client_state` of [`client_state`] carries; `None` for any other state.
pub fn call_sid_of_client_state(state: &str) -> Option<String> {
    client_state_parts(state).map(|(sid, _)| sid)
}

/// The stream token a `client_state` of [`client_state`] carries, if any.
pub fn token_of_client_state(state: &str) -> Option<String> {
    client_state_parts(state).and_then(|(_, token)| token)
}

/// What a validation probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The provider accepted the credentials.
    Valid,
    /// The provider said these credentials are wrong (401, 403 or 404). The reason never
    /// contains the credentials.
    Invalid(String),
    /// The provider could not say: it was unreachable, did not answer in time, or answered
    /// with a 5xx, a 429 or another status that is no verdict on the credentials. The reason
    /// names the provider, never contains the credentials or the provider's body, and may be
    /// shown to the caller.
    Unavailable(String),
}

/// Makes a test call to a telephony provider with stored credentials.
#[async_trait]
pub trait TelephonyValidator: Send + Sync + 'static {
    /// Asks the provider whether `credentials` work. Never fails: unreachable or erroring
    /// providers are [`ProbeOutcome::Unavailable`].
    async fn probe(&self, credentials: &TelephonyCredentials) -> ProbeOutcome;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn credential_shapes() {
        let sid = format!("AC{}", "0a".repeat(16));
        let ok = TelephonyCredentials::parse(
            TelephonyProvider::Twilio,
            &json!({"account_sid": sid, "auth_token": "tok"}),
        )
        .unwrap();
        assert_eq!(ok.provider(), TelephonyProvider::Twilio);
        assert!(!format!("{ok:?}").contains("tok\""));
        let missing =
            TelephonyCredentials::parse(TelephonyProvider::Twilio, &json!({"account_sid": sid}));
        assert!(matches!(missing, Err(Error::InvalidInput(m)) if m.contains("auth_token")));
        let extra = TelephonyCredentials::parse(
            TelephonyProvider::Telnyx,
            &json!({"api_key": "k", "x": 1}),
        );
        assert!(extra.is_err());
        let bad_sid = TelephonyCredentials::parse(
            TelephonyProvider::Twilio,
            &json!({"account_sid": "XY", "auth_token": "secret-value"}),
        )
        .unwrap_err();
        assert!(!bad_sid.to_string().contains("secret-value"));
        assert!(TelephonyProvider::parse("vonage").is_err());
    }

    #[test]
    fn telnyx_takes_a_public_key_and_a_connection_when_given() {
        let key = "C7yKRyfTfCGtgXw0nqJoklVkqpVpOsaHW+BNjwfPAHM=";
        let full = TelephonyCredentials::parse(
            TelephonyProvider::Telnyx,
            &json!({"api_key": "KEY0123", "public_key": key, "connection_id": "1494404757140276705"}),
        )
        .unwrap();
        assert_eq!(full.webhook_key(), Some(key));
        let debug = format!("{full:?}");
        assert!(
            !debug.contains("KEY0123") && !debug.contains(key),
            "{debug}"
        );
        let bare = TelephonyCredentials::parse(TelephonyProvider::Telnyx, &json!({"api_key": "k"}))
            .unwrap();
        assert_eq!(bare.webhook_key(), None);
        // Stored before these fields existed, it still reads.
        let stored: TelephonyCredentials = serde_json::from_value(json!({"api_key": "k"})).unwrap();
        assert_eq!(stored, bare);
        let short = TelephonyCredentials::parse(
            TelephonyProvider::Telnyx,
            &json!({"api_key": "k", "public_key": "AAAA"}),
        )
        .unwrap_err();
        assert!(short.to_string().contains("public_key"), "{short}");
    }
}
