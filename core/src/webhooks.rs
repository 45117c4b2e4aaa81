//! Webhook delivery primitives, following the Standard Webhooks specification: endpoint secrets
//! (`whsec_…`), the `webhook-signature` header, the request a delivery sends and the outcome it
//! records, the [`WebhookSender`] that performs it, and the [`TargetPolicy`] that keeps
//! deliveries away from loopback, private and other non-public addresses.
//!
//! The policy is applied twice: [`TargetPolicy::check_url`] when an endpoint's URL is created or
//! changed (an IP-literal host is judged then), and by the sender after every DNS resolution, so
//! that a hostname which later resolves to an internal address (DNS rebinding) is still refused.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use url::{Host, Url};

use crate::error::{Error, Result};

type HmacSha256 = Hmac<Sha256>;

/// Resolves host names, for the check of an endpoint's URL when it is created or changed.
/// Core defines it and does not implement it: resolving is I/O (the system resolver blocks a
/// thread per lookup), which belongs to the adapters (`voiceplane_clients::SystemResolver`).
/// The service bounds every lookup with a timeout of its own
/// ([`Service::with_resolver`](crate::service::Service::with_resolver)), so an implementation
/// need not, and one that never answers costs the request that timeout.
#[async_trait]
pub trait Resolver: Send + Sync {
    /// The addresses `host` resolves to; an error when it does not resolve.
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// How long the check of an endpoint's URL waits for its host to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// What every endpoint secret starts with.
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";

/// Length of the random key behind a secret.
const SECRET_KEY_LEN: usize = 32;

/// How long a delivery may take, from sending to the end of the response.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a response body a delivery reads; the rest is never received.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// The most characters of a response body kept with a delivery attempt.
pub const RESPONSE_EXCERPT_CHARS: usize = 256;

/// An endpoint's signing secret: `whsec_` and the standard base64 of 32 random bytes.
/// `Debug` never shows the key; [`expose`](Self::expose) is for the one response that shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret {
    key: [u8; SECRET_KEY_LEN],
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

impl WebhookSecret {
    /// A new secret from the thread's CSPRNG.
    pub fn generate() -> Self {
        Self {
            key: rand::random(),
        }
    }

    /// Parses a secret in the `whsec_<base64 of 32 bytes>` form; anything else is a 400 whose
    /// sentence does not repeat the value.
    pub fn parse(secret: &str) -> Result<Self> {
        let malformed =
            || Error::invalid("a webhook secret is `whsec_` followed by the base64 of 32 bytes");
        let encoded = secret
            .strip_prefix(WEBHOOK_SECRET_PREFIX)
            .ok_or_else(malformed)?;
        let key = BASE64.decode(encoded).map_err(|_| malformed())?;
        Ok(Self {
            key: key.try_into().map_err(|_| malformed())?,
        })
    }

