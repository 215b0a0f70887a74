"""`ssebench new DIR`: a skeleton task that loads, and that `validate` explains (what is left
to fill in) instead of failing on; a folder that is already something is one line."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ssebench.evaluate.skeleton import PLACEHOLDER

from .test_batch import RunCli
from .test_cli_inputs import refused

pytestmark = pytest.mark.timeout(120)


def test_new_writes_a_skeleton_that_validate_explains(run_cli: RunCli, tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "my-task"
    done = run_cli("new", str(task))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"ssebench: a skeleton task in {task}:\n"
        "  task.toml  every key, commented; each check runs a placeholder that says what goes "
        "there\n"
        "  src/       the source tree the agent edits: put the project here\n"
        "  pocs/      the PoCs' inputs\n"
        "  intent/    the intent tests\n"
        "  fix.patch  the reference fix (empty): a diff of src/, as `git diff` writes it\n"
        "Fill it in (docs/tasks.md explains each key), then: ssebench validate --task "
        f"{task} --fix {task}/fix.patch\n"
    )
    assert sorted(p.relative_to(task).as_posix() for p in task.rglob("*")) == [
        "fix.patch", "intent", "intent/README.md", "pocs", "pocs/README.md", "src", "task.toml",
    ]  # fmt: skip
    toml = tomllib.loads((task / "task.toml").read_text())
    assert sorted(toml["checks"]) == ["build", "functional", "intent", "pocs"]
    # It loads: a task.toml error would be one line and exit status 2.
    check = run_cli("check", "--task", str(task), "--difficulty", "4", "--quiet")
    assert (check.returncode, check.stderr) == (0, "")

    done = run_cli("validate", "--task", str(task), "--fix", str(task / "fix.patch"), "--quiet")
    assert (done.returncode, done.stderr) == (1, "")
    placeholder = "is still the skeleton's placeholder: put the task's command there"
    assert done.stdout == (
        "ssebench validate: 1 run on each tree\n"
        "\n"
        "check             as shipped  with the fix\n"
        "build             FAILED      FAILED\n"
        "PoCs              not run     not run\n"
        "intent tests      not run     not run\n"
        "functional tests  not run     not run\n"
        "\n"
        "Problems:\n"
        f"- task.toml: [checks.build] {placeholder}\n"
        f"- task.toml: [checks.pocs] {placeholder}\n"
        f"- task.toml: [checks.intent] {placeholder}\n"
        f"- task.toml: [checks.functional] {placeholder}\n"
        "- the fix is empty: give the reference fix, a diff of the source tree as `git diff` "
        "writes it\n"
        "- build: FAILED as shipped; it must pass there\n"
        "- build: FAILED with the fix; every check must pass with it\n"
        "\n"
        "Warnings:\n"
        f"- the source tree {task / 'src'} is empty\n"
        "\n"
        "The task is NOT sound.\n"
    )


def test_each_placeholder_says_what_goes_there(run_cli: RunCli, tmp_path: Path) -> None:
    task = tmp_path / "t"
    assert run_cli("new", str(task)).returncode == 0
    (task / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    done = run_cli("check", "--task", str(task), "--difficulty", "2", "--quiet")
    assert done.returncode == 1
    assert (
        f"{PLACEHOLDER}: [checks.build] run: the command that builds the project"
        in done.stdout.splitlines()
    )


@pytest.mark.parametrize("what", ["a file", "a folder with something in it"])
def test_new_writes_only_a_new_folder(run_cli: RunCli, tmp_path: Path, what: str) -> None:
    target = tmp_path / "there"
    if what == "a file":
        target.write_text("mine\n")
    else:
        target.mkdir()
        (target / "notes.txt").write_text("mine\n")
    done = run_cli("new", str(target))
    refused(
        done, f"ssebench: error: {target}: already there and not an empty folder; name a new one"
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == (
        ["there"] if what == "a file" else ["notes.txt", "there"]
    )
