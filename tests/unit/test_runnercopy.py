"""The runner copy: what each sync carries from the agent's tree, what it leaves, and the
links it never follows, on either side."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.runnercopy import RunnerCopy

ROOT = os.geteuid() == 0


def tree(root: Path) -> Path:
    for name, text in {
        "Makefile": "all:\n",
        "src/a.c": "int a;\n",
        "src/b.c": "int b;\n",
        ".gitignore": "*.o\nbuild/\n",
        "vendor/shipped.o": "shipped, ignored, kept\n",
        ".git/HEAD": "ref: refs/heads/main\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): os.readlink(p) if p.is_symlink() else p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


@pytest.fixture
def copy(tmp_path: Path, user: CaseUser):  # type: ignore[no-untyped-def]
    runner = RunnerCopy(tree(tmp_path / "agent"), user)
    runner.sync()
    yield runner
    runner.close()


def test_the_first_sync_copies_the_tree_as_shipped_as_the_case_users(
    tmp_path: Path, copy: RunnerCopy, user: CaseUser
) -> None:
    assert files(copy.path) == files(tmp_path / "agent")
    for path in [copy.path, *copy.path.rglob("*")]:
        assert path.lstat().st_uid == user.uid
    assert copy.path.parent.stat().st_mode & 0o777 == 0o700  # its folder is ours alone


def test_a_sync_carries_what_a_prediction_would_and_leaves_the_builds_outputs(
    tmp_path: Path, copy: RunnerCopy
) -> None:
    agent = tmp_path / "agent"
    (copy.path / "src" / "a.o").write_text("built\n")  # a build's output, in the copy only
    (copy.path / "out").mkdir()
    (copy.path / "out" / "prog").write_text("built\n")
    b_inode = (copy.path / "src" / "b.c").stat().st_ino
    (agent / "src" / "a.c").write_text("int a = 1;\n")
    os.utime(agent / "src" / "a.c", ns=(1, 10**18))
    (agent / "Makefile").unlink()
    (agent / "src" / "new.c").write_text("int n;\n")
    (agent / "src" / "agent.o").write_text("the agent's own build\n")  # ignored: not carried
    (agent / "build").mkdir()
    (agent / "build" / "CMakeCache.txt").write_text("names /the/agents/tree\n")
    (agent / ".git" / "HEAD").write_text("ref: refs/heads/agent\n")  # .git: never carried
    (agent / "vendor" / "shipped.o").write_text("changed by the agent\n")  # shipped: carried
    copy.sync()
    assert files(copy.path) == {
        ".git/HEAD": "ref: refs/heads/main\n",
        ".gitignore": "*.o\nbuild/\n",
        "out/prog": "built\n",
        "src/a.c": "int a = 1;\n",
        "src/a.o": "built\n",
        "src/b.c": "int b;\n",
        "src/new.c": "int n;\n",
        "vendor/shipped.o": "changed by the agent\n",
    }
    assert (copy.path / "src" / "a.c").stat().st_mtime_ns == 10**18  # make sees the change
    assert (copy.path / "src" / "b.c").stat().st_ino == b_inode  # unchanged: untouched


def test_a_change_that_keeps_size_and_mtime_is_seen_by_its_ctime(
    tmp_path: Path, copy: RunnerCopy
) -> None:
    path = tmp_path / "agent" / "src" / "a.c"
    before = path.stat()
    path.write_text("int z;\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    copy.sync()
    assert (copy.path / "src" / "a.c").read_text() == "int z;\n"


def test_a_file_becoming_a_folder_and_a_folder_a_file(tmp_path: Path, copy: RunnerCopy) -> None:
    agent = tmp_path / "agent"
    (agent / "Makefile").unlink()
    (agent / "Makefile").mkdir()
    (agent / "Makefile" / "inner").write_text("x\n")
    (agent / "src" / "a.c").unlink()
    (agent / "src" / "b.c").unlink()
    (agent / "src").rmdir()
    (agent / "src").write_text("now a file\n")
    copy.sync()
    assert files(copy.path)["Makefile/inner"] == "x\n"
    assert (copy.path / "src").read_text() == "now a file\n"


def test_setuid_bits_are_never_carried(tmp_path: Path, copy: RunnerCopy) -> None:
    path = tmp_path / "agent" / "tool"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o6755)
    copy.sync()
    assert stat.S_IMODE((copy.path / "tool").stat().st_mode) == 0o755


@pytest.mark.skipif(not ROOT, reason="a root daemon's sync is what the agent would abuse")
def test_a_folder_swapped_for_a_link_never_takes_the_sync_outside_the_tree(
    tmp_path: Path, copy: RunnerCopy
) -> None:
    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    (secret / "a.c").write_text("MARK-SECRET\n")
    agent = tmp_path / "agent"
    for name in ("a.c", "b.c"):
        (agent / "src" / name).unlink()
    (agent / "src").rmdir()
    (agent / "src").symlink_to(secret)  # src/a.c now names the secret
    (agent / "leak").symlink_to(secret / "a.c")
    copy.sync()
    assert os.readlink(copy.path / "src") == str(secret)  # a link, carried as a link
    assert os.readlink(copy.path / "leak") == str(secret / "a.c")
    assert "MARK-SECRET" not in "".join(
        p.read_text() for p in copy.path.rglob("*") if p.is_file() and not p.is_symlink()
    )


def test_a_link_a_case_left_in_the_copy_is_replaced_not_followed(
    tmp_path: Path, copy: RunnerCopy
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    for name in ("a.c", "b.c"):
        (copy.path / "src" / name).unlink()
    (copy.path / "src").rmdir()
    (copy.path / "src").symlink_to(target)  # what a build could leave where a sync writes
    (tmp_path / "agent" / "src" / "a.c").write_text("int changed;\n")
    copy.sync()
    assert list(target.iterdir()) == []
    assert (copy.path / "src" / "a.c").read_text() == "int changed;\n"


def test_protected_paths_stay_as_shipped(tmp_path: Path, user: CaseUser) -> None:
    """What grading puts back, the runner copy never takes from the agent: test_patch sees
    the tests grading will run."""
    agent = tree(tmp_path / "agent")
    (agent / "tests").mkdir()
    (agent / "tests" / "test_a.sh").write_text("exit 1\n")
    runner = RunnerCopy(agent, user, protected=("tests/", "/Makefile"))
    runner.sync()
    try:
        (agent / "tests" / "test_a.sh").write_text("exit 0  # rigged\n")
        (agent / "tests" / "conftest.py").write_text("rigged\n")
        (agent / "Makefile").unlink()
        (agent / "src" / "a.c").write_text("int a = 2;\n")
        runner.sync()
        assert files(runner.path) == {
            ".git/HEAD": "ref: refs/heads/main\n",
            ".gitignore": "*.o\nbuild/\n",
            "Makefile": "all:\n",
            "src/a.c": "int a = 2;\n",
            "src/b.c": "int b;\n",
            "tests/test_a.sh": "exit 1\n",
            "vendor/shipped.o": "shipped, ignored, kept\n",
        }
    finally:
        runner.close()


def test_the_tools_rules_hold_in_the_runner_copy_as_in_a_grade(
    tmp_path: Path, user: CaseUser
) -> None:
    """core/toolfiles.py's rules, as a grade keeps them: a protected Makefile stands for the
    names make reads in its place; no start-up hook, runner module or build output the agent
    adds is carried, shipped or not ignored by .gitignore; its source changes are."""
    agent = tree(tmp_path / "agent")
    (agent / ".gitignore").write_text("")  # nothing ignored: only the rules keep these out
    runner = RunnerCopy(agent, user, protected=("/Makefile",), modules=frozenset({"pytest"}))
    runner.sync()
    try:
        elf = b"\x7fELF\x02\x01\x01" + bytes(9) + b"an object"
        added = {
            "GNUmakefile": b"check:\n\techo ok\n",
            "CMakeLists.txt": b"project(x)\n",
            "sitecustomize.py": b"import rig\n",
            "rig-1.0.dist-info/entry_points.txt": b"[pytest11]\nrig = rig\n",
            "pytest/__main__.py": b"print('ok')\n",
            "src/a.o": elf,
            "src/new.c": b"int n;\n",
        }
        for name, data in added.items():
            (agent / name).parent.mkdir(parents=True, exist_ok=True)
            (agent / name).write_bytes(data)
        (agent / "src" / "b.c").write_bytes(elf)  # a shipped source made a build output
        runner.sync()
        assert files(runner.path) == {
            ".git/HEAD": "ref: refs/heads/main\n",
            ".gitignore": "",
            "Makefile": "all:\n",
            "src/a.c": "int a;\n",
            "src/b.c": "int b;\n",
            "src/new.c": "int n;\n",
            "vendor/shipped.o": "shipped, ignored, kept\n",
        }
    finally:
        runner.close()


def test_new_files_in_a_shipped_folder_the_gitignore_excludes_are_not_carried(
    tmp_path: Path, user: CaseUser
) -> None:
    """A folder shipped though ignored (`build/`, folders only) is carried with what it held;
    what the agent's build adds inside is a build output, at any depth below it."""
    agent = tree(tmp_path / "agent")
    (agent / "build" / "sub").mkdir(parents=True)
    (agent / "build" / "sub" / "shipped.txt").write_text("shipped\n")
    runner = RunnerCopy(agent, user)
    try:
        runner.sync()
        (agent / "build" / "sub" / "shipped.txt").write_text("changed\n")
        (agent / "build" / "sub" / "new.txt").write_text("built\n")
        (agent / "build" / "new.txt").write_text("built\n")
        runner.sync()
        assert {k: v for k, v in files(runner.path).items() if k.startswith("build")} == {
            "build/sub/shipped.txt": "changed\n"
        }
    finally:
        runner.close()
