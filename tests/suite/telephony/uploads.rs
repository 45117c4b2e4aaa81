//! CSV uploads of campaign recipients read and check their whole body before the transaction
//! that inserts them opens (DESIGN §23): a slowly streamed upload holds no lock, so other
//! writes (an incoming call, a new agent, a change to the same campaign) answer at once
//! meanwhile, on SQLite's one writer as on Postgres's row locks; a body slower than the read
//! deadline is a 408 and adds nothing. What uploads accept and refuse is in `campaigns.rs`.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use voiceplane_suite::*;

use super::line::{Line, NUMBER, Provider};

/// How long another write may take while an upload streams in: far more than it takes alone,
/// far less than the 5 s after which a write waiting for SQLite's write lock fails.
const BUDGET: Duration = Duration::from_secs(2);

/// A request body fed through a channel, so that the test decides when each piece is sent.
struct Pieces(tokio::sync::mpsc::Receiver<Vec<u8>>);

impl futures_core::Stream for Pieces {
    type Item = Result<Vec<u8>, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|piece| piece.map(Ok))
    }
}

/// A draft campaign of the line's agent; its path.
async fn campaign(line: &Line) -> String {
    let created = line
        .c
        .create(
            "/api/campaigns",
            json!({"name": "Renewals", "agent_id": line.agent_id,
                   "from_phone_number_ids": [line.number_id]}),
        )
        .await;
    format!(
        "/api/campaigns/{}",
        created["campaign_id"].as_str().unwrap()
    )
}

/// A CSV of `rows` distinct numbers, in `pieces` pieces.
fn csv(rows: u64, pieces: usize) -> Vec<Vec<u8>> {
    let mut body = String::from("to_number,first_name\n");
    for i in 0..rows {
        body.push_str(&format!("+1{:010},Person {i}\n", 2_000_000_000 + i));
    }
    let size = body.len().div_ceil(pieces);
    body.into_bytes().chunks(size).map(<[u8]>::to_vec).collect()
}

/// `POST {path}/recipients` of a CSV whose pieces come from the returned sender.
fn upload(
    line: &Line,
    path: &str,
) -> (
    tokio::sync::mpsc::Sender<Vec<u8>>,
    tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
) {
    let (pieces, body) = tokio::sync::mpsc::channel(1);
    let request = line
        .c
        .request(Method::POST, &format!("{path}/recipients"))
        .header("content-type", "text/csv")
        .body(reqwest::Body::wrap_stream(Pieces(body)));
    (pieces, tokio::spawn(request.send()))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// 100,000 rows sent in 50 pieces over about five seconds: while they arrive incoming calls
/// are answered, an agent is created and the campaign itself is renamed, each within
/// [`BUDGET`]; then every row is added. (The transaction that then inserts them holds
/// SQLite's write lock while it runs: `benches/campaigns.rs` measures what that costs.)
async fn a_slow_csv_upload_holds_up_no_other_write(ctx: &TestContext) {
    let line = Line::open_with(ctx, Provider::Twilio, Duration::from_secs(10), false).await;
    let path = campaign(&line).await;
    let (pieces, answer) = upload(&line, &path);
    let mut body = csv(100_000, 50);
    let last = body.pop().unwrap();
    // A slow client: a piece every 100 ms, all but the last one, which is sent once the other
    // writes are done, so that all of them ran while the body was still arriving.
    let sender = tokio::spawn(async move {
        let mut pace = tokio::time::interval(Duration::from_millis(100));
        for piece in body {
            pace.tick().await;
            pieces
                .send(piece)
                .await
                .expect("the server reads the upload");
        }
        pieces
    });
    let mut answers = Vec::new();
    let mut round = 0u32;
    while !sender.is_finished() {
        round += 1;
        let call_sid = format!("CA{round:032}");
        let started = Instant::now();
        let resp = tokio::time::timeout(
            BUDGET,
            line.twilio(
                "/voice",
                &[
                    ("CallSid", &call_sid),
                    ("From", "+33612345678"),
                    ("To", NUMBER),
                ],
            ),
        )
        .await
        .expect("an incoming call is answered while the upload streams in");
        assert_eq!(resp.status(), StatusCode::OK);
        answers.push(started.elapsed());
        let (status, body) = tokio::time::timeout(
            BUDGET,
            line.c.send(
                Method::POST,
                "/api/agents",
                Some(agent_body(&format!("Agent {round}"))),
            ),
        )
        .await
        .expect("an agent is created while the upload streams in");
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = tokio::time::timeout(
            BUDGET,
            line.c.send(
                Method::PATCH,
                &path,
                Some(json!({"name": format!("Renewals {round}")})),
            ),
        )
        .await
        .expect("the campaign is changed while recipients stream in");
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    assert!(round >= 3, "only {round} rounds ran during the upload");
    let pieces = sender.await.unwrap();
    pieces.send(last).await.unwrap();
    drop(pieces);
    let resp = answer.await.unwrap().unwrap();
    let (status, body) = read_json(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!({"added": 100_000, "duplicates": 0}));
    answers.sort();
    eprintln!(
        "{:?}: {} incoming calls during a slow 100,000-row upload: p50 {:?}, p99 {:?}",
        ctx.backend,
        answers.len(),
        percentile(&answers, 0.5),
        percentile(&answers, 0.99)
    );
    line.close().await;
}

/// A CSV that has not arrived by the read deadline (1 s here) is answered 408 at once, without
/// waiting for the rest, and adds nothing; one sent in time is taken as before.
async fn a_csv_slower_than_its_deadline_is_refused_and_adds_nothing(ctx: &TestContext) {
    let line = Line::open_built(
        ctx,
        Provider::Twilio,
        Duration::from_secs(10),
        false,
        |api| {
            api.with_config(voiceplane_http::HttpConfig {
                csv_read_timeout: Duration::from_secs(1),
                ..Default::default()
            })
        },
    )
    .await;
    let path = campaign(&line).await;
    let (pieces, answer) = upload(&line, &path);
    let mut body = csv(1_000, 4).into_iter();
    pieces.send(body.next().unwrap()).await.unwrap();
    // The rest never comes: the sender is kept, so the body never ends.
    let resp = tokio::time::timeout(Duration::from_secs(20), answer)
        .await
        .expect("answered without waiting for the rest of the body")
        .unwrap()
        .unwrap();
    let (status, v) = read_json(resp).await;
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("the CSV did not arrive in time"),
        "{v}"
    );
    drop(pieces);
    let (status, listed) = line.c.get(&format!("{path}/recipients")).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["data"], json!([]), "nothing was added");

    let (pieces, answer) = upload(&line, &path);
    for piece in csv(1_000, 4) {
        pieces.send(piece).await.unwrap();
    }
    drop(pieces);
    let (status, v) = read_json(answer.await.unwrap().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["data"], json!({"added": 1_000, "duplicates": 0}));
    let (_, campaign): (StatusCode, Value) = line.c.get(&path).await;
    assert_eq!(campaign["data"]["counts"]["total"], 1_000);
    line.close().await;
}

db_tests!(
    a_slow_csv_upload_holds_up_no_other_write,
    a_csv_slower_than_its_deadline_is_refused_and_adds_nothing,
);
