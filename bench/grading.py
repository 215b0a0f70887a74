"""Grading a benchmark run: predictions per minute, and the scratch copy of a source tree.

Throughput: the same predictions (the two example tasks, the C one with AddressSanitizer; the
reference fix, the partial fix, the tree as shipped) graded three ways in the same run: by a shell
loop running `ssebench grade --task --patch` one after another (the baseline), and by
`ssebench grade --tasks --predictions --out` with -j 1 and with -j 2. Each run starts from an
empty output folder; rounds rotate which way goes first. All three must agree on every verdict.

Copy: a tree of 10,000 files (100 folders, 100 B to 8 KiB each) copied by the grade's
`copy_tree` against `cp -a` of the same tree, and `shutil.copytree` for reference.
Targets: -j 1 at least 0.9x the loop's rate; the copy within 1.2x of `cp -a`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from _common import AS_SHIPPED, machine, median, parser, run, scratch, table, verdict

from ssebench.core.stopping import SSEBENCH
from ssebench.daemon.scratch import copy_tree

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RATE_TARGET = 0.9
COPY_TARGET = 1.2


def make_tasks(root: Path) -> Path:
    tasks = root / "tasks"
    for name in ("c-rle", "py-config"):
        shutil.copytree(EXAMPLES / name, tasks / name, ignore=shutil.ignore_patterns("rle", "*.o"))
    return tasks


def write_predictions(tasks: Path, count: int, path: Path) -> list[dict[str, str]]:
    patches = [
        ("c-rle", (tasks / "c-rle" / "fix.patch").read_text()),
        ("py-config", (tasks / "py-config" / "fix.patch").read_text()),
        ("c-rle", (tasks / "c-rle" / "partial.patch").read_text()),
        ("py-config", AS_SHIPPED),
    ]
    rows = [
        {"task": patches[i % 4][0], "patch": patches[i % 4][1], "model": f"m{i}"}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def shell_loop(tasks: Path, rows: list[dict[str, str]], out: Path) -> Callable[[], float]:
    """The baseline: one `ssebench grade --task --patch` after another, from a bash script."""
    out.mkdir()
    lines = []
    for row in rows:
        patch = out / f"{row['model']}.diff"
        patch.write_text(row["patch"])
        args = ["grade", "--task", str(tasks / row["task"]), "--patch", str(patch), "--quiet"]
        lines.append(f"{shlex.join([*SSEBENCH, *args])} > {out / row['model']}.json || true")
    script = out / "loop.sh"
    script.write_text("\n".join(lines) + "\n")

    def loop() -> float:
        for old in out.glob("*.json"):
            old.unlink()
        started = time.perf_counter()
        subprocess.run(["bash", str(script)], check=True, capture_output=True)
        return time.perf_counter() - started

    return loop


def batch(tasks: Path, predictions: Path, out: Path, jobs: int) -> Callable[[], float]:
    args = ["grade", "--tasks", str(tasks), "--predictions", str(predictions), "--out", str(out)]

    def graded() -> float:
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        subprocess.run([*SSEBENCH, *args, "-j", str(jobs)], capture_output=True, check=False)
        return time.perf_counter() - started

    return graded


def verdicts(rows: list[dict[str, str]], loop_out: Path, outs: list[Path]) -> None:
    """The three ways agree on every verdict (the loop's JSON against each result.json)."""
    for row in rows:
        expected = json.loads((loop_out / f"{row['model']}.json").read_text())["resolved"]
        for out in outs:
            result = json.loads((out / row["model"] / row["task"] / "result.json").read_text())
            assert result["resolved"] == expected, (row["model"], out)


def throughput(tmp: Path, count: int, rounds: int) -> dict[str, float]:
    tasks = make_tasks(tmp)
    predictions = tmp / "predictions.jsonl"
    rows = write_predictions(tasks, count, predictions)
    ways = {
        "loop": shell_loop(tasks, rows, tmp / "loop"),
        "-j 1": batch(tasks, predictions, tmp / "j1", 1),
        "-j 2": batch(tasks, predictions, tmp / "j2", 2),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for i in range(rounds):
        order = names[i % 3 :] + names[: i % 3]
        for name in order:
            seconds[name].append(ways[name]())
        print(
            f"  round {i + 1}/{rounds}: " + ", ".join(f"{n} {seconds[n][-1]:.1f} s" for n in names)
        )
    verdicts(rows, tmp / "loop", [tmp / "j1", tmp / "j2"])
    return {name: count / median(times) * 60 for name, times in seconds.items()}


def make_tree(root: Path, files: int) -> Path:
    rnd = random.Random(0)
    for i in range(files):
        folder = root / f"d{i % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.c").write_bytes(rnd.randbytes(rnd.randint(100, 8192)))
    return root


def copy_times(tmp: Path, files: int, rounds: int) -> dict[str, float]:
    tree = make_tree(tmp / "tree", files)
    ways: dict[str, Callable[[Path], object]] = {
        "copy_tree (the grade's)": lambda dst: copy_tree(tree, dst),
        "cp -a": lambda dst: subprocess.run(["cp", "-a", str(tree), str(dst)], check=True),
        "shutil.copytree": lambda dst: shutil.copytree(tree, dst, symlinks=True),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for i in range(rounds):
        for j, name in enumerate(names[i % 3 :] + names[: i % 3]):
            # A fresh folder each time, all removed at the end: on this machine's disk, removing
            # 10,000 files slows the next copy several times over, whichever way copies.
            destination = tmp / f"copy-{i}-{j}"
            os.sync()  # the last copy's writeback is not this one's cost
            started = time.perf_counter()
            ways[name](destination)
            seconds[name].append(time.perf_counter() - started)
            assert sum(1 for _ in destination.rglob("*.c")) == files
    return {name: median(times) for name, times in seconds.items()}


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    count = 2 if smoke else args.predictions  # type: ignore[attr-defined]
    rounds = 1 if smoke else args.rounds  # type: ignore[attr-defined]
    files = 1000 if smoke else 10_000
    with scratch("ssebench-bench-grading-") as tmp:
        rates = throughput(tmp, count, rounds)
        copies = copy_times(tmp, files, 1 if smoke else 5)
    rate_ratio = rates["-j 1"] / rates["loop"]
    copy_ratio = copies["copy_tree (the grade's)"] / copies["cp -a"]
    ok_rate, ok_copy = rate_ratio >= RATE_TARGET, copy_ratio <= COPY_TARGET
    rate_target = f"target >= {RATE_TARGET}: {verdict(ok_rate, smoke)}"
    copy_target = f"target <= {COPY_TARGET}: {verdict(ok_copy, smoke)}"
    rows = [
        ("predictions, rounds", f"{count}, {rounds}", ""),
        *[(f"predictions/min, {name}", f"{rate:.1f}", "") for name, rate in rates.items()],
        ("-j 1 / loop", f"{rate_ratio:.2f}", rate_target),
        ("-j 2 / loop", f"{rates['-j 2'] / rates['loop']:.2f}", ""),
        (f"copy of {files:,} files", "", ""),
        *[(f"  {name}", f"{s:.3f} s", "") for name, s in copies.items()],
        ("  copy_tree / cp -a", f"{copy_ratio:.2f}", copy_target),
        ("  shutil.copytree / cp -a", f"{copies['shutil.copytree'] / copies['cp -a']:.2f}", ""),
    ]
    print(f"machine: {machine()}")
    print(table("grading: a benchmark run's predictions, and the scratch copy", rows))
    return {"rates": rates, "copies": copies, "met": ok_rate and ok_copy}


def cli() -> argparse.ArgumentParser:
    p = parser(__doc__)
    p.add_argument("--predictions", type=int, default=8, help="predictions per run")
    p.add_argument("--rounds", type=int, default=3)
    return p


if __name__ == "__main__":
    run(main, cli())
