//! Fakes of the built-in runtime's upstreams and of the callers it answers, on loopback: a
//! Deepgram live server that turns the audio it hears into scripted transcripts
//! ([`FakeDeepgram`]), a chat-completions server streaming scripted replies and tool calls
//! ([`FakeChat`]), provider_one's and provider_two's speech streaming μ-law bytes
//! ([`FakeSpeech`]), and the Twilio and Telnyx sides of a media stream ([`MediaCaller`]).
//! (An HTTP tool is a `wiremock::MockServer`.)
//!
//! Each server binds `127.0.0.1:0`, records every request, and can be told to fail or stall
//! ([`Fault`]): the next request ([`FakeDeepgram::fail_next`], …) or every one until healed
//! (`fail_always(None)`).
//!
//! ```no_run
//! # async fn demo() {
//! use std::time::Duration;
//! use voiceplane_suite::voice::*;
//!
//! let stt = FakeDeepgram::start("dg-key").await;
//! stt.script(0x11, "what are your opening hours");
//! let llm = FakeChat::start("oa-key").await;
//! llm.push(ChatAnswer::tool_call("hours", serde_json::json!({"day": "monday"})));
//! llm.push(ChatAnswer::text("We open at nine."));
//! let tts = FakeSpeech::provider_two("el-key").await;
//! // … a server whose providers are stt.base_url(), llm.base_url(), tts.base_url() …
//! let caller = MediaCaller::twilio("ws://127.0.0.1:1/runtime/twilio/CA1", TwilioStart::new("CA1"), Pacing::RealTime)
//!     .await
//!     .unwrap();
//! caller.say(0x11, Duration::from_millis(600)).await;
//! let heard = caller
//!     .wait_for("the answer played", Duration::from_secs(10), |c| {
//!         c.played_bytes >= FakeSpeech::audio_for("We open at nine.").len()
//!     })
//!     .await;
//! # let _ = heard;
//! # }
//! ```

mod caller;
mod chat;
mod deepgram;
mod speech;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

pub use caller::{CallerView, MediaCaller, Pacing, TelnyxStart, TwilioStart};
pub use chat::{ChatAnswer, ChatRequestRecord, FakeChat};
pub use deepgram::{FakeDeepgram, ListenRecord, Utterance};
pub use speech::{FakeSpeech, SpeechProvider, SpeechRequestRecord};
use voiceplane_runtime::upstream::ProviderKey;

/// μ-law silence: the byte a quiet line carries, which the fake Deepgram never transcribes.
pub const SILENCE: u8 = 0xFF;

/// How a fake fails a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status (an HTTP error; for Deepgram, a refused upgrade). The body
    /// says `FAKE-UPSTREAM-BODY`, which must never reach an error or a log.
    Status(u16),
    /// Accept the connection and never answer (Deepgram: never complete the upgrade).
    StallBeforeFirstByte,
    /// Start answering, then neither send more nor close (Deepgram: accept, then never
    /// transcribe).
    StallMidStream,
    /// Start answering, then break the connection (Deepgram: drop it at the first audio).
    BreakMidStream,
}

/// The text every fake puts in the body of an error status.
pub const FAKE_BODY: &str = "FAKE-UPSTREAM-BODY";

/// The faults a fake has been told to produce: the next requests', then every request's.
#[derive(Debug, Default)]
struct Faults {
    next: VecDeque<Fault>,
    always: Option<Fault>,
}

impl Faults {
    fn take(&mut self) -> Option<Fault> {
        self.next.pop_front().or(self.always)
    }
}

/// A poison-tolerant lock: a test that failed while holding it must not hide its own panic
/// behind another.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Shared state of a fake: its records and faults.
type Shared<T> = Arc<Mutex<T>>;

/// The key the runtime would resolve for `provider` at `base_url`.
pub fn provider_key(provider: &str, base_url: &str, api_key: &str) -> ProviderKey {
    ProviderKey {
        provider: provider.to_owned(),
        base_url: base_url.trim_end_matches('/').to_owned(),
        api_key: api_key.to_owned(),
    }
}

/// The built-in runtime's upstreams: the real clients, with private addresses allowed (the
/// fakes are on loopback), at these fakes with their keys.
pub fn upstreams(
    (stt, stt_key): (&FakeDeepgram, &str),
    (llm, llm_key): (&FakeChat, &str),
    (tts, tts_key): (&FakeSpeech, &str),
) -> voiceplane_runtime::Upstreams {
    let settings = voiceplane_clients::RuntimeClientSettings {
        policy: voiceplane_core::webhooks::TargetPolicy {
            allow_private: true,
        },
        ..Default::default()
    };
    let keys = [
        provider_key("deepgram", &stt.base_url(), stt_key),
        provider_key("openai", &llm.base_url(), llm_key),
        provider_key("provider_one", &tts.base_url(), tts_key),
    ];
    voiceplane_runtime::Upstreams {
        stt: [(
            "deepgram".to_owned(),
            Arc::new(
                voiceplane_clients::DeepgramListener::with_settings(settings).expect("a client"),
            ) as _,
        )]
        .into(),
        llm: [(
            "openai".to_owned(),
            Arc::new(voiceplane_clients::OpenAiChat::with_settings(settings).expect("a client"))
                as _,
        )]
        .into(),
        tts: [(
            "provider_one".to_owned(),
            Arc::new(
                voiceplane_clients::ProviderOneSpeech::with_settings(settings, "")
                    .expect("a client"),
            ) as _,
        )]
        .into(),
        http_tools: Some(Arc::new(
            voiceplane_clients::GuardedHttpTools::new(settings.policy).expect("a client"),
        )),
        keys: keys.into_iter().map(|k| (k.provider.clone(), k)).collect(),
    }
}

/// Lower-cased header names and their values (the last of each).
fn header_map(headers: &axum::http::HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Serves `router` on a fresh loopback port until the returned guard is dropped.
async fn serve(router: axum::Router) -> (String, ServerGuard) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("a local address");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{addr}"), ServerGuard(task))
}

/// Stops a fake's accept loop when the fake is dropped.
#[derive(Debug)]
struct ServerGuard(tokio::task::JoinHandle<()>);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
