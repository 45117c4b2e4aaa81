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

/// A sentence of the agent's turn, as it is spoken.
struct Spoken {
    text: String,
    mark: String,
    /// Frames queued for it; known once its speech is complete.
    frames: u32,
    /// Frames of it sent so far.
    sent: u32,
    /// When its first frame was sent.
    first_sent: Option<Instant>,
    /// Whether its mark came back: all of it was played.
    played: bool,
}

/// What the speech task sends the loop.
enum Speech {
    Audio(usize, Bytes),
    End(usize),
    Failed(UpstreamError),
}

/// The agent's turn in flight.
struct Turn {
    id: u32,
    thinking: Option<JoinHandle<Result<Vec<ChatMessage>, UpstreamError>>>,
    thoughts: mpsc::UnboundedReceiver<Thought>,
    speaking: JoinHandle<()>,
    /// Sentences to speak; dropped once the model is done, which ends the speech task.
    to_speak: Option<mpsc::UnboundedSender<(usize, String)>>,
    audio: mpsc::Receiver<Speech>,
    speech_done: bool,
    sentences: Vec<Spoken>,
    /// Finished rounds of tool calls, kept even if the rest of the turn is cut.
    rounds: Vec<ChatMessage>,
    /// The whole turn's messages, once the model is done: kept when it has been heard.
    answer: Vec<ChatMessage>,
    /// When the caller's turn that started it ended.
    answering_since: Option<Instant>,
    first_frame_sent: bool,
}

/// What a turn's tasks produced.
enum TurnEvent {
    Thought(Thought),
    Done(Result<Result<Vec<ChatMessage>, UpstreamError>, tokio::task::JoinError>),
    Speech(Option<Speech>),
}

impl Turn {
    /// The next thing the turn's model or speech produced.
    async fn next(&mut self) -> TurnEvent {
        let speaking = !self.speech_done;
        let audio = &mut self.audio;
        match self.thinking.as_mut() {
            // Thoughts only while the model works: once it is done the channel is closed,
            // and its last thoughts are taken with its answer.
            Some(thinking) => tokio::select! {
                Some(thought) = self.thoughts.recv() => TurnEvent::Thought(thought),
                done = thinking => TurnEvent::Done(done),
                speech = audio.recv(), if speaking => TurnEvent::Speech(speech),
            },
            None if speaking => TurnEvent::Speech(audio.recv().await),
            None => never().await,
        }
    }

    fn abort(&mut self) {
        if let Some(thinking) = self.thinking.take() {
            thinking.abort();
        }
        self.speaking.abort();
    }
}

