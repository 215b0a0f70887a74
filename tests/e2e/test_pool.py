"""The pool of standbys (daemon/confine/pool.py) with real cases, under every mechanism here:
each case of a call runs in a standby made before it, while nothing ran; a case's end kills
all it started (what detached from it too) but not the standbys waiting for the next cases,
whose processes its limits do not count; unconfined, no standby waits while a case runs.
What a case can do to a waiting standby as an attacker: tests/e2e/security/test_standbys.py.
"""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest
from unit.test_daemon_app import REGISTRY, make_task

from e2e.test_confine import CONFINED, MECHANISMS, TOML, escapes, open_cases, standbys
from ssebench.core.case import CaseRun
from ssebench.core.daemons.door import ServiceConfig, choose_isolation
from ssebench.core.daemons.inprocess import local_daemon
from ssebench.core.orchestrator import run_checks
from ssebench.daemon.confine.mechanism import Folders
from ssebench.daemon.service import CaseService
from ssebench.daemon.task import Task
from ssebench.testing.procs import alive, commands
from ssebench.testing.waiting import wait_for_async

pytestmark = pytest.mark.timeout(180)
# What a case's shell holds open (listed by a child of its own) and its variables' names.
LOOK = 'ls /proc/$$/fd > "$TMPDIR/fds"; echo $(cat "$TMPDIR/fds"); env | cut -d= -f1 | sort | xargs'


def waiters(supervisor: int) -> str:
    """A command that prints how many standbys of `supervisor` this case sees waiting."""
    return (
        "n=0; for d in /proc/[0-9]*; do "
        f'[ "$(cut -d" " -f4 "$d/stat" 2>/dev/null)" = {supervisor} ] && '
        "grep -q 'ssebench-cas[e]' \"$d/cmdline\" 2>/dev/null && n=$((n+1)); done; "
        'echo "waiting: $n"'
    )


async def run(cases: CaseService, command: str, check: str, log: Path, timeout: float = 20) -> str:
    """The case's end and log, as one text."""
    end = await cases.run_command(check, command, timeout=timeout, log_path=log)
    return f"{ended(end)} {log.read_text()}"


def ended(end: CaseRun) -> str:
    return "timed out" if end.timed_out else f"exit {end.exit_code} signal {end.signal}"


