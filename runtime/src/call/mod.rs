//! One call, live: the loop that carries a media stream. It listens (the caller's audio to the
//! speech recognizer), takes turns (a caller turn ends at the recognizer's end of speech, and
//! starts the engine's [`think`]), speaks (each sentence to the speech upstream as soon as it is
//! complete, its audio paced out in 20 ms frames, a mark after each sentence), yields to the
//! caller (barge-in: `clear`, the reply cancelled, the agent's message cut to what was heard),
//! and ends (the model's `end_call`, the caller hanging up, silence, the duration limit, a
//! machine, an upstream that failed twice).
//!
//! The loop owns the call's state and never waits on the database or an upstream: those run on
//! tasks of their own (the recognizer's connection, the turn's model request, its speech, and
//! the writer of what the call keeps), and reach the loop through channels.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use voiceplane_core::model::{
    CallLatency, MessageRole, NewMessage, UsageComponent, UsageItem, UsageUnit,
};
use voiceplane_core::runtime::MediaIo;
use voiceplane_core::service::RuntimeEnd;

use crate::engine::{Mind, Thought, think};
use crate::host::CallHost;
use crate::media::{Incoming, Writer};
use crate::mulaw;
use crate::recording::Recorder;
mod ending;
mod speech;
mod turn;

use ending::{Keep, keep, message};
use speech::{Speech, Spoken, speak, spoken_text};
use turn::{Turn, TurnEvent};

use crate::upstream::{
    ChatMessage, ListenEvent, ListenInput, ListenParams, ListenSession, ProviderKey, SpeakRequest,
    SpeechToText, TextToSpeech, UpstreamError,
};

/// One frame of audio: 20 ms.
const FRAME: Duration = Duration::from_millis(20);

/// How long a recognizer may go without audio before it is sent a keep-alive.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// How often the call asks whether the provider found a machine, while it waits to know.
const MACHINE_POLL: Duration = Duration::from_secs(1);

/// How long it waits to know.
const MACHINE_WAIT: Duration = Duration::from_secs(30);

/// Time limits of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Silence after which the model is asked to re-engage (`runtime.silence_prompt_secs`).
    pub silence_prompt: Duration,
    /// Silence after which the call ends (`runtime.silence_end_secs`).
    pub silence_end: Duration,
    /// The longest a call runs (`runtime.max_call_secs`).
    pub max_call: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            silence_prompt: Duration::from_secs(10),
            silence_end: Duration::from_secs(30),
            max_call: Duration::from_secs(1800),
        }
    }
}

/// How the call listens.
#[derive(Clone)]
pub struct Ears {
    /// The recognizer.
    pub stt: Arc<dyn SpeechToText>,
    /// Its key.
    pub key: ProviderKey,
    /// What it is opened with.
    pub params: ListenParams,
}

/// How the call speaks.
#[derive(Clone)]
pub struct Voice {
    /// The speech upstream.
    pub tts: Arc<dyn TextToSpeech>,
    /// Its key.
    pub key: ProviderKey,
    /// The agent's `tts_voice`.
    pub voice: String,
    /// The provider's model, when configured.
    pub model: Option<String>,
}

/// Everything a call runs with.
#[derive(Clone)]
pub struct CallPlan {
    /// The call's organization.
    pub organization_id: String,
    /// The call.
    pub call_sid: String,
    /// The system prompt, filled.
    pub system_prompt: String,
    /// What thinks.
    pub mind: Mind,
    /// What listens.
    pub ears: Ears,
    /// What speaks.
    pub voice: Voice,
    /// The agent's `speak_first`.
    pub speak_first: bool,
    /// The agent's `recording_enabled`.
    pub recording: bool,
    /// The agent's `voicemail_response_delay` when its `voicemail_detection` is on.
    pub voicemail_delay: Option<Duration>,
    /// Time limits.
    pub limits: Limits,
}

