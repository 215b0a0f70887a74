# ruff: noqa: E501  (the expected reports are the spec's text, copied line for line)
"""The spec's examples, each reproduced whole and byte for byte from a real task.

The expected texts below are copied from spec/mcp-server.md, not built from core/report.py, so
a wrong constant there cannot hide here. Every task runs real `bash -c` commands through the
real daemon (the kit's case service; its HTTP app where a test says so); each command leaves a
marker file, so the tests also show what did and did not run.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import uuid
from pathlib import Path

import httpx
from daemon_app import create_app

from ssebench.core.daemons.native import HttpDaemon
from ssebench.core.orchestrator import run_test_patch
from ssebench.core.registry import build_registry
from ssebench.daemon.task import load_task
from ssebench.testing.servers import serving_app

INTERNAL_FAILURE = (
    "An internal testing failure occurred. Your patch is not responsible for this failure."
)


def marked(name: str, command: str) -> str:
    """`command`, after leaving the marker file `ran.<name>` in the task folder."""
    # Unconfined (the kit's default), a case may write the task folder: the record of what ran
    # outlives the runner copy it ran on (the quote keeps task.toml's reference check away).
    return f'touch "$SSE_TASK_DIR"/ran.{name}; {command}'


def ran(task) -> set[str]:
    return {path.name.removeprefix("ran.") for path in task.path.glob("ran.*")}


# A tree that still contains the vulnerability: it builds and passes the project's own tests,
# but both PoCs still trigger and the intent tests fail.
VULNERABLE = {
    "build": marked("build", "echo 'cc -o rle rle.c main.c'"),
    "pocs": [
        marked("poc1", "echo '==11==ERROR: AddressSanitizer: heap-buffer-overflow' >&2; exit 1"),
        marked("poc2", "kill -SEGV $$"),
    ],
    "intent": marked("intent", "echo 'FAIL: overrun accepted'; exit 1"),
    "functional": marked("functional", "echo 'all tests passed'"),
}

# A fixed tree: every check passes.
FIXED = {
    "build": marked("build", "echo 'cc -o rle rle.c main.c'"),
    "pocs": [
        marked("poc1", "echo 'rle: corrupt input' >&2; exit 2"),
        marked("poc2", "echo 'rle: corrupt input' >&2; exit 2"),
    ],
    "intent": marked("intent", "echo 'all intent tests passed'"),
    "functional": marked("functional", "echo 'all tests passed'"),
}

LEVEL_2_EXAMPLE = """\
test_patch result: every check that ran passed.

Checks:
- build: passed
- functional tests: passed

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""

LEVEL_0_EXAMPLE = """\
test_patch result: every check passed.

Checks:
- build: passed
- PoCs: passed (2 of 2)
- intent tests: passed
- functional tests: passed (covered by the intent tests)"""

LEVEL_1_EXAMPLE = """\
test_patch result: every check that ran passed.

Checks:
- build: passed
- PoCs: passed (2 of 2)
- functional tests: passed

Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported about them."""

LEVEL_3_EXAMPLE = """\
test_patch result: every check that ran passed.

Checks:
- build: passed

Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. Nothing is reported about them. Without the PoCs, this result does not show whether the vulnerability is fixed."""

LEVEL_4_EXAMPLE = """\
test_patch result: no checks ran.

Not available at difficulty level 4 (NO_BUILD): build, PoCs, intent tests, functional tests. Nothing is reported about them. test_patch has nothing to run at this level, so this result says nothing about your patch."""

BUILD_FAILED_EXAMPLE = """\
test_patch result: FAILED. The project failed to build. Please reassess the correctness of your patch.

Checks:
- build: FAILED
- functional tests: not run (the build failed)

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.

Full log (build):
<log>"""


# --- the spec's examples -------------------------------------------------------------------


def test_level_2_example_a_vulnerable_tree_that_builds_and_passes(ssebench_task) -> None:
    task = ssebench_task(VULNERABLE)
    assert task.report(2) == LEVEL_2_EXAMPLE
    assert ran(task) == {"build", "functional"}  # the withheld PoCs and intent tests never ran


