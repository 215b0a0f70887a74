"""What the runner copy costs and how a sync ends: a 16 GiB sparse file stays sparse on ext4
and tmpfs, a tree over its bound is one line with nothing of it copied, a sync a full disk
stopped half way is finished by the next, and a folder the agent removed keeps what task.toml
protects in it."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from e2e.test_strangetrees import agent, contents
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.runnercopy import RunnerCopy, TreeRefused

pytestmark = pytest.mark.timeout(120)
ROOT = os.geteuid() == 0
GIB = 1 << 30
__all__ = ["agent"]  # a fixture


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
