"""The runner's waiting: each answer of the supervisor handed to whoever waits for it."""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

A = TypeVar("A")


class Answers(Generic[A]):
    """The answers of one kind, by case id: whichever comes first, the answer or whoever
    waits for it, makes the future the other finds."""

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[A]] = {}

    def expect(self, case_id: str) -> asyncio.Future[A]:
        future = self._futures.get(case_id)
        if future is None:
            future = self._futures[case_id] = asyncio.get_running_loop().create_future()
        return future

    def give(self, case_id: str, answer: A) -> None:
        future = self.expect(case_id)
        if not future.done():
            future.set_result(answer)

    def pop(self, case_id: str) -> None:
        self._futures.pop(case_id, None)

    def fail(self, error: Exception) -> None:
        for future in self._futures.values():
            if not future.done():
                future.set_exception(error)
        self._futures.clear()
