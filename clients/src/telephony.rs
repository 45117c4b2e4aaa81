//! Twilio and Telnyx over HTTP: the credential probes, and the number configuration and
//! call control of [`TelephonyGateway`].
//!
//! The probes are one cheap authenticated read per provider:
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
use serde_json::{Value, json};
use voiceplane_core::telephony::gateway::{
    DialLookup, DialRequest, GatewayError, NumberWebhooks, ProviderCall, TelephonyGateway,
};
use voiceplane_core::telephony::progress;
use voiceplane_core::telephony::{
    ProbeOutcome, TelephonyCredentials, TelephonyValidator, call_sid_of_client_state, client_state,
};

use crate::{BuildError, HttpClient, base_url, endpoint, human};

/// Base URLs of the telephony providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelephonySettings {
    /// `telephony.twilio.base_url`, e.g. `https://api.twilio.com`.
    pub twilio_base_url: String,
    /// `telephony.telnyx.base_url`, e.g. `https://api.telnyx.com`.
    pub telnyx_base_url: String,
}

/// Twilio and Telnyx over HTTP: probes credentials ([`TelephonyValidator`]) and finds and
/// connects numbers ([`TelephonyGateway`]).
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
            Err(e) => ProbeOutcome::Unavailable(self.unanswered(provider, &e)),
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

/// Longest provider error message passed on, in characters.
const MAX_PROVIDER_MESSAGE: usize = 200;

impl HttpTelephonyValidator {
    /// Why `provider` gave no answer, in a sentence without the request's details.
    fn unanswered(&self, provider: &str, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            format!(
                "{provider} did not answer within {}",
                human(self.http.settings.request_timeout)
            )
        } else if e.is_connect() {
            format!("{provider} could not be reached")
        } else {
            format!("the connection to {provider} failed")
        }
    }

    /// Sends `request` for `provider` and reads a JSON answer; every failure is a
    /// [`GatewayError`] naming the provider, never carrying a credential.
    async fn call(
        &self,
        provider: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, GatewayError> {
        let response = request
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| {
                let why = self.unanswered(provider, &e);
                // Only a connection that was never made certainly carried nothing; after a
                // timeout or a broken connection the provider may have acted.
                if e.is_connect() {
                    GatewayError::Unavailable(why)
                } else {
                    GatewayError::Unknown(why)
                }
            })?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body);
        }
        let answered = || format!("{provider} answered with HTTP {}", status.as_u16());
        // A 429 is the provider refusing before it acts; a 503 may come from an edge that
        // passed the request on, and any other 5xx may come after the origin acted.
        match status.as_u16() {
            429 => return Err(GatewayError::Unavailable(answered())),
            503 => return Err(GatewayError::Overloaded(answered())),
            _ if status.is_server_error() => return Err(GatewayError::Unknown(answered())),
            _ => {}
        }
        // Twilio: `{"code": 21211, "message": …}`; Telnyx: `{"errors": [{"code", "title",
        // "detail"}]}`.
        let (code, message) = match body.get("errors").and_then(|e| e.get(0)) {
            Some(first) => (
                first["code"].as_str().map(str::to_owned),
                first["detail"].as_str().or(first["title"].as_str()),
            ),
            None => (
                body["code"].as_u64().map(|c| c.to_string()),
                body["message"].as_str(),
            ),
        };
        let message: String = message
            .unwrap_or("no message")
            .chars()
            .take(MAX_PROVIDER_MESSAGE)
            .collect();
        Err(GatewayError::Rejected {
            code: code.unwrap_or_else(|| status.as_u16().to_string()),
            message: format!("{provider}: {message}"),
        })
    }
}

