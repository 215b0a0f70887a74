"""What a verdict was graded with (evaluate/digests.py): a task's hash follows its content and
nothing else, a source tree outside the task folder included."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ssebench.evaluate.digests import task_sha256


@pytest.fixture
def task(tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    (folder / "src" / "lib").mkdir(parents=True)
    (folder / "task.toml").write_text('source = "src"\n[checks.build]\nrun = "make"\n')
    (folder / "src" / "lib" / "a.c").write_text("int a;\n")
    (folder / "src" / "run.sh").write_text("echo\n")
    (folder / "src" / "link").symlink_to("lib/a.c")
    return folder


def test_the_same_content_elsewhere_and_later_has_the_same_hash(task: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(task, copy, symlinks=True)
    os.utime(copy / "src" / "lib" / "a.c", (0, 0))
    assert task_sha256(copy) == task_sha256(task) is not None


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t / "src" / "lib" / "a.c").write_text("int b;\n"),
        lambda t: (t / "src" / "run.sh").chmod(0o755),
        lambda t: (t / "src" / "new.o").write_bytes(b""),
        lambda t: (t / "src" / "lib" / "a.c").rename(t / "src" / "lib" / "b.c"),
        lambda t: ((t / "src" / "link").unlink(), (t / "src" / "link").symlink_to("run.sh")),
        lambda t: (t / "task.toml").write_text('source = "src"\n'),
        lambda t: (t / "src" / "empty").mkdir(),
    ],
    ids=["content", "mode", "a new file", "a rename", "a link's target", "task.toml", "a folder"],
)
def test_any_change_changes_the_hash(task: Path, change: object) -> None:
    before = task_sha256(task)
    change(task)  # type: ignore[operator]
    assert task_sha256(task) != before


def test_a_source_tree_outside_the_task_folder_counts(tmp_path: Path) -> None:
    task, source = tmp_path / "task", tmp_path / "project"
    task.mkdir()
    source.mkdir()
    (task / "task.toml").write_text(f'source = "{source}"\n')
    (source / "main.c").write_text("int main;\n")
    before = task_sha256(task)
    (source / "main.c").write_text("int main(void);\n")
    assert task_sha256(task) != before


def test_a_link_out_of_the_task_is_not_followed(task: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("one\n")
    (task / "src" / "out").symlink_to(outside)
    before = task_sha256(task)
    outside.write_text("two\n")
    assert task_sha256(task) == before


def test_a_task_that_cannot_be_read_whole_has_no_hash(task: Path) -> None:
    (task / "src" / "lib" / "a.c").unlink()
    os.mkfifo(task / "src" / "lib" / "fifo")  # not read: only its kind counts
    assert task_sha256(task) is not None
    assert task_sha256(task / "missing") is None
