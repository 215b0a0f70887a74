"""`writable = [folders]`: folders outside the tree that a task's cases write for the daemon's
life (an in-image build's /out), as the default isolation runs them: a missing one is made and
removed afterwards, an empty one handed over and given back as it was, and one that holds
anyone else's files refused in one line before any case runs, but in a fresh container of the
task's image, which a grade owns."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.testing.images import (
    TASK_IMAGE,
    build_image,
    docker_missing,
    remove_image,
    ssebench_in_image,
)
from ssebench.testing.servers import clean_env, write_task

pytestmark = pytest.mark.timeout(120)

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def _task(root: Path, out: Path) -> Path:
    """The build writes the folder (and says as whom), the PoC reads what the build left."""
    toml = f"""\
writable = ["{out}"]

[checks.build]
run = "echo built > '{out}/bin' && test \\"$(stat -c %u '{out}/bin')\\" = \\"$(id -u)\\" && echo ok"

[checks.pocs]
run = "grep -q built '{out}/bin'"
"""
    return write_task(root / "task", toml)


def _grade(run_cli: RunCli, task: Path, tmp_path: Path, *flags: str) -> dict[str, object]:
    logs = tmp_path / "logs"
    done = run_cli("grade", "--task", str(task), "--patch", os.devnull, "--logs", str(logs),
                   "--quiet", *flags, env=clean_env(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (logs / "build-0.log").read_text() == "ok\n"
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("flags", [[], ["--no-isolation"]], ids=["confined", "unconfined"])
def test_a_missing_folder_is_made_for_the_cases_and_removed(
    run_cli: RunCli, tmp_path: Path, flags: list[str]
) -> None:
    out = tmp_path / "image" / "out"
    _grade(run_cli, _task(tmp_path, out), tmp_path, *flags)
    assert not out.exists()


def test_an_empty_folder_is_handed_over_and_given_back(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir(mode=0o750)
    os.chmod(out, 0o750)
    before = os.stat(out)
    _grade(run_cli, _task(tmp_path, out), tmp_path)
    after = os.stat(out)
    assert list(out.iterdir()) == []
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (
        before.st_uid, before.st_gid, 0o750,
    )  # fmt: skip


def test_a_folder_holding_anyone_elses_files_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a non-root daemon's cases run as itself: its own files are its cases'")
    out = tmp_path / "out"
    out.mkdir()
    (out / "fuzzer").write_text("the image's own build\n")
    task = _task(tmp_path, out)
    done = run_cli("grade", "--task", str(task), "--patch", os.devnull,
                   env=clean_env(tmp_path))  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == (
        f"ssebench: error: writable: {out} holds files of others (uid 0: {out}/fuzzer); cases "
        "may write only a folder that is empty or theirs: empty it"
    )
    assert (out / "fuzzer").read_text() == "the image's own build\n"


# --- in a task's image ------------------------------------------------------------------------

PREBUILT = "ssebench-test-prebuilt-out:1"
PREBUILT_DOCKERFILE = f"""\
FROM {TASK_IMAGE}
RUN mkdir -p /out /src/tree && echo prebuilt > /out/fuzzer
"""


@pytest.mark.container
@pytest.mark.skipif(docker_missing() is not None, reason=f"in an image: {docker_missing()}")
def test_a_fresh_container_takes_the_images_folder_as_it_is(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """An OSS-Fuzz image ships its build in /out: a grade's fresh container is ours, so the
    cases take /out as the image has it; a live container (the agent's) refuses it in one
    line, as a machine does."""
    (tmp_path / "image").mkdir()
    (tmp_path / "image" / "Dockerfile").write_text(PREBUILT_DOCKERFILE)
    build_image(PREBUILT, tmp_path / "image")
    try:
        toml = (
            f'image = "{PREBUILT}"\nwritable = ["/out"]\n\n[checks.build]\n'
            'run = "grep -q prebuilt /out/fuzzer && echo rebuilt > /out/fuzzer"\n'
        )
        task = write_task(tmp_path / "task", toml, source="/src/tree")
        done = run_cli("grade", "--task", str(task), "--patch", os.devnull, "--backend",
                       "docker", "--quiet", timeout=300)  # fmt: skip
        assert json.loads(done.stdout)["resolved"] is True, done.stderr
        live = ssebench_in_image(PREBUILT, ["check", "--task", "/task"], [f"{task}:/task:ro"])
        assert (live.returncode, live.stdout) == (2, "")
        assert live.stderr.splitlines()[-1] == (
            "ssebench: error: writable: /out holds files of others (uid 0: /out/fuzzer); cases "
            "may write only a folder that is empty or theirs: empty it"
        )
    finally:
        remove_image(PREBUILT)
