"""The runner copy on trees an agent can make but a recursive walk cannot take: folder chains
deeper than any path or than Python's recursion, names that are no UTF-8 or hold a line break,
kinds that change between syncs, FIFOs and sockets, folders closed to the daemon, sparse files
and trees over their bound. Each sync either carries the tree or says in one line why not,
and the next sync always finishes the work."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.user import own_user
from ssebench.daemon.runnercopy import RunnerCopy, SyncError, TreeRefused
from ssebench.daemon.treefiles import DIR_FLAGS

pytestmark = pytest.mark.timeout(120)
ROOT = os.geteuid() == 0
GIB = 1 << 30


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


@pytest.mark.parametrize("where", ["/tmp", "/dev/shm"])
def test_a_16_gib_sparse_file_stays_sparse_in_the_copy(
    tmp_path: Path, user: CaseUser, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On ext4 (/tmp here) and tmpfs (/dev/shm) the kernel's own copy writes holes as zeros."""
    monkeypatch.setattr(tempfile, "tempdir", where)  # where the daemon's copies lie
    agent = tmp_path / "agent"
    agent.mkdir()
    marks = {0: b"head", 5 * GIB: b"middle", 16 * GIB - 4: b"tail"}
    with open(agent / "huge.img", "wb") as file:
        for offset, data in marks.items():
            file.seek(offset)
            file.write(data)
    runner = RunnerCopy(agent, user, tree_mb=20 * 1024)
    try:
        started = time.monotonic()
        runner.sync()
        took = time.monotonic() - started
        copied = runner.path / "huge.img"
        assert copied.stat().st_size == 16 * GIB
        assert copied.stat().st_blocks * 512 < 4 << 20  # a dense copy: 16 GiB
        with open(copied, "rb") as file:
            for offset, data in marks.items():
                file.seek(offset)
                assert file.read(len(data)) == data
            file.seek(8 * GIB)
            assert file.read(4) == b"\0\0\0\0"
        assert took < 5  # a dense copy of 16 GiB takes minutes
    finally:
        runner.close()


def test_a_tree_over_its_bound_is_one_line_and_nothing_of_it_is_copied(
    agent: Path, user: CaseUser
) -> None:
    name = os.fsencode(agent) + b"/big\n\xff.img"
    with open(name, "wb") as file:
        file.truncate(3 << 20)
    runner = RunnerCopy(agent, user, tree_mb=2)
    try:
        with pytest.raises(TreeRefused) as refused:
            runner.sync()
        assert refused.value.line == (
            "the source tree is over its limit of 2 MB (limits.tree_mb), so this case did not "
            "run; its largest file is big\\n\\xff.img (3 MB)"
        )
        assert not os.path.exists(os.fsencode(runner.path) + b"/big\n\xff.img")
        os.unlink(name)  # the agent removes it: the next call runs
        runner.sync()
        assert contents(runner.path) == contents(agent)
    finally:
        runner.close()


@pytest.mark.skipif(not ROOT, reason="mounts a small file system to fill")
def test_a_sync_stopped_by_a_full_disk_is_finished_by_the_next(
    tmp_path: Path, user: CaseUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real full disk (a 4 MiB tmpfs holds the copy) stops a sync half way; the next sync,
    once there is room, leaves the copy exactly like the tree."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        agent = tmp_path / "agent"
        for index in range(40):
            (agent / f"d{index % 4}").mkdir(parents=True, exist_ok=True)
            (agent / f"d{index % 4}" / f"f{index}.c").write_text(f"int f{index};\n")
        runner = RunnerCopy(agent, user)
        try:
            runner.sync()
            (agent / "d1" / "f1.c").write_text("int f1 = 1;\n")
            (agent / "d2" / "f2.c").unlink()
            (agent / "d3" / "big.bin").write_bytes(os.urandom(6 << 20))  # more than the room
            (agent / "d0" / "new.c").write_text("int n;\n")
            with pytest.raises(OSError, match="No space left on device"):
                runner.sync()
            (agent / "d3" / "big.bin").write_bytes(os.urandom(1 << 20))
            runner.sync()
            assert contents(runner.path) == contents(agent)
        finally:
            runner.close()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)


def test_a_protected_folder_the_agent_removed_keeps_what_is_protected(
    agent: Path, user: CaseUser
) -> None:
    (agent / "tests").mkdir()
    (agent / "tests" / "test_a.sh").write_text("exit 1\n")
    (agent / "tests" / "helper.txt").write_text("help\n")
    runner = RunnerCopy(agent, user, protected=("tests/*.sh",))
    try:
        runner.sync()
        subprocess.run(["rm", "-rf", str(agent / "tests")], check=True)
        runner.sync()
        assert sorted(os.listdir(runner.path / "tests")) == ["test_a.sh"]  # as grading puts back
        runner.sync()
        assert (runner.path / "tests" / "test_a.sh").read_text() == "exit 1\n"
    finally:
        runner.close()
