//! # voiceplane-runtime
//!
//! The built-in voice runtime (DESIGN §24): the conversation engine that runs an agent on a
//! call. It listens (speech to text), thinks (a language model with the organization's tools
//! and documents) and speaks (text to speech), and keeps what the call leaves behind: the
//! transcript, the recording, usage and per-turn latency.
//!
//! The upstream protocols are traits ([`upstream`]) that the `voiceplane-clients` crate
//! implements; the engine runs without audio too (text in, text out: [`engine::Conversation`]),
//! which is how agent tests drive it.
//!
//! [`Runtime`] takes the media streams the HTTP adapter accepts at `/runtime/twilio/{call_sid}`
//! and `/runtime/telnyx/{call_sid}` ([`voiceplane_core::runtime::MediaStreams`]).

pub mod call;
pub mod engine;
pub mod host;
pub mod media;
pub mod mulaw;
pub mod recording;
pub mod upstream;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use voiceplane_core::Service;
use voiceplane_core::model::TtsProvider;
use voiceplane_core::runtime::{MediaEndpoint, MediaIo, MediaStreams};
use voiceplane_core::service::{RuntimeCall, RuntimeEnd};

use crate::call::{CallPlan, Ears, Limits, Voice};
use crate::engine::{Mind, fill_prompt};
use crate::host::{AgentTools, CallHost, ServiceHost, functions};
use crate::media::{Incoming, Writer};
use crate::upstream::{
    AudioFormat, HttpTools, LanguageModel, ListenParams, ProviderKey, SpeechToText, TextToSpeech,
};

/// How long a stream may take to send its `start`.
const START_WITHIN: Duration = Duration::from_secs(10);

/// Largest frame a media stream may send: its frames are a few hundred bytes.
const MAX_FRAME_BYTES: usize = 64 * 1024;

/// The runtime's settings (`runtime.*`).
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Calls one instance runs at once (`runtime.max_calls`, default 500); the next stream
    /// is refused and its call ends `runtime_busy`.
    pub max_calls: usize,
    /// Silence and duration limits.
    pub limits: Limits,
    /// The speech model (`runtime.stt_model`, default `nova-3`).
    pub stt_model: String,
    /// The speech-synthesis model per TTS provider, when one is configured.
    pub tts_models: HashMap<String, String>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            max_calls: 500,
            limits: Limits::default(),
            stt_model: "nova-3".to_owned(),
            tts_models: HashMap::new(),
        }
    }
}

/// The upstreams calls use, by provider name, and the server's keys for them
/// (`providers.<name>`).
#[derive(Clone, Default)]
pub struct Upstreams {
    /// Speech recognizers (`deepgram`).
    pub stt: HashMap<String, Arc<dyn SpeechToText>>,
    /// Language models (`openai`).
    pub llm: HashMap<String, Arc<dyn LanguageModel>>,
    /// Speech synthesis (`provider_one`, `provider_two`).
    pub tts: HashMap<String, Arc<dyn TextToSpeech>>,
    /// What calls the organizations' HTTP tools.
    pub http_tools: Option<Arc<dyn HttpTools>>,
    /// The server's key and base URL per provider.
    pub keys: HashMap<String, ProviderKey>,
}

/// The built-in runtime: takes media streams and runs their calls.
#[derive(Clone)]
pub struct Runtime {
    service: Arc<Service>,
    host: Arc<dyn CallHost>,
    upstreams: Arc<Upstreams>,
    config: Arc<RuntimeConfig>,
    active: Arc<AtomicUsize>,
}