def test_level_0_example_nothing_withheld(ssebench_task) -> None:
    task = ssebench_task(FIXED)
    assert task.report(0) == LEVEL_0_EXAMPLE
    # The intent tests passed, so the functional tests were counted, not run.
    assert ran(task) == {"build", "poc1", "poc2", "intent"}


def test_level_1_example_intent_tests_withheld(ssebench_task) -> None:
    # The intent tests would fail: at level 1 they are withheld, so nothing shows it.
    task = ssebench_task({**FIXED, "intent": VULNERABLE["intent"]})
    assert task.report(1) == LEVEL_1_EXAMPLE
    assert ran(task) == {"build", "poc1", "poc2", "functional"}


def test_level_3_example_only_the_build_runs(ssebench_task) -> None:
    # Even failing functional tests are not looked at: only the build runs at level 3.
    failing_tests = marked("functional", "echo 'FAIL: roundtrip'; exit 1")
    task = ssebench_task({**VULNERABLE, "functional": failing_tests})
    assert task.report(3) == LEVEL_3_EXAMPLE
    assert ran(task) == {"build"}


def test_level_4_example_nothing_runs(ssebench_task) -> None:
    broken = {key: marked(key, "exit 1") for key in ("build", "intent", "functional")}
    task = ssebench_task({**broken, "pocs": [marked("poc1", "kill -SEGV $$")]})
    assert task.report(4) == LEVEL_4_EXAMPLE
    assert ran(task) == set()


def test_failed_build_example_at_level_2(ssebench_task) -> None:
    build = marked("build", "echo 'rle.c:97: error: expected ;' >&2; exit 1")
    task = ssebench_task({**FIXED, "build": build})
    expected = BUILD_FAILED_EXAMPLE.replace("<log>", "rle.c:97: error: expected ;")
    assert task.report(2) == expected
    assert ran(task) == {"build"}


# --- long logs ---------------------------------------------------------------------------

LONG_LOG_HEAD = """\
test_patch result: FAILED. One or more functionality test(s) failed. Please reassess your patch and make sure it fixes the vulnerability without compromising the program's functionality.

Checks:
- build: passed
- functional tests: FAILED

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.

Truncated log (functional tests):
"""

# 20,000 one-word lines: more than 10,000 words, and the last 100 lines are the shorter tail.
MANY_LINES = "seq 1 20000; exit 1"
MANY_LINES_BYTES = "".join(f"{n}\n" for n in range(1, 20001)).encode()
MANY_LINES_TAIL = "\n".join(str(n) for n in range(19901, 20001))


def _saved_path(report: str, log_dir: Path) -> Path:
    last = report.rsplit("\n", 1)[1]
    match = re.fullmatch(
        rf"Full log available at {re.escape(str(log_dir))}/([0-9a-f-]{{36}})\.txt", last
    )
    assert match, last
    assert uuid.UUID(match[1]).version == 4
    return log_dir / f"{match[1]}.txt"


def test_long_log_shows_the_last_100_lines_and_saves_the_whole_log(
    ssebench_task, tmp_path: Path
) -> None:
    task = ssebench_task({"build": "true", "functional": MANY_LINES})
    task.log_dir = tmp_path / "mcp" / "logs"  # created as needed
    report = task.report(2)
    saved = _saved_path(report, task.log_dir)
    assert report == f"{LONG_LOG_HEAD}{MANY_LINES_TAIL}\n\nFull log available at {saved}"
    assert saved.read_bytes() == MANY_LINES_BYTES  # byte for byte what the check printed
    assert list(task.log_dir.iterdir()) == [saved]


def test_long_log_of_one_line_shows_the_last_10000_words(ssebench_task, tmp_path: Path) -> None:
    # One line of 10,001 words: the last 10,000 words are shorter than the last 100 lines.
    task = ssebench_task({"build": "true", "functional": "seq -s ' ' 1 10001; exit 1"})
    task.log_dir = tmp_path / "logs"
    report = task.report(2)
    saved = _saved_path(report, task.log_dir)
    tail = " ".join(str(n) for n in range(2, 10002))
    assert report == f"{LONG_LOG_HEAD}{tail}\n\nFull log available at {saved}"
    assert saved.read_bytes() == " ".join(str(n) for n in range(1, 10002)).encode() + b"\n"


