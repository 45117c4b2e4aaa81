//! The built-in runtime answering calls end to end (DESIGN §24): a connected number, an agent
//! with a prompt, a voice, an HTTP tool and `end_call`, no runtime URL anywhere; Twilio's
//! voice request is answered with a stream back to voiceplane, and a caller playing Twilio's
//! (or Telnyx's) side of it talks to the agent through fakes of Deepgram, the chat model and
//! the speech provider.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::runtime::RuntimeSettings;
use voiceplane_runtime::call::Limits;
use voiceplane_runtime::{Runtime, RuntimeConfig};
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::voice::*;
use voiceplane_suite::*;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::line::{Line, NUMBER, Provider, SID};

const DG_KEY: &str = "dg-secret-key";
const OA_KEY: &str = "oa-secret-key";
const P1_KEY: &str = "p1-secret-key";

/// The caller's phrases, by the μ-law byte they are made of.
const ASKS_HOURS: u8 = 0x11;
const SAYS_BYE: u8 = 0x22;
const TALKS_OVER: u8 = 0x33;

/// The upstreams' fakes and the line whose server runs the built-in runtime against them.
struct Voice {
    stt: FakeDeepgram,
    llm: FakeChat,
    tts: FakeSpeech,
    tool: MockServer,
    line: Line,
}

