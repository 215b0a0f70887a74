"""`grade --backend docker` as an evaluator runs it, against `--backend local` on the same
predictions: both examples' gold, partial, empty and non-applying patches, every field of every
verdict but the timings, the same files; the container as promised (no network, default seccomp,
the task folder read-only, no git, Landlock inside); a container that never outlives its grade;
and the errors of a run in Docker, one line each.

It needs Docker and the image `scripts/container.sh` builds (CI builds it); without them it is
skipped, and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ssebench.evaluate.backends.bundle import ensure_bundle, host_suffix
from ssebench.testing import task_toml
from ssebench.testing.images import (
    TASK_IMAGE,
    containers_with,
    docker_missing,
    ssebench_in_image,
    with_image,
)
from ssebench.testing.servers import ssebench_argv, start_child
from ssebench.testing.waiting import wait_for

from .rigtasks import C_RIGS, patch_of
from .runs import RunCli, graded, untimed
from .test_batch import results
from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES

MISSING = docker_missing()
pytestmark = [
    pytest.mark.container,
    pytest.mark.timeout(900),
    pytest.mark.skipif(MISSING is not None, reason=f"--backend docker: {MISSING}"),
]
NOT_APPLYING = "--- a/nope.c\n+++ b/nope.c\n@@ -1 +1 @@\n-x\n+y\n"
ADD_FILE = "--- /dev/null\n+++ b/applied.txt\n@@ -0,0 +1 @@\n+patched on the host\n"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tasks")
    for name in ("c-rle", "py-config"):
        shutil.copytree(EXAMPLES / name, root / name, ignore=BUILD_OUTPUTS)
        with_image(root / name)
    return root


def predictions(tasks: Path, path: Path) -> Path:
    lines = []
    for task in ("c-rle", "py-config"):
        fix, partial = ((tasks / task / n).read_text() for n in ("fix.patch", "partial.patch"))
        for model, patch in [("gold", fix), ("partial", partial), ("empty", ""),
                             ("bad", NOT_APPLYING)]:  # fmt: skip
            lines.append(json.dumps({"task": task, "model": model, "patch": patch}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_rig_is_put_back_and_flagged_in_the_image_as_here(
    run_cli: RunCli, tasks: Path, tmp_path: Path
) -> None:
    """The image grades the copy put back on the host: the same verdict, reverted and signals."""
    rig = C_RIGS["sanitizer off in the Makefile"]
    patch = patch_of(tasks / "c-rle", rig, tmp_path / "rig.diff")
    found = {}
    for backend in ("local", "docker"):
        args = ["--task", str(tasks / "c-rle"), "--patch", str(patch), "--backend", backend]
        done = run_cli("grade", *args, "--quiet", timeout=600)
        found[backend] = untimed(json.loads(done.stdout))
    assert found["docker"] == found["local"]
    signals = [signal["kind"] for signal in found["local"]["signals"]]
    assert (found["local"]["resolved"], found["local"]["protected"], signals) == (
        False, {"reverted": ["Makefile"]}, ["protected-edit", "sanitizer-off"],
    )  # fmt: skip


def test_both_backends_agree_on_every_example_verdict(
    run_cli: RunCli, tasks: Path, tmp_path: Path
) -> None:
    preds = predictions(tasks, tmp_path / "predictions.jsonl")
    local = graded(run_cli, tasks, preds, tmp_path / "local", "local")
    docker = graded(run_cli, tasks, preds, tmp_path / "docker", "docker")
    assert docker == local
    assert results(tmp_path / "docker") == {  # an empty patch is not graded in either
        f"{model}/{task}": model == "gold"
        for task in ("c-rle", "py-config")
        for model in ("gold", "partial", "bad")
    }
    assert local["summary"]["errors"] == 0
    assert local["summary"]["empty_patch_ids"] == ["empty/c-rle", "empty/py-config"]
    bad = local["bad/c-rle"]["result"]
    applied = {"applied": False, "error": "nope.c: No such file or directory", "dropped": []}
    assert bad == {"resolved": False, "reason": "patch-does-not-apply", "patch": applied,
                   "protected": {"reverted": []}, "signals": [], "checks": [],
                   "agent_run": {"test_patch_calls": None, "cost": None, "tokens": None,
                                 "duration_s": None}}  # fmt: skip
    partial = local["partial/py-config"]["result"]["checks"][1]
    assert (partial["status"], [c["passed"] for c in partial["cases"]]) == ("failed", [True, False])
    grade_log = (tmp_path / "docker" / "gold" / "c-rle" / "grade.log").read_text()
    assert grade_log.startswith("ssebench: isolation: landlock (ABI ")
    assert containers_with(tasks / "c-rle") == []


def test_one_patch_graded_in_its_image_prints_the_same_json(
    run_cli: RunCli, tasks: Path, tmp_path: Path
) -> None:
    task, patch = tasks / "c-rle", tasks / "c-rle" / "partial.patch"
    answers = []
    for backend in ("local", "docker"):
        logs = tmp_path / backend
        done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--backend", backend,
                       "--logs", str(logs), "--quiet")  # fmt: skip
        assert done.returncode == 1, done.stderr
        answers.append(untimed(json.loads(done.stdout)))
        assert sorted(p.name for p in logs.iterdir()) == [
            "build-0.log", "functional-0.log", "intent-0.log", "pocs-0.log", "pocs-1.log",
        ]  # fmt: skip
    assert answers[0] == answers[1]


# What a build sees of its container when nothing but the container confines it.
PROBE = (
    "ls /sys/class/net; grep ^Seccomp: /proc/self/status; id -u; "
    "d=$SSE_TASK_DIR; touch $d/planted 2>&1 | sed 's/.*: //'; command -v git || echo no git; "
    "cat applied.txt"
)


def test_the_container_is_what_the_grade_promises(run_cli: RunCli, tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text(f'image = "{TASK_IMAGE}"\n' + task_toml({"build": PROBE}))
    patch = tmp_path / "p.diff"
    patch.write_text("--- /dev/null\n+++ b/applied.txt\n@@ -0,0 +1 @@\n+patched on the host\n")
    logs = tmp_path / "logs"
    done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--backend", "docker",
                   "--no-isolation", "--logs", str(logs))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (logs / "build-0.log").read_text() == (
        "lo\nSeccomp:\t2\n0\nRead-only file system\nno git\npatched on the host\n"
    )
    assert sorted(p.name for p in task.rglob("*")) == ["src", "task.toml"]


def test_relative_paths_are_taken_from_the_working_folder(tmp_path: Path) -> None:
    """Docker mounts absolute paths only: a relative --out or --logs was an error each."""
    task = tmp_path / "tasks" / "t"
    (task / "src").mkdir(parents=True)
    (task / "task.toml").write_text(
        f'image = "{TASK_IMAGE}"\n' + task_toml({"build": "cat applied.txt"})
    )
    (tmp_path / "p.jsonl").write_text(json.dumps({"task": "t", "model": "m", "patch": ADD_FILE}))
    (tmp_path / "p.diff").write_text(ADD_FILE)
    for args, logs in [
        (["--tasks", "tasks", "--predictions", "p.jsonl", "--out", "out"], "out/m/t/logs"),
        (["--task", "tasks/t", "--patch", "p.diff", "--logs", "logs"], "logs"),
    ]:
        argv = ssebench_argv("grade", *args, "--backend", "docker")
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / logs / "build-0.log").read_text() == "patched on the host\n"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_container_never_outlives_its_grade(tmp_path: Path, sig: signal.Signals) -> None:
    task, tmpdir = tmp_path / "task", tmp_path / "tmpdir"
    (task / "src").mkdir(parents=True)
    tmpdir.mkdir()
    (task / "task.toml").write_text(f'image = "{TASK_IMAGE}"\n' + task_toml({"build": "sleep 120"}))
    argv = ssebench_argv("grade", "--task", str(task), "--patch", os.devnull, "--backend", "docker")
    proc = start_child(argv, env={**os.environ, "TMPDIR": str(tmpdir)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    wait_for(lambda: containers_with(task), 120, "the grade's container", 0.2, alive=proc)
    time.sleep(1)  # the build has started
    proc.send_signal(sig)
    proc.wait(30)
    assert proc.returncode == (-9 if sig == signal.SIGKILL else 130)
    stopped = time.monotonic()
    wait_for(lambda: not containers_with(task), 10, "the container gone with its grade", 0.2)
    wait_for(  # the guard removes a killed grade's copy
        lambda: not list(tmpdir.iterdir()),
        stopped + 10 - time.monotonic(),
        lambda: f"an empty TMPDIR (left: {list(tmpdir.rglob('*'))})",
        0.2,
    )


def test_what_cannot_be_graded_in_docker_is_an_error_line_each(
    run_cli: RunCli, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks"
    for name, image in [("plain", None), ("gone", "ssebench-no-such-image:0"), ("ok", TASK_IMAGE)]:
        (tasks / name / "src").mkdir(parents=True)
        head = f'image = "{image}"\n' if image else ""
        (tasks / name / "task.toml").write_text(head + task_toml({"build": "true"}))
    preds = tmp_path / "p.jsonl"
    lines = [json.dumps({"task": name, "patch": ADD_FILE}) for name in ("gone", "ok", "plain")]
    preds.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    done = run_cli("grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out),
                   "--backend", "docker")  # fmt: skip
    assert done.returncode == 1, done.stderr
    errors = {e["task"]: e["error"] for e in json.loads(done.stdout)["error_list"]}
    assert errors == {
        "plain": f"exit status 2: {tasks / 'plain' / 'task.toml'}: names no image; --backend "
        'docker grades in the task\'s image (image = "NAME" in task.toml)',
        "gone": "exit status 2: --backend docker: no image 'ssebench-no-such-image:0' on this "
        "machine (ssebench pulls nothing: build or load it first)",
    }
    assert json.loads(done.stdout)["resolved_ids"] == ["default/ok"]


OTHER_PYTHON = "ssebench-py:trixie"  # Debian 13: python3 3.13 and nothing else


@pytest.mark.skipif(docker_missing(OTHER_PYTHON) is not None, reason=f"no image {OTHER_PYTHON}")
def test_an_image_of_another_python_grades_alike(run_cli: RunCli, tmp_path: Path) -> None:
    """Its compiled part is fetched once (from the package index) into a cache of its own."""
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "src" / "state.txt").write_text("bug\n")
    checks = {"build": "grep -q fixed state.txt", "functional": "test -s state.txt"}
    (task / "task.toml").write_text(f'image = "{OTHER_PYTHON}"\n' + task_toml(checks))
    patch = tmp_path / "fix.diff"
    patch.write_text("--- a/state.txt\n+++ b/state.txt\n@@ -1 +1 @@\n-bug\n+fixed\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    answers = []
    for backend in ("local", "docker", "docker"):
        done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--backend", backend,
                       env=env, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr
        answers.append(untimed(json.loads(done.stdout)))
    assert answers[0] == answers[1] == answers[2]
    assert [p.name for p in (tmp_path / "cache/ssebench/bundles").glob("*/abi/*")] == sorted(
        ["cpython-311-x86_64-linux-gnu.so", "cpython-313-x86_64-linux-gnu.so"]
    )
    # Where no index answers, that is one line naming the way out.
    env = {**env, "XDG_CACHE_HOME": str(tmp_path / "cache2"), "PIP_INDEX_URL": "http://127.0.0.1:9/",
           "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_FIND_LINKS": ""}  # fmt: skip
    done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--backend", "docker",
                   env=env, timeout=600)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1), done.stderr
    host, (name, version) = host_suffix().strip("."), ensure_bundle().compiled[0]
    python = done.stderr.split(" is ", 1)[1].split(",", 1)[0]
    assert python.startswith("3.13.")
    assert done.stderr == (
        f"ssebench: error: --backend docker: the python3 of {OTHER_PYTHON} is {python}, and "
        f"ssebench's {name} {version} is built for this machine's ({host}); pip could not "
        f"fetch one for it (No matching distribution found for {name}=={version}): use an "
        "image with this machine's Python, or a package index\n"
    )


def test_a_task_container_makes_the_prediction_that_grades_in_docker(
    run_cli: RunCli, tasks: Path, tmp_path: Path
) -> None:
    """The agent's side in the task's own image (no git, no ssebench installed): `ssebench
    run --prediction-out` started through boot.py, the agent's change graded in Docker."""
    agent, out = tmp_path / "agent", tmp_path / "out"
    shutil.copytree(EXAMPLES / "c-rle", agent, ignore=BUILD_OUTPUTS)
    out.mkdir()
    work = "cd /task/src && patch -s -p1 < ../fix.patch && make -s >/dev/null"
    done = ssebench_in_image(
        TASK_IMAGE,
        ["run", "--task", "/task", "--prediction-out", "/out/p.jsonl", "--model", "in-docker",
         "--task-id", "c-rle", "--", "bash", "-c", work],
        [f"{agent}:/task", f"{out}:/out"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    graded = run_cli("grade", "--tasks", str(tasks), "--predictions", str(out / "p.jsonl"),
                     "--out", str(tmp_path / "graded"), "--backend", "docker")  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["resolved_ids"] == ["in-docker/c-rle"]
