"""The runner, with real subprocesses: exit statuses, signals, time limits, process groups, logs.

"Gone" for a process group means no live member is left within 2 s. A killed member whose parent
died becomes a zombie until the machine's init reaps it; that latency is the init's (here up to
~2 s), so `os.killpg(pgid, 0)` raising ProcessLookupError is awaited a little longer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

from ssebench.core.case import CaseRun
from ssebench.daemon.confine.choice import UNCONFINED
from ssebench.daemon.confine.policy import Policy
from ssebench.daemon.confine.runner import GRACE_SECONDS, Runner, RunnerError
from ssebench.daemon.confine.user import own_user
from ssebench.testing import procs
from ssebench.testing.procs import alive, live_members
from ssebench.testing.waiting import wait_for, wait_for_async

LIVE_DEADLINE = 2.0
REAP_DEADLINE = 4.0


async def run_command(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    log_path: Path,
    grace: float = GRACE_SECONDS,
) -> CaseRun:
    """One case through a runner (and its supervisor) of its own, unconfined."""
    runner = Runner(UNCONFINED, own_user(), grace=grace)
    try:
        return await runner.run(
            command, Policy(), cwd=cwd, env=env, timeout=timeout, log_path=log_path,
            case_dir=log_path.parent,
        )  # fmt: skip
    finally:
        runner.close()


def _run(
    command: str, where: Path, *, timeout: float = 10.0, grace: float = 1.0, env=None
) -> CaseRun:
    return asyncio.run(
        run_command(
            command,
            cwd=where,
            env=dict(os.environ) if env is None else env,
            timeout=timeout,
            log_path=where / "case.log",
            grace=grace,
        )
    )


def _outcome(finished: CaseRun) -> CaseRun:
    """The result without its duration and count of killed processes, so whole results
    compare (how many a stop found still running is the machine's timing, unless every one
    of them ignored SIGTERM: those tests count them)."""
    return dataclasses.replace(finished, seconds=0.0, killed=0)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_group_gone(
    pgid: int, started: float | None = None, *, reaped: bool = False
) -> tuple[float, float | None]:
    """Seconds until no live member is left and, when `reaped`, until the group no longer exists.

    Waiting for the reaping costs up to ~2 s of the init's time, so only some tests do.
    """
    started = time.monotonic() if started is None else started
    live_gone = procs.wait_group_gone(pgid, started, LIVE_DEADLINE)
    if not reaped:
        return live_gone, None
    wait_for(
        lambda: not _group_exists(pgid),
        started + REAP_DEADLINE - time.monotonic(),
        lambda: f"group {pgid} gone within {REAP_DEADLINE:g} s (live: {live_members(pgid)})",
        0.02,
    )
    return live_gone, time.monotonic() - started


def _read_ints(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()]


@pytest.fixture(autouse=True)
def _kill_leftovers(tmp_path: Path):
    """Whatever a failing test leaves behind is killed, so one failure does not leak sleeps."""
    yield
    pgid_file = tmp_path / "pgid"
    if pgid_file.exists() and pgid_file.read_text().strip():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_read_ints(pgid_file)[0], 9)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("true", CaseRun(exit_code=0, signal=None, timed_out=False, seconds=0.0)),
        ("false", CaseRun(exit_code=1, signal=None, timed_out=False, seconds=0.0)),
        ("exit 3", CaseRun(exit_code=3, signal=None, timed_out=False, seconds=0.0)),
        ("exit 255", CaseRun(exit_code=255, signal=None, timed_out=False, seconds=0.0)),
        ("no-such-command-xyz", CaseRun(exit_code=127, signal=None, timed_out=False, seconds=0.0)),
    ],
)
def test_exit_status(tmp_path: Path, command: str, expected: CaseRun) -> None:
    assert _outcome(_run(command, tmp_path)) == expected


def test_seconds_measures_the_run(tmp_path: Path) -> None:
    finished = _run("sleep 0.3", tmp_path)
    assert 0.3 <= finished.seconds < 2.0


def test_death_by_signal_reports_the_signal(tmp_path: Path) -> None:
    finished = _run("echo before; kill -SEGV $$", tmp_path)
    assert _outcome(finished) == CaseRun(exit_code=None, signal=11, timed_out=False, seconds=0.0)
    assert (tmp_path / "case.log").read_bytes() == b"before\n"


def test_a_single_command_is_execed_so_its_signal_is_seen(tmp_path: Path) -> None:
    # bash -c execs a lone command (even through a nested bash -c): no shell is left to turn
    # the signal into 128+N.
    finished = _run("""bash -c 'sh -c "kill -SEGV \\$\\$"'""", tmp_path)
    assert _outcome(finished) == CaseRun(exit_code=None, signal=11, timed_out=False, seconds=0.0)


def test_a_shell_reporting_a_child_signal_as_128_plus_n_reads_as_the_signal(
    tmp_path: Path,
) -> None:
    # Under bubblewrap, whose own status for a case killed by signal N is 128+N, the two cannot
    # be told apart: so they read the same under every mechanism (daemon/confine/running.py).
    finished = _run("sh -c 'kill -SEGV $$'; exit $?", tmp_path)
    assert _outcome(finished) == CaseRun(exit_code=None, signal=11, timed_out=False, seconds=0.0)
    finished = _run("exit 200", tmp_path)  # no signal 72: an exit status
    assert _outcome(finished) == CaseRun(exit_code=200, signal=None, timed_out=False, seconds=0.0)


def test_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    command = (
        "ps -o pgid= -p $$ > pgid; "
        "sleep 100 & echo $! >> children; sleep 100 & echo $! >> children; wait"
    )
    started = time.monotonic()
    finished = _run(command, tmp_path, timeout=1.0, grace=1.0)
    returned = time.monotonic() - started
    assert _outcome(finished) == CaseRun(exit_code=None, signal=15, timed_out=True, seconds=0.0)
    assert 1.0 <= finished.seconds < 2.0
    assert returned < 2.5
    [pgid] = _read_ints(tmp_path / "pgid")
    children = _read_ints(tmp_path / "children")
    assert len(children) == 2
    live, gone = wait_group_gone(pgid, reaped=True)
    print(f"timeout: group live-free after {live:.3f}s, reaped after {gone:.3f}s")
    assert [pid for pid in children if alive(pid)] == []


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    command = "trap '' TERM; ps -o pgid= -p $$ > pgid; sleep 100 & echo $! > children; sleep 100"
    started = time.monotonic()
    finished = _run(command, tmp_path, timeout=1.0, grace=0.5)
    returned = time.monotonic() - started
    # Both sleeps (the shell execs the last) ignored the SIGTERM: killed after the grace.
    assert _outcome(finished) == CaseRun(exit_code=None, signal=9, timed_out=True, seconds=0.0)
    assert finished.killed == 2
    assert 1.4 <= returned < 3.0
    [pgid] = _read_ints(tmp_path / "pgid")
    live, _ = wait_group_gone(pgid)
    print(f"SIGTERM ignored: returned after {returned:.3f}s, live-free {live:.3f}s later")
    assert not alive(_read_ints(tmp_path / "children")[0])


def test_a_shell_that_dies_on_sigterm_does_not_spare_a_child_that_ignores_it(
    tmp_path: Path,
) -> None:
    command = "ps -o pgid= -p $$ > pgid; (trap '' TERM; sleep 100) & echo $! > children; wait"
    started = time.monotonic()
    finished = _run(command, tmp_path, timeout=1.0, grace=0.5)
    returned = time.monotonic() - started
    assert _outcome(finished) == CaseRun(exit_code=None, signal=15, timed_out=True, seconds=0.0)
    assert finished.killed >= 1  # the child ignoring SIGTERM (and its subshell, if it forked)
    assert returned < 2.5
    [pgid] = _read_ints(tmp_path / "pgid")
    wait_group_gone(pgid)


@pytest.mark.parametrize(
    "command",
    [
        "ps -o pgid= -p $$ > pgid; sleep 30 & echo $! > children; echo done",
        "ps -o pgid= -p $$ > pgid; (sleep 30 & echo $! > children); echo done",
    ],
    ids=["background", "subshell"],
)
def test_a_background_child_holding_stdout_does_not_hang_the_run(
    tmp_path: Path, command: str
) -> None:
    started = time.monotonic()
    finished = _run(command, tmp_path, timeout=20.0)
    returned = time.monotonic() - started
    assert _outcome(finished) == CaseRun(exit_code=0, signal=None, timed_out=False, seconds=0.0)
    assert finished.killed >= 1  # the sleep (and a subshell not yet gone, on a loaded machine)
    assert returned < 3.0
    assert (tmp_path / "case.log").read_bytes() == b"done\n"
    [pgid] = _read_ints(tmp_path / "pgid")
    wait_group_gone(pgid)
    assert not alive(_read_ints(tmp_path / "children")[0])


ESCAPES = {
    # setsid in the background: a new session and group, same process.
    "setsid": "setsid sleep 30 & echo $! > children",
    # A daemon's double fork: the middle process exits, the grandchild is orphaned.
    "double-fork": "( setsid bash -c 'echo $$ > children; exec sleep 30' & )",
}


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_processes_that_left_the_group_are_killed_at_the_end(tmp_path: Path, escape: str) -> None:
    bystander = subprocess.Popen(["sleep", "30"])  # not the case's: must survive
    try:
        wait = "until [ -s children ]; do sleep 0.01; done"
        escaped = '[ "$(ps -o pgid= -p "$(cat children)")" != "$(ps -o pgid= -p $$)" ]'
        finished = _run(f"{ESCAPES[escape]}; {wait}; {escaped} && echo escaped", tmp_path)
        assert finished.exit_code == 0
        assert (tmp_path / "case.log").read_text() == "escaped\n"
        [pid] = _read_ints(tmp_path / "children")
        wait_for(lambda: not alive(pid), LIVE_DEADLINE, f"escaped process {pid} gone", 0.02)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_an_escaped_process_is_killed_when_the_run_times_out(tmp_path: Path) -> None:
    finished = _run(f"{ESCAPES['double-fork']}; sleep 30", tmp_path, timeout=0.5)
    assert finished.timed_out
    [pid] = _read_ints(tmp_path / "children")
    wait_for(lambda: not alive(pid), LIVE_DEADLINE, f"escaped process {pid} gone", 0.02)


def test_stdout_and_stderr_are_interleaved_in_write_order(tmp_path: Path) -> None:
    _run("echo a; echo b >&2; echo c", tmp_path)
    assert (tmp_path / "case.log").read_bytes() == b"a\nb\nc\n"


def test_many_alternating_writes_keep_their_order(tmp_path: Path) -> None:
    _run("for i in $(seq 1 300); do echo out$i; echo err$i >&2; done", tmp_path)
    expected = "".join(f"out{i}\nerr{i}\n" for i in range(1, 301)).encode()
    assert (tmp_path / "case.log").read_bytes() == expected


def test_binary_output_is_saved_byte_exact(tmp_path: Path) -> None:
    _run(r"printf 'a\000b\377\376\300\n\000'; printf '\351t\303' >&2", tmp_path)
    assert (tmp_path / "case.log").read_bytes() == b"a\x00b\xff\xfe\xc0\n\x00\xe9t\xc3"


def test_a_large_random_output_is_saved_byte_exact(tmp_path: Path) -> None:
    blob = os.urandom(3 << 20)
    (tmp_path / "blob").write_bytes(blob)
    _run("cat blob", tmp_path)
    assert (tmp_path / "case.log").read_bytes() == blob


def test_stdin_is_empty(tmp_path: Path) -> None:
    finished = _run("cat; echo end", tmp_path, timeout=5.0)
    assert _outcome(finished) == CaseRun(exit_code=0, signal=None, timed_out=False, seconds=0.0)
    assert (tmp_path / "case.log").read_bytes() == b"end\n"


def test_the_log_is_replaced_not_appended(tmp_path: Path) -> None:
    (tmp_path / "case.log").write_bytes(b"old contents\n")
    _run("echo new", tmp_path)
    assert (tmp_path / "case.log").read_bytes() == b"new\n"


async def _cancel_when_started(tmp_path: Path, command: str, grace: float) -> float:
    run = asyncio.create_task(
        run_command(
            command,
            cwd=tmp_path,
            env=dict(os.environ),
            timeout=60.0,
            log_path=tmp_path / "case.log",
            grace=grace,
        )
    )
    pgid_file = tmp_path / "pgid"
    children = tmp_path / "children"
    await wait_for_async(lambda: pgid_file.exists() and children.exists(), 5, "the start", 0.02)
    await asyncio.sleep(0.1)
    started = time.monotonic()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    return started


def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    command = "ps -o pgid= -p $$ > pgid; sleep 100 & echo $! > children; sleep 100"
    started = asyncio.run(_cancel_when_started(tmp_path, command, grace=1.0))
    [pgid] = _read_ints(tmp_path / "pgid")
    live, gone = wait_group_gone(pgid, started, reaped=True)
    print(f"cancel: group live-free after {live:.3f}s, reaped after {gone:.3f}s")
    assert not alive(_read_ints(tmp_path / "children")[0])


def test_cancellation_kills_a_group_ignoring_sigterm_even_as_the_loop_closes(
    tmp_path: Path,
) -> None:
    # asyncio.run closes its loop right after the cancelled task ends: a SIGKILL left to a
    # loop timer would never be sent.
    command = "trap '' TERM; ps -o pgid= -p $$ > pgid; sleep 100 & echo $! > children; sleep 100"
    started = asyncio.run(_cancel_when_started(tmp_path, command, grace=0.5))
    [pgid] = _read_ints(tmp_path / "pgid")
    live, _ = wait_group_gone(pgid, started)
    print(f"cancel, SIGTERM ignored: live-free after {live:.3f}s")
    assert not alive(_read_ints(tmp_path / "children")[0])


def test_a_missing_cwd_is_a_runner_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(RunnerError) as caught:
        asyncio.run(
            run_command(
                "true", cwd=missing, env=dict(os.environ), timeout=5, log_path=tmp_path / "log"
            )
        )
    assert str(caught.value) == (
        f"cannot start 'true' in {missing}: [Errno 2] No such file or directory: '{missing}'"
    )


def test_an_unwritable_log_is_a_runner_error(tmp_path: Path) -> None:
    log_path = tmp_path / "no-dir" / "case.log"
    with pytest.raises(RunnerError) as caught:
        asyncio.run(
            run_command("true", cwd=tmp_path, env=dict(os.environ), timeout=5, log_path=log_path)
        )
    assert str(caught.value) == (
        f"cannot open the log {log_path}: [Errno 2] No such file or directory: '{log_path}'"
    )


def test_the_environment_is_exactly_the_one_given(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "SSE_TASK_DIR": "/the/task",
        "SSE_SOURCE_DIR": str(tmp_path),
        "ODD": "a b\tc",
    }
    os.environ["SSEBENCH_TEST_LEAK"] = "leaked"
    try:
        _run(
            'echo "$SSE_TASK_DIR|$SSE_SOURCE_DIR|$ODD|${SSEBENCH_TEST_LEAK-unset}"; pwd',
            tmp_path,
            env=env,
        )
    finally:
        del os.environ["SSEBENCH_TEST_LEAK"]
    assert (tmp_path / "case.log").read_text() == (
        f"/the/task|{tmp_path}|a b\tc|unset\n{tmp_path}\n"
    )


def test_the_command_runs_in_its_own_process_group_and_session(tmp_path: Path) -> None:
    _run("ps -o pid=,pgid=,sid= -p $$", tmp_path)
    pid, pgid, sid = (int(word) for word in (tmp_path / "case.log").read_text().split())
    assert pid == pgid == sid
    assert pgid != os.getpgid(0)
