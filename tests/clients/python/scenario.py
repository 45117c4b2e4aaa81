"""A small scenario through the Python client generated from the OpenAPI document.

Run by .ci/openapi-clients.sh against a live `voiceplane serve`:

    VOICEPLANE_URL=http://127.0.0.1:8080 VOICEPLANE_ORG=org_… VOICEPLANE_KEY=vpk_… \
        PYTHONPATH=<folder holding voiceplane_client> python scenario.py

Every request goes through the generated functions (`sync_detailed`), so a document that
misdescribes a body, a parameter or an answer fails here: a body the server refuses, or an
answer the generated models cannot read. Prints one line per step; exits non-zero on the first
failure.
"""

import io
import os
import sys

from voiceplane_client import AuthenticatedClient
from voiceplane_client.api.agents import agent_create, agent_view
from voiceplane_client.api.calls import call_create, call_list
from voiceplane_client.api.integrations import integration_create
from voiceplane_client.api.knowledge_base import document_create, document_view
from voiceplane_client.api.recordings import recording_download, recording_upload
from voiceplane_client.models import (
    CallType,
    DocumentCreateFilesBody,
    NewAgent,
    NewCall,
    NewTextDocument,
    NewTwilioIntegration,
    TtsProvider,
    TwilioCredentials,
    TwilioProvider,
)
from voiceplane_client.types import UNSET, File


def check(response, status, what):
    """The parsed answer of `response`, which must have `status`."""
    if response.status_code != status:
        body = response.content.decode("utf-8", "replace")[:500]
        sys.exit(f"{what}: expected {status}, got {int(response.status_code)}: {body}")
    if response.parsed is None:
        sys.exit(f"{what}: the generated client could not read the answer")
    print(f"ok: {what}")
    return response.parsed


def main():
    org = os.environ["VOICEPLANE_ORG"]
    client = AuthenticatedClient(
        base_url=os.environ["VOICEPLANE_URL"],
        token=os.environ["VOICEPLANE_KEY"],
        auth_header_name="X-API-Key",
        prefix="",
        # `check` asks for the status and a parsed answer itself; the recording download's
        # 200 has no model (audio), so the client must not raise on it.
        raise_on_unexpected_status=False,
    )

    # An agent, read back.
    created = check(
        agent_create.sync_detailed(
            client=client,
            x_organization_id=org,
            body=NewAgent(
                agent_name="Front desk",
                language="en-US",
                stt_provider="deepgram",
                tts_provider=TtsProvider.PROVIDER_ONE,
                tts_voice="21m00Tcm4TlvDq8ikWAM",
                llm_provider="openai",
                llm_model="gpt-4o-mini",
                system_prompt="You answer the phone for Acme.",
            ),
        ),
        201,
        "create an agent",
    )
    agent = created.data
    assert agent.agent_id.startswith("agent_"), agent.agent_id
    viewed = check(
        agent_view.sync_detailed(agent.agent_id, client=client, x_organization_id=org),
        200,
        "read the agent back",
    )
    assert viewed.data.agent_name == "Front desk"

    # Three calls, then every page of two.
    made = set()
    for n in range(3):
        call = check(
            call_create.sync_detailed(
                client=client,
                x_organization_id=org,
                body=NewCall(
                    agent_id=agent.agent_id,
                    to_number=f"+1415555010{n}",
                    call_type=CallType.OUTBOUND,
                ),
            ),
            201,
            f"create call {n + 1}",
        ).data
        made.add(call.call_sid)
    seen, cursor, pages = [], UNSET, 0
    while True:
        page = check(
            call_list.sync_detailed(
                client=client, x_organization_id=org, limit=2, cursor=cursor
            ),
            200,
            f"list calls, page {pages + 1}",
        )
        pages += 1
        seen.extend(c.call_sid for c in page.data)
        if not page.pagination.has_more:
            break
        cursor = page.pagination.next_cursor
    assert set(seen) == made and len(seen) == 3, (seen, made)
    assert pages == 2, pages

    # A recording of the last call: raw bytes up (`format: binary`), the same bytes down.
    samples = b"\x00\x00" * 800
    wav = (
        b"RIFF" + (36 + len(samples)).to_bytes(4, "little") + b"WAVEfmt "
        + (16).to_bytes(4, "little") + (1).to_bytes(2, "little") + (1).to_bytes(2, "little")
        + (8000).to_bytes(4, "little") + (16000).to_bytes(4, "little")
        + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
        + b"data" + len(samples).to_bytes(4, "little") + samples
    )
    check(
        recording_upload.sync_detailed(
            call.call_sid,
            client=client,
            x_organization_id=org,
            body=File(payload=io.BytesIO(wav), file_name="call.wav"),
        ),
        200,
        "upload a recording (application/octet-stream)",
    )
    download = recording_download.sync_detailed(
        call.call_sid, client=client, x_organization_id=org
    )
    if download.status_code != 200 or download.content != wav:
        sys.exit(f"download the recording: got {int(download.status_code)}, "
                 f"{len(download.content)} bytes instead of the {len(wav)} sent")
    print("ok: download the recording (the same bytes)")

    # Knowledge base: a file, sent as multipart/form-data, and a text, sent as JSON, through
    # the one function of the operation.
    upload = DocumentCreateFilesBody(
        file=File(
            payload=io.BytesIO(b"We are open Monday to Friday, 8am to 6pm.\n"),
            file_name="opening-hours.txt",
            mime_type="text/plain",
        ),
        name="Opening hours",
    )
    document = check(
        document_create.sync_detailed(client=client, x_organization_id=org, body=upload),
        201,
        "upload a knowledge-base file (multipart)",
    ).data
    assert document.name == "Opening hours", document.name
    assert document.type_.value == "file", document.type_
    assert document.filename == "opening-hours.txt", document.filename
    assert document.size == 42, document.size
    check(
        document_view.sync_detailed(
            document.documentation_id, client=client, x_organization_id=org
        ),
        200,
        "read the document back",
    )
    text = check(
        document_create.sync_detailed(
            client=client,
            x_organization_id=org,
            body=NewTextDocument(name="Returns", text="Returns within 30 days."),
        ),
        201,
        "add a knowledge-base text (JSON)",
    ).data
    assert text.type_.value == "text", text.type_

    # An integration: the body is one shape per provider.
    integration = check(
        integration_create.sync_detailed(
            client=client,
            x_organization_id=org,
            body=NewTwilioIntegration(
                name="Main Twilio account",
                provider=TwilioProvider.TWILIO,
                category="telephony",
                credentials=TwilioCredentials(
                    account_sid="AC" + "0123456789abcdef" * 2,
                    auth_token="not-a-real-token",
                ),
            ),
        ),
        201,
        "store Twilio credentials",
    ).data
    assert integration.provider.value == "twilio", integration.provider
    print("python client scenario: all steps passed")


if __name__ == "__main__":
    main()
