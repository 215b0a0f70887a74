"""A task's `env` names folders beside its tree: `$SSE_TASK_DIR` and `$SSE_SOURCE_DIR` expand,
in place and in a grading copy alike, under the default isolation. The task is a Node project's
shape (a node_modules folder in the task folder, found through NODE_PATH), its commands bash."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.testing import task_toml
from ssebench.testing.servers import clean_env

pytestmark = pytest.mark.timeout(120)

RunCli = Callable[..., subprocess.CompletedProcess[str]]
BUILD = (
    'test "$(cat "$NODE_PATH/left-pad/index.js")" = "module.exports = 1" && '
    'test "$OUT" = "$SSE_SOURCE_DIR/out" && test "$(pwd)" = "$SSE_SOURCE_DIR" && '
    "test \"$LITERAL\" = '$HOME' && echo built"
)


@pytest.fixture
def node_task(tmp_path: Path) -> Path:
    task = tmp_path / "node-task"
    (task / "src").mkdir(parents=True)
    (task / "node_modules" / "left-pad").mkdir(parents=True)
    (task / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    env = {
        "NODE_PATH": "$SSE_TASK_DIR/node_modules",
        "OUT": "${SSE_SOURCE_DIR}/out",
        "LITERAL": "$HOME",
    }
    toml = task_toml({"build": BUILD}, readable=["node_modules"], env=env)
    (task / "task.toml").write_text(toml)
    return task


def test_env_paths_reach_the_case_in_place(
    run_cli: RunCli, node_task: Path, tmp_path: Path
) -> None:
    done = run_cli("check", "--task", str(node_task), "--difficulty", "3", "--quiet",
                   env=clean_env(tmp_path))  # fmt: skip
    assert done.stdout.startswith("test_patch result: every check that ran passed."), done.stdout


def test_env_paths_reach_the_case_in_a_grading_copy(
    run_cli: RunCli, node_task: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    done = run_cli("grade", "--task", str(node_task), "--patch", "/dev/null", "--logs",
                   str(logs), "--quiet", env=clean_env(tmp_path))  # fmt: skip
    assert json.loads(done.stdout)["checks"][0]["status"] == "passed", done.stderr
    assert (logs / "build-0.log").read_text() == "built\n"
