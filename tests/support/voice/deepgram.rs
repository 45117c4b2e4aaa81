//! A Deepgram live server: a WebSocket at `/v1/listen` that checks `Authorization: Token`,
//! records the query, and turns the audio it hears into scripted transcripts keyed by the
//! audio. A test scripts a byte value ([`FakeDeepgram::script`]); a run of at least
//! `frames_to_recognize` frames whose payload is all that byte is an utterance:
//!
//! - at its `frames_to_recognize`-th frame: `SpeechStarted`, then an interim `Results` with
//!   the first word;
//! - at the first frame that is not that byte (silence, `0xFF`, usually), or at
//!   `CloseStream`: a final `Results` (`is_final`, and `speech_final` unless scripted
//!   otherwise) with the text, then `UtteranceEnd` when scripted.
//!
//! Silence and unscripted bytes produce nothing. `KeepAlive` and `CloseStream` are recorded;
//! at `CloseStream` the server sends `Metadata` and closes, as Deepgram does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use super::{FAKE_BODY, Fault, Faults, ServerGuard, Shared, lock};

/// What a scripted byte value says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Utterance {
    /// The words.
    pub text: String,
    /// Whether the final `Results` says `speech_final` (default true).
    pub speech_final: bool,
    /// Whether an `UtteranceEnd` follows it (default false).
    pub utterance_end: bool,
}

impl Utterance {
    /// `text`, ending the turn with `speech_final`.
    pub fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            speech_final: true,
            utterance_end: false,
        }
    }
}

/// One live session, as seen by the server (updated while it is open).
#[derive(Debug, Clone, Default)]
pub struct ListenRecord {
    /// The query parameters.
    pub query: BTreeMap<String, String>,
    /// The query string as sent.
    pub raw_query: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// Binary frames received.
    pub frames: usize,
    /// Audio bytes received.
    pub audio_bytes: usize,
    /// `KeepAlive` messages received.
    pub keep_alives: usize,
    /// Whether `CloseStream` was received.
    pub close_stream: bool,
    /// The finals sent: when, and their text.
    pub finals: Vec<(Instant, String)>,
    /// Every text message sent to the client.
    pub sent: Vec<Value>,
    /// Whether the session is still open.
    pub open: bool,
}

#[derive(Debug)]
struct State_ {
    key: String,
    scripts: BTreeMap<u8, Utterance>,
    frames_to_recognize: usize,
    sessions: Vec<ListenRecord>,
    refused: Vec<(u16, Option<String>)>,
    faults: Faults,
}

/// A fake Deepgram live server.
#[derive(Debug, Clone)]
pub struct FakeDeepgram {
    addr: String,
    state: Shared<State_>,
    drop_all: Arc<watch::Sender<u64>>,
    _server: Arc<ServerGuard>,
}