    /// The secret as the API shows it, once, on create and rotate.
    pub fn expose(&self) -> String {
        format!("{WEBHOOK_SECRET_PREFIX}{}", BASE64.encode(self.key))
    }
}

/// The value of the `webhook-signature` header for one delivery attempt: `v1,<base64 of
/// HMAC-SHA256(key, "{msg_id}.{timestamp}.{body}")>` for each secret, space-separated. An
/// endpoint whose secret is being rotated has two, so receivers holding either one verify.
pub fn sign(secrets: &[WebhookSecret], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|secret| signature_v1(&secret.key, msg_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

fn signature_v1(key: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

/// One attempt to deliver an event to an endpoint, signed and ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRequest {
    /// The endpoint's URL, as stored.
    pub url: String,
    /// The `webhook-id` header: the event id, the same on every attempt so that receivers can
    /// deduplicate.
    pub msg_id: String,
    /// The `webhook-timestamp` header: Unix seconds of this attempt.
    pub timestamp: i64,
    /// The event as JSON.
    pub body: Bytes,
    /// The `webhook-signature` header (see [`sign`]).
    pub signature: String,
}

impl DeliveryRequest {
    /// The request delivering `body` as event `msg_id` at `timestamp`, signed with `secrets`.
    pub fn signed(
        url: impl Into<String>,
        msg_id: impl Into<String>,
        timestamp: i64,
        body: impl Into<Bytes>,
        secrets: &[WebhookSecret],
    ) -> Self {
        let msg_id = msg_id.into();
        let body = body.into();
        let signature = sign(secrets, &msg_id, timestamp, &body);
        Self {
            url: url.into(),
            msg_id,
            timestamp,
            body,
            signature,
        }
    }
}

/// What one delivery attempt came to, as recorded on the delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryOutcome {
    /// The HTTP status the endpoint answered with, if it answered.
    pub status_code: Option<u16>,
    /// Whether the endpoint answered 2xx in time.
    pub succeeded: bool,
    /// Why the attempt failed, as a sentence safe to show to the endpoint's owner: it never
    /// contains a secret or the response body.
    pub error: Option<String>,
    /// The start of the response body (see [`excerpt`]), when there was one.
    pub response_excerpt: Option<String>,
    /// From sending the request to the end of the response (or the failure).
    pub duration: Duration,
}

/// The first [`RESPONSE_EXCERPT_CHARS`] characters of a response body (invalid UTF-8
/// replaced), or `None` for a blank body.
pub fn excerpt(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| text.chars().take(RESPONSE_EXCERPT_CHARS).collect())
}

/// Sends delivery attempts. The HTTP implementation lives in `voiceplane-clients`; tests can
/// substitute a recorder.
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// Makes one attempt; every failure is described in the outcome, none is returned.
    async fn deliver(&self, request: &DeliveryRequest) -> DeliveryOutcome;
}

/// Which addresses deliveries may reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Whether loopback, private and other non-public addresses are allowed (a receiver on
    /// the same machine or network, in development and tests). Off by default.
    pub allow_private: bool,
}

impl TargetPolicy {
    /// Checks an endpoint URL given on create or update: `http` or `https`, with a host, and
    /// unless private targets are allowed, a host that is neither a non-public IP address nor
    /// `localhost`. Other hostnames are judged after resolution, at delivery time.
    pub fn check_url(&self, url: &str) -> Result<Url> {
        let parsed = Url::parse(url.trim())
            .map_err(|_| Error::invalid("url must be an absolute http:// or https:// URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::invalid("url must be an http:// or https:// URL"));
        }
        let private = match parsed.host() {
            None => return Err(Error::invalid("url must name a host")),
            Some(_) if self.allow_private => None,
            Some(Host::Ipv4(ip)) => (!is_public(IpAddr::V4(ip))).then(|| ip.to_string()),
            Some(Host::Ipv6(ip)) => (!is_public(IpAddr::V6(ip))).then(|| ip.to_string()),
            // Resolvers answer `localhost` and its subdomains from loopback without asking DNS,
            // so the answer is known now and the owner learns it at once.
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.');
                (name == "localhost" || name.ends_with(".localhost")).then(|| name.to_owned())
            }
        };
        match private {
            Some(target) => Err(Error::invalid(format!(
                "url points to a private address ({target}); private targets are not allowed"
            ))),
            None => Ok(parsed),
        }
    }

    /// Checks an address a delivery is about to connect to.
    pub fn check_addr(&self, ip: IpAddr) -> std::result::Result<(), PrivateAddress> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(PrivateAddress(ip))
        }
    }
}

/// A delivery refused because its target address is not public. Its sentence is safe to
/// record on the delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrivateAddress(pub IpAddr);

impl fmt::Display for PrivateAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the endpoint's address {} is private; private targets are not allowed",
            self.0
        )
    }
}

impl std::error::Error for PrivateAddress {}

