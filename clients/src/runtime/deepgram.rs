//! Deepgram live speech to text over a WebSocket.
//!
//! | ours | theirs |
//! |---|---|
//! | `listen(key, params)` | `GET {base}/v1/listen?model=&encoding=&sample_rate=&channels=1&interim_results=true&endpointing=300&utterance_end_ms=1000&vad_events=true&language=` upgraded to a WebSocket, `Authorization: Token <key>` |
//! | `Mulaw8k` / `Linear16k` | `encoding=mulaw&sample_rate=8000` / `encoding=linear16&sample_rate=16000` |
//! | `ListenInput::Audio` | a binary frame |
//! | `ListenInput::KeepAlive` | `{"type":"KeepAlive"}` |
//! | `ListenInput::Close`, or `input` dropped | `{"type":"CloseStream"}`, then the rest of the results until Deepgram closes |
//! | `ListenEvent::Transcript` | `Results`: `channel.alternatives[0].transcript`, `is_final`, `speech_final` (an interim without words is skipped; a `speech_final` without words still ends the turn) |
//! | `ListenEvent::SpeechStarted` / `UtteranceEnd` | `SpeechStarted` / `UtteranceEnd` |
//!
//! Base URLs: `wss://api.deepgram.com` by default; `http(s)://` is taken as its `ws(s)://`
//! twin. The connection is made to addresses the target policy allows, resolved here, since
//! the WebSocket client would otherwise resolve names out of our sight.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{SinkExt, StreamExt};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};
use voiceplane_runtime::upstream::{
    AudioFormat, ListenEvent, ListenInput, ListenParams, ListenSession, ProviderKey, SpeechToText,
    UpstreamError,
};

use super::{RuntimeClientSettings, private};
use crate::guarded::{Unresolved, resolve_checked};
use crate::{BuildError, endpoint, human, install_crypto_provider};

/// Deepgram's live endpoint when no base URL is configured.
pub const DEEPGRAM_DEFAULT_BASE: &str = "wss://api.deepgram.com";

/// Room for this many inputs (20 ms frames) before the engine's `try_send` drops audio.
const INPUT_ROOM: usize = 64;
/// Room for this many events before the socket stops being read.
const EVENT_ROOM: usize = 64;
/// How long the results after `CloseStream` are waited for.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

const KEEP_ALIVE: &str = r#"{"type":"KeepAlive"}"#;
const CLOSE_STREAM: &str = r#"{"type":"CloseStream"}"#;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Deepgram live: [`SpeechToText`]. Cheap to clone.
#[derive(Clone)]
pub struct DeepgramListener {
    tls: Arc<rustls::ClientConfig>,
    settings: RuntimeClientSettings,
}