impl Runtime {
    /// A runtime over `service`, calling `upstreams`.
    pub fn new(service: Arc<Service>, upstreams: Upstreams, config: RuntimeConfig) -> Self {
        Self {
            host: Arc::new(ServiceHost(service.clone())),
            service,
            upstreams: Arc::new(upstreams),
            config: Arc::new(config),
            active: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Calls running now on this instance.
    pub fn active_calls(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    async fn serve(self, endpoint: MediaEndpoint, call_sid: String, io: Box<dyn MediaIo>) {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME_BYTES))
            .max_frame_size(Some(MAX_FRAME_BYTES));
        let mut ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let Some((start, pending)) = read_start(endpoint, &mut ws).await else {
            let _ = ws.close(None).await;
            return;
        };
        let Some(token) = start.token.as_deref() else {
            tracing::info!(call_sid, "a media stream without a token was refused");
            let _ = ws.close(None).await;
            return;
        };
        let opened = self
            .service
            .runtime_open(
                endpoint,
                &call_sid,
                token,
                start.provider_call_id.as_deref(),
            )
            .await;
        let opened = match opened {
            Ok(opened) => opened,
            Err(e) => {
                tracing::info!(call_sid, error = %e, "a media stream was refused");
                let _ = ws.close(None).await;
                return;
            }
        };
        let org = opened.call.organization_id.clone();
        let slot = Slot::take(&self.active, self.config.max_calls);
        let Some(_slot) = slot else {
            tracing::warn!(
                call_sid,
                max_calls = self.config.max_calls,
                "the runtime is full; the call was refused"
            );
            let _ = ws.close(None).await;
            self.refuse(&org, &call_sid, "runtime_busy").await;
            return;
        };
        let plan = match self.plan(opened) {
            Ok(plan) => plan,
            Err(why) => {
                tracing::warn!(call_sid, "the call cannot run: {why}");
                let _ = ws.close(None).await;
                self.refuse(&org, &call_sid, "runtime_error").await;
                return;
            }
        };
        let writer = Writer::new(endpoint, &start);
        call::run(plan, self.host.clone(), ws, writer, pending).await;
    }

    /// Ends a call the runtime will not run.
    async fn refuse(&self, org: &str, call_sid: &str, reason: &str) {
        self.host.hang_up(org, call_sid).await;
        self.host
            .finish(
                org,
                call_sid,
                RuntimeEnd {
                    reason: reason.to_owned(),
                    turn_count: 0,
                    latency: None,
                },
            )
            .await;
    }

    /// The plan of an opened call: its agent's configuration with the upstreams it names.
    fn plan(&self, opened: RuntimeCall) -> Result<CallPlan, String> {
        let RuntimeCall {
            call,
            agent,
            tools,
            dynamic_variables,
        } = opened;
        let key = |name: &str| {
            self.upstreams
                .keys
                .get(name)
                .cloned()
                .ok_or_else(|| format!("no key is configured for {name} (providers.{name})"))
        };
        let stt = self
            .upstreams
            .stt
            .get(&agent.stt_provider)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "stt_provider {:?} is not one the runtime speaks",
                    agent.stt_provider
                )
            })?;
        let llm = self
            .upstreams
            .llm
            .get(&agent.llm_provider)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "llm_provider {:?} is not one the runtime speaks",
                    agent.llm_provider
                )
            })?;
        let tts_name = match agent.tts_provider {
            TtsProvider::ProviderOne => "provider_one",
            TtsProvider::ProviderTwo => "provider_two",
        };
        let tts = self
            .upstreams
            .tts
            .get(tts_name)
            .cloned()
            .ok_or_else(|| format!("tts_provider {tts_name} is not configured"))?;
        let http = self
            .upstreams
            .http_tools
            .clone()
            .ok_or_else(|| "no HTTP tool client is configured".to_owned())?;
        let toolbox = AgentTools {
            service: self.service.clone(),
            http,
            organization_id: call.organization_id.clone(),
            tools: tools
                .iter()
                .map(|t| (t.tool_name.clone(), t.clone()))
                .collect(),
            documents: agent.kb_document_ids.clone(),
        };
        Ok(CallPlan {
            organization_id: call.organization_id.clone(),
            call_sid: call.call_sid.clone(),
            system_prompt: fill_prompt(&agent.system_prompt, &dynamic_variables),
            mind: Mind {
                llm,
                key: key(&agent.llm_provider)?,
                model: agent.llm_model.clone(),
                temperature: Some(agent.llm_temperature),
                functions: functions(
                    &tools,
                    agent.end_call_tool,
                    !agent.kb_document_ids.is_empty(),
                ),
                tools: Arc::new(toolbox),
            },
            ears: Ears {
                stt,
                key: key(&agent.stt_provider)?,
                params: ListenParams {
                    model: self.config.stt_model.clone(),
                    language: agent.language.to_lowercase(),
                    format: AudioFormat::Mulaw8k,
                },
            },
            voice: Voice {
                tts,
                key: key(tts_name)?,
                voice: agent.tts_voice.clone(),
                model: self.config.tts_models.get(tts_name).cloned(),
            },
            speak_first: agent.speak_first,
            recording: agent.recording_enabled,
            voicemail_delay: agent
                .voicemail_detection
                .then(|| Duration::from_secs_f64(agent.voicemail_response_delay.max(0.0))),
            limits: self.config.limits,
        })
    }
}

impl MediaStreams for Runtime {
    fn accept(&self, endpoint: MediaEndpoint, call_sid: String, io: Box<dyn MediaIo>) {
        tokio::spawn(self.clone().serve(endpoint, call_sid, io));
    }
}

/// A place among the calls one instance runs, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(active.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Reads frames up to the stream's `start`; what came with it is kept for the call.
async fn read_start(
    endpoint: MediaEndpoint,
    ws: &mut WebSocketStream<Box<dyn MediaIo>>,
) -> Option<(media::StreamStart, Vec<Incoming>)> {
    let read = async {
        while let Some(frame) = ws.next().await {
            match frame.ok()? {
                Message::Text(text) => {
                    if let Incoming::Start(start) = media::parse(endpoint, &text) {
                        return Some((start, Vec::new()));
                    }
                }
                Message::Close(_) => return None,
                _ => {}
            }
        }
        None
    };
    tokio::time::timeout(START_WITHIN, read)
        .await
        .ok()
        .flatten()
}
