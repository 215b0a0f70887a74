"""The case service's configuration: one value, built in the composition root (core/cli/root.py,
or a test's or benchmark's own) and handed down whole."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ssebench.core.registry import Registry
from ssebench.daemon.confine.choice import UNCONFINED
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.confine.runner import GRACE_SECONDS, LOG_LIMIT
from ssebench.daemon.task import Task


@dataclass(frozen=True)
class ServiceConfig:
    """One task's cases at one level (None: the evaluator's, every check), confined by
    `mechanism`, run as `case_user` (None: one of their own), never able to read the spool nor
    `log_dir` (where the server saves logs). `tree`: a grade's scratch copy of the task's tree,
    which the cases run on as it is (else on a runner copy of the agent's tree); `take_over`:
    the daemon owns its fresh container, writable folders and all (daemon/writable.py).
    `spool`: the caller's folder for the logs (None: the service's own). `log_limit`: bytes of
    a case's output kept; `grace`: seconds a stopped case has before SIGKILL."""

    task: Task
    registry: Registry
    level: int | None
    mechanism: Mechanism = UNCONFINED
    log_dir: Path | None = None
    case_user: str | None = None
    tree: Path | None = None
    take_over: bool = False
    spool: Path | None = None
    log_limit: int = LOG_LIMIT
    grace: float = GRACE_SECONDS
