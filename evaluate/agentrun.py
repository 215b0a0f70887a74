"""What a prediction may say of the agent's run besides its patch: its test_patch calls, its cost,
its tokens, its time. Leaderboards report them (CyberGym requires the cost), and upstream
ssebench's agents write the tokens and time into their dialog file, which `ssebench run` reads.

`$SSE_ARCHIVE/dialog.jsonl` is upstream's dialog protocol: JSON lines, the last a `complete`
entry with `total_tokens` (`{"in", "out"}`) and `duration_ms`. The agent writes it, so it is
read as data an agent controls: only a regular file, only its last MiB, only one written since
the agent started, and anything else about it is ignored with one warning line.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from pydantic import Field, ValidationError, field_validator

from ssebench.core.calls import TestPatchCall
from ssebench.evaluate.verdicts import Shape

AGENT_KEYS = ("test_patch_calls", "cost", "tokens", "duration_s")
DIALOG = "dialog.jsonl"
ARCHIVE_DEFAULT = "/tmp/sse-archive"  # upstream's, when SSE_ARCHIVE is unset
_TAIL = 1 << 20  # the `complete` entry is the last: a MiB holds it
CLOCK_SLACK = 2.0  # a file system's coarse times: a dialog written as the agent starts counts


class Tokens(Shape):
    input: int = Field(ge=0, description="tokens the model read")
    output: int = Field(ge=0, description="tokens the model wrote")


class AgentRun(Shape):
    """A prediction's record of the agent's run, as its line gave it (`null`: not given)."""

    test_patch_calls: list[TestPatchCall] | None = Field(
        None,
        description="each test_patch call of the agent, in order, as `ssebench run "
        "--prediction-out` recorded it (`[]`: it made none)",
    )
    cost: float | None = Field(None, ge=0, description="what the run cost, in US dollars")
    tokens: Tokens | None = Field(None, description="the tokens of the run")
    duration_s: float | None = Field(None, ge=0, description="how long the agent ran, seconds")

    @field_validator("cost", "duration_s")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


def agent_run(data: Mapping[str, Any]) -> AgentRun | str:
    """The agent keys of a prediction's object, or why they are not valid, in one line."""
    try:
        return AgentRun.model_validate({key: data[key] for key in AGENT_KEYS if key in data})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}"


def from_dialog(environ: Mapping[str, str], since: float) -> tuple[dict[str, Any], str | None]:
    """`tokens` and `duration_s` from the agent's dialog file, if it wrote one at or after
    `since` (a Unix time); and a warning when it wrote one that says neither."""
    path = Path(environ.get("SSE_ARCHIVE") or ARCHIVE_DEFAULT) / DIALOG
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}, None  # none written (or not one we read): nothing to say
    with os.fdopen(fd, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_mtime < since - CLOCK_SLACK:
            return {}, None  # a pipe, a device, or an earlier run's
        file.seek(max(found.st_size - _TAIL, 0))
        tail = file.read(_TAIL)
    complete = _complete(tail)
    if complete is None:
        return {}, f"{path}: no `complete` entry with total_tokens and duration_ms"
    return complete, None


def _complete(tail: bytes) -> dict[str, Any] | None:
    """The last `complete` entry's tokens and time, as a prediction's keys."""
    for raw in reversed(tail.split(b"\n")):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "complete":
            continue
        total, millis = entry.get("total_tokens"), entry.get("duration_ms")
        found: dict[str, Any] = {}
        if isinstance(total, dict) and all(_count(total.get(k)) for k in ("in", "out")):
            found["tokens"] = {"input": total["in"], "output": total["out"]}
        if _count(millis):
            found["duration_s"] = millis / 1000
        return found or None
    return None


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
