"""Answers a 2025-11-25 client sent to a task's relayed question that the task refused.

A client answers a question of an attached call (core/relay.py) with a JSON-RPC response, which
has no reply of its own: a refused answer (not a valid response to the question) would
otherwise be dropped, and the call would wait its whole time. So:
- v2025/client_responses.py records the refusal in the process's `RefusedAnswers`
  (protocol/frame/relays.py), with what was wrong;
- the call that relays that task's questions in this process (an attached call, or a
  tasks/result) is woken (the event it watches with) and asks the question again at once
  under a new request id (`request_id` with an attempt), its message prefixed with what was
  wrong: a refused answer never reaches the workflow, so no history event would wake it;
- after `MAX_REFUSED` refusals of one question the call stops asking it: an attached call
  returns the follow-up result, which names what was wrong (the model can answer with
  `task_respond`); a tasks/result call keeps waiting for an answer given some other way.
A response that reaches another replica than the call's is refused there (and logged): the
call then asks nothing again, and ends with the follow-up result after its wait, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Refusals of one question after which an attached call stops asking it again.
MAX_REFUSED = 3
_PREFIX = "mcp-input:"


def request_id(task_id: str, key: str, attempt: int = 0) -> str:
    """The JSON-RPC id of the request asking `key` of `task_id`; `attempt` > 0 when asked
    again (a client may not take a second request under an id it has already answered)."""
    tag = f"{task_id}~{attempt}" if attempt else task_id
    return f"{_PREFIX}{tag}:{key}"


def parse_request_id(value: object) -> tuple[str, str] | None:
    """(taskId, key) of an id made by `request_id`, else None."""
    if not isinstance(value, str) or not value.startswith(_PREFIX):
        return None
    tag, sep, key = value[len(_PREFIX) :].partition(":")
    task_id, tilde, attempt = tag.rpartition("~")
    if not (tilde and attempt.isdigit()):
        task_id = tag
    return (task_id, key) if sep and task_id and key else None


@dataclass
class Refusals:
    """What one attached call saw refused: per key, how often, and the last reason."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    def add(self, key: str, problem: str) -> bool:
        """Count a refusal of `key`; whether the question may be asked again."""
        self.counts[key] = self.counts.get(key, 0) + 1
        self.problems[key] = problem
        return self.counts[key] < MAX_REFUSED

    @property
    def exhausted(self) -> bool:
        return any(count >= MAX_REFUSED for count in self.counts.values())

    @property
    def last_problem(self) -> str:
        return "; ".join(self.problems.values())