/// What the call keeps, written in order by a task of its own.
enum Keep {
    Messages(Vec<NewMessage>),
    Usage(Vec<UsageItem>),
    Recording(std::path::PathBuf),
    HangUp,
    Finish(RuntimeEnd),
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

/// Writes what the call keeps, in the order the loop decided it.
async fn keep(
    host: Arc<dyn CallHost>,
    org: String,
    call_sid: String,
    mut rx: mpsc::UnboundedReceiver<Keep>,
) {
    while let Some(item) = rx.recv().await {
        match item {
            Keep::Messages(messages) => host.messages(&org, &call_sid, messages).await,
            Keep::Usage(items) => host.usage(&org, &call_sid, items).await,
            Keep::Recording(path) => {
                host.recording(&org, &call_sid, &path).await;
                let _ = tokio::fs::remove_file(&path).await;
            }
            Keep::HangUp => host.hang_up(&org, &call_sid).await,
            Keep::Finish(end) => host.finish(&org, &call_sid, end).await,
        }
    }
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
    fn caller_speaks(&mut self) {
        self.last_activity = Instant::now();
        self.prompted = false;
        let audible = !self.queue.is_empty()
            || self.marks_pending > 0
            || self
                .turn
                .as_ref()
                .is_some_and(|t| t.sentences.iter().any(|s| s.sent > 0));
        if audible {
            self.interrupt();
        }
    }

    /// The caller's turn ended: the agent answers what was said.
    fn end_of_caller_turn(&mut self) {
        if self.said.is_empty() {
            return;
        }
        let text = self.said.join(" ");
        let since = self.said_since.take();
        self.said.clear();
        if self.turn.is_some() {
            // Said more while the agent was getting ready to answer: answer all of it.
            self.interrupt();
        }
        let at = self.elapsed_ms();
        let start = since.map_or(at, |s| {
            at - i64::try_from(s.elapsed().as_millis()).unwrap_or(0)
        });
        self.keep(Keep::Messages(vec![message(
            MessageRole::User,
            text.clone(),
            start,
            at,
        )]));
        self.history.push(ChatMessage::User(text));
        self.turns += 1;
        self.last_activity = Instant::now();
        self.start_turn(None);
        if let Some(turn) = &mut self.turn {
            turn.answering_since = Some(Instant::now());
        }
    }

    /// Starts the agent's turn over the conversation so far (and `instruction`, a system
    /// note for this turn only).
    fn start_turn(&mut self, instruction: Option<&str>) {
        let mut history = self.history.clone();
        if let Some(note) = instruction {
            history.push(ChatMessage::System(note.to_owned()));
        }
        let (thought_tx, thoughts) = mpsc::unbounded_channel();
        let mind = self.plan.mind.clone();
        let thinking = tokio::spawn(async move { think(&mind, history, &thought_tx).await });
        let (speak_tx, speak_rx) = mpsc::unbounded_channel();
        let (audio_tx, audio) = mpsc::channel(64);
        let speaking = tokio::spawn(speak(self.plan.voice.clone(), speak_rx, audio_tx));
        self.turn_ids += 1;
        self.turn = Some(Turn {
            id: self.turn_ids,
            thinking: Some(thinking),
            thoughts,
            speaking,
            to_speak: Some(speak_tx),
            audio,
            speech_done: false,
            sentences: Vec::new(),
            rounds: Vec::new(),
            answer: Vec::new(),
            answering_since: None,
            first_frame_sent: false,
        });
    }

    fn thought(&mut self, thought: Thought) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        match thought {
            Thought::Sentence(text) => {
                let index = turn.sentences.len();
                self.characters += text.chars().count() as u64;
                turn.sentences.push(Spoken {
                    mark: format!("t{}s{index}", turn.id),
                    text: text.clone(),
                    frames: 0,
                    sent: 0,
                    first_sent: None,
                    played: false,
                });
                if let Some(tx) = &turn.to_speak {
                    let _ = tx.send((index, text));
                }
            }
            Thought::Tool(tool) => {
                let at = self.elapsed_ms();
                let mut m = message(MessageRole::Tool, tool.name.clone(), at, at);
                m.tool_name = Some(tool.name);
                m.tool_arguments = Some(tool.arguments);
                m.tool_result = Some(tool.result);
                self.keep(Keep::Messages(vec![m]));
            }
            Thought::Usage {
                input_tokens,
                output_tokens,
            } => {
                self.tokens.0 += input_tokens;
                self.tokens.1 += output_tokens;
            }
            Thought::EndCall { .. } => {
                if self.ending.is_none() {
                    self.ending = Some("tool_end_call");
                }
            }
            Thought::Round(messages) => turn.rounds.extend(messages),
        }
    }