#[async_trait]
impl TelephonyGateway for HttpTelephonyValidator {
    async fn find_number(
        &self,
        credentials: &TelephonyCredentials,
        e164: &str,
    ) -> Result<String, GatewayError> {
        let (provider, request, list) = match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                let request = self.twilio_get(
                    account_sid,
                    auth_token,
                    &["IncomingPhoneNumbers.json"],
                    &[("PhoneNumber", e164)],
                );
                ("twilio", request, ("incoming_phone_numbers", "sid"))
            }
            TelephonyCredentials::Telnyx { api_key, .. } => {
                let mut url = endpoint(&self.telnyx, &["v2", "phone_numbers"]);
                url.query_pairs_mut()
                    .append_pair("filter[phone_number]", e164.trim_start_matches('+'));
                let request = self.http.client.get(url).bearer_auth(api_key);
                ("telnyx", request, ("data", "id"))
            }
        };
        let body = self.call(provider, request).await?;
        let (field, id) = list;
        // Both searches match loosely (Twilio by prefix or pattern, Telnyx by digits): only the
        // exact number is this one.
        body[field]
            .as_array()
            .into_iter()
            .flatten()
            .find(|number| number["phone_number"].as_str() == Some(e164))
            .and_then(|number| number[id].as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                GatewayError::NotFound(format!("{provider} does not have {e164} on this account"))
            })
    }

    async fn connect_number(
        &self,
        credentials: &TelephonyCredentials,
        number_id: &str,
        webhooks: &NumberWebhooks,
    ) -> Result<(), GatewayError> {
        match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                let resource = format!("{number_id}.json");
                let form = [
                    ("VoiceUrl", webhooks.twilio_voice_url.as_str()),
                    ("VoiceMethod", "POST"),
                    ("StatusCallback", webhooks.twilio_status_url.as_str()),
                    ("StatusCallbackMethod", "POST"),
                ];
                let request = self.twilio_post(
                    account_sid,
                    auth_token,
                    &["IncomingPhoneNumbers", &resource],
                    &form,
                );
                self.call("twilio", request).await.map(|_| ())
            }
            TelephonyCredentials::Telnyx {
                api_key,
                connection_id,
                ..
            } => {
                let Some(connection_id) = connection_id else {
                    return Err(GatewayError::Rejected {
                        code: "connection_id".to_owned(),
                        message: "the Telnyx integration has no connection_id".to_owned(),
                    });
                };
                let number = endpoint(&self.telnyx, &["v2", "phone_numbers", number_id]);
                let request = self
                    .http
                    .client
                    .patch(number)
                    .bearer_auth(api_key)
                    .json(&json!({"connection_id": connection_id}));
                self.call("telnyx", request).await?;
                let application = endpoint(
                    &self.telnyx,
                    &["v2", "call_control_applications", connection_id],
                );
                let request = self
                    .http
                    .client
                    .patch(application)
                    .bearer_auth(api_key)
                    .json(&json!({"webhook_event_url": webhooks.telnyx_events_url}));
                self.call("telnyx", request).await.map(|_| ())
            }
        }
    }

    async fn dial(
        &self,
        credentials: &TelephonyCredentials,
        dial: &DialRequest,
    ) -> Result<String, GatewayError> {
        match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                let twiml = voiceplane_core::telephony::twiml::connect_stream(
                    &dial.stream_url,
                    &dial.call_sid,
                    &dial.agent_id,
                    dial.stream_token.as_deref(),
                );
                let timeout = dial.ring_timeout_secs.to_string();
                let mut form = vec![
                    ("To", dial.to.as_str()),
                    ("From", dial.from.as_str()),
                    ("Twiml", twiml.as_str()),
                    ("StatusCallback", dial.status_url.as_str()),
                    ("StatusCallbackMethod", "POST"),
                    ("Timeout", timeout.as_str()),
                ];
                for event in ["initiated", "ringing", "answered", "completed"] {
                    form.push(("StatusCallbackEvent", event));
                }
                if dial.machine_detection {
                    form.push(("MachineDetection", "Enable"));
                }
                let request = self.twilio_post(account_sid, auth_token, &["Calls.json"], &form);
                let body = self.call("twilio", request).await?;
                body["sid"].as_str().map(str::to_owned).ok_or_else(|| {
                    GatewayError::Unknown("twilio answered without a call sid".into())
                })
            }
            TelephonyCredentials::Telnyx {
                api_key,
                connection_id,
                ..
            } => {
                let url = endpoint(&self.telnyx, &["v2", "calls"]);
                let mut body = json!({
                    "connection_id": connection_id,
                    "to": dial.to,
                    "from": dial.from,
                    "webhook_url": dial.events_url,
                    "client_state": client_state(&dial.call_sid, dial.stream_token.as_deref()),
                    // Telnyx performs a command once per `command_id`, however often it is sent.
                    "command_id": dial.call_sid,
                    "timeout_secs": dial.ring_timeout_secs,
                });
                stream_fields(&mut body, &dial.stream_url);
                if dial.machine_detection {
                    body["answering_machine_detection"] = json!("detect");
                }
                let request = self.http.client.post(url).bearer_auth(api_key).json(&body);
                let answer = self.call("telnyx", request).await?;
                answer["data"]["call_control_id"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        GatewayError::Unknown("telnyx answered without a call_control_id".into())
                    })
            }
        }
    }

    async fn find_dialed(
        &self,
        credentials: &TelephonyCredentials,
        lookup: &DialLookup,
    ) -> Result<Vec<ProviderCall>, GatewayError> {
        match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                // Twilio filters by day (UTC); the moment is checked on what it answers.
                let day = lookup.since.to_rfc3339();
                let request = self.twilio_get(
                    account_sid,
                    auth_token,
                    &["Calls.json"],
                    &[
                        ("To", &lookup.to),
                        ("From", &lookup.from),
                        ("StartTime>", &day[..10]),
                        ("PageSize", "100"),
                    ],
                );
                let body = self.call("twilio", request).await?;
                let mut found: Vec<(i64, ProviderCall)> = body["calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|call| {
                        let created = call["date_created"].as_str().and_then(rfc2822_micros)?;
                        (created >= lookup.since.as_micros()).then(|| (created, twilio_call(call)))
                    })
                    .filter_map(|(created, call)| Some((created, call?)))
                    .collect();
                found.sort_by_key(|(created, _)| *created);
                Ok(found.into_iter().map(|(_, call)| call).collect())
            }
            TelephonyCredentials::Telnyx {
                api_key,
                connection_id,
                ..
            } => {
                let Some(connection_id) = connection_id else {
                    return Ok(Vec::new());
                };
                let mut url = endpoint(
                    &self.telnyx,
                    &["v2", "connections", connection_id, "active_calls"],
                );
                url.query_pairs_mut().append_pair("page[size]", "250");
                let mut found = Vec::new();
                // The list is paged by cursor; a connection with more live calls than these
                // pages hold is far beyond what one organization dials.
                for _ in 0..MAX_ACTIVE_CALL_PAGES {
                    let request = self.http.client.get(url.clone()).bearer_auth(api_key);
                    let body = self.call("telnyx", request).await?;
                    found.extend(
                        body["data"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|call| {
                                call["client_state"]
                                    .as_str()
                                    .and_then(call_sid_of_client_state)
                                    == Some(lookup.call_sid.clone())
                            })
                            .filter_map(|call| call["call_control_id"].as_str())
                            .map(|id| ProviderCall {
                                provider_call_id: id.to_owned(),
                                status: None,
                                duration_seconds: None,
                            }),
                    );
                    match body["meta"]["cursors"]["after"].as_str() {
                        Some(after) if !after.is_empty() && body["meta"]["next"].is_string() => {
                            url.query_pairs_mut()
                                .clear()
                                .append_pair("page[size]", "250")
                                .append_pair("page[after]", after);
                        }
                        _ => break,
                    }
                }
                Ok(found)
            }
        }
    }

    async fn call_state(
        &self,
        credentials: &TelephonyCredentials,
        provider_call_id: &str,
    ) -> Result<ProviderCall, GatewayError> {
        match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                let resource = format!("{provider_call_id}.json");
                let request = self.twilio_get(account_sid, auth_token, &["Calls", &resource], &[]);
                let body = self.call("twilio", request).await?;
                twilio_call(&body).ok_or_else(|| {
                    GatewayError::Unknown("twilio answered without the call's sid".into())
                })
            }
            TelephonyCredentials::Telnyx { api_key, .. } => {
                let url = endpoint(&self.telnyx, &["v2", "calls", provider_call_id]);
                let request = self.http.client.get(url).bearer_auth(api_key);
                let body = self.call("telnyx", request).await?;
                // Telnyx keeps an ended call's status for a while without saying how it
                // ended; the call's own hang-up event says that, when it arrives.
                if body["data"]["is_alive"].as_bool() == Some(true) {
                    Ok(ProviderCall {
                        provider_call_id: provider_call_id.to_owned(),
                        status: None,
                        duration_seconds: None,
                    })
                } else {
                    Err(GatewayError::Rejected {
                        code: TELNYX_CALL_ENDED.to_owned(),
                        message: "telnyx: the call has already ended".to_owned(),
                    })
                }
            }
        }
    }

    async fn answer(
        &self,
        credentials: &TelephonyCredentials,
        call_control_id: &str,
        stream_url: &str,
        call_sid: &str,
        stream_token: Option<&str>,
    ) -> Result<(), GatewayError> {
        let mut body = json!({
            "client_state": client_state(call_sid, stream_token),
            "command_id": format!("{call_sid}.answer"),
        });
        stream_fields(&mut body, stream_url);
        self.telnyx_action(credentials, call_control_id, "answer", body)
            .await
    }

    async fn reject(
        &self,
        credentials: &TelephonyCredentials,
        call_control_id: &str,
        call_sid: &str,
    ) -> Result<(), GatewayError> {
        let body = json!({"cause": "CALL_REJECTED", "command_id": format!("{call_sid}.reject")});
        self.telnyx_action(credentials, call_control_id, "reject", body)
            .await
    }

    async fn hangup(
        &self,
        credentials: &TelephonyCredentials,
        provider_call_id: &str,
        answered: bool,
    ) -> Result<(), GatewayError> {
        match credentials {
            TelephonyCredentials::Twilio {
                account_sid,
                auth_token,
            } => {
                let resource = format!("{provider_call_id}.json");
                // A call not yet answered is canceled; `completed` would not stop it ringing.
                let status = if answered { "completed" } else { "canceled" };
                let request = self.twilio_post(
                    account_sid,
                    auth_token,
                    &["Calls", &resource],
                    &[("Status", status)],
                );
                self.call("twilio", request).await.map(|_| ())
            }
            TelephonyCredentials::Telnyx { .. } => {
                self.telnyx_action(credentials, provider_call_id, "hangup", json!({}))
                    .await
            }
        }
    }
}

