#!/usr/bin/env python3
"""A minimal voice runtime for voiceplane: it listens to calls and never speaks.

voiceplane tells Twilio or Telnyx to stream each call's media to
``{runtime_stream_url}/{call_sid}``. This program is that WebSocket server. For each call it

1. takes the ``call_sid`` from the last segment of the URL path (any prefix, such as
   ``/media/``, is fine);
2. reads the call's configuration with ``GET /api/calls/{call_sid}/session`` and prints the
   agent, its prompt, its tools and the call's dynamic variables;
3. reads the provider's stream messages (Twilio Media Streams or Telnyx media streaming:
   ``connected``, ``start``, ``media``, ``stop``) and counts the audio bytes;
4. when the stream ends, appends one message to the call's transcript saying how much audio
   arrived, and with ``--hangup-after SECONDS`` ends the call itself after that long
   (``POST /api/calls/{call_sid}/hangup``).

Run it (Python 3.10 or newer):

    pip install 'websockets>=12'
    export VOICEPLANE_URL=https://voice.example.com   # voiceplane's base URL
    export VOICEPLANE_API_KEY=vpk_...                 # scopes calls:read, calls:write, agents:read
    export VOICEPLANE_ORG_ID=org_...
    python3 runtime.py                                # listens on 127.0.0.1:8765
    python3 runtime.py --listen 0.0.0.0:8765 --hangup-after 20

``--listen`` defaults to ``$RUNTIME_LISTEN``, else ``127.0.0.1:8765``. Put a TLS proxy in front
and set the organization's ``runtime_stream_url`` to its ``wss://`` address (see
docs/RUNTIME.md). The API key is never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import json
import logging
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

try:  # websockets 13 and newer
    from websockets.asyncio.server import serve
except ImportError:  # websockets 12: the legacy asyncio server
    from websockets.server import serve  # type: ignore[no-redef]
from websockets.exceptions import ConnectionClosed

log = logging.getLogger("runtime")

CALL_SID = re.compile(r"^call_[A-Za-z0-9]+$")
# WebSocket close codes: 1000 normal, 1008 policy violation, 1011 server error.
NORMAL, POLICY, SERVER_ERROR = 1000, 1008, 1011


class ApiError(Exception):
    """voiceplane answered with an error status, or could not be reached."""

    def __init__(self, status: int | None, detail: str) -> None:
        super().__init__(f"{status or 'no answer'}: {detail}")
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Voiceplane:
    """The few voiceplane requests a runtime makes, with its scoped API key."""

    base_url: str
    api_key: str = field(repr=False)
    organization_id: str

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> tuple[int, Any]:
        """Sends one request; answers (status, parsed JSON body). Blocking: run it in a thread."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("X-API-Key", self.api_key)
        req.add_header("X-Organization-Id", self.organization_id)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if idempotency_key is not None:
            req.add_header("Idempotency-Key", idempotency_key)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            try:
                detail = json.loads(err.read()).get("detail", err.reason)
            except (ValueError, AttributeError):
                detail = str(err.reason)
            raise ApiError(err.code, str(detail)) from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise ApiError(None, str(getattr(err, "reason", err))) from None

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        """`request` off the event loop, so that other calls' streams keep flowing."""
        return await asyncio.to_thread(self.request, method, path, **kwargs)


@dataclass
class Stream:
    """What one call's media stream told us."""

    provider: str = "unknown"
    stream_id: str | None = None
    provider_call_id: str | None = None
    media_messages: int = 0
    audio_bytes: int = 0
    tracks: set[str] = field(default_factory=set)
    digits: str = ""


