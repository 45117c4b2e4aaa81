//! The credentials of provider webhooks: their signatures, one check per provider, for the
//! HTTP adapter's provider-signed operations (and the tests' fake providers).
//!
//! - Twilio signs `X-Twilio-Signature` = base64(HMAC-SHA1(auth token, URL + the name and value
//!   of each POST parameter, names sorted, and each name's distinct values sorted)), the URL
//!   being the one Twilio called. Its own validator accepts that URL with and without the
//!   default port, since proxies differ in what they pass on; so does this one.
//! - Telnyx signs `telnyx-signature-ed25519` = base64(Ed25519 signature of
//!   `"{telnyx-timestamp}|{raw body}"`) with the account's key; a timestamp more than
//!   [`TELNYX_TOLERANCE_SECS`] from now is refused, so that a captured request cannot be
//!   replayed later.
//!
//! Both compare in constant time, and neither says which part failed. The primitives are
//! ring's (already in the tree for TLS): HMAC-SHA1 and Ed25519 verification.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::{hmac, signature};

/// How far a Telnyx timestamp may be from now, in seconds.
pub const TELNYX_TOLERANCE_SECS: i64 = 300;

/// The string Twilio signs: `url`, then each parameter name followed by its value, names in
/// byte order and each name's distinct values in byte order.
fn twilio_payload(url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<(&str, &str)> = params
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut payload = String::from(url);
    for (name, value) in sorted {
        payload.push_str(name);
        payload.push_str(value);
    }
    payload
}

fn twilio_key(auth_token: &str) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, auth_token.as_bytes())
}

/// The `X-Twilio-Signature` of a request to `url` with the form `params`.
pub fn twilio_signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let tag = hmac::sign(
        &twilio_key(auth_token),
        twilio_payload(url, params).as_bytes(),
    );
    STANDARD.encode(tag.as_ref())
}

/// `url` with the default port of its scheme added when it has none, or removed when it has
/// it; `None` when neither applies.
fn other_port_form(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "https" => "443",
        "http" => "80",
        _ => return None,
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once(':') {
        Some((host, port)) if port == default => Some(format!("{scheme}://{host}{tail}")),
        Some(_) => None,
        None => Some(format!("{scheme}://{authority}:{default}{tail}")),
    }
}

/// Whether `signature` is Twilio's for a request to `url` (with or without the default port)
/// with the form `params`.
pub fn twilio_valid(
    auth_token: &str,
    url: &str,
    params: &[(String, String)],
    signature: &str,
) -> bool {
    let Ok(signature) = STANDARD.decode(signature.trim()) else {
        return false;
    };
    let key = twilio_key(auth_token);
    let candidates = std::iter::once(url.to_owned()).chain(other_port_form(url));
    candidates.into_iter().any(|candidate| {
        hmac::verify(
            &key,
            twilio_payload(&candidate, params).as_bytes(),
            &signature,
        )
        .is_ok()
    })
}

/// Whether `signature` (base64) is the Ed25519 signature of `"{timestamp}|{body}"` by
/// `public_key` (base64, 32 bytes), with `timestamp` (Unix seconds) within
/// [`TELNYX_TOLERANCE_SECS`] of `now`.
pub fn telnyx_valid(
    public_key: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
    now: i64,
) -> bool {
    let Ok(sent_at) = timestamp.trim().parse::<i64>() else {
        return false;
    };
    if (now - sent_at).abs() > TELNYX_TOLERANCE_SECS {
        return false;
    }
    let (Ok(key), Ok(signature)) = (
        STANDARD.decode(public_key.trim()),
        STANDARD.decode(signature.trim()),
    ) else {
        return false;
    };
    let mut signed = Vec::with_capacity(timestamp.len() + 1 + body.len());
    signed.extend_from_slice(timestamp.trim().as_bytes());
    signed.push(b'|');
    signed.extend_from_slice(body);
    signature::UnparsedPublicKey::new(&signature::ED25519, key)
        .verify(&signed, &signature)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use ring::signature::{Ed25519KeyPair, KeyPair as _};

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The example of Twilio's security documentation: this token, URL and form give this
    /// signature.
    #[test]
    fn twilio_documents_this_signature() {
        let form = params(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+14158675309"),
            ("Digits", "1234"),
            ("From", "+14158675309"),
            ("To", "+18005551212"),
        ]);
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let token = "12345";
        assert_eq!(
            twilio_signature(token, url, &form),
            "RSOYDt4T1cUTdK1PDd93/VVr8B8="
        );
        assert!(twilio_valid(
            token,
            url,
            &form,
            "RSOYDt4T1cUTdK1PDd93/VVr8B8="
        ));
        // The same request seen through a proxy that spells out the default port.
        assert!(twilio_valid(
            token,
            "https://mycompany.com:443/myapp.php?foo=1&bar=2",
            &form,
            "RSOYDt4T1cUTdK1PDd93/VVr8B8="
        ));
        let mut changed = form.clone();
        changed[2].1 = "1235".into();
        assert!(!twilio_valid(
            token,
            url,
            &changed,
            "RSOYDt4T1cUTdK1PDd93/VVr8B8="
        ));
        assert!(!twilio_valid(
            "54321",
            url,
            &form,
            "RSOYDt4T1cUTdK1PDd93/VVr8B8="
        ));
        assert!(!twilio_valid(token, url, &form, "not base64!"));
    }

    #[test]
    fn the_default_port_is_added_or_removed() {
        assert_eq!(
            other_port_form("https://a.example/x?y=1").as_deref(),
            Some("https://a.example:443/x?y=1")
        );
        assert_eq!(
            other_port_form("http://a.example:80/x").as_deref(),
            Some("http://a.example/x")
        );
        assert_eq!(other_port_form("https://a.example:8443/x"), None);
    }

    #[test]
    fn telnyx_signatures_hold_for_their_body_key_and_time() {
        let signing = Ed25519KeyPair::from_seed_unchecked(&[7u8; 32]).unwrap();
        let public = STANDARD.encode(signing.public_key().as_ref());
        let body = br#"{"data":{"event_type":"call.initiated"}}"#;
        let now = 1_800_000_000;
        let sign = |ts: i64, body: &[u8]| {
            let mut signed = format!("{ts}|").into_bytes();
            signed.extend_from_slice(body);
            STANDARD.encode(signing.sign(&signed).as_ref())
        };
        let good = sign(now, body);
        assert!(telnyx_valid(&public, &now.to_string(), body, &good, now));
        assert!(telnyx_valid(
            &public,
            &now.to_string(),
            body,
            &good,
            now + 300
        ));
        // Replayed too late, or claiming a time too far ahead.
        assert!(!telnyx_valid(
            &public,
            &now.to_string(),
            body,
            &good,
            now + 301
        ));
        let early = sign(now + 301, body);
        assert!(!telnyx_valid(
            &public,
            &(now + 301).to_string(),
            body,
            &early,
            now
        ));
        // Another body, another key, garbage.
        assert!(!telnyx_valid(&public, &now.to_string(), b"{}", &good, now));
        let other = Ed25519KeyPair::from_seed_unchecked(&[8u8; 32]).unwrap();
        let other = STANDARD.encode(other.public_key().as_ref());
        assert!(!telnyx_valid(&other, &now.to_string(), body, &good, now));
        assert!(!telnyx_valid(&public, "soon", body, &good, now));
        assert!(!telnyx_valid("AAAA", &now.to_string(), body, &good, now));
    }
}
