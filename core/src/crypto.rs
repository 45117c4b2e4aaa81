//! Encryption at rest of integration credentials: AES-256-GCM under `secrets.master_key`, with
//! the integration id as associated data so that a ciphertext cannot be moved to another row.

use std::fmt;

use aes_gcm::aead::{Aead, Generate, Key, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::{Error, Result};

const VERSION: &str = "v1:";
const NONCE_LEN: usize = 12;

/// Seals and opens credential blobs. `Debug` never shows the key.
#[derive(Clone)]
pub struct CredentialCipher {
    cipher: Aes256Gcm,
}

impl fmt::Debug for CredentialCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CredentialCipher(<key redacted>)")
    }
}

impl CredentialCipher {
    /// A cipher under the 32-byte master key.
    pub fn new(master_key: &[u8; 32]) -> Self {
        let key: &Key<Aes256Gcm> = master_key.into();
        Self {
            cipher: Aes256Gcm::new(key),
        }
    }

    /// Encrypts `plaintext` bound to `aad`; returns `v1:` + base64(nonce ‖ ciphertext ‖ tag).
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<String> {
        let nonce = Nonce::generate();
        let ct = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .map_err(|_| Error::Internal("credential encryption failed".to_owned()))?;
        let mut out = Vec::with_capacity(NONCE_LEN + ct.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Ok(format!("{VERSION}{}", STANDARD.encode(out)))
    }

    /// Decrypts what [`seal`](Self::seal) produced for the same `aad`.
    pub fn open(&self, sealed: &str, aad: &[u8]) -> Result<Vec<u8>> {
        let undecryptable = || {
            Error::Internal(
                "stored credentials cannot be decrypted (was secrets.master_key changed?)"
                    .to_owned(),
            )
        };
        let raw = sealed
            .strip_prefix(VERSION)
            .and_then(|b| STANDARD.decode(b).ok())
            .filter(|raw| raw.len() > NONCE_LEN)
            .ok_or_else(undecryptable)?;
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_from(nonce).map_err(|_| undecryptable())?;
        self.cipher
            .decrypt(&nonce, Payload { msg: ct, aad })
            .map_err(|_| undecryptable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_bound_to_the_row() {
        let c = CredentialCipher::new(&[7u8; 32]);
        let sealed = c
            .seal(b"{\"api_key\":\"KEY123\"}", b"intg_0123456789ab")
            .unwrap();
        assert!(sealed.starts_with("v1:"));
        assert!(!sealed.contains("KEY123"));
        assert_eq!(
            c.open(&sealed, b"intg_0123456789ab").unwrap(),
            b"{\"api_key\":\"KEY123\"}"
        );
        assert!(
            c.open(&sealed, b"intg_ffffffffffff").is_err(),
            "bound to its row"
        );
        assert!(
            CredentialCipher::new(&[8u8; 32])
                .open(&sealed, b"intg_0123456789ab")
                .is_err()
        );
        assert_ne!(
            sealed,
            c.seal(b"{\"api_key\":\"KEY123\"}", b"intg_0123456789ab")
                .unwrap()
        );
    }
}
