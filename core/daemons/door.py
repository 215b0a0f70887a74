"""The one door from above into the daemon layer (daemon/): tasks, isolation, scratch copies.

The command line, the testing kit and the grading backends take what they need of the daemon
from here (and the case service from core/daemons/inprocess.py); nothing above core/daemons
and core/server imports daemon/ itself (a meta-test checks), so the layer's surface is this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.config import ServiceConfig
from ssebench.daemon.confine.choice import (
    NONE,
    available,
    choices,
    choose,
    choosing,
    is_confined,
    isolation_help,
)
from ssebench.daemon.confine.mechanism import IsolationError, Mechanism
from ssebench.daemon.confine.policy import SYSTEM
from ssebench.daemon.confine.user import CaseUserError, case_user, own_user, protect_self
from ssebench.daemon.guard import make_folder, remove_folder
from ssebench.daemon.protect import unmatched_globs
from ssebench.daemon.runnercopy import RunnerCopy
from ssebench.daemon.scratch import copy_tree, patched_copy, read_patch
from ssebench.daemon.spool import log_owner
from ssebench.daemon.task import IMAGE, Task, load_task
from ssebench.daemon.withheld import kept_from_agent
from ssebench.daemon.withheld import recover as recover_withheld

__all__ = [
    "IMAGE",
    "NONE",
    "SYSTEM",
    "Mechanism",
    "ServiceConfig",
    "Task",
    "adopt_isolation",
    "available",
    "choices",
    "choose",
    "choose_isolation",
    "copy_tree",
    "is_confined",
    "isolation_help",
    "kept_from_agent",
    "load_task",
    "log_owner",
    "make_folder",
    "patched_copy",
    "read_patch",
    "recover_withheld",
    "remove_folder",
    "runner_copy",
    "start_isolation",
    "unmatched_globs",
]


def runner_copy(source: Path) -> RunnerCopy:
    """A runner copy of `source` that this process keeps (the testing kit's, for the calls of
    one task handle): synced by its keeper, run on by daemons that adopt it."""
    return RunnerCopy(source, own_user())


def choose_isolation(requested: str, user: str | None = None) -> Mechanism:
    """The mechanism `requested` names (auto: the strongest a probe case shows to work here, as
    a case user like the cases' own: `user`, `--case-user`, or one of their own); where none
    works, a one-line error naming what to install. This process becomes undumpable."""
    return start_isolation(requested, user)()


def start_isolation(requested: str, user: str | None = None) -> Callable[[], Mechanism]:
    """`choose_isolation`, begun: its probe case runs while the caller goes on; calling the
    result ends it, with the same mechanism or one-line error."""
    with _one_line():
        chosen = choosing(requested, case_user(user) if is_confined(requested) else own_user())

    def finish() -> Mechanism:
        with _one_line():
            mechanism = chosen()
        protect_self()
        return mechanism

    return finish


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except (IsolationError, CaseUserError) as exc:
        raise ConfigError(str(exc)) from None


def adopt_isolation(mechanism: Mechanism) -> Mechanism:
    """The mechanism the ssebench that started this one proved on this machine (its probe case
    ran as the same case user), taken without probing again. This process becomes undumpable."""
    protect_self()
    return mechanism
