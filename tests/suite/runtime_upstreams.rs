//! The built-in runtime's upstream clients (`voiceplane_clients::runtime`) against the fakes
//! of `voiceplane_suite::voice`: Deepgram live (the URL, the key, transcripts, refusals and a
//! lost connection), streamed chat completions (text, tool calls put together across chunks,
//! usage, failures that never leak a body or key), both providers' streamed speech, and the
//! guarded HTTP tools.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use serde_json::{Value, json};
use voiceplane_clients::{
    DeepgramListener, GuardedHttpTools, OpenAiChat, ProviderOneSpeech, ProviderTwoSpeech,
    RuntimeClientSettings,
};
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_runtime::upstream::{
    AudioFormat, ChatDelta, ChatMessage, ChatRequest, FunctionSpec, HttpTools, LanguageModel,
    ListenEvent, ListenInput, ListenParams, MAX_TOOL_ANSWER_BYTES, SpeakRequest, SpeechToText,
    TextToSpeech, ToolCall, ToolRequest, UpstreamError,
};
use voiceplane_suite::voice::*;
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Longest wait for anything a fake does at once.
const SOON: Duration = Duration::from_secs(5);

/// The clients' settings for loopback fakes, quick to give up.
fn loopback() -> RuntimeClientSettings {
    RuntimeClientSettings {
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(500),
        policy: TargetPolicy {
            allow_private: true,
        },
    }
}

/// Every item of `stream`, failing the test if it does not end in time.
async fn collect<T>(
    mut stream: std::pin::Pin<Box<dyn Stream<Item = Result<T, UpstreamError>> + Send>>,
) -> Vec<Result<T, UpstreamError>> {
    use futures_util::StreamExt;
    let mut items = Vec::new();
    loop {
        match tokio::time::timeout(SOON, stream.next()).await {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return items,
            Err(_) => panic!("the stream did not end in time"),
        }
    }
}

fn assert_safe(error: &UpstreamError, secrets: &[&str]) {
    for secret in secrets.iter().chain([&FAKE_BODY]) {
        assert!(!error.0.contains(secret), "{error} leaks {secret}");
    }
}

// -------------------------------------------------------------------------------------------
// Deepgram

fn listen_params(format: AudioFormat) -> ListenParams {
    ListenParams {
        model: "nova-3".into(),
        language: "en-US".into(),
        format,
    }
}

async fn next_event(
    events: &mut tokio::sync::mpsc::Receiver<Result<ListenEvent, UpstreamError>>,
) -> Option<Result<ListenEvent, UpstreamError>> {
    tokio::time::timeout(SOON, events.recv())
        .await
        .expect("an event in time")
}