/// Whether `ip` is a public unicast address, one a delivery may reach by default. Not public:
/// unspecified, loopback, private, shared (carrier-grade NAT), link-local, unique-local,
/// multicast, broadcast and reserved addresses, including IPv4 addresses written as IPv6
/// (`::ffff:a.b.c.d`, and NAT64's `64:ff9b::a.b.c.d`, which a NAT64 gateway would forward to
/// the embedded IPv4 address).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        // 0.0.0.0/8 "this network": connecting to it reaches the local host on Linux.
        || a == 0
        // 100.64.0.0/10, shared address space of carrier-grade NAT.
        || (a == 100 && (b & 0xc0) == 64)
        // 240.0.0.0/4, reserved (the broadcast address above is its last one).
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        return is_public_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    }
    let first = segments[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // fc00::/7, unique local addresses.
        || (first & 0xfe00) == 0xfc00
        // fe80::/10, link-local unicast.
        || (first & 0xffc0) == 0xfe80
        // fec0::/10, the deprecated site-local addresses, still private where used.
        || (first & 0xffc0) == 0xfec0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 32-byte key 0, 1, …, 31; also used by the HTTP sender's tests, which verify with
    /// the Standard Webhooks reference library.
    const SECRET: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const BODY: &str = r#"{"type":"webhook.test"}"#;
    /// HMAC-SHA256 of `evt_0123456789abcdef.1800000000.{BODY}` under [`SECRET`], computed
    /// outside this crate.
    const SIGNATURE: &str = "v1,tEj2G1Zuqvcb5oM3S/XkY1jm/kmjQaITbCsrsSD+nPQ=";

    #[test]
    fn signatures_match_known_vectors() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        assert_eq!(
            sign(
                std::slice::from_ref(&secret),
                "evt_0123456789abcdef",
                1_800_000_000,
                BODY.as_bytes()
            ),
            SIGNATURE
        );
        // The specification's own example (a 24-byte key, which our secrets never have).
        let key = BASE64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            signature_v1(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn several_secrets_give_one_signature_each() {
        let old = WebhookSecret::parse(SECRET).unwrap();
        let new = WebhookSecret::generate();
        let header = sign(
            &[old, new.clone()],
            "evt_0123456789abcdef",
            1_800_000_000,
            BODY.as_bytes(),
        );
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], SIGNATURE);
        assert_eq!(
            parts[1],
            sign(
                &[new],
                "evt_0123456789abcdef",
                1_800_000_000,
                BODY.as_bytes()
            )
        );
        assert_eq!(sign(&[], "evt_1", 1, b"{}"), "");
        let request = DeliveryRequest::signed(
            "https://example.com/hook",
            "evt_0123456789abcdef",
            1_800_000_000,
            BODY,
            &[WebhookSecret::parse(SECRET).unwrap()],
        );
        assert_eq!(request.signature, SIGNATURE);
        assert_eq!(request.body, BODY.as_bytes());
    }

    #[test]
    fn secrets_round_trip_and_stay_hidden() {
        let secret = WebhookSecret::generate();
        let shown = secret.expose();
        assert!(shown.starts_with("whsec_"));
        assert_eq!(shown.len(), "whsec_".len() + 44);
        assert_eq!(WebhookSecret::parse(&shown).unwrap(), secret);
        assert_ne!(WebhookSecret::generate(), secret);
        assert_eq!(WebhookSecret::parse(SECRET).unwrap().expose(), SECRET);
        let debug = format!("{secret:?}");
        assert_eq!(debug, "WebhookSecret(<redacted>)");
        assert!(!debug.contains(&shown["whsec_".len()..]));
    }

    #[test]
    fn malformed_secrets_are_refused_without_repeating_them() {
        for bad in [
            "",
            "whsec_",
            // No prefix.
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            // Another prefix.
            "whsek_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            // 24 bytes.
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            // 33 bytes.
            "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g",
            // Not base64.
            "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh!=",
            // URL-safe alphabet.
            "whsec_-_-_AwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            // Surrounding space.
            " whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        ] {
            let err = WebhookSecret::parse(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidInput(_)), "{bad:?}");
            if !bad.trim().is_empty() && bad != "whsec_" {
                assert!(!err.to_string().contains(bad.trim()), "{bad:?} leaked");
            }
        }
    }

    #[test]
    fn addresses_are_classified() {
        let table: &[(&str, bool)] = &[
            // IPv4.
            ("0.0.0.0", false),
            ("0.1.2.3", false),
            ("127.0.0.1", false),
            ("127.255.255.254", false),
            ("10.0.0.1", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("172.32.0.1", true),
            ("192.168.1.1", false),
            ("169.254.169.254", false),
            ("100.64.0.1", false),
            ("100.127.255.255", false),
            ("100.63.255.255", true),
            ("100.128.0.0", true),
            ("224.0.0.1", false),
            ("239.255.255.255", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
            ("8.8.8.8", true),
            ("93.184.216.34", true),
            ("11.0.0.1", true),
            ("192.169.0.1", true),
            // IPv6.
            ("::", false),
            ("::1", false),
            ("fc00::1", false),
            ("fd12:3456:789a::1", false),
            ("fe80::1", false),
            ("febf::1", false),
            ("fec0::1", false),
            ("ff02::1", false),
            ("2001:4860:4860::8888", true),
            ("2606:4700::1111", true),
            ("fbff::1", true),
            // IPv4-mapped and NAT64: judged as the IPv4 address inside.
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.1.2.3", false),
            ("::ffff:169.254.169.254", false),
            ("::ffff:8.8.8.8", true),
            ("64:ff9b::192.168.0.1", false),
            ("64:ff9b::8.8.8.8", true),
        ];
        for &(ip, public) in table {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(is_public(ip), public, "{ip}");
            let strict = TargetPolicy::default().check_addr(ip);
            assert_eq!(strict.is_ok(), public, "{ip}");
            assert!(
                TargetPolicy {
                    allow_private: true
                }
                .check_addr(ip)
                .is_ok()
            );
        }
        assert_eq!(
            PrivateAddress("127.0.0.1".parse().unwrap()).to_string(),
            "the endpoint's address 127.0.0.1 is private; private targets are not allowed"
        );
    }

    #[test]
    fn urls_are_checked_on_create() {
        let strict = TargetPolicy::default();
        let open = TargetPolicy {
            allow_private: true,
        };
        for ok in [
            "https://example.com/hooks",
            "http://example.com:8080/x?y=1",
            "https://8.8.8.8/",
            "https://[2001:4860:4860::8888]/",
        ] {
            assert!(strict.check_url(ok).is_ok(), "{ok}");
        }
        let refused = |url: &str| strict.check_url(url).unwrap_err().to_string();
        assert_eq!(
            refused("http://127.0.0.1:8080/"),
            "url points to a private address (127.0.0.1); private targets are not allowed"
        );
        // The URL parser normalizes other spellings of an IPv4 address before we judge it.
        assert!(refused("http://2130706433/").contains("(127.0.0.1)"));
        assert!(refused("http://0x7f.1/").contains("(127.0.0.1)"));
        assert!(refused("http://[::ffff:127.0.0.1]/").contains("private address"));
        assert!(refused("http://[fe80::1]/").contains("(fe80::1)"));
        assert!(refused("http://169.254.169.254/latest/meta-data").contains("private"));
        assert!(refused("http://localhost:3000/").contains("(localhost)"));
        assert!(refused("http://api.localhost./").contains("(api.localhost)"));
        assert_eq!(
            refused("ftp://example.com/"),
            "url must be an http:// or https:// URL"
        );
        assert_eq!(
            refused("example.com/hook"),
            "url must be an absolute http:// or https:// URL"
        );
        assert_eq!(
            refused("http://"),
            "url must be an absolute http:// or https:// URL"
        );
        assert_eq!(
            refused("mailto:ops@example.com"),
            "url must be an http:// or https:// URL"
        );
        assert!(open.check_url("http://127.0.0.1:8080/").is_ok());
        assert!(open.check_url("http://localhost/").is_ok());
        assert!(open.check_url("ftp://127.0.0.1/").is_err());
    }

    #[test]
    fn excerpts_are_short_and_textual() {
        assert_eq!(excerpt(b""), None);
        assert_eq!(excerpt(b" \n"), None);
        assert_eq!(excerpt(b" ok\n").as_deref(), Some("ok"));
        let long = "é".repeat(1000);
        let cut = excerpt(long.as_bytes()).unwrap();
        assert_eq!(cut.chars().count(), RESPONSE_EXCERPT_CHARS);
        assert_eq!(excerpt(&[0xff, b'a']).as_deref(), Some("\u{fffd}a"));
    }
}