    /// The model is done with the turn (or failed).
    fn thought_through(
        &mut self,
        done: Result<Result<Vec<ChatMessage>, UpstreamError>, tokio::task::JoinError>,
    ) -> Option<&'static str> {
        // Thoughts sent before the end are still in the channel: take them first.
        while let Some(thought) = self.turn.as_mut().and_then(|t| t.thoughts.try_recv().ok()) {
            self.thought(thought);
        }
        let turn = self.turn.as_mut()?;
        turn.thinking = None;
        turn.to_speak = None;
        match done {
            Ok(Ok(added)) => {
                // Kept once heard (`settle`), or as far as it was heard (`interrupt`).
                turn.answer = added;
                None
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the language model failed twice");
                Some("runtime_error")
            }
            // Aborted by a barge-in: the loop already moved on.
            Err(_) => None,
        }
    }

    /// Audio of the turn's speech.
    fn speech(&mut self, speech: Option<Speech>) -> Option<&'static str> {
        let turn = self.turn.as_mut()?;
        match speech {
            Some(Speech::Audio(index, bytes)) => {
                self.partial.extend_from_slice(&bytes);
                while self.partial.len() >= 160 {
                    let frame = self.partial.split_to(160).freeze();
                    self.queue.push_back(Out::Frame(frame, index));
                }
            }
            Some(Speech::End(index)) => {
                if !self.partial.is_empty() {
                    self.partial.resize(160, mulaw::SILENCE);
                    let frame = self.partial.split().freeze();
                    self.queue.push_back(Out::Frame(frame, index));
                }
                let frames = self
                    .queue
                    .iter()
                    .filter(|o| matches!(o, Out::Frame(_, i) if *i == index))
                    .count() as u32;
                if let Some(sentence) = turn.sentences.get_mut(index) {
                    sentence.frames = frames + sentence.sent;
                    self.queue.push_back(Out::Mark(sentence.mark.clone()));
                }
            }
            Some(Speech::Failed(e)) => {
                tracing::warn!(error = %e, "speech failed twice");
                return Some("runtime_error");
            }
            None => turn.speech_done = true,
        }
        None
    }

    /// Sends the next frame, and the marks behind it.
    fn send_frame(&mut self) {
        let now = Instant::now();
        if let Some(Out::Frame(frame, index)) = self.queue.pop_front() {
            let _ = self.out.try_send(Message::text(self.writer.media(&frame)));
            let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0);
            if let Some(recorder) = &mut self.recorder {
                recorder.agent(elapsed, &frame);
            }
            if let Some(turn) = self.turn.as_mut() {
                if let Some(sentence) = turn.sentences.get_mut(index) {
                    sentence.sent += 1;
                    sentence.first_sent.get_or_insert(now);
                }
                if !turn.first_frame_sent {
                    turn.first_frame_sent = true;
                    if let Some(since) = turn.answering_since {
                        let latency = now.saturating_duration_since(since);
                        metrics::histogram!("voiceplane_runtime_turn_latency_seconds")
                            .record(latency.as_secs_f64());
                        self.latencies.push(latency.as_secs_f64() * 1000.0);
                    }
                }
            }
            // Real time from the first frame on; a loop that fell behind does not burst.
            self.next_send = if self.next_send + FRAME < now {
                now + FRAME
            } else {
                self.next_send + FRAME
            };
        }
        while let Some(Out::Mark(_)) = self.queue.front() {
            if let Some(Out::Mark(name)) = self.queue.pop_front() {
                let _ = self.out.try_send(Message::text(self.writer.mark(&name)));
                self.marks_pending += 1;
            }
        }
    }

    fn marked(&mut self, name: &str) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        if let Some(sentence) = turn.sentences.iter_mut().find(|s| s.mark == name) {
            sentence.played = true;
            self.marks_pending = self.marks_pending.saturating_sub(1);
            self.last_activity = Instant::now();
        }
    }

    /// Ends the turn once everything of it is done and played; the call, when it was to end
    /// after these words.
    fn settle(&mut self) -> Option<&'static str> {
        let turn = self.turn.as_ref()?;
        if turn.thinking.is_some()
            || !turn.speech_done
            || !self.queue.is_empty()
            || self.marks_pending > 0
        {
            return None;
        }
        let mut turn = self.turn.take()?;
        self.history.append(&mut turn.answer);
        let text = spoken_text(&turn.sentences, None);
        if !text.is_empty() {
            let at = self.elapsed_ms();
            let started = turn
                .sentences
                .first()
                .and_then(|s| s.first_sent)
                .map_or(at, |first| {
                    at - i64::try_from(first.elapsed().as_millis()).unwrap_or(0)
                });
            self.keep(Keep::Messages(vec![message(
                MessageRole::Agent,
                text,
                started,
                at,
            )]));
        }
        self.last_activity = Instant::now();
        self.ending
    }

    /// The caller talks over the agent: what was not played is dropped and cancelled, and
    /// the agent's words keep only what was heard.
    fn interrupt(&mut self) {
        let Some(mut turn) = self.turn.take() else {
            if !self.queue.is_empty() || self.marks_pending > 0 {
                self.queue.clear();
                self.marks_pending = 0;
                let _ = self.out.try_send(Message::text(self.writer.clear()));
            }
            return;
        };
        turn.abort();
        let was_audible = !self.queue.is_empty() || self.marks_pending > 0;
        self.queue.clear();
        self.partial.clear();
        self.marks_pending = 0;
        if was_audible {
            let _ = self.out.try_send(Message::text(self.writer.clear()));
        }
        self.history.append(&mut turn.rounds);
        let heard = spoken_text(&turn.sentences, Some(Instant::now()));
        if !heard.is_empty() {
            self.history.push(ChatMessage::Assistant {
                text: heard.clone(),
                tool_calls: Vec::new(),
            });
            let at = self.elapsed_ms();
            let mut m = message(MessageRole::Agent, heard, at, at);
            m.interrupted = Some(true);
            self.keep(Keep::Messages(vec![m]));
        }
        // The caller has more to say: the call does not end on the words they cut.
        self.ending = None;
    }

    fn watch_for_machine(&self) -> JoinHandle<bool> {
        let host = self.host.clone();
        let org = self.plan.organization_id.clone();
        let call_sid = self.plan.call_sid.clone();
        tokio::spawn(async move {
            let deadline = Instant::now() + MACHINE_WAIT;
            while Instant::now() < deadline {
                match host.answered_by_machine(&org, &call_sid).await {
                    Some(machine) => return machine,
                    None => tokio::time::sleep(MACHINE_POLL).await,
                }
            }
            false
        })
    }

    /// A machine answered: the agent stops, waits the agent's delay, then leaves one message.
    fn machine_answered(&mut self) {
        if let Some(mut turn) = self.turn.take() {
            turn.abort();
        }
        self.queue.clear();
        self.partial.clear();
        self.marks_pending = 0;
        self.said.clear();
        self.voicemail = true;
        let delay = self.plan.voicemail_delay.unwrap_or_default();
        self.machine_answer_at = Some(Instant::now() + delay);
    }

    fn leave_voicemail(&mut self) {
        self.ending = Some("voicemail");
        self.start_turn(Some(
            "This call reached a voicemail, not a person. Leave one short message for the \
             person now, in your own words, then stop. Do not call any tool.",
        ));
    }

    fn keep(&self, item: Keep) {
        let _ = self.keep.send(item);
    }

    /// Ends the call: hangs up when the runtime ends it, and keeps its usage, recording,
    /// end reason, turns and latency.
    async fn end(&mut self, reason: &'static str) {
        if let Some(mut turn) = self.turn.take() {
            turn.abort();
        }
        if let Some(check) = self.machine_check.take() {
            check.abort();
        }
        if let Some(ears) = self.ears.take() {
            let _ = ears.input.try_send(ListenInput::Close);
        }
        if let Some(reopening) = self.reopening.take() {
            reopening.abort();
        }
        if reason != "user_hangup" {
            self.keep(Keep::HangUp);
        }
        let mut usage = Vec::new();
        let seconds =
            self.heard_bytes as f64 / self.plan.ears.params.format.bytes_per_second() as f64;
        if seconds > 0.0 {
            usage.push(item(
                UsageComponent::Stt,
                &self.plan.ears.key.provider,
                Some(self.plan.ears.params.model.clone()),
                (seconds * 1000.0).round() / 1000.0,
                UsageUnit::Seconds,
            ));
        }
        let llm = (
            &self.plan.mind.key.provider,
            Some(self.plan.mind.model.clone()),
        );
        if self.tokens.0 > 0 {
            usage.push(item(
                UsageComponent::Llm,
                llm.0,
                llm.1.clone(),
                self.tokens.0 as f64,
                UsageUnit::InputTokens,
            ));
        }
        if self.tokens.1 > 0 {
            usage.push(item(
                UsageComponent::Llm,
                llm.0,
                llm.1,
                self.tokens.1 as f64,
                UsageUnit::OutputTokens,
            ));
        }
        if self.characters > 0 {
            usage.push(item(
                UsageComponent::Tts,
                &self.plan.voice.key.provider,
                self.plan.voice.model.clone(),
                self.characters as f64,
                UsageUnit::Characters,
            ));
        }
        if !usage.is_empty() {
            self.keep(Keep::Usage(usage));
        }
        if let Some(recorder) = self.recorder.take() {
            let length = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0);
            if let Ok(Some(path)) =
                tokio::task::spawn_blocking(move || recorder.finish(length)).await
            {
                self.keep(Keep::Recording(path));
            }
        }
        self.keep(Keep::Finish(RuntimeEnd {
            reason: reason.to_owned(),
            turn_count: self.turns,
            latency: CallLatency::of(&self.latencies),
        }));
        tracing::info!(call_sid = %self.plan.call_sid, end_reason = reason, turns = self.turns, "a call the runtime ran ended");
    }
}