impl Voice {
    async fn open(ctx: &TestContext, kind: Provider, limits: Limits, max_calls: usize) -> Self {
        let stt = FakeDeepgram::start(DG_KEY).await;
        let llm = FakeChat::start(OA_KEY).await;
        let tts = FakeSpeech::provider_one(P1_KEY).await;
        let tool = MockServer::start().await;
        let upstreams = upstreams((&stt, DG_KEY), (&llm, OA_KEY), (&tts, P1_KEY));
        let line = Line::open_configured(
            ctx,
            kind,
            Duration::from_secs(10),
            true,
            |s| {
                s.with_runtime(RuntimeSettings::from_secret(true, b"test master key"))
                    .with_blobs(Arc::new(
                        OpendalBlobStore::new(BlobConfig::Memory).expect("a memory store"),
                    ))
                    .with_document_processor(
                        Arc::new(voiceplane_extract::Processor::new(
                            voiceplane_extract::Limits::default(),
                        )),
                        Duration::from_secs(20),
                    )
            },
            move |api| {
                let runtime = Runtime::new(
                    api.service().clone(),
                    upstreams,
                    RuntimeConfig {
                        max_calls,
                        limits,
                        ..RuntimeConfig::default()
                    },
                );
                api.with_media(Arc::new(runtime))
            },
        )
        .await;
        // No runtime URL anywhere: the built-in runtime takes the calls.
        let (status, body) = line
            .c
            .send(
                Method::PATCH,
                "/api/organization/settings",
                Some(json!({"runtime_stream_url": null})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        Self {
            stt,
            llm,
            tts,
            tool,
            line,
        }
    }

    /// Gives the line's agent a prompt with a variable, an HTTP tool `hours` at the fake
    /// tool server, `end_call`, `speak_first` and recording.
    async fn agent(&self) {
        Mock::given(method("POST"))
            .and(path("/hours"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"opens": "9:00"})))
            .mount(&self.tool)
            .await;
        let tool = self
            .line
            .c
            .create(
                "/api/tools",
                json!({"tool_name": "hours", "tool_description": "Opening hours of a day.",
                       "url": format!("{}/hours", self.tool.uri()), "http_method": "POST",
                       "parameters": {"type": "object",
                                      "properties": {"day": {"type": "string"}}}}),
            )
            .await;
        let (status, body) = self
            .line
            .c
            .send(
                Method::PATCH,
                &format!("/api/agents/{}", self.line.agent_id),
                Some(json!({
                    "system_prompt": "You are the host of {{restaurant}}.",
                    "speak_first": true, "end_call_tool": true, "recording_enabled": true,
                    "voicemail_detection": false,
                    "custom_tools": [tool["tool_id"]],
                })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// Twilio asks for the TwiML of an incoming call `provider_call_id`: the stream URL and
    /// the token it names.
    async fn twilio_call(&self, provider_call_id: &str) -> (String, String, String) {
        let twiml = self
            .line
            .twilio(
                "/voice",
                &[
                    ("CallSid", provider_call_id),
                    ("From", "+33612345678"),
                    ("To", NUMBER),
                ],
            )
            .await
            .text()
            .await
            .expect("TwiML");
        let attr = |name: &str, before: &str| {
            twiml
                .split(before)
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("no {name} in {twiml}"))
                .to_owned()
        };
        let url = attr("stream url", "<Stream url=\"");
        let token = attr("token", "name=\"token\" value=\"");
        let call_sid = attr("call_sid", "name=\"call_sid\" value=\"");
        (url, token, call_sid)
    }

    async fn call(&self, call_sid: &str) -> Value {
        let (status, body) = self.line.c.get(&format!("/api/calls/{call_sid}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["data"].clone()
    }

    /// The call once the runtime recorded how it ended.
    async fn ended(&self, call_sid: &str) -> Value {
        eventually("the runtime records the call's end", || async {
            !self.call(call_sid).await["end_reason"].is_null()
        })
        .await;
        self.call(call_sid).await
    }

    async fn transcript(&self, call_sid: &str) -> Vec<Value> {
        let (status, body) = self
            .line
            .c
            .get(&format!("/api/calls/{call_sid}/messages?limit=100"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["data"].as_array().cloned().unwrap_or_default()
    }

    async fn close(self) {
        self.line.close().await;
    }
}

/// The hang-up Twilio is sent, answered as Twilio does.
async fn twilio_hangs_up(line: &Line) {
    Mock::given(method("POST"))
        .and(path_regex(format!(
            "^/2010-04-01/Accounts/{SID}/Calls/[A-Za-z0-9]+\\.json$"
        )))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"sid": "CA1", "status": "completed"})),
        )
        .mount(&line.provider)
        .await;
}

const LONG: Duration = Duration::from_secs(20);

async fn an_incoming_call_is_answered_by_the_agent(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 10).await;
    v.agent().await;
    twilio_hangs_up(&v.line).await;
    v.stt.script(ASKS_HOURS, "when do you open on monday");
    v.stt.script(SAYS_BYE, "thanks that is all");
    v.llm
        .push(ChatAnswer::text("Hello, thanks for calling.").with_usage(20, 6));
    v.llm
        .push(ChatAnswer::tool_call("hours", json!({"day": "monday"})).with_usage(40, 8));
    v.llm
        .push(ChatAnswer::text("We open at nine.").with_usage(60, 5));
    v.llm.push(
        ChatAnswer::text("Goodbye.")
            .and_tool_call("end_call", json!({"reason": "the caller is done"}))
            .with_usage(80, 4),
    );
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000101").await;
    assert!(
        url.ends_with(&format!("/runtime/twilio/{call_sid}")),
        "{url}"
    );
    assert!(url.starts_with("ws://"), "{url}");
    let opened = std::time::Instant::now();
    let caller = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000101").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    let greeting = FakeSpeech::audio_for("Hello, thanks for calling.").len();
    caller
        .wait_for("the greeting is played", LONG, |c| {
            c.played_bytes >= greeting
        })
        .await;
    caller.say(ASKS_HOURS, Duration::from_millis(400)).await;
    let answer = FakeSpeech::audio_for("We open at nine.").len();
    caller
        .wait_for("the answer is played", LONG, |c| {
            c.played_bytes >= greeting + answer
        })
        .await;
    caller.say(SAYS_BYE, Duration::from_millis(400)).await;
    let bye = FakeSpeech::audio_for("Goodbye.").len();
    let heard = caller
        .wait_for("the goodbye is played", LONG, |c| {
            c.played_bytes >= greeting + answer + bye
        })
        .await;
    assert_eq!(heard.clears, 0);
    let call = v.ended(&call_sid).await;
    assert_eq!(call["end_reason"], "tool_end_call", "{call}");
    assert_eq!(call["turn_count"], 2, "{call}");
    assert_eq!(call["latency"]["turns"], 2, "{call}");
    assert!(call["latency"]["max_ms"].as_f64().unwrap() >= 0.0, "{call}");

    // The call was hung up through Twilio after its last words.
    eventually("the call is hung up through Twilio", || async {
        v.line
            .provider
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .any(|r| {
                r.method.as_str() == "POST"
                    && r.url
                        .path()
                        .contains("/Calls/CA00000000000000000000000000000101")
            })
    })
    .await;

    // The prompt's variable was filled, and the tool's answer reached the model.
    let requests = v.llm.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].body["messages"][0]["role"], "system");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["hours", "end_call"]);
    let tool_answer = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool's answer")
        .clone();
    assert!(
        tool_answer["content"].as_str().unwrap().contains("9:00"),
        "{tool_answer}"
    );
    let hours_calls = v.tool.received_requests().await.unwrap_or_default();
    assert_eq!(hours_calls.len(), 1);
    assert_eq!(
        serde_json::from_slice::<Value>(&hours_calls[0].body).unwrap(),
        json!({"day": "monday"})
    );

    // The transcript, in order, with the tool calls.
    eventually("the whole transcript is kept", || async {
        v.transcript(&call_sid).await.len() >= 7
    })
    .await;
    let transcript = v.transcript(&call_sid).await;
    let said: Vec<(String, String)> = transcript
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["tool_name"]
                    .as_str()
                    .or(m["text"].as_str())
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    let expected = [
        ("agent", "Hello, thanks for calling."),
        ("user", "when do you open on monday"),
        ("tool", "hours"),
        ("agent", "We open at nine."),
        ("user", "thanks that is all"),
        ("tool", "end_call"),
        ("agent", "Goodbye."),
    ];
    assert_eq!(
        said,
        expected
            .iter()
            .map(|(r, t)| ((*r).to_owned(), (*t).to_owned()))
            .collect::<Vec<_>>()
    );
    assert_eq!(transcript[2]["tool_arguments"], json!({"day": "monday"}));
    assert_eq!(transcript[2]["tool_result"], json!({"opens": "9:00"}));

    // Usage, recorded by the runtime itself.
    eventually("the runtime's usage is charged", || async {
        v.call(&call_sid).await["cost_breakdown"]
            .as_array()
            .is_some_and(|items| items.len() >= 4)
    })
    .await;
    let call = v.call(&call_sid).await;
    let items = call["cost_breakdown"].as_array().unwrap();
    let quantity = |component: &str, unit: &str| {
        items
            .iter()
            .find(|i| i["component"] == component && i["unit"] == unit)
            .and_then(|i| i["quantity"].as_f64())
            .unwrap_or_else(|| panic!("no {component} {unit} in {items:?}"))
    };
    assert_eq!(quantity("llm", "input_tokens"), 200.0);
    assert_eq!(quantity("llm", "output_tokens"), 23.0);
    let spoken = "Hello, thanks for calling. We open at nine. Goodbye.";
    assert_eq!(
        quantity("tts", "characters"),
        (spoken.chars().count() - 2) as f64
    );
    assert!(quantity("stt", "seconds") > 0.5);

    // The stereo recording, as long as the call, the caller on the left and the agent on
    // the right.
    let download = format!("/api/calls/{call_sid}/recording/download");
    eventually("the recording is stored", || async {
        let answer = v.line.c.request(Method::GET, &download).send().await;
        answer.is_ok_and(|a| a.status() == StatusCode::OK)
    })
    .await;
    let wav = v
        .line
        .c
        .request(Method::GET, &download)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&wav[..4], b"RIFF");
    assert_eq!(u16::from_le_bytes([wav[22], wav[23]]), 2, "stereo");
    assert_eq!(
        u32::from_le_bytes([wav[24], wav[25], wav[26], wav[27]]),
        8000
    );
    let data = wav
        .windows(4)
        .position(|w| w == b"data")
        .expect("a data chunk")
        + 8;
    let samples: Vec<i16> = wav[data..]
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    let seconds = samples.len() as f64 / 2.0 / 8000.0;
    let agent_seconds = (greeting + answer + bye) as f64 / 8000.0;
    assert!(
        seconds >= agent_seconds + 0.8 && seconds < opened.elapsed().as_secs_f64() + 1.0,
        "{seconds} s of recording"
    );
    assert!(
        samples.chunks(2).any(|f| f[0] != 0),
        "the caller is on the left"
    );
    assert!(
        samples.chunks(2).any(|f| f[1] != 0),
        "the agent is on the right"
    );
    caller.hang_up().await;
    // Nothing of a key reached the caller.
    for message in caller.view().messages {
        let text = message.to_string();
        assert!(!text.contains(DG_KEY) && !text.contains(OA_KEY) && !text.contains(P1_KEY));
    }
    assert!(v.tts.requests().iter().all(|r| r.voice == "v1"));
    v.close().await;
}