/// Telnyx's code for a command on a call that has ended.
const TELNYX_CALL_ENDED: &str = "90018";

/// Pages of a connection's active calls read when looking for one dial's call.
const MAX_ACTIVE_CALL_PAGES: usize = 20;

/// A Twilio call resource as voiceplane reads it: its sid, status and duration.
fn twilio_call(call: &Value) -> Option<ProviderCall> {
    Some(ProviderCall {
        provider_call_id: call["sid"].as_str()?.to_owned(),
        status: call["status"].as_str().and_then(progress::twilio_status),
        duration_seconds: call["duration"]
            .as_str()
            .and_then(|d| d.parse::<f64>().ok())
            .filter(|d| d.is_finite() && *d >= 0.0),
    })
}

/// Twilio's dates (`Tue, 31 Aug 2010 20:36:28 +0000`) as Unix microseconds.
fn rfc2822_micros(date: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc2822(date)
        .ok()
        .map(|d| d.timestamp_micros())
}

/// The media stream of a Telnyx call: the caller's audio to the runtime, and the runtime's
/// audio back as PCMU over RTP.
fn stream_fields(body: &mut Value, stream_url: &str) {
    body["stream_url"] = json!(stream_url);
    body["stream_track"] = json!("inbound_track");
    body["stream_bidirectional_mode"] = json!("rtp");
    body["stream_bidirectional_codec"] = json!("PCMU");
}

