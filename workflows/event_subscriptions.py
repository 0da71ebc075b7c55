"""The webhook subscriptions of one principal (SEP-3415 `events/subscribe`), durable in Temporal:
the workflow `mcp-events-<task queue>-<principal>`.

Rules implemented:
- Subscribe (update `SUBSCRIBE_UPDATE`, sent with update-with-start, so the first one starts
  the workflow): a subscription id the workflow holds is a refresh: a new lifetime, a new secret
  (the previous one still signs for `ROTATION_GRACE`), and the delivery status so far. A new one
  counts against the principal's limit, and a URL this principal has not verified yet is
  verified first by the handshake (activity `VERIFY_ACTIVITY`); it is refused on failure.
  Verification is kept per URL for `REVERIFY_AFTER` (across continue-as-new); a failed one is
  answered again without a POST for `HANDSHAKE_BACKOFF` (for every URL of the same
  destination, host and port, when it could not be reached at all), and at most
  `HANDSHAKES_PER_DESTINATION` handshakes go to one destination in `HANDSHAKE_WINDOW` (more:
  `HANDSHAKE_LIMITED`, no POST).
- A subscription is bound to the credential that made (or last refreshed) it: signal
  `CREDENTIALS_REVOKED_SIGNAL` drops those of revoked credentials; its expiry is never past
  the credential's. Query `SUBSCRIPTIONS_QUERY` lists the live ones (no secret).
- Deliveries: at most `max_in_flight` of this principal's at once (more events are counted in
  `deliveryStatus.droppedEvents`, not delivered); after `SUSPEND_AFTER_FAILURES` failed
  deliveries in a row a subscription is suspended (`deliveryStatus.active: false`) until its
  client refreshes it.
- A subscription ends at its `expires_at` (a durable timer), or by unsubscribe (update
  `UNSUBSCRIBE_UPDATE`). An ended subscription starts nothing, and its deliveries still
  pending stop: each asks `SUBSCRIPTION_QUERY` before every attempt.
- A task's event (signal `TASK_EVENT_SIGNAL`) starts one `McpEventDelivery` child per live
  subscription whose name and arguments select it, with the id `<subscription id>.<event id>`
  (a replayed or repeated signal starts none twice). Children outlive this workflow
  (`ParentClosePolicy.ABANDON`); the outcome of those that end in this run is kept as the
  subscription's delivery status (lastDeliveryAt, lastError, failedSince).
- With no subscription left for `IDLE_CLOSE` the workflow closes (a later subscribe starts it
  again); it continues as new when Temporal suggests it, its state handed on.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError

from mcp_tasks.contracts.events import (
    CREDENTIALS_REVOKED_SIGNAL,
    HANDSHAKE_LIMITED,
    SUBSCRIBE_UPDATE,
    SUBSCRIPTION_QUERY,
    SUBSCRIPTIONS_QUERY,
    SUBSCRIPTIONS_WORKFLOW,
    SUSPEND_AFTER_FAILURES,
    TASK_EVENT_SIGNAL,
    UNSUBSCRIBE_UPDATE,
    VERIFY_ACTIVITY,
    CredentialsRevoked,
    DeliveryStatus,
    EventDelivery,
    EventOutcome,
    Liveness,
    SubscribeInput,
    SubscribeResult,
    Subscription,
    SubscriptionsInput,
    SubscriptionView,
    TaskEvent,
    UnsubscribeInput,
    VerifyInput,
)
from mcp_tasks.contracts.task_state import iso_timestamp
from workflows.delivery import EventDeliveryWorkflow

ROTATION_GRACE = timedelta(minutes=5)
# After a failed handshake, the same URL is not challenged again for this long (the same
# failure is answered): a principal cannot turn subscribe calls into a flood of POSTs at a URL.
HANDSHAKE_BACKOFF = timedelta(minutes=1)
IDLE_CLOSE = timedelta(minutes=1)
HANDSHAKE_TIMEOUT = timedelta(seconds=20)
# A verified URL is challenged again when next subscribed after this long: a receiver that
# once agreed does not stay agreed for as long as the workflow lives.
REVERIFY_AFTER = timedelta(hours=1)
# The most handshakes one principal sends to one destination (host, port) in a window; more
# subscribe calls are refused (RATE_LIMITED) without a POST.
HANDSHAKES_PER_DESTINATION = 5
HANDSHAKE_WINDOW = timedelta(minutes=10)
UNREACHABLE = frozenset({"connection_refused", "timeout", "tls_error", HANDSHAKE_LIMITED})
# Guards what changed the commands of running workflows: suspension after failed deliveries,
# the handshake's limits per destination, and the re-verification of old URLs.
SUSPEND_PATCH = "event-subscription-suspension"
DESTINATION_PATCH = "event-handshake-per-destination"
REVERIFY_PATCH = "event-url-reverified"


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@workflow.defn(name=SUBSCRIPTIONS_WORKFLOW)
class EventSubscriptionsWorkflow:
    @workflow.init
    def __init__(self, state: SubscriptionsInput) -> None:
        self._principal = state.principal
        self._subscriptions = {s.id: s for s in state.subscriptions}
        self._verified = set(state.verified_urls)
        self._verified_at = dict(state.verified_at)
        self._max_in_flight = state.max_in_flight
        self._in_flight = 0  # deliveries this run started that have not ended
        # destination (or, in runs from before, URL) -> (until, why)
        self._refused: dict[str, tuple[datetime, str]] = {}
        self._handshakes: dict[str, list[datetime]] = {}  # destination -> recent handshakes
        self._lock = asyncio.Lock()  # one subscribe or unsubscribe at a time (handshakes await)
        self._changed = False
        self._starting = 0  # child starts in flight: they must be done before the run ends

    @workflow.run
    async def run(self, state: SubscriptionsInput) -> None:
        while True:
            self._drop_expired()
            if workflow.info().is_continue_as_new_suggested():
                await self._quiet()
                workflow.continue_as_new(self._handed_on())
            self._changed = False
            if not self._subscriptions:
                idle = await self._wait(IDLE_CLOSE)
                if idle and not self._subscriptions:
                    await self._quiet()
                    if not self._subscriptions:
                        return
                continue
            soonest = min(_at(s.expires_at) for s in self._subscriptions.values())
            await self._wait(max(soonest - workflow.now(), timedelta(seconds=1)))

    async def _wait(self, within: timedelta) -> bool:
        """Until something changed (True: nothing did `within`)."""
        try:
            # Also when Temporal suggests continue-as-new (a long-lived subscription hearing
            # many events grows the history without any change of its own).
            await workflow.wait_condition(
                lambda: self._changed or workflow.info().is_continue_as_new_suggested(),
                timeout=within,
            )
        except TimeoutError:
            return True
        return False

    async def _quiet(self) -> None:
        await workflow.wait_condition(
            lambda: workflow.all_handlers_finished() and self._starting == 0
        )

    def _handed_on(self) -> SubscriptionsInput:
        return SubscriptionsInput(
            self._principal,
            list(self._subscriptions.values()),
            sorted(self._verified),
            dict(self._verified_at),
            self._max_in_flight,
        )

    def _drop_expired(self) -> None:
        now = workflow.now()
        for key, subscription in list(self._subscriptions.items()):
            if _at(subscription.expires_at) <= now:
                del self._subscriptions[key]

    # ----- the server's requests -----------------------------------------------------------

    @workflow.update(name=SUBSCRIBE_UPDATE)
    async def subscribe(self, request: SubscribeInput) -> SubscribeResult:
        async with self._lock:
            self._drop_expired()
            now = workflow.now()
            self._max_in_flight = request.max_in_flight
            expiry = now + timedelta(seconds=request.ttl_s)
            if request.credential_expires_at:  # never past the credential's own expiry
                expiry = min(expiry, _at(request.credential_expires_at))
            expires_at = iso_timestamp(expiry)
            existing = self._subscriptions.get(request.subscription_id)
            if existing is not None:
                return self._refresh(existing, request, expires_at)
            if len(self._subscriptions) >= request.max_subscriptions:
                return SubscribeResult(error="limit")
            if not self._still_verified(request.url, now):
                # Per destination (host and port), not per URL: query-string variants of one
                # URL are one receiver, and one principal's handshakes may not probe it.
                per_destination = workflow.patched(DESTINATION_PATCH)
                key = (request.destination or request.url) if per_destination else request.url
                for refused in (self._refused.get(key), self._refused.get(request.url)):
                    if refused is not None and refused[0] > now:
                        return SubscribeResult(error=refused[1])
                if per_destination and not self._handshake_allowed(key, now):
                    return SubscribeResult(error=HANDSHAKE_LIMITED)
                failure: str = await workflow.execute_activity(
                    VERIFY_ACTIVITY,
                    VerifyInput(
                        request.subscription_id, request.url, request.secret, request.challenge
                    ),
                    result_type=str,
                    start_to_close_timeout=HANDSHAKE_TIMEOUT,
                    retry_policy=RetryPolicy(maximum_attempts=1),
                )
                if failure:
                    # A destination that could not be reached is one for every URL of it (no
                    # port probing by path or query); one that answered, a URL's own matter.
                    where = key if failure in UNREACHABLE else request.url
                    self._refused[where] = (workflow.now() + HANDSHAKE_BACKOFF, failure)
                    return SubscribeResult(error=failure)
                self._verified.add(request.url)
                self._verified_at[request.url] = iso_timestamp(workflow.now())
            self._subscriptions[request.subscription_id] = Subscription(
                request.subscription_id,
                request.name,
                request.arguments,
                request.url,
                [request.secret],
                expires_at,
                credential=request.credential,
            )
            self._changed = True
            return SubscribeResult(refresh_before=expires_at)

    def _handshake_allowed(self, key: str, now: datetime) -> bool:
        recent = [at for at in self._handshakes.get(key, []) if now - at < HANDSHAKE_WINDOW]
        if len(recent) >= HANDSHAKES_PER_DESTINATION:
            self._handshakes[key] = recent
            return False
        self._handshakes[key] = [*recent, now]
        return True

    def _still_verified(self, url: str, now: datetime) -> bool:
        if url not in self._verified:
            return False
        at = self._verified_at.get(url)
        if at is not None and now - _at(at) < REVERIFY_AFTER:
            return True
        if not workflow.patched(REVERIFY_PATCH):
            return True  # a run from before this rule keeps its URLs verified
        self._verified.discard(url)
        return False

    def _refresh(
        self, existing: Subscription, request: SubscribeInput, expires_at: str
    ) -> SubscribeResult:
        status = delivery_status(existing)
        secrets = existing.secrets
        previous_until = existing.previous_until
        if request.secret != secrets[0]:
            secrets = [request.secret, secrets[0]]
            previous_until = iso_timestamp(workflow.now() + ROTATION_GRACE)
        # A refresh is the client's sign of life: a failing delivery's record starts afresh.
        self._subscriptions[existing.id] = replace(
            existing,
            secrets=secrets,
            previous_until=previous_until,
            expires_at=expires_at,
            last_error="",
            failed_since="",
            credential=request.credential or existing.credential,
            failures=0,
            suspended=False,
        )
        self._changed = True
        return SubscribeResult(
            refresh_before=expires_at, refreshed=True, delivery_status=dict(status)
        )

    @workflow.update(name=UNSUBSCRIBE_UPDATE)
    async def unsubscribe(self, request: UnsubscribeInput) -> bool:
        async with self._lock:
            self._drop_expired()
            found = self._subscriptions.pop(request.subscription_id, None) is not None
            self._changed = True
            return found

    @workflow.signal(name=CREDENTIALS_REVOKED_SIGNAL)
    def credentials_revoked(self, revoked: CredentialsRevoked) -> None:
        gone = set(revoked.credentials)
        for key, subscription in list(self._subscriptions.items()):
            if subscription.credential and subscription.credential in gone:
                del self._subscriptions[key]
                self._changed = True

    @workflow.query(name=SUBSCRIPTIONS_QUERY)
    def listed(self) -> list[SubscriptionView]:
        """Every live subscription, as its principal may see it (never a secret)."""
        now = workflow.now()
        return [
            {
                "id": s.id,
                "name": s.name,
                "arguments": s.arguments,
                "delivery": {"mode": "webhook", "url": s.url},
                "refreshBefore": s.expires_at,
                "deliveryStatus": delivery_status(s),
            }
            for s in sorted(self._subscriptions.values(), key=lambda s: s.id)
            if _at(s.expires_at) > now
        ]

    @workflow.query(name=SUBSCRIPTION_QUERY)
    def subscription(self, subscription_id: str) -> Liveness:
        found = self._subscriptions.get(subscription_id)
        now = workflow.now()
        if found is None or _at(found.expires_at) <= now:
            return Liveness(False)
        secrets = found.secrets[:1]
        if len(found.secrets) > 1 and found.previous_until and _at(found.previous_until) > now:
            secrets = found.secrets[:2]
        return Liveness(True, found.url, secrets, found.expires_at)

    # ----- the tasks' events ---------------------------------------------------------------

    @workflow.signal(name=TASK_EVENT_SIGNAL)
    async def task_event(self, event: TaskEvent) -> None:
        self._drop_expired()
        for subscription in list(self._subscriptions.values()):
            if subscription.suspended or not subscription.hears(event):
                continue
            if self._max_in_flight and self._in_flight >= self._max_in_flight:
                subscription.dropped += 1  # the principal's deliveries in flight are many
                continue
            delivery = EventDelivery(
                workflow.info().workflow_id,
                subscription.id,
                event.event_id,
                subscription.name,
                event.occurred_at,
                {**event.task, "sequence": event.sequence},
            )
            self._starting += 1
            self._in_flight += 1
            asyncio.create_task(self._deliver(delivery))  # noqa: RUF006 (counted above)

    async def _deliver(self, delivery: EventDelivery) -> None:
        try:
            await self._delivered(delivery)
        finally:
            self._in_flight -= 1

    async def _delivered(self, delivery: EventDelivery) -> None:
        try:
            handle = await workflow.start_child_workflow(
                EventDeliveryWorkflow.run,
                delivery,
                id=f"{delivery.subscription_id}.{delivery.event_id}",
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                cancellation_type=workflow.ChildWorkflowCancellationType.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"event {delivery.name} for {delivery.subscription_id}",
            )
        except WorkflowAlreadyStartedError:  # a repeated event: delivered once already
            return
        finally:
            self._starting -= 1
        try:
            outcome: EventOutcome = await handle
        except ChildWorkflowError:  # terminated by an operator, or failed: no status to keep
            return
        self._record(delivery.subscription_id, outcome)

    def _record(self, subscription_id: str, outcome: EventOutcome) -> None:
        found = self._subscriptions.get(subscription_id)
        if found is None:
            return
        now = iso_timestamp(workflow.now())
        if outcome.get("outcome") == "delivered":
            found.last_delivery_at, found.last_error, found.failed_since = now, "", ""
            found.failures = 0
        elif outcome.get("outcome") == "failed":
            found.last_error = str(outcome.get("reason") or "timeout")
            found.failed_since = found.failed_since or now
            found.failures += 1
            # A receiver that keeps failing costs every event its full set of attempts: the
            # subscription hears nothing more until its client refreshes it.
            if found.failures >= SUSPEND_AFTER_FAILURES and workflow.patched(SUSPEND_PATCH):
                found.suspended = True


def delivery_status(subscription: Subscription) -> DeliveryStatus:
    """SEP-3415's `deliveryStatus` of a subscription: `active` is false once it is suspended
    (after failed deliveries in a row); `droppedEvents` (this server's) counts the events it
    did not hear because its principal had too many deliveries in flight."""
    status: DeliveryStatus = {
        "active": not subscription.suspended,
        "lastDeliveryAt": subscription.last_delivery_at or None,
        "lastError": subscription.last_error or None,
    }
    if subscription.failed_since:
        status["failedSince"] = subscription.failed_since
    if subscription.dropped:
        status["droppedEvents"] = subscription.dropped
    return status
