//! The scenario: every operation of the API at least once, with its errors, through the
//! [`Checker`], on SQLite and Postgres; every documented success is produced at least once.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::signing::LinkSigner;
use voiceplane_storage::{BlobConfig, OpendalBlobStore};
use voiceplane_suite::{
    ApiCaller, TestContext, TestServer, db_tests, jwt_for, telephony, voice_providers,
};

use super::checker::*;
use super::steps;
use super::{document, operations};

/// Analysis servers on this machine (the fake upstream) are allowed.
const PRIVATE_TARGETS: voiceplane_core::webhooks::TargetPolicy =
    voiceplane_core::webhooks::TargetPolicy {
        allow_private: true,
    };

async fn responses_match_the_documented_schemas(ctx: &TestContext) {
    use Method as M;

    let upstream = fake_upstreams().await;
    let upstream_url = upstream.uri();
    let blobs = Arc::new(OpendalBlobStore::new(BlobConfig::Memory).unwrap());
    let server = TestServer::start_at(ctx, voiceplane_http::HttpConfig::default(), |s, base| {
        s.with_telephony(telephony(&upstream_url))
            .with_telephony_gateway(
                telephony(&upstream_url),
                voiceplane_http::Api::telephony_webhooks(base),
            )
            .with_voice_providers(voice_providers(&upstream_url, Some(VOICE_KEYS)))
            .with_analyzer(
                Arc::new(
                    voiceplane_clients::HttpChatCompletions::new(
                        voiceplane_clients::AnalysisSettings {
                            policy: PRIVATE_TARGETS,
                            ..Default::default()
                        },
                    )
                    .unwrap(),
                ),
                PRIVATE_TARGETS,
            )
            .with_blobs(blobs)
            .with_recording_links(voiceplane_http::Api::recording_links(
                base,
                LinkSigner::new(b"openapi-test-signing-key-0123456789"),
            ))
    })
    .await;
    let c = Checker {
        api: ApiCaller::bootstrap(ctx, &server, "Acme").await,
        seen: Arc::default(),
    };
    let anonymous = c.as_caller(ApiCaller {
        org: None,
        ..c.with_key(None).api
    });

    // Health and the document itself: no credentials.
    anonymous.expect(M::GET, "/healthz", Body::None, 200).await;
    anonymous.expect(M::GET, "/readyz", Body::None, 200).await;
    anonymous
        .expect(M::GET, "/api/openapi.json", Body::None, 200)
        .await;

    // API keys.
    let user_key = c
        .expect(
            M::POST,
            "/api/api-keys",
            Body::Json(json!({"name": "reader", "role": "user"})),
            201,
        )
        .await;
    let user = c.with_key(Some(str_of(&user_key["data"], "api_key")));
    let temp = c
        .expect(
            M::POST,
            "/api/api-keys",
            Body::Json(json!({"name": "temp", "role": "agent_manager",
                              "expires_at": "2099-01-01T00:00:00Z"})),
            201,
        )
        .await;
    // A key narrowed to some permissions of its role.
    let scoped = c
        .expect(
            M::POST,
            "/api/api-keys",
            Body::Json(json!({"name": "agent reader", "role": "user",
                              "scopes": ["agents:read", "calls:read"]})),
            201,
        )
        .await;
    assert_eq!(
        scoped["data"]["scopes"],
        json!(["calls:read", "agents:read"])
    );
    c.expect(M::GET, "/api/api-keys?limit=2", Body::None, 200)
        .await;
    steps::api_key_view_and_conditions(&c, str_of(&temp["data"], "key_id")).await;
    let revoked = c
        .expect(
            M::DELETE,
            &format!("/api/api-keys/{}", str_of(&temp["data"], "key_id")),
            Body::None,
            200,
        )
        .await;
    assert_eq!(revoked["data"]["status"], "revoked");

    // Agents.
    let agent = c
        .expect(
            M::POST,
            "/api/agents",
            Body::Json(recording_agent("Front desk")),
            201,
        )
        .await["data"]
        .clone();
    let agent_id = str_of(&agent, "agent_id");
    c.expect(M::GET, &format!("/api/agents/{agent_id}"), Body::None, 200)
        .await;
    c.expect(M::GET, "/api/agents", Body::None, 200).await;
    c.expect(
        M::PATCH,
        &format!("/api/agents/{agent_id}"),
        Body::Json(json!({"system_prompt": "Be kind.", "llm_temperature": 0.3})),
        200,
    )
    .await;
    // Its versions: published, refused when unchanged, listed, read, deployed.
    c.expect(
        M::POST,
        &format!("/api/agents/{agent_id}/publish"),
        Body::Json(json!({"description": "launch"})),
        201,
    )
    .await;
    c.expect(
        M::POST,
        &format!("/api/agents/{agent_id}/publish"),
        Body::Json(json!({})),
        409,
    )
    .await;
    c.expect(
        M::GET,
        &format!("/api/agents/{agent_id}/versions"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::GET,
        &format!("/api/agents/{agent_id}/versions/1"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::PATCH,
        &format!("/api/agents/{agent_id}"),
        Body::Json(json!({"deployment": [{"version": 1, "weight": 100}]})),
        200,
    )
    .await;
    c.expect(
        M::GET,
        "/api/calls/stats?group_by=agent_version&agent_version=1",
        Body::None,
        200,
    )
    .await;
    let spare = c
        .expect(
            M::POST,
            "/api/agents",
            Body::Json(recording_agent("Spare")),
            201,
        )
        .await;
    c.expect(
        M::DELETE,
        &format!("/api/agents/{}", str_of(&spare["data"], "agent_id")),
        Body::None,
        200,
    )
    .await;

    // Tools.
    let tool_body = json!({
        "tool_name": "lookup_order", "tool_description": "Looks up an order",
        "url": "https://example.com/orders", "http_method": "GET",
        "headers": {"X-Token": "t"}, "timeout_seconds": 10,
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    });
    let tool = c
        .expect(M::POST, "/api/tools", Body::Json(tool_body.clone()), 201)
        .await["data"]
        .clone();
    let tool_id = str_of(&tool, "tool_id");
    c.expect(M::POST, "/api/tools", Body::Json(tool_body), 409)
        .await;
    let tools = c.expect(M::GET, "/api/tools", Body::None, 200).await;
    assert_eq!(tools["pagination"]["total_count"], 1);
    c.expect(M::GET, &format!("/api/tools/{tool_id}"), Body::None, 200)
        .await;
    c.expect(
        M::PATCH,
        &format!("/api/tools/{tool_id}"),
        Body::Json(json!({"timeout_seconds": 20})),
        200,
    )
    .await;

    // Knowledge base: JSON text and a multipart file.
    let doc = c
        .expect(
            M::POST,
            "/api/knowledge-base",
            Body::Json(json!({"name": "FAQ", "text": "We open at nine."})),
            201,
        )
        .await["data"]
        .clone();
    let doc_id = str_of(&doc, "documentation_id");
    let boundary = "voiceplane-openapi-boundary";
    let multipart = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nPrices\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"prices.txt\"\r\n\
         Content-Type: text/plain\r\n\r\nTea: 3 EUR\r\n--{boundary}--\r\n"
    );
    let file_doc = c
        .expect(
            M::POST,
            "/api/knowledge-base",
            Body::Raw(
                format!("multipart/form-data; boundary={boundary}"),
                multipart.into_bytes(),
            ),
            201,
        )
        .await;
    assert_eq!(file_doc["data"]["type"], "file");
    c.expect(M::GET, "/api/knowledge-base", Body::None, 200)
        .await;
    c.expect(
        M::GET,
        &format!("/api/knowledge-base/{doc_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::PATCH,
        &format!("/api/knowledge-base/{doc_id}"),
        Body::Json(json!({"name": "Opening hours"})),
        200,
    )
    .await;
    c.expect(
        M::POST,
        &format!("/api/knowledge-base/{doc_id}/reprocess"),
        Body::None,
        202,
    )
    .await;
    c.expect(
        M::POST,
        "/api/knowledge-base/search",
        Body::Json(json!({"query": "nine", "document_ids": [doc_id], "limit": 3})),
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!(
            "/api/knowledge-base/{}",
            str_of(&file_doc["data"], "documentation_id")
        ),
        Body::None,
        200,
    )
    .await;

    // Integrations and phone numbers.
    let integration = c
        .expect(
            M::POST,
            "/api/integrations",
            Body::Json(
                json!({"name": "Main", "provider": "twilio", "category": "telephony",
                "credentials": {"account_sid": TWILIO_SID, "auth_token": TWILIO_TOKEN}}),
            ),
            201,
        )
        .await["data"]
        .clone();
    let integration_id = str_of(&integration, "integration_id");
    c.expect(M::GET, "/api/integrations", Body::None, 200).await;
    c.expect(
        M::GET,
        &format!("/api/integrations/{integration_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::PATCH,
        &format!("/api/integrations/{integration_id}"),
        Body::Json(json!({"name": "Main line"})),
        200,
    )
    .await;
    let validated = c
        .expect(
            M::POST,
            &format!("/api/integrations/{integration_id}/validate"),
            Body::Json(json!({})),
            200,
        )
        .await;
    assert_eq!(validated["data"]["status"], "active");
    let number = c
        .expect(
            M::POST,
            "/api/phone-numbers",
            Body::Json(
                json!({"phone_number": "+14155550100", "integration_id": integration_id,
                              "assigned_agent_id": agent_id}),
            ),
            201,
        )
        .await["data"]
        .clone();
    let number_id = str_of(&number, "phone_number_id");
    c.expect(M::GET, "/api/phone-numbers", Body::None, 200)
        .await;
    c.expect(
        M::GET,
        &format!("/api/phone-numbers/{number_id}"),
        Body::None,
        200,
    )
    .await;
    let connected = c
        .expect(
            M::POST,
            &format!("/api/phone-numbers/{number_id}/connect"),
            Body::None,
            200,
        )
        .await;
    assert_eq!(connected["data"]["provider_number_id"], TWILIO_NUMBER_SID);

    // Calls that happen: the provider's webhooks, a dial, its session and hangup.
    c.expect(
        M::PATCH,
        "/api/organization/settings",
        Body::Json(json!({"runtime_stream_url": "wss://rt.example.com/media"})),
        200,
    )
    .await;
    let twilio = |hook: &str, params: &[(&str, &str)]| {
        let path = format!("/telephony/twilio/{integration_id}/{hook}");
        let owned: Vec<(String, String)> = params
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let signature = voiceplane_core::telephony::signature::twilio_signature(
            TWILIO_TOKEN,
            &server.url(&path),
            &owned,
        );
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&owned)
            .finish();
        (path, signature, body)
    };
    let form = "application/x-www-form-urlencoded".to_owned();
    let (path, signature, body) = twilio(
        "voice",
        &[
            ("CallSid", "CA00000000000000000000000000000001"),
            ("From", "+33612345678"),
            ("To", "+14155550100"),
        ],
    );
    let twiml = anonymous
        .send_with(
            M::POST,
            &path,
            Body::Raw(form.clone(), body.into_bytes()),
            &[("x-twilio-signature", &signature)],
        )
        .await;
    assert_eq!(twiml.status, 200);
    assert!(String::from_utf8_lossy(&twiml.bytes).contains("<Connect><Stream"));
    let (path, signature, body) = twilio(
        "status",
        &[
            ("CallSid", "CA00000000000000000000000000000001"),
            ("CallStatus", "completed"),
        ],
    );
    anonymous
        .send_with(
            M::POST,
            &path,
            Body::Raw(form.clone(), body.clone().into_bytes()),
            &[("x-twilio-signature", &signature)],
        )
        .await;
    anonymous
        .expect(
            M::POST,
            &path,
            Body::Raw(form.clone(), body.into_bytes()),
            403,
        )
        .await;
    let dialed = c
        .expect(
            M::POST,
            "/api/calls/dial",
            Body::Json(json!({"agent_id": agent_id, "to_number": "+14155550123",
                              "from_phone_number_id": number_id,
                              "dynamic_variables": {"first_name": "Ada"}})),
            201,
        )
        .await["data"]
        .clone();
    let dialed_sid = str_of(&dialed, "call_sid");
    c.expect(
        M::POST,
        &format!("/api/calls/{dialed_sid}/hangup"),
        Body::None,
        202,
    )
    .await;
    let (path, signature, body) = twilio(
        &format!("status/{dialed_sid}"),
        &[("CallSid", TWILIO_CALL_SID), ("CallStatus", "ringing")],
    );
    anonymous
        .send_with(
            M::POST,
            &path,
            Body::Raw(form.clone(), body.into_bytes()),
            &[("x-twilio-signature", &signature)],
        )
        .await;
    c.expect(
        M::GET,
        &format!("/api/calls/{dialed_sid}/session"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::GET,
        &format!("/api/calls?phone_number_id={number_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::POST,
        "/api/calls/dial",
        Body::Json(json!({"agent_id": agent_id,
        "to_number": "+14155550123", "from_phone_number_id": "phon_000000000000"})),
        404,
    )
    .await;

    // A campaign: created, filled by JSON and CSV, started, paused, canceled, deleted.
    let campaign = c
        .expect(
            M::POST,
            "/api/campaigns",
            Body::Json(json!({"name": "Renewals", "agent_id": agent_id,
                              "from_phone_number_ids": [number_id], "max_concurrency": 2,
                              "windows": [{"days": ["mon", "fri"], "start": "09:00", "end": "17:00"}],
                              "retry": {"max_attempts": 2, "delay_secs": 600, "on": ["no_answer"]}})),
            201,
        )
        .await["data"]
        .clone();
    let campaign_path = format!("/api/campaigns/{}", str_of(&campaign, "campaign_id"));
    c.expect(M::GET, "/api/campaigns?status=draft", Body::None, 200)
        .await;
    c.expect(M::GET, &campaign_path, Body::None, 200).await;
    c.expect(
        M::PATCH,
        &campaign_path,
        Body::Json(json!({"name": "Spring renewals", "starts_at": null})),
        200,
    )
    .await;
    c.expect(
        M::POST,
        &format!("{campaign_path}/recipients"),
        Body::Json(json!({"recipients": [{"to_number": "+14155550161",
                                          "dynamic_variables": {"first_name": "Ada"}}]})),
        200,
    )
    .await;
    c.expect(
        M::POST,
        &format!("{campaign_path}/recipients"),
        Body::Raw(
            "text/csv".into(),
            b"to_number,timezone\n+14155550162,Europe/Paris\n".to_vec(),
        ),
        200,
    )
    .await;
    c.expect(
        M::GET,
        &format!("{campaign_path}/recipients?status=pending"),
        Body::None,
        200,
    )
    .await;
    for (action, status) in [
        ("start", 200),
        ("start", 409),
        ("pause", 200),
        ("cancel", 200),
    ] {
        c.expect(
            M::POST,
            &format!("{campaign_path}/{action}"),
            Body::None,
            status,
        )
        .await;
    }
    c.expect(M::DELETE, &campaign_path, Body::None, 200).await;
    let telnyx = c
        .expect(
            M::POST,
            "/api/integrations",
            Body::Json(
                json!({"name": "Telnyx", "provider": "telnyx", "category": "telephony",
                "credentials": {"api_key": "KEY0123", "connection_id": "1494404757140276705",
                                "public_key": crate::telephony::line::telnyx_public_key()}}),
            ),
            201,
        )
        .await["data"]
        .clone();
    let event = json!({"data": {"event_type": "call.speak.ended", "id": "e1",
                                "occurred_at": "2026-01-01T00:00:00Z",
                                "payload": {"call_control_id": "v3:x"}}})
    .to_string();
    let at = (ctx.clock.peek().as_micros() / 1_000_000).to_string();
    let signature = crate::telephony::line::telnyx_signature(&at, &event);
    anonymous
        .send_with(
            M::POST,
            &format!(
                "/telephony/telnyx/{}/events",
                str_of(&telnyx, "integration_id")
            ),
            Body::Raw("application/json".to_owned(), event.into_bytes()),
            &[
                ("telnyx-signature-ed25519", &signature),
                ("telnyx-timestamp", &at),
            ],
        )
        .await;
    let unassigned = c
        .expect(
            M::PATCH,
            &format!("/api/phone-numbers/{number_id}"),
            Body::Json(json!({"assigned_agent_id": null})),
            200,
        )
        .await;
    assert_eq!(unassigned["data"]["assigned_agent_id"], Value::Null);
    c.expect(
        M::DELETE,
        &format!("/api/integrations/{integration_id}"),
        Body::None,
        409,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!("/api/phone-numbers/{number_id}"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!("/api/integrations/{integration_id}"),
        Body::None,
        200,
    )
    .await;

    // The agent's calls are analysed (the scenario runs no jobs: they stay pending).
    c.expect(
        M::PATCH,
        &format!("/api/agents/{agent_id}"),
        Body::Json(json!({"analysis": {
            "success_criteria": "The caller learnt where the order is.",
            "fields": [{"name": "order_id", "type": "string", "description": "The order"},
                       {"name": "mood", "type": "enum", "description": "The caller's mood",
                        "choices": ["calm", "upset"], "required": true}],
            "base_url": upstream_url, "api_key": "sk-scenario", "model": "gpt-4o-mini"}})),
        200,
    )
    .await;

    // Calls, pages and recordings.
    let new_call = json!({"agent_id": agent_id, "to_number": "+14155550123",
                          "from_number": "+14155550199", "call_type": "outbound"});
    c.expect(M::POST, "/api/calls", Body::Json(new_call.clone()), 201)
        .await;
    let call = c
        .expect(M::POST, "/api/calls", Body::Json(new_call), 201)
        .await["data"]
        .clone();
    let call_sid = str_of(&call, "call_sid");
    let first = c
        .expect(
            M::GET,
            "/api/calls?limit=1&from_number=%2B14155550199",
            Body::None,
            200,
        )
        .await;
    let cursor = str_of(&first["pagination"], "next_cursor");
    let last = c
        .expect(
            M::GET,
            &format!("/api/calls?limit=1&from_number=%2B14155550199&cursor={cursor}"),
            Body::None,
            200,
        )
        .await;
    assert_eq!(last["pagination"]["next_cursor"], Value::Null);
    c.expect(M::GET, &format!("/api/calls/{call_sid}"), Body::None, 200)
        .await;
    c.expect(
        M::PATCH,
        &format!("/api/calls/{call_sid}"),
        Body::Json(
            json!({"status": "completed", "start_time": "2026-01-01T00:00:00Z",
            "end_time": "2026-01-01T00:01:30Z", "total_cost": 1.5, "turn_count": 4,
            "end_reason": "user_hangup", "billing_status": "billed"}),
        ),
        200,
    )
    .await;
    // Usage and cost: the price book, a call's items, the derived total, the report.
    c.expect(
        M::PUT,
        "/api/organization/prices",
        Body::Json(
            json!({"prices": [{"component": "stt", "provider": "deepgram",
                                      "unit": "seconds", "credits_per_unit": 0.01}]}),
        ),
        200,
    )
    .await;
    c.expect(M::GET, "/api/organization/prices", Body::None, 200)
        .await;
    c.expect(
        M::POST,
        &format!("/api/calls/{call_sid}/usage"),
        Body::Json(json!({"items": [
            {"component": "stt", "provider": "deepgram", "quantity": 90, "unit": "seconds"},
            {"component": "llm", "provider": "openai", "model": "gpt-4o", "quantity": 1200,
             "unit": "input_tokens"}]})),
        200,
    )
    .await;
    c.expect(
        M::POST,
        "/api/calls/call_000000000000000000000000/usage",
        Body::Json(json!({"items": [
            {"component": "stt", "provider": "deepgram", "quantity": 1, "unit": "seconds"}]})),
        404,
    )
    .await;
    c.expect(
        M::PATCH,
        &format!("/api/calls/{call_sid}"),
        Body::Json(json!({"total_cost": 2})),
        409,
    )
    .await;
    c.expect(M::GET, "/api/usage?group_by=day", Body::None, 200)
        .await;
    let messages = format!("/api/calls/{call_sid}/messages");
    c.expect(
        M::POST,
        &messages,
        Body::Json(json!({"messages": [
            {"role": "user", "text": "Where is my order?", "start_ms": 0, "end_ms": 900},
            {"role": "tool", "text": "", "tool_name": "lookup_order",
             "tool_arguments": {"order_id": "A-1"}, "tool_result": {"status": "shipped"}}
        ]})),
        201,
    )
    .await;
    c.expect(M::GET, &format!("{messages}?limit=1"), Body::None, 200)
        .await;
    c.expect(
        M::POST,
        &format!("/api/calls/{call_sid}/analyze"),
        Body::None,
        202,
    )
    .await;
    c.expect(
        M::POST,
        "/api/calls/call_000000000000000000000000/analyze",
        Body::None,
        404,
    )
    .await;
    c.expect(M::GET, "/api/calls?successful=true", Body::None, 200)
        .await;
    let found = c
        .expect(
            M::GET,
            "/api/calls?status=completed&q=orders",
            Body::None,
            200,
        )
        .await;
    assert_eq!(found["data"][0]["call_sid"], call_sid);
    c.expect(
        M::GET,
        "/api/calls/stats?group_by=day&created_after=2020-01-01T00:00:00Z",
        Body::None,
        200,
    )
    .await;
    c.expect(M::GET, "/api/calls/stats?status=fine", Body::None, 400)
        .await;
    let recording = format!("/api/calls/{call_sid}/recording");
    c.expect(M::GET, &format!("{recording}/stream"), Body::None, 404)
        .await;
    c.expect(
        M::PUT,
        &recording,
        Body::Raw("text/plain".to_owned(), b"not audio".to_vec()),
        415,
    )
    .await;
    c.expect(
        M::PUT,
        &recording,
        Body::Raw("audio/wav".to_owned(), wav_bytes()),
        200,
    )
    .await;
    let link = c
        .expect(M::GET, &format!("{recording}/stream"), Body::None, 200)
        .await;
    let download = c
        .send(M::GET, &format!("{recording}/download"), Body::None)
        .await;
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(download.bytes, wav_bytes());
    // The stream URL is served by this server; its path and query are what matter.
    let url = str_of(&link["data"], "url");
    let signed = &url[url.find("/recordings/").expect("a self-signed URL")..];
    let whole = anonymous.send(M::GET, signed, Body::None).await;
    assert_eq!((whole.status, whole.bytes), (StatusCode::OK, wav_bytes()));
    let part = anonymous
        .send_with(M::GET, signed, Body::None, &[("range", "bytes=0-3")])
        .await;
    assert_eq!(
        (part.status, part.bytes),
        (StatusCode::PARTIAL_CONTENT, b"RIFF".to_vec())
    );
    let outside = anonymous
        .send_with(M::GET, signed, Body::None, &[("range", "bytes=100000-")])
        .await;
    assert_eq!(outside.status, StatusCode::RANGE_NOT_SATISFIABLE);
    // Change the signature's last hex digit, whatever it is, so the URL really differs.
    let last = if signed.ends_with('0') { "1" } else { "0" };
    let tampered = format!("{}{last}", &signed[..signed.len() - 1]);
    anonymous.expect(M::GET, &tampered, Body::None, 403).await;
    c.expect(M::DELETE, &recording, Body::None, 200).await;
    c.expect(M::DELETE, &recording, Body::None, 404).await;
    c.expect(
        M::DELETE,
        &format!("/api/calls/{call_sid}"),
        Body::None,
        200,
    )
    .await;

    // Retention.
    c.expect(M::GET, "/api/organization/settings", Body::None, 200)
        .await;
    let policy = json!({"recording_retention_days": 30, "call_retention_days": null});
    c.expect(
        M::PATCH,
        "/api/organization/settings",
        Body::Json(policy),
        200,
    )
    .await;
    let zero = json!({"transcript_retention_days": 0});
    c.expect(
        M::PATCH,
        "/api/organization/settings",
        Body::Json(zero),
        400,
    )
    .await;

    steps::voices(&c).await;

    // Invitations and members.
    let invitation = c
        .expect(
            M::POST,
            "/api/auth/organizations/invitations",
            Body::Json(json!({"email": "new@example.com", "role": "agent_manager"})),
            201,
        )
        .await["data"]
        .clone();
    let withdrawn = c
        .expect(
            M::POST,
            "/api/auth/organizations/invitations",
            Body::Json(json!({"email": "gone@example.com", "role": "user"})),
            201,
        )
        .await;
    c.expect(
        M::GET,
        "/api/auth/organizations/invitations",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        &format!(
            "/api/auth/organizations/invitations/{}",
            str_of(&withdrawn["data"], "invite_id")
        ),
        Body::None,
        200,
    )
    .await;
    steps::invitation_view(&c, str_of(&withdrawn["data"], "invite_id")).await;
    let invitee = c.with_bearer(&jwt_for("user_newcomer", Some("new@example.com"), 3600));
    let member = invitee
        .expect(
            M::POST,
            &format!(
                "/api/auth/invitations/{}/accept",
                str_of(&invitation, "invite_id")
            ),
            Body::None,
            200,
        )
        .await["data"]
        .clone();
    let membership = format!(
        "/api/auth/organizations/members/{}",
        str_of(&member, "membership_id")
    );
    c.expect(M::GET, "/api/auth/organizations/members", Body::None, 200)
        .await;
    c.expect(
        M::PATCH,
        &membership,
        Body::Json(json!({"role": "user"})),
        200,
    )
    .await;
    c.expect(M::DELETE, &membership, Body::None, 200).await;

    // Events: every change above recorded one.
    let events = c
        .expect(
            M::GET,
            "/api/events?type=member.removed&type=tool.created",
            Body::None,
            200,
        )
        .await;
    c.expect(
        M::GET,
        &format!("/api/events/{}", str_of(&events["data"][0], "event_id")),
        Body::None,
        200,
    )
    .await;

    // The audit log: every change above by a caller, for admins only.
    c.expect(
        M::GET,
        "/api/audit-log?action=tool.create&limit=5",
        Body::None,
        200,
    )
    .await;
    c.expect(M::GET, "/api/audit-log?action=nonsense", Body::None, 400)
        .await;
    user.expect(M::GET, "/api/audit-log", Body::None, 403).await;

    // Webhook endpoints: the test and the retry schedule deliveries (202).
    let webhook = c
        .expect(
            M::POST,
            "/api/webhooks",
            Body::Json(
                json!({"url": "https://hooks.example.com/vp", "events": ["*"],
                "description": "all events"}),
            ),
            201,
        )
        .await["data"]
        .clone();
    let webhook_path = format!("/api/webhooks/{}", str_of(&webhook, "webhook_id"));
    c.expect(M::GET, "/api/webhooks", Body::None, 200).await;
    c.expect(M::GET, &webhook_path, Body::None, 200).await;
    c.expect(
        M::PATCH,
        &webhook_path,
        Body::Json(json!({"events": ["tool.created"], "status": "disabled"})),
        200,
    )
    .await;
    c.expect(
        M::POST,
        &format!("{webhook_path}/rotate-secret"),
        Body::None,
        200,
    )
    .await;
    let delivery = c
        .expect(M::POST, &format!("{webhook_path}/test"), Body::None, 202)
        .await["data"]
        .clone();
    c.expect(
        M::GET,
        &format!("{webhook_path}/deliveries"),
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::POST,
        &format!(
            "{webhook_path}/deliveries/{}/retry",
            str_of(&delivery, "delivery_id")
        ),
        Body::None,
        202,
    )
    .await;
    c.expect(M::DELETE, &webhook_path, Body::None, 200).await;

    // The suppression list.
    c.expect(
        M::POST,
        "/api/suppressions",
        Body::Json(json!({"phone_number": "+14155550177", "reason": "opted out"})),
        201,
    )
    .await;
    c.expect(
        M::POST,
        "/api/suppressions",
        Body::Json(json!({"phone_number": "+14155550177",
                          "expires_at": "2099-01-01T00:00:00Z"})),
        200,
    )
    .await;
    c.expect(
        M::GET,
        "/api/suppressions?phone_number=%2B14155550177",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        "/api/suppressions/%2B14155550177",
        Body::None,
        200,
    )
    .await;
    c.expect(
        M::DELETE,
        "/api/suppressions/%2B14155550177",
        Body::None,
        404,
    )
    .await;

    // Errors: `{detail}` with the documented statuses.
    c.with_key(None)
        .expect(M::GET, "/api/agents", Body::None, 401)
        .await;
    user.expect(
        M::POST,
        "/api/agents",
        Body::Json(recording_agent("Nope")),
        403,
    )
    .await;
    c.expect(
        M::GET,
        "/api/agents/agent_0000000000000000",
        Body::None,
        404,
    )
    .await;
    c.expect(M::GET, "/api/agents/not-an-id", Body::None, 400)
        .await;
    c.expect(M::GET, "/api/calls?limit=0", Body::None, 400)
        .await;
    c.expect(M::GET, "/api/calls?cursor=garbage", Body::None, 400)
        .await;
    c.expect(
        M::POST,
        "/api/agents",
        Body::Unchecked(json!({"agent_name": "x", "colour": "blue"})),
        400,
    )
    .await;
    c.expect(
        M::POST,
        "/api/agents",
        Body::Raw("text/plain".to_owned(), b"hello".to_vec()),
        415,
    )
    .await;
    c.expect(
        M::POST,
        "/api/agents",
        Body::Unchecked(json!({"agent_name": "x".repeat(1_100_000)})),
        413,
    )
    .await;
    c.expect(M::DELETE, &format!("/api/tools/{tool_id}"), Body::None, 200)
        .await;

    server.stop().await;

    // Every success answer the document lists was produced and checked at least once.
    let seen = c.seen.lock().unwrap().clone();
    let mut unexercised = Vec::new();
    for (method, template, op) in operations(document()) {
        for status in op["responses"].as_object().unwrap().keys() {
            let key = format!("{method} {template} {status}");
            if status.starts_with('2') && !seen.contains(&key) {
                unexercised.push(key);
            }
        }
    }
    assert!(
        unexercised.is_empty(),
        "documented success answers the scenario did not check: {unexercised:#?}"
    );
    let errors_checked = seen
        .iter()
        .filter(|k| {
            !k.ends_with(" 200")
                && !k.ends_with(" 201")
                && !k.ends_with(" 202")
                && !k.ends_with(" 206")
        })
        .count();
    assert!(errors_checked >= 10, "{seen:#?}");
}

db_tests!(responses_match_the_documented_schemas);