impl std::fmt::Debug for DeepgramListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeepgramListener")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl DeepgramListener {
    /// With the default settings.
    pub fn new() -> Result<Self, BuildError> {
        Self::with_settings(RuntimeClientSettings::default())
    }

    /// With `settings`; TLS trusts what the platform trusts (as reqwest does).
    pub fn with_settings(settings: RuntimeClientSettings) -> Result<Self, BuildError> {
        settings.check()?;
        install_crypto_provider();
        use rustls_platform_verifier::ConfigVerifierExt as _;
        let tls = rustls::ClientConfig::with_platform_verifier()
            .map_err(|e| BuildError::new(format!("cannot set up TLS for deepgram: {e}")))?;
        Ok(Self {
            tls: Arc::new(tls),
            settings,
        })
    }

    /// Connects and upgrades, within the connect timeout.
    async fn connect(&self, key: &ProviderKey, url: &Url) -> Result<Socket, UpstreamError> {
        let provider = key.provider.as_str();
        let host = url
            .host_str()
            .ok_or_else(|| UpstreamError(format!("{provider}'s base URL names no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|_| UpstreamError(format!("{provider}'s base URL is not a valid URL")))?;
        let mut token =
            HeaderValue::from_str(&format!("Token {}", key.api_key.trim())).map_err(|_| {
                UpstreamError(format!(
                    "{provider}'s API key holds characters not allowed in a header"
                ))
            })?;
        token.set_sensitive(true);
        request.headers_mut().insert(AUTHORIZATION, token);

        let policy = self.settings.policy;
        let connector = Connector::Rustls(self.tls.clone());
        let attempt = async {
            let addrs = resolve_checked(policy, &host, port).await.map_err(|e| {
                if e.downcast_ref::<Unresolved>().is_some() {
                    UpstreamError(format!("{provider}'s host name could not be resolved"))
                } else {
                    private(provider)
                }
            })?;
            let mut last = None;
            let mut tcp = None;
            for addr in addrs {
                match TcpStream::connect(addr).await {
                    Ok(stream) => {
                        tcp = Some(stream);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            let tcp = tcp.ok_or_else(|| {
                tracing::warn!(provider, error = ?last, "speech to text could not be reached");
                UpstreamError(format!("{provider} could not be reached"))
            })?;
            let _ = tcp.set_nodelay(true);
            tokio_tungstenite::client_async_tls_with_config(request, tcp, None, Some(connector))
                .await
                .map(|(socket, _)| socket)
                .map_err(|e| handshake_error(provider, e))
        };
        match tokio::time::timeout(self.settings.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamError(format!(
                "{provider} did not accept the connection within {}",
                human(self.settings.connect_timeout)
            ))),
        }
    }
}

/// The error for a failed upgrade; never the response body.
fn handshake_error(provider: &str, err: tungstenite::Error) -> UpstreamError {
    let sentence = match &err {
        tungstenite::Error::Http(response) => match response.status().as_u16() {
            code @ (401 | 403) => format!("{provider} rejected the API key (HTTP {code})"),
            429 => format!("{provider} is rate limiting our requests (HTTP 429)"),
            code => format!("{provider} refused the live connection (HTTP {code})"),
        },
        tungstenite::Error::Tls(_) => format!("the TLS handshake with {provider} failed"),
        _ => format!("the connection to {provider} failed"),
    };
    let detail = match &err {
        // The response, with the body the provider may have written, stays out of the log.
        tungstenite::Error::Http(response) => format!("HTTP {}", response.status()),
        other => other.to_string(),
    };
    tracing::warn!(provider, error = %detail, "{sentence}");
    UpstreamError(sentence)
}

/// `{base}/v1/listen?…` for `params`, as a `ws(s)` URL.
fn listen_url(base: &str, params: &ListenParams) -> Result<Url, String> {
    let base = match base.trim() {
        "" => DEEPGRAM_DEFAULT_BASE,
        b => b,
    };
    let mut url = Url::parse(base).map_err(|_| "is not an absolute URL".to_owned())?;
    let scheme = match url.scheme() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        _ => return Err("is not a ws(s):// or http(s):// URL".to_owned()),
    };
    url.set_scheme(scheme)
        .map_err(|_| "is not a ws(s):// or http(s):// URL".to_owned())?;
    if url.cannot_be_a_base() || url.host().is_none() {
        return Err("names no host".to_owned());
    }
    let mut url = endpoint(&url, &["v1", "listen"]);
    let (encoding, sample_rate) = match params.format {
        AudioFormat::Mulaw8k => ("mulaw", "8000"),
        AudioFormat::Linear16k => ("linear16", "16000"),
    };
    url.query_pairs_mut()
        .append_pair("model", &params.model)
        .append_pair("encoding", encoding)
        .append_pair("sample_rate", sample_rate)
        .append_pair("channels", "1")
        .append_pair("interim_results", "true")
        .append_pair("endpointing", "300")
        .append_pair("utterance_end_ms", "1000")
        .append_pair("vad_events", "true")
        .append_pair("language", &params.language.to_ascii_lowercase());
    Ok(url)
}

/// The event of one of Deepgram's text messages, if it is one we use.
fn event(text: &str) -> Option<ListenEvent> {
    // A `Value` rather than one struct: `channel` is an object in `Results` and a list of
    // channel indexes in the other messages.
    let message: Value = serde_json::from_str(text).ok()?;
    match message.get("type")?.as_str()? {
        "Results" => {
            let text = message
                .pointer("/channel/alternatives/0/transcript")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_owned();
            let flag = |name: &str| message.get(name).and_then(Value::as_bool).unwrap_or(false);
            let speech_final = flag("speech_final");
            if text.is_empty() && !speech_final {
                return None;
            }
            Some(ListenEvent::Transcript {
                text,
                is_final: flag("is_final"),
                speech_final,
            })
        }
        "SpeechStarted" => Some(ListenEvent::SpeechStarted),
        "UtteranceEnd" => Some(ListenEvent::UtteranceEnd),
        _ => None,
    }
}

/// Runs one session: audio in, events out, until the call closes it or the connection is
/// lost (one error, then `events` ends).
async fn run(
    socket: Socket,
    provider: String,
    mut input: mpsc::Receiver<ListenInput>,
    events: mpsc::Sender<Result<ListenEvent, UpstreamError>>,
) {
    let (mut sink, mut stream) = socket.split();
    let mut closing = false;
    let grace = tokio::time::sleep(Duration::MAX);
    tokio::pin!(grace);
    let lost = loop {
        tokio::select! {
            next = input.recv(), if !closing => {
                let sent = match next {
                    Some(ListenInput::Audio(audio)) => sink.send(Message::Binary(audio)).await,
                    Some(ListenInput::KeepAlive) => sink.send(Message::text(KEEP_ALIVE)).await,
                    Some(ListenInput::Close) | None => {
                        closing = true;
                        grace.as_mut().reset(tokio::time::Instant::now() + CLOSE_GRACE);
                        sink.send(Message::text(CLOSE_STREAM)).await
                    }
                };
                if let Err(e) = sent {
                    if closing {
                        break None;
                    }
                    break Some(e.to_string());
                }
            }
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    if let Some(event) = event(text.as_str())
                        && events.send(Ok(event)).await.is_err()
                    {
                        // Nobody listens any more: close as if asked to.
                        if !closing {
                            let _ = sink.send(Message::text(CLOSE_STREAM)).await;
                        }
                        break None;
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    if closing {
                        break None;
                    }
                    break Some(format!("closed by the provider: {frame:?}"));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    if closing {
                        break None;
                    }
                    break Some(e.to_string());
                }
                None => {
                    if closing {
                        break None;
                    }
                    break Some("the connection ended".to_owned());
                }
            },
            () = &mut grace, if closing => break None,
            () = events.closed(), if !closing => {
                let _ = sink.send(Message::text(CLOSE_STREAM)).await;
                break None;
            }
        }
    };
    let _ = sink.close().await;
    if let Some(reason) = lost {
        tracing::warn!(provider = %provider, error = %reason, "speech to text connection lost");
        let _ = events
            .send(Err(UpstreamError(format!(
                "the connection to {provider} was lost"
            ))))
            .await;
    }
}

#[async_trait]
impl SpeechToText for DeepgramListener {
    async fn listen(
        &self,
        key: &ProviderKey,
        params: &ListenParams,
    ) -> Result<ListenSession, UpstreamError> {
        let url = listen_url(&key.base_url, params)
            .map_err(|why| UpstreamError(format!("{}'s base URL {why}", key.provider)))?;
        let socket = self.connect(key, &url).await?;
        let (input, input_rx) = mpsc::channel(INPUT_ROOM);
        let (events_tx, events) = mpsc::channel(EVENT_ROOM);
        tokio::spawn(run(socket, key.provider.clone(), input_rx, events_tx));
        Ok(ListenSession { input, events })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(format: AudioFormat) -> ListenParams {
        ListenParams {
            model: "nova-3".into(),
            language: "EN-us".into(),
            format,
        }
    }

    #[test]
    fn urls_follow_the_contract() {
        let query = "model=nova-3&encoding=mulaw&sample_rate=8000&channels=1&interim_results=true&endpointing=300&utterance_end_ms=1000&vad_events=true&language=en-us";
        assert_eq!(
            listen_url("", &params(AudioFormat::Mulaw8k))
                .unwrap()
                .as_str(),
            format!("wss://api.deepgram.com/v1/listen?{query}")
        );
        assert_eq!(
            listen_url("http://127.0.0.1:9/dg/", &params(AudioFormat::Mulaw8k))
                .unwrap()
                .as_str(),
            format!("ws://127.0.0.1:9/dg/v1/listen?{query}")
        );
        assert!(
            listen_url("https://dg.example", &params(AudioFormat::Linear16k))
                .unwrap()
                .as_str()
                .starts_with(
                    "wss://dg.example/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000&"
                )
        );
        assert!(
            listen_url("ws://dg.example", &params(AudioFormat::Mulaw8k))
                .unwrap()
                .as_str()
                .starts_with("ws://dg.example/v1/listen?")
        );
        assert!(listen_url("ftp://dg.example", &params(AudioFormat::Mulaw8k)).is_err());
    }

    #[test]
    fn results_become_events() {
        let results = |text: &str, is_final: bool, speech_final: bool| {
            serde_json::json!({"type": "Results", "is_final": is_final, "speech_final": speech_final,
                "channel": {"alternatives": [{"transcript": text, "confidence": 0.9}]}})
            .to_string()
        };
        assert_eq!(
            event(&results("hello there", true, true)),
            Some(ListenEvent::Transcript {
                text: "hello there".into(),
                is_final: true,
                speech_final: true
            })
        );
        assert_eq!(event(&results("", false, false)), None);
        assert_eq!(
            event(&results("", true, true)),
            Some(ListenEvent::Transcript {
                text: String::new(),
                is_final: true,
                speech_final: true
            })
        );
        assert_eq!(
            event(r#"{"type":"SpeechStarted","channel":[0],"timestamp":1.0}"#),
            Some(ListenEvent::SpeechStarted)
        );
        assert_eq!(
            event(r#"{"type":"UtteranceEnd","channel":[0,1],"last_word_end":2.1}"#),
            Some(ListenEvent::UtteranceEnd)
        );
        assert_eq!(event(r#"{"type":"Metadata","request_id":"x"}"#), None);
        assert_eq!(event("not json"), None);
    }
}
