//! The upstreams a call talks to, as traits the `clients` crate implements over the network
//! (and the tests over fakes): speech to text, a language model, text to speech, and the
//! organization's HTTP tools. Each is asked with the key and base URL resolved for the call's
//! organization ([`ProviderKey`]).
//!
//! Streams rather than callbacks: a call's loop selects over what each upstream sends, and
//! cancelling a reply in flight (a barge-in) is dropping its stream, which closes its
//! connection.

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;
use tokio::sync::mpsc;

/// A stream an upstream answers with.
pub type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, UpstreamError>> + Send>>;

/// Where an upstream is and the key it takes: an organization's integration of the
/// provider, else the server's `providers.<name>` configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderKey {
    /// The provider's name (`deepgram`, `openai`, `provider_one`, `provider_two`).
    pub provider: String,
    /// Its base URL, without a trailing slash.
    pub base_url: String,
    /// The key; never logged.
    pub api_key: String,
}

impl fmt::Debug for ProviderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderKey")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

/// Why an upstream did not answer. The sentence names the provider and what happened, never
/// a key or the provider's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamError(pub String);

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UpstreamError {}

/// The audio a call carries: what the caller's side sends and the agent's side must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    /// G.711 μ-law, 8 kHz mono: phone calls (Twilio, Telnyx).
    Mulaw8k,
    /// Linear PCM, 16-bit little-endian, 16 kHz mono: web calls.
    Linear16k,
}

impl AudioFormat {
    /// Bytes of 20 ms of audio.
    pub const fn frame_bytes(self) -> usize {
        match self {
            Self::Mulaw8k => 160,
            Self::Linear16k => 640,
        }
    }

    /// Bytes of one second of audio.
    pub const fn bytes_per_second(self) -> usize {
        self.frame_bytes() * 50
    }
}

// ---------------------------------------------------------------------------------------------
// Listening

/// What a call's listening session is opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenParams {
    /// The speech model (`runtime.stt_model`, default `nova-3`).
    pub model: String,
    /// The agent's language, lower case (`en-us`).
    pub language: String,
    /// The audio the session will be sent.
    pub format: AudioFormat,
}

/// What the call sends a listening session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenInput {
    /// Caller audio, in the session's format.
    Audio(Bytes),
    /// Nothing to send for a while: keep the session open.
    KeepAlive,
    /// The call is over: flush and close.
    Close,
}

/// What a listening session reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ListenEvent {
    /// A transcript of the audio so far. `is_final` ones are kept for the turn;
    /// `speech_final` ends it.
    Transcript {
        /// The words heard.
        text: String,
        /// Whether this text will not be revised.
        is_final: bool,
        /// Whether the speaker stopped: the end of the turn.
        speech_final: bool,
    },
    /// The speaker started talking (voice activity).
    SpeechStarted,
    /// No word for a while after the last one: the end of the turn.
    UtteranceEnd,
}

/// An open listening session: audio goes in through `input`, events come out of `events`.
/// The session's connection is owned by a task of its own, so the call's loop never waits on
/// it: `input` is bounded and a full one drops audio rather than blocking the call. `events`
/// ends (with an error) when the connection is lost; dropping `input` closes it.
#[derive(Debug)]
pub struct ListenSession {
    /// What to send.
    pub input: mpsc::Sender<ListenInput>,
    /// What was heard.
    pub events: mpsc::Receiver<Result<ListenEvent, UpstreamError>>,
}

/// Speech to text, live.
#[async_trait]
pub trait SpeechToText: Send + Sync + 'static {
    /// Opens a session; an error when the provider cannot be reached or refuses the key.
    async fn listen(
        &self,
        key: &ProviderKey,
        params: &ListenParams,
    ) -> Result<ListenSession, UpstreamError>;
}

// ---------------------------------------------------------------------------------------------
// Thinking

/// One message of a chat with the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessage {
    /// The system prompt.
    System(String),
    /// What the caller said (or pressed).
    User(String),
    /// What the agent said, and the tools it called.
    Assistant {
        /// Its text; empty when it only called tools.
        text: String,
        /// Its tool calls.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's answer to the call `call_id`.
    Tool {
        /// The id of the tool call answered.
        call_id: String,
        /// The answer, as JSON text.
        content: String,
    },
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSpec {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// A tool call the model made, complete.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's id of the call.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// Its arguments, as the JSON text the model wrote.
    pub arguments: String,
}

/// A streaming chat request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model.
    pub model: String,
    /// The sampling temperature, when the agent sets one.
    pub temperature: Option<f64>,
    /// The conversation so far, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// The functions offered.
    pub functions: Vec<FunctionSpec>,
}

/// What a streaming chat answers, piece by piece.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatDelta {
    /// More of the reply's text.
    Text(String),
    /// A tool call, once its arguments are complete.
    ToolCall(ToolCall),
    /// The tokens the request used (the stream's last chunk).
    Usage {
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
    },
}

/// An OpenAI-compatible chat-completions model, streamed.
#[async_trait]
pub trait LanguageModel: Send + Sync + 'static {
    /// Starts a reply; the stream ends when the model is done. Dropping it cancels the
    /// request.
    async fn chat(
        &self,
        key: &ProviderKey,
        request: &ChatRequest,
    ) -> Result<Streamed<ChatDelta>, UpstreamError>;
}

// ---------------------------------------------------------------------------------------------
// Speaking

/// One sentence to speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeakRequest {
    /// The provider's voice id (the agent's `tts_voice`).
    pub voice: String,
    /// The provider's model, when configured.
    pub model: Option<String>,
    /// The text.
    pub text: String,
    /// The audio wanted back.
    pub format: AudioFormat,
}

/// Text to speech, streamed: the audio bytes of a sentence as the provider makes them.
#[async_trait]
pub trait TextToSpeech: Send + Sync + 'static {
    /// Starts speaking `request`; dropping the stream cancels it.
    async fn speak(
        &self,
        key: &ProviderKey,
        request: &SpeakRequest,
    ) -> Result<Streamed<Bytes>, UpstreamError>;
}

// ---------------------------------------------------------------------------------------------
// Tools

/// An organization's HTTP tool, called with the model's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The tool's URL.
    pub url: String,
    /// The tool's headers.
    pub headers: BTreeMap<String, String>,
    /// The model's arguments: the JSON body, or the query of a GET or DELETE.
    pub arguments: serde_json::Value,
    /// The tool's `timeout_seconds`.
    pub timeout: Duration,
}

/// Longest tool answer handed to the model, in bytes.
pub const MAX_TOOL_ANSWER_BYTES: usize = 16 * 1024;

/// Calls HTTP tools, under the webhook target policy (no private address unless allowed).
#[async_trait]
pub trait HttpTools: Send + Sync + 'static {
    /// The tool's answer (its JSON, or its text as a JSON string, at most
    /// [`MAX_TOOL_ANSWER_BYTES`]), or `{"error": "…"}` naming what went wrong without the
    /// tool's body.
    async fn call(&self, request: &ToolRequest) -> serde_json::Value;
}
