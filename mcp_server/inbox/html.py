"""Escaping and the page shell of the inbox. Every text that comes from a task (its messages,
schemas, outputs, names) goes through `h()`; pages link one stylesheet and one script, both
served by the app, and carry no inline script or style (the CSP forbids them)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import UTC, datetime

STATIC = "/inbox/static"


def h(value: object) -> str:
    """`value` as HTML text or attribute value."""
    return html.escape(str(value), quote=True)


def join(parts: Iterable[str]) -> str:
    return "".join(parts)


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime; one without a timezone is read as UTC.
    None for anything else (a step's times come from any workflow, checked by nobody)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def when(moment: datetime, now: datetime) -> str:
    """ "2026-12-04 10:31:05 UTC (3 min ago)"."""
    stamp = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({duration((now - moment).total_seconds())} ago)"


def duration(seconds: float) -> str:
    """3 s, 2 min 5 s, 4 h 10 min, 3 d 2 h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{h(name)}" value="{h(value)}">'


def page(
    title: str,
    body: str,
    *,
    user: str | None = None,
    logout_csrf: str | None = None,
    live: str | None = None,
) -> str:
    """A whole page. `user`: who is signed in (shown in the header); `logout_csrf`: a sign-out
    button (token modes); `live`: the event stream the page's script follows."""
    account = ""
    if user is not None:
        account = f'<span class="who">Signed in as <strong>{h(user)}</strong></span>'
        if logout_csrf is not None:
            account += (
                '<form method="post" action="/inbox/logout" class="logout">'
                f'{hidden("csrf", logout_csrf)}<button type="submit" class="link">Sign out'
                "</button></form>"
            )
    live_attr = f' data-live="{h(live)}"' if live else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title)} · MCP tasks inbox</title>"
        '<link rel="icon" href="data:,">'
        f'<link rel="stylesheet" href="{STATIC}/inbox.css">'
        f'<script src="{STATIC}/inbox.js" defer></script>'
        f"</head><body{live_attr}>"
        '<header class="bar"><a class="brand" href="/inbox"><span class="logo">◆</span> '
        f'MCP tasks <span class="dim">Inbox</span></a><div class="account">{account}</div>'
        f"</header><main>{body}</main><footer>Tasks run as durable Temporal workflows; "
        "answers here go through the same checks as <code>tasks/update</code>.</footer>"
        "</body></html>"
    )
