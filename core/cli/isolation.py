"""Choosing how the agent's code is confined, for every command that runs a daemon."""

from __future__ import annotations

import sys

from ssebench.core.errors import ConfigError
from ssebench.daemon.isolation import NONE, IsolationError, Mechanism, choose, protect_self

UNCONFINED_WARNING = (
    "isolation is off (--no-isolation): the agent's build, tests and PoCs can read every file "
    "this user can, the task's withheld files included, and write the task's files"
)


def choose_isolation(requested: str, *, quiet: bool = False) -> Mechanism:
    """The mechanism `requested` names (auto: the strongest this machine allows), said on stderr
    (unless `quiet`; the warning that there is none is always said); none works here: a
    one-line error naming what to install."""
    try:
        mechanism = choose(requested)
    except IsolationError as exc:
        raise ConfigError(str(exc)) from None
    if mechanism.name == NONE:
        print(f"ssebench: warning: {UNCONFINED_WARNING}", file=sys.stderr, flush=True)
    elif not quiet:
        print(f"ssebench: isolation: {mechanism.description}", file=sys.stderr, flush=True)
    protect_self()
    return mechanism
