"""A Slack webhook's URL is its only credential: the attack read it from the worker's log
(`HTTP Request: POST https://hooks.slack.com/services/...` from httpx at INFO). No delivery,
delivered or failed, may put a URL's path in a log line or an error."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.delivery import DeliverySender
from mcp_server.runtime.devserver import free_port
from mcp_tasks import logging as log_setup
from mcp_tasks.contracts.webhooks import WebhookDelivery
from mcp_tasks.webhooks.endpoints import WebhookEndpoint, WebhookEndpoints
from tests.webhook_receiver import WebhookReceiver

SLACK_TOKEN = "XOXB0SECRET0TOKEN0OF0THE0TESTS"
SLACK_PATH = f"/services/T0TEAM/B0HOOK/{SLACK_TOKEN}"


@pytest.fixture
def slack() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(free_port(), secret="")
    receiver.start()
    yield receiver
    receiver.stop()


def sender_for(url: str) -> DeliverySender:
    chat = WebhookEndpoint(id="chat", url=url, events=frozenset({"completed"}), format="slack")
    return DeliverySender(WebhookEndpoints([chat]))


def delivery() -> WebhookDelivery:
    task = {"taskId": "t-1", "tool": "deploy", "status": "completed"}
    return WebhookDelivery("mcp-t-1.webhook.r.1", "chat", "completed", "2026-12-04T10:00:00Z", task)


async def test_a_delivery_logged_at_debug_never_shows_the_webhook_url_path(
    slack: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"http://127.0.0.1:{slack.port}{SLACK_PATH}"
    result = await ActivityEnvironment().run(sender_for(url).deliver_webhook, delivery())
    assert result["status"] == 204 and len(slack.unique()) == 1
    logged = "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)
    assert SLACK_TOKEN not in logged and "/services/" not in logged


async def test_a_failed_delivery_names_the_endpoint_never_its_url(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"http://127.0.0.1:{free_port()}{SLACK_PATH}"  # nothing listens there
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(sender_for(url).deliver_webhook, delivery())
    assert "'chat'" in raised.value.message and SLACK_TOKEN not in raised.value.message
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert SLACK_TOKEN not in logged


async def test_an_operator_who_turns_httpx_logging_on_sees_only_scheme_and_host(
    slack: WebhookReceiver,
) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    httpx_logger = logging.getLogger("httpx")
    before = httpx_logger.level
    httpx_logger.addHandler(handler)
    httpx_logger.setLevel(logging.DEBUG)  # by hand, after the server's log setup
    try:
        url = f"http://127.0.0.1:{slack.port}{SLACK_PATH}"
        await ActivityEnvironment().run(sender_for(url).deliver_webhook, delivery())
    finally:
        httpx_logger.removeHandler(handler)
        httpx_logger.setLevel(before)
    assert f"HTTP Request: POST http://127.0.0.1:{slack.port} " in stream.getvalue()
    assert SLACK_TOKEN not in stream.getvalue()


def test_the_process_log_setup_silences_http_client_request_lines() -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        log_setup.configure("json", "DEBUG")
        for name in ("httpx", "httpcore", "httpcore.http11"):
            assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


def test_a_url_is_cut_to_its_scheme_and_host() -> None:
    line = f'HTTP Request: POST https://hooks.slack.com{SLACK_PATH}?x=1 "HTTP/1.1 200 OK"'
    assert (
        log_setup.redact_urls(line)
        == 'HTTP Request: POST https://hooks.slack.com "HTTP/1.1 200 OK"'
    )
