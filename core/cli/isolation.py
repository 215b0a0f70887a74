"""Choosing how the agent's code is confined, for every command that runs a daemon."""

from __future__ import annotations

import sys

from ssebench.core.errors import ConfigError
from ssebench.daemon.cases import writable_by
from ssebench.daemon.credentials import case_user
from ssebench.daemon.isolation import NONE, IsolationError, Mechanism, choose, protect_self
from ssebench.daemon.task import Task

UNCONFINED_WARNING = (
    "isolation is off (--no-isolation): the agent's build, tests and PoCs can read every file "
    "this user can, the task's withheld files included, and write the task's files"
)


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


def announce(mechanism: Mechanism | None, *, quiet: bool = False) -> None:
    """Name the mechanism on stderr (unless `quiet`); running unconfined is always said.

    Servers say it once their ports are theirs, so a port in use stays the only line."""
    if mechanism is None:
        return
    if mechanism.name == NONE:
        print(f"ssebench: warning: {UNCONFINED_WARNING}", file=sys.stderr, flush=True)
    elif not quiet:
        print(f"ssebench: isolation: {mechanism.description}", file=sys.stderr, flush=True)
