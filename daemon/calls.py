"""What the case service answers besides a case: its refusals, a call's tree, the checks it lists,
and the case that a tree it cannot copy stands for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.core.check import Check
from ssebench.core.errors import DaemonError
from ssebench.daemon.runnercopy import TreeRefused


class NotFound(DaemonError):
    """No such check, case or log (HTTP 404)."""


class Withheld(DaemonError):
    """A check the level withholds (HTTP 403), whatever else the request named."""


class CallOver(DaemonError):
    """A run asked for on a call's tree after another call began (HTTP 409)."""


@dataclass(frozen=True)
class Call:
    """One call's tree: `id` names it, `refused` says why the tree could not be taken (each
    case of the call fails with it)."""

    id: str
    refused: TreeRefused | None = None


@dataclass(frozen=True)
class Listed:
    """A check that runs at this level, as the daemon lists it."""

    check: Check
    cases: int
    timeout: float


def refused_case(refused: TreeRefused, log_path: Path) -> CaseRun:
    """The record of a case that did not run because the agent's tree cannot be copied as it
    is: failed whatever its check (a PoC that never ran has not stopped triggering), its log
    the one line that says why, as the supervisor notes a limit a case went over."""
    log_path.write_text(f"[ssebench: {refused.line}]\n", encoding="utf-8")
    return CaseRun(exit_code=None, signal=None, timed_out=False, seconds=0.0)
