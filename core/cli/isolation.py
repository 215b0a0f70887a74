"""Choosing how the agent's code is confined, for every command that runs a daemon."""

from __future__ import annotations

import sys

from ssebench.core.daemons.door import Mechanism, is_confined

UNCONFINED_WARNING = (
    "isolation is off (--no-isolation): the agent's build, tests and PoCs can read every file "
    "this user can, the task's withheld files included, and write the task's files"
)


def announce(mechanism: Mechanism | None, *, quiet: bool = False) -> None:
    """Name the mechanism on stderr (unless `quiet`); running unconfined is always said.

    Servers say it once their ports are theirs, so a port in use stays the only line."""
    if mechanism is None:
        return
    if not is_confined(mechanism):
        print(f"ssebench: warning: {UNCONFINED_WARNING}", file=sys.stderr, flush=True)
    elif not quiet:
        print(f"ssebench: isolation: {mechanism.description}", file=sys.stderr, flush=True)