async fn a_stream_without_the_right_token_is_refused(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 10).await;
    v.agent().await;
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000102").await;
    for start in [
        TwilioStart::new("CA00000000000000000000000000000102"),
        TwilioStart::new("CA00000000000000000000000000000102").parameter("token", "rt_wrong"),
        // The right token for another provider call.
        TwilioStart::new("CA00000000000000000000000000000999").parameter("token", &token),
    ] {
        let caller = MediaCaller::twilio(&url, start, Pacing::Fast)
            .await
            .expect("the upgrade is answered");
        let seen = caller.wait_closed(LONG).await;
        assert!(seen.agent_audio.is_empty());
    }
    let call = v.call(&call_sid).await;
    assert_eq!(call["status"], "ringing", "{call}");
    assert!(call["end_reason"].is_null(), "{call}");
    assert!(v.stt.sessions().is_empty());
    assert!(v.llm.requests().is_empty());
    assert!(v.transcript(&call_sid).await.is_empty());
    v.close().await;
}

async fn the_caller_hanging_up_ends_the_call(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 10).await;
    v.agent().await;
    v.llm.push(ChatAnswer::text("Hello, thanks for calling."));
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000103").await;
    let caller = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000103").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    caller
        .wait_for("the greeting starts", LONG, |c| !c.agent_audio.is_empty())
        .await;
    caller.hang_up().await;
    let call = v.ended(&call_sid).await;
    assert_eq!(call["end_reason"], "user_hangup", "{call}");
    v.close().await;
}

