//! `/runtime`: the media streams of calls the built-in voice runtime runs (DESIGN §24). Twilio
//! and Telnyx open them, as the TwiML or answer command voiceplane gave them says; the
//! connection is upgraded to a WebSocket here and handed to the runtime
//! ([`Api::with_media`](crate::Api::with_media)), which checks the call's token in the stream's
//! `start` before it touches the call. No API key.

use std::sync::Arc;

use http::{HeaderValue, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use voiceplane_core::runtime::{MediaEndpoint, MediaStreams, websocket_accept};

use crate::endpoint::{Cx, Reply, handler};
use crate::error::ApiError;
use crate::openapi::spec::{OpSpec, Output, Schemas};
use crate::operation::{Area, Operation};
use crate::response::{self, ResponseBody};

pub(crate) const AREA: Area = Area {
    tag: "runtime",
    about: "The media streams of calls run by the built-in voice runtime. Not for API \
            clients: Twilio and Telnyx open them for the calls voiceplane streams to itself.",
    operations: &[RUNTIME_TWILIO, RUNTIME_TELNYX],
};

/// `101 Switching Protocols`: the connection is a WebSocket from here on.
pub(crate) struct Switching(String);

impl Reply for Switching {
    fn into_response(self) -> Response<ResponseBody> {
        let mut response = Response::new(response::full(bytes::Bytes::new()));
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = response.headers_mut();
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        if let Ok(accept) = HeaderValue::from_str(&self.0) {
            headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
        }
        response
    }

    fn describe(spec: &mut OpSpec, _: &mut Schemas) {
        spec.output = Output::WebSocket;
    }
}

const RUNTIME_TWILIO: Operation =
    Operation::get("/runtime/twilio/{call_sid}", handler!(runtime_twilio))
        .public()
        .errors(&[400, 426, 503])
        .doc(
            "Twilio's media stream of a call the built-in runtime runs",
            "A WebSocket (`Upgrade: websocket`) carrying Twilio Media Streams messages. The \
             stream's `start` must carry the call's `token` stream parameter, which the TwiML \
             voiceplane answered with holds; a stream without it, or for another call, is \
             closed and the call is left as it was. 503 when this server runs no runtime.",
        );

async fn runtime_twilio(cx: Cx, (call_sid,): (String,), (): ()) -> Result<Switching, ApiError> {
    upgrade(cx, MediaEndpoint::Twilio, call_sid)
}

const RUNTIME_TELNYX: Operation =
    Operation::get("/runtime/telnyx/{call_sid}", handler!(runtime_telnyx))
        .public()
        .errors(&[400, 426, 503])
        .doc(
            "Telnyx's media stream of a call the built-in runtime runs",
            "A WebSocket (`Upgrade: websocket`) carrying Telnyx media streaming messages \
             (bidirectional, PCMU). The stream's `start` must carry the `client_state` of the \
             answer or dial voiceplane sent, which holds the call's token; otherwise as \
             Twilio's.",
        );

async fn runtime_telnyx(cx: Cx, (call_sid,): (String,), (): ()) -> Result<Switching, ApiError> {
    upgrade(cx, MediaEndpoint::Telnyx, call_sid)
}

/// Checks the handshake, answers it, and hands the connection to the runtime once the
/// server has switched it.
fn upgrade(mut cx: Cx, endpoint: MediaEndpoint, call_sid: String) -> Result<Switching, ApiError> {
    let media: Arc<dyn MediaStreams> = cx.api.media.clone().map(|m| m.0).ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the built-in voice runtime does not run on this server",
        )
    })?;
    let headers = &cx.parts.headers;
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    if !has(header::UPGRADE, "websocket") || !has(header::CONNECTION, "upgrade") {
        return Err(ApiError::new(
            StatusCode::UPGRADE_REQUIRED,
            "this is a WebSocket endpoint: send Upgrade: websocket and Connection: Upgrade",
        )
        .with_header(header::UPGRADE, "websocket".to_owned()));
    }
    if !has(header::SEC_WEBSOCKET_VERSION, "13") {
        return Err(ApiError::bad_request("Sec-WebSocket-Version must be 13"));
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("Sec-WebSocket-Key is required"))?;
    let accept = websocket_accept(key);
    let on_upgrade = cx
        .parts
        .extensions
        .remove::<hyper::upgrade::OnUpgrade>()
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UPGRADE_REQUIRED,
                "the server this API is mounted in cannot switch protocols (serve it with \
                 HTTP/1.1 upgrades enabled)",
            )
        })?;
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => media.accept(endpoint, call_sid, Box::new(TokioIo::new(upgraded))),
            Err(e) => tracing::debug!(error = %e, "a media stream's upgrade failed"),
        }
    });
    Ok(Switching(accept))
}
