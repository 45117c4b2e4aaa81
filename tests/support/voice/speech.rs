//! provider_one's (`POST /tts/bytes`) and provider_two's (`POST
//! /v1/text-to-speech/{voice}/stream`) streamed speech: the audio of a text is
//! [`FakeSpeech::audio_for`], 10 ms per character (80 μ-law bytes, or 320 bytes of 16 kHz
//! PCM), sent in several chunks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::Value;

use super::{FAKE_BODY, Fault, Faults, ServerGuard, Shared, header_map, lock, serve};

/// Which provider a [`FakeSpeech`] plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeechProvider {
    /// `POST /tts/bytes`, `Authorization: Bearer`, `Cartesia-Version`.
    ProviderOne,
    /// `POST /v1/text-to-speech/{voice}/stream?output_format=`, `xi-api-key`.
    ProviderTwo,
}

/// One speech request, as received.
#[derive(Debug, Clone)]
pub struct SpeechRequestRecord {
    /// The path.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// Lower-cased header names and their values.
    pub headers: BTreeMap<String, String>,
    /// The JSON body.
    pub body: Value,
    /// The text to speak (`transcript` or `text`).
    pub text: String,
    /// The voice (`voice.id`, or the path's voice).
    pub voice: String,
    /// Whether the key was the fake's.
    pub authorized: bool,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Debug)]
struct State_ {
    provider: SpeechProvider,
    key: String,
    requests: Vec<SpeechRequestRecord>,
    faults: Faults,
    chunk_bytes: usize,
    chunk_delay: Duration,
}

/// A fake speech provider.
#[derive(Debug, Clone)]
pub struct FakeSpeech {
    base: String,
    state: Shared<State_>,
    _server: std::sync::Arc<ServerGuard>,
}

impl FakeSpeech {
    /// provider_one, answering the key `key`.
    pub async fn provider_one(key: &str) -> Self {
        Self::start(SpeechProvider::ProviderOne, key).await
    }

    /// provider_two, answering the key `key`.
    pub async fn provider_two(key: &str) -> Self {
        Self::start(SpeechProvider::ProviderTwo, key).await
    }

    async fn start(provider: SpeechProvider, key: &str) -> Self {
        let state = Shared::new(std::sync::Mutex::new(State_ {
            provider,
            key: key.to_owned(),
            requests: Vec::new(),
            faults: Faults::default(),
            chunk_bytes: 400,
            chunk_delay: Duration::ZERO,
        }));
        let router = match provider {
            SpeechProvider::ProviderOne => Router::new().route("/tts/bytes", post(one)),
            SpeechProvider::ProviderTwo => {
                Router::new().route("/v1/text-to-speech/{voice}/stream", post(two))
            }
        }
        .with_state(state.clone());
        let (base, guard) = serve(router).await;
        Self {
            base,
            state,
            _server: std::sync::Arc::new(guard),
        }
    }

    /// The base URL (`http://127.0.0.1:port`).
    pub fn base_url(&self) -> String {
        self.base.clone()
    }

    /// The audio of `text` in μ-law (8 kHz): 80 bytes per character, each character's
    /// bytes a value of its own (never silence), so tests can tell sentences and their order
    /// apart.
    pub fn audio_for(text: &str) -> Vec<u8> {
        text.chars()
            .flat_map(|c| std::iter::repeat_n(char_byte(c), 80))
            .collect()
    }

    /// The audio of `text` in 16 kHz PCM: 320 bytes per character.
    pub fn linear_audio_for(text: &str) -> Vec<u8> {
        text.chars()
            .flat_map(|c| std::iter::repeat_n(char_byte(c), 320))
            .collect()
    }

    /// Sends audio in chunks of `bytes` (default 400: 50 ms of μ-law).
    pub fn chunk_bytes(&self, bytes: usize) {
        lock(&self.state).chunk_bytes = bytes.max(1);
    }

    /// Waits `delay` before each chunk (default none): speech made slower than real time.
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
    pub fn requests(&self) -> Vec<SpeechRequestRecord> {
        lock(&self.state).requests.clone()
    }

