"""A benchmark run: every prediction graded on a pristine copy, each by its own process.

Each grade is a process of its own, asked by a typed request to grade as `ssebench grade --task
--patch` does (core/cli/child.py), so a crash or a hung grade takes no other down and each has
its own daemon; `jobs` of them run at once, each within `timeout` seconds. Each answers with
one `Ended` record on stdout (evaluate/ended.py): its verdict, or why it has none. What a grade
leaves goes to `OUT/<model>/<task>/`: `result.json` (the grade JSON and what it was graded with,
written whole or not at all), `patch.diff` (what was graded), `logs/<check key>-<case
index>.log` (every case that ran) and `grade.log` (the grade's own stderr: progress, and the
cause of an error, for a reader: the run reads the record). A rerun reuses a result.json only
when it was graded with this prediction's model, patch and task and this ssebench
(`graded_with`), and grades again otherwise; a folder holding another model's verdict is an
error, never a shared verdict. An error (a bad line, an unknown task, a grade that ended without
a verdict) writes no result.json, so a rerun tries it again. An empty patch (`null` or `""`) is
unresolved and not graded: no check runs and nothing is written. A verdict is flagged when its
result.json lists `signals` (what a reviewer should look at); one without the key is not. Each
has a reason (evaluate/reasons.py): its grade's, or what the run adds (an empty patch, a grade
stopped at `timeout`, an error). result.json also keeps what the line said of the agent's run
(`agent_run`: its test_patch calls, cost, tokens, time).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ssebench.core.stopping import stop_subprocess
from ssebench.evaluate.digests import sha256, ssebench_version, task_sha256
from ssebench.evaluate.ended import read_ended, why_no_verdict
from ssebench.evaluate.predictions import BadLine, Prediction
from ssebench.evaluate.reasons import EMPTY_PATCH, TIMEOUT
from ssebench.evaluate.verdicts import GradedWith, PatchGrade, dump, read_saved, write_json

RESULT, PATCH, LOGS, GRADE_LOG = "result.json", "patch.diff", "logs", "grade.log"
GRADED_WITH, AGENT_RUN = "graded_with", "agent_run"
STOP_SECONDS = 10.0  # a grade told to stop (Ctrl+C) gets this long to clean up, then SIGKILL
RESOLVED, UNRESOLVED, ERROR = "resolved", "unresolved", "error"
# What grades one prediction: the request, as its grade process takes it, to grade the patch
# file on the task folder with its logs in the folder given.
Request = Callable[[Path, Path, Path], str]
TIMED_OUT = "no verdict within --timeout {:g} s: the grade was stopped, its cases killed"
# The run's own files, beside the models' folders: its record, summary and page (whole or a
# shard's) and each model's SWE-bench report, `<model>.<run id>.json`. No model folder is named so.
RUN_FILE = re.compile(r".*\.(json|html)")


def summary_name(shard: tuple[int, int] | None, kind: str = "summary.json") -> str:
    """The run's `kind` file (summary.json, index.html), a shard's named after it."""
    stem, dot, ext = kind.partition(".")
    return kind if shard is None else f"{stem}-{shard[0]}-of-{shard[1]}{dot}{ext}"


@dataclass(frozen=True)
class Graded:
    item: Prediction | BadLine
    verdict: str  # RESOLVED, UNRESOLVED or ERROR
    error: str | None = None
    reused: bool = False  # graded by an earlier run, with the same patch, task and ssebench
    again: str | None = None  # why an earlier run's verdict was not reused
    seconds: float = 0.0
    flagged: tuple[str, ...] = ()  # the kinds of the verdict's signals, each once
    reason: str = ""  # why, in one word (evaluate/reasons.py); "": as the verdict says
    rejudged: str | None = None  # a rejudge's word on it: what it was, or that it is unchanged

    @property
    def empty(self) -> bool:
        return isinstance(self.item, Prediction) and self.item.empty

    @property
    def why(self) -> str:
        """Its reason: the grade's, or what the run says of it."""
        return self.reason or (EMPTY_PATCH if self.empty else self.verdict)