/// A usage item of the call, with an id of its own so that it is charged once.
fn item(
    component: UsageComponent,
    provider: &str,
    model: Option<String>,
    quantity: f64,
    unit: UsageUnit,
) -> UsageItem {
    UsageItem {
        id: Some(format!("runtime-{}-{}", component.as_str(), unit.as_str())),
        component,
        provider: provider.to_owned(),
        model,
        quantity,
        unit,
    }
}

/// A transcript message, `start_ms`/`end_ms` counted from the stream's start.
fn message(role: MessageRole, text: String, start_ms: i64, end_ms: i64) -> NewMessage {
    NewMessage {
        role,
        text,
        start_ms: Some(start_ms),
        end_ms: Some(end_ms),
        tool_name: None,
        tool_arguments: None,
        tool_result: None,
        interrupted: None,
    }
}

/// What of `sentences` the caller heard: the ones played whole, and (when `cut_at` says the
/// rest was cut then) the words of the one playing, in proportion to its time played.
fn spoken_text(sentences: &[Spoken], cut_at: Option<Instant>) -> String {
    let Some(cut_at) = cut_at else {
        return sentences
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
    };
    let mut heard: Vec<String> = Vec::new();
    for sentence in sentences {
        if sentence.played {
            heard.push(sentence.text.clone());
            continue;
        }
        if let Some(first) = sentence.first_sent {
            let total = FRAME * sentence.frames.max(sentence.sent).max(1);
            let played = cut_at.saturating_duration_since(first).min(total);
            let words: Vec<&str> = sentence.text.split_whitespace().collect();
            let n =
                (words.len() as f64 * played.as_secs_f64() / total.as_secs_f64()).floor() as usize;
            if n > 0 {
                heard.push(words[..n.min(words.len())].join(" "));
            }
        }
        break;
    }
    heard.join(" ")
}

