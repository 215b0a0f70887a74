"""The runner copy on trees an agent can make but a recursive walk cannot take: folder chains
deeper than any path or than Python's recursion, names that are no UTF-8 or hold a line break,
kinds that change between syncs, FIFOs and sockets, folders closed to the daemon. Each sync
either carries the tree or says in one line why not, and the next sync takes what is there
(tests/e2e/test_copycost.py: sparse files, the bound, a full disk)."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.user import own_user
from ssebench.daemon.confine.walk import DIR_FLAGS
from ssebench.daemon.runnercopy import RunnerCopy, SyncError, TreeRefused

pytestmark = pytest.mark.timeout(120)
ROOT = os.geteuid() == 0


def chain(top: Path, depth: int) -> int:
    """A chain of `depth` folders named d under `top` (made by relative names: no path could
    name its end); the descriptor of the deepest."""
    fd = os.open(top, DIR_FLAGS)
    for _ in range(depth):
        fd = _down(fd, "d", make=True)
    return fd


def walk_down(top: Path, depth: int) -> int:
    fd = os.open(top, DIR_FLAGS)
    for _ in range(depth):
        fd = _down(fd, "d")
    return fd


def _down(fd: int, name: str, *, make: bool = False) -> int:
    if make:
        os.mkdir(name, dir_fd=fd)
    inner = os.open(name, DIR_FLAGS, dir_fd=fd)
    os.close(fd)
    return inner


def write(folder: int, name: str | bytes, data: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=folder)
    with os.fdopen(fd, "wb") as file:
        file.write(data)


def read(folder: int, name: str | bytes) -> bytes:
    with os.fdopen(os.open(name, os.O_RDONLY, dir_fd=folder), "rb") as file:
        return file.read()


def contents(root: Path) -> dict[bytes, bytes]:
    """Every file and link under `root` by its path as bytes (names need not be UTF-8)."""
    found = {}
    for here, _, names in os.walk(os.fsencode(root)):
        for name in names:
            path = os.path.join(here, name)
            key = os.path.relpath(path, os.fsencode(root))
            found[key] = b"-> " + os.readlink(path) if os.path.islink(path) else _bytes(path)
    return found


def _bytes(path: bytes) -> bytes:
    with open(path, "rb") as file:
        return file.read()


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    tree = tmp_path / "agent"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.c").write_text("int a;\n")
    return tree


@pytest.fixture
def copy(agent: Path, user: CaseUser) -> Iterator[RunnerCopy]:
    runner = RunnerCopy(agent, user)
    yield runner
    runner.close()


@pytest.mark.parametrize("depth", [3000, 10_000])
def test_a_folder_chain_deeper_than_any_path_is_synced_changed_and_removed(
    agent: Path, copy: RunnerCopy, user: CaseUser, depth: int
) -> None:
    deepest = chain(agent, depth)
    try:
        write(deepest, "leaf.c", b"int leaf;\n")
        copy.sync()
        assert _deep_files(copy.path, depth, "leaf.c") == [b"int leaf;\n"]
        theirs = walk_down(copy.path, depth)
        assert os.fstat(theirs).st_uid == user.uid
        os.close(theirs)
        write(deepest, "leaf.c", b"int leaf = 2;\n")  # a change deep down
        write(deepest, "new.c", b"int added;\n")
        copy.sync()
        assert _deep_files(copy.path, depth, "leaf.c", "new.c") == [
            b"int leaf = 2;\n",
            b"int added;\n",
        ]
    finally:
        os.close(deepest)
        subprocess.run(["rm", "-rf", str(agent / "d")], check=True)  # the agent removes it
    copy.sync()
    assert sorted(os.listdir(copy.path)) == ["src"]
    folder = copy.folder
    assert folder is not None
    copy.close()  # however deep the copy went, it goes
    assert not folder.exists()


def _deep_files(top: Path, depth: int, *names: str) -> list[bytes]:
    deepest = walk_down(top, depth)
    try:
        return [read(deepest, name) for name in names]
    finally:
        os.close(deepest)


def test_names_that_are_no_utf8_or_hold_a_line_break_are_carried(
    agent: Path, copy: RunnerCopy
) -> None:
    odd = os.fsencode(agent)
    os.mkdir(odd + b"/line\nbreak")
    (agent / "line\nbreak" / "inner.c").write_text("int i;\n")
    with open(odd + b"/latin1-\xe9t\xe9.c", "wb") as file:
        file.write(b"int e;\n")
    os.symlink(b"latin1-\xe9t\xe9.c", odd + b"/link-\xff")
    copy.sync()
    assert contents(copy.path) == contents(agent)
    with open(odd + b"/latin1-\xe9t\xe9.c", "wb") as file:
        file.write(b"int e = 2;\n")
    os.unlink(odd + b"/link-\xff")
    copy.sync()
    assert contents(copy.path) == contents(agent)
    assert b"link-\xff" not in os.listdir(os.fsencode(copy.path))


def test_a_file_that_becomes_a_folder_and_a_file_again(agent: Path, copy: RunnerCopy) -> None:
    copy.sync()
    shape = agent / "src" / "a.c"
    shape.unlink()
    shape.mkdir()
    (shape / "inner.c").write_text("int inner;\n")
    copy.sync()
    assert (copy.path / "src" / "a.c" / "inner.c").read_text() == "int inner;\n"
    (shape / "inner.c").unlink()
    shape.rmdir()
    shape.write_text("int a = 3;\n")
    copy.sync()
    assert (copy.path / "src" / "a.c").read_text() == "int a = 3;\n"
    assert contents(copy.path) == contents(agent)


def test_fifos_and_sockets_are_left_out_and_never_opened(agent: Path, copy: RunnerCopy) -> None:
    os.mkfifo(agent / "src" / "fifo")  # opened for reading, it would wait for a writer forever
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(agent / "src" / "sock"))
        copy.sync()
        assert sorted(os.listdir(copy.path / "src")) == ["a.c"]
        (agent / "src" / "a.c").unlink()
        os.mkfifo(agent / "src" / "a.c")  # a file that became a FIFO goes from the copy
        copy.sync()
        assert os.listdir(copy.path / "src") == []


@pytest.mark.skipif(not ROOT, reason="a root daemon reads past a folder's modes")
def test_a_folder_the_agent_closed_is_copied_with_its_modes_by_a_root_daemon(
    agent: Path, copy: RunnerCopy
) -> None:
    (agent / "closed").mkdir()
    (agent / "closed" / "x.c").write_text("int x;\n")
    (agent / "closed").chmod(0)
    copy.sync()
    assert stat.S_IMODE((copy.path / "closed").stat().st_mode) == 0
    assert (copy.path / "closed" / "x.c").read_text() == "int x;\n"
    (agent / "closed" / "x.c").write_text("int x = 2;\n")
    copy.sync()
    assert (copy.path / "closed" / "x.c").read_text() == "int x = 2;\n"


CLOSED = (
    "the source tree cannot be copied: {} cannot be read (Permission denied), so this case did "
    "not run"
)


def _close(path: Path) -> Callable[[], object]:
    return lambda: path.chmod(0)


def _open(path: Path) -> Callable[[], object]:
    return lambda: path.chmod(0o755)


@pytest.mark.parametrize("closed", ["closed", "."])
def test_what_the_agent_closes_to_a_non_root_daemon_is_one_line_and_the_next_sync_takes_it(
    closed: str,
) -> None:
    """A non-root daemon (when root: a process of its own as uid 1000, the tree's owner) and
    a folder, or the whole tree, that the agent closed after it started."""
    with _owned_tree() as agent:
        folder = agent / closed
        said = _syncs_as_the_owner(agent, [_close(folder), _open(folder)])
    assert said == [
        "synced: closed/x.c src/a.c",
        f"TreeRefused: {CLOSED.format(closed)}",
        "synced: closed/x.c src/a.c",
    ]


def test_a_folder_closed_to_the_daemon_as_it_starts_is_the_deployments_one_line() -> None:
    """Not the agent's doing: the daemon stops at start (Cases makes it a ConfigError)."""
    with _owned_tree() as agent:
        (agent / "closed").chmod(0)
        said = _syncs_as_the_owner(agent, [])
    assert said == [f"SyncError: {CLOSED.format('closed')}"]


@contextlib.contextmanager
def _owned_tree() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp())
    try:
        base.chmod(0o755)  # the way to the tree, open to its owner
        agent = base / "agent"
        (agent / "src").mkdir(parents=True)
        (agent / "src" / "a.c").write_text("int a;\n")
        (agent / "closed").mkdir()
        (agent / "closed" / "x.c").write_text("int x;\n")
        if ROOT:
            for path in [agent, *agent.rglob("*")]:
                os.lchown(path, 1000, 1000)
        yield agent
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)


