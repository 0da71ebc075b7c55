"""How a webhook delivery is signed, and how a receiver checks it (standard library only: a
receiver may import this module or copy its dozen lines).

Every POST carries:
- `Mcp-Tasks-Delivery`: the delivery id, the same on every retry of one notification (and the
  body's `id`): a receiver deduplicates on it, as delivery is at least once;
- `Mcp-Tasks-Timestamp`: the Unix time (seconds) at which this attempt was signed;
- `Mcp-Tasks-Signature`: `v1=` and the hex HMAC-SHA256, keyed with the endpoint's secret, of
  the timestamp, a `.`, and the body's exact bytes.

`verify` accepts a delivery only with a valid signature and a timestamp within `window_s` of
the receiver's clock (either way), so a recorded delivery cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

DELIVERY_HEADER = "Mcp-Tasks-Delivery"
TIMESTAMP_HEADER = "Mcp-Tasks-Timestamp"
SIGNATURE_HEADER = "Mcp-Tasks-Signature"
EVENT_HEADER = "Mcp-Tasks-Event"
VERSION = "v1"
DEFAULT_WINDOW_S = 300.0


class SignatureError(ValueError):
    """A delivery that must not be trusted; the message says why."""


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for `body` signed at `timestamp`."""
    signed = str(timestamp).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"{VERSION}={digest}"


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    now: float,
    window_s: float = DEFAULT_WINDOW_S,
) -> str:
    """The delivery id of a genuine, fresh delivery; SignatureError otherwise.

    `headers` may use any case (a dict, Starlette's `request.headers`, `dict(handler.headers)`
    of http.server); `body` is the raw request body; `now` the receiver's Unix time."""
    lowered = {name.lower(): value for name, value in headers.items()}
    delivery = lowered.get(DELIVERY_HEADER.lower(), "")
    stamp = lowered.get(TIMESTAMP_HEADER.lower(), "")
    given = lowered.get(SIGNATURE_HEADER.lower(), "")
    if not (delivery and stamp and given):
        raise SignatureError(
            f"missing {DELIVERY_HEADER}, {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header"
        )
    try:
        timestamp = int(stamp)
    except ValueError:
        raise SignatureError(f"{TIMESTAMP_HEADER} is not a Unix time: {stamp[:40]!r}") from None
    if abs(now - timestamp) > window_s:
        raise SignatureError(
            f"{TIMESTAMP_HEADER} is {now - timestamp:.0f} s away from now (more than "
            f"{window_s:.0f} s): a replay, or a clock that is off"
        )
    expected = signature(secret, timestamp, body)
    # Several signatures may be given (comma-separated), e.g. while a secret is rotated.
    if not any(hmac.compare_digest(expected, part.strip()) for part in given.split(",")):
        raise SignatureError("the signature does not match (another secret, or a changed body)")
    return delivery
