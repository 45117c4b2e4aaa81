//! The media-stream protocols of the providers, as the runtime reads and writes them: Twilio
//! Media Streams and Telnyx media streaming. Both are JSON text frames with base64 μ-law
//! audio; they differ in names and in where the call's ids and the token travel.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde_json::{Value, json};
use voiceplane_core::runtime::MediaEndpoint;

/// What a provider's stream sends the runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The stream began: who it is for.
    Start(StreamStart),
    /// 20 ms (or so) of the caller's audio.
    Audio(Bytes),
    /// The caller pressed a key.
    Dtmf(char),
    /// The audio sent before the mark `name` has been played.
    Mark(String),
    /// The stream ended (the call hung up).
    Stop,
    /// Anything else (`connected`, other tracks).
    Other,
}

/// The `start` of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamStart {
    /// The provider's id of the stream, which frames sent back must name (Twilio).
    pub stream_id: String,
    /// The provider's id of the call (Twilio's `callSid`, Telnyx's `call_control_id`).
    pub provider_call_id: Option<String>,
    /// The token the stream presents.
    pub token: Option<String>,
}

/// Reads one text frame of `endpoint`'s protocol.
pub fn parse(endpoint: MediaEndpoint, text: &str) -> Incoming {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Incoming::Other;
    };
    match v["event"].as_str() {
        Some("start") => Incoming::Start(start(endpoint, &v)),
        Some("media") => {
            // Twilio's bidirectional streams send only the inbound track; Telnyx names it.
            let track = v["media"]["track"].as_str().unwrap_or("inbound");
            if !track.starts_with("inbound") {
                return Incoming::Other;
            }
            v["media"]["payload"]
                .as_str()
                .and_then(|p| STANDARD.decode(p).ok())
                .map_or(Incoming::Other, |bytes| Incoming::Audio(Bytes::from(bytes)))
        }
        Some("dtmf") => v["dtmf"]["digit"]
            .as_str()
            .and_then(|d| d.chars().next())
            .map_or(Incoming::Other, Incoming::Dtmf),
        Some("mark") => v["mark"]["name"]
            .as_str()
            .map_or(Incoming::Other, |n| Incoming::Mark(n.to_owned())),
        Some("stop") => Incoming::Stop,
        _ => Incoming::Other,
    }
}

fn start(endpoint: MediaEndpoint, v: &Value) -> StreamStart {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match endpoint {
        MediaEndpoint::Twilio => StreamStart {
            stream_id: text(&v["streamSid"])
                .or_else(|| text(&v["start"]["streamSid"]))
                .unwrap_or_default(),
            provider_call_id: text(&v["start"]["callSid"]),
            token: text(&v["start"]["customParameters"]["token"]),
        },
        MediaEndpoint::Telnyx => StreamStart {
            stream_id: text(&v["stream_id"]).unwrap_or_default(),
            provider_call_id: text(&v["start"]["call_control_id"]),
            token: v["start"]["client_state"]
                .as_str()
                .and_then(voiceplane_core::telephony::token_of_client_state),
        },
    }
}

/// Writes the frames the runtime sends on one stream.
#[derive(Debug, Clone)]
pub struct Writer {
    endpoint: MediaEndpoint,
    stream_id: String,
}

impl Writer {
    /// Frames for the stream `start` opened.
    pub fn new(endpoint: MediaEndpoint, start: &StreamStart) -> Self {
        Self {
            endpoint,
            stream_id: start.stream_id.clone(),
        }
    }

    /// The protocol it writes.
    pub fn endpoint(&self) -> MediaEndpoint {
        self.endpoint
    }

    /// Audio to play to the caller.
    pub fn media(&self, audio: &[u8]) -> String {
        let payload = STANDARD.encode(audio);
        match self.endpoint {
            MediaEndpoint::Twilio => json!({
                "event": "media",
                "streamSid": self.stream_id,
                "media": {"payload": payload},
            }),
            MediaEndpoint::Telnyx => json!({"event": "media", "media": {"payload": payload}}),
        }
        .to_string()
    }

    /// A mark the provider sends back once the audio before it has played.
    pub fn mark(&self, name: &str) -> String {
        match self.endpoint {
            MediaEndpoint::Twilio => json!({
                "event": "mark",
                "streamSid": self.stream_id,
                "mark": {"name": name},
            }),
            MediaEndpoint::Telnyx => json!({"event": "mark", "mark": {"name": name}}),
        }
        .to_string()
    }

    /// Drops the audio sent but not played yet (its marks come back at once).
    pub fn clear(&self) -> String {
        match self.endpoint {
            MediaEndpoint::Twilio => json!({"event": "clear", "streamSid": self.stream_id}),
            MediaEndpoint::Telnyx => json!({"event": "clear"}),
        }
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilio_frames_are_read_and_written() {
        let start = parse(
            MediaEndpoint::Twilio,
            r#"{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","callSid":"CA1","customParameters":{"token":"rt_x","call_sid":"call_1"}}}"#,
        );
        let Incoming::Start(start) = start else {
            panic!("not a start: {start:?}")
        };
        assert_eq!(start.stream_id, "MZ1");
        assert_eq!(start.provider_call_id.as_deref(), Some("CA1"));
        assert_eq!(start.token.as_deref(), Some("rt_x"));
        assert_eq!(
            parse(
                MediaEndpoint::Twilio,
                r#"{"event":"media","media":{"track":"inbound","payload":"/w=="}}"#
            ),
            Incoming::Audio(Bytes::from_static(&[0xFF]))
        );
        assert_eq!(
            parse(
                MediaEndpoint::Twilio,
                r#"{"event":"dtmf","dtmf":{"digit":"5"}}"#
            ),
            Incoming::Dtmf('5')
        );
        let w = Writer::new(MediaEndpoint::Twilio, &start);
        let media: Value = serde_json::from_str(&w.media(&[0xFF])).unwrap_or_default();
        assert_eq!(media["streamSid"], "MZ1");
        assert_eq!(media["media"]["payload"], "/w==");
    }

    #[test]
    fn telnyx_carries_the_token_in_its_client_state() {
        let state = voiceplane_core::telephony::client_state("call_1", Some("rt_y"));
        let text = json!({"event": "start", "stream_id": "s1",
            "start": {"call_control_id": "v3:1", "client_state": state}})
        .to_string();
        let Incoming::Start(start) = parse(MediaEndpoint::Telnyx, &text) else {
            panic!("not a start")
        };
        assert_eq!(start.token.as_deref(), Some("rt_y"));
        assert_eq!(start.provider_call_id.as_deref(), Some("v3:1"));
    }
}
