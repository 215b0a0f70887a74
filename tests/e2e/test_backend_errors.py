"""`--backend docker` where it cannot grade: one line on stderr and exit status 2, before any
patch is applied or any container started; none of these needs Docker to be running."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ssebench.testing import task_toml

from .test_batch import RunCli
from .test_validate import AS_SHIPPED


@pytest.fixture
def task(tmp_path: Path) -> Path:
    (tmp_path / "task" / "src").mkdir(parents=True)
    (tmp_path / "task" / "task.toml").write_text('image = "x:1"\n' + task_toml({"build": "true"}))
    return tmp_path / "task"


def one_line(run_cli: RunCli, *args: str, env: dict[str, str] | None = None) -> str:
    done = run_cli(*args, env=env)
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1), done.stderr
    return done.stderr.removeprefix("ssebench: error: ").rstrip("\n")


def test_a_task_without_an_image(run_cli: RunCli, task: Path) -> None:
    (task / "task.toml").write_text(task_toml({"build": "true"}))
    assert one_line(run_cli, "grade", "--task", str(task), "--patch", os.devnull,
                    "--backend", "docker") == (
        f"{task / 'task.toml'}: names no image; --backend docker grades in the task's image "
        '(image = "NAME" in task.toml)'
    )  # fmt: skip


def test_docker_missing(run_cli: RunCli, task: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # git and nothing else: a run needs git before anything
    bin_dir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    env = {**os.environ, "PATH": str(bin_dir)}
    error = "--backend docker needs Docker, and there is no `docker` command"
    args = ["--task", str(task), "--patch", os.devnull, "--backend", "docker"]
    assert one_line(run_cli, "grade", *args, env=env) == error
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"task": "task", "patch": AS_SHIPPED}) + "\n")
    out = tmp_path / "out"
    run = ["--tasks", str(tmp_path), "--predictions", str(preds), "--out", str(out)]
    assert one_line(run_cli, "grade", *run, "--backend", "docker", env=env) == error
    assert list(out.iterdir()) == []


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker command")
def test_docker_not_running(run_cli: RunCli, task: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"task": "task", "patch": AS_SHIPPED}) + "\n")
    run = ["--tasks", str(tmp_path), "--predictions", str(preds), "--out", str(tmp_path / "o")]
    for args in (["--task", str(task), "--patch", os.devnull], run):
        error = one_line(run_cli, "grade", *args, "--backend", "docker", env=env)
        cause = f"Cannot connect to the Docker daemon at unix://{tmp_path}/no-daemon.sock"
        assert error.startswith(f"--backend docker: Docker is not running ({cause}"), error


def test_the_backend_is_for_a_patch_or_a_run(run_cli: RunCli, task: Path) -> None:
    assert one_line(run_cli, "grade", "--task", str(task), "--backend", "docker") == (
        "--backend grades a patch on a copy: use it with --patch FILE or --tasks"
    )
    done = run_cli("grade", "--task", str(task), "--backend", "podman")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        2, "ssebench grade: error: argument --backend: invalid choice: 'podman' (choose from "
        "'local', 'docker')",
    )  # fmt: skip