fn frame(byte: u8) -> ListenInput {
    ListenInput::Audio(Bytes::from(vec![byte; 160]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_sessions_follow_the_contract() {
    let fake = FakeDeepgram::start("dg-key").await;
    fake.script(0x11, "hello there friend");
    let listener = DeepgramListener::with_settings(loopback()).unwrap();
    // An http:// base is taken as its ws:// twin.
    let key = provider_key("deepgram", &fake.http_base_url(), "dg-key");
    let mut session = listener
        .listen(&key, &listen_params(AudioFormat::Mulaw8k))
        .await
        .unwrap();
    let sessions = fake.sessions();
    assert_eq!(
        sessions[0].raw_query,
        "model=nova-3&encoding=mulaw&sample_rate=8000&channels=1&interim_results=true&endpointing=300&utterance_end_ms=1000&vad_events=true&language=en-us"
    );
    assert_eq!(sessions[0].authorization.as_deref(), Some("Token dg-key"));

    // Silence says nothing; five frames of the scripted byte are heard, and the silence after
    // them ends the turn.
    for byte in [SILENCE; 3]
        .into_iter()
        .chain([0x11; 8])
        .chain([SILENCE; 2])
    {
        session.input.send(frame(byte)).await.unwrap();
    }
    assert_eq!(
        next_event(&mut session.events).await,
        Some(Ok(ListenEvent::SpeechStarted))
    );
    assert_eq!(
        next_event(&mut session.events).await,
        Some(Ok(ListenEvent::Transcript {
            text: "hello".into(),
            is_final: false,
            speech_final: false
        }))
    );
    assert_eq!(
        next_event(&mut session.events).await,
        Some(Ok(ListenEvent::Transcript {
            text: "hello there friend".into(),
            is_final: true,
            speech_final: true
        }))
    );
    session.input.send(ListenInput::KeepAlive).await.unwrap();
    // Dropping the input closes the stream: CloseStream, then the end of the events, no error.
    drop(session.input);
    assert_eq!(next_event(&mut session.events).await, None);
    let record = &fake.sessions()[0];
    assert_eq!(record.frames, 13);
    assert_eq!(record.audio_bytes, 13 * 160);
    assert_eq!(record.keep_alives, 1);
    assert!(record.close_stream);
    assert_eq!(fake.finals().len(), 1);

    // A web call's audio; and an utterance ended by UtteranceEnd rather than speech_final.
    fake.script_utterance(
        0x22,
        Utterance {
            text: "press one".into(),
            speech_final: false,
            utterance_end: true,
        },
    );
    let mut session = listener
        .listen(
            &provider_key("deepgram", &fake.base_url(), "dg-key"),
            &listen_params(AudioFormat::Linear16k),
        )
        .await
        .unwrap();
    assert!(
        fake.sessions()[1]
            .raw_query
            .contains("&encoding=linear16&sample_rate=16000&"),
        "{}",
        fake.sessions()[1].raw_query
    );
    for byte in [0x22; 5] {
        session.input.send(frame(byte)).await.unwrap();
    }
    session.input.send(ListenInput::Close).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = next_event(&mut session.events).await {
        events.push(event.unwrap());
    }
    assert_eq!(
        events,
        [
            ListenEvent::SpeechStarted,
            ListenEvent::Transcript {
                text: "press".into(),
                is_final: false,
                speech_final: false
            },
            ListenEvent::Transcript {
                text: "press one".into(),
                is_final: true,
                speech_final: false
            },
            ListenEvent::UtteranceEnd,
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_refusals_and_lost_connections_are_errors() {
    let fake = FakeDeepgram::start("dg-key").await;
    let listener = DeepgramListener::with_settings(loopback()).unwrap();
    let params = listen_params(AudioFormat::Mulaw8k);

    let wrong = provider_key("deepgram", &fake.base_url(), "wrong-key");
    let error = listener.listen(&wrong, &params).await.unwrap_err();
    assert_eq!(error.0, "deepgram rejected the API key (HTTP 401)");
    assert_safe(&error, &["wrong-key"]);
    assert_eq!(fake.refused()[0].0, 401);

    let key = provider_key("deepgram", &fake.base_url(), "dg-key");
    fake.fail_next(Fault::Status(500));
    let error = listener.listen(&key, &params).await.unwrap_err();
    assert_eq!(error.0, "deepgram refused the live connection (HTTP 500)");
    assert_safe(&error, &["dg-key"]);

    fake.fail_next(Fault::StallBeforeFirstByte);
    let error = listener.listen(&key, &params).await.unwrap_err();
    assert_eq!(
        error.0,
        "deepgram did not accept the connection within 500 ms"
    );

    // A lost connection: one error, then the end of the events.
    let mut session = listener.listen(&key, &params).await.unwrap();
    session.input.send(frame(SILENCE)).await.unwrap();
    fake.drop_connections();
    let lost = next_event(&mut session.events).await.unwrap().unwrap_err();
    assert_eq!(lost.0, "the connection to deepgram was lost");
    assert_eq!(next_event(&mut session.events).await, None);

    // Nothing listens there: unreachable. A private address under the default policy:
    // refused before connecting.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let error = listener
        .listen(
            &provider_key("deepgram", &format!("ws://127.0.0.1:{port}"), "dg-key"),
            &params,
        )
        .await
        .unwrap_err();
    assert_eq!(error.0, "deepgram could not be reached");
    let guarded = DeepgramListener::new().unwrap();
    let sessions = fake.sessions().len();
    let error = guarded.listen(&key, &params).await.unwrap_err();
    assert!(error.0.contains("private address"), "{error}");
    assert_eq!(fake.sessions().len(), sessions);
}

// -------------------------------------------------------------------------------------------
// Chat

fn chat_request(functions: Vec<FunctionSpec>) -> ChatRequest {
    ChatRequest {
        model: "gpt-4o-mini".into(),
        temperature: Some(0.3),
        messages: vec![
            ChatMessage::System("You are a receptionist.".into()),
            ChatMessage::User("What's the weather in Paris?".into()),
        ],
        functions,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_text_tool_calls_and_usage() {
    let fake = FakeChat::start("oa-key").await;
    fake.push(
        ChatAnswer::text("Let me check that for you.")
            .and_tool_call("weather", json!({"city": "Paris", "days": 3}))
            .and_tool_call("end_call", json!({"reason": "done"})),
    );
    fake.push(ChatAnswer::text("It is sunny.").with_usage(120, 7));
    let chat = OpenAiChat::with_settings(loopback()).unwrap();
    let key = provider_key("openai", &fake.base_url(), "oa-key");
    let weather = FunctionSpec {
        name: "weather".into(),
        description: "The forecast".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    };
    let deltas: Vec<ChatDelta> =
        collect(chat.chat(&key, &chat_request(vec![weather])).await.unwrap())
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let text: String = deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me check that for you.");
    // Word by word, as the fake streams it.
    assert!(
        deltas
            .iter()
            .filter(|d| matches!(d, ChatDelta::Text(_)))
            .count()
            > 3
    );
    let calls: Vec<&ToolCall> = deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::ToolCall(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_0", "weather")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].arguments).unwrap(),
        json!({"city": "Paris", "days": 3})
    );
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("call_1", "end_call")
    );
    let usage = fake.requests()[0].usage.unwrap();
    assert_eq!(
        deltas.last(),
        Some(&ChatDelta::Usage {
            input_tokens: usage.0,
            output_tokens: usage.1
        })
    );

    let sent = &fake.requests()[0];
    assert_eq!(sent.headers["authorization"], "Bearer oa-key");
    assert_eq!(sent.body["model"], "gpt-4o-mini");
    assert_eq!(sent.body["temperature"], json!(0.3));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "system", "content": "You are a receptionist."},
            {"role": "user", "content": "What's the weather in Paris?"},
        ])
    );
    assert_eq!(
        sent.body["tools"],
        json!([{"type": "function", "function": {"name": "weather", "description": "The forecast",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
    );

    // The next round carries the calls and their answers; no functions, no `tools`.
    let mut request = chat_request(vec![]);
    request.temperature = None;
    request.messages.push(ChatMessage::Assistant {
        text: "Let me check that for you.".into(),
        tool_calls: vec![calls[0].clone()],
    });
    request.messages.push(ChatMessage::Tool {
        call_id: "call_0".into(),
        content: r#"{"sky":"sunny"}"#.into(),
    });
    let deltas = collect(chat.chat(&key, &request).await.unwrap()).await;
    assert_eq!(
        deltas.last().unwrap().as_ref().unwrap(),
        &ChatDelta::Usage {
            input_tokens: 120,
            output_tokens: 7
        }
    );
    let sent = &fake.requests()[1].body;
    assert!(sent.get("tools").is_none() && sent.get("temperature").is_none());
    assert_eq!(
        sent["messages"][2],
        json!({"role": "assistant", "content": "Let me check that for you.",
               "tool_calls": [{"id": "call_0", "type": "function",
                               "function": {"name": "weather", "arguments": calls[0].arguments}}]})
    );
    assert_eq!(
        sent["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_0", "content": "{\"sky\":\"sunny\"}"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_failures_name_the_provider_and_never_leak() {
    let fake = FakeChat::start("oa-key").await;
    let chat = OpenAiChat::with_settings(loopback()).unwrap();
    let key = provider_key("openai", &fake.base_url(), "oa-key");
    let request = chat_request(vec![]);

    fake.fail_next(Fault::Status(500));
    let error = chat.chat(&key, &request).await.err().unwrap();
    assert_eq!(error.0, "openai answered the chat request with HTTP 500");
    assert_safe(&error, &["oa-key"]);

    let wrong = provider_key("openai", &fake.base_url(), "sk-wrong");
    let error = chat.chat(&wrong, &request).await.err().unwrap();
    assert_eq!(error.0, "openai rejected the API key (HTTP 401)");
    assert_safe(&error, &["sk-wrong"]);

    fake.fail_next(Fault::StallBeforeFirstByte);
    let error = chat.chat(&key, &request).await.err().unwrap();
    assert_eq!(
        error.0,
        "openai sent nothing for 500 ms during the chat request"
    );

    // A reply that breaks, or stalls, half-way: what came, then one error.
    for fault in [Fault::BreakMidStream, Fault::StallMidStream] {
        fake.fail_next(fault);
        fake.push(ChatAnswer::text("one two three four five six"));
        let items = collect(chat.chat(&key, &request).await.unwrap()).await;
        let (last, before) = items.split_last().unwrap();
        assert!(before.iter().all(Result::is_ok), "{fault:?}: {items:?}");
        let error = last.as_ref().unwrap_err();
        assert!(
            error.0.starts_with("openai") || error.0.contains("openai"),
            "{error}"
        );
        assert_safe(error, &["oa-key"]);
    }
}

// -------------------------------------------------------------------------------------------
// Speech

fn speak(text: &str, format: AudioFormat) -> SpeakRequest {
    SpeakRequest {
        voice: "voice-7".into(),
        model: None,
        text: text.into(),
        format,
    }
}

/// The bytes of a speech stream, and how many chunks they came in.
async fn audio(stream: voiceplane_runtime::upstream::Streamed<Bytes>) -> (Vec<u8>, usize) {
    let chunks: Vec<Bytes> = collect(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    (chunks.concat(), chunks.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_one_speech_streams_in_order() {
    let fake = FakeSpeech::provider_one("p1-key").await;
    let tts = ProviderOneSpeech::with_settings(loopback(), "").unwrap();
    let key = provider_key("provider_one", &fake.base_url(), "p1-key");
    let text = "Hello, thanks for calling.";
    let (bytes, chunks) = audio(
        tts.speak(&key, &speak(text, AudioFormat::Mulaw8k))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(bytes, FakeSpeech::audio_for(text));
    assert_eq!(bytes.len(), 80 * text.len());
    assert!(chunks > 1, "{chunks} chunks");
    let sent = &fake.requests()[0];
    assert_eq!(sent.headers["authorization"], "Bearer p1-key");
    assert_eq!(sent.headers["cartesia-version"], "2024-06-10");
    assert_eq!(
        sent.body,
        json!({"model_id": "sonic-2", "transcript": text, "voice": {"mode": "id", "id": "voice-7"},
               "output_format": {"container": "raw", "encoding": "pcm_mulaw", "sample_rate": 8000}})
    );

    let mut wide = speak("Hi.", AudioFormat::Linear16k);
    wide.model = Some("sonic-english".into());
    let (bytes, _) = audio(tts.speak(&key, &wide).await.unwrap()).await;
    assert_eq!(bytes, FakeSpeech::linear_audio_for("Hi."));
    assert_eq!(
        fake.requests()[1].body["output_format"],
        json!({"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000})
    );
    assert_eq!(fake.requests()[1].body["model_id"], "sonic-english");

    fake.fail_next(Fault::Status(503));
    let error = tts
        .speak(&key, &speak(text, AudioFormat::Mulaw8k))
        .await
        .err()
        .unwrap();
    assert_eq!(
        error.0,
        "provider_one answered the speech request with HTTP 503"
    );
    assert_safe(&error, &["p1-key"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_two_speech_streams_in_order() {
    let fake = FakeSpeech::provider_two("p2-key").await;
    fake.chunk_bytes(160);
    let tts = ProviderTwoSpeech::with_settings(loopback()).unwrap();
    let key = provider_key("provider_two", &fake.base_url(), "p2-key");
    let text = "One moment please.";
    let (bytes, chunks) = audio(
        tts.speak(&key, &speak(text, AudioFormat::Mulaw8k))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(bytes, FakeSpeech::audio_for(text));
    assert!(chunks > 1, "{chunks} chunks");
    let sent = &fake.requests()[0];
    assert_eq!(sent.path, "/v1/text-to-speech/voice-7/stream");
    assert_eq!(sent.query.as_deref(), Some("output_format=ulaw_8000"));
    assert_eq!(sent.headers["xi-api-key"], "p2-key");
    assert_eq!(
        sent.body,
        json!({"text": text, "model_id": "eleven_flash_v2_5"})
    );

    let (bytes, _) = audio(
        tts.speak(&key, &speak("Hi.", AudioFormat::Linear16k))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(bytes, FakeSpeech::linear_audio_for("Hi."));
    assert_eq!(
        fake.requests()[1].query.as_deref(),
        Some("output_format=pcm_16000")
    );

    // Broken half-way: the first half, then an error naming the provider.
    fake.fail_next(Fault::BreakMidStream);
    let items = collect(
        tts.speak(&key, &speak(text, AudioFormat::Mulaw8k))
            .await
            .unwrap(),
    )
    .await;
    let error = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(
        error.0,
        "the connection to provider_two broke during the speech request"
    );
    let wrong = provider_key("provider_two", &fake.base_url(), "nope");
    let error = tts
        .speak(&wrong, &speak(text, AudioFormat::Mulaw8k))
        .await
        .err()
        .unwrap();
    assert_eq!(error.0, "provider_two rejected the API key (HTTP 401)");
}

// -------------------------------------------------------------------------------------------
// HTTP tools

fn tool(method: &str, url: String, arguments: Value) -> ToolRequest {
    ToolRequest {
        method: method.into(),
        url,
        headers: BTreeMap::from([("x-api-key".to_owned(), "tool-secret".to_owned())]),
        arguments,
        timeout: Duration::from_secs(2),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_tools_answer_json_text_or_an_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/orders"))
        .and(header("x-api-key", "tool-secret"))
        .and(body_json(json!({"order": "A-17"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"status": "shipped"})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/hours"))
        .and(query_param("day", "monday"))
        .and(query_param("week", "3"))
        .respond_with(ResponseTemplate::new(200).set_body_string("nine to five"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_string("é".repeat(MAX_TOOL_ANSWER_BYTES)))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/broken"))
        .respond_with(ResponseTemplate::new(500).set_body_string(FAKE_BODY))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/moved"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", "http://169.254.169.254/"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;

    let tools = GuardedHttpTools::new(TargetPolicy {
        allow_private: true,
    })
    .unwrap();
    let at = |p: &str| format!("{}{p}", server.uri());
    assert_eq!(
        tools
            .call(&tool("POST", at("/orders"), json!({"order": "A-17"})))
            .await,
        json!({"status": "shipped"})
    );
    assert_eq!(
        tools
            .call(&tool(
                "get",
                at("/hours"),
                json!({"day": "monday", "week": 3})
            ))
            .await,
        json!("nine to five")
    );
    let big = tools.call(&tool("GET", at("/big"), json!({}))).await;
    let big = big.as_str().unwrap();
    assert_eq!(big.len(), MAX_TOOL_ANSWER_BYTES);
    assert!(big.chars().all(|c| c == 'é'));
    assert_eq!(
        tools.call(&tool("GET", at("/broken"), json!({}))).await,
        json!({"error": "the tool answered 500"})
    );
    assert_eq!(
        tools.call(&tool("GET", at("/moved"), json!({}))).await,
        json!({"error": "the tool answered 302"})
    );
    let mut slow = tool("GET", at("/slow"), json!({}));
    slow.timeout = Duration::from_millis(200);
    assert_eq!(
        tools.call(&slow).await,
        json!({"error": "the tool did not answer within 200 ms"})
    );
    assert_eq!(
        tools.call(&tool("TRACE", at("/orders"), json!({}))).await,
        json!({"error": "the tool's method is not GET, POST, PUT, PATCH or DELETE"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_tools_follow_the_target_policy() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&server)
        .await;
    let tools = GuardedHttpTools::new(TargetPolicy::default()).unwrap();
    let port = server.address().port();
    // An IP literal is refused before sending; a name is refused once it resolves privately.
    for (url, ip) in [
        (
            format!("http://127.0.0.1:{port}/x?token=url-secret"),
            "127.0.0.1",
        ),
        (
            format!("http://localhost:{port}/x?token=url-secret"),
            "127.0.0.1",
        ),
    ] {
        let answer = tools.call(&tool("POST", url, json!({"a": 1}))).await;
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.starts_with("the tool's address ") && error.contains("is private"),
            "{error}"
        );
        assert!(error.contains(ip) || error.contains("::1"), "{error}");
        assert!(
            !error.contains("url-secret") && !error.contains("tool-secret"),
            "{error}"
        );
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

// -------------------------------------------------------------------------------------------
// The media-stream callers, against a runtime played by the test

/// Accepts one media stream on a loopback port: its URL, and the socket once connected.
async fn one_stream() -> (
    String,
    tokio::task::JoinHandle<tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/runtime/stream", listener.local_addr().unwrap());
    let accepted = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        tokio_tungstenite::accept_async(tcp).await.unwrap()
    });
    (url, accepted)
}

/// The next text message of the runtime's side, as JSON.
async fn read_json<S>(socket: &mut S) -> Value
where
    S: futures_util::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin,
{
    use futures_util::StreamExt;
    loop {
        let message = tokio::time::timeout(SOON, socket.next())
            .await
            .expect("a message in time")
            .expect("the stream is open")
            .unwrap();
        if let tokio_tungstenite::tungstenite::Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

async fn caller_plays_the_agent(twilio: bool) {
    use base64::Engine as _;
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (url, accepted) = one_stream().await;
    let caller = if twilio {
        MediaCaller::twilio(
            &url,
            TwilioStart::new("CA1").parameter("token", "stream-token"),
            Pacing::RealTime,
        )
        .await
    } else {
        MediaCaller::telnyx(
            &url,
            TelnyxStart::new("v3:call-1", Some("c3RhdGU=")),
            Pacing::RealTime,
        )
        .await
    }
    .unwrap();
    let mut runtime = accepted.await.unwrap();
    assert_eq!(read_json(&mut runtime).await["event"], "connected");
    let start = read_json(&mut runtime).await;
    if twilio {
        assert_eq!(start["start"]["customParameters"]["token"], "stream-token");
        assert_eq!(start["start"]["callSid"], "CA1");
        assert_eq!(start["start"]["mediaFormat"]["encoding"], "audio/x-mulaw");
    } else {
        assert_eq!(start["start"]["call_control_id"], "v3:call-1");
        assert_eq!(start["start"]["client_state"], "c3RhdGU=");
        assert_eq!(start["start"]["media_format"]["encoding"], "PCMU");
    }
    let send = |event: Value| Message::text(event.to_string());
    let media = |bytes: usize| {
        send(
            json!({"event": "media", "streamSid": "MZ00000000000000000000000000000001",
                    "media": {"payload": b64.encode(vec![0x2A; bytes])}}),
        )
    };
    let mark = |name: &str| send(json!({"event": "mark", "mark": {"name": name}}));

    // 200 ms of agent audio and a mark: answered once it has played, not before.
    let sent_at = tokio::time::Instant::now();
    runtime.send(media(1600)).await.unwrap();
    runtime.send(mark("first")).await.unwrap();
    let answered = loop {
        let message = read_json(&mut runtime).await;
        if message["event"] == "mark" {
            break message;
        }
        assert_eq!(message["event"], "media", "{message}");
    };
    assert_eq!(answered["mark"]["name"], "first");
    assert!(
        sent_at.elapsed() >= Duration::from_millis(195),
        "{:?}",
        sent_at.elapsed()
    );
    let view = caller.view();
    assert_eq!(view.played_bytes, 1600);
    assert_eq!(view.marks_answered, ["first"]);

    // Ten seconds of audio, a mark, then clear: the mark comes back at once, the audio is
    // dropped unplayed.
    runtime.send(media(80_000)).await.unwrap();
    runtime.send(mark("second")).await.unwrap();
    runtime.send(send(json!({"event": "clear"}))).await.unwrap();
    let view = caller
        .wait_for("the cleared mark answered", SOON, |c| {
            c.marks_answered.len() == 2
        })
        .await;
    assert_eq!(view.clears, 1);
    assert!(view.cleared_bytes > 70_000, "{view:?}");
    assert_eq!(view.played_bytes + view.cleared_bytes, 81_600);
    assert_eq!(view.agent_audio.len(), 81_600);

    // What the caller says and presses reaches the runtime; then it hangs up.
    let said = caller.say(0x11, Duration::from_millis(100));
    let heard = async {
        let mut frames = 0;
        let mut seq = 0u64;
        while frames < 5 {
            let message = read_json(&mut runtime).await;
            if message["event"] != "media" {
                continue;
            }
            let number = if twilio {
                &message["sequenceNumber"]
            } else {
                &message["sequence_number"]
            };
            let number: u64 = number.as_str().unwrap().parse().unwrap();
            assert!(number > seq, "sequence numbers grow");
            seq = number;
            assert_eq!(message["media"]["track"], "inbound");
            let payload = b64
                .decode(message["media"]["payload"].as_str().unwrap())
                .unwrap();
            assert_eq!(payload.len(), 160);
            if payload.iter().all(|b| *b == 0x11) {
                frames += 1;
            } else {
                assert!(payload.iter().all(|b| *b == SILENCE));
            }
        }
    };
    tokio::join!(said, heard);
    caller.press('5');
    let dtmf = loop {
        let message = read_json(&mut runtime).await;
        if message["event"] == "dtmf" {
            break message;
        }
    };
    assert_eq!(dtmf["dtmf"]["digit"], "5");
    caller.hang_up().await;
    let stop = loop {
        let message = read_json(&mut runtime).await;
        if message["event"] == "stop" {
            break message;
        }
    };
    assert!(caller.view().stopped);
    if twilio {
        assert_eq!(stop["stop"]["callSid"], "CA1");
    } else {
        assert_eq!(stop["stop"]["call_control_id"], "v3:call-1");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twilio_caller_plays_marks_and_clears() {
    caller_plays_the_agent(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telnyx_caller_plays_marks_and_clears() {
    caller_plays_the_agent(false).await;
}
