"""The providers' own reference implementations, for the suite's signature tests.

Reads one JSON request per line on stdin and answers one JSON line each:
- {"op": "twilio_sign", "token", "url", "params": {name: value}} -> {"signature"}
  (twilio.request_validator.RequestValidator.compute_signature)
- {"op": "twilio_validate", "token", "url", "params", "signature"} -> {"valid"}
  (RequestValidator.validate, which also tries the URL with and without its default port)
- {"op": "ed25519_keypair", "seed_hex"} -> {"public_key"} (base64, PyNaCl)
- {"op": "ed25519_sign", "seed_hex", "message_b64"} -> {"signature"} (base64, PyNaCl), the
  signature Telnyx's SDK verifies over "{timestamp}|{body}".
"""
import base64
import json
import sys

import nacl.signing
from twilio.request_validator import RequestValidator

for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "twilio_sign":
        out = {"signature": RequestValidator(req["token"]).compute_signature(req["url"], req["params"])}
    elif op == "twilio_validate":
        out = {"valid": RequestValidator(req["token"]).validate(req["url"], req["params"], req["signature"])}
    elif op == "ed25519_keypair":
        key = nacl.signing.SigningKey(bytes.fromhex(req["seed_hex"]))
        out = {"public_key": base64.b64encode(bytes(key.verify_key)).decode()}
    elif op == "ed25519_sign":
        key = nacl.signing.SigningKey(bytes.fromhex(req["seed_hex"]))
        signed = key.sign(base64.b64decode(req["message_b64"]))
        out = {"signature": base64.b64encode(signed.signature).decode()}
    else:
        out = {"error": "unknown op " + op}
    print(json.dumps(out), flush=True)