    /// The texts asked for, in order.
    pub fn texts(&self) -> Vec<String> {
        lock(&self.state)
            .requests
            .iter()
            .map(|r| r.text.clone())
            .collect()
    }
}

/// A character's audio byte: in 0x10..0x70, far from μ-law's silences (0xFF, 0x7F).
fn char_byte(c: char) -> u8 {
    0x10 + (u32::from(c) % 0x60) as u8
}

async fn one(
    State(state): State<Shared<State_>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let text = body["transcript"].as_str().unwrap_or_default().to_owned();
    let voice = body["voice"]["id"].as_str().unwrap_or_default().to_owned();
    let linear = body["output_format"]["encoding"] == "pcm_s16le";
    answer(
        state,
        "/tts/bytes".into(),
        query,
        headers,
        body,
        text,
        voice,
        linear,
    )
    .await
}

async fn two(
    State(state): State<Shared<State_>>,
    Path(voice): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let text = body["text"].as_str().unwrap_or_default().to_owned();
    let linear = query
        .as_deref()
        .is_some_and(|q| q.contains("output_format=pcm_16000"));
    let path = format!("/v1/text-to-speech/{voice}/stream");
    answer(state, path, query, headers, body, text, voice, linear).await
}

#[allow(clippy::too_many_arguments)]
async fn answer(
    state: Shared<State_>,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Value,
    text: String,
    voice: String,
    linear: bool,
) -> Response {
    let headers = header_map(&headers);
    let (fault, chunk_bytes, delay, authorized) = {
        let mut s = lock(&state);
        let authorized = match s.provider {
            SpeechProvider::ProviderOne => {
                headers.get("authorization") == Some(&format!("Bearer {}", s.key))
                    && headers.contains_key("cartesia-version")
            }
            SpeechProvider::ProviderTwo => headers.get("xi-api-key") == Some(&s.key),
        };
        s.requests.push(SpeechRequestRecord {
            path,
            query,
            headers,
            body,
            text: text.clone(),
            voice,
            authorized,
            at: Instant::now(),
        });
        (s.faults.take(), s.chunk_bytes, s.chunk_delay, authorized)
    };
    if !authorized {
        return (StatusCode::UNAUTHORIZED, FAKE_BODY).into_response();
    }
    let audio = if linear {
        FakeSpeech::linear_audio_for(&text)
    } else {
        FakeSpeech::audio_for(&text)
    };
    let chunks: Vec<Bytes> = audio
        .chunks(chunk_bytes)
        .map(Bytes::copy_from_slice)
        .collect();
    stream_chunks(chunks, fault, delay, "application/octet-stream").await
}

/// Streams `chunks` with `delay` before each, as `fault` says: an error status, a stall
/// before the answer or after half of it, or a break after half of it.
pub(super) async fn stream_chunks(
    chunks: Vec<Bytes>,
    fault: Option<Fault>,
    delay: Duration,
    content_type: &'static str,
) -> Response {
    match fault {
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, FAKE_BODY).into_response();
        }
        Some(Fault::StallBeforeFirstByte) => std::future::pending::<()>().await,
        _ => {}
    }
    let half = chunks.len().div_ceil(2).max(1);
    let stream = futures_util::stream::iter(chunks.into_iter().enumerate()).then(
        move |(i, chunk)| async move {
            if i == half {
                match fault {
                    Some(Fault::StallMidStream) => std::future::pending::<()>().await,
                    Some(Fault::BreakMidStream) => {
                        // Let the first half reach the client before the connection breaks
                        // (the server flushes what it holds when the body waits).
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        return Err(std::io::Error::other("the fake broke the stream"));
                    }
                    _ => {}
                }
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok::<_, std::io::Error>(chunk)
        },
    );
    // A stream cut at the half must also break when there is no second half to cut.
    let stream = stream.chain(futures_util::stream::iter(
        matches!(fault, Some(Fault::BreakMidStream))
            .then(|| Err(std::io::Error::other("the fake broke the stream"))),
    ));
    Response::builder()
        .header("content-type", content_type)
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
