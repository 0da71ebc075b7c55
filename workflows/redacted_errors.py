"""Exceptions with the secrets of a task taken out, before the SDK logs or records them.

What the Temporal SDK does with an exception that leaves workflow or activity code:
- an activity's: logged at WARNING with its traceback ("Completing activity as failed"), then
  converted into the failure of ActivityTaskFailed (message, stack trace, causes, details);
  the failure of a retried attempt is also kept, as `last_failure` of ActivityTaskStarted;
- a workflow's `FailureError` (e.g. ApplicationError): the failure of WorkflowExecutionFailed
  (logged only at DEBUG);
- any other exception of a workflow (a bug): logged at WARNING with its traceback ("Failed
  activation on workflow"), then the failure of WorkflowTaskFailed, and retried.
Each takes the message from `str()` / `.message`, the causes from `__cause__` (or an
unsuppressed `__context__`), the stack trace from the traceback's frames (file, line, code:
no values) and, for an ApplicationError, its details. `redacted_error` rebuilds the chain with
those redacted, keeping every type and traceback, so the SDK's log line and the recorded
failure say the same thing, minus the secrets. An exception that mentions no secret is
returned as is.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError, FailureError, is_cancelled_exception

from workflows.redaction import Redactor

_MAX_CHAIN = 32


class RedactedError(Exception):
    """Stands for an exception that could not be copied without its secrets (its type name
    and redacted message are in the message)."""


def redacted_error(err: BaseException, redactor: Redactor) -> BaseException:
    """`err` itself when it shows no secret; otherwise the same chain with them redacted."""
    if not redactor or is_cancelled_exception(err):
        return err
    if not any(redactor.mentions(_shown(link)) for link in _chain(err)):
        return err
    return _rebuild(err, redactor, 0)


def _chain(err: BaseException) -> list[BaseException]:
    links: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and len(links) < _MAX_CHAIN and current not in links:
        links.append(current)
        current = _next(current)
    return links


def _next(err: BaseException) -> BaseException | None:
    if err.__cause__ is not None:
        return err.__cause__
    return None if err.__suppress_context__ else err.__context__


def _shown(err: BaseException) -> str:
    """Everything of `err` that may reach a log line or a failure: its message, args, text
    attributes (e.g. a CalledProcessError's command) and an ApplicationError's details."""
    details = err.details if isinstance(err, ApplicationError) else ()
    texts = {k: v for k, v in vars(err).items() if _is_text(v) and k != "_failure"}
    return f"{err!s}\n{err.args!r}\n{texts!r}\n{details!r}"


def _is_text(value: Any) -> bool:
    return isinstance(value, str | list | tuple | dict)


def _rebuild(err: BaseException, redactor: Redactor, depth: int) -> BaseException:
    copy = _copy(err, redactor)
    cause = _next(err)
    copy.__cause__ = (
        _rebuild(cause, redactor, depth + 1) if cause is not None and depth < _MAX_CHAIN else None
    )
    copy.__suppress_context__ = True
    return copy.with_traceback(err.__traceback__)


def _copy(err: BaseException, redactor: Redactor) -> BaseException:
    if isinstance(err, ApplicationError):
        return ApplicationError(
            redactor.text(err.message),
            *redactor.value(list(err.details)),
            type=err.type,
            non_retryable=err.non_retryable,
            next_retry_delay=err.next_retry_delay,
            category=err.category,
        )
    copy = _same_type(err, redactor)
    if copy is not None and not redactor.mentions(_shown(copy)):
        return copy
    message = redactor.text(str(err))
    if isinstance(err, FailureError):  # still a failure, as the SDK would have recorded it
        return ApplicationError(message, type=type(err).__name__)
    return RedactedError(f"{type(err).__name__}: {message}")


def _same_type(err: BaseException, redactor: Redactor) -> BaseException | None:
    """A copy of `err` of its own type, with its args and attributes redacted (None when the
    type cannot be copied that way)."""
    args = tuple(redactor.value(list(err.args)))
    try:
        copy = type(err).__new__(type(err), *args)
        copy.args = args
        for name, value in vars(err).items():
            setattr(copy, name, _redacted_attribute(name, value, redactor))
    except Exception:  # a type with its own ideas about construction
        return None
    if str(err) and not str(copy):
        return None  # its message lived somewhere the copy cannot reach
    return copy


def _redacted_attribute(name: str, value: Any, redactor: Redactor) -> Any:
    if name == "_failure":
        return None  # the raw failure it came from: rebuilt from the redacted attributes
    return redactor.value(value) if _is_text(value) else value
