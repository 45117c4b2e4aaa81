//! Self-signed recording URLs for stores that cannot presign: HMAC-SHA256 over the path and
//! the expiry, checked in constant time.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Signs and verifies `(path, expires)` pairs. `Debug` never shows the key.
#[derive(Clone)]
pub struct UrlSigner {
    key: Vec<u8>,
}

impl fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UrlSigner(<key redacted>)")
    }
}

impl UrlSigner {
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

    fn mac(&self, path: &str, expires: i64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(path.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// The lower-case hex signature of `path` valid until `expires` (Unix seconds).
    pub fn sign(&self, path: &str, expires: i64) -> String {
        crate::auth::to_hex(&self.mac(path, expires).finalize().into_bytes())
    }

    /// Whether `signature` (hex) is the signature of `path` and `expires`.
    pub fn verify(&self, path: &str, expires: i64, signature: &str) -> bool {
        let Some(raw) = decode_hex(signature) else {
            return false;
        };
        self.mac(path, expires).verify_slice(&raw).is_ok()
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
    fn signatures_bind_path_and_expiry() {
        let s = UrlSigner::derived_from(&[1; 32]);
        let sig = s.sign("/recordings/org_1/call_1.wav", 1_800_000_000);
        assert!(s.verify("/recordings/org_1/call_1.wav", 1_800_000_000, &sig));
        assert!(!s.verify("/recordings/org_1/call_2.wav", 1_800_000_000, &sig));
        assert!(!s.verify("/recordings/org_1/call_1.wav", 1_800_000_001, &sig));
        let mut tampered = sig.clone();
        tampered.replace_range(0..1, if sig.starts_with('0') { "1" } else { "0" });
        assert!(!s.verify("/recordings/org_1/call_1.wav", 1_800_000_000, &tampered));
        assert!(!UrlSigner::derived_from(&[2; 32]).verify(
            "/recordings/org_1/call_1.wav",
            1_800_000_000,
            &sig
        ));
        assert!(!s.verify("/recordings/org_1/call_1.wav", 1_800_000_000, "zz"));
    }
}
