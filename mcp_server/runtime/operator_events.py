"""`mcp-tasks tasks subscriptions PRINCIPAL` and `tasks unsubscribe PRINCIPAL ID`: an operator
sees and ends any principal's event subscriptions (docs/guides/events.md), from Temporal
directly, as a principal does with `events/subscriptions/list` and `/remove`.

One line per subscription: its id, event name, arguments, URL, `refreshBefore` and whether it
is active; every value escaped for the terminal (a URL and arguments are the caller's).
"""

from __future__ import annotations

import argparse
import json
import sys

from temporalio.client import Client

from mcp_server.runtime.operator_views import clean
from mcp_server.tasks.event_subscriptions import TemporalSubscriptionStore
from mcp_server.tasks.listing import owner_digest


async def subscriptions_command(args: argparse.Namespace, client: Client, task_queue: str) -> int:
    """`tasks subscriptions` or `tasks unsubscribe` (exit 1: no such subscription)."""
    if args.tasks_command == "subscriptions":
        return await print_subscriptions(client, task_queue, args.principal)
    if not await remove_subscription(client, task_queue, args.principal, args.subscription_id):
        print(
            f"mcp-tasks: no subscription {clean(args.subscription_id)} of that principal",
            file=sys.stderr,
        )
        return 1
    print(f"ended {clean(args.subscription_id)}")
    return 0


async def print_subscriptions(client: Client, task_queue: str, principal: str) -> int:
    store = TemporalSubscriptionStore(client, task_queue)
    listed = await store.listed(owner_digest(principal))
    for entry in listed:
        status = entry.get("deliveryStatus") or {}
        arguments = json.dumps(entry.get("arguments") or {}, sort_keys=True)
        print(
            "  ".join(
                clean(value)
                for value in (
                    entry.get("id"),
                    entry.get("name"),
                    arguments,
                    entry.get("delivery", {}).get("url"),
                    entry.get("refreshBefore"),
                    "active" if status.get("active", True) else "suspended",
                )
            )
        )
    if not listed:
        print("no subscriptions", file=sys.stderr)
    return 0


async def remove_subscription(
    client: Client, task_queue: str, principal: str, subscription_id: str
) -> bool:
    store = TemporalSubscriptionStore(client, task_queue)
    return await store.unsubscribe(owner_digest(principal), subscription_id)