impl HttpTelephonyValidator {
    /// `{base}/2010-04-01/Accounts/{account_sid}/{resource…}`.
    fn twilio_url(&self, account_sid: &str, resource: &[&str]) -> Url {
        let mut path = vec!["2010-04-01", "Accounts", account_sid];
        path.extend_from_slice(resource);
        endpoint(&self.twilio, &path)
    }

    /// `GET {base}/2010-04-01/Accounts/{account_sid}/{resource…}?{query}`, as the account.
    fn twilio_get(
        &self,
        account_sid: &str,
        auth_token: &str,
        resource: &[&str],
        query: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let mut url = self.twilio_url(account_sid, resource);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        self.http
            .client
            .get(url)
            .basic_auth(account_sid, Some(auth_token))
    }

    /// `POST {base}/2010-04-01/Accounts/{account_sid}/{resource…}` with `form`, as the account.
    fn twilio_post(
        &self,
        account_sid: &str,
        auth_token: &str,
        resource: &[&str],
        form: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        self.http
            .client
            .post(self.twilio_url(account_sid, resource))
            .basic_auth(account_sid, Some(auth_token))
            .form(form)
    }

    /// `POST {base}/v2/calls/{call_control_id}/actions/{action}` with `body`.
    async fn telnyx_action(
        &self,
        credentials: &TelephonyCredentials,
        call_control_id: &str,
        action: &str,
        body: Value,
    ) -> Result<(), GatewayError> {
        let TelephonyCredentials::Telnyx { api_key, .. } = credentials else {
            return Err(GatewayError::Rejected {
                code: "provider".to_owned(),
                message: format!("`{action}` is a Telnyx command"),
            });
        };
        let url = endpoint(
            &self.telnyx,
            &["v2", "calls", call_control_id, "actions", action],
        );
        let request = self.http.client.post(url).bearer_auth(api_key).json(&body);
        self.call("telnyx", request).await.map(|_| ())
    }
}
