"""The agent's code as an attacker: what its build tries must find nothing the level withholds.

For levels 1, 2 and 3 and every isolation mechanism this machine has, a real `ssebench serve`
runs a task whose build is tests/e2e/security/attack.py: it reads the task folder (by
$SSE_TASK_DIR and by its real path), task.toml, the withheld checks' files where they really
lie (the PoCs given by an absolute path outside the task folder, the intent tests through a
symbolic link in it), another copy of the task (the dataset it came from), every process's
cmdline, environ and memory, the spool and the saved logs; overwrites the task's files;
leaves processes behind every way it knows; signals and traces the server; knocks on the
daemon's and the server's ports (TCP, MPTCP, TCP fast open), on services of the daemon's user
outside the case (a tmux-like pathname Unix socket, an abstract one, UDP, docker.sock, vsock);
and leaves state for a later case (beside its TMPDIR and HOME, a SysV queue, a kernel key).
Unique markers lie in every withheld file and command; afterwards none may be in anything the
agent can read (the report, the saved logs, the source tree), the task's files must be as they
were, no service heard anything, no state was left, no process of the case may be left, and
the server must answer the next call. The same attack with --no-isolation finds the markers
and reaches the services, which shows the searches can fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import fastmcp
import pytest

from e2e.security.services import Services, keys_described, sysv_queues
from ssebench.core.daemons.local import available
from ssebench.daemon.confine.user import case_user
from ssebench.testing.servers import Server, clean_env, start_server

pytestmark = [pytest.mark.security, pytest.mark.timeout(300)]

HERE = Path(__file__).parent
LEFTOVERS = re.compile(r"sleep 30[234]|innocent-name|pkill -9 -x rle")


def mechanisms() -> list[str]:
    """The mechanisms that work here (in a default Docker container: Landlock only)."""
    return available(case_user())


@dataclass
class Markers:
    poc_file: str
    intent_file: str
    toml: str
    poc_command: str
    intent_command: str
    functional_command: str
    dataset: str

    @property
    def state(self) -> str:
        """What the attack names the state it leaves by (not withheld: it chose it)."""
        return "ssebench-state-" + self.toml[-12:]

    @classmethod
    def new(cls) -> Markers:
        tag = uuid.uuid4().hex[:12]
        names = ("POCFILE", "INTENTFILE", "TOML", "POCCMD", "INTENTCMD", "FUNCCMD", "DATASET")
        return cls(*(f"MARK{name}{tag}" for name in names))

    def withheld(self, level: int) -> dict[str, str]:
        """The markers a case may not see at `level`: task.toml's and the dataset's always."""
        hidden = {"task.toml": self.toml, "the dataset's copy": self.dataset}
        if level >= 1:
            hidden |= {"intent file": self.intent_file, "intent command": self.intent_command}
        if level >= 2:
            hidden |= {"PoC file": self.poc_file, "PoC command": self.poc_command}
        if level >= 3:
            hidden |= {"functional command": self.functional_command}
        return hidden


def make_attack_task(root: Path, marks: Markers) -> Path:
    """The task in `root`, its withheld files outside it: the PoCs in `root/../data` named by
    their absolute path, the intent tests in `root/../elsewhere` through a symbolic link; and
    the dataset's copy of the task in `root/../dataset`."""
    source = root / "src"
    source.mkdir(parents=True)
    shutil.copy(HERE / "attack.py", source / "attack.py")
    pocs, intent = root.parent / "data" / "pocs", root.parent / "elsewhere" / "intent"
    pocs.mkdir(parents=True)
    (pocs / "crash.bin").write_text(f"{marks.poc_file}\n")
    intent.mkdir(parents=True)
    (intent / "test.sh").write_text(f"echo {marks.intent_file}\nexit 1\n")
    (root / "intent").symlink_to(intent)
    (root / "task.toml").write_text(
        f"# {marks.toml}\n"
        'source = "src"\n'
        "[checks.build]\n"
        "run = 'make'\n"
        "timeout = 120\n"
        "[checks.pocs]\n"
        f'files = ["{pocs}"]\n'
        f'cases = ["cat {pocs}/crash.bin # {marks.poc_command}"]\n'
        "[checks.intent]\n"
        'files = ["intent"]\n'
        f'run = "sh $SSE_TASK_DIR/intent/test.sh # {marks.intent_command}"\n'
        "[checks.functional]\n"
        f'run = "true # {marks.functional_command}"\n'
    )
    dataset = root.parent / "dataset" / "task"
    (dataset / "pocs").mkdir(parents=True)
    for name in ("task.toml", "pocs/crash.bin"):
        (dataset / name).write_text(f"# {marks.dataset}\n")
    return root