async fn a_caller_talking_over_the_agent_cuts_it_short(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 10).await;
    v.agent().await;
    v.stt.script(TALKS_OVER, "sorry can i ask something");
    let long = "Welcome to our restaurant, where we serve the finest food in the whole city. \
                Tonight we have many specials that I would love to tell you about in detail.";
    v.llm.push(ChatAnswer::text(long));
    v.llm.push(ChatAnswer::text("Of course."));
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000104").await;
    let caller = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000104").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    caller
        .wait_for("a second of the greeting is played", LONG, |c| {
            c.played_bytes >= 8000
        })
        .await;
    caller.say(TALKS_OVER, Duration::from_millis(300)).await;
    let seen = caller
        .wait_for("the agent's audio is cleared", LONG, |c| c.clears >= 1)
        .await;
    assert!(seen.cleared_bytes > 0 || seen.queued_bytes == 0);
    eventually("the cut greeting and the answer are kept", || async {
        v.transcript(&call_sid).await.len() >= 3
    })
    .await;
    let transcript = v.transcript(&call_sid).await;
    let cut = &transcript[0];
    assert_eq!(cut["role"], "agent");
    assert_eq!(cut["interrupted"], true, "{cut}");
    let heard = cut["text"].as_str().unwrap();
    assert!(!heard.is_empty() && heard.len() < long.len(), "{heard}");
    assert!(long.starts_with(heard), "{heard}");
    assert_eq!(transcript[1]["text"], "sorry can i ask something");
    // The model was told only what the caller heard.
    let second = &v.llm.requests()[1].body["messages"];
    let told = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the agent's cut words")
        .clone();
    assert_eq!(told["content"], heard);
    caller.hang_up().await;
    v.close().await;
}

