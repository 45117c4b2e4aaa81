//! The telephony provider's side of a media stream, playing a caller: Twilio's or Telnyx's
//! WebSocket messages to the runtime (`connected`, `start`, 20 ms μ-law `media` frames,
//! `dtmf`, `stop`), and what the provider does with the runtime's messages: `media` is queued
//! and "played" in real time (160 bytes per 20 ms), a `mark` is answered once everything sent
//! before it has played (at once when nothing is queued), and `clear` drops the unplayed
//! audio and answers the pending marks at once.
//!
//! [`Pacing::RealTime`] sends a frame every 20 ms, silence when the caller says nothing, as a
//! phone line does; [`Pacing::Fast`] sends what the caller says at once (followed by 300 ms of
//! silence, so the end of speech is heard) and plays the agent's audio instantly.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::{SILENCE, lock};

/// Bytes of one 20 ms μ-law frame.
const FRAME: usize = 160;
/// μ-law bytes per second.
const RATE: u64 = 8000;

/// How the caller keeps time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// A frame every 20 ms; the agent's audio plays in real time.
    RealTime,
    /// As fast as the socket goes; the agent's audio plays at once.
    Fast,
}

/// Twilio's `start`.
#[derive(Debug, Clone)]
pub struct TwilioStart {
    /// `callSid`: Twilio's id of the call.
    pub call_sid: String,
    /// `streamSid`.
    pub stream_sid: String,
    /// `accountSid`.
    pub account_sid: String,
    /// `customParameters`: the TwiML `<Parameter>`s.
    pub custom_parameters: BTreeMap<String, String>,
}

impl TwilioStart {
    /// The stream of the call `call_sid`, without parameters.
    pub fn new(call_sid: &str) -> Self {
        Self {
            call_sid: call_sid.to_owned(),
            stream_sid: "MZ00000000000000000000000000000001".to_owned(),
            account_sid: "AC0123456789abcdef0123456789abcdef".to_owned(),
            custom_parameters: BTreeMap::new(),
        }
    }

    /// With the `<Parameter name= value=>` `name`.
    pub fn parameter(mut self, name: &str, value: &str) -> Self {
        self.custom_parameters
            .insert(name.to_owned(), value.to_owned());
        self
    }
}

/// Telnyx's `start`.
#[derive(Debug, Clone)]
pub struct TelnyxStart {
    /// `call_control_id`: Telnyx's id of the call.
    pub call_control_id: String,
    /// `stream_id`.
    pub stream_id: String,
    /// `client_state`, as given when the stream was asked for.
    pub client_state: Option<String>,
    /// `from`.
    pub from: String,
    /// `to`.
    pub to: String,
    /// `custom_parameters`.
    pub custom_parameters: BTreeMap<String, String>,
}

impl TelnyxStart {
    /// The stream of the call `call_control_id`, with `client_state`.
    pub fn new(call_control_id: &str, client_state: Option<&str>) -> Self {
        Self {
            call_control_id: call_control_id.to_owned(),
            stream_id: "32de0dea-53cb-4b21-89a4-9e1819c043bc".to_owned(),
            client_state: client_state.map(str::to_owned),
            from: "+14155550199".to_owned(),
            to: "+14155550100".to_owned(),
            custom_parameters: BTreeMap::new(),
        }
    }
}

/// What the caller has seen so far.
#[derive(Debug, Clone, Default)]
pub struct CallerView {
    /// Every byte of the agent's audio received, in order.
    pub agent_audio: Vec<u8>,
    /// When each `media` message arrived, and its bytes.
    pub media: Vec<(Instant, usize)>,
    /// Bytes of it played so far.
    pub played_bytes: usize,
    /// Bytes dropped unplayed by `clear`s.
    pub cleared_bytes: usize,
    /// Bytes received and not yet played.
    pub queued_bytes: usize,
    /// The marks the runtime sent, in order.
    pub marks: Vec<String>,
    /// The marks answered, in order.
    pub marks_answered: Vec<String>,
    /// `clear` messages received.
    pub clears: usize,
    /// Every message the runtime sent, as JSON (unparsable ones as strings).
    pub messages: Vec<Value>,
    /// Media frames sent.
    pub frames_sent: usize,
    /// DTMF digits sent.
    pub digits_sent: Vec<char>,
    /// Whether the caller sent `stop`.
    pub stopped: bool,
    /// Whether the runtime closed the stream (or it broke).
    pub closed: bool,
    /// The close frame's code, when there was one.
    pub close_code: Option<u16>,
}

/// The playback model: audio plays at 8 bytes a millisecond whenever some is queued.
#[derive(Debug, Default)]
struct Playback {
    /// Bytes queued when `anchor` was taken.
    queued: usize,
    anchor: Option<Instant>,
    /// Marks waiting for the audio before them: name, when it will have played.
    pending: VecDeque<(String, Instant)>,
}

