//! Post-call analysis (DESIGN §21) against a fake chat-completions server that records every
//! request: one request per completed call with a transcript, the strict schema built from the
//! agent's fields, the answer stored and checked, bad answers and outages retried then
//! `failed` without an API caller ever seeing a 5xx, the re-run, truncation, the `successful`
//! filter and `success_rate`, and the agent's settings checked with their key never shown.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_clients::{AnalysisSettings, HttpChatCompletions};
use voiceplane_core::Service;
use voiceplane_core::webhooks::TargetPolicy;
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::telephony::line::Runner;

const KEY: &str = "sk-analysis-secret-123";
const COMPLETIONS: &str = "/v1/chat/completions";

/// A server whose service sends analyses to `model`'s fake, with a job runner.
struct Analysed {
    model: MockServer,
    server: TestServer,
    c: ApiCaller,
    runner: Runner,
}

impl Analysed {
    async fn open(ctx: &TestContext) -> Self {
        let model = MockServer::start().await;
        let policy = TargetPolicy {
            allow_private: true,
        };
        let client = HttpChatCompletions::new(AnalysisSettings {
            timeout: Duration::from_secs(5),
            policy,
            ..AnalysisSettings::default()
        })
        .unwrap();
        let mut configured: Option<Service> = None;
        let server = TestServer::start_configured(ctx, |s| {
            let s = s.with_analyzer(Arc::new(client), policy);
            configured = Some(s.clone());
            s
        })
        .await;
        let runner = Runner::start(&configured.unwrap(), "analysis-runner");
        let c = ApiCaller::bootstrap(ctx, &server, "Bistro").await;
        Self {
            model,
            server,
            c,
            runner,
        }
    }

    async fn close(self) {
        self.runner.stop().await;
        self.server.stop().await;
    }

