//! The provider signature checks against the providers' own reference implementations:
//! Twilio's `RequestValidator` (PyPI `twilio`) and the Ed25519 of Telnyx's SDK (PyNaCl), run
//! by the Python that `VOICEPLANE_TEST_PYTHON_REFERENCE` names (`.ci/run` makes one in its
//! cache). Without it the test says it was skipped, or fails when
//! `VOICEPLANE_TEST_REQUIRE_PYTHON_REFERENCE=1`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};
use voiceplane_core::telephony::signature::{telnyx_valid, twilio_signature, twilio_valid};

const PYTHON_VAR: &str = "VOICEPLANE_TEST_PYTHON_REFERENCE";
const REQUIRE_VAR: &str = "VOICEPLANE_TEST_REQUIRE_PYTHON_REFERENCE";

/// The reference Python, for `what`; `None` (the test says it was skipped) without it, or a
/// failure when it is required.
pub(super) fn reference_python(what: &str) -> Option<String> {
    match std::env::var(PYTHON_VAR) {
        Ok(python) => Some(python),
        Err(_) if std::env::var(REQUIRE_VAR).as_deref() == Ok("1") => {
            panic!("{PYTHON_VAR} is not set but {REQUIRE_VAR}=1")
        }
        Err(_) => {
            eprintln!("SKIPPED {what}: {PYTHON_VAR} is not set");
            None
        }
    }
}

/// `reference.py` running under the reference Python, one JSON request and answer per line.
struct Reference {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Reference {
    fn start() -> Option<Self> {
        let python = reference_python("the reference signature checks")?;
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/suite/telephony/reference.py"
        );
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the reference Python starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Some(Self {
            child,
            stdin,
            stdout,
        })
    }

    fn ask(&mut self, request: Value) -> Value {
        writeln!(self.stdin, "{request}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let answer: Value = serde_json::from_str(&line).expect("the reference answers JSON");
        assert!(answer.get("error").is_none(), "{answer}");
        answer
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Twilio: our signature is the reference's for URLs with and without query strings and
/// ports and for forms with non-ASCII values; the reference validator accepts ours, also
/// behind a proxy that adds the default port, and we accept the reference's.
#[test]
fn twilio_signatures_agree_with_twilios_request_validator() {
    let Some(mut reference) = Reference::start() else {
        return;
    };
    let forms: [&[(&str, &str)]; 3] = [
        &[
            ("CallSid", "CA1234567890ABCDE"),
            ("From", "+14158675309"),
            ("To", "+18005551212"),
            ("CallStatus", "ringing"),
        ],
        &[
            ("Body", "Grüße & <tschüss> = 100% \"ok\""),
            ("AccountSid", "AC1"),
        ],
        &[],
    ];
    let urls = [
        "https://voice.example.com/telephony/twilio/intg_0123456789ab/voice",
        "https://voice.example.com/telephony/twilio/intg_0123456789ab/status/call_1?x=1&y=%2F",
        "http://127.0.0.1:8080/telephony/twilio/intg_0123456789ab/voice",
    ];
    for token in ["12345", "a long auth token with spaces and ünicode"] {
        for url in urls {
            for form in forms {
                let params: Vec<(String, String)> = form
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                    .collect();
                let dict: Map<String, Value> = form
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), json!(v)))
                    .collect();
                let ours = twilio_signature(token, url, &params);
                let theirs = reference
                    .ask(json!({"op": "twilio_sign", "token": token, "url": url, "params": dict}))
                    ["signature"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                assert_eq!(ours, theirs, "{url} {form:?}");
                assert!(twilio_valid(token, url, &params, &theirs));
                let with_port = url.replace("voice.example.com/", "voice.example.com:443/");
                for seen in [url, with_port.as_str()] {
                    let valid = reference.ask(json!({"op": "twilio_validate", "token": token,
                        "url": seen, "params": dict, "signature": ours}))["valid"]
                        .as_bool()
                        .unwrap();
                    assert!(valid, "the reference refuses our signature for {seen}");
                    assert!(twilio_valid(token, seen, &params, &theirs), "{seen}");
                }
                assert!(!twilio_valid("another token", url, &params, &theirs));
            }
        }
    }
}

/// Telnyx: what PyNaCl signs over `"{timestamp}|{body}"` with the account's key verifies
/// here with its public key, and nothing else does.
#[test]
fn telnyx_signatures_agree_with_pynacl() {
    let Some(mut reference) = Reference::start() else {
        return;
    };
    let seed = "0707070707070707070707070707070707070707070707070707070707070707";
    let public = reference.ask(json!({"op": "ed25519_keypair", "seed_hex": seed}))["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let now = 1_800_000_000_i64;
    let body =
        br#"{"data":{"event_type":"call.initiated","payload":{"call_control_id":"v3:abc"}}}"#;
    let mut signed = format!("{now}|").into_bytes();
    signed.extend_from_slice(body);
    let signature = reference.ask(
        json!({"op": "ed25519_sign", "seed_hex": seed, "message_b64": STANDARD.encode(&signed)}),
    )["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(telnyx_valid(
        &public,
        &now.to_string(),
        body,
        &signature,
        now
    ));
    assert!(telnyx_valid(
        &public,
        &now.to_string(),
        body,
        &signature,
        now - 299
    ));
    assert!(!telnyx_valid(
        &public,
        &now.to_string(),
        body,
        &signature,
        now + 301
    ));
    assert!(!telnyx_valid(
        &public,
        &(now + 1).to_string(),
        body,
        &signature,
        now
    ));
    let mut tampered = body.to_vec();
    tampered[10] ^= 1;
    assert!(!telnyx_valid(
        &public,
        &now.to_string(),
        &tampered,
        &signature,
        now
    ));
}
