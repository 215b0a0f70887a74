"""Whether the agent changed its tree since the runner copy's last sync (daemon/treelook.py):
what a call says when its tree was edited while it ran. Every change the sync would carry is
one; what it never carries is not."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.user import own_user
from ssebench.daemon.runnercopy import RunnerCopy

FILES = {
    "Makefile": "all:\n",
    "src/a.c": "int a;\n",
    "src/deep/b.c": "int b;\n",
    "tests/t.sh": "true\n",
    ".gitignore": "*.o\n",
    ".git/HEAD": "ref: refs/heads/main\n",
}


@pytest.fixture
def agent(tmp_path: Path, user: CaseUser) -> Iterator[tuple[Path, RunnerCopy]]:
    root = tmp_path / "agent"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    copy = RunnerCopy(root, user, protected=("tests/**",))
    copy.sync()
    yield root, copy
    copy.close()


def _swap_for_link(root: Path) -> None:
    (root / "src" / "deep").rename(root / "elsewhere")
    (root / "src" / "deep").symlink_to(root / "elsewhere")


CHANGES: dict[str, Callable[[Path], object]] = {
    "a file's bytes": lambda root: (root / "src" / "deep" / "b.c").write_text("int c;\n"),
    "a file added": lambda root: (root / "src" / "new.c").write_text(""),
    "a file removed": lambda root: (root / "src" / "a.c").unlink(),
    "a file renamed": lambda root: (root / "src" / "a.c").rename(root / "src" / "z.c"),
    "a mode": lambda root: (root / "Makefile").chmod(0o600),
    "a folder removed": lambda root: (
        [p.unlink() for p in (root / "src/deep").iterdir()] and (root / "src" / "deep").rmdir()
    ),
    "a folder swapped for a link": _swap_for_link,
    "a build output added beside the sources": lambda root: (root / "src" / "a.o").write_text(""),
    "the tree gone": lambda root: os.rename(root, root.with_name("gone")),
}
UNSEEN: dict[str, Callable[[Path], object]] = {
    "nothing": lambda root: None,
    "a commit (.git)": lambda root: (root / ".git" / "HEAD").write_text("ref: x\n"),
    "a protected file (kept as shipped)": lambda root: (root / "tests" / "t.sh").write_text("x"),
    "a file read": lambda root: (root / "src" / "a.c").read_text(),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_after_the_sync_is_seen(agent: tuple[Path, RunnerCopy], change: str) -> None:
    root, copy = agent
    CHANGES[change](root)
    assert copy.changed()


@pytest.mark.parametrize("change", sorted(UNSEEN))
def test_what_the_sync_never_carries_is_no_change(
    agent: tuple[Path, RunnerCopy], change: str
) -> None:
    root, copy = agent
    CHANGES.get(change, UNSEEN[change])(root)
    assert not copy.changed()


def test_the_next_sync_takes_the_change_and_nothing_is_changed_after_it(
    agent: tuple[Path, RunnerCopy],
) -> None:
    root, copy = agent
    (root / "src" / "a.c").write_text("int changed;\n")
    assert copy.changed()
    copy.sync()
    assert not copy.changed()
    assert (copy.path / "src" / "a.c").read_text() == "int changed;\n"


def test_an_adopted_tree_is_never_changed(tmp_path: Path) -> None:
    (tmp_path / "scratch").mkdir()
    copy = RunnerCopy(tmp_path / "scratch", own_user(), adopt=True)
    copy.sync()
    (tmp_path / "scratch" / "new").write_text("")
    assert not copy.changed()
