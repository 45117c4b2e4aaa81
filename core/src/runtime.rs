//! What the built-in voice runtime (DESIGN §24) shares with the rest of voiceplane: where a
//! call's media stream is handed to it ([`MediaStreams`], which the HTTP adapter calls once a
//! WebSocket upgrade is done), and the per-call token that proves a stream is the one
//! voiceplane asked the provider to open.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite};

/// A connection upgraded to a WebSocket, before any frame was read: what the adapter hands over.
pub trait MediaIo: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> MediaIo for T {}

/// Which media protocol a stream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaEndpoint {
    /// Twilio Media Streams (`/runtime/twilio/{call_sid}`).
    Twilio,
    /// Telnyx media streaming (`/runtime/telnyx/{call_sid}`).
    Telnyx,
}

impl MediaEndpoint {
    /// The provider's name, as in paths.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Twilio => "twilio",
            Self::Telnyx => "telnyx",
        }
    }
}

/// Takes the media streams of calls: implemented by the runtime, called by the HTTP adapter
/// after it answered `101 Switching Protocols`. Must not block: the stream runs on a task of
/// its own.
pub trait MediaStreams: Send + Sync + 'static {
    /// Runs the call `call_sid` over `io`, a WebSocket in the server role.
    fn accept(&self, endpoint: MediaEndpoint, call_sid: String, io: Box<dyn MediaIo>);
}

/// How the built-in runtime is reached, as the service sees it.
#[derive(Clone)]
pub struct RuntimeSettings {
    /// Whether calls whose agent and organization name no `runtime_stream_url` are run by
    /// the built-in runtime (`runtime.enabled`, default true); otherwise they are refused.
    pub enabled: bool,
    /// The key per-call tokens are derived from (itself derived from `secrets.master_key`,
    /// so that every instance derives the same token for a call).
    pub token_key: [u8; 32],
}

impl std::fmt::Debug for RuntimeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeSettings")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl RuntimeSettings {
    /// The runtime enabled, with tokens derived from `secret` (the master key's bytes).
    pub fn from_secret(enabled: bool, secret: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"voiceplane runtime stream tokens\0");
        hasher.update(secret);
        Self {
            enabled,
            token_key: hasher.finalize().into(),
        }
    }

    /// The token of the call `call_sid`: derived rather than random, so that a retried
    /// answer or dial (which a provider may deduplicate, keeping the first) carries the same
    /// one, and so that it is never stored in the clear.
    pub fn token(&self, call_sid: &str) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.token_key).expect("HMAC takes any key length");
        mac.update(call_sid.as_bytes());
        let bytes = mac.finalize().into_bytes();
        let mut out = String::from("rt_");
        out.push_str(&base16ct::lower::encode_string(&bytes[..20]));
        out
    }
}

/// The `Sec-WebSocket-Accept` of a handshake whose `Sec-WebSocket-Key` is `key` (RFC 6455
/// §4.2.2: base64 of the SHA-1 of the key and the protocol's GUID), with the SHA-1 of the ring
/// already in the tree.
pub fn websocket_accept(key: &str) -> String {
    use base64::Engine as _;
    let mut context = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    context.update(key.trim().as_bytes());
    context.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(context.finish())
}

/// What a call stores of its token: its SHA-256, hex.
pub fn token_hash(token: &str) -> String {
    base16ct::lower::encode_string(&Sha256::digest(token.as_bytes()))
}

/// Whether `presented` is the token whose hash is `stored`, compared in constant time.
pub fn token_matches(stored: &str, presented: &str) -> bool {
    let presented = token_hash(presented);
    stored.len() == presented.len()
        && stored
            .bytes()
            .zip(presented.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_answer_is_rfc_6455s() {
        // The example of RFC 6455 §1.3.
        assert_eq!(
            websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn a_token_is_the_calls_own_and_checks_against_its_hash() {
        let settings = RuntimeSettings::from_secret(true, b"master");
        let token = settings.token("call_1");
        assert_eq!(token, settings.token("call_1"));
        assert_ne!(token, settings.token("call_2"));
        assert_ne!(
            token,
            RuntimeSettings::from_secret(true, b"other").token("call_1")
        );
        let stored = token_hash(&token);
        assert!(token_matches(&stored, &token));
        assert!(!token_matches(&stored, &settings.token("call_2")));
        assert!(!token_matches(&stored, ""));
    }
}