async fn silence_ends_the_call(ctx: &TestContext) {
    let limits = Limits {
        silence_prompt: Duration::from_millis(600),
        silence_end: Duration::from_millis(1500),
        ..Limits::default()
    };
    let v = Voice::open(ctx, Provider::Twilio, limits, 10).await;
    v.agent().await;
    twilio_hangs_up(&v.line).await;
    v.llm.push(ChatAnswer::text("Hello."));
    v.llm.push(ChatAnswer::text("Are you still there?"));
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000105").await;
    let _caller = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000105").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    let call = v.ended(&call_sid).await;
    assert_eq!(call["end_reason"], "silence_timeout", "{call}");
    assert_eq!(
        v.llm.requests().len(),
        2,
        "greeted, then asked to re-engage once"
    );
    v.close().await;
}

async fn a_model_failing_twice_ends_the_call_without_leaking_its_key(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 10).await;
    v.agent().await;
    twilio_hangs_up(&v.line).await;
    v.llm.fail_always(Some(Fault::Status(500)));
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000106").await;
    let _caller = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000106").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    let call = v.ended(&call_sid).await;
    assert_eq!(call["end_reason"], "runtime_error", "{call}");
    assert_eq!(v.llm.requests().len(), 2, "asked once more, then given up");
    assert!(!call.to_string().contains(OA_KEY));
    v.close().await;
}

async fn a_full_runtime_refuses_the_next_stream(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 1).await;
    v.agent().await;
    twilio_hangs_up(&v.line).await;
    v.llm.otherwise(|_| ChatAnswer::text("Hello."));
    let (url, token, _) = v.twilio_call("CA00000000000000000000000000000107").await;
    let first = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000107").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the first stream opens");
    first
        .wait_for("the first call is running", LONG, |c| {
            !c.agent_audio.is_empty()
        })
        .await;
    let (url, token, second_sid) = v.twilio_call("CA00000000000000000000000000000108").await;
    let second = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000108").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the upgrade is answered");
    second.wait_closed(LONG).await;
    let call = v.ended(&second_sid).await;
    assert_eq!(call["end_reason"], "runtime_busy", "{call}");
    first.hang_up().await;
    v.close().await;
}