#[derive(Debug, Default)]
struct State_ {
    view: CallerView,
    playback: Playback,
    fast: bool,
}

impl State_ {
    /// Moves the playhead to `now`.
    fn advance(&mut self, now: Instant) {
        let played = match self.playback.anchor {
            Some(anchor) if !self.fast => {
                let bytes =
                    now.saturating_duration_since(anchor).as_micros() as u64 * RATE / 1_000_000;
                (bytes as usize).min(self.playback.queued)
            }
            _ => self.playback.queued,
        };
        self.playback.queued -= played;
        // The anchor moves by the time the played bytes took (125 µs each), so looking often
        // loses no fraction of a byte; with nothing left, playback waits from now.
        self.playback.anchor = match self.playback.anchor {
            Some(anchor) if self.playback.queued > 0 => {
                Some(anchor + Duration::from_micros(played as u64 * 1_000_000 / RATE))
            }
            _ => Some(now),
        };
        self.view.played_bytes += played;
        self.view.queued_bytes = self.playback.queued;
    }

    /// When what is queued now will have played.
    fn drained_at(&self, now: Instant) -> Instant {
        if self.fast {
            return now;
        }
        now + Duration::from_micros(self.playback.queued as u64 * 1_000_000 / RATE)
    }
}

struct Shared {
    state: Mutex<State_>,
    changed: Notify,
}

enum Command {
    Say {
        byte: u8,
        frames: usize,
        done: oneshot::Sender<()>,
    },
    Dtmf(char),
    Stop(oneshot::Sender<()>),
}

/// A caller on a media stream. Dropping it drops the connection.
pub struct MediaCaller {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for MediaCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaCaller").finish_non_exhaustive()
    }
}

impl Drop for MediaCaller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The provider's dialect.
#[derive(Debug, Clone)]
enum Dialect {
    Twilio(TwilioStart),
    Telnyx(TelnyxStart),
}

impl Dialect {
    fn connected(&self) -> Value {
        match self {
            Self::Twilio(_) => {
                json!({"event": "connected", "protocol": "Call", "version": "1.0.0"})
            }
            Self::Telnyx(_) => json!({"event": "connected", "version": "1.0.0"}),
        }
    }

    fn start(&self) -> Value {
        match self {
            Self::Twilio(s) => json!({
                "event": "start", "sequenceNumber": "1", "streamSid": s.stream_sid,
                "start": {
                    "streamSid": s.stream_sid, "accountSid": s.account_sid, "callSid": s.call_sid,
                    "tracks": ["inbound"], "customParameters": s.custom_parameters,
                    "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                },
            }),
            Self::Telnyx(s) => json!({
                "event": "start", "sequence_number": "1", "stream_id": s.stream_id,
                "start": {
                    "user_id": "3e6f995f-85f7-4705-9741-53b116d28237",
                    "call_control_id": s.call_control_id,
                    "call_session_id": "ff55a038-6f5d-11ef-9692-02420aeffb1f",
                    "from": s.from, "to": s.to, "tags": [],
                    "client_state": s.client_state, "custom_parameters": s.custom_parameters,
                    "media_format": {"encoding": "PCMU", "sample_rate": 8000, "channels": 1},
                },
            }),
        }
    }

    /// The fields every message after `start` carries: the sequence number and the stream.
    fn envelope(&self, event: &str, seq: u64) -> Value {
        match self {
            Self::Twilio(s) => {
                json!({"event": event, "sequenceNumber": seq.to_string(), "streamSid": s.stream_sid})
            }
            Self::Telnyx(s) => {
                json!({"event": event, "sequence_number": seq.to_string(), "stream_id": s.stream_id})
            }
        }
    }

    fn media(&self, seq: u64, chunk: u64, payload: &[u8]) -> Value {
        let mut m = self.envelope("media", seq);
        m["media"] = json!({
            "track": "inbound", "chunk": chunk.to_string(),
            "timestamp": ((chunk - 1) * 20).to_string(), "payload": STANDARD.encode(payload),
        });
        m
    }

    fn dtmf(&self, seq: u64, digit: char) -> Value {
        let mut m = self.envelope("dtmf", seq);
        m["dtmf"] = match self {
            Self::Twilio(_) => json!({"track": "inbound_track", "digit": digit.to_string()}),
            Self::Telnyx(_) => json!({"digit": digit.to_string()}),
        };
        if let Self::Telnyx(_) = self {
            m["occurred_at"] = json!("2026-12-02T10:00:00.000000Z");
        }
        m
    }

    fn mark(&self, seq: u64, name: &str) -> Value {
        let mut m = self.envelope("mark", seq);
        m["mark"] = json!({"name": name});
        m
    }

    fn stop(&self, seq: u64) -> Value {
        let mut m = self.envelope("stop", seq);
        m["stop"] = match self {
            Self::Twilio(s) => json!({"accountSid": s.account_sid, "callSid": s.call_sid}),
            Self::Telnyx(s) => json!({"user_id": "3e6f995f-85f7-4705-9741-53b116d28237",
                                      "call_control_id": s.call_control_id}),
        };
        m
    }
}

impl MediaCaller {
    /// Connects to `url` as Twilio does and sends `connected` and `start`.
    pub async fn twilio(url: &str, start: TwilioStart, pacing: Pacing) -> Result<Self, String> {
        Self::connect(url, Dialect::Twilio(start), pacing).await
    }

