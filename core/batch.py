"""A benchmark run: every prediction graded on a pristine copy, each by its own process.

Each grade is an `ssebench grade --task --patch` process of its own, so a crash or a hung grade
takes no other down and each has its own daemon; `jobs` of them run at once. What a grade
leaves goes to `OUT/<model>/<task>/`: `result.json` (the grade JSON, written whole or not at
all, so its presence means done and a rerun skips it), `patch.diff` (what was graded),
`logs/<check key>-<case index>.log` (every case that ran) and `grade.log` (the grade's own
stderr: progress, and the cause of an error). An error (a bad line, an unknown task, a grade
that ended without a verdict) writes no result.json, so a rerun tries it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.core.predictions import BadLine, Prediction

RESULT, PATCH, LOGS, GRADE_LOG = "result.json", "patch.diff", "logs", "grade.log"
STOP_SECONDS = 10.0  # a grade told to stop (Ctrl+C) gets this long to clean up, then SIGKILL
RESOLVED, UNRESOLVED, ERROR = "resolved", "unresolved", "error"


@dataclass(frozen=True)
class Graded:
    item: Prediction | BadLine
    verdict: str  # RESOLVED, UNRESOLVED or ERROR
    error: str | None = None
    earlier: bool = False  # done by an earlier run, not graded again
    seconds: float = 0.0


def write_json(path: Path, data: Any) -> None:
    """Whole or not at all: a reader (or a rerun) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2)
            file.write("\n")
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read_result(path: Path) -> dict[str, Any] | None:
    """A finished grade's JSON, or None when there is none (or not a whole one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and isinstance(data.get("resolved"), bool)
    return data if ok else None


def _verdict(result: dict[str, Any]) -> str:
    return RESOLVED if result["resolved"] else UNRESOLVED


def _error_line(grade_log: Path) -> str:
    """The grade's last `ssebench: error:` line, else its last line: why it gave no verdict."""
    try:
        lines = grade_log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no stderr"
    errors = [line for line in lines if line.startswith("ssebench: error: ")]
    last = errors[-1] if errors else next((x for x in reversed(lines) if x.strip()), "no stderr")
    return last.removeprefix("ssebench: error: ").strip()


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Ctrl+C for the grade (it removes its scratch copy and stops its case), then SIGKILL.

    A grade inherits an ignored SIGINT from us (a run started in the background by a script):
    it then gets SIGTERM, and its guard process stops its case and removes its scratch copy.
    """
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM if ignored else signal.SIGINT)
    try:
        await asyncio.wait_for(proc.wait(), STOP_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def grade_one(
    prediction: Prediction,
    tasks: Path,
    out: Path,
    command: Sequence[str],
    options: Sequence[str] = (),
) -> Graded:
    """Grade one prediction by `command grade --task --patch [options]` (`command` is how to
    run ssebench); its verdict, and its files under `out`."""
    folder = out / prediction.folder
    task = tasks / prediction.task
    started = time.monotonic()
    shutil.rmtree(folder / LOGS, ignore_errors=True)  # an earlier attempt's, which gave no verdict
    folder.mkdir(parents=True, exist_ok=True)
    patch = folder / PATCH
    patch.write_bytes(prediction.patch.encode("utf-8", "surrogateescape"))
    args = ["grade", "--task", str(task), "--patch", str(patch), "--logs", str(folder / LOGS)]
    args += options
    with (folder / GRADE_LOG).open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            *command,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # a terminal's Ctrl+C reaches us alone; we stop it in order
        )
        try:
            output, _ = await proc.communicate()
        except BaseException:
            await asyncio.shield(_stop(proc))
            raise
    seconds = time.monotonic() - started
    code = proc.returncode
    result = None
    with contextlib.suppress(ValueError):
        result = json.loads(output)
    if code in (0, 1) and isinstance(result, dict) and isinstance(result.get("resolved"), bool):
        write_json(folder / RESULT, result)
        return Graded(prediction, _verdict(result), seconds=seconds)
    if code in (0, 1):
        error = f"exit status {code} but no verdict on stdout"
    elif code is not None and code < 0:
        error = f"killed by signal {-code}"
    else:
        error = f"exit status {code}: {_error_line(folder / GRADE_LOG)}"
    return Graded(prediction, ERROR, error, seconds=seconds)


async def grade_all(
    items: Sequence[Prediction | BadLine],
    tasks: Path,
    out: Path,
    *,
    jobs: int = 1,
    command: Sequence[str],
    options: Sequence[str] = (),
    on_graded: Callable[[Graded], None] = lambda graded: None,
) -> list[Graded]:
    """Every item's verdict, in the items' order; `jobs` grades at once, done ones skipped."""
    slots = asyncio.Semaphore(jobs)

    async def one(item: Prediction | BadLine) -> Graded:
        if isinstance(item, BadLine):
            graded = Graded(item, ERROR, item.error)
        elif not (task := tasks / item.task).is_dir():
            graded = Graded(item, ERROR, f"unknown task {item.task!r}: no folder {task}")
        elif (earlier := read_result(out / item.folder / RESULT)) is not None:
            graded = Graded(item, _verdict(earlier), earlier=True)
        else:
            async with slots:
                graded = await grade_one(item, tasks, out, command, options)
        on_graded(graded)
        return graded

    return list(await asyncio.gather(*(one(item) for item in items)))


def summarize(graded: Sequence[Graded]) -> dict[str, Any]:
    """summary.json: the counts DESIGN names, which predictions they are, and every error."""
    ids: dict[str, list[str]] = {RESOLVED: [], UNRESOLVED: []}
    for g in graded:
        if isinstance(g.item, Prediction) and g.verdict in ids:
            ids[g.verdict].append(g.item.id)
    errors = [
        {"line": g.item.line, "model": g.item.model, "task": g.item.task, "error": g.error}
        for g in graded
        if g.verdict == ERROR
    ]
    return {
        "total": len(graded),
        "resolved": len(ids[RESOLVED]),
        "unresolved": len(ids[UNRESOLVED]),
        "errors": len(errors),
        "resolved_ids": ids[RESOLVED],
        "unresolved_ids": ids[UNRESOLVED],
        "error_list": errors,
    }