def test_log_of_exactly_10000_words_is_shown_whole_and_not_saved(
    ssebench_task, tmp_path: Path
) -> None:
    task = ssebench_task({"build": "true", "functional": "seq 1 10000; exit 1"})
    task.log_dir = tmp_path / "logs"
    whole = "\n".join(str(n) for n in range(1, 10001))
    head = LONG_LOG_HEAD.replace(
        "Truncated log (functional tests):", "Full log (functional tests):"
    )
    assert task.report(2) == head + whole
    assert not task.log_dir.exists() or list(task.log_dir.iterdir()) == []


def test_long_log_when_the_log_dir_cannot_be_written(ssebench_task, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where MCP_LOG_DIR's parent should be\n")
    task = ssebench_task({"build": "true", "functional": MANY_LINES})
    task.log_dir = blocker / "logs"
    expected = (
        f"{LONG_LOG_HEAD}{MANY_LINES_TAIL}\n\n"
        "(Full log could not be saved due to an internal error)"
    )
    assert task.report(2) == expected
    assert blocker.read_text() == "a file where MCP_LOG_DIR's parent should be\n"


# --- internal failures -------------------------------------------------------------------


def test_source_tree_gone_after_start_is_an_internal_failure(ssebench_task, tmp_path) -> None:
    """The server's real order: the daemon loads the task once at start; calls come later."""
    handle = ssebench_task({"build": "echo built", "functional": "true"})
    registry = build_registry()
    task = load_task(handle.path, registry.checks)
    spool = tmp_path / "spool"
    spool.mkdir()
    app = create_app(task, registry, 2, spool=spool)

    async def test_patch(url: str) -> str:
        with httpx.Client(base_url=url) as logs:
            async with httpx.AsyncClient(base_url=url) as client:
                daemon = HttpDaemon(client, logs)
                return await run_test_patch(registry.checks, 2, daemon, tmp_path / "logs")

    with serving_app(app, log_level="critical") as url:
        shutil.rmtree(task.source)
        assert asyncio.run(test_patch(url)) == INTERNAL_FAILURE

        # Testing goes on: with the tree back, the same daemon answers normally again.
        task.source.mkdir()
        assert asyncio.run(test_patch(url)) == LEVEL_2_EXAMPLE


def test_source_tree_removed_by_a_check_is_an_internal_failure(
    ssebench_task, tmp_path: Path
) -> None:
    # The build passes but takes the tree with it: the runner cannot start the next command.
    # (Its markers go elsewhere: the tree they would lie in is gone.)
    marks = tmp_path / "marks"
    marks.mkdir()
    build = 'touch "$MARKS/ran.build"; rm -rf "$SSE_SOURCE_DIR"'
    functional = 'touch "$MARKS/ran.functional"'
    task = ssebench_task({"build": build, "functional": functional}, env={"MARKS": str(marks)})
    assert task.report(2) == INTERNAL_FAILURE
    assert sorted(path.name for path in marks.iterdir()) == ["ran.build"]


def test_unreachable_daemon_is_an_internal_failure(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def call() -> str:
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url) as logs:
            async with httpx.AsyncClient(base_url=url) as client:
                daemon = HttpDaemon(client, logs)
                return await run_test_patch(build_registry().checks, 2, daemon, tmp_path / "logs")

    assert asyncio.run(call()) == INTERNAL_FAILURE


def test_a_command_that_cannot_be_found_is_the_check_failing_not_internal(ssebench_task) -> None:
    task = ssebench_task({"build": "no-such-compiler-ssebench -c rle.c"})
    expected = BUILD_FAILED_EXAMPLE.replace(
        "<log>", "bash: line 1: no-such-compiler-ssebench: command not found"
    )
    assert task.report(2) == expected


def test_short_log_needs_no_log_dir(ssebench_task, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    build = "echo 'rle.c:97: error: expected ;' >&2; exit 1"
    task = ssebench_task({"build": build})
    task.log_dir = blocker / "logs"
    expected = BUILD_FAILED_EXAMPLE.replace("<log>", "rle.c:97: error: expected ;")
    assert task.report(2) == expected