    /// Connects to `url` as Telnyx does and sends `connected` and `start`.
    pub async fn telnyx(url: &str, start: TelnyxStart, pacing: Pacing) -> Result<Self, String> {
        Self::connect(url, Dialect::Telnyx(start), pacing).await
    }

    async fn connect(url: &str, dialect: Dialect, pacing: Pacing) -> Result<Self, String> {
        let (mut socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .map_err(|e| format!("cannot connect the caller to {url}: {e}"))?;
        for message in [dialect.connected(), dialect.start()] {
            socket
                .send(Message::text(message.to_string()))
                .await
                .map_err(|e| format!("cannot start the stream: {e}"))?;
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State_ {
                fast: pacing == Pacing::Fast,
                ..State_::default()
            }),
            changed: Notify::new(),
        });
        let (commands, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(socket, dialect, pacing, rx, shared.clone()));
        Ok(Self {
            commands,
            shared,
            task,
        })
    }

    /// Says `byte` for `duration` (rounded up to 20 ms frames), then goes quiet; returns once
    /// the last frame is sent.
    pub async fn say(&self, byte: u8, duration: Duration) {
        let frames = duration.as_millis().div_ceil(20).max(1) as usize;
        let (done, sent) = oneshot::channel();
        if self
            .commands
            .send(Command::Say { byte, frames, done })
            .is_ok()
        {
            let _ = sent.await;
        }
    }

    /// Sends `duration` of silence (in real time, the line is silent anyway between words).
    pub async fn silence(&self, duration: Duration) {
        self.say(SILENCE, duration).await;
    }

    /// Presses `digit`.
    pub fn press(&self, digit: char) {
        let _ = self.commands.send(Command::Dtmf(digit));
    }

    /// Hangs up: `stop`, then the socket is closed.
    pub async fn hang_up(&self) {
        let (done, stopped) = oneshot::channel();
        if self.commands.send(Command::Stop(done)).is_ok() {
            let _ = stopped.await;
        }
    }

    /// What the caller has seen so far.
    pub fn view(&self) -> CallerView {
        let mut s = lock(&self.shared.state);
        s.advance(Instant::now());
        s.view.clone()
    }

    /// Waits until `done` holds for what the caller has seen; panics naming `what` after
    /// `within`.
    pub async fn wait_for(
        &self,
        what: &str,
        within: Duration,
        done: impl Fn(&CallerView) -> bool,
    ) -> CallerView {
        let deadline = Instant::now() + within;
        loop {
            let changed = self.shared.changed.notified();
            let view = self.view();
            if done(&view) {
                return view;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for the caller: {what} (seen: {} bytes of agent audio, {} played, marks {:?} answered {:?}, {} clears, closed {})",
                view.agent_audio.len(),
                view.played_bytes,
                view.marks,
                view.marks_answered,
                view.clears,
                view.closed
            );
            // Playback moves with time, not messages: look again at least every 10 ms.
            let _ = tokio::time::timeout(Duration::from_millis(10), changed).await;
        }
    }

    /// Waits until the runtime closes the stream.
    pub async fn wait_closed(&self, within: Duration) -> CallerView {
        self.wait_for("the stream closed", within, |c| c.closed)
            .await
    }
}

