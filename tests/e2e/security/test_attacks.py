"""The agent's code as an attacker: what its build tries must find nothing the level withholds.

For levels 1, 2 and 3, every isolation mechanism this machine has, and a tree owned by root or
by the agent (uid 1000, the task folder locked to root: layout.py), a real `ssebench serve`
runs a task whose build is tests/e2e/security/attack.py: it reads the task folder (by
$SSE_TASK_DIR and by its real path), task.toml, the withheld checks' files where they really
lie (the PoCs given by an absolute path under /opt, the intent tests through a symbolic link
there), copies of the dataset (one anyone reads, one root-only), /etc/shadow, every process's
cmdline, environ and memory, the spool and the saved logs, its own environment (the
evaluator's credentials are in the daemon's); overwrites the task's files and changes their
modes, times and attributes, plants a setuid program, stats the withheld files; leaves
processes behind every way it knows; signals and traces the server; knocks on the daemon's and
the server's ports (TCP, MPTCP, TCP fast open), on services of the daemon's user outside the
case (a tmux-like pathname Unix socket, a 0777 one under /opt, an abstract one, UDP,
docker.sock, vsock); and leaves state for a later case (beside its TMPDIR and HOME, a SysV
queue, a kernel key). Unique markers lie in every withheld file, command and credential;
afterwards none may be in anything the agent can read (the report, the saved logs, the tree)
nor in the runner copy the build ran on, no metadata route may have worked, the task's files
must be as they were (content, modes, owners, attributes), no service heard anything, no state
was left, no process of the case may be left, and the server must answer the next call. The
same attack with --no-isolation finds the markers and reaches the services, which shows the
searches can fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import fastmcp
import pytest

from e2e.security.layout import (
    AGENT_UID,
    ROOT,
    Layout,
    Markers,
    agent_visible,
    make_layout,
    task_state,
)
from e2e.security.services import Services, keys_described, sysv_queues
from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user
from ssebench.testing.procs import commands, process
from ssebench.testing.servers import Server, clean_env, start_server

pytestmark = [pytest.mark.security, pytest.mark.timeout(300)]

HERE = Path(__file__).parent
LEFTOVERS = re.compile(r"sleep 30[234]|innocent-name|kill-the-poc")


def mechanisms() -> list[str]:
    """The mechanisms that work here (in a default Docker container: Landlock only)."""
    return available(case_user())


def leftovers() -> list[str]:
    """Processes the attack left running, by what they were started as."""
    return [f"{pid}: {cmdline}" for pid, cmdline in commands(LEFTOVERS).items()]


def kill_leftovers() -> None:
    for line in leftovers():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":", 1)[0]), 9)


def call(server: Server) -> str:
    async def once() -> str:
        async with fastmcp.Client(server.url) as client:
            result = await client.call_tool_mcp("test_patch", {}, timeout=240)
            return str(result.content[0].text)

    return asyncio.run(once())


def attack(
    tmp: Path,
    level: int,
    isolation: list[str],
    services: Services,
    *,
    owner: str = "root",
    spare_server: bool = False,
) -> tuple[Layout, Server, str]:
    """Serve the attack task at `level`, call test_patch once; the server is left running.

    `spare_server` gives the attack no server to signal (unconfined, it would stop it)."""
    marks = Markers.new()
    layout = make_layout(tmp / "task", marks, owner)
    env = clean_env(tmp, AWS_SECRET_ACCESS_KEY=marks.credential, HF_TOKEN=marks.credential)
    task = layout.task
    server = start_server(
        tmp, ["--task", str(task), "--difficulty", str(level), *isolation], env=env
    )
    ports = f"{server.port} {server.daemon_port}"
    target = 0 if spare_server else server.proc.pid
    makefile = f"all:\n\tpython3 attack.py {task} {env['MCP_LOG_DIR']} {target} {ports}\n"
    targets = {**services.targets(), **layout.targets()}
    # As the agent would: its tree, its files (the daemon's copy carries them to the case).
    for name, text in (("Makefile", makefile), ("targets.json", json.dumps(targets))):
        (task / "src" / name).write_text(text)
        if owner == "agent":
            os.chown(task / "src" / name, AGENT_UID, AGENT_UID)
    return layout, server, call(server)


HEAD = (
    "test_patch result: FAILED. The project failed to build. Please reassess the correctness of "
    "your patch.\n\nChecks:\n- build: FAILED\n"
)
NOT_RUN = {
    1: "- PoCs: not run (the build failed)\n- functional tests: not run (the build failed)\n\n"
    "Not available at difficulty level 1 (NO_INTENT_TEST): intent tests. Nothing is reported "
    "about them.\n\n",
    2: "- functional tests: not run (the build failed)\n\nNot available at difficulty level 2 "
    "(NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them.\n\n",
    3: "\nNot available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
    "Nothing is reported about them.\n\n",
}


# What the case user's own permissions must refuse, Landlock or not: no route of these may
# give anything (a chmod of a PoC would rig the grade; a setuid file outlives the case).
REFUSED = ("chmod ", "utime ", "setxattr ", "setuid ", "stat ", "root-only file ")
OWNERS = ["root", "agent"] if ROOT else ["self"]


@pytest.mark.parametrize("owner", OWNERS)
@pytest.mark.parametrize("mechanism", mechanisms())
@pytest.mark.parametrize("level", [1, 2, 3])
def test_the_attack_finds_nothing_withheld(
    tmp_path: Path, level: int, mechanism: str, owner: str
) -> None:
    queues = sysv_queues()
    with Services(tmp_path) as services:
        layout, server, report = attack(
            tmp_path, level, ["--isolation", mechanism], services, owner=owner
        )
    try:
        before = task_state(layout)
        assert report.startswith(HEAD + NOT_RUN[level]), report[:800] + server.stderr()[-2000:]
        assert "routes that gave something:" in report  # the attack ran to its end
        copy = server.tree
        log_dir = Path(server.env["MCP_LOG_DIR"])
        seen = agent_visible(report, [log_dir, layout.task / "src", copy])
        leaks = [
            f"{what} in {where}"
            for what, marker in layout.marks.withheld(level).items()
            for where, text in seen.items()
            if marker in text
        ]
        assert leaks == []
        loot = json.loads((copy / "loot" / "found.json").read_text())
        assert [route for route in loot if route.startswith(REFUSED)] == []
        assert not (layout.task / "src" / "loot").exists()  # the build wrote its copy, not ours
        assert task_state(layout) == before and before  # nothing changed, not even a mode
        assert services.heard == []
        assert (sysv_queues() - queues, keys_described(layout.marks.state)) == (set(), [])
        assert leftovers() == []
        found = process(server.proc.pid)
        assert found is not None and found.state in (b"S", b"R")  # neither stopped nor killed
        assert call(server).startswith(HEAD + NOT_RUN[level])
        assert f"ssebench: isolation: {mechanism} (" in server.stderr()
    finally:
        server.stop()
        kill_leftovers()
        layout.remove()


@contextlib.contextmanager
def restored(path: Path) -> Iterator[None]:
    """`path`'s mode and extended attributes as they were, whatever happens meanwhile: the
    unconfined control, as root, does change the system file the attack aims at."""
    mode = path.stat().st_mode
    names = set(os.listxattr(path))
    try:
        yield
    finally:  # as another user than its owner nothing could change, nor be put back
        if path.stat().st_mode != mode:
            os.chmod(path, stat.S_IMODE(mode))
        for name in set(os.listxattr(path)) - names:
            os.removexattr(path, name)


def test_without_isolation_the_same_attack_finds_the_markers(tmp_path: Path) -> None:
    """The control: unconfined, the searches above do find what they look for."""
    queues = sysv_queues()
    with restored(Path("/usr/bin/ls")), Services(tmp_path) as services:
        layout, server, report = attack(
            tmp_path, 2, ["--no-isolation"], services, owner=OWNERS[0], spare_server=True
        )
    try:
        assert len(services.heard) == 4  # the pathname sockets, the abstract one, UDP
        assert len(sysv_queues() - queues) == 1
        copy = server.tree
        folders = [Path(server.env["MCP_LOG_DIR"]), layout.task / "src", copy]
        seen = "\n".join(agent_visible(report, folders).values())
        marks = layout.marks
        for marker in (marks.toml, marks.poc_file, marks.intent_file, marks.dataset):
            assert marker in seen
        loot = json.loads((copy / "loot" / "found.json").read_text())
        # Its own environment is an allow-list, even unconfined (the server's it reads, as root).
        assert marks.credential not in loot["environment"]
        if ROOT:  # the metadata routes are tried against a root daemon only (layout.py)
            assert any(route.startswith("chmod ") for route in loot)  # the daemon's user may
        assert (layout.pocs / "crash.bin").read_text() == "exit 0\n"  # overwritten
        assert "ssebench: warning: isolation is off (--no-isolation)" in server.stderr()
    finally:
        server.stop()
        kill_leftovers()
        for queue in sysv_queues() - queues:
            os.system(f"ipcrm -q {queue.split()[1]}")
        layout.remove()
        time.sleep(0.1)
