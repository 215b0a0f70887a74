"""Soak: 200 consecutive test_patch calls on one server, each in a new MCP session.

Calls alternate between a passing task state and a failing build whose long log is saved, so
sessions, runs, logs and saved files all come and go. Memory (VmRSS) and open descriptors of
the server (which embeds the daemon) are read after a warm-up and at the end; both must stay
flat, and every answer must be exactly right.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from pathlib import Path

import pytest

from ssebench.core.savedlogs import KEEP_LOGS
from ssebench.testing.calls import call_async
from ssebench.testing.procs import assert_none_left, kill_all, proc_status
from ssebench.testing.servers import clean_env, start_server, write_task
from ssebench.testing.waiting import wait_for_async

from .reports import PASSED_AT_3, check_token_report

pytestmark = [pytest.mark.soak, pytest.mark.timeout(300)]

CALLS = 200
WARM_UP = 20
LINES = 12_000
TASK = f"""
[checks.build]
run = '''
if [ -e "$SSE_SOURCE_DIR/fail" ]; then
  t=$(cat /proc/sys/kernel/random/uuid); echo "run $t"; yes "$t" | head -n {LINES}; exit 1
fi
echo built
'''
"""
RSS_GROWTH_KB = 20 * 1024
FD_SLACK = 2


def settled(pid: int, tmp: str, figures: list[tuple[int, int, int]], seen: list[int]) -> int | None:
    """The server's open descriptors, once what the call just answered has let go of its own
    (a case's folder removed while the next may start, a connection's socket, a saved log being
    written: on a loaded machine, at their own pace): none open under its TMPDIR; after the
    warm-up, the same count twice in a row; at the end, one within FD_SLACK of the warm-up's. A
    leak never gets there, whatever the wait."""
    folder, names = f"/proc/{pid}/fd", []
    for fd in os.listdir(folder):
        with contextlib.suppress(OSError):  # closed since listed
            names.append(os.readlink(f"{folder}/{fd}"))
    seen.append(len(names))
    if any(name.startswith(tmp) for name in names):
        return None
    if not figures:
        return seen[-1] if seen[-2:-1] == seen[-1:] else None
    return seen[-1] if abs(seen[-1] - figures[0][2]) <= FD_SLACK else None


def test_200_calls_keep_memory_and_descriptors_flat(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task", TASK)
    server = start_server(
        tmp_path, ["--task", str(task), "--difficulty", "3"], env=clean_env(tmp_path)
    )
    flag = task / "src" / "fail"
    figures: list[tuple[int, int, int]] = []

    async def soak() -> None:
        for n in range(1, CALLS + 1):
            failing = n % 2 == 0
            if failing:
                flag.touch()
            else:
                flag.unlink(missing_ok=True)
            text = await call_async(server.url)
            if failing:
                check_token_report(text, LINES)
            else:
                assert text == PASSED_AT_3, f"call {n}: {text[:300]}"
            if n in (WARM_UP, CALLS):
                look = functools.partial(settled, server.pid, server.env["TMPDIR"], figures, [])
                fds = await wait_for_async(look, 10, "fds settled")
                figures.append((n, proc_status(server.pid)["VmRSS"], fds))

    try:
        started = time.monotonic()
        asyncio.run(soak())
        seconds = time.monotonic() - started
        assert_none_left(task)
    finally:
        server.stop()
        kill_all(task)
    (first_n, first_rss, first_fds), (last_n, last_rss, last_fds) = figures
    saved = len(list(Path(server.env["MCP_LOG_DIR"]).iterdir()))
    print(
        f"\nsoak: {CALLS} calls in {seconds:.1f} s ({seconds / CALLS * 1000:.0f} ms each); "
        f"after call {first_n}: RSS {first_rss / 1024:.1f} MB, {first_fds} fds; "
        f"after call {last_n}: RSS {last_rss / 1024:.1f} MB, {last_fds} fds; "
        f"{saved} saved logs kept"
    )
    assert saved == KEEP_LOGS  # CALLS // 2 were saved; the folder keeps the newest

    assert abs(last_fds - first_fds) <= FD_SLACK
    assert last_rss - first_rss < RSS_GROWTH_KB
