"""Kubernetes without a cluster (none is reachable from these machines): the manifests of
docs/evaluating.md are the ones scripts/k8s-jobs.py writes, and carry every field ssebench relies
on; and each index's container, run as its pod would run it (in Docker: the task's image, the
init container's copy of ssebench, the volume's three mounts, JOB_COMPLETION_INDEX), grades
exactly its prediction, the merge Job's command then finding every prediction graded."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ssebench.testing import task_toml
from ssebench.testing.images import TASK_IMAGE, docker_missing, with_image

from .runs import RunCli, graded, left_in
from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "k8s-jobs.py"
DOCS_IMAGE = "registry.example/tasks/c-rle:1"


def generate(tasks: Path, preds: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(tasks), str(preds), *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def run_files(root: Path, image: str) -> tuple[Path, Path]:
    """c-rle in `image`; five lines: c-rle thrice (numbers 0, 1, 4), a bad line, a lost task."""
    tasks = root / "tasks"
    shutil.copytree(EXAMPLES / "c-rle", tasks / "c-rle", ignore=BUILD_OUTPUTS)
    with_image(tasks / "c-rle", image)
    fix, partial = ((tasks / "c-rle" / name).read_text() for name in ("fix.patch", "partial.patch"))
    lines = [json.dumps({"task": "c-rle", "model": "gold", "patch": fix}),
             json.dumps({"task": "c-rle", "model": "partial", "patch": partial}),
             "{not json", json.dumps({"task": "gone", "patch": ""}),
             json.dumps({"task": "c-rle", "model": "empty", "patch": ""})]  # fmt: skip
    preds = root / "predictions.jsonl"
    preds.write_text("\n".join(lines) + "\n")
    return tasks, preds


def check_job(job: dict[str, Any]) -> None:
    """What ssebench relies on in a grading Job, whoever wrote it."""
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert spec["completionMode"] == "Indexed"
    (grade,) = pod["containers"]
    env = {e["name"]: e["value"] for e in grade["env"]}
    assert spec["completions"] == len(env["SHARDS"].split()) >= spec["parallelism"]
    assert grade["image"] == job["metadata"]["annotations"]["image"]
    assert pod["restartPolicy"] == "Never" and spec["backoffLimitPerIndex"] >= 1
    assert grade["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    command = " ".join(grade["command"])
    assert 'shift "$JOB_COMPLETION_INDEX"' in command and '--shard "$1/$TOTAL"' in command
    mounts = {m["mountPath"]: m for m in grade["volumeMounts"]}
    assert all(mounts[p].get("readOnly") for p in ("/opt/ssebench", "/data/tasks"))
    assert not mounts["/data/out"].get("readOnly")
    (init,) = pod["initContainers"]
    assert init["command"][1:] == ["-m", "ssebench.evaluate.backends.export", "/opt/ssebench"]
    assert job["metadata"]["labels"] == pod_labels(job) == {"ssebench-run": "grade"}


def documented() -> list[dict[str, Any]]:
    """Every manifest in the YAML blocks of docs/evaluating.md."""
    page = (ROOT / "docs" / "evaluating.md").read_text()
    return [doc for block in re.findall(r"```yaml\n(.*?)```", page, re.S)
            for doc in yaml.safe_load_all(block)]  # fmt: skip


def pod_labels(job: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = job["spec"]["template"]["metadata"]["labels"]
    return labels


def test_the_docs_manifests_are_the_scripts(tmp_path: Path) -> None:
    tasks, preds = run_files(tmp_path, DOCS_IMAGE)
    done = generate(tasks, preds)
    assert done.returncode == 0, done.stderr
    job, policy = json.loads(done.stdout)["items"]
    check_job(job)
    per_image = [d for d in documented() if d["metadata"]["name"].startswith("ssebench-grade-")]
    assert per_image == [job, policy]


def test_the_single_image_job_of_the_docs_shards_the_run() -> None:
    (job,) = [d for d in documented() if d["metadata"]["name"] == "ssebench-grade"]
    spec = job["spec"]
    (grade,) = spec["template"]["spec"]["containers"]
    assert (spec["completionMode"], spec["completions"]) == ("Indexed", 8)
    assert '--shard "$JOB_COMPLETION_INDEX/8"' in " ".join(grade["args"])


def test_a_task_without_an_image_stops_the_script(tmp_path: Path) -> None:
    tasks, preds = run_files(tmp_path, DOCS_IMAGE)
    (tasks / "c-rle" / "task.toml").write_text(task_toml({"build": "true"}))
    done = generate(tasks, preds)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"k8s-jobs: error: {tasks / 'c-rle' / 'task.toml'}: names no image; each Job runs in "
        "its task's image\n"
    )


@pytest.mark.container
@pytest.mark.timeout(900)
@pytest.mark.skipif(docker_missing() is not None, reason=f"Docker: {docker_missing()}")
def test_each_index_grades_its_prediction_as_its_pod_would(run_cli: RunCli, tmp_path: Path) -> None:
    tasks, preds = run_files(tmp_path, TASK_IMAGE)
    local = graded(run_cli, tasks, preds, tmp_path / "local", "local", code=1)
    merge_file, data, out = tmp_path / "merge.json", tmp_path / "data", tmp_path / "data" / "out"
    job, _ = json.loads(generate(tasks, preds, "--merge", str(merge_file)).stdout)["items"]
    # The init container's command, here; then the volume as the pods see it.
    bundle = tmp_path / "ssebench"
    init = job["spec"]["template"]["spec"]["initContainers"][0]["command"]
    subprocess.run([sys.executable, *init[1:3], str(bundle)], check=True, timeout=300)
    shutil.copytree(tasks, data / "tasks")
    shutil.copy(preds, data / "predictions.jsonl")
    out.mkdir()
    grade = job["spec"]["template"]["spec"]["containers"][0]
    env = [f"{e['name']}={e['value']}" for e in grade["env"]]
    mounts = [f"{bundle}:/opt/ssebench:ro", f"{data}/tasks:/data/tasks:ro", f"{out}:/data/out",
              f"{data}/predictions.jsonl:/data/predictions.jsonl:ro"]  # fmt: skip
    for index in range(job["spec"]["completions"]):
        flags = [f"--env={e}" for e in [*env, f"JOB_COMPLETION_INDEX={index}"]]
        flags += [*(f"--volume={m}" for m in mounts), f"--entrypoint={grade['command'][0]}"]
        done = subprocess.run(
            ["docker", "run", "--rm", "--network=none", *flags, grade["image"],
             *grade["command"][1:]],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.glob("summary-*.json")) == [
        "summary-0-of-5.json", "summary-1-of-5.json", "summary-4-of-5.json",
    ]  # fmt: skip
    merge = json.loads(merge_file.read_text())["spec"]["template"]["spec"]["containers"][0]
    paths = {"/data/tasks": tasks, "/data/predictions.jsonl": preds, "/data/out": out}
    argv = [str(paths.get(arg, arg)) for arg in merge["command"][1:]]
    done = run_cli(*argv)
    assert done.returncode == 1, done.stderr  # the bad line and the lost task, as locally
    assert "resolved in" not in done.stderr  # every verdict from its pod
    assert left_in(out) == local
    assert os.listdir(data / "tasks") == ["c-rle"]