/// Speaks the turn's sentences in order, each as soon as it comes; a sentence whose speech
/// fails before any audio is asked once more.
async fn speak(
    voice: Voice,
    mut sentences: mpsc::UnboundedReceiver<(usize, String)>,
    audio: mpsc::Sender<Speech>,
) {
    while let Some((index, text)) = sentences.recv().await {
        let request = SpeakRequest {
            voice: voice.voice.clone(),
            model: voice.model.clone(),
            text,
            format: crate::upstream::AudioFormat::Mulaw8k,
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let mut sent_any = false;
            let failure = match voice.tts.speak(&voice.key, &request).await {
                Ok(mut stream) => {
                    let mut failure = None;
                    while let Some(chunk) = stream.next().await {
                        match chunk {
                            Ok(bytes) => {
                                sent_any = true;
                                if audio.send(Speech::Audio(index, bytes)).await.is_err() {
                                    return;
                                }
                            }
                            Err(e) => {
                                failure = Some(e);
                                break;
                            }
                        }
                    }
                    failure
                }
                Err(e) => Some(e),
            };
            match failure {
                None => break,
                Some(e) if tries < 2 && !sent_any => {
                    tracing::warn!(error = %e, "speech failed; asking once more");
                }
                Some(e) => {
                    let _ = audio.send(Speech::Failed(e)).await;
                    return;
                }
            }
        }
        if audio.send(Speech::End(index)).await.is_err() {
            return;
        }
    }
}
