//! The webhook sender against receivers on loopback: the Standard Webhooks headers, checked
//! with the specification's reference library (an implementation independent of ours), the
//! outcome of every kind of answer, and the target policy refusing loopback before any byte
//! is sent, for IP literals and for names that resolve to loopback.

use std::io::{Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use standardwebhooks::Webhook;
use voiceplane_clients::{HttpWebhookSender, WebhookSenderSettings};
use voiceplane_core::webhooks::{
    DeliveryOutcome, DeliveryRequest, RESPONSE_EXCERPT_CHARS, TargetPolicy, WebhookSecret,
    WebhookSender, sign,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{TIMEOUT, UPSTREAM_BODY, refused_url};

const EVENT_ID: &str = "evt_0123456789abcdef";
const BODY: &str = r#"{"type":"webhook.test"}"#;

/// A sender with [`TIMEOUT`] that may reach loopback, or not.
fn sender(allow_private: bool) -> HttpWebhookSender {
    HttpWebhookSender::new(WebhookSenderSettings {
        timeout: TIMEOUT,
        policy: TargetPolicy { allow_private },
    })
    .unwrap()
}

fn now() -> i64 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    i64::try_from(secs).unwrap()
}

/// [`BODY`] as event [`EVENT_ID`] to `url`, signed now with `secrets`.
fn request(url: &str, secrets: &[WebhookSecret]) -> DeliveryRequest {
    DeliveryRequest::signed(url, EVENT_ID, now(), BODY, secrets)
}

/// A receiver answering `template` on `POST /hook`.
async fn receiver(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

/// Asserts that `outcome` failed with `sentence`, which repeats no secret and no body.
fn assert_failed(outcome: &DeliveryOutcome, sentence: &str, secrets: &[WebhookSecret]) {
    assert!(!outcome.succeeded, "{outcome:?}");
    let error = outcome.error.as_deref().unwrap();
    assert_eq!(error, sentence);
    assert!(!error.contains(UPSTREAM_BODY));
    for secret in secrets {
        assert!(!error.contains(&secret.expose()["whsec_".len()..]));
    }
}

#[test]
fn signatures_agree_with_the_reference_library() {
    // The same vector as voiceplane-core's unit test, from both implementations.
    let secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let expected = "v1,tEj2G1Zuqvcb5oM3S/XkY1jm/kmjQaITbCsrsSD+nPQ=";
    let reference = Webhook::new(secret)
        .unwrap()
        .sign(EVENT_ID, 1_800_000_000, BODY.as_bytes())
        .unwrap();
    assert_eq!(reference, expected);
    let ours = sign(
        &[WebhookSecret::parse(secret).unwrap()],
        EVENT_ID,
        1_800_000_000,
        BODY.as_bytes(),
    );
    assert_eq!(ours, expected);
}

#[tokio::test]
async fn a_2xx_is_a_success_with_standard_webhooks_headers() {
    let server = receiver(ResponseTemplate::new(202).set_body_string("queued\n")).await;
    let secret = WebhookSecret::generate();
    let req = request(
        &format!("{}/hook", server.uri()),
        std::slice::from_ref(&secret),
    );
    let outcome = sender(true).deliver(&req).await;
    assert!(outcome.succeeded, "{outcome:?}");
    assert_eq!(outcome.status_code, Some(202));
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.response_excerpt.as_deref(), Some("queued"));
    assert!(outcome.duration < TIMEOUT);

    let received = crate::only_request(&server).await;
    assert_eq!(received.body, BODY.as_bytes());
    let header = |name: &str| received.headers.get(name).unwrap().to_str().unwrap();
    assert_eq!(header("webhook-id"), EVENT_ID);
    assert_eq!(header("webhook-timestamp"), req.timestamp.to_string());
    assert!((now() - header("webhook-timestamp").parse::<i64>().unwrap()).abs() < 60);
    assert_eq!(header("content-type"), "application/json");
    assert_eq!(
        header("user-agent"),
        concat!("voiceplane-webhooks/", env!("CARGO_PKG_VERSION"))
    );
    let signature = header("webhook-signature");
    assert_eq!(signature.split(' ').count(), 1);
    assert!(signature.starts_with("v1,"), "{signature}");

    Webhook::new(&secret.expose())
        .unwrap()
        .verify(&received.body, &received.headers)
        .expect("the reference library accepts the delivery");
    let other = WebhookSecret::generate();
    assert!(
        Webhook::new(&other.expose())
            .unwrap()
            .verify(&received.body, &received.headers)
            .is_err()
    );
    let mut tampered = received.body.clone();
    tampered.push(b' ');
    assert!(
        Webhook::new(&secret.expose())
            .unwrap()
            .verify(&tampered, &received.headers)
            .is_err()
    );
}

#[tokio::test]
async fn during_a_rotation_both_secrets_verify() {
    let server = receiver(ResponseTemplate::new(200)).await;
    let (old, new) = (WebhookSecret::generate(), WebhookSecret::generate());
    let req = request(
        &format!("{}/hook", server.uri()),
        &[old.clone(), new.clone()],
    );
    let outcome = sender(true).deliver(&req).await;
    assert!(outcome.succeeded, "{outcome:?}");
    assert_eq!(outcome.response_excerpt, None);

    let received = crate::only_request(&server).await;
    let signature = received.headers.get("webhook-signature").unwrap();
    let parts: Vec<&str> = signature.to_str().unwrap().split(' ').collect();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_ne!(parts[0], parts[1]);
    // The reference verifier accepts a header when one of its signatures is the key's; with
    // two keys and two signatures, both signatures are therefore right.
    for secret in [&old, &new] {
        Webhook::new(&secret.expose())
            .unwrap()
            .verify(&received.body, &received.headers)
            .expect("each secret verifies");
    }
}

#[tokio::test]
async fn a_500_is_a_failure_naming_the_status() {
    let server = receiver(ResponseTemplate::new(500).set_body_string(UPSTREAM_BODY)).await;
    let secret = WebhookSecret::generate();
    let outcome = sender(true)
        .deliver(&request(
            &format!("{}/hook", server.uri()),
            std::slice::from_ref(&secret),
        ))
        .await;
    assert_failed(&outcome, "the endpoint answered 500", &[secret]);
    assert_eq!(outcome.status_code, Some(500));
    // The body is kept only as the excerpt shown in the deliveries list.
    assert_eq!(outcome.response_excerpt.as_deref(), Some(UPSTREAM_BODY));
}

#[tokio::test]
async fn a_slow_endpoint_times_out() {
    let server = receiver(ResponseTemplate::new(200).set_delay(Duration::from_secs(3))).await;
    let outcome = sender(true)
        .deliver(&request(&format!("{}/hook", server.uri()), &[]))
        .await;
    assert_failed(&outcome, "the endpoint did not answer within 300 ms", &[]);
    assert_eq!(outcome.status_code, None);
    assert!(outcome.duration >= TIMEOUT, "{:?}", outcome.duration);
    assert!(
        outcome.duration < Duration::from_secs(2),
        "{:?}",
        outcome.duration
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let server = MockServer::start().await;
    Mock::given(path("/hook"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("{}/elsewhere", server.uri())),
        )
        .mount(&server)
        .await;
    Mock::given(path("/elsewhere"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .named("the redirect target")
        .mount(&server)
        .await;
    let outcome = sender(true)
        .deliver(&request(&format!("{}/hook", server.uri()), &[]))
        .await;
    assert_failed(
        &outcome,
        "the endpoint redirected (302); redirects are not followed",
        &[],
    );
    assert_eq!(outcome.status_code, Some(302));
    assert_eq!(crate::only_request(&server).await.url.path(), "/hook");
}

#[tokio::test]
async fn a_large_answer_leaves_a_short_excerpt() {
    let server =
        receiver(ResponseTemplate::new(200).set_body_string("x".repeat(1024 * 1024))).await;
    let outcome = sender(true)
        .deliver(&request(&format!("{}/hook", server.uri()), &[]))
        .await;
    assert!(outcome.succeeded, "{outcome:?}");
    let excerpt = outcome.response_excerpt.unwrap();
    assert_eq!(excerpt.chars().count(), RESPONSE_EXCERPT_CHARS);
}

/// A receiver that answers 200 and then streams a body that never ends: the sender must stop
/// reading after 64 KiB instead of waiting for its time limit.
#[tokio::test]
async fn an_endless_answer_is_not_read_to_the_end() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let written = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = [0; 4096];
        let _ = stream.read(&mut head).unwrap();
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n")
            .unwrap();
        let chunk = [b'y'; 1024];
        let mut total = 0usize;
        // Ends when the sender hangs up or after 64 MiB, so a broken sender cannot hang the test.
        while total < 64 * 1024 * 1024 && stream.write_all(&chunk).is_ok() {
            total += chunk.len();
        }
        total
    });
    let sender = HttpWebhookSender::new(WebhookSenderSettings {
        timeout: Duration::from_secs(5),
        policy: TargetPolicy {
            allow_private: true,
        },
    })
    .unwrap();
    let outcome = sender.deliver(&request(&url, &[])).await;
    assert!(outcome.succeeded, "{outcome:?}");
    assert_eq!(outcome.status_code, Some(200));
    assert_eq!(
        outcome.response_excerpt.unwrap(),
        "y".repeat(RESPONSE_EXCERPT_CHARS)
    );
    assert!(
        outcome.duration < Duration::from_secs(2),
        "{:?}",
        outcome.duration
    );
    drop(sender);
    let total = tokio::task::spawn_blocking(move || written.join().unwrap())
        .await
        .unwrap();
    assert!(total < 64 * 1024 * 1024, "the sender read {total} bytes");
}

#[tokio::test]
async fn a_closed_port_is_a_connection_failure() {
    let outcome = sender(true)
        .deliver(&request(&format!("{}/hook", refused_url()), &[]))
        .await;
    assert_failed(&outcome, "could not connect to the endpoint", &[]);
    assert_eq!(outcome.status_code, None);
}

#[tokio::test]
async fn a_malformed_url_is_a_failure() {
    for url in ["not a url", "ftp://example.com/hook"] {
        let outcome = sender(false).deliver(&request(url, &[])).await;
        assert_failed(
            &outcome,
            "the endpoint's URL is not an absolute http:// or https:// URL",
            &[],
        );
    }
}

#[tokio::test]
async fn loopback_literals_are_refused_before_sending() {
    let server = receiver(ResponseTemplate::new(200)).await;
    let port = server.address().port();
    for (url, ip) in [
        (server.uri(), "127.0.0.1"),
        (format!("http://[::1]:{port}"), "::1"),
        (
            format!("http://[::ffff:127.0.0.1]:{port}"),
            "::ffff:127.0.0.1",
        ),
        // Another spelling of 127.0.0.1, normalized by the URL parser before the check.
        (format!("http://2130706433:{port}"), "127.0.0.1"),
    ] {
        let outcome = sender(false)
            .deliver(&request(&format!("{url}/hook"), &[]))
            .await;
        assert_failed(
            &outcome,
            &format!("the endpoint's address {ip} is private; private targets are not allowed"),
            &[],
        );
        assert_eq!(outcome.status_code, None);
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_at_resolution() {
    let server = receiver(ResponseTemplate::new(200)).await;
    let url = format!("http://localhost:{}/hook", server.address().port());
    let outcome = sender(false).deliver(&request(&url, &[])).await;
    assert!(!outcome.succeeded);
    let error = outcome.error.unwrap();
    assert!(
        error.starts_with("the endpoint's address ")
            && error.ends_with(" is private; private targets are not allowed"),
        "{error}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());

    // The same URL is delivered when private targets are allowed: the refusal was the policy's.
    let outcome = sender(true).deliver(&request(&url, &[])).await;
    assert!(outcome.succeeded, "{outcome:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}