impl FakeDeepgram {
    /// A server accepting the key `key`.
    pub async fn start(key: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("a local address").to_string();
        let state = Shared::new(std::sync::Mutex::new(State_ {
            key: key.to_owned(),
            scripts: BTreeMap::new(),
            frames_to_recognize: 5,
            sessions: Vec::new(),
            refused: Vec::new(),
            faults: Faults::default(),
        }));
        let (drop_all, _) = watch::channel(0u64);
        let drop_all = Arc::new(drop_all);
        let task = {
            let state = state.clone();
            let drop_all = drop_all.clone();
            tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    tokio::spawn(session(tcp, state.clone(), drop_all.subscribe()));
                }
            })
        };
        Self {
            addr,
            state,
            drop_all,
            _server: Arc::new(ServerGuard(task)),
        }
    }

    /// The base URL as configured for Deepgram (`ws://127.0.0.1:port`).
    pub fn base_url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// The same server as an `http://` base URL (which the client takes as `ws://`).
    pub fn http_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Frames of `byte` say `text` (ending the turn with `speech_final`).
    pub fn script(&self, byte: u8, text: &str) {
        self.script_utterance(byte, Utterance::new(text));
    }

    /// Frames of `byte` say `utterance`.
    pub fn script_utterance(&self, byte: u8, utterance: Utterance) {
        assert_ne!(byte, super::SILENCE, "silence cannot be scripted");
        lock(&self.state).scripts.insert(byte, utterance);
    }

    /// How many frames of a scripted byte make an utterance (default 5: 100 ms).
    pub fn frames_to_recognize(&self, frames: usize) {
        lock(&self.state).frames_to_recognize = frames.max(1);
    }

    /// Fails the next connection with `fault` (`Status`: the upgrade is refused).
    pub fn fail_next(&self, fault: Fault) {
        lock(&self.state).faults.next.push_back(fault);
    }

    /// Fails every connection with `fault` (`None`: heals).
    pub fn fail_always(&self, fault: Option<Fault>) {
        lock(&self.state).faults.always = fault;
    }

    /// Breaks every open session, without a close frame (a lost connection).
    pub fn drop_connections(&self) {
        self.drop_all.send_modify(|n| *n += 1);
    }

    /// Every session so far, open or closed.
    pub fn sessions(&self) -> Vec<ListenRecord> {
        lock(&self.state).sessions.clone()
    }

    /// The upgrades refused: status, and the `Authorization` header they came with.
    pub fn refused(&self) -> Vec<(u16, Option<String>)> {
        lock(&self.state).refused.clone()
    }

    /// Every final sent, in order: when, and the text.
    pub fn finals(&self) -> Vec<(Instant, String)> {
        let mut all: Vec<_> = lock(&self.state)
            .sessions
            .iter()
            .flat_map(|s| s.finals.clone())
            .collect();
        all.sort_by_key(|(at, _)| *at);
        all
    }
}

fn results(text: &str, is_final: bool, speech_final: bool, start: f64, duration: f64) -> Value {
    json!({
        "type": "Results", "channel_index": [0, 1], "duration": duration, "start": start,
        "is_final": is_final, "speech_final": speech_final, "from_finalize": false,
        "channel": {"alternatives": [{"transcript": text, "confidence": 0.98, "words": []}]},
        "metadata": {"request_id": "fake-deepgram", "model_info": {"name": "fake"}},
    })
}

/// The run of scripted frames being heard.
struct Run {
    byte: u8,
    frames: usize,
    started_at_frame: usize,
}

