//! Links that read a recording with no credential but themselves, for stores that cannot
//! presign: [`RecordingLinks`], through which the service makes and checks them, and
//! [`LinkSigner`], an HMAC-SHA256 over what a link names and its expiry, checked in constant
//! time.
//!
//! What a link looks like (its route and query) belongs to the adapter that serves it
//! (`voiceplane_http::Api::recording_links`), so that the service's only part is deciding when
//! one is made and whether one still holds.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Makes and checks the links through which a server reads recordings itself.
pub trait RecordingLinks: Send + Sync + 'static {
    /// A link that reads the recording `file` of `organization_id` until `expires` (Unix
    /// seconds).
    fn link(&self, organization_id: &str, file: &str, expires: i64) -> String;

    /// Whether `signature` is the one a link to `file` of `organization_id` valid until
    /// `expires` carries. Whether that time has passed is the caller's question.
    fn check(&self, organization_id: &str, file: &str, expires: i64, signature: &str) -> bool;
}

/// Signs and verifies `(subject, expires)` pairs. `Debug` never shows the key.
#[derive(Clone)]
pub struct LinkSigner {
    key: Vec<u8>,
}

impl fmt::Debug for LinkSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LinkSigner(<key redacted>)")
    }
}

impl LinkSigner {
    /// A signer with `key` (at least 32 bytes of secret material in production).
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    /// A signing key derived from the master key, so that every instance sharing
    /// `secrets.master_key` signs and accepts the same URLs without another setting.
    pub fn derived_from(master_key: &[u8; 32]) -> Self {
        let mut mac = HmacSha256::new_from_slice(master_key).expect("HMAC takes any key length");
        mac.update(b"voiceplane recording url signing key v1");
        Self::new(&mac.finalize().into_bytes())
    }

    fn mac(&self, subject: &str, expires: i64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(subject.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// The lower-case hex signature of `subject` valid until `expires` (Unix seconds).
    pub fn sign(&self, subject: &str, expires: i64) -> String {
        crate::auth::to_hex(&self.mac(subject, expires).finalize().into_bytes())
    }

    /// Whether `signature` (hex) is the signature of `subject` and `expires`.
    pub fn verify(&self, subject: &str, expires: i64, signature: &str) -> bool {
        let Some(raw) = decode_hex(signature) else {
            return false;
        };
        self.mac(subject, expires).verify_slice(&raw).is_ok()
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_bind_subject_and_expiry() {
        let s = LinkSigner::derived_from(&[1; 32]);
        let sig = s.sign("/recordings/org_1/call_1.wav", 1_800_000_000);
        assert!(s.verify("/recordings/org_1/call_1.wav", 1_800_000_000, &sig));
        assert!(!s.verify("/recordings/org_1/call_2.wav", 1_800_000_000, &sig));
        assert!(!s.verify("/recordings/org_1/call_1.wav", 1_800_000_001, &sig));
        let mut tampered = sig.clone();
        tampered.replace_range(0..1, if sig.starts_with('0') { "1" } else { "0" });
        assert!(!s.verify("/recordings/org_1/call_1.wav", 1_800_000_000, &tampered));
        assert!(!LinkSigner::derived_from(&[2; 32]).verify(
            "/recordings/org_1/call_1.wav",
            1_800_000_000,
            &sig
        ));
        assert!(!s.verify("/recordings/org_1/call_1.wav", 1_800_000_000, "zz"));
    }
}
