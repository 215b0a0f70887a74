"""The one wait of the tests and benchmarks (testing/waiting.py): the first true answer, in a
thread or in an event loop, and a failure that names what never came."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from ssebench.testing.waiting import NeverHappened, wait_for, wait_for_async


def test_the_first_true_answer_is_returned_and_an_empty_one_is_waited_past() -> None:
    answers = iter([None, False, [], 0, "", ["it"], ["later"]])
    assert wait_for(lambda: next(answers), 5, "it", step=0) == ["it"]
    assert next(answers) == ["later"]  # asked no more once answered


def test_what_never_came_is_named_after_the_limit() -> None:
    asked = itertools.count()
    started = time.monotonic()
    with pytest.raises(NeverHappened, match=r"^the mark: not there after 0.2 s$"):
        wait_for(lambda: next(asked) < 0, 0.2, "the mark", step=0.05)
    assert 0.2 <= time.monotonic() - started < 5
    assert 2 <= next(asked) <= 6  # asked every step (a sleep is never shorter), not busily


def test_a_said_function_is_asked_only_when_the_wait_fails() -> None:
    said = []

    def what() -> str:
        said.append(1)
        return "the group gone (live: [7])"

    ready = iter([False, False, True])
    assert wait_for(lambda: next(ready), 5, what, step=0) is True
    assert said == []
    with pytest.raises(NeverHappened, match=r"^the group gone \(live: \[7\]\): not there after"):
        wait_for(lambda: False, 0, what, step=0)
    assert said == [1]


def test_in_an_event_loop_the_loop_runs_between_the_asks() -> None:
    async def scenario() -> str:
        done: list[str] = []

        async def later() -> None:
            await asyncio.sleep(0.05)
            done.append("ran")

        task = asyncio.create_task(later())
        answer = await wait_for_async(lambda: done and done[0], 5, "the task", step=0.01)
        await task
        return answer

    assert asyncio.run(scenario()) == "ran"
    with pytest.raises(NeverHappened, match=r"^nothing: not there after 0.05 s$"):
        asyncio.run(wait_for_async(lambda: None, 0.05, "nothing"))