    /// The model answers `content` (at most `times` times when given).
    async fn answers(&self, content: &str, times: Option<u64>) {
        let mock = Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]})));
        match times {
            Some(n) => mock.up_to_n_times(n).mount(&self.model).await,
            None => mock.mount(&self.model).await,
        }
    }

    async fn requests(&self) -> Vec<Request> {
        self.model
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.url.path() == COMPLETIONS)
            .collect()
    }

    /// An agent analysing with the three fields of the worked example.
    async fn agent(&self, extra: Value) -> Value {
        let mut body = agent_body("Host");
        body["analysis"] = merged(
            json!({
                "summary": true,
                "success_criteria": "The caller booked a table.",
                "fields": [
                    {"name": "party_size", "type": "number", "description": "How many guests",
                     "required": true},
                    {"name": "booking_date", "type": "string",
                     "description": "The date booked, YYYY-MM-DD"},
                    {"name": "occasion", "type": "enum", "description": "What they celebrate",
                     "choices": ["birthday", "anniversary", "none"]},
                ],
                "base_url": self.model.uri(),
                "api_key": KEY,
                "model": "gpt-4o-mini",
            }),
            extra,
        );
        self.c.create("/api/agents", body).await
    }

    /// A call of `agent_id` in progress, with `messages` of transcript.
    async fn call(&self, agent_id: &str, messages: &[(&str, &str)]) -> String {
        let call = self
            .c
            .create(
                "/api/calls",
                json!({"agent_id": agent_id, "to_number": "+14155550100",
                       "call_type": "inbound", "status": "in_progress"}),
            )
            .await;
        let sid = call["call_sid"].as_str().unwrap().to_owned();
        if !messages.is_empty() {
            self.transcript(&sid, messages).await;
        }
        sid
    }

    async fn transcript(&self, sid: &str, messages: &[(&str, &str)]) {
        let messages: Vec<Value> = messages
            .iter()
            .map(|(role, text)| json!({"role": role, "text": text}))
            .collect();
        let (status, body) = self
            .c
            .post(
                &format!("/api/calls/{sid}/messages"),
                json!({ "messages": messages }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }

    async fn complete(&self, sid: &str) {
        let (status, body) = self
            .c
            .send(
                Method::PATCH,
                &format!("/api/calls/{sid}"),
                Some(json!({"status": "completed"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// The call once its analysis has ended (`completed` or `failed`).
    async fn analysed(&self, sid: &str) -> Value {
        let path = format!("/api/calls/{sid}");
        eventually("the analysis ends", || async {
            let (status, body) = self.c.get(&path).await;
            assert_eq!(status, StatusCode::OK, "an API read never fails: {body}");
            matches!(
                body["data"]["analysis_status"].as_str(),
                Some("completed" | "failed")
            )
        })
        .await;
        self.c.get(&path).await.1["data"].clone()
    }
}

const BOOKING: &[(&str, &str)] = &[
    ("agent", "Bistro Lumière, how can I help?"),
    (
        "user",
        "Hi, a table for four on the twelfth of March, it's my wife's birthday.",
    ),
    (
        "agent",
        "Booked: four guests on 2027-03-12. Happy birthday to her!",
    ),
];

const ANSWER: &str = r#"{"summary": "The caller booked a table for four on 12 March for a birthday.",
  "successful": true,
  "fields": {"party_size": 4, "booking_date": "2027-03-12", "occasion": "birthday"}}"#;

/// The worked example: one request per completed call with a transcript, whichever of the
/// two came last; the strict schema of the agent's fields and its key; the answer stored with
/// `call.analyzed`; later messages ask nothing; the filter and the rate; the re-run.
async fn a_completed_call_is_analysed_once(ctx: &TestContext) {
    let a = Analysed::open(ctx).await;
    a.answers(ANSWER, None).await;
    let agent = a.agent(json!({})).await;
    let shown = agent.to_string();
    assert!(!shown.contains(KEY), "{shown}");
    assert_eq!(agent["analysis"]["api_key_set"], true);
    assert_eq!(agent["analysis"]["max_transcript_chars"], 60_000);
    assert_eq!(agent["analysis"]["fields"][1]["required"], false);
    let agent_id = agent["agent_id"].as_str().unwrap();

    let sid = a.call(agent_id, BOOKING).await;
    assert_eq!(
        a.c.get(&format!("/api/calls/{sid}")).await.1["data"]["analysis_status"],
        Value::Null,
        "a call in progress is not analysed"
    );
    a.complete(&sid).await;
    let call = a.analysed(&sid).await;
    assert_eq!(call["analysis_status"], "completed", "{call}");
    let analysis = &call["analysis"];
    assert_eq!(analysis["successful"], true);
    assert_eq!(
        analysis["fields"],
        json!({"party_size": 4, "booking_date": "2027-03-12", "occasion": "birthday"})
    );
    assert!(analysis["summary"].as_str().unwrap().contains("four"));
    assert_eq!(analysis["model"], "gpt-4o-mini");
    assert!(analysis["analyzed_at"].is_string());
    assert_eq!(call["analysis_error"], Value::Null);

    let sent = a.requests().await;
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].headers["authorization"].to_str().unwrap(),
        format!("Bearer {KEY}")
    );
    let body: Value = sent[0].body_json().unwrap();
    assert_eq!(body["model"], "gpt-4o-mini");
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "call_analysis");
    assert_eq!(format["json_schema"]["strict"], true);
    let schema = &format["json_schema"]["schema"];
    assert_eq!(
        schema["required"],
        json!(["fields", "successful", "summary"])
    );
    assert_eq!(schema["additionalProperties"], false);
    let fields = &schema["properties"]["fields"];
    assert_eq!(
        fields["required"],
        json!(["booking_date", "occasion", "party_size"])
    );
    assert_eq!(fields["properties"]["party_size"]["type"], "number");
    assert_eq!(
        fields["properties"]["booking_date"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        fields["properties"]["occasion"]["enum"],
        json!(["birthday", "anniversary", "none", null])
    );
    let transcript = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        transcript.contains("user: Hi, a table for four"),
        "{transcript}"
    );
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("The caller booked a table."),
        "{body}"
    );
    let (_, events) = a.c.get("/api/events?type=call.analyzed").await;
    assert_eq!(events["data"][0]["data"]["call_sid"], sid.as_str());
    assert_eq!(events["data"][0]["data"]["analysis_status"], "completed");

    // More messages after the analysis ask nothing more.
    a.transcript(&sid, &[("agent", "Goodbye!")]).await;
    // The transcript arriving after the end: analysed once it arrives.
    let late = a.call(agent_id, &[]).await;
    a.complete(&late).await;
    a.transcript(&late, BOOKING).await;
    assert_eq!(a.analysed(&late).await["analysis_status"], "completed");
    // A call that never gets a transcript is never sent.
    let silent = a.call(agent_id, &[]).await;
    a.complete(&silent).await;
    assert_eq!(a.requests().await.len(), 2);
    assert_eq!(
        a.c.get(&format!("/api/calls/{silent}")).await.1["data"]["analysis_status"],
        Value::Null
    );

    let (_, found) = a.c.get("/api/calls?successful=true").await;
    let found: Vec<&str> = found["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call_sid"].as_str().unwrap())
        .collect();
    assert_eq!(found, [late.as_str(), sid.as_str()]);
    let (_, none) = a.c.get("/api/calls?successful=false").await;
    assert!(none["data"].as_array().unwrap().is_empty());
    let (_, stats) = a.c.get("/api/calls/stats?group_by=agent").await;
    assert_eq!(stats["data"]["totals"]["success_rate"], 1.0, "{stats}");
    assert_eq!(stats["data"]["totals"]["calls"], 3);

    // The re-run: 202 pending, then a fresh answer.
    let (status, body) =
        a.c.post(&format!("/api/calls/{sid}/analyze"), json!({}))
            .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["data"]["analysis_status"], "pending");
    assert_eq!(a.analysed(&sid).await["analysis_status"], "completed");
    assert_eq!(a.requests().await.len(), 3);
    let (status, body) =
        a.c.post(&format!("/api/calls/{silent}/analyze"), json!({}))
            .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("transcript"));
    let plain = a.c.create("/api/agents", agent_body("Plain")).await;
    let unanalysed = a.call(plain["agent_id"].as_str().unwrap(), BOOKING).await;
    a.complete(&unanalysed).await;
    let (status, _) =
        a.c.post(&format!("/api/calls/{unanalysed}/analyze"), json!({}))
            .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) =
        a.c.post(
            "/api/calls/call_000000000000000000000000/analyze",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(a.requests().await.len(), 3);
    a.close().await;
}

