"""A benchmark run through a real Slurm cluster: one node of Debian's slurmctld, slurmd and
munged, started by the test in a folder of its own and stopped after it. scripts/slurm-grade.sh
submits the run as an array job of three shards, waits, and merges; every verdict and the
summary equal those of a local `-j 2` run of the same predictions.

It needs those packages and root (.ci/run installs them); without them it is skipped, and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ssebench.testing.slurm import one_node_cluster, slurm_missing

from .runs import RunCli, graded, left_in, make_tasks, same_run
from .test_batch import predictions

MISSING = slurm_missing()
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.timeout(900),
    pytest.mark.skipif(MISSING is not None, reason=f"Slurm: {MISSING}"),
]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-grade.sh"
SHARDS = 3


def test_a_slurm_array_run_equals_a_local_run(run_cli: RunCli, tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path / "tasks")
    preds = predictions(tasks, tmp_path / "predictions.jsonl")
    local = graded(run_cli, tasks, preds, tmp_path / "local", "local", code=1)
    out = tmp_path / "slurm"
    with one_node_cluster(tmp_path / "cluster") as cluster:
        env = {**cluster.env, "SSEBENCH": str(Path(sys.executable).parent / "ssebench")}
        done = subprocess.run(
            ["bash", str(SCRIPT), str(SHARDS), str(tasks), str(preds), str(out)],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the file's bad lines are errors, as locally
    assert left_in(out) == local
    assert same_run(json.loads(done.stdout)) == local["summary"]
    # Every element graded its shard; the merge found everything done.
    logs = sorted(out.glob("slurm-*_*.log"))
    assert [log.name.rsplit("_", 1)[1] for log in logs] == [f"{i}.log" for i in range(SHARDS)]
    for i, log in enumerate(logs):
        assert log.read_text().splitlines()[-1].endswith(f"({out}/summary-{i}-of-{SHARDS}.json)")
    verdicts = [line for line in done.stderr.splitlines() if "resolved in" in line
                or "graded before" in line]  # fmt: skip
    assert verdicts and all(line.endswith("(graded before)") for line in verdicts), done.stderr


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT), "0", "a", "b", "c"], capture_output=True,
                          text=True, env={**os.environ, "SSEBENCH": "true"})  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"usage: {SCRIPT} N TASKS PREDICTIONS OUT [grade flags...]   (N shards, 1 or more)\n"
    )