/// Telnyx: the answer command streams the call to the runtime with its token in
/// `client_state`; the agent greets, answers, and `end_call` hangs up through Telnyx.
async fn a_telnyx_call_is_answered_by_the_agent(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Telnyx, Limits::default(), 10).await;
    v.agent().await;
    for action in ["answer", "hangup"] {
        Mock::given(method("POST"))
            .and(path_regex(format!(r"^/v2/calls/.*/actions/{action}$")))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"data": {"result": "ok"}})),
            )
            .mount(&v.line.provider)
            .await;
    }
    v.stt.script(ASKS_HOURS, "when do you open on monday");
    v.llm.push(ChatAnswer::text("Hello, thanks for calling."));
    v.llm.push(
        ChatAnswer::text("We open at nine. Goodbye.")
            .and_tool_call("end_call", json!({"reason": "answered"})),
    );
    let resp = v
        .line
        .telnyx(
            ctx,
            "call.initiated",
            json!({"call_control_id": "v3:voice-1", "connection_id": super::line::CONNECTION,
                   "direction": "incoming", "from": "+33612345678", "to": NUMBER}),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let answer_path = "/v2/calls/v3:voice-1/actions/answer";
    eventually("the answer is sent", || async {
        !v.line.sent_to(answer_path).await.is_empty()
    })
    .await;
    let answer: Value = serde_json::from_slice(&v.line.sent_to(answer_path).await[0].body).unwrap();
    let url = answer["stream_url"].as_str().unwrap().to_owned();
    let state = answer["client_state"].as_str().unwrap().to_owned();
    let call_sid = voiceplane_core::telephony::call_sid_of_client_state(&state).unwrap();
    assert!(
        url.ends_with(&format!("/runtime/telnyx/{call_sid}")),
        "{url}"
    );
    assert!(voiceplane_core::telephony::token_of_client_state(&state).is_some());
    assert_eq!(answer["stream_bidirectional_codec"], "PCMU");
    let caller = MediaCaller::telnyx(
        &url,
        TelnyxStart::new("v3:voice-1", Some(&state)),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    let greeting = FakeSpeech::audio_for("Hello, thanks for calling.").len();
    caller
        .wait_for("the greeting is played", LONG, |c| {
            c.played_bytes >= greeting
        })
        .await;
    caller.say(ASKS_HOURS, Duration::from_millis(400)).await;
    let answer_audio =
        FakeSpeech::audio_for("We open at nine.").len() + FakeSpeech::audio_for("Goodbye.").len();
    caller
        .wait_for("the answer is played", LONG, |c| {
            c.played_bytes >= greeting + answer_audio
        })
        .await;
    let call = v.ended(&call_sid).await;
    assert_eq!(call["end_reason"], "tool_end_call", "{call}");
    eventually("the call is hung up through Telnyx", || async {
        !v.line
            .sent_to("/v2/calls/v3:voice-1/actions/hangup")
            .await
            .is_empty()
    })
    .await;
    let marks = caller.view().marks;
    assert_eq!(marks.len(), 3, "a mark after each sentence: {marks:?}");
    v.close().await;
}

/// A key pressed reaches the model as the caller's words, and the model's knowledge-base
/// search is answered from the agent's documents.
async fn dtmf_and_the_knowledge_base_reach_the_model(ctx: &TestContext) {
    let v = Voice::open(ctx, Provider::Twilio, Limits::default(), 10).await;
    v.agent().await;
    let document = v
        .line
        .c
        .create(
            "/api/knowledge-base",
            json!({"name": "Menu", "text": "The chef's special on Fridays is grilled octopus."}),
        )
        .await;
    let document_id = document["documentation_id"].as_str().unwrap().to_owned();
    let path = format!("/api/knowledge-base/{document_id}");
    eventually("the document is processed", || async {
        v.line.c.get(&path).await.1["data"]["processing_status"] == "completed"
    })
    .await;
    let (status, body) = v
        .line
        .c
        .send(
            Method::PATCH,
            &format!("/api/agents/{}", v.line.agent_id),
            Some(json!({"kb_document_ids": [document_id], "speak_first": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    v.llm.push(ChatAnswer::tool_call(
        "search_knowledge_base",
        json!({"query": "friday special octopus"}),
    ));
    v.llm.push(ChatAnswer::text("It is grilled octopus."));
    let (url, token, call_sid) = v.twilio_call("CA00000000000000000000000000000109").await;
    let caller = MediaCaller::twilio(
        &url,
        TwilioStart::new("CA00000000000000000000000000000109").parameter("token", &token),
        Pacing::RealTime,
    )
    .await
    .expect("the stream opens");
    caller.press('5');
    let answer = FakeSpeech::audio_for("It is grilled octopus.").len();
    caller
        .wait_for("the answer is played", LONG, |c| c.played_bytes >= answer)
        .await;
    let requests = v.llm.requests();
    let first = requests[0].body["messages"].as_array().unwrap().clone();
    assert_eq!(first.last().unwrap()["content"], "(pressed 5)", "{first:?}");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"search_knowledge_base"), "{tools:?}");
    let found = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the search's answer")
        .clone();
    assert!(
        found["content"]
            .as_str()
            .unwrap()
            .contains("grilled octopus"),
        "{found}"
    );
    caller.hang_up().await;
    let call = v.ended(&call_sid).await;
    assert_eq!(call["end_reason"], "user_hangup", "{call}");
    v.close().await;
}

db_tests!(
    dtmf_and_the_knowledge_base_reach_the_model,
    an_incoming_call_is_answered_by_the_agent,
    a_telnyx_call_is_answered_by_the_agent,
    a_stream_without_the_right_token_is_refused,
    the_caller_hanging_up_ends_the_call,
    a_caller_talking_over_the_agent_cuts_it_short,
    silence_ends_the_call,
    a_model_failing_twice_ends_the_call_without_leaking_its_key,
    a_full_runtime_refuses_the_next_stream,
);
