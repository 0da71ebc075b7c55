"""The answers this process awaits to the requests it sent a client (a tool's MRTR questions at
2025-11-25, v2025/mrtr.py): one future per request id, held by the process's `Services` so
that no module keeps them. An answer that finds no future here was asked by another replica,
or its call gave up."""

from __future__ import annotations

import asyncio
from typing import Any


class AwaitedAnswers:
    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[dict[str, Any]]] = {}

    def expect(self, request_id: str) -> asyncio.Future[dict[str, Any]]:
        """A future the answer to `request_id` will complete."""
        future = self._futures[request_id] = asyncio.get_running_loop().create_future()
        return future

    def deliver(self, request_id: str, result: dict[str, Any]) -> bool:
        """Complete the future of `request_id`; False when nothing here awaits it."""
        future = self._futures.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(result)
        return True

    def forget(self, request_id: str) -> None:
        self._futures.pop(request_id, None)

    def __len__(self) -> int:
        return len(self._futures)