def task_hashes(task: Path) -> dict[str, str]:
    """Every task file but the source tree (and the withheld files outside it), by content."""
    roots = [task, *(task.parent / name for name in ("data", "elsewhere", "dataset"))]
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file() and "src" not in path.relative_to(root).parts
    }


def agent_visible(report: str, log_dir: Path, source: Path) -> dict[str, str]:
    """Everything the agent can read after the call: the report, saved logs, its own tree."""
    seen = {"the report": report}
    for folder in (log_dir, source):
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file():
                seen[str(path)] = path.read_bytes().decode("latin-1")
    return seen


def leftovers() -> list[str]:
    """Processes the attack left running, by what they were started as."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, UnicodeDecodeError):
            continue
        if state not in "ZX" and LEFTOVERS.search(cmdline):
            found.append(f"{entry}: {cmdline}")
    return found


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
    tmp: Path, level: int, isolation: list[str], services: Services, *, spare_server: bool = False
) -> tuple[Markers, Path, Server, str]:
    """Serve the attack task at `level`, call test_patch once; the server is left running.

    `spare_server` gives the attack no server to signal (unconfined, it would stop it)."""
    marks = Markers.new()
    task = make_attack_task(tmp / "task", marks)
    env = clean_env(tmp)
    server = start_server(
        tmp, ["--task", str(task), "--difficulty", str(level), *isolation], env=env
    )
    ports = f"{server.port} {server.daemon_port}"
    target = 0 if spare_server else server.proc.pid
    (task / "src" / "Makefile").write_text(
        f"all:\n\tpython3 attack.py {task} {env['MCP_LOG_DIR']} {target} {ports}\n"
    )
    outside = [f"{tmp}/{name}/**" for name in ("data", "elsewhere", "dataset")]
    targets = {**services.targets(), "paths": outside, "state_mark": marks.state}
    (task / "src" / "targets.json").write_text(json.dumps(targets))
    return marks, task, server, call(server)


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


@pytest.mark.parametrize("mechanism", mechanisms())
@pytest.mark.parametrize("level", [1, 2, 3])
def test_the_attack_finds_nothing_withheld(tmp_path: Path, level: int, mechanism: str) -> None:
    queues = sysv_queues()
    with Services() as services:
        marks, task, server, report = attack(tmp_path, level, ["--isolation", mechanism], services)
    try:
        before = task_hashes(task)
        assert report.startswith(HEAD + NOT_RUN[level]), report[:800]
        assert "routes that gave something:" in report  # the attack ran to its end
        seen = agent_visible(report, Path(server.env["MCP_LOG_DIR"]), task / "src")
        leaks = [
            f"{what} in {where}"
            for what, marker in marks.withheld(level).items()
            for where, text in seen.items()
            if marker in text
        ]
        assert leaks == []
        assert (task / "src" / "loot" / "found.json").exists()
        assert task_hashes(task) == before and before  # nothing overwritten
        assert services.heard == []
        assert (sysv_queues() - queues, keys_described(marks.state)) == (set(), [])
        assert leftovers() == []
        state = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state in "SR"  # neither stopped nor killed
        assert call(server).startswith(HEAD + NOT_RUN[level])
        assert f"ssebench: isolation: {mechanism} (" in server.stderr()
    finally:
        server.stop()
        kill_leftovers()


def test_without_isolation_the_same_attack_finds_the_markers(tmp_path: Path) -> None:
    """The control: unconfined, the searches above do find what they look for."""
    queues = sysv_queues()
    with Services() as services:
        marks, task, server, report = attack(
            tmp_path, 2, ["--no-isolation"], services, spare_server=True
        )
    try:
        assert len(services.heard) == 3  # the pathname and abstract sockets, UDP
        assert len(sysv_queues() - queues) == 1
        seen = "\n".join(
            agent_visible(report, Path(server.env["MCP_LOG_DIR"]), task / "src").values()
        )
        assert marks.toml in seen
        assert marks.poc_file in seen
        assert marks.intent_file in seen
        assert marks.dataset in seen
        assert (tmp_path / "data" / "pocs" / "crash.bin").read_text() == "exit 0\n"  # overwritten
        assert "ssebench: warning: isolation is off (--no-isolation)" in server.stderr()
    finally:
        server.stop()
        kill_leftovers()
        for queue in sysv_queues() - queues:
            os.system(f"ipcrm -q {queue.split()[1]}")
        time.sleep(0.1)
