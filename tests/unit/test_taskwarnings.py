"""What validate warns a task author about in task.toml itself: a `protected` glob that matches
nothing, and a granted file that links to where no case can read (a venv's interpreter under
/root/.pyenv), with the `readable` or `files` entry that would fix it."""

from __future__ import annotations

from pathlib import Path

from ssebench.core.daemons.door import load_task
from ssebench.core.registry import build_registry
from ssebench.evaluate.taskwarnings import task_warnings


def task(root: Path, toml: str) -> Path:
    (root / "src" / "tests").mkdir(parents=True)
    (root / "src" / "tests" / "run.sh").write_text("true\n")
    (root / "task.toml").write_text(f'source = "src"\n{toml}')
    return root


def venv(folder: Path, python: Path) -> None:
    (folder / "bin").mkdir(parents=True)
    for name in ("python", "python3"):
        (folder / "bin" / name).symlink_to(python)


def warnings(root: Path) -> list[str]:
    return task_warnings(load_task(root, build_registry().checks))


def test_a_venv_whose_interpreter_no_case_can_read(tmp_path: Path) -> None:
    root = task(
        tmp_path / "task", 'files = ["venv"]\n[checks.pocs]\nfiles = ["pocs"]\nrun = "true"\n'
    )
    interpreter = tmp_path / "pyenv" / "versions" / "3.11" / "bin" / "python3.11"
    interpreter.parent.mkdir(parents=True)
    interpreter.write_text("")
    venv(root / "venv", interpreter)
    (root / "pocs").mkdir()
    (root / "pocs" / "input").symlink_to(root / "task.toml")  # in the task folder, not granted
    entry = Path("/", *interpreter.parts[1:3])  # the folder below /, as with /srv/x
    assert warnings(root) == [
        f"files: venv/bin/python (and 1 more) links to {interpreter}, which a case cannot read "
        f'(no system folder, not in readable): add "{entry}" to readable',
        f"files: pocs/input links to {root / 'task.toml'}, which a case cannot read (no system "
        'folder, not in readable): add "task.toml" to files',
    ]
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text(
        toml.replace('files = ["venv"]', f'files = ["venv"]\nreadable = ["{entry}"]')
    )
    assert len(warnings(root)) == 1  # readable: the venv's warning is gone


def test_links_a_case_can_follow_and_globs_that_match(tmp_path: Path) -> None:
    root = task(tmp_path, 'files = ["venv"]\nprotected = ["tests/", "/run.sh", "!tests/x"]\n')
    venv(root / "venv", Path("/usr/bin/env"))  # a system file
    (root / "venv" / "lib").symlink_to(root / "venv" / "bin")  # inside the grant itself
    assert warnings(root) == [
        "protected: /run.sh matches nothing in the source tree (a typo? as it is, it only keeps "
        "a patch from adding such a path)",
        "protected: !tests/x matches nothing in the source tree (a typo? as it is, it only keeps "
        "a patch from adding such a path)",
    ]
