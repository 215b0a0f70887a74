"""The runner copy against `rsync -a --delete` of the same tree, measured in the same run.

A tree of 20,000 files and 200 MB (smoke: 500 files, 5 MB), as a mid-sized C or Go project with
its vendored dependencies: the first copy (the daemon's start), a sync of an unchanged tree
(every call of an agent that changed nothing since the last), and a sync after one file
changed (the usual call). Each is timed against rsync doing the same to a copy of its own,
alternating which goes first, with the page cache warm for both. Targets (issue 22): the first
copy and an unchanged sync each at most 1.0 times rsync's. And what a call of an unchanged tree
costs in all (one call, one tree: the sync when it begins, the look at its end for whether the
agent changed the tree meanwhile), against the same rsync: target (issue 34) at most 1.25.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from _common import machine, parser, run, scratch, table, verdict

from ssebench.daemon.confine.user import own_user
from ssebench.daemon.runnercopy import RunnerCopy

TARGETS = {"first copy": 1.0, "unchanged sync": 1.0, "a call, unchanged: sync and look": 1.25}


def make_tree(root: Path, files: int, size: int) -> None:
    """`files` files of `size` bytes on average, 50 to a folder, 3 folders deep."""
    chunk = os.urandom(size * 2)
    for number in range(files):
        folder = root / f"d{number // 2500}" / f"e{number // 250}" / f"f{number // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        length = size // 2 + (number * 7919) % size
        (folder / f"file{number}.c").write_bytes(chunk[number % size : number % size + length])


def rsync(source: Path, target: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["rsync", "-a", "--delete", f"{source}/", f"{target}/"], check=True)
    return time.perf_counter() - started


def timed(action: RunnerCopy) -> float:
    started = time.perf_counter()
    action.sync()
    return time.perf_counter() - started


def timed_call(action: RunnerCopy) -> float:
    """A call's share: the sync at its start, the look at its end."""
    started = time.perf_counter()
    action.sync()
    assert not action.changed()
    return time.perf_counter() - started


def measure(
    tmp: Path, files: int, size: int, rounds: int
) -> dict[str, tuple[list[float], list[float]]]:
    tree = tmp / "tree"
    make_tree(tree, files, size)
    subprocess.run(["cat", *map(str, tree.rglob("*.c"))], stdout=subprocess.DEVNULL)  # warm
    user = own_user()
    figures: dict[str, tuple[list[float], list[float]]] = {
        "first copy": ([], []),
        "unchanged sync": ([], []),
        "a call, unchanged: sync and look": ([], []),
        "one file changed": ([], []),
    }
    changed = next(tree.rglob("*.c"))
    for index in range(rounds):
        target = tmp / f"rsync-{index}"
        copy = RunnerCopy(tree, user)
        try:
            for name, ours in (  # alternating which goes first
                ("first copy", timed),
                ("unchanged sync", timed),
                ("a call, unchanged: sync and look", timed_call),
            ):
                if index % 2 == 0:
                    ours_time, rsync_time = ours(copy), rsync(tree, target)
                else:
                    rsync_time, ours_time = rsync(tree, target), ours(copy)
                figures[name][0].append(ours_time)
                figures[name][1].append(rsync_time)
            changed.write_bytes(changed.read_bytes() + b"/* changed */\n")
            figures["one file changed"][0].append(timed(copy))
            figures["one file changed"][1].append(rsync(tree, target))
        finally:
            copy.close()
            shutil.rmtree(target, ignore_errors=True)
    return figures


def main(args: object) -> dict[str, object]:
    smoke = bool(args.smoke)  # type: ignore[attr-defined]
    files, size, rounds = (500, 10_000, 2) if smoke else (20_000, 10_000, args.rounds)  # type: ignore[attr-defined]
    with scratch("ssebench-bench-runnercopy-") as tmp:
        figures = measure(tmp, files, size, rounds)
    rows = [("tree", f"{files} files, {files * size >> 20} MB", ""), ("rounds", str(rounds), "")]
    met = True
    for name, (ours, theirs) in figures.items():
        ratio = statistics.median(ours) / statistics.median(theirs)
        target = TARGETS.get(name)
        ok = target is None or ratio <= target
        met = met and ok
        rows.append(
            (f"{name}: runner copy, median", f"{statistics.median(ours) * 1000:.1f} ms", "")
        )
        rows.append(
            (f"{name}: rsync -a --delete, median", f"{statistics.median(theirs) * 1000:.1f} ms", "")
        )
        rows.append(
            (
                f"{name}: ratio",
                f"{ratio:.2f}",
                f"<= {target} {verdict(ok, smoke)}" if target else "",
            )
        )
    print(f"machine: {machine()}")
    print(table("runner copy against rsync -a --delete", rows))
    return {
        "figures": {
            k: [statistics.median(v[0]), statistics.median(v[1])] for k, v in figures.items()
        },
        "met": met or smoke,
    }


def cli() -> argparse.ArgumentParser:
    return parser(__doc__, rounds=5)


if __name__ == "__main__":
    run(main, cli())  # type: ignore[arg-type]
