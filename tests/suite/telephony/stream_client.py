"""Plays Twilio's side of a media stream to a runtime, for the runtime example's test: connects
to the URL, sends `connected`, `start` (with voiceplane's ids as custom parameters), 50 media
frames of 160 bytes of μ-law silence (one second) and `stop`, then waits for the runtime to
close the stream.

Usage: stream_client.py WS_URL CALL_SID PROVIDER_CALL_SID AGENT_ID
"""

import asyncio
import base64
import json
import sys

try:  # websockets 13 and newer
    from websockets.asyncio.client import connect
except ImportError:  # websockets 12
    from websockets.client import connect  # type: ignore[no-redef]


async def play(url: str, call_sid: str, provider_sid: str, agent_id: str) -> None:
    async with connect(url) as ws:
        stream = "MZ00000000000000000000000000000001"
        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await ws.send(json.dumps({
            "event": "start", "sequenceNumber": "1", "streamSid": stream,
            "start": {
                "accountSid": "AC0123456789abcdef0123456789abcdef", "streamSid": stream,
                "callSid": provider_sid, "tracks": ["inbound"],
                "customParameters": {"call_sid": call_sid, "agent_id": agent_id},
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
        }))
        payload = base64.b64encode(b"\xff" * 160).decode()
        for i in range(50):
            await ws.send(json.dumps({
                "event": "media", "sequenceNumber": str(i + 2), "streamSid": stream,
                "media": {"track": "inbound", "chunk": str(i + 1), "timestamp": str(i * 20),
                          "payload": payload},
            }))
        await ws.send(json.dumps({
            "event": "stop", "sequenceNumber": "52", "streamSid": stream,
            "stop": {"accountSid": "AC0123456789abcdef0123456789abcdef", "callSid": provider_sid},
        }))
        try:
            await asyncio.wait_for(ws.recv(), 10)
        except Exception:  # closed by the runtime, as expected
            pass


if __name__ == "__main__":
    asyncio.run(play(*sys.argv[1:5]))
