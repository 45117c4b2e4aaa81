//! # voiceplane-runtime
//!
//! The built-in voice runtime (DESIGN §24): the conversation engine that runs an agent on a
//! call. It listens (speech to text), thinks (a language model with the organization's tools
//! and documents) and speaks (text to speech), and keeps what the call leaves behind: the
//! transcript, the recording, usage and per-turn latency.
//!
//! The upstream protocols are traits ([`upstream`]) that the `voiceplane-clients` crate
//! implements; the engine runs without audio too (text in, text out), which is how agent tests
//! drive it.

pub mod upstream;
