"""Where the case service asks a check's judge: in the event loop for a log small enough that
searching it costs less than the hop to a thread (1-2 ms a case, bench/RESULTS.md), in a worker
thread for a larger one, so that a server judging a GiB log keeps answering; the verdict is the
judge's either way."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.daemon.service import INLINE_JUDGE_BYTES, _judged


def judged_where(log: Path, verdict: bool) -> tuple[bool, bool]:
    """The verdict, and whether the judge ran on the event loop's thread."""
    threads: list[int] = []

    def judge(run: CaseRun) -> bool:
        threads.append(threading.get_ident())
        assert run.log_path is not None and run.log_path.stat().st_size == run.log_size
        return verdict

    check = Check(name="probe", key="probe", order=1, max_level=4, precedence=1, judge=judge)
    run = CaseRun(0, None, False, 0.0, log_path=log, log_size=log.stat().st_size)

    async def main() -> tuple[bool, bool]:
        passed = await _judged(check, run)
        return passed, threads == [threading.get_ident()]

    return asyncio.run(main())


@pytest.mark.parametrize("verdict", [True, False])
def test_a_small_log_is_judged_in_the_loop(tmp_path: Path, verdict: bool) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"x" * INLINE_JUDGE_BYTES)
    assert judged_where(log, verdict) == (verdict, True)


@pytest.mark.parametrize("verdict", [True, False])
def test_a_larger_log_is_judged_in_a_thread(tmp_path: Path, verdict: bool) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"x" * (INLINE_JUDGE_BYTES + 1))
    assert judged_where(log, verdict) == (verdict, False)