def judged(item: Prediction, result: dict[str, Any], **more: Any) -> Graded:
    """A grade's verdict from its JSON, as printed or saved: resolved or not, and flagged with
    the kinds of its signals, each once, in order (read tolerantly: a grade without the key has
    none)."""
    signals = result.get("signals")
    listed = signals if isinstance(signals, list) else []
    kinds = [signal.get("kind") for signal in listed if isinstance(signal, dict)]
    flagged = tuple(dict.fromkeys(str(kind) for kind in kinds))
    verdict = RESOLVED if result["resolved"] else UNRESOLVED
    reason = str(result.get("reason") or verdict)
    return Graded(item, verdict, flagged=flagged, reason=reason, **more)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Ctrl+C for the grade (it removes its scratch copy and stops its case), then SIGKILL.

    A grade inherits an ignored SIGINT from us (a run started in the background by a script):
    it then gets SIGTERM, and its guard process stops its case and removes its scratch copy.
    """
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    await stop_subprocess(proc, STOP_SECONDS, signum=signal.SIGTERM if ignored else signal.SIGINT)


async def run_child(
    args: Sequence[str], stderr: Path, timeout: float | None
) -> tuple[int | None, bytes]:
    """Run one grade process; its exit status (None: stopped at `timeout`) and stdout."""
    with stderr.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
            start_new_session=True,  # a terminal's Ctrl+C reaches us alone; we stop it in order
        )
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            await _stop(proc)
            return None, b""
        except BaseException:
            await asyncio.shield(_stop(proc))
            raise
    return proc.returncode, output


async def grade_one(
    prediction: Prediction,
    tasks: Path,
    out: Path,
    command: Sequence[str],
    request: Request,
    *,
    timeout: float | None = None,
    graded_with: GradedWith | None = None,
) -> Graded:
    """Grade one prediction by `command REQUEST` (`command` is how to run ssebench's child,
    `request` what it is asked); its verdict, and its files under `out`, the verdict with
    `graded_with`."""
    folder = out / prediction.folder
    started = time.monotonic()
    shutil.rmtree(folder / LOGS, ignore_errors=True)  # an earlier attempt's, which gave no verdict
    folder.mkdir(parents=True, exist_ok=True)
    patch = folder / PATCH
    patch.write_bytes(prediction.patch_bytes)
    asked = request(tasks / prediction.task, patch, folder / LOGS)
    code, output = await run_child([*command, asked], folder / GRADE_LOG, timeout)
    seconds = time.monotonic() - started
    if code is None:
        error = TIMED_OUT.format(timeout)
        return Graded(prediction, ERROR, error, seconds=seconds, reason=TIMEOUT)
    ended = read_ended(PatchGrade, output)
    if code in (0, 1) and ended is not None and ended.verdict is not None:
        result = dump(ended.verdict)
        recorded = None if graded_with is None else dump(graded_with)
        saved = {**result, GRADED_WITH: recorded, AGENT_RUN: dump(prediction.agent)}
        write_json(folder / RESULT, saved)
        return judged(prediction, result, seconds=seconds)
    return Graded(prediction, ERROR, why_no_verdict(code, ended), seconds=seconds)


def _earlier(item: Prediction, out: Path, graded_with: GradedWith) -> Graded | str | None:
    """What an earlier run left for `item`: its verdict to reuse (or an error: another model's
    verdict in its folder), else why it is graded again; None when there is none."""
    saved = read_saved(out / item.folder / RESULT)
    if saved is None:
        return None
    recorded = saved.graded_with
    if recorded is None:
        return "no record of what it was graded with"
    if recorded.model != item.model:
        owner = recorded.model
        error = f"{out / item.folder} holds the verdict of model {owner!r}, not of {item.model!r}"
        return Graded(item, ERROR, error)
    for key, why in (("patch_sha256", "the patch changed"), ("task_sha256", "the task changed")):
        if getattr(graded_with, key) is None or getattr(recorded, key) != getattr(graded_with, key):
            return why
    if graded_with.grader is None or recorded.grader != graded_with.grader:
        return f"it was graded {recorded.grader or 'otherwise'}"
    if recorded.ssebench != graded_with.ssebench:
        return f"ssebench {recorded.ssebench} graded it"
    if saved.reason is None:
        return "it was graded before verdicts had a reason"
    kept = dump(saved)
    if kept.get(AGENT_RUN) != dump(item.agent):  # the line says more of the agent's run now
        write_json(out / item.folder / RESULT, {**kept, AGENT_RUN: dump(item.agent)})
    return judged(item, kept, reused=True)


class _Records:
    """What each prediction is graded with (result.json's `graded_with`); each task's hash and
    grader found once, in a thread, however many predictions name it."""

    def __init__(self, tasks: Path, grader: Callable[[Path], str | None]) -> None:
        self.tasks = tasks
        self.grader = grader
        self.found: dict[str, asyncio.Task[tuple[str | None, str | None]]] = {}

    def _facts(self, folder: Path) -> tuple[str | None, str | None]:
        return task_sha256(folder), self.grader(folder)

    async def __call__(self, item: Prediction) -> GradedWith:
        if item.task not in self.found:
            job = asyncio.to_thread(self._facts, self.tasks / item.task)
            self.found[item.task] = asyncio.create_task(job)
        task_hash, how = await self.found[item.task]
        return GradedWith(
            model=item.model,
            task=item.task,
            patch_sha256=sha256(item.patch_bytes),
            task_sha256=task_hash,
            ssebench=ssebench_version(),
            grader=how,
        )


def ungraded(item: Prediction | BadLine, tasks: Path) -> Graded | None:
    """The verdict of what is not graded at all, found before anything is hashed: a bad line,
    a model or task that cannot be (an error), an empty patch (unresolved)."""
    if isinstance(item, BadLine):
        return Graded(item, ERROR, item.error)
    folder = item.folder.parts[0]
    if RUN_FILE.fullmatch(folder):
        error = (
            f"model {item.model!r} cannot name a folder: {folder} is named like the run's own "
            "files (*.json, *.html)"
        )
        return Graded(item, ERROR, error)
    if not (task := tasks / item.task).is_dir():
        return Graded(item, ERROR, f"unknown task {item.task!r}: no folder {task}")
    return Graded(item, UNRESOLVED) if item.empty else None


async def grade_all(
    items: Sequence[Prediction | BadLine],
    tasks: Path,
    out: Path,
    *,
    jobs: int = 1,
    command: Sequence[str],
    request: Request,
    timeout: float | None = None,
    grader: Callable[[Path], str | None] = lambda folder: "locally, confined",
    on_graded: Callable[[Graded], None] = lambda graded: None,
) -> list[Graded]:
    """Every item's verdict, in the items' order; `jobs` workers take the items in that order
    (however long each task takes to hash), each task hashed once, an earlier verdict reused
    only for the same model, patch, task, ssebench and `grader` (how a task's grades run: the
    backend, the isolation, the image; None: not known, never reused)."""
    graded_with = _Records(tasks, grader)

    async def graded_or_reused(item: Prediction) -> Graded:
        record = await graded_with(item)
        earlier = _earlier(item, out, record)
        if isinstance(earlier, Graded):
            return earlier
        graded = await grade_one(
            item, tasks, out, command, request, timeout=timeout, graded_with=record
        )
        return replace(graded, again=earlier)

    # What cannot be graded is said at once; the rest is taken in order by `jobs` workers.
    results: list[Graded | None] = [None] * len(items)
    queue: list[tuple[int, Prediction]] = []
    for index, item in enumerate(items):
        results[index] = said = ungraded(item, tasks)
        if said is None and isinstance(item, Prediction):
            queue.append((index, item))
    for graded in results:
        if graded is not None:
            on_graded(graded)
    taken = iter(queue)  # shared: each worker takes the next one

    async def worker() -> None:
        for index, item in taken:
            results[index] = graded = await graded_or_reused(item)
            on_graded(graded)

    await asyncio.gather(*(worker() for _ in range(max(1, jobs))))
    return [graded for graded in results if graded is not None]
