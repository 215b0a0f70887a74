"""The one door from above into the daemon layer (daemon/): tasks, isolation, scratch copies.

The command line, the testing kit and the grading backends take what they need of the daemon
from here (and the case service from core/daemons/inprocess.py); nothing above core/daemons
and core/server imports daemon/ itself (a meta-test checks), so the layer's surface is this.
"""

from __future__ import annotations

from ssebench.core.errors import ConfigError
from ssebench.daemon.cases import writable_by
from ssebench.daemon.credentials import case_user, log_owner
from ssebench.daemon.guard import make_folder, remove_folder
from ssebench.daemon.isolation import (
    NONE,
    SYSTEM,
    IsolationError,
    Mechanism,
    available,
    choose,
    protect_self,
)
from ssebench.daemon.protect import unmatched_globs
from ssebench.daemon.scratch import copy_tree, patched_copy, read_patch
from ssebench.daemon.task import Task, load_task

__all__ = [
    "NONE",
    "SYSTEM",
    "Mechanism",
    "Task",
    "available",
    "choose",
    "choose_isolation",
    "copy_tree",
    "load_task",
    "log_owner",
    "make_folder",
    "patched_copy",
    "read_patch",
    "remove_folder",
    "unmatched_globs",
]


def choose_isolation(requested: str, task: Task | None = None, *, copy: bool = False) -> Mechanism:
    """The mechanism `requested` names (auto: the strongest a probe case shows to work here, as
    the user `task`'s cases run as); where none works, a one-line error naming what to install.
    Cases that run in the task's own tree (not a grade's `copy`, which is ours) need a tree
    their user can write. This process becomes undumpable."""
    user = None if task is None else case_user(task.source)
    if task is not None and user is not None and not copy:
        writable_by(user, task.source)
    try:
        mechanism = choose(requested, user)
    except IsolationError as exc:
        raise ConfigError(str(exc)) from None
    protect_self()
    return mechanism
