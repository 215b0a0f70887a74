"""Kubernetes manifests for a benchmark run whose tasks each have their own image: one Indexed Job
per image, each index grading one prediction in that image, then a merge Job.

    python scripts/k8s-jobs.py TASKS PREDICTIONS [--ssebench-image IMAGE] [--claim NAME]
        [--data /data] [--parallelism N] > jobs.json
    kubectl apply -f jobs.json                      # the grading Jobs and their NetworkPolicy
    kubectl wait --for=condition=complete --timeout=24h job -l ssebench-run=grade
    kubectl apply -f merge.json                     # written beside, with --merge FILE

TASKS and PREDICTIONS are read here and must also lie on the volume (claim NAME) at DATA/tasks
and DATA/predictions.jsonl; results go to DATA/out, as `grade --tasks` writes them. Index i of
the Job for an image grades the prediction numbered SHARDS[i] as the one shard of TOTAL it is
(`--shard K/TOTAL`), so every pod writes its own summary-K-of-TOTAL.json and none collide. Why
per image: a pod runs in the task's own image (its toolchain), so one Job per image keeps the
Jobs few (not one per prediction) while every pod still grades one prediction, retried alone.
ssebench comes in through an init container of IMAGE that writes its copy into an emptyDir
(`python -m ssebench.evaluate.backends.export`); the task images need python3 of the same version.
Prints JSON (kubectl takes it as it takes YAML); exit 2, one line, for a task without an image.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from ssebench.core.cli.requests import Basis
from ssebench.core.cli.root import Root
from ssebench.core.errors import ConfigError
from ssebench.daemon.task import load_task
from ssebench.evaluate.predictions import Prediction, read_predictions

BOOT = "/opt/ssebench/site/ssebench/evaluate/backends/boot.py"
# Index i grades the i-th of SHARDS (prediction numbers, from 0) as the one shard of TOTAL it is;
# git comes from the copy of ssebench where the image has none (patches are applied with it).
GRADE = (
    'export PATH="$PATH:/opt/ssebench/bin"; set -- $SHARDS; shift "$JOB_COMPLETION_INDEX"; '
    'exec python3 -I {boot} 0:0 "" -- grade --tasks {data}/tasks --predictions '
    '{data}/predictions.jsonl --out {data}/out --shard "$1/$TOTAL"'
)


def by_image(tasks: Path, predictions: Path) -> tuple[dict[str, list[int]], int]:
    """Each image's prediction numbers, and how many predictions (bad lines too) the file has."""
    items = read_predictions(predictions)
    checks = Root(Basis()).registry.checks
    images: dict[str, list[int]] = defaultdict(list)
    for item in items:
        if isinstance(item, Prediction) and (tasks / item.task).is_dir():
            task = load_task(tasks / item.task, checks)
            if task.image is None:
                raise ConfigError(f"{task.path}: names no image; each Job runs in its task's image")
            images[task.image].append(item.number)
    return dict(images), len(items)  # the rest are errors the merge reports, grading nothing


def data_mounts(data: str) -> list[dict[str, Any]]:
    """The tasks and the predictions read-only; only the results writable."""
    return [
        {"name": "data", "mountPath": f"{data}/tasks", "subPath": "tasks", "readOnly": True},
        {"name": "data", "mountPath": f"{data}/predictions.jsonl", "subPath": "predictions.jsonl",
         "readOnly": True},
        {"name": "data", "mountPath": f"{data}/out", "subPath": "out"},
    ]  # fmt: skip


def job(image: str, numbers: list[int], total: int, args: argparse.Namespace) -> dict[str, Any]:
    slug = re.sub(r"[^a-z0-9]+", "-", image.lower()).strip("-")[:30].strip("-")
    name = f"ssebench-grade-{slug}-{hashlib.sha256(image.encode()).hexdigest()[:6]}"
    grade = {
        "name": "grade",
        "image": image,
        "command": ["sh", "-c", GRADE.format(boot=BOOT, data=args.data)],
        "env": [{"name": "SHARDS", "value": " ".join(map(str, numbers))},
                {"name": "TOTAL", "value": str(total)}],
        "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "ssebench", "mountPath": "/opt/ssebench", "readOnly": True},
                         *data_mounts(args.data)],
    }  # fmt: skip
    bring = {
        "name": "ssebench",
        "image": args.ssebench_image,
        "command": ["python3", "-m", "ssebench.evaluate.backends.export", "/opt/ssebench"],
        "volumeMounts": [{"name": "ssebench", "mountPath": "/opt/ssebench"}],
    }
    pod = {
        "metadata": {"labels": {"ssebench-run": "grade"}},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [bring],
            "containers": [grade],
            "volumes": [{"name": "ssebench", "emptyDir": {}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": args.claim}}],
        },
    }  # fmt: skip
    spec = {"completionMode": "Indexed", "completions": len(numbers), "backoffLimitPerIndex": 2,
            "parallelism": min(args.parallelism, len(numbers)), "template": pod}  # fmt: skip
    meta = {"name": name, "labels": {"ssebench-run": "grade"}, "annotations": {"image": image}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def no_network() -> dict[str, Any]:
    """The grading pods reach nothing, as `docker run --network none` does."""
    spec = {"podSelector": {"matchLabels": {"ssebench-run": "grade"}},
            "policyTypes": ["Ingress", "Egress"]}  # fmt: skip
    meta = {"name": "ssebench-grade-no-network"}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
            "spec": spec}  # fmt: skip


def merge(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run's summary.json, once every grading Job is complete: it finds every
    prediction graded (bad lines and unknown tasks are errors, graded nowhere)."""
    data = args.data
    grade = {"name": "merge", "image": args.ssebench_image,
             "command": ["ssebench", "grade", "--tasks", f"{data}/tasks", "--predictions",
                         f"{data}/predictions.jsonl", "--out", f"{data}/out"],
             "volumeMounts": data_mounts(data)}  # fmt: skip
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": args.claim}}]
    pod = {"spec": {"restartPolicy": "Never", "containers": [grade], "volumes": volumes}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ssebench-merge"},
            "spec": {"backoffLimit": 0, "template": pod}}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("predictions", type=Path)
    parser.add_argument("--ssebench-image", default="registry.example.com/ssebench:0.1.0")
    parser.add_argument("--claim", default="ssebench-data")
    parser.add_argument("--data", default="/data")
    parser.add_argument("--parallelism", type=int, default=8)
    parser.add_argument("--merge", type=Path, help="also write the merge Job to this file")
    args = parser.parse_args()
    try:
        images, total = by_image(args.tasks, args.predictions)
    except ConfigError as exc:
        print(f"k8s-jobs: error: {exc}", file=sys.stderr)
        return 2
    items = [job(image, numbers, total, args) for image, numbers in sorted(images.items())]
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*items, no_network()]},
                     indent=2))  # fmt: skip
    if args.merge is not None:
        args.merge.write_text(json.dumps(merge(args), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
