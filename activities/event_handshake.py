"""The handshake of a client's event endpoint (SEP-3415): the activity the subscriptions
workflow runs before it keeps a subscription to a URL it has not verified.

Rules implemented:
- It POSTs `{"type": "verification", "challenge": <nonce>}` (`webhook-id`
  `msg_verification_<random>`), signed and sent as an event delivery is (activities/delivery.py:
  the subscription's `whsec_` secret, `X-MCP-Subscription-Id`, the address checks of a
  client's URL), and succeeds only on a 2xx whose JSON body echoes the challenge (compared in
  constant time).
- It returns "" on success, else the lastError category: `challenge_failed`, `http_4xx`,
  `http_5xx`, or how the connection failed.
- At most `DESTINATION_BURST` handshakes, then `DESTINATION_PER_MINUTE`, go to one resolved
  address and port from this worker, whoever asks: beyond, `HANDSHAKE_LIMITED` and nothing is
  sent.
"""

from __future__ import annotations

import hmac
import json
import secrets
from urllib.parse import urlsplit

from temporalio import activity

from activities.callback_http import CallbackError, CallbackPolicy, post, resolved_address
from activities.delivery import (
    EVENT_MAX_BYTES,
    SUBSCRIPTION_HEADER,
    TIMEOUT_S,
    Post,
    category_of,
    encoded,
    headers,
)
from mcp_tasks.contracts.events import HANDSHAKE_LIMITED, VERIFY_ACTIVITY, VerifyInput
from mcp_tasks.token_buckets import TokenBucket, TokenBuckets
from mcp_tasks.webhooks.signature import whsec_key

# Handshakes to one resolved address and port, from every principal, per worker.
DESTINATION_BURST = 10
DESTINATION_PER_MINUTE = 10


class EndpointHandshakes:
    """The handshake activity, bound to the operator's callback policy."""

    def __init__(self, policy: CallbackPolicy) -> None:
        self._policy = policy
        # Handshakes of every principal to one resolved destination, in this worker: a small
        # bucket, so many principals cannot together turn the worker into a port prober.
        self._destinations: TokenBuckets[tuple[str, int], TokenBucket] = TokenBuckets(
            lambda now: TokenBucket(DESTINATION_BURST, now)
        )

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify_endpoint(self, request: VerifyInput) -> str:
        if not await self._destination_allowed(request.url):
            activity.logger.info("event endpoint handshake refused: its destination is busy")
            return HANDSHAKE_LIMITED
        challenge = {"type": "verification", "challenge": request.challenge}
        attempt = Post(
            f"the webhook of subscription {request.subscription_id}",
            request.url,
            encoded(challenge, EVENT_MAX_BYTES),
            f"msg_verification_{secrets.token_hex(12)}",
            [whsec_key(request.secret)],
            {SUBSCRIPTION_HEADER: request.subscription_id},
        )
        try:
            answer = await post(
                attempt.url, attempt.body, headers(attempt), self._policy, TIMEOUT_S
            )
        except CallbackError as err:
            activity.logger.info("event endpoint handshake failed: %s", err)
            return err.category
        if not 200 <= answer.status < 300:
            return category_of(answer.status)
        try:
            echoed = json.loads(answer.body).get("challenge")
        except (ValueError, AttributeError):
            return "challenge_failed"
        if not isinstance(echoed, str):
            return "challenge_failed"
        matches = hmac.compare_digest(echoed.encode(), request.challenge.encode())
        return "" if matches else "challenge_failed"

    async def _destination_allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        try:
            address = await resolved_address(
                parts.hostname or "", parts.port or 443, self._policy.allow_private
            )
        except CallbackError:
            return True  # post() refuses it in turn, with its category, and sends nothing
        bucket = self._destinations.refilled(
            (address, parts.port or 443), lambda _: DESTINATION_PER_MINUTE / 60
        )
        return bucket.take()
