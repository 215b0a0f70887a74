"""`ssebench run --prediction-out`: an agent command edits and builds the task's tree, its
change becomes a prediction line, and `grade --tasks` grades that line: agent, prediction,
verdict, end to end. Build outputs stay out of the patch; a bad name stops `run` before the
agent starts; a failed agent still leaves its prediction."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from ssebench.testing.servers import clean_env, free_port, run_ssebench

from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES

pytestmark = pytest.mark.timeout(300)

# The agent: applies the example's fix, builds (make leaves rle, *.o and tests/test_rle, which
# the shipped .gitignore excludes), and adds a binary file of its own.
AGENT = (
    "cd {src} && patch -s -p1 < {fix} && make -s -j2 >/dev/null && "
    "printf 'seed\\0\\1\\2' > tests/seed.bin && exit {status}"
)


def run_agent(tmp: Path, task: Path, out: Path, *flags: str, status: int = 0) -> tuple[int, str]:
    command = AGENT.format(src=task / "src", fix=task / "fix.patch", status=status)
    ports = ["--port", str(free_port()), "--daemon-port", str(free_port())]
    done = run_ssebench("run", "--task", str(task), *ports, "--prediction-out", str(out), *flags,
                        "--", "bash", "-c", command, env=clean_env(tmp), timeout=240)  # fmt: skip
    return done.returncode, done.stderr


@pytest.fixture
def c_rle(tmp_path: Path) -> Path:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("c-rle needs a C compiler and make")
    shutil.copytree(EXAMPLES / "c-rle", tmp_path / "agent" / "c-rle", ignore=BUILD_OUTPUTS)
    shutil.copytree(EXAMPLES / "c-rle", tmp_path / "tasks" / "c-rle", ignore=BUILD_OUTPUTS)
    return tmp_path / "agent" / "c-rle"


def test_an_agents_change_becomes_a_prediction_that_grades(c_rle: Path, tmp_path: Path) -> None:
    out = tmp_path / "prediction.jsonl"
    code, stderr = run_agent(tmp_path, c_rle, out, "--model", "acme/agent-1", status=5)
    assert code == 5, stderr  # the agent's own status, and its prediction all the same
    assert (c_rle / "src" / "rle").is_file()  # the agent built in its tree
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    prediction = json.loads(lines[0])
    assert list(prediction) == ["task", "model", "patch", "test_patch_calls"]
    assert prediction["test_patch_calls"] == []  # it never called test_patch
    assert (prediction["task"], prediction["model"]) == ("c-rle", "acme/agent-1")
    patch = prediction["patch"]
    changed = [line.split(" b/")[1] for line in patch.splitlines() if line.startswith("diff --git")]
    assert changed == ["rle.c", "rle.h", "tests/seed.bin"]  # no build output
    assert "GIT binary patch" in patch
    done = run_ssebench("grade", "--tasks", str(tmp_path / "tasks"), "--predictions", str(out),
                        "--out", str(tmp_path / "graded"), timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["resolved_ids"], summary["errors"]) == (["acme/agent-1/c-rle"], 0)
    result = json.loads((tmp_path / "graded/acme__agent-1/c-rle/result.json").read_text())
    assert result["patch"] == {"applied": True, "error": None, "dropped": []}


def test_an_untouched_tree_is_an_empty_patch(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "src" / "a.txt").write_text("as shipped\n")
    (task / "task.toml").write_text('source = "src"\n[checks.build]\nrun = "true"\n')
    out = tmp_path / "p.jsonl"
    ports = ["--port", str(free_port()), "--daemon-port", str(free_port())]
    done = run_ssebench("run", "--task", str(task), *ports, "--prediction-out", str(out),
                        "--task-id", "t-1", "--", "true", env=clean_env(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (
        '{"task": "t-1", "model": "default", "patch": "", "test_patch_calls": []}\n'
    )


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (["--prediction-out", "{out}", "--model", ".."], "--prediction-out: model '..' cannot "
         "name a folder"),
        (["--prediction-out", "{out}", "--task-id", "a/b"], "--prediction-out: task id 'a/b' "
         "cannot name a task folder"),
        (["--model", "m"], "--model and --task-id name a prediction: use --prediction-out FILE"),
    ],
)  # fmt: skip
def test_a_bad_name_stops_run_before_the_agent(
    tmp_path: Path, flags: list[str], error: str
) -> None:
    """Before its ports too: with them held by another program, the name is what is refused."""
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text('source = "src"\n[checks.build]\nrun = "true"\n')
    marker = tmp_path / "agent-ran"
    flags = [flag.replace("{out}", str(tmp_path / "p.jsonl")) for flag in flags]
    with (
        socket.create_server(("127.0.0.1", 0)) as held,
        socket.create_server(("127.0.0.1", 0)) as daemon,
    ):
        ports = [
            "--port",
            str(held.getsockname()[1]),
            "--daemon-port",
            str(daemon.getsockname()[1]),
        ]
        done = run_ssebench("run", "--task", str(task), *ports, *flags, "--", "touch",
                            str(marker), env=clean_env(tmp_path))  # fmt: skip
    assert (done.returncode, done.stderr) == (2, f"ssebench: error: {error}\n")
    assert not marker.exists() and not (tmp_path / "p.jsonl").exists()


def test_prediction_out_needs_a_task(tmp_path: Path) -> None:
    done = run_ssebench("run", "--daemon-url", "http://127.0.0.1:9", "--prediction-out",
                        str(tmp_path / "p"), "--", "true", env=clean_env(tmp_path))  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2, "ssebench: error: --prediction-out records the change to a task's tree: use --task DIR\n"
    )  # fmt: skip
