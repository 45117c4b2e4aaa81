//! An OpenAI-compatible chat-completions server streaming scripted replies over server-sent
//! events: text word by word, tool calls with their arguments split across chunks by
//! `index`, a usage chunk, then `data: [DONE]`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::speech::stream_chunks;
use super::{FAKE_BODY, Fault, Faults, ServerGuard, Shared, header_map, lock, serve};

/// One scripted reply: text, tool calls, or both (text first).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatAnswer {
    /// The reply's text, sent word by word.
    pub text: String,
    /// Tool calls: `(name, arguments)`; ids are `call_{n}` (`n` counting every call the fake
    /// has made).
    pub tool_calls: Vec<(String, Value)>,
    /// `(prompt_tokens, completion_tokens)`; by default a quarter of the request's messages'
    /// JSON length and of the reply's length, rounded up.
    pub usage: Option<(u64, u64)>,
}

impl ChatAnswer {
    /// A reply of `text`.
    pub fn text(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            tool_calls: Vec::new(),
            usage: None,
        }
    }

    /// A call of the tool `name` with `arguments`.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::text("").and_tool_call(name, arguments)
    }

    /// This reply, with one more tool call.
    pub fn and_tool_call(mut self, name: &str, arguments: Value) -> Self {
        self.tool_calls.push((name.to_owned(), arguments));
        self
    }

    /// This reply, reporting `usage` tokens.
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }
}

/// One chat request, as received.
#[derive(Debug, Clone)]
pub struct ChatRequestRecord {
    /// The path.
    pub path: String,
    /// Lower-cased header names and their values.
    pub headers: BTreeMap<String, String>,
    /// The JSON body: `messages`, `tools`, `model`, …
    pub body: Value,
    /// Whether the key was the fake's.
    pub authorized: bool,
    /// When it arrived.
    pub at: Instant,
    /// The answer given (none for a fault or a refused key).
    pub answer: Option<ChatAnswer>,
    /// The usage reported for it.
    pub usage: Option<(u64, u64)>,
}

type Responder = Arc<dyn Fn(&Value) -> ChatAnswer + Send + Sync>;

struct State_ {
    key: String,
    answers: VecDeque<ChatAnswer>,
    otherwise: Responder,
    requests: Vec<ChatRequestRecord>,
    faults: Faults,
    chunk_delay: Duration,
    calls_made: usize,
}

/// A fake chat-completions server.
#[derive(Clone)]
pub struct FakeChat {
    base: String,
    state: Shared<State_>,
    _server: Arc<ServerGuard>,
}

impl std::fmt::Debug for FakeChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeChat")
            .field("base", &self.base)
            .finish()
    }
}

impl FakeChat {
    /// A server answering the key `key`: the pushed answers in order, then "OK." (or what
    /// [`FakeChat::otherwise`] says).
    pub async fn start(key: &str) -> Self {
        let state = Shared::new(std::sync::Mutex::new(State_ {
            key: key.to_owned(),
            answers: VecDeque::new(),
            otherwise: Arc::new(|_| ChatAnswer::text("OK.")),
            requests: Vec::new(),
            faults: Faults::default(),
            chunk_delay: Duration::ZERO,
            calls_made: 0,
        }));
        let router = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(state.clone());
        let (base, guard) = serve(router).await;
        Self {
            base,
            state,
            _server: Arc::new(guard),
        }
    }

    /// The base URL (`http://127.0.0.1:port`).
    pub fn base_url(&self) -> String {
        self.base.clone()
    }

    /// Queues the answer to a coming request.
    pub fn push(&self, answer: ChatAnswer) {
        lock(&self.state).answers.push_back(answer);
    }

    /// The answer when none is queued, from the request's body.
    pub fn otherwise(&self, respond: impl Fn(&Value) -> ChatAnswer + Send + Sync + 'static) {
        lock(&self.state).otherwise = Arc::new(respond);
    }

    /// Waits `delay` before each chunk (default none).
    pub fn chunk_delay(&self, delay: Duration) {
        lock(&self.state).chunk_delay = delay;
    }

    /// Fails the next request with `fault`.
    pub fn fail_next(&self, fault: Fault) {
        lock(&self.state).faults.next.push_back(fault);
    }

    /// Fails every request with `fault` (`None`: heals).
    pub fn fail_always(&self, fault: Option<Fault>) {
        lock(&self.state).faults.always = fault;
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<ChatRequestRecord> {
        lock(&self.state).requests.clone()
    }

    /// The answers still queued.
    pub fn queued(&self) -> usize {
        lock(&self.state).answers.len()
    }
}

async fn complete(
    State(state): State<Shared<State_>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let headers = header_map(&headers);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (chunks, fault, delay) = {
        let mut s = lock(&state);
        let authorized = headers.get("authorization") == Some(&format!("Bearer {}", s.key));
        let fault = if authorized { s.faults.take() } else { None };
        let answer = match (authorized, fault) {
            (true, None | Some(Fault::StallMidStream | Fault::BreakMidStream)) => {
                Some(match s.answers.pop_front() {
                    Some(answer) => answer,
                    None => (s.otherwise)(&body),
                })
            }
            _ => None,
        };
        let usage = answer.as_ref().map(|a| {
            a.usage.unwrap_or_else(|| {
                let prompt = body["messages"].to_string().len().div_ceil(4) as u64;
                let reply = a.text.len()
                    + a.tool_calls
                        .iter()
                        .map(|(n, args)| n.len() + args.to_string().len())
                        .sum::<usize>();
                (prompt, reply.div_ceil(4) as u64)
            })
        });
        let first_call = s.calls_made;
        if let Some(a) = &answer {
            s.calls_made += a.tool_calls.len();
        }
        let chunks = match (&answer, usage) {
            (Some(a), Some(usage)) => events(a, usage, first_call),
            _ => Vec::new(),
        };
        s.requests.push(ChatRequestRecord {
            path: "/v1/chat/completions".into(),
            headers,
            body,
            authorized,
            at: Instant::now(),
            answer,
            usage,
        });
        if !authorized {
            return (StatusCode::UNAUTHORIZED, FAKE_BODY).into_response();
        }
        (chunks, fault, s.chunk_delay)
    };
    stream_chunks(chunks, fault, delay, "text/event-stream").await
}

/// The server-sent events of `answer`, one chunk per event.
fn events(answer: &ChatAnswer, (prompt, completion): (u64, u64), first_call: usize) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for word in answer.text.split_inclusive(' ') {
        out.push(chunk(json!({"content": word}), Value::Null));
    }
    for (i, (name, arguments)) in answer.tool_calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "id": format!("call_{}", first_call + i),
                   "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        // The arguments arrive in three pieces, as models stream them.
        let text = arguments.to_string();
        let chars: Vec<char> = text.chars().collect();
        let third = chars.len().div_ceil(3).max(1);
        for piece in chars.chunks(third) {
            let piece: String = piece.iter().collect();
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let finish = if answer.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(chunk(json!({}), json!(finish)));
    out.push(
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}}),
    );
    let mut events: Vec<Bytes> = out
        .into_iter()
        .map(|c| Bytes::from(format!("data: {c}\n\n")))
        .collect();
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    events
}