/// Resolves at `at`; never when `at` is `None`.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn run(
    socket: Socket,
    dialect: Dialect,
    pacing: Pacing,
    mut commands: mpsc::UnboundedReceiver<Command>,
    shared: Arc<Shared>,
) {
    let (mut sink, mut stream) = socket.split();
    let mut seq: u64 = 1;
    let mut chunk: u64 = 0;
    // Frames to send (real time): the byte, and who waits for the last of a phrase.
    let mut outgoing: VecDeque<(u8, Option<oneshot::Sender<()>>)> = VecDeque::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(20));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let realtime = pacing == Pacing::RealTime;
    let mut stopped = false;
    let changed = || shared.changed.notify_waiters();
    loop {
        let next_mark = lock(&shared.state)
            .playback
            .pending
            .front()
            .map(|(_, at)| *at);
        // What to send after this turn of the loop.
        let mut send: Vec<Value> = Vec::new();
        let mut finished: Vec<oneshot::Sender<()>> = Vec::new();
        let mut stop_done = None;
        tokio::select! {
            _ = ticker.tick(), if realtime && !stopped => {
                let (byte, done) = outgoing.pop_front().unwrap_or((SILENCE, None));
                seq += 1;
                chunk += 1;
                send.push(dialect.media(seq, chunk, &[byte; FRAME]));
                finished.extend(done);
            }
            command = commands.recv() => match command {
                Some(Command::Say { byte, frames, done }) if realtime => {
                    outgoing.extend((0..frames).map(|_| (byte, None)));
                    match outgoing.back_mut() {
                        Some(last) => last.1 = Some(done),
                        None => finished.push(done),
                    }
                }
                Some(Command::Say { byte, frames, done }) => {
                    // Fast: the phrase and the silence after it, at once.
                    for b in std::iter::repeat_n(byte, frames).chain(std::iter::repeat_n(SILENCE, 15)) {
                        seq += 1;
                        chunk += 1;
                        send.push(dialect.media(seq, chunk, &[b; FRAME]));
                    }
                    finished.push(done);
                }
                Some(Command::Dtmf(digit)) => {
                    seq += 1;
                    send.push(dialect.dtmf(seq, digit));
                    lock(&shared.state).view.digits_sent.push(digit);
                }
                Some(Command::Stop(done)) => {
                    seq += 1;
                    send.push(dialect.stop(seq));
                    stopped = true;
                    stop_done = Some(done);
                }
                None => break,
            },
            message = stream.next() => {
                let now = Instant::now();
                let mut s = lock(&shared.state);
                match message {
                    Some(Ok(Message::Text(text))) => {
                        let value: Value = serde_json::from_str(text.as_str())
                            .unwrap_or_else(|_| Value::String(text.as_str().to_owned()));
                        s.advance(now);
                        match value["event"].as_str() {
                            Some("media") => {
                                let audio = value["media"]["payload"]
                                    .as_str()
                                    .and_then(|p| STANDARD.decode(p).ok())
                                    .unwrap_or_default();
                                s.view.media.push((now, audio.len()));
                                s.view.agent_audio.extend_from_slice(&audio);
                                s.playback.queued += audio.len();
                                s.advance(now);
                            }
                            Some("mark") => {
                                let name = value["mark"]["name"].as_str().unwrap_or_default().to_owned();
                                s.view.marks.push(name.clone());
                                let at = s.drained_at(now);
                                s.playback.pending.push_back((name, at));
                            }
                            Some("clear") => {
                                s.view.clears += 1;
                                s.view.cleared_bytes += s.playback.queued;
                                s.playback.queued = 0;
                                s.view.queued_bytes = 0;
                                // Every pending mark comes back at once.
                                let now_due = now;
                                for mark in s.playback.pending.iter_mut() {
                                    mark.1 = now_due;
                                }
                            }
                            _ => {}
                        }
                        s.view.messages.push(value);
                    }
                    Some(Ok(Message::Close(frame))) => {
                        s.view.closed = true;
                        s.view.close_code = frame.map(|f| u16::from(f.code));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => s.view.closed = true,
                }
            }
            () = until(next_mark) => {}
        }
        // Marks whose audio has played.
        {
            let now = Instant::now();
            let mut s = lock(&shared.state);
            s.advance(now);
            while let Some((name, at)) = s.playback.pending.front().cloned() {
                if at > now {
                    break;
                }
                s.playback.pending.pop_front();
                s.view.marks_answered.push(name.clone());
                seq += 1;
                send.push(dialect.mark(seq, &name));
            }
        }
        let closed = lock(&shared.state).view.closed;
        if !closed {
            for message in send {
                if sink.send(Message::text(message.to_string())).await.is_err() {
                    lock(&shared.state).view.closed = true;
                    break;
                }
                if message["event"] == "media" {
                    lock(&shared.state).view.frames_sent += 1;
                }
            }
        }
        for done in finished {
            let _ = done.send(());
        }
        if let Some(done) = stop_done {
            let _ = sink.close().await;
            lock(&shared.state).view.stopped = true;
            changed();
            let _ = done.send(());
            break;
        }
        changed();
        if lock(&shared.state).view.closed {
            break;
        }
    }
    // Whoever waits on a phrase is not kept waiting by a closed stream.
    drop(outgoing);
    lock(&shared.state).view.closed = true;
    changed();
}