/// Answers that are not JSON, or break the schema, are retried; after the last attempt the
/// analysis is `failed` with a sentence that quotes neither the answer nor the key. An
/// outage (HTTP 500) is the same, and the API keeps answering the call with 200.
async fn bad_answers_are_retried_then_failed(ctx: &TestContext) {
    let a = Analysed::open(ctx).await;
    let agent = a.agent(json!({})).await;
    let agent_id = agent["agent_id"].as_str().unwrap();

    // Two answers that break the schema, then a good one.
    a.answers(
        r#"{"summary": "x", "successful": true, "fields": {"party_size": "four", "booking_date": null, "occasion": null}}"#,
        Some(1),
    )
    .await;
    a.answers("Sure! The party was four people.", Some(1)).await;
    a.answers(ANSWER, Some(1)).await;
    let sid = a.call(agent_id, BOOKING).await;
    a.complete(&sid).await;
    let call = a.analysed(&sid).await;
    assert_eq!(call["analysis_status"], "completed", "{call}");
    assert_eq!(a.requests().await.len(), 3);

    // Never an acceptable answer: four attempts, then failed.
    a.answers("I cannot help with that.", None).await;
    let bad = a.call(agent_id, BOOKING).await;
    a.complete(&bad).await;
    let call = a.analysed(&bad).await;
    assert_eq!(call["analysis_status"], "failed", "{call}");
    let error = call["analysis_error"].as_str().unwrap();
    assert!(error.contains("not JSON"), "{error}");
    assert!(
        !error.contains("cannot help") && !error.contains(KEY),
        "{error}"
    );
    assert_eq!(call["analysis"], Value::Null);
    assert_eq!(a.requests().await.len(), 3 + 4);
    let (_, events) = a.c.get("/api/events?type=call.analyzed").await;
    assert_eq!(events["data"][0]["data"]["analysis_status"], "failed");

    // An outage: the same, and the call still reads fine throughout.
    let down = Analysed::open(ctx).await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(ResponseTemplate::new(500).set_body_string(format!("internal {KEY}")))
        .mount(&down.model)
        .await;
    let agent = down.agent(json!({})).await;
    let sid = down
        .call(agent["agent_id"].as_str().unwrap(), BOOKING)
        .await;
    down.complete(&sid).await;
    let call = down.analysed(&sid).await;
    assert_eq!(call["analysis_status"], "failed");
    let error = call["analysis_error"].as_str().unwrap();
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(
        !error.contains(KEY) && !error.contains("internal"),
        "{error}"
    );
    let (status, _) = down
        .c
        .post(&format!("/api/calls/{sid}/analyze"), json!({}))
        .await;
    assert_eq!(
        status,
        StatusCode::ACCEPTED,
        "a re-run is accepted even while it is down"
    );
    down.close().await;
    a.close().await;
}