def _syncs_as_the_owner(agent: Path, steps: list[Callable[[], object]]) -> list[str]:
    """What the syncs of a copy of `agent` by a process of its owner (forked as uid 1000 when
    we are root) said: the daemon's first (`prepare`), then one after each step."""
    reading, writing = os.pipe()
    pid = os.fork() if ROOT else 0
    if pid == 0:
        try:
            os.close(reading)
            if ROOT:
                os.setgroups([])
                os.setresgid(1000, 1000, 1000)
                os.setresuid(1000, 1000, 1000)
                tempfile.tempdir = tempfile.mkdtemp(dir="/tmp")
            os.write(writing, "\0".join(_syncs(agent, steps)).encode())
        finally:
            if ROOT:
                os._exit(0)
            os.close(writing)
    else:
        os.close(writing)
    with os.fdopen(reading, "rb") as answer:
        said = answer.read().decode()
    if pid:
        os.waitpid(pid, 0)
    return said.split("\0")


def _syncs(agent: Path, steps: list[Callable[[], object]]) -> list[str]:
    mine = RunnerCopy(agent, own_user())
    said = []
    try:
        for index in range(len(steps) + 1):
            try:
                mine.sync() if index else mine.prepare()
                files = sorted(str(p.relative_to(mine.path)) for p in mine.path.rglob("*.c"))
                said.append(f"synced: {' '.join(files)}")
            except (TreeRefused, SyncError) as exc:
                said.append(f"{type(exc).__name__}: {exc}")
            if index < len(steps):
                steps[index]()
    finally:
        mine.close()
    return said
