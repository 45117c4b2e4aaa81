//! Campaigns (DESIGN §19): their life (draft, running, paused, completed, canceled),
//! recipients by JSON and CSV (all or nothing), and the pacing of their calls at the fake
//! Twilio: within the campaign's concurrency, in each callee's windows and the organization's
//! calling hours, retried on the outcomes named, never dialing anyone twice or anyone
//! suppressed, across two job runners.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_core::role::Role;
use voiceplane_suite::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use super::line::{Line, Provider, Runner, field, form};

const CALLS: &str = "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls.json";

/// Twilio's id of the call voiceplane dials as `call_sid` (named by its status URL).
fn twilio_sid(call_sid: &str) -> String {
    let tail: String = call_sid
        .trim_start_matches("call_")
        .chars()
        .take(24)
        .collect();
    format!("CA{tail:0<32}")
}

/// The fake Twilio's answer to a dial: a new call whose id follows from voiceplane's.
struct Creates;

impl Respond for Creates {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let f = form(&request.body);
        let call_sid = field(&f, "StatusCallback")[0]
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        ResponseTemplate::new(201)
            .set_body_json(json!({"sid": twilio_sid(&call_sid), "status": "queued"}))
    }
}

/// A dial the fake received: voiceplane's call id, who it rings, from which number.
#[derive(Debug, Clone)]
struct Dialed {
    call_sid: String,
    to: String,
    from: String,
}

async fn dialed(line: &Line) -> Vec<Dialed> {
    line.sent_to(CALLS)
        .await
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| {
            let f = form(&r.body);
            Dialed {
                call_sid: field(&f, "StatusCallback")[0]
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
                to: field(&f, "To")[0].to_owned(),
                from: field(&f, "From")[0].to_owned(),
            }
        })
        .collect()
}

/// Twilio reports that the call `call_sid` ended `status` (`completed`, `no-answer`, …).
async fn ends(line: &Line, call_sid: &str, status: &str) {
    let sid = twilio_sid(call_sid);
    let path = format!("/status/{call_sid}");
    let resp = line
        .twilio(&path, &[("CallSid", sid.as_str()), ("CallStatus", status)])
        .await;
    let code = resp.status();
    assert_eq!(
        code,
        StatusCode::OK,
        "{}",
        resp.text().await.unwrap_or_default()
    );
}

async fn twilio_creates(line: &Line) {
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(Creates)
        .mount(&line.provider)
        .await;
}

/// The campaign at `path` as the API shows it.
async fn campaign(line: &Line, path: &str) -> Value {
    let (status, body) = line.c.get(path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["data"].clone()
}

/// Every recipient of the campaign at `path`, by number.
async fn recipients(line: &Line, path: &str) -> BTreeMap<String, Value> {
    let mut all = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}/recipients?limit=100&cursor={c}"),
            None => format!("{path}/recipients?limit=100"),
        };
        let (status, body) = line.c.get(&url).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for r in body["data"].as_array().unwrap() {
            all.insert(r["to_number"].as_str().unwrap().to_owned(), r.clone());
        }
        match body["pagination"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return all,
        }
    }
}