/// A transcript longer than `max_transcript_chars` is sent cut in the middle, with a marker,
/// its start and its end kept.
async fn long_transcripts_are_cut_in_the_middle(ctx: &TestContext) {
    let a = Analysed::open(ctx).await;
    a.answers(ANSWER, None).await;
    let agent = a.agent(json!({"max_transcript_chars": 2000})).await;
    let lines: Vec<String> = (0..100)
        .map(|i| format!("line {i:03} {}", "words ".repeat(15)))
        .collect();
    let messages: Vec<(&str, &str)> = lines.iter().map(|l| ("user", l.as_str())).collect();
    let sid = a.call(agent["agent_id"].as_str().unwrap(), &messages).await;
    a.complete(&sid).await;
    assert_eq!(a.analysed(&sid).await["analysis_status"], "completed");
    let body: Value = a.requests().await[0].body_json().unwrap();
    let sent = body["messages"][1]["content"].as_str().unwrap();
    let transcript = sent.strip_prefix("Transcript:\n").unwrap();
    assert!(transcript.chars().count() <= 2000, "{}", transcript.len());
    assert!(transcript.starts_with("user: line 000"), "{transcript}");
    assert!(transcript.trim_end().contains("line 099"), "{transcript}");
    assert!(transcript.contains("left out"), "{transcript}");
    assert!(!transcript.contains("line 050"), "the middle is cut");
    a.close().await;
}

/// The agent's analysis settings: refused with a sentence naming the field; a PATCH without
/// `api_key` keeps the stored key, `null` turns analysis off and forgets it.
async fn analysis_settings_are_checked(ctx: &TestContext) {
    let a = Analysed::open(ctx).await;
    let base = a.model.uri();
    let good = json!({"summary": true, "base_url": base, "model": "m"});
    let mut twenty_one: Vec<Value> = Vec::new();
    for i in 0..21 {
        twenty_one.push(json!({"name": format!("f{i}"), "type": "string", "description": "d"}));
    }
    for (change, says) in [
        (
            json!({"fields": [{"name": "Party Size", "type": "number", "description": "d"}]}),
            "snake_case",
        ),
        (
            json!({"fields": [{"name": "mood", "type": "enum", "description": "d"}]}),
            "choices",
        ),
        (
            json!({"fields": [{"name": "mood", "type": "string", "description": "d", "choices": ["a"]}]}),
            "only for fields of type enum",
        ),
        (
            json!({"fields": [{"name": "a", "type": "string", "description": "d"},
                              {"name": "a", "type": "number", "description": "d"}]}),
            "twice",
        ),
        (json!({"fields": twenty_one}), "at most 20"),
        (json!({"summary": false}), "asks for nothing"),
        (
            json!({"base_url": "ftp://example.com"}),
            "analysis.base_url",
        ),
        (json!({"model": " "}), "analysis.model"),
        (json!({"max_transcript_chars": 10}), "max_transcript_chars"),
    ] {
        let mut body = agent_body("Refused");
        body["analysis"] = merged(good.clone(), change.clone());
        let (status, answer) = a.c.post("/api/agents", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{change}: {answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{change}: {detail}");
    }
    let mut body = agent_body("Kept");
    body["analysis"] = merged(good.clone(), json!({"api_key": KEY}));
    let agent = a.c.create("/api/agents", body).await;
    let path = format!("/api/agents/{}", agent["agent_id"].as_str().unwrap());
    let patch = |body: Value| {
        let c = &a.c;
        let path = path.clone();
        async move {
            let (status, answer) = c.send(Method::PATCH, &path, Some(body)).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert!(!answer.to_string().contains(KEY));
            answer["data"]["analysis"].clone()
        }
    };
    let kept = patch(json!({"analysis": merged(good.clone(), json!({"model": "m2"}))})).await;
    assert_eq!(kept["model"], "m2");
    assert_eq!(kept["api_key_set"], true);
    assert_eq!(patch(json!({"analysis": null})).await, Value::Null);
    let again = patch(json!({"analysis": good})).await;
    assert_eq!(
        again["api_key_set"], false,
        "turning analysis off forgot the key"
    );
    a.close().await;
}

db_tests!(
    a_completed_call_is_analysed_once,
    bad_answers_are_retried_then_failed,
    long_transcripts_are_cut_in_the_middle,
    analysis_settings_are_checked,
);
