"""task.toml of a task whose environment is its image: paths that exist only there (`source =
"/src/rle"`, `files = ["/testcase"]`, `readable = ["/src"]`) are taken when the task is loaded
to run in the image (`--backend docker`) and are one line naming the image elsewhere; and
`writable`, the folders outside the tree its cases may write."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.core.errors import ConfigError
from ssebench.core.registry import build_registry
from ssebench.daemon.task import load_task

CHECKS = build_registry().checks
IMAGE = 'image = "bench/task:1"\n'
# Paths no machine running these tests has: the image's.
IN_IMAGE = """\
source = "/ssebench-test-image-only/src/rle"
readable = ["/ssebench-test-image-only/src"]
writable = ["/ssebench-test-image-only/out"]

[checks.build]
run = "secb build"

[checks.pocs]
files = ["/ssebench-test-image-only/testcase"]
run = "secb repro"
"""


def _write(folder: Path, text: str) -> Path:
    (folder / "src").mkdir(exist_ok=True)
    path = folder / "task.toml"
    path.write_text(text)
    return path


def _error(folder: Path, text: str, *, for_image: bool = False) -> str:
    path = _write(folder, text)
    with pytest.raises(ConfigError) as caught:
        load_task(path, CHECKS, for_image=for_image)
    return str(caught.value)


def test_paths_of_the_image_are_taken_when_the_task_runs_there(tmp_path: Path) -> None:
    task = load_task(_write(tmp_path, IMAGE + IN_IMAGE), CHECKS, for_image=True)
    root = Path("/ssebench-test-image-only")
    assert (task.source, task.readable, task.writable) == (
        root / "src/rle", (root / "src",), (root / "out",),
    )  # fmt: skip
    assert task.checks["pocs"].files == (root / "testcase",)


def test_elsewhere_each_is_one_line_naming_the_path_and_the_image(tmp_path: Path) -> None:
    where = f"{(tmp_path / 'task.toml').resolve()}"
    advice = "if the task's image bench/task:1 has it, grade with --backend docker or run "
    assert _error(tmp_path, IMAGE + IN_IMAGE) == (
        f"{where}: source: /ssebench-test-image-only/src/rle: no such folder on this machine; "
        f"{advice}ssebench in the image"
    )
    text = IMAGE + IN_IMAGE.replace("/ssebench-test-image-only/src/rle", "src")
    assert _error(tmp_path, text) == (
        f"{where}: checks.pocs.files: /ssebench-test-image-only/testcase: no such file or "
        f"folder on this machine; {advice}ssebench in the image"
    )
    text = text.replace('files = ["/ssebench-test-image-only/testcase"]\n', "")
    assert _error(tmp_path, text) == (
        f"{where}: readable: /ssebench-test-image-only/src: no such file or folder on this "
        f"machine; {advice}ssebench in the image"
    )


def test_without_an_image_a_missing_path_is_missing(tmp_path: Path) -> None:
    where = f"{(tmp_path / 'task.toml').resolve()}"
    assert _error(tmp_path, IN_IMAGE, for_image=True) == (
        f"{where}: source: /ssebench-test-image-only/src/rle is not a directory"
    )
    text = 'source = "src"\nfiles = ["/ssebench-test-image-only/x"]\n'
    text = IMAGE + text.replace("/ssebench-test-image-only/x", "gone")
    assert _error(tmp_path, text, for_image=True) == (
        f"{where}: files: gone: no such file or folder ({tmp_path.resolve() / 'gone'})"
    )


def test_writable_folders_load_missing_or_not(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    text = f'source = "src"\nwritable = ["{tmp_path}/out", "{tmp_path}/made/later"]\n'
    task = load_task(_task(tmp_path, text), CHECKS)
    assert task.writable == (tmp_path / "out", tmp_path / "made/later")


def _task(root: Path, text: str) -> Path:
    folder = root / "task"
    folder.mkdir(exist_ok=True)
    return _write(folder, text)


SYSTEM = "is a system folder or holds one: cases may write only a folder of theirs"
TASK_FOLDER = "is the task folder, in it or above it: cases never write task files"


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ('"out"', "out: must be an absolute path, with no . or .. in it"),
        ('"/x/../out"', "/x/../out: must be an absolute path, with no . or .. in it"),
        ('"/"', f"/: {SYSTEM}"),
        ('"/usr"', f"/usr: {SYSTEM}"),
        ('"/tmp"', f"/tmp: {SYSTEM}"),
        ("TASK", f"TASK: {TASK_FOLDER}"),
        ("TASK/pocs", f"TASK/pocs: {TASK_FOLDER}"),
        ("ROOT/tree/build", "ROOT/tree/build: is the source tree, in it or above it"),
        ("ROOT/afile", "ROOT/afile: is not a folder"),
        ("7", "must be a list of absolute paths of folders"),
    ],
)
def test_a_writable_folder_cases_must_not_write_is_one_line(
    tmp_path: Path, given: str, problem: str
) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "tree").mkdir()
    task = tmp_path / "task"
    given = given.replace("TASK", str(task)).replace("ROOT", str(tmp_path))
    value = given if given.startswith('"') or given.isdigit() else f'"{given}"'
    listed = value if value.isdigit() else f"[{value}]"
    text = f'source = "{tmp_path}/tree"\nwritable = {listed}\n'
    with pytest.raises(ConfigError) as caught:
        load_task(_task(tmp_path, text), CHECKS)
    assert str(caught.value) == (
        f"{task / 'task.toml'}: writable: "
        + problem.replace("TASK", str(task)).replace("ROOT", str(tmp_path))
    )
