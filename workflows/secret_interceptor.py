"""The worker interceptor that keeps a task's secrets out of the worker's log and of the
failures Temporal records (see workflows/redacted_errors.py for what the SDK does with an
exception).

- Workflows: the secrets come from the task's input (`TaskInput.secret_arguments`). Every
  exception leaving the workflow, a signal handler or a query is redacted before the SDK sees
  it: a workflow failure, and a workflow task failure (a bug, which Temporal retries).
- Activities learn the secrets from the `mcp-secrets` header, which the workflow sets on each
  activity it schedules when it has secrets; an exception leaving the activity is redacted
  before the SDK logs it and records it. The header holds the secret values, like the
  workflow's input in the same history: a payload codec (MCP_TASKS_PAYLOAD_KEY) encrypts both.
"""

from __future__ import annotations

from typing import Any, NoReturn

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleQueryInput,
    HandleSignalInput,
    Interceptor,
    StartActivityInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from workflows.redacted_errors import redacted_error
from workflows.redaction import Redactor

SECRETS_HEADER = "mcp-secrets"


def _raise_redacted(err: BaseException, redactor: Redactor) -> NoReturn:
    redacted = redacted_error(err, redactor)
    if redacted is err:
        raise err
    raise redacted


class SecretsInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityInbound(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _WorkflowInbound


class _WorkflowInbound(WorkflowInboundInterceptor):
    redactor = Redactor()

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_WorkflowOutbound(outbound, self))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        # Duck-typed: inside the sandbox, TaskInput is the sandbox's own copy of the class.
        task = input.args[0] if input.args else None
        names = getattr(task, "secret_arguments", None)
        arguments = getattr(task, "arguments", None)
        if names and isinstance(arguments, dict):
            self.redactor = Redactor.for_arguments(arguments, names)
        # Exception, not BaseException: the SDK steers workflows and activities with those
        # (continue-as-new, eviction, asyncio cancellation), which must pass untouched.
        try:
            return await super().execute_workflow(input)
        except Exception as err:
            _raise_redacted(err, self.redactor)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        try:
            await super().handle_signal(input)
        except Exception as err:
            _raise_redacted(err, self.redactor)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        try:
            return await super().handle_query(input)
        except Exception as err:
            _raise_redacted(err, self.redactor)


class _WorkflowOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, inbound: _WorkflowInbound) -> None:
        super().__init__(next)
        self._inbound = inbound

    def _headers(self, headers: Any) -> Any:
        secrets = self._inbound.redactor.secrets
        if not secrets:
            return headers
        payload = workflow.payload_converter().to_payload(list(secrets))
        return {**headers, SECRETS_HEADER: payload}

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = self._headers(input.headers)
        return super().start_activity(input)

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = self._headers(input.headers)
        return super().start_local_activity(input)


class _ActivityInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await super().execute_activity(input)
        except Exception as err:
            payload = input.headers.get(SECRETS_HEADER)
            if payload is None:
                raise
            try:
                secrets = activity.payload_converter().from_payload(payload, list[str])
            except Exception:  # fail closed: an error that may show secrets is not shown
                raise ApplicationError(
                    "the activity failed; its error is withheld because the task's secrets "
                    f"header could not be read ({type(err).__name__})",
                    type=type(err).__name__,
                ) from None
            _raise_redacted(err, Redactor(secrets))