/// The counts the campaign shows equal its recipients' statuses, read while nothing moved
/// (the same recipients before and after the campaign).
async fn counts_are_true(line: &Line, path: &str) -> Value {
    for _ in 0..50 {
        let before = recipients(line, path).await;
        let shown = campaign(line, path).await;
        if recipients(line, path).await != before {
            continue;
        }
        let mut tally: HashMap<String, u64> = HashMap::new();
        for r in before.values() {
            *tally
                .entry(r["status"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        let counts = &shown["counts"];
        assert_eq!(counts["total"], before.len() as u64, "{shown}");
        for status in [
            "pending",
            "in_progress",
            "completed",
            "failed",
            "suppressed",
            "canceled",
        ] {
            assert_eq!(
                counts[status].as_u64().unwrap(),
                tally.get(status).copied().unwrap_or(0),
                "{status} in {shown}"
            );
        }
        return shown;
    }
    panic!("the recipients never stood still");
}

async fn post_csv(line: &Line, path: &str, csv: &str) -> (StatusCode, Value) {
    let resp = line
        .c
        .request(Method::POST, path)
        .header("content-type", "text/csv")
        .body(csv.to_owned())
        .send()
        .await
        .unwrap();
    read_json(resp).await
}

fn campaign_body(line: &Line, extra: Value) -> Value {
    merged(
        json!({"name": "Renewals", "agent_id": line.agent_id,
               "from_phone_number_ids": [line.number_id]}),
        extra,
    )
}

/// Create, read, list, change; the transitions and the 409 that says why one is refused;
/// recipients by JSON, de-duplicated; the events of each transition; who may do what.
async fn campaigns_move_through_their_states(ctx: &TestContext) {
    let line = Line::open_with(
        ctx,
        Provider::Twilio,
        std::time::Duration::from_secs(10),
        false,
    )
    .await;
    let c = &line.c;
    for (bad, field) in [
        (json!({"max_concurrency": 0}), "max_concurrency"),
        (json!({"max_concurrency": 101}), "max_concurrency"),
        (json!({"timezone": "Mars/Olympus"}), "timezone"),
        (json!({"retry": {"delay_secs": 10}}), "retry.delay_secs"),
        (json!({"retry": {"max_attempts": 11}}), "retry.max_attempts"),
        (
            json!({"windows": [{"days": ["mon"], "start": "9:00", "end": "17:00"}]}),
            "windows[0].start",
        ),
        (
            json!({"windows": [{"days": ["someday"], "start": "09:00", "end": "17:00"}]}),
            "windows[0].days",
        ),
        (
            json!({"from_phone_number_ids": []}),
            "from_phone_number_ids",
        ),
        (
            json!({"starts_at": "2026-02-01T00:00:00Z", "ends_at": "2026-01-01T00:00:00Z"}),
            "ends_at",
        ),
    ] {
        let (status, body) = c
            .post("/api/campaigns", campaign_body(&line, bad.clone()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains(field),
            "{bad}: {body}"
        );
    }
    let (status, body) = c
        .post(
            "/api/campaigns",
            campaign_body(&line, json!({"agent_id": "agent_0000000000000000"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    let created = c
        .create(
            "/api/campaigns",
            campaign_body(
                &line,
                json!({"max_concurrency": 3, "timezone": "Europe/Paris",
                       "windows": [{"days": ["mon", "tue"], "start": "09:00", "end": "18:00"}],
                       "retry": {"max_attempts": 3, "delay_secs": 600, "on": ["no_answer", "busy"]},
                       "dynamic_variables": {"offer": "spring"}}),
            ),
        )
        .await;
    let id = created["campaign_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("cmp_") && id.len() == 16, "{id}");
    assert_eq!(created["status"], "draft");
    assert_eq!(created["max_concurrency"], 3);
    assert_eq!(created["retry"]["on"], json!(["busy", "no_answer"]));
    assert_eq!(
        created["counts"],
        json!({"total": 0, "pending": 0, "in_progress": 0, "completed": 0, "failed": 0,
               "suppressed": 0, "canceled": 0})
    );
    let path = format!("/api/campaigns/{id}");
    assert_eq!(campaign(&line, &path).await["name"], "Renewals");

    let (status, body) = c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("no recipients"),
        "{body}"
    );

    let (status, body) = c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [
                {"to_number": "+14155550201", "dynamic_variables": {"first_name": "Ada"}},
                {"to_number": "+14155550202", "timezone": "America/New_York"},
                {"to_number": "+14155550201"},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!({"added": 2, "duplicates": 1}));
    let (status, body) = c
        .post(&format!("{path}/recipients"), json!({"recipients": []}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [{"to_number": "+14155550203"}, {"to_number": "555"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("recipients[1]"),
        "{body}"
    );
    let rs = recipients(&line, &path).await;
    assert_eq!(rs.len(), 2, "nothing of a refused upload is kept");
    let ada = &rs["+14155550201"];
    assert!(ada["recipient_id"].as_str().unwrap().starts_with("rcp_"));
    assert_eq!(ada["status"], "pending");
    assert_eq!(ada["attempts"], 0);
    assert_eq!(ada["dynamic_variables"], json!({"first_name": "Ada"}));
    assert_eq!(rs["+14155550202"]["timezone"], "America/New_York");

    let (status, body) = c
        .send(
            Method::PATCH,
            &path,
            Some(json!({"name": "Spring renewals", "ends_at": null})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["name"], "Spring renewals");

    // A `user` key reads, and may not write.
    let admin = ctx
        .actor(c.org.as_deref().unwrap(), c.key.as_deref().unwrap())
        .await;
    let (key, _) = ctx.key_with_role(&admin, Role::User).await;
    let user = c.with_key(&key.api_key);
    assert_eq!(user.get(&path).await.0, StatusCode::OK);
    assert_eq!(user.get("/api/campaigns").await.0, StatusCode::OK);
    assert_eq!(
        user.post(&format!("{path}/start"), json!({})).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        user.post("/api/campaigns", campaign_body(&line, json!({})))
            .await
            .0,
        StatusCode::FORBIDDEN
    );

    // Running: no change, no delete, no second start.
    let (status, body) = c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["status"], "running");
    for (status, body) in [
        c.post(&format!("{path}/start"), json!({})).await,
        c.send(Method::PATCH, &path, Some(json!({"name": "x"})))
            .await,
        c.send(Method::DELETE, &path, None).await,
    ] {
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
    }
    let (_, listed) = c.get("/api/campaigns?status=running").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["counts"]["total"], 2);
    let (_, listed) = c.get("/api/campaigns?status=draft").await;
    assert!(listed["data"].as_array().unwrap().is_empty());
    let (status, _) = c.get("/api/campaigns?status=sleeping").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, body) = c.post(&format!("{path}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["status"], "paused");
    let (status, body) = c.post(&format!("{path}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = c
        .send(Method::PATCH, &path, Some(json!({"max_concurrency": 2})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (status, body) = c.post(&format!("{path}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["status"], "canceled");
    assert_eq!(body["data"]["counts"]["canceled"], 2);
    assert_eq!(body["data"]["counts"]["pending"], 0);
    for action in ["start", "cancel"] {
        let (status, body) = c.post(&format!("{path}/{action}"), json!({})).await;
        assert_eq!(status, StatusCode::CONFLICT, "{action}: {body}");
    }
    let (status, _) = c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [{"to_number": "+14155550209"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let (_, events) = c
        .get("/api/events?type=campaign.started&type=campaign.paused&type=campaign.canceled")
        .await;
    let types: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["campaign.canceled", "campaign.paused", "campaign.started"]
    );
    let (_, audit) = c.get("/api/audit-log?resource_type=campaign").await;
    let actions: BTreeSet<&str> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for action in [
        "campaign.create",
        "campaign.update",
        "campaign.start",
        "campaign.pause",
        "campaign.cancel",
    ] {
        assert!(actions.contains(action), "{action} in {actions:?}");
    }

    let (status, body) = c.send(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(c.get(&path).await.0, StatusCode::NOT_FOUND);
    assert!(
        dialed(&line).await.is_empty(),
        "the runner was off: nobody was called"
    );
    line.close().await;
}

/// A CSV upload: the header names the columns, spreadsheets' byte-order mark and CRLF are
/// fine, quoted cells keep their commas, and one bad row anywhere refuses the whole file with
/// the lines of the bad rows.
async fn csv_uploads_are_all_or_nothing(ctx: &TestContext) {
    let line = Line::open_with(
        ctx,
        Provider::Twilio,
        std::time::Duration::from_secs(10),
        false,
    )
    .await;
    let created = line
        .c
        .create("/api/campaigns", campaign_body(&line, json!({})))
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let upload = format!("{path}/recipients");

    let bad = "to_number,timezone,first_name\n+14155550301,,Ada\nnot-a-number,,Bob\n+14155550303,Mars/Base,Cy\n+14155550304,,Di\n";
    let (status, body) = post_csv(&line, &upload, bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("line 3: to_number"), "{detail}");
    assert!(detail.contains("line 4: timezone"), "{detail}");
    assert!(!detail.contains("line 2"), "{detail}");
    assert!(
        recipients(&line, &path).await.is_empty(),
        "nothing was added"
    );

    let good = "\u{feff}first_name,to_number,timezone,company\r\nAda,+14155550301,,\"Lovelace, Ltd\"\r\nBob,+14155550302,Europe/Paris,\r\n\r\nAda again,+14155550301,,\r\n";
    let (status, body) = post_csv(&line, &upload, good).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!({"added": 2, "duplicates": 1}));
    let rs = recipients(&line, &path).await;
    assert_eq!(
        rs["+14155550301"]["dynamic_variables"],
        json!({"first_name": "Ada", "company": "Lovelace, Ltd"})
    );
    assert_eq!(rs["+14155550302"]["timezone"], "Europe/Paris");
    assert_eq!(
        rs["+14155550302"]["dynamic_variables"],
        json!({"first_name": "Bob"})
    );

    for (csv, says) in [
        ("phone\n+14155550305\n", "no `to_number` column"),
        ("", "empty"),
        ("to_number,first name\n+14155550305,x\n", "line 1"),
    ] {
        let (status, body) = post_csv(&line, &upload, csv).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{csv}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{csv}: {body}"
        );
    }
    // Many bad rows: twenty are named, and the rest are said to exist.
    let mut many = String::from("to_number\n");
    for i in 0..30 {
        many.push_str(&format!("bad{i}\n"));
    }
    let (status, body) = post_csv(&line, &upload, &many).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert_eq!(detail.matches("line ").count(), 20, "{detail}");
    assert!(detail.ends_with("and more"), "{detail}");
    // Neither JSON nor CSV: 415.
    let resp = line
        .c
        .request(Method::POST, &upload)
        .header("content-type", "text/plain")
        .body("+14155550305")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    line.close().await;
}

/// Fifty recipients, five calls at a time, from two numbers in turn, paced by two job
/// runners: never more than five calls in flight at the fake Twilio, everyone dialed once
/// (twice for a retried no-answer, after the delay), the suppressed number never, the counts
/// true at every step, and the campaign completed by itself.
async fn a_campaign_calls_everyone_within_its_concurrency(ctx: &TestContext) {
    let mut line = Line::open_with(
        ctx,
        Provider::Twilio,
        std::time::Duration::from_secs(10),
        false,
    )
    .await;
    twilio_creates(&line).await;
    let second = line
        .c
        .create(
            "/api/phone-numbers",
            json!({"phone_number": "+14155550110", "provider": "twilio",
                   "integration_id": line.integration_id}),
        )
        .await;
    let second_id = second["phone_number_id"].as_str().unwrap().to_owned();
    let numbers: Vec<String> = (0..50)
        .map(|i| format!("+1415555{:04}", 2000 + i))
        .collect();
    let suppressed = numbers[7].clone();
    let (status, _) = line
        .c
        .post(
            "/api/suppressions",
            json!({"phone_number": suppressed, "reason": "opted out"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let created = line
        .c
        .create(
            "/api/campaigns",
            json!({"name": "Fifty", "agent_id": line.agent_id,
                   "from_phone_number_ids": [line.number_id, second_id],
                   "max_concurrency": 5,
                   "retry": {"max_attempts": 2, "delay_secs": 60, "on": ["no_answer"]},
                   "dynamic_variables": {"offer": "spring"}}),
        )
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let mut csv = String::from("to_number,slot\n");
    for (i, n) in numbers.iter().enumerate() {
        csv.push_str(&format!("{n},{i}\n"));
    }
    let (status, body) = post_csv(&line, &format!("{path}/recipients"), &csv).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["added"], 50);
    let (status, body) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Two instances' runners on one database.
    line.run_jobs();
    let other = Runner::start(&line.service, "second-instance");

    // Who does not answer: slots 3, 13, …, never (failed after two attempts); slots 5, 15, …
    // the first time only.
    let outcome = |to: &str, attempt: usize| -> &'static str {
        let slot = numbers.iter().position(|n| n == to).unwrap();
        match (slot % 10, attempt) {
            (3, _) | (5, 1) => "no-answer",
            _ => "completed",
        }
    };
    let mut ended: BTreeSet<String> = BTreeSet::new();
    let mut attempts: HashMap<String, usize> = HashMap::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the campaign did not complete"
        );
        let shown = counts_are_true(&line, &path).await;
        if shown["status"] == "completed" {
            break;
        }
        let calls = dialed(&line).await;
        let live: Vec<&Dialed> = calls
            .iter()
            .filter(|d| !ended.contains(&d.call_sid))
            .collect();
        assert!(live.len() <= 5, "{} calls in flight at once", live.len());
        if live.is_empty() {
            // Only retries are left, due a minute after their first attempt ended: time
            // moves on, but only while no call is under way and none is due, so that no dial
            // can be in flight when its job's lease ends (the job would then end the call
            // of unknown outcome).
            let rs = recipients(&line, &path).await;
            let now = ctx.clock.peek();
            let due_later = |r: &Value| {
                r["next_attempt_at"].as_str().is_some_and(|at| {
                    voiceplane_core::time::Timestamp::parse_rfc3339(at, "next_attempt_at").unwrap()
                        > now
                })
            };
            let waiting = rs.values().all(|r| r["status"] != "in_progress")
                && rs
                    .values()
                    .filter(|r| r["status"] == "pending")
                    .all(due_later)
                && rs.values().any(|r| r["status"] == "pending");
            if waiting {
                ctx.clock.advance(61);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        }
        for d in live {
            let n = attempts.entry(d.to.clone()).or_default();
            *n += 1;
            let status = outcome(&d.to, *n);
            ends(&line, &d.call_sid, status).await;
            ended.insert(d.call_sid.clone());
        }
    }
    other.stop().await;

    let calls = dialed(&line).await;
    let mut per_number: HashMap<&str, usize> = HashMap::new();
    for d in &calls {
        *per_number.entry(d.to.as_str()).or_default() += 1;
    }
    for (slot, n) in numbers.iter().enumerate() {
        let expected = match slot {
            7 => 0,
            s if s % 10 == 3 || s % 10 == 5 => 2,
            _ => 1,
        };
        assert_eq!(
            per_number.get(n.as_str()).copied().unwrap_or(0),
            expected,
            "{n}"
        );
    }
    let froms: BTreeSet<&str> = calls.iter().map(|d| d.from.as_str()).collect();
    assert_eq!(froms.len(), 2, "both numbers placed calls: {froms:?}");
    let rs = recipients(&line, &path).await;
    for (slot, n) in numbers.iter().enumerate() {
        let r = &rs[n];
        let (status, tries) = match slot {
            7 => ("suppressed", 0),
            s if s % 10 == 3 => ("failed", 2),
            s if s % 10 == 5 => ("completed", 2),
            _ => ("completed", 1),
        };
        if r["status"] != status {
            let call = line.call(r["last_call_sid"].as_str().unwrap()).await;
            panic!("{r} ended {call}");
        }
        assert_eq!(r["attempts"], tries, "{r}");
    }
    let shown = counts_are_true(&line, &path).await;
    assert_eq!(shown["counts"]["completed"], 44);
    assert_eq!(shown["counts"]["failed"], 5);
    assert_eq!(shown["counts"]["suppressed"], 1);
    // A call carries its campaign and recipient, and the campaign's and recipient's variables.
    let first = line.call(&calls[0].call_sid).await;
    assert_eq!(first["metadata"]["campaign_id"], created["campaign_id"]);
    assert_eq!(first["dynamic_variables"]["offer"], "spring");
    assert!(first["dynamic_variables"]["slot"].is_string(), "{first}");
    let (_, events) = line.c.get("/api/events?type=campaign.completed").await;
    assert_eq!(events["data"].as_array().unwrap().len(), 1);
    line.close().await;
}

/// Windows and calling hours in the callee's zone (the recipient's, else the campaign's for
/// windows and, for a US number, the organization's for the hours): at 00:00 UTC on a
/// Thursday it is 09:00 in Tokyo (called) and 19:00 on Wednesday in New York (waits for 09:00
/// there, 14:00 UTC);
/// paused, a campaign dials no one; canceled, its call in progress finishes and its pending
/// recipients are canceled.
async fn campaigns_wait_for_windows_and_stop_when_told(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line).await;
    let (status, body) = line
        .c
        .send(
            Method::PATCH,
            "/api/organization/settings",
            Some(json!({"calling_hours": {"start": "08:00", "end": "21:00"},
                        "timezone": "Asia/Tokyo"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let created = line
        .c
        .create(
            "/api/campaigns",
            campaign_body(
                &line,
                json!({"windows": [{"days": ["mon", "tue", "wed", "thu", "fri"],
                                    "start": "09:00", "end": "17:00"}],
                       "timezone": "Asia/Tokyo"}),
            ),
        )
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let (status, body) = line
        .c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [
                {"to_number": "+14155550401"},
                {"to_number": "+14155550402", "timezone": "America/New_York"},
                {"to_number": "+14155550403", "timezone": "Asia/Tokyo"},
                {"to_number": "+14155550404", "timezone": "America/New_York"},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    eventually("a Tokyo recipient is dialed", || async {
        dialed(&line).await.len() == 1
    })
    .await;
    let tokyo = ["+14155550401", "+14155550403"];
    let first = dialed(&line).await[0].clone();
    assert!(tokyo.contains(&first.to.as_str()), "{first:?}");

    // Paused, the call in progress ends and nobody else is dialed.
    let (status, _) = line.c.post(&format!("{path}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    ends(&line, &first.call_sid, "completed").await;
    let done = eventually_value(&line, &path, &first.to, |r| r["status"] == "completed").await;
    assert_eq!(done["last_outcome"], "completed");
    assert_eq!(done["last_call_sid"], first.call_sid.as_str());
    assert_eq!(dialed(&line).await.len(), 1);

    // Resumed, the other Tokyo recipient is dialed; once it is done, New York waits for its
    // window.
    let (status, _) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    eventually("the other Tokyo recipient is dialed", || async {
        dialed(&line).await.len() == 2
    })
    .await;
    let second = dialed(&line).await[1].clone();
    assert!(
        tokyo.contains(&second.to.as_str()) && second.to != first.to,
        "{second:?}"
    );
    ends(&line, &second.call_sid, "completed").await;
    for number in ["+14155550402", "+14155550404"] {
        let waiting =
            eventually_value(&line, &path, number, |r| r["next_attempt_at"].is_string()).await;
        assert_eq!(waiting["next_attempt_at"], "2026-01-01T14:00:00.000000Z");
        assert_eq!(waiting["status"], "pending");
        assert_eq!(waiting["attempts"], 0);
    }
    assert_eq!(dialed(&line).await.len(), 2);

    // At 09:00 in New York one is dialed (one call at a time); canceled then, the other is
    // canceled and the call in progress ends normally.
    ctx.clock.advance(14 * 3600);
    eventually("a New York recipient is dialed", || async {
        dialed(&line).await.len() == 3
    })
    .await;
    let third = dialed(&line).await[2].clone();
    let (status, body) = line.c.post(&format!("{path}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"]["counts"]["canceled"], 1);
    assert_eq!(body["data"]["counts"]["in_progress"], 1);
    let call = line.call(&third.call_sid).await;
    assert_ne!(call["status"], "canceled", "{call}");
    ends(&line, &third.call_sid, "completed").await;
    eventually_value(&line, &path, &third.to, |r| r["status"] == "completed").await;
    ctx.clock.advance(3600);
    assert_eq!(
        dialed(&line).await.len(),
        3,
        "nobody is dialed after a cancel"
    );
    let shown = counts_are_true(&line, &path).await;
    assert_eq!(shown["status"], "canceled");
    assert_eq!(shown["counts"]["completed"], 3);
    line.close().await;
}

/// Waits until the recipient `to` of the campaign at `path` satisfies `done`.
async fn eventually_value(
    line: &Line,
    path: &str,
    to: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    eventually(&format!("recipient {to}"), || async {
        recipients(line, path).await.get(to).is_some_and(&done)
    })
    .await;
    recipients(line, path).await[to].clone()
}

/// The resident memory of this process, in MiB (Linux).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// 100,000 rows, the most one upload takes, go in whole; the memory they took is reported.
async fn a_large_csv_uploads_whole(ctx: &TestContext) {
    let line = Line::open_with(
        ctx,
        Provider::Twilio,
        std::time::Duration::from_secs(10),
        false,
    )
    .await;
    let created = line
        .c
        .create("/api/campaigns", campaign_body(&line, json!({})))
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let mut csv = String::from("to_number,first_name\n");
    for i in 0..100_000u64 {
        csv.push_str(&format!("+1{:010},Person {i}\n", 2_000_000_000 + i));
    }
    let before = rss_mib();
    let (status, body) = post_csv(&line, &format!("{path}/recipients"), &csv).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!({"added": 100_000, "duplicates": 0}));
    eprintln!(
        "{:?}: a {:.1} MiB CSV of 100,000 rows: this process's RSS {before:.0} MiB before, {:.0} MiB after",
        ctx.backend,
        csv.len() as f64 / 1048576.0,
        rss_mib()
    );
    assert_eq!(campaign(&line, &path).await["counts"]["total"], 100_000);
    line.close().await;
}

/// `starts_at` holds every dial back until it comes; past `ends_at`, the recipients still
/// pending are canceled and the campaign completes once its call in progress ends.
async fn a_campaign_keeps_to_its_period(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line).await;
    let now = ctx.clock.peek();
    let created = line
        .c
        .create(
            "/api/campaigns",
            campaign_body(
                &line,
                json!({"starts_at": now.add_seconds(3600), "ends_at": now.add_seconds(7200)}),
            ),
        )
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let (status, _) = line
        .c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [{"to_number": "+14155550501"}, {"to_number": "+14155550502"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    // Nothing before `starts_at`: the pacer has run and waits for it.
    let key = format!("campaign.pace:{}", created["campaign_id"].as_str().unwrap());
    let starts = now.add_seconds(3600).as_micros();
    eventually("the pacer waits for starts_at", || async {
        pace_due(ctx, &key).await == Some(starts)
    })
    .await;
    assert!(dialed(&line).await.is_empty(), "dialed before starts_at");
    ctx.clock.advance(3600);
    eventually(
        "the first recipient is dialed once the period starts",
        || async { dialed(&line).await.len() == 1 },
    )
    .await;
    // Past `ends_at`: the other is canceled; the call under way ends, and so does the campaign.
    ctx.clock.advance(3600);
    eventually_value(&line, &path, &the_other(&dialed(&line).await[0].to), |r| {
        r["status"] == "canceled"
    })
    .await;
    let call = dialed(&line).await[0].clone();
    ends(&line, &call.call_sid, "completed").await;
    eventually("the campaign completes", || async {
        campaign(&line, &path).await["status"] == "completed"
    })
    .await;
    let shown = counts_are_true(&line, &path).await;
    assert_eq!(shown["counts"]["completed"], 1);
    assert_eq!(shown["counts"]["canceled"], 1);
    assert_eq!(dialed(&line).await.len(), 1);
    line.close().await;
}

/// Once the month's credits reach `monthly_credit_limit`, a running campaign dials no one and
/// looks again five minutes later; the limit raised, it dials at once.
async fn a_campaign_waits_while_the_credit_limit_is_reached(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line).await;
    let (status, _) = line
        .c
        .send(
            reqwest::Method::PUT,
            "/api/organization/prices",
            Some(json!({"prices": [{"component": "llm", "provider": "openai",
                                    "unit": "requests", "credits_per_unit": 10}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let spent = line
        .c
        .create(
            "/api/calls",
            json!({"agent_id": line.agent_id, "to_number": "+14155550100",
                   "call_type": "outbound", "status": "completed"}),
        )
        .await;
    let (status, body) = line
        .c
        .post(
            &format!("/api/calls/{}/usage", spent["call_sid"].as_str().unwrap()),
            json!({"items": [{"component": "llm", "provider": "openai", "quantity": 1,
                              "unit": "requests"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let limit = |credits: f64| {
        let c = &line.c;
        async move {
            let (status, body) = c
                .send(
                    reqwest::Method::PATCH,
                    "/api/organization/settings",
                    Some(json!({"monthly_credit_limit": credits})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    limit(10.0).await;
    let created = line
        .c
        .create("/api/campaigns", campaign_body(&line, json!({})))
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let (status, _) = line
        .c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [{"to_number": "+14155550501"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let now = ctx.clock.peek();
    let (status, _) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let key = format!("campaign.pace:{}", created["campaign_id"].as_str().unwrap());
    let later = now.add_seconds(290).as_micros();
    eventually("the pacer waits minutes for credit", || async {
        pace_due(ctx, &key).await.is_some_and(|at| at >= later)
    })
    .await;
    assert!(
        dialed(&line).await.is_empty(),
        "dialed past the credit limit"
    );
    assert_eq!(campaign(&line, &path).await["status"], "running");
    // Raised, the limit wakes the pacer: no waiting out its five minutes (DESIGN §23).
    limit(100.0).await;
    dialed_within_two_seconds(&line, 1, "the credit limit raised").await;
    line.close().await;
}

/// A campaign's dial whose outcome is unknown (Twilio answers past the client's timeout, and
/// never shows the call when asked) is never tried again, even with `failed` in `retry.on`:
/// each recipient fails after one request to Twilio. When Twilio later reports the call completed, at once or after `ringing`, the
/// recipient shows it reached.
async fn a_dial_of_unknown_outcome_is_never_retried_yet_learns_its_outcome(ctx: &TestContext) {
    let line = Line::open_with(
        ctx,
        Provider::Twilio,
        std::time::Duration::from_millis(400),
        true,
    )
    .await;
    Mock::given(method("POST"))
        .and(path(CALLS))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"sid": "CA00000000000000000000000000000093"}))
                .set_delay(std::time::Duration::from_secs(3)),
        )
        .mount(&line.provider)
        .await;
    let created = line
        .c
        .create(
            "/api/campaigns",
            campaign_body(
                &line,
                json!({"retry": {"max_attempts": 3, "delay_secs": 60, "on": ["failed"]}}),
            ),
        )
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let (at_once, after_ringing) = ("+14155550501", "+14155550502");
    let (status, _) = line
        .c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": [{"to_number": at_once}, {"to_number": after_ringing}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    // One at a time (the campaign's concurrency): Twilio never shows the call while it is
    // asked, and the next is dialed once the window has passed.
    for sent in 1..=2 {
        eventually("the dial is sent", || async {
            dialed(&line).await.len() == sent
        })
        .await;
        ctx.clock.advance(301);
    }
    eventually("the campaign completes", || async {
        campaign(&line, &path).await["status"] == "completed"
    })
    .await;
    let mut call_sids = Vec::new();
    for to in [at_once, after_ringing] {
        let failed = recipients(&line, &path).await[to].clone();
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["attempts"], 1, "{failed}");
        assert_eq!(failed["last_outcome"], "failed", "{failed}");
        assert_eq!(failed["next_attempt_at"], Value::Null, "{failed}");
        let call_sid = failed["last_call_sid"].as_str().unwrap().to_owned();
        assert_eq!(
            line.call(&call_sid).await["end_reason"],
            "dial_outcome_unknown"
        );
        call_sids.push(call_sid);
    }
    assert_eq!(dialed(&line).await.len(), 2);

    ends(&line, &call_sids[0], "completed").await;
    ends(&line, &call_sids[1], "ringing").await;
    assert_eq!(
        recipients(&line, &path).await[after_ringing]["status"],
        "failed"
    );
    ends(&line, &call_sids[1], "completed").await;
    for (to, call_sid) in [at_once, after_ringing].into_iter().zip(&call_sids) {
        let reached = recipients(&line, &path).await[to].clone();
        assert_eq!(reached["status"], "completed", "{reached}");
        assert_eq!(reached["last_outcome"], "completed", "{reached}");
        assert_eq!(reached["attempts"], 1, "{reached}");
        assert_eq!(line.call(call_sid).await["status"], "completed");
    }
    let shown = counts_are_true(&line, &path).await;
    assert_eq!(shown["counts"]["completed"], 2);
    assert_eq!(shown["counts"]["failed"], 0);
    assert_eq!(dialed(&line).await.len(), 2);
    line.close().await;
}

/// When the pacing job of key `key` is due (queued), in micros.
async fn pace_due(ctx: &TestContext, key: &str) -> Option<i64> {
    use sea_orm::{ConnectionTrait, Statement};
    let db = ctx.repo.connection();
    let backend = db.get_database_backend();
    let sql = match backend {
        sea_orm::DatabaseBackend::Postgres => {
            "SELECT run_at FROM jobs WHERE unique_key = $1 AND status = 'queued'"
        }
        _ => "SELECT run_at FROM jobs WHERE unique_key = ? AND status = 'queued'",
    };
    let row = db
        .query_one_raw(Statement::from_sql_and_values(backend, sql, [key.into()]))
        .await
        .unwrap()?;
    row.try_get::<i64>("", "run_at").ok()
}

fn the_other(to: &str) -> String {
    if to == "+14155550501" {
        "+14155550502".to_owned()
    } else {
        "+14155550501".to_owned()
    }
}

/// Every day of the week, for windows that hold on any day.
const EVERY_DAY: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Waits at most 2 s of real time for the fake's `n`th dial (from 1), which it answers.
async fn dialed_within_two_seconds(line: &Line, n: usize, what: &str) -> Dialed {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        if let Some(d) = dialed(line).await.get(n - 1) {
            return d.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: nobody dialed within 2 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Creates a campaign from `extra` with `recipients` and starts it; its path.
async fn started(line: &Line, extra: Value, recipients: Value) -> String {
    let created = line
        .c
        .create("/api/campaigns", campaign_body(line, extra))
        .await;
    let path = format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    );
    let (status, body) = line
        .c
        .post(
            &format!("{path}/recipients"),
            json!({"recipients": recipients}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = line.c.post(&format!("{path}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    path
}

async fn settings(line: &Line, change: Value) {
    let (status, body) = line
        .c
        .send(Method::PATCH, "/api/organization/settings", Some(change))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// A campaign that waits is paced again within 2 s of each change that can make one of its
/// recipients dialable (DESIGN §23), without the clock reaching the moment it waited for:
/// its windows changed while paused and started again; the organization's calling hours
/// cleared; its `max_concurrent_calls` lifted; a suppression removed; one of its calls ending.
async fn a_waiting_campaign_wakes_within_two_seconds(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line).await;

    // Windows: waiting for 12:00 UTC, paused, given a window open now, started again.
    let a = started(
        &line,
        json!({"windows": [{"days": EVERY_DAY, "start": "12:00", "end": "13:00"}]}),
        json!([{"to_number": "+14155550601", "timezone": "UTC"}]),
    )
    .await;
    let waiting = eventually_value(&line, &a, "+14155550601", |r| {
        r["next_attempt_at"].is_string()
    })
    .await;
    assert_eq!(waiting["next_attempt_at"], "2026-01-01T12:00:00.000000Z");
    let (status, _) = line.c.post(&format!("{a}/pause"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = line
        .c
        .send(
            Method::PATCH,
            &a,
            Some(json!({"windows": [{"days": EVERY_DAY, "start": "00:00", "end": "23:59"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = line.c.post(&format!("{a}/start"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let first = dialed_within_two_seconds(&line, 1, "windows changed").await;
    assert_eq!(first.to, "+14155550601");
    ends(&line, &first.call_sid, "completed").await;

    // Calling hours: waiting for 12:00 UTC, then cleared.
    settings(
        &line,
        json!({"calling_hours": {"start": "12:00", "end": "13:00"}}),
    )
    .await;
    let b = started(
        &line,
        json!({}),
        json!([{"to_number": "+14155550602", "timezone": "UTC"}]),
    )
    .await;
    eventually_value(&line, &b, "+14155550602", |r| {
        r["next_attempt_at"].is_string()
    })
    .await;
    settings(&line, json!({"calling_hours": null})).await;
    let second = dialed_within_two_seconds(&line, 2, "calling hours cleared").await;
    assert_eq!(second.to, "+14155550602");
    ends(&line, &second.call_sid, "completed").await;

    // The organization's concurrency: a single dial holds its one slot, then it is lifted.
    let (status, body) = line.dial(json!({"to_number": "+14155550699"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let single = dialed_within_two_seconds(&line, 3, "a single dial").await;
    settings(&line, json!({"max_concurrent_calls": 1})).await;
    let c = started(
        &line,
        json!({}),
        json!([{"to_number": "+14155550603", "timezone": "UTC"}]),
    )
    .await;
    let key = format!("campaign.pace:{}", c.rsplit('/').next().unwrap());
    eventually("the pacer waits for a slot", || async {
        pace_due(ctx, &key)
            .await
            .is_some_and(|due| due > ctx.clock.peek().as_micros())
    })
    .await;
    assert_eq!(dialed(&line).await.len(), 3, "nobody dialed past the limit");
    settings(&line, json!({"max_concurrent_calls": null})).await;
    let third = dialed_within_two_seconds(&line, 4, "concurrency lifted").await;
    assert_eq!(third.to, "+14155550603");
    ends(&line, &third.call_sid, "completed").await;
    ends(&line, &single.call_sid, "completed").await;

    // A suppression removed: the recipient it stopped is dialed (another one waits for its
    // window, so the campaign is still running).
    let (status, body) = line
        .c
        .post("/api/suppressions", json!({"phone_number": "+14155550604"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let e = started(
        &line,
        json!({"windows": [{"days": EVERY_DAY, "start": "00:00", "end": "06:00"}]}),
        json!([{"to_number": "+14155550604", "timezone": "UTC"},
               {"to_number": "+14155550605", "timezone": "Asia/Tokyo"}]),
    )
    .await;
    eventually_value(&line, &e, "+14155550604", |r| r["status"] == "suppressed").await;
    eventually_value(&line, &e, "+14155550605", |r| {
        r["next_attempt_at"].is_string()
    })
    .await;
    let (status, body) = line
        .c
        .send(Method::DELETE, "/api/suppressions/%2B14155550604", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fifth = dialed_within_two_seconds(&line, 5, "suppression removed").await;
    assert_eq!(fifth.to, "+14155550604");
    ends(&line, &fifth.call_sid, "completed").await;
    let (status, _) = line.c.post(&format!("{e}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK);

    // One of its calls ending, with one call at a time.
    let f = started(
        &line,
        json!({"max_concurrency": 1}),
        json!([{"to_number": "+14155550606", "timezone": "UTC"},
               {"to_number": "+14155550607", "timezone": "UTC"}]),
    )
    .await;
    eventually("the first of two is dialed", || async {
        dialed(&line).await.len() == 6
    })
    .await;
    let sixth = dialed(&line).await[5].clone();
    ends(&line, &sixth.call_sid, "completed").await;
    let seventh = dialed_within_two_seconds(&line, 7, "a call ended").await;
    assert_ne!(seventh.to, sixth.to);
    ends(&line, &seventh.call_sid, "completed").await;
    eventually("the campaign completes", || async {
        campaign(&line, &f).await["status"] == "completed"
    })
    .await;
    line.close().await;
}

/// Deleting a campaign's call, applying its end and pacing its campaign at once, 40 times
/// over with four calls at a time: no deadlock (on Postgres the deadlock detector would
/// answer one of them 500) and no 5xx; every recipient is dialed once and settles.
async fn deleting_ending_and_pacing_at_once_never_deadlock(ctx: &TestContext) {
    let line = Line::open(ctx, Provider::Twilio).await;
    twilio_creates(&line).await;
    settings(&line, json!({"max_concurrent_calls": 100})).await;
    let recipients: Vec<Value> = (0..40)
        .map(|i| json!({"to_number": format!("+1415555{:04}", 3000 + i), "timezone": "UTC"}))
        .collect();
    let path = started(&line, json!({"max_concurrency": 4}), json!(recipients)).await;
    let mut handled = BTreeSet::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let mut tasks = tokio::task::JoinSet::new();
        for d in dialed(&line).await {
            if !handled.insert(d.call_sid.clone()) {
                continue;
            }
            let sid = twilio_sid(&d.call_sid);
            let status = line.twilio_request(
                super::line::TOKEN,
                &format!(
                    "/telephony/twilio/{}/status/{}",
                    line.integration_id, d.call_sid
                ),
                &[("CallSid", sid.as_str()), ("CallStatus", "completed")],
            );
            let delete = line
                .c
                .request(Method::DELETE, &format!("/api/calls/{}", d.call_sid));
            for (what, request) in [("status", status), ("delete", delete)] {
                tasks.spawn(async move {
                    let resp = request.send().await.unwrap();
                    let code = resp.status();
                    (what, code, resp.text().await.unwrap_or_default())
                });
            }
        }
        while let Some(done) = tasks.join_next().await {
            let (what, code, body) = done.unwrap();
            let fine = match what {
                "status" => code == StatusCode::OK,
                _ => code == StatusCode::OK || code == StatusCode::NOT_FOUND,
            };
            assert!(fine, "{what}: {code} {body}");
        }
        let counts = campaign(&line, &path).await["counts"].clone();
        if handled.len() == 40 && counts["pending"] == 0 && counts["in_progress"] == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the campaign never settled: {counts}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let all = dialed(&line).await;
    let numbers: BTreeSet<&str> = all.iter().map(|d| d.to.as_str()).collect();
    assert_eq!((all.len(), numbers.len()), (40, 40), "each dialed once");
    eventually("the campaign completes", || async {
        campaign(&line, &path).await["status"] == "completed"
    })
    .await;
    let shown = counts_are_true(&line, &path).await;
    assert_eq!(
        shown["counts"]["completed"].as_u64().unwrap()
            + shown["counts"]["failed"].as_u64().unwrap(),
        40,
        "{shown}"
    );
    line.close().await;
}

/// One edge of the lock order, checked directly (Postgres; SQLite has no row locks): a
/// campaign call's end comes after the organization and the campaign in the order, so it is
/// applied while another transaction holds both rows (as a pacer's dial does), without
/// waiting for them.
async fn a_call_ends_while_its_campaign_and_organization_are_locked(ctx: &TestContext) {
    use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
    let line = Line::open(ctx, Provider::Twilio).await;
    let db = ctx.repo.connection();
    if db.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
        line.close().await;
        return;
    }
    twilio_creates(&line).await;
    let path = started(
        &line,
        json!({}),
        json!([{"to_number": "+14155550701", "timezone": "UTC"}]),
    )
    .await;
    eventually("the recipient is dialed", || async {
        dialed(&line).await.len() == 1
    })
    .await;
    let call_sid = dialed(&line).await[0].call_sid.clone();
    line.call_until(&call_sid, "the dial is placed", |c| {
        c["provider_call_id"].is_string()
    })
    .await;
    let campaign_id = path.rsplit('/').next().unwrap().to_owned();
    let org = line.c.org.clone().unwrap();
    let holder = db.begin().await.unwrap();
    for (sql, id) in [
        (
            "SELECT 1 FROM organizations WHERE organization_id = $1 FOR NO KEY UPDATE",
            org,
        ),
        (
            "SELECT 1 FROM campaigns WHERE campaign_id = $1 FOR NO KEY UPDATE",
            campaign_id,
        ),
    ] {
        holder
            .execute_raw(Statement::from_sql_and_values(
                sea_orm::DatabaseBackend::Postgres,
                sql,
                [id.into()],
            ))
            .await
            .unwrap();
    }
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        ends(&line, &call_sid, "completed"),
    )
    .await
    .expect("the end is applied while the rows before the call's are held");
    let done = eventually_value(&line, &path, "+14155550701", |r| r["status"] == "completed").await;
    assert_eq!(done["last_outcome"], "completed");
    holder.rollback().await.unwrap();
    eventually("the campaign completes", || async {
        campaign(&line, &path).await["status"] == "completed"
    })
    .await;
    line.close().await;
}

db_tests!(
    a_call_ends_while_its_campaign_and_organization_are_locked,
    a_waiting_campaign_wakes_within_two_seconds,
    deleting_ending_and_pacing_at_once_never_deadlock,
    a_campaign_keeps_to_its_period,
    a_campaign_waits_while_the_credit_limit_is_reached,
    a_large_csv_uploads_whole,
    campaigns_move_through_their_states,
    csv_uploads_are_all_or_nothing,
    a_campaign_calls_everyone_within_its_concurrency,
    a_dial_of_unknown_outcome_is_never_retried_yet_learns_its_outcome,
    campaigns_wait_for_windows_and_stop_when_told,
);
