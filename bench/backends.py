"""Grading past one machine: `--backend docker` against local, and a Slurm array against `-j 2`.

Per prediction: `ssebench grade --task --patch` of the C example's fix, in its image
(ssebench-task:bookworm) and on this machine, in alternating pairs after one warm-up of each;
what the container adds is the difference of the medians (target: at most 1 s). The first
grade of all, with an empty cache (the copy of ssebench made, the image asked for its Python),
is timed once apart. Throughput: the same predictions (the C example's fix, partial fix and the
tree as shipped, in turn) graded by `grade --tasks -j 2`, both backends, from an empty output
folder each round, every verdict compared. Slurm: those predictions through
scripts/slurm-grade.sh on a one-node cluster of this machine (2 shards, -j 1 each, the merge
after) against `grade --tasks -j 2`, wall time from the command's start to its summary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from _common import (
    AS_SHIPPED,
    alternate,
    machine,
    median,
    parser,
    run,
    scratch,
    table,
    verdict,
)

from ssebench.core.stopping import SSEBENCH
from ssebench.testing.images import docker_missing, with_image
from ssebench.testing.slurm import one_node_cluster, slurm_missing

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm-grade.sh"
OVERHEAD_TARGET = 1.0


def make_tasks(root: Path) -> Path:
    tasks = root / "tasks"
    shutil.copytree(
        EXAMPLES / "c-rle", tasks / "c-rle", ignore=shutil.ignore_patterns("rle", "*.o")
    )
    with_image(tasks / "c-rle")
    return tasks


def write_predictions(tasks: Path, count: int, path: Path) -> None:
    patches = [(tasks / "c-rle" / name).read_text() for name in ("fix.patch", "partial.patch")]
    patches.append(AS_SHIPPED)
    rows = [{"task": "c-rle", "patch": patches[i % 3], "model": f"m{i}"} for i in range(count)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def one_grade(tasks: Path, backend: str, env: dict[str, str]) -> Callable[[], float]:
    task = tasks / "c-rle"
    argv = [*SSEBENCH, "grade", "--task", str(task), "--patch", str(task / "fix.patch")]

    def graded() -> float:
        started = time.perf_counter()
        done = subprocess.run([*argv, "--backend", backend, "--quiet"], env=env,
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return time.perf_counter() - started

    return graded


def a_run(tasks: Path, preds: Path, out: Path, *flags: str, env: dict[str, str]) -> float:
    """Seconds from start to summary of one whole run (an empty output folder first)."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    argv = ["grade", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out)]
    done = subprocess.run([*SSEBENCH, *argv, *flags], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - started


def verdicts(out: Path) -> dict[str, object]:
    found: dict[str, object] = {}
    for path in sorted(out.glob("*/*/result.json")):
        result = json.loads(path.read_text())
        cases = [[c["passed"] for c in check["cases"]] for check in result["checks"]]
        found[path.parent.relative_to(out).as_posix()] = (result["resolved"], cases)
    return found


def docker_figures(tmp: Path, pairs: int, count: int, rounds: int) -> list[tuple[str, str, str]]:
    tasks = make_tasks(tmp)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    first = one_grade(tasks, "docker", env)()
    one_grade(tasks, "local", env)()  # warm-up: the page cache, the build tools
    dock, local = alternate(pairs, one_grade(tasks, "docker", env), one_grade(tasks, "local", env))
    preds = tmp / "predictions.jsonl"
    write_predictions(tasks, count, preds)
    runs: dict[str, list[float]] = {"docker": [], "local": []}
    for i in range(rounds):
        for backend in ["docker", "local"][i % 2 :] + ["docker", "local"][: i % 2]:
            flags = ["-j", "2", "--backend", backend]
            runs[backend].append(a_run(tasks, preds, tmp / backend, *flags, env=env))
        print(
            f"  round {i + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in runs.items())
        )
    assert verdicts(tmp / "docker") == verdicts(tmp / "local")
    added = median(dock) - median(local)
    rate = {name: count / median(times) * 60 for name, times in runs.items()}
    return [
        ("pairs; predictions, rounds", f"{pairs}; {count}, {rounds}", ""),
        ("first docker grade, empty cache", f"{first:.2f} s", ""),
        ("a prediction, docker, median", f"{median(dock):.2f} s", ""),
        ("a prediction, local, median", f"{median(local):.2f} s", ""),
        ("the container adds", f"{added:.2f} s", f"target <= {OVERHEAD_TARGET} s"),
        ("predictions/min -j 2, docker", f"{rate['docker']:.1f}", ""),
        ("predictions/min -j 2, local", f"{rate['local']:.1f}", ""),
        ("-j 2 rate, docker / local", f"{rate['docker'] / rate['local']:.2f}", ""),
    ]


def slurm_figures(tmp: Path, count: int) -> list[tuple[str, str, str]]:
    tasks = make_tasks(tmp)
    preds = tmp / "predictions.jsonl"
    write_predictions(tasks, count, preds)
    local = a_run(tasks, preds, tmp / "local", "-j", "2", env=dict(os.environ))
    with one_node_cluster(tmp / "cluster") as cluster:
        env = {**cluster.env, "SSEBENCH": str(Path(SSEBENCH[0]).parent / "ssebench")}
        started = time.perf_counter()
        done = subprocess.run(["bash", str(SCRIPT), "2", str(tasks), str(preds), str(tmp / "slurm"),
                               "-j", "1"], env=env, capture_output=True, text=True)  # fmt: skip
        wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert verdicts(tmp / "slurm") == verdicts(tmp / "local")
    array = re.search(r"ended after (\d+) s", done.stderr)
    return [
        ("predictions", f"{count}", ""),
        ("local -j 2", f"{local:.1f} s", ""),
        ("slurm, 2 shards -j 1, then merge", f"{wall:.1f} s", ""),
        ("  of which the array job (sbatch --wait)", f"{array[1] if array else '?'} s", ""),
        ("slurm / local -j 2", f"{wall / local:.2f}", ""),
    ]


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    pairs = 1 if smoke else args.pairs  # type: ignore[attr-defined]
    count = 2 if smoke else args.predictions  # type: ignore[attr-defined]
    rounds = 1 if smoke else args.rounds  # type: ignore[attr-defined]
    met = False
    print(f"machine: {machine()}")
    if (why := docker_missing()) is None:
        with scratch("ssebench-bench-docker-") as tmp:
            rows = docker_figures(tmp, pairs, count, rounds)
        met = float(rows[4][1].removesuffix(" s")) <= OVERHEAD_TARGET
        rows[4] = (*rows[4][:2], f"{rows[4][2]}: {verdict(met, smoke)}")
        print(table("--backend docker against local, the C example", rows))
    else:
        print(f"--backend docker: not measured: {why}")
    if (why := slurm_missing()) is None:
        with scratch("ssebench-bench-slurm-") as tmp:
            print(table("a Slurm array against -j 2 on this machine", slurm_figures(tmp, count)))
    else:
        print(f"slurm: not measured: {why}")
    return {"met": met}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--predictions", type=int, default=6, help="predictions per run")
    p.add_argument("--rounds", type=int, default=3)
    return p


if __name__ == "__main__":
    run(main, cli())
