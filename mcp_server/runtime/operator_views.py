"""How `mcp-tasks tasks list` and `tasks show` print tasks: an aligned table, a readable page,
or JSON. Task texts (statusMessage, form messages, results) come from tools and callers: every
control character is shown escaped, never sent to the terminal as is."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from mcp_server.protocol.core.views import get_task_result
from mcp_server.protocol.frame.errors import error_object
from mcp_server.tasks.listing import ListedTask, TaskDetail
from mcp_server.tasks.snapshots import TaskSnapshot, progress_label
from mcp_server.tasks.ttl import is_expired
from mcp_tasks.contracts.task_state import parse_timestamp

MESSAGE_WIDTH = 60


def clean(text: object) -> str:
    """`text` safe for a terminal: control characters escaped (\\x1b, \\n, ...)."""
    value = str(text)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in value)


def _short(text: str | None, width: int = MESSAGE_WIDTH) -> str:
    value = clean(text or "")
    return value if len(value) <= width else value[: width - 1] + "…"


def age(timestamp: str, now: datetime | None = None) -> str:
    """How long ago `timestamp` was: 45s, 12m, 3h, 2d."""
    try:
        seconds = ((now or datetime.now(UTC)) - parse_timestamp(timestamp)).total_seconds()
    except ValueError:
        return "?"
    return _span(max(0, int(seconds)))


def _ttl(snapshot: TaskSnapshot) -> str:
    if snapshot.ttl_ms is None:
        return "unlimited"
    expired = is_expired(snapshot, datetime.now(UTC))
    note = "; expired: tasks/get answers not found" if expired else ""
    return f"{snapshot.ttl_ms} ({_span(snapshot.ttl_ms // 1000)}{note})"


def _span(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


Link = Callable[[str, str | None], str | None]  # (taskId, runId): its Web UI page, if any


def _no_link(task_id: str, run_id: str | None) -> str | None:
    return None


def listed_json(task: ListedTask, link: Link = _no_link) -> str:
    snapshot = task.snapshot
    line: dict[str, Any] = {
        "taskId": snapshot.task_id,
        "tool": task.tool,
        "status": snapshot.status,
        "statusMessage": snapshot.status_message,
        "createdAt": snapshot.created_at,
        "lastUpdatedAt": snapshot.last_updated_at,
        "owner": snapshot.owner,
        "runId": task.run_id,
        "taskQueue": task.task_queue,
        "waitingSince": task.waiting_since,
    }
    if snapshot.approvers:
        line["approvers"] = snapshot.approvers
    if snapshot.progress is not None:  # what the task reported: {"progress": n, "total"?: m}
        line["progress"] = snapshot.progress
    url = link(snapshot.task_id, task.run_id)
    if url is not None:
        line["webUi"] = url
    return json.dumps(line, ensure_ascii=False)


def table(tasks: list[ListedTask], link: Link = _no_link) -> str:
    """AGE: since the task was created; WAITING: since it waits for input ("-" when not); each
    task's Web UI page on a line of its own under it, when MCP_TASKS_TEMPORAL_UI_URL is set."""
    header = ("TASK ID", "TOOL", "STATUS", "AGE", "WAITING", "STATUS MESSAGE")
    rows = [
        (
            clean(t.snapshot.task_id),
            clean(t.tool),
            t.snapshot.status,
            age(t.snapshot.created_at),
            age(t.waiting_since) if t.waiting_since else "-",
            _short(t.snapshot.status_message),
        )
        for t in tasks
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    lines = []
    for number, row in enumerate([header, *rows]):
        cells = [cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
        url = link(tasks[number - 1].snapshot.task_id, tasks[number - 1].run_id) if number else None
        if url is not None:
            lines.append(f"  {url}")
    return "\n".join(lines)


def shown_json(snapshot: TaskSnapshot, detail: TaskDetail, link: Link = _no_link) -> str:
    """`tasks show --json`: the tasks/get result and the operator's detail."""
    task = get_task_result(snapshot).model_dump(mode="json", by_alias=True, exclude_none=True)
    operator = {
        "tool": detail.tool,
        "owner": detail.owner,
        "requestedBy": snapshot.requested_by,
        "relatedTaskIds": snapshot.related_task_ids,
        "approvers": snapshot.approvers,
        "answeredBy": snapshot.answered_by,
        "steps": snapshot.steps,
        "progress": snapshot.progress,
        "runId": detail.run_id,
        "workflowType": detail.workflow_type,
        "taskQueue": detail.task_queue,
        "executionStatus": detail.execution_status,
        "historyLength": detail.history_length,
        "expired": is_expired(snapshot, datetime.now(UTC)),
    }
    url = link(snapshot.task_id, detail.run_id)
    if url is not None:
        operator["webUi"] = url
    return json.dumps({"task": task, "operator": operator}, ensure_ascii=False, indent=2)


def _field_line(name: str, field: Mapping[str, Any], required: bool) -> str:
    kind = str(field.get("type", "any"))
    notes = [kind, "required" if required else "optional"]
    choices = field.get("enum") or [o.get("const") for o in field.get("oneOf") or []]
    if choices:
        notes.append("one of " + ", ".join(clean(c) for c in choices))
    for key, label in (
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minimum", "min"),
        ("maximum", "max"),
        ("format", "format"),
    ):
        if key in field:
            notes.append(f"{label} {clean(field[key])}")
    if "default" in field:
        notes.append(f"default {clean(json.dumps(field['default']))}")
    title = field.get("title") or field.get("description")
    return f"      {clean(name)}: {'; '.join(notes)}" + (f"  ({clean(title)})" if title else "")


def request_lines(key: str, request: Mapping[str, Any]) -> list[str]:
    """One outstanding input request: its key, method, message and form fields."""
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    assert isinstance(params, dict)
    lines = [f"  [{clean(key)}] {clean(request.get('method', '?'))}"]
    if params.get("message"):
        first, *more = str(params["message"]).splitlines() or [""]
        lines.append(f"    message: {clean(first)}")
        lines += [f"             {clean(line)}" for line in more]
    if params.get("mode") == "url":
        lines.append(f"    url: {clean(params.get('url', ''))}")
    schema = params.get("requestedSchema")
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        assert isinstance(required, list)
        lines.append("    fields:")
        for name, field in schema["properties"].items():
            if isinstance(field, dict):
                lines.append(_field_line(name, field, name in required))
    return lines


def step_line(number: int, step: Mapping[str, Any]) -> str:
    line = f"  {number}. {clean(step.get('name', '?'))}: {clean(step.get('status', '?'))}"
    started, ended = step.get("startedAt"), step.get("endedAt")
    if isinstance(started, str) and isinstance(ended, str):
        try:
            took = (parse_timestamp(ended) - parse_timestamp(started)).total_seconds()
            line += f", {took:.1f} s"
        except ValueError:
            pass
    if step.get("exitCode") is not None:
        line += f", exit code {clean(step['exitCode'])}"
    tail = step.get("outputTail")
    if tail:
        line += "\n" + "\n".join(f"       | {clean(part)}" for part in str(tail).splitlines())
    return line


def _outcome_lines(snapshot: TaskSnapshot) -> list[str]:
    if snapshot.status == "completed" and snapshot.result is not None:
        lines = ["Result" + (" (tool error)" if snapshot.result.get("isError") else "") + ":"]
        for block in snapshot.result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                # Every line of the caller's text behind a gutter: a newline in it cannot draw
                # a line that looks like the page's own.
                lines += [f"  | {clean(part)}" for part in str(block.get("text")).splitlines()]
        structured = snapshot.result.get("structuredContent")
        if structured is not None:
            lines.append(f"  structuredContent: {clean(json.dumps(structured))}")
        return lines
    if snapshot.status == "failed" and snapshot.error is not None:
        error = error_object(snapshot.error)
        return [f"Error {clean(error['code'])}: {clean(error['message'])}"]
    return []


def _progress_line(snapshot: TaskSnapshot) -> list[str]:
    """How far the task is, as it reported (TaskState.progress): not a field of tasks/get's
    result, shown beside its statusMessage because that is where a person looks for it."""
    label = progress_label(snapshot.progress)
    return [f"  progress:       {clean(label)}"] if label is not None else []


def page(snapshot: TaskSnapshot, detail: TaskDetail, link: Link = _no_link) -> str:
    """`tasks show`: the task as tasks/get shows it, then what only an operator sees."""
    interval = snapshot.advertised_poll_interval_ms or snapshot.poll_interval_ms
    lines = [
        f"Task {clean(snapshot.task_id)} ({clean(detail.tool)})",
        f"  status:         {snapshot.status}",
        f"  statusMessage:  {clean(snapshot.status_message or '')}",
        *_progress_line(snapshot),
        f"  createdAt:      {snapshot.created_at} ({age(snapshot.created_at)} ago)",
        f"  lastUpdatedAt:  {snapshot.last_updated_at} ({age(snapshot.last_updated_at)} ago)",
        f"  ttlMs:          {_ttl(snapshot)}",
        f"  pollIntervalMs: {interval if interval is not None else '-'}",
    ]
    if snapshot.input_requests:
        lines.append("Waiting for input:")
        for key, request in snapshot.input_requests.items():
            lines += request_lines(key, request if isinstance(request, dict) else {})
    lines += _outcome_lines(snapshot)
    lines += [
        "Operator detail:",
        f"  owner (digest): {clean(detail.owner)}",
        f"  requestedBy:    {clean(snapshot.requested_by or '-')}",
    ]
    if snapshot.related_task_ids:
        related = ", ".join(clean(task_id) for task_id in snapshot.related_task_ids)
        lines.append(f"  relatedTaskIds: {related}")
    for key, names in snapshot.approvers.items():
        lines.append(f"  approvers[{clean(key)}]: {', '.join(clean(n) for n in names)}")
    for key, who in snapshot.answered_by.items():
        lines.append(f"  answeredBy[{clean(key)}]: {clean(who)}")
    lines += [
        f"  workflow:       {clean(detail.workflow_type)} on task queue {clean(detail.task_queue)}",
        f"  execution:      {detail.execution_status}, run {detail.run_id}, "
        f"{detail.history_length} history events",
    ]
    url = link(snapshot.task_id, detail.run_id)
    if url is not None:
        lines.append(f"  Web UI:         {url}")
    if snapshot.steps:
        lines.append("Steps:")
        lines += [step_line(n, step) for n, step in enumerate(snapshot.steps, 1)]
    return "\n".join(lines)