/// A frame or a mark waiting to be sent.
enum Out {
    Frame(Bytes, usize),
    Mark(String),
}

/// Runs a call over its media stream until it ends. `ws` has had its `start` read.
pub(crate) async fn run(
    plan: CallPlan,
    host: Arc<dyn CallHost>,
    ws: WebSocketStream<Box<dyn MediaIo>>,
    writer: Writer,
    pending: Vec<Incoming>,
) {
    let (mut sink, mut stream) = ws.split();
    let (out_tx, mut out_rx) = mpsc::channel::<Message>(256);
    let socket_writer = tokio::spawn(async move {
        while let Some(message) = out_rx.recv().await {
            if sink.send(message).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let (keep_tx, keep_rx) = mpsc::unbounded_channel();
    let keeper = tokio::spawn(keep(
        host.clone(),
        plan.organization_id.clone(),
        plan.call_sid.clone(),
        keep_rx,
    ));
    metrics::gauge!("voiceplane_runtime_calls").increment(1.0);
    let mut call = Live::new(plan, host, writer, out_tx, keep_tx);
    let reason = call.run(&mut stream, pending).await;
    call.end(reason).await;
    drop(call);
    let _ = keeper.await;
    let _ = socket_writer.await;
    metrics::gauge!("voiceplane_runtime_calls").decrement(1.0);
}

struct Live {
    plan: CallPlan,
    host: Arc<dyn CallHost>,
    writer: Writer,
    out: mpsc::Sender<Message>,
    keep: mpsc::UnboundedSender<Keep>,
    started: Instant,
    /// The recognizer, once opened.
    ears: Option<ListenSession>,
    reconnected: bool,
    reopening: Option<JoinHandle<Result<ListenSession, UpstreamError>>>,
    last_audio_to_stt: Instant,
    /// Caller audio sent to the recognizer, in bytes.
    heard_bytes: u64,
    history: Vec<ChatMessage>,
    /// Final transcripts of the caller's current turn.
    said: Vec<String>,
    said_since: Option<Instant>,
    turn: Option<Turn>,
    turn_ids: u32,
    queue: VecDeque<Out>,
    partial: BytesMut,
    next_send: Instant,
    marks_pending: usize,
    last_activity: Instant,
    prompted: bool,
    /// Why the call ends once the agent's last words are played.
    ending: Option<&'static str>,
    /// A voicemail is being left: the caller's side is a machine.
    voicemail: bool,
    machine_check: Option<JoinHandle<bool>>,
    machine_answer_at: Option<Instant>,
    turns: i64,
    latencies: Vec<f64>,
    tokens: (u64, u64),
    characters: u64,
    recorder: Option<Recorder>,
}

/// A future that never completes: a `select!` branch with nothing to wait for.
async fn never<T>() -> T {
    std::future::pending().await
}

impl Live {
    fn new(
        plan: CallPlan,
        host: Arc<dyn CallHost>,
        writer: Writer,
        out: mpsc::Sender<Message>,
        keep: mpsc::UnboundedSender<Keep>,
    ) -> Self {
        let now = Instant::now();
        let recorder = if plan.recording {
            Recorder::start(&plan.call_sid)
                .map_err(|e| tracing::warn!(error = %e, "the call cannot be recorded"))
                .ok()
        } else {
            None
        };
        Self {
            history: vec![ChatMessage::System(plan.system_prompt.clone())],
            plan,
            host,
            writer,
            out,
            keep,
            started: now,
            ears: None,
            reconnected: false,
            reopening: None,
            last_audio_to_stt: now,
            heard_bytes: 0,
            said: Vec::new(),
            said_since: None,
            turn: None,
            turn_ids: 0,
            queue: VecDeque::new(),
            partial: BytesMut::new(),
            next_send: now,
            marks_pending: 0,
            last_activity: now,
            prompted: false,
            ending: None,
            voicemail: false,
            machine_check: None,
            machine_answer_at: None,
            turns: 0,
            latencies: Vec::new(),
            tokens: (0, 0),
            characters: 0,
            recorder,
        }
    }

    fn elapsed_ms(&self) -> i64 {
        i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// Runs until the call ends; answers why.
    async fn run(
        &mut self,
        stream: &mut futures_util::stream::SplitStream<WebSocketStream<Box<dyn MediaIo>>>,
        pending: Vec<Incoming>,
    ) -> &'static str {
        match self
            .plan
            .ears
            .stt
            .listen(&self.plan.ears.key, &self.plan.ears.params)
            .await
        {
            Ok(session) => self.ears = Some(session),
            Err(e) => {
                tracing::warn!(error = %e, "the speech recognizer could not be opened");
                return "runtime_error";
            }
        }
        if self.plan.voicemail_delay.is_some() {
            self.machine_check = Some(self.watch_for_machine());
        }
        if self.plan.speak_first {
            self.start_turn(None);
        }
        for incoming in pending {
            if let Some(reason) = self.incoming(incoming) {
                return reason;
            }
        }
        let max_end = self.started + self.plan.limits.max_call;
        loop {
            let pacing = !self.queue.is_empty();
            let next_send = self.next_send;
            let timer = self.next_timer(max_end);
            tokio::select! {
                frame = stream.next() => {
                    let incoming = match frame {
                        Some(Ok(Message::Text(text))) => crate::media::parse(self.writer.endpoint(), &text),
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => Incoming::Stop,
                        Some(Ok(_)) => Incoming::Other,
                    };
                    if let Some(reason) = self.incoming(incoming) {
                        return reason;
                    }
                }
                heard = async {
                    match self.ears.as_mut() {
                        Some(ears) => ears.events.recv().await,
                        None => never().await,
                    }
                } => {
                    if let Some(reason) = self.heard(heard) {
                        return reason;
                    }
                }
                reopened = async {
                    match self.reopening.as_mut() {
                        Some(reopening) => reopening.await,
                        None => never().await,
                    }
                } => {
                    self.reopening = None;
                    match reopened {
                        Ok(Ok(session)) => self.ears = Some(session),
                        Ok(Err(e)) => {
                            tracing::warn!(error = %e, "the speech recognizer could not be reopened");
                            return "runtime_error";
                        }
                        Err(_) => return "runtime_error",
                    }
                }
                event = async {
                    match self.turn.as_mut() {
                        Some(turn) => turn.next().await,
                        None => never().await,
                    }
                } => {
                    let ended = match event {
                        TurnEvent::Thought(thought) => {
                            self.thought(thought);
                            None
                        }
                        TurnEvent::Done(done) => self.thought_through(done),
                        TurnEvent::Speech(speech) => self.speech(speech),
                    };
                    if let Some(reason) = ended {
                        return reason;
                    }
                }
                () = sleep_until(next_send), if pacing => {
                    self.send_frame();
                }
                machine = async {
                    match self.machine_check.as_mut() {
                        Some(check) => check.await.unwrap_or(false),
                        None => never().await,
                    }
                } => {
                    self.machine_check = None;
                    if machine {
                        self.machine_answered();
                    }
                }
                () = sleep_until(timer) => {
                    if let Some(reason) = self.on_timer(max_end) {
                        return reason;
                    }
                }
            }
            if let Some(reason) = self.settle() {
                return reason;
            }
        }
    }

    /// The earliest moment something is due: the call's limit, the silence timers, a
    /// recognizer keep-alive, a voicemail's delay.
    fn next_timer(&self, max_end: Instant) -> Instant {
        let mut at = max_end.min(self.last_audio_to_stt + KEEP_ALIVE);
        if self.quiet() {
            at = at.min(self.last_activity + self.plan.limits.silence_end);
            if !self.prompted {
                at = at.min(self.last_activity + self.plan.limits.silence_prompt);
            }
        }
        if let Some(answer_at) = self.machine_answer_at {
            at = at.min(answer_at);
        }
        at
    }

    /// Nobody is talking and nothing is on its way.
    fn quiet(&self) -> bool {
        self.turn.is_none()
            && self.queue.is_empty()
            && self.marks_pending == 0
            && self.said.is_empty()
            && !self.voicemail
    }

    fn on_timer(&mut self, max_end: Instant) -> Option<&'static str> {
        let now = Instant::now();
        if now >= max_end {
            return Some("max_duration");
        }
        if now >= self.last_audio_to_stt + KEEP_ALIVE {
            if let Some(ears) = &self.ears {
                let _ = ears.input.try_send(ListenInput::KeepAlive);
            }
            self.last_audio_to_stt = now;
        }
        if let Some(answer_at) = self.machine_answer_at
            && now >= answer_at
        {
            self.machine_answer_at = None;
            self.leave_voicemail();
        }
        if self.quiet() {
            let silent = now.saturating_duration_since(self.last_activity);
            if silent >= self.plan.limits.silence_end {
                return Some("silence_timeout");
            }
            if silent >= self.plan.limits.silence_prompt && !self.prompted {
                self.prompted = true;
                self.start_turn(Some(
                    "The caller has said nothing for a while. Check briefly, in one short \
                     sentence, whether they are still there.",
                ));
            }
        }
        None
    }

    /// What the provider's stream sent.
    fn incoming(&mut self, incoming: Incoming) -> Option<&'static str> {
        match incoming {
            Incoming::Audio(audio) => {
                if let Some(recorder) = &mut self.recorder {
                    recorder.caller(&audio);
                }
                if let Some(ears) = &self.ears {
                    self.heard_bytes += audio.len() as u64;
                    // A recognizer that falls behind loses audio rather than holding the call.
                    let _ = ears.input.try_send(ListenInput::Audio(audio));
                    self.last_audio_to_stt = Instant::now();
                }
            }
            Incoming::Dtmf(digit) => {
                if !self.voicemail {
                    self.said.push(format!("(pressed {digit})"));
                    self.said_since.get_or_insert_with(Instant::now);
                    self.end_of_caller_turn();
                }
            }
            Incoming::Mark(name) => self.marked(&name),
            Incoming::Stop => {
                return Some(self.ending.unwrap_or("user_hangup"));
            }
            Incoming::Start(_) | Incoming::Other => {}
        }
        None
    }

    /// What the recognizer heard, or its failure.
    fn heard(&mut self, heard: Option<Result<ListenEvent, UpstreamError>>) -> Option<&'static str> {
        let event = match heard {
            Some(Ok(event)) => event,
            failed => {
                if let Some(Err(e)) = failed {
                    tracing::warn!(error = %e, "the speech recognizer failed");
                }
                if self.reconnected {
                    return Some("runtime_error");
                }
                // Reopened on a task of its own: the call's audio keeps flowing meanwhile
                // (what the caller says until then is not heard).
                self.reconnected = true;
                self.ears = None;
                let ears = self.plan.ears.clone();
                self.reopening = Some(tokio::spawn(async move {
                    ears.stt.listen(&ears.key, &ears.params).await
                }));
                return None;
            }
        };
        if self.voicemail {
            return None;
        }
        match event {
            ListenEvent::SpeechStarted => {
                self.caller_speaks();
            }
            ListenEvent::Transcript {
                text,
                is_final,
                speech_final,
            } => {
                let words = !text.trim().is_empty();
                if words {
                    self.caller_speaks();
                }
                if is_final && words {
                    self.said.push(text.trim().to_owned());
                    self.said_since.get_or_insert_with(Instant::now);
                }
                if speech_final {
                    self.end_of_caller_turn();
                }
            }
            ListenEvent::UtteranceEnd => self.end_of_caller_turn(),
        }
        None
    }

    /// The caller is talking: silence resets, and agent audio not yet played is cut.
    fn keep(&self, item: Keep) {
        let _ = self.keep.send(item);
    }
}