def call_sid_of(path: str) -> str | None:
    """The last segment of the path when it is a call sid: `/media/call_1a2b` → `call_1a2b`."""
    segment = urllib.parse.unquote(path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
    return segment if CALL_SID.match(segment) else None


def request_path(ws: Any) -> str:
    """The path the provider connected to, with either websockets API."""
    request = getattr(ws, "request", None)  # websockets 13+: ServerConnection.request
    if request is not None and getattr(request, "path", None):
        return str(request.path)
    return str(getattr(ws, "path", ""))  # legacy server: WebSocketServerProtocol.path


def show_session(call_sid: str, session: dict[str, Any]) -> None:
    call = session.get("call") or {}
    agent = session.get("agent") or {}
    tools = session.get("tools") or []
    prompt = " ".join(str(agent.get("system_prompt") or "").split())
    log.info(
        "%s: %s call %s → %s, agent %r (%s, %s/%s, version %s)",
        call_sid,
        call.get("call_type"),
        call.get("from_number"),
        call.get("to_number"),
        agent.get("agent_name"),
        agent.get("language"),
        agent.get("llm_provider"),
        agent.get("llm_model"),
        call.get("agent_version"),
    )
    log.info("%s: prompt: %s", call_sid, prompt[:300] + ("…" if len(prompt) > 300 else ""))
    log.info("%s: tools: %s", call_sid, [t.get("tool_name") for t in tools] or "none")
    log.info("%s: dynamic variables: %s", call_sid, session.get("dynamic_variables") or {})
    log.info("%s: metadata: %s", call_sid, session.get("metadata") or {})


def on_start(call_sid: str, message: dict[str, Any], stream: Stream, expected: str | None) -> None:
    """Twilio's `start` (camelCase, ids in `customParameters`) or Telnyx's (snake_case,
    `client_state` = base64 of the call sid)."""
    start = message.get("start") or {}
    if "streamSid" in message or "streamSid" in start:
        stream.provider = "twilio"
        stream.stream_id = message.get("streamSid") or start.get("streamSid")
        stream.provider_call_id = start.get("callSid")
        params = start.get("customParameters") or {}
        log.info(
            "%s: Twilio stream %s of call %s, customParameters %s, format %s",
            call_sid, stream.stream_id, stream.provider_call_id, params, start.get("mediaFormat"),
        )
        claimed = params.get("call_sid")
    else:
        stream.provider = "telnyx"
        stream.stream_id = message.get("stream_id")
        stream.provider_call_id = start.get("call_control_id")
        claimed = None
        if start.get("client_state"):
            try:
                claimed = base64.b64decode(start["client_state"], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                log.warning("%s: client_state is not base64 text", call_sid)
        log.info(
            "%s: Telnyx stream %s of call %s, client_state → %s, format %s",
            call_sid, stream.stream_id, stream.provider_call_id, claimed, start.get("media_format"),
        )
    if claimed and claimed != call_sid:
        log.warning("%s: the stream says it is %s", call_sid, claimed)
    if expected and stream.provider_call_id and stream.provider_call_id != expected:
        log.warning(
            "%s: the provider's call id %s is not the call's provider_call_id %s",
            call_sid, stream.provider_call_id, expected,
        )


def on_media(message: dict[str, Any], stream: Stream) -> None:
    media = message.get("media") or {}
    stream.media_messages += 1
    stream.tracks.add(str(media.get("track", "inbound")))
    try:
        stream.audio_bytes += len(base64.b64decode(media.get("payload") or "", validate=True))
    except binascii.Error:
        pass


async def listen(
    ws: Any, call_sid: str, stream: Stream, expected: str | None, hangup_after: float | None
) -> str:
    """Reads the stream until `stop`, the provider closing it, or `hangup_after` seconds after
    `start`; answers which of the three."""
    loop = asyncio.get_running_loop()
    deadline: float | None = None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - loop.time())
        try:
            raw = await asyncio.wait_for(ws.recv(), timeout)
        except asyncio.TimeoutError:
            return "timer"
        except ConnectionClosed:
            return "closed"
        try:
            message = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            log.warning("%s: ignoring a frame that is not JSON (%d bytes)", call_sid, len(raw))
            continue
        event = message.get("event") if isinstance(message, dict) else None
        if event == "connected":
            log.info("%s: connected, version %s", call_sid, message.get("version"))
        elif event == "start":
            on_start(call_sid, message, stream, expected)
            if hangup_after is not None:
                deadline = loop.time() + hangup_after
        elif event == "media":
            on_media(message, stream)
        elif event == "dtmf":
            digit = str((message.get("dtmf") or {}).get("digit", ""))
            stream.digits += digit
            log.info("%s: caller pressed %s", call_sid, digit)
        elif event == "stop":
            log.info("%s: stop", call_sid)
            return "stop"
        elif event == "error":
            log.warning("%s: provider error: %s", call_sid, message.get("payload") or message)
        # `mark` and anything new: nothing to do for a runtime that does not speak.


async def handle(ws: Any, api: Voiceplane, hangup_after: float | None) -> None:
    path = request_path(ws)
    call_sid = call_sid_of(path)
    if call_sid is None:
        log.warning("refusing a stream at %r: its last path segment is not a call_sid", path)
        await ws.close(POLICY, "the path must end with a call_sid")
        return

    try:
        _, answer = await api.call("GET", f"/api/calls/{call_sid}/session")
    except ApiError as err:
        log.error("%s: no session (%s)", call_sid, err)
        await ws.close(POLICY if err.status == 404 else SERVER_ERROR, "no session for this call")
        return
    session = (answer or {}).get("data") or {}
    show_session(call_sid, session)
    expected = (session.get("call") or {}).get("provider_call_id")

    stream = Stream()
    ended_by = await listen(ws, call_sid, stream, expected, hangup_after)
    seconds = stream.audio_bytes / 8000  # 8 kHz μ-law: one byte per sample
    log.info(
        "%s: %s stream ended (%s): %d media messages, %d bytes (~%.1f s), tracks %s",
        call_sid, stream.provider, ended_by, stream.media_messages, stream.audio_bytes,
        seconds, sorted(stream.tracks) or "none",
    )

    text = (
        f"The example runtime received {stream.audio_bytes} bytes of audio "
        f"(about {seconds:.1f} s) in {stream.media_messages} media messages "
        f"from {stream.provider}"
        + (f"; keys pressed: {stream.digits}" if stream.digits else "")
        + ". It did not speak."
    )
    try:
        # Sent again with the same Idempotency-Key (a retry), the append is not repeated; one
        # key per stream, since a key reused with another body is refused (422).
        await api.call(
            "POST",
            f"/api/calls/{call_sid}/messages",
            body={"messages": [{"role": "system", "text": text}]},
            idempotency_key=f"{call_sid}-{stream.stream_id or 'no-stream'}-summary",
        )
        log.info("%s: transcript message appended", call_sid)
    except ApiError as err:
        log.error("%s: could not append the transcript (%s)", call_sid, err)

    if ended_by == "timer":
        try:
            status, _ = await api.call("POST", f"/api/calls/{call_sid}/hangup")
            log.info("%s: hangup asked (%d)", call_sid, status)
        except ApiError as err:
            if err.status == 409:
                log.info("%s: the call had already ended", call_sid)
            else:
                log.error("%s: hangup failed (%s)", call_sid, err)
    await ws.close(NORMAL, "done")


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


async def run(listen_on: tuple[str, int], api: Voiceplane, hangup_after: float | None) -> None:
    async def handler(ws: Any, *_legacy_path: Any) -> None:
        try:
            await handle(ws, api, hangup_after)
        except Exception:  # one call's failure must not stop the others
            log.exception("stream handler failed")

    host, port = listen_on
    async with serve(handler, host, port):
        log.info("listening on ws://%s:%d/{call_sid}, voiceplane at %s", host, port, api.base_url)
        await asyncio.Future()  # until Ctrl-C


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--listen",
        type=parse_listen,
        metavar="HOST:PORT",
        default=parse_listen(os.environ.get("RUNTIME_LISTEN", "127.0.0.1:8765")),
        help="where to listen (default: $RUNTIME_LISTEN, else 127.0.0.1:8765)",
    )
    parser.add_argument(
        "--hangup-after",
        type=float,
        metavar="SECONDS",
        help="end each call this many seconds after its stream starts (POST …/hangup)",
    )
    args = parser.parse_args()

    needed = ("VOICEPLANE_URL", "VOICEPLANE_API_KEY", "VOICEPLANE_ORG_ID")
    missing = [name for name in needed if not os.environ.get(name)]
    if missing:
        parser.error("set " + ", ".join(missing))
    api = Voiceplane(
        base_url=os.environ["VOICEPLANE_URL"].rstrip("/"),
        api_key=os.environ["VOICEPLANE_API_KEY"],
        organization_id=os.environ["VOICEPLANE_ORG_ID"],
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        asyncio.run(run(args.listen, api, args.hangup_after))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
