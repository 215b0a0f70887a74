"""The MCP edge: one tool, test_patch, that runs the orchestrator and returns its report text.

Calls are serialized by one lock, so two calls never run on the tree at once, while tools/list
and everything else is still answered. Each call's progress (core/server/progress.py) goes on
while it waits for the lock and while a case runs, so clients that give up on a quiet call do
not. A call is stopped when its client cancels it (notifications/cancelled, a client timeout,
closing the session), and also when the HTTP request carrying it goes away (a closed stream at
protocol 2026-07-28, a dropped POST stream from an older client, a client process that died).
Stopping cancels the run: the daemon (the case service in this process, or the request to a
daemon in another) stops the running case, and its supervisor ends every process the case
started; the lock is held until the run has unwound, so the next call starts on a quiet tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_http_request
from mcp.types import ToolAnnotations

from ssebench.core.check import Check, split_by_level
from ssebench.core.orchestrator import Daemon, run_test_patch
from ssebench.core.savedlogs import Owner
from ssebench.core.server.progress import CallProgress, Notify
from ssebench.core.settings import PROGRESS_INTERVAL

log = logging.getLogger("ssebench")

# Claude Code keeps a tool's result over 50,000 characters only as a file, and shows its model
# a 2 KB preview, unless the tool declares more in this key of its `_meta`. The largest report
# is the log's BYTE_LIMIT (64 KiB) and a few KiB of headline, checks, note and saved path.
MAX_RESULT_CHARS = 80_000
LEFT_POLL_SECONDS = 0.5
CLIENT_LEFT = "the client of a test_patch call went away; its run was stopped"
# on_call(text, started, seconds): a call's answer, when it came (a Unix time) and how long it took.
OnCall = Callable[[str, float, float], None]
UNWIND_SECONDS = 5.0
ANNOTATIONS = ToolAnnotations(
    title="Test the patch",
    # It saves long logs (MCP_LOG_DIR) and refreshes the daemon's copy of the tree, where the
    # build writes; the agent's tree it only reads (docs/clients.md says so, a test holds it).
    read_only_hint=False,
    # It never writes, deletes or reverts the agent's files; it removes only its own old logs.
    destructive_hint=False,
    # A second call on the same tree gives the same report and state: no further effect.
    idempotent_hint=True,
    # It works on this machine's tree through the task's daemon, nothing outside.
    open_world_hint=False,
)


def describe(checks: Iterable[Check], level: int, progress_interval: float) -> str:
    """The tool's description: what it checks at this level, and that a call takes long."""
    enabled = split_by_level(checks, level).enabled
    names = ", ".join(check.name for check in enabled) or "no checks at all"
    return (
        "Test the current state of the task's source tree, including every uncommitted change "
        f"you made. At this difficulty level ({level}) it runs: {names}. The result lists how "
        "each check ended and shows the log of the failed check. Takes no arguments. A call "
        "runs a full build and test cycle and can take a long time; allow a generous timeout. "
        "Progress is reported as each check starts and ends, and at least every "
        f"{progress_interval:g} s while a check runs or the call waits for another call."
    )


def build_server(
    checks: Iterable[Check],
    level: int,
    daemon: Daemon,
    log_dir: Path,
    *,
    progress_interval: float = PROGRESS_INTERVAL,
    log_owner: Owner | None = None,
    on_call: OnCall | None = None,
) -> FastMCP:
    """The FastMCP server with its one tool; the daemon may be any `Daemon` (tests pass fakes).
    Long logs are saved in `log_dir`, given to `log_owner` (the agent's user); each answer is
    handed to `on_call` (`ssebench run` records them: core/calls.py)."""
    checks = tuple(checks)
    mcp = FastMCP("ssebench", version=version("ssebench"))  # else serverInfo names fastmcp's
    lock = asyncio.Lock()

    @mcp.tool(
        name="test_patch",
        description=describe(checks, level, progress_interval),
        annotations=ANNOTATIONS,
        output_schema=None,  # text content only: a structured copy would change what clients show
        meta={"anthropic/maxResultSizeChars": MAX_RESULT_CHARS},
    )
    async def test_patch(ctx: Context) -> str:
        started, clock = time.time(), time.monotonic()
        progress = CallProgress(_notifier(ctx), progress_interval)
        async with progress.beating():
            async with progress.turn(lock):
                text = await _run_until_client_leaves(
                    run_test_patch(
                        checks, level, daemon, log_dir, progress=progress.step, log_owner=log_owner
                    )
                )
            await progress.finish()
        if on_call is not None:
            on_call(text, started, time.monotonic() - clock)
        return text

    return mcp


async def _run_until_client_leaves(job: Coroutine[Any, Any, str]) -> str:
    """The job's answer; if the HTTP request carrying the call goes away, or the call is
    cancelled, the job is stopped and has unwound before this returns or raises."""
    run = asyncio.create_task(job)
    left = asyncio.create_task(_client_left())
    try:
        await asyncio.wait({run, left}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        left.cancel()
        if not run.done():
            run.cancel()  # the daemon stops the case and every process it started
            with anyio.CancelScope(shield=True):
                # The caller holds the lock until the run has unwound, so runs never overlap.
                await asyncio.wait({run}, timeout=UNWIND_SECONDS)
    if not run.done():
        log.warning("%s, but it had not stopped %g s later", CLIENT_LEFT, UNWIND_SECONDS)
        return CLIENT_LEFT
    if run.cancelled():
        # A normal end, not a failure of testing: nobody is left to read the answer.
        log.info("%s", CLIENT_LEFT)
        return CLIENT_LEFT
    return run.result()


async def _client_left() -> None:
    """Return once the HTTP request carrying this call is gone; without HTTP, never.

    At protocol 2026-07-28 a closed stream already cancels the call. Before it, fastmcp keeps
    running a call whose client dropped the POST stream (an old client's only way to give up,
    or a client process that died). We keep no event store, so such a client can never resume
    and read the result: stopping the run is the only useful thing, and it frees the tree.
    """
    try:
        request = get_http_request()
        while not await request.is_disconnected():
            await asyncio.sleep(LEFT_POLL_SECONDS)
    except Exception:
        # No HTTP request (in-memory clients), or one we cannot watch: only a cancel stops it.
        await asyncio.Event().wait()


def _notifier(ctx: Context) -> Notify:
    async def notify(progress: float, total: float | None, message: str) -> None:
        with contextlib.suppress(Exception):  # a client that left must not fail the run
            await ctx.report_progress(progress, total, message)

    return notify