async fn session(tcp: TcpStream, state: Shared<State_>, mut drop_all: watch::Receiver<u64>) {
    let fault = lock(&state).faults.take();
    if fault == Some(Fault::StallBeforeFirstByte) {
        // Hold the connection, never answering, until the fake is dropped or told to break.
        let _tcp = tcp;
        let _ = drop_all.changed().await;
        return;
    }
    let mut record = ListenRecord {
        open: true,
        ..ListenRecord::default()
    };
    // The callback's type is tungstenite's, large error and all.
    #[allow(clippy::result_large_err)]
    let check = |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
        let auth = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let raw = request.uri().query().unwrap_or_default().to_owned();
        let mut s = lock(&state);
        let refusal = if request.uri().path() != "/v1/listen" {
            Some(404)
        } else if auth.as_deref() != Some(&format!("Token {}", s.key)) {
            Some(401)
        } else if let Some(Fault::Status(code)) = fault {
            Some(code)
        } else {
            None
        };
        if let Some(code) = refusal {
            s.refused.push((code, auth));
            let mut refused = ErrorResponse::new(Some(FAKE_BODY.to_owned()));
            *refused.status_mut() =
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Err(refused);
        }
        record.query = reqwest::Url::parse(&format!("ws://fake/?{raw}"))
            .map(|u| u.query_pairs().into_owned().collect())
            .unwrap_or_default();
        record.raw_query = raw;
        record.authorization = auth;
        Ok(response)
    };
    let Ok(socket) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
        return;
    };
    let index = {
        let mut s = lock(&state);
        s.sessions.push(record);
        s.sessions.len() - 1
    };
    let update = |f: &mut dyn FnMut(&mut ListenRecord)| {
        let mut s = lock(&state);
        f(&mut s.sessions[index]);
    };
    let (mut sink, mut stream) = socket.split();
    let mut run: Option<Run> = None;
    let mut frames = 0usize;
    // Seconds of audio heard, as Deepgram times its results.
    let at = |frame: usize| frame as f64 * 0.02;
    loop {
        let message = tokio::select! {
            m = stream.next() => m,
            _ = drop_all.changed() => None,
        };
        let mut replies: Vec<Value> = Vec::new();
        let mut finals: Vec<String> = Vec::new();
        let mut close = false;
        let (scripts, needed) = {
            let s = lock(&state);
            (s.scripts.clone(), s.frames_to_recognize)
        };
        let end_run = |run: &mut Option<Run>,
                       replies: &mut Vec<Value>,
                       finals: &mut Vec<String>,
                       frame: usize| {
            if let Some(r) = run.take()
                && r.frames >= needed
                && let Some(u) = scripts.get(&r.byte)
            {
                let start = at(r.started_at_frame);
                replies.push(results(
                    &u.text,
                    true,
                    u.speech_final,
                    start,
                    at(frame) - start,
                ));
                finals.push(u.text.clone());
                if u.utterance_end {
                    replies.push(json!({"type": "UtteranceEnd", "channel": [0, 1], "last_word_end": at(frame)}));
                }
            }
        };
        match message {
            Some(Ok(Message::Binary(audio))) => {
                frames += 1;
                update(&mut |r| {
                    r.frames += 1;
                    r.audio_bytes += audio.len();
                });
                if fault == Some(Fault::BreakMidStream) {
                    break;
                }
                let byte = audio
                    .first()
                    .copied()
                    .filter(|b| scripts.contains_key(b) && audio.iter().all(|x| x == b));
                match (&mut run, byte) {
                    (Some(r), Some(b)) if r.byte == b => r.frames += 1,
                    (_, Some(b)) => {
                        end_run(&mut run, &mut replies, &mut finals, frames);
                        run = Some(Run {
                            byte: b,
                            frames: 1,
                            started_at_frame: frames,
                        });
                    }
                    (_, None) => end_run(&mut run, &mut replies, &mut finals, frames),
                }
                if let Some(r) = &run
                    && r.frames == needed
                    && fault != Some(Fault::StallMidStream)
                {
                    let first = scripts[&r.byte]
                        .text
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    replies.push(json!({"type": "SpeechStarted", "channel": [0], "timestamp": at(r.started_at_frame)}));
                    let start = at(r.started_at_frame);
                    replies.push(results(&first, false, false, start, at(frames) - start));
                }
            }
            Some(Ok(Message::Text(text))) => {
                let kind = serde_json::from_str::<Value>(text.as_str())
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_owned));
                match kind.as_deref() {
                    Some("KeepAlive") => update(&mut |r| r.keep_alives += 1),
                    Some("CloseStream") => {
                        update(&mut |r| r.close_stream = true);
                        end_run(&mut run, &mut replies, &mut finals, frames);
                        replies.push(json!({"type": "Metadata", "request_id": "fake-deepgram",
                                            "duration": at(frames), "channels": 1}));
                        close = true;
                    }
                    _ => {}
                }
            }
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => {}
        }
        if fault == Some(Fault::StallMidStream) {
            replies.clear();
            finals.clear();
        }
        let now = Instant::now();
        update(&mut |r| {
            r.finals.extend(finals.iter().map(|t| (now, t.clone())));
            r.sent.extend(replies.iter().cloned());
        });
        for reply in replies {
            if sink.send(Message::text(reply.to_string())).await.is_err() {
                break;
            }
        }
        if close {
            let _ = sink.close().await;
            break;
        }
    }
    update(&mut |r| r.open = false);
}
