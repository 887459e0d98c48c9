"""Prolific's webhooks: the signature of a delivery, checked, and the id an event is
deduplicated by."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

SIGNATURE_HEADER = "X-Prolific-Request-Signature"
TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Prolific's webhook signature: HMAC-SHA256 of the timestamp followed by the body, keyed
    with the subscription's secret, base64-encoded.

    >>> signature("s3cret", "1700000000", b'{"event_type": "submission.status.change"}')
    'euhQQLdcek6MPZh3BsXKmBEY4VZkOqqRTmdl579mLhs='
    """
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verify_signature(secret: str, timestamp: str | None, body: bytes, sig: str | None) -> bool:
    """True when ``sig`` is Prolific's signature of ``timestamp`` and ``body``: over the body as
    received, or over it as Python's ``json.dumps`` writes it (the form of Prolific's example),
    compared in constant time. False without a secret, a timestamp or a signature."""
    if not secret or not timestamp or not sig:
        return False
    candidates = [body]
    with contextlib.suppress(ValueError):
        candidates.append(json.dumps(json.loads(body)).encode())
    return any(
        hmac.compare_digest(signature(secret, timestamp, b).encode(), sig.strip().encode())
        for b in candidates
    )


EVENT_ID_HEADER = "X-Event-ID"
"""The header Prolific's retried deliveries of one event share (its idempotency key)."""


def event_id(
    payload: Mapping[str, Any], timestamp: str, body: bytes, header: str | None = None
) -> str:
    """The id a Prolific event is deduplicated by: the ``X-Event-ID`` header, which Prolific
    documents as the same across the retries of an event, else the body's own (``event_id`` or
    ``id``), else a digest of the timestamp and the body (a delivery repeated as is)."""
    if header and header.strip():
        return header.strip()[:300]
    for key in ("event_id", "id"):
        value = payload.get(key)
        if isinstance(value, str | int) and str(value):
            return str(value)[:300]
    return "sha256:" + hashlib.sha256(timestamp.encode() + b"." + body).hexdigest()


__all__ = [
    "EVENT_ID_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "event_id",
    "signature",
    "verify_signature",
]