async def ready(cases: CaseService, count: int) -> list[int]:
    """The standbys made, once there are `count` of them."""
    return await wait_for_async(
        lambda: found if len(found := standbys(cases)) == count else [], 20, f"{count} standbys"
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_case_of_a_call_runs_in_a_standby_and_its_end_spares_the_others(
    tmp_path: Path, mechanism: str
) -> None:
    cases = open_cases(tmp_path, mechanism)
    log = tmp_path / "case.log"
    size = 1 if mechanism == "none" else 3
    tag = str(random.randrange(10**7, 10**8))  # its own processes, whatever else runs here
    ways_out = escapes(tag)

    async def scenario() -> tuple[list[str], list[int], list[int], list[int]]:
        cold = await run(cases, LOOK, "pocs", log)  # no standby: the supervisor starts
        supervisor = cases.place.runner._proc
        assert supervisor is not None
        await cases.prepare(["build", "pocs", "pocs"])
        made = await ready(cases, size)
        first = await run(cases, f"{ways_out}; {waiters(supervisor.pid)}", "build", log)
        after = [pid for pid in made if alive(pid)]
        rest = [await run(cases, LOOK, "pocs", log) for _ in range(2)]
        return [cold, first, *rest], made, after, standbys(cases)

    try:
        (cold, *seen), made, after, left = asyncio.run(scenario())
    finally:
        cases.close()
    # The case saw the standbys waiting only where /proc shows processes of other domains.
    waiting = {"none": 0, "bubblewrap": 0, "landlock": 2}[mechanism]
    assert cold.startswith("exit 0 signal None 0 1 2\n")  # its own descriptors alone
    assert seen == [f"exit 0 signal None started\nwaiting: {waiting}\n", cold, cold]
    pattern = re.compile(rf"sleep 31[0-3][.]{tag}|renamed-{tag}")
    assert list(commands(pattern).values()) == []
    assert after == made[1:]  # the first served the case; the others waited on, untouched
    assert left == []  # each case took its own: none waits now, none was asked for


@pytest.mark.parametrize("mechanism", CONFINED)
def test_a_cases_limits_count_its_own_processes_not_the_waiting_standbys(
    tmp_path: Path, mechanism: str
) -> None:
    """A case with as many processes as its limit runs (the standbys' would put it over), one
    with one more is stopped (the limit is tight: it is what is measured)."""
    own = {"bubblewrap": 5, "landlock": 3}[mechanism]  # bash, 2 sleeps (and bubblewrap's 2)
    cases = open_cases(tmp_path, mechanism, f"limits = {{ processes = {own} }}\n" + TOML)
    log = tmp_path / "case.log"
    two, three = "sleep 1 & sleep 1 & wait; echo done", "sleep 1 & sleep 1 & sleep 1 & wait"

    async def scenario() -> list[str]:
        await run(cases, "true", "build", log)
        await cases.prepare(["build", "pocs", "pocs", "pocs", "pocs"])
        await ready(cases, 5)
        within = await run(cases, two, "build", log)
        await ready(cases, 4)
        return [within, await run(cases, three, "pocs", log)]

    try:
        within, over = asyncio.run(scenario())
    finally:
        cases.close()
    assert within == "exit 0 signal None done\n"
    assert over.endswith(f"went over its limit of {own} processes and was stopped]\n")


@pytest.mark.parametrize("mechanism", CONFINED)
def test_a_case_stopped_at_its_timeout_leaves_the_standbys_waiting(
    tmp_path: Path, mechanism: str
) -> None:
    cases = open_cases(tmp_path, mechanism)
    log = tmp_path / "case.log"

    async def scenario() -> tuple[str, list[int], list[int], str]:
        await run(cases, "true", "build", log)
        await cases.prepare(["build", "pocs"])
        made = await ready(cases, 2)
        stopped = await run(cases, "trap '' TERM; sleep 30", "build", log, timeout=1)
        after = [pid for pid in made if alive(pid)]
        return stopped, made, after, await run(cases, "echo next", "pocs", log)

    try:
        stopped, made, after, following = asyncio.run(scenario())
    finally:
        cases.close()
    assert stopped == "timed out "
    assert after == made[1:]
    assert following == "exit 0 signal None next\n"


def test_unconfined_no_standby_waits_while_a_case_runs_however_many_are_asked_for(
    tmp_path: Path,
) -> None:
    """Under --no-isolation a case could write into a waiting standby's pipe (pool.py): the
    supervisor makes one at most, whatever the daemon asks, and lets it go before a case that
    is not its own starts."""
    cases = open_cases(tmp_path, "none")
    log = tmp_path / "case.log"

    async def scenario() -> tuple[str, list[int]]:
        await run(cases, "true", "build", log)
        place = cases.place
        assert place.runner._proc is not None
        asked = []
        for i in range(3):
            folders = Folders(str(place.folders.root / f"asked-{i}"))
            folders.make(place.user)
            asked.append((place.policies["build"], Path(folders.root)))
        await place.runner.prepare(asked)  # past the daemon's own cap
        await ready(cases, 1)
        seen = await run(cases, waiters(place.runner._proc.pid), "build", log)
        return seen, await ready(cases, 1)  # the next asked for, made again after the case

    try:
        seen, after = asyncio.run(scenario())
    finally:
        cases.close()
    assert seen == "exit 0 signal None waiting: 0\n"
    assert len(after) == 1


CALL_TOML = """source = "src"
[checks.build]
run = "{build}"
[checks.pocs]
cases = ["echo $$", "echo $$"]
[checks.intent]
run = "echo $$"
"""


@pytest.mark.parametrize("mechanism", CONFINED)
def test_a_call_finds_a_standby_for_each_case_and_leaves_the_next_calls_made(
    tmp_path: Path, mechanism: str
) -> None:
    """The daemon's guess (daemon/service.py): after a call's last case, every case of the next
    call; within a call, the rest of it. A call stopped by a failed build is over once no case
    started for PAUSE: the next call's are made then, and its build runs in one."""
    registry = REGISTRY
    passing = make_task(tmp_path / "passing", CALL_TOML.format(build="echo $$"))
    failing = make_task(tmp_path / "failing", CALL_TOML.format(build="exit 1"))

    async def call(service: CaseService) -> list[str]:
        outcome = await run_checks(registry.checks, None, service)
        return [o.status.value for o in outcome.outcomes]

    async def scenario(task: Task) -> tuple[list[int], list[str], list[str], list[int]]:
        config = ServiceConfig(task, registry, None, choose_isolation(mechanism))
        async with local_daemon(config) as service:
            await call(service)
            made = await ready(service, 4)  # the next call's: build, 2 PoCs, intent
            statuses = await call(service)
            spool = service.place.spool
            pids = [
                spool.logs[spool.latest[key]].read_text().strip()
                for key in [("build", 0), ("pocs", 0), ("pocs", 1), ("intent", 0)]
                if key in spool.latest
            ]
            return made, statuses, pids, await ready(service, 4)

    made, statuses, pids, after = asyncio.run(scenario(passing))
    assert statuses[:3] == ["passed", "passed", "passed"]
    if mechanism == "landlock":  # the case's shell is its standby's, execed: the same pid
        assert sorted(pids) == sorted(str(pid) for pid in made)
    assert not set(made) & set(after)  # each served its case; the next call's are new

    async def stopped_early(task: Task) -> tuple[list[int], list[int]]:
        config = ServiceConfig(task, registry, None, choose_isolation(mechanism))
        async with local_daemon(config) as service:
            await call(service)  # the build fails: the rest is not run
            whole = await ready(service, 4)  # after PAUSE, a build's beside the rest's
            await call(service)
            return whole, await ready(service, 4)

    whole, after = asyncio.run(stopped_early(failing))
    assert len(set(whole) - set(after)) == 1  # the build ran in one, the rest's waited on


@pytest.mark.parametrize("mechanism", CONFINED)
def test_the_pool_prepares_exactly_the_plan_a_call_begins_with(
    tmp_path: Path, mechanism: str
) -> None:
    """The orchestrator hands the daemon its plan (daemon/service.py's `begin_call`): the
    sandboxes asked for are its checks' cases in its order, not the level's, and nothing of a
    check it leaves out; the next plan replaces them."""
    for folder in ("pocs", "intent"):  # each check's files of its own: a policy of its own
        (tmp_path / folder).mkdir()
    toml = CALL_TOML.format(build="true").replace(
        "[checks.pocs]", '[checks.pocs]\nfiles = ["pocs"]'
    )
    task = make_task(
        tmp_path, toml.replace("[checks.intent]", '[checks.intent]\nfiles = ["intent"]')
    )
    config = ServiceConfig(task, REGISTRY, None, choose_isolation(mechanism))

    async def scenario() -> list[list[str]]:
        asked = []
        async with local_daemon(config) as service:
            policies = service.place.policies
            checks = {policies[key]: key for key in ("build", "pocs", "intent")}
            assert len(checks) == 3
            for plan in (["pocs", "build"], ["intent"], ["build", "pocs", "intent"]):
                await service.begin_call(plan)
                await ready(service, len(service.plan))
                wanted = service.place.runner._coming  # what the supervisor was last told
                asked.append([checks[want.policy] for want in wanted])
        return asked

    assert asyncio.run(scenario()) == [
        ["pocs", "pocs", "build"],
        ["intent"],
        ["build", "pocs", "pocs", "intent"],
    ]
