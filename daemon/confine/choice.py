"""Choosing the mechanism: the strongest that ran a probe case here, or the one asked for.

A mechanism is named only once a real case ran under it, as the user cases will run as
(probe.py); where none can, the daemon refuses to start, saying what to install.
"""

from __future__ import annotations

from ssebench.daemon.confine import bubblewrap, landlock
from ssebench.daemon.confine.mechanism import Confinement, IsolationError, Mechanism, Unconfined
from ssebench.daemon.confine.policy import CaseUser

NONE = "none"
CANDIDATES = {bubblewrap.NAME: bubblewrap.candidate, landlock.NAME: landlock.candidate}
KINDS: dict[str, type[Confinement]] = {
    bubblewrap.NAME: bubblewrap.Bubblewrap,
    landlock.NAME: landlock.Landlock,
    NONE: Unconfined,
}
INSTALL_HINT = (
    "no isolation mechanism works here: install bubblewrap (Debian: apt-get install bubblewrap) "
    "where user namespaces are allowed, or run on Linux 6.12 or newer with Landlock enabled "
    f"(ABI {landlock.MIN_ABI}); or pass --no-isolation to run the agent's code unconfined"
)
UNCONFINED = Mechanism(NONE, "cases run unconfined")


def confinement(mechanism: Mechanism, user: CaseUser) -> Confinement:
    """The behaviour of `mechanism`, for cases run as `user`."""
    kind = KINDS.get(mechanism.name)
    if kind is None:
        raise IsolationError(f"unknown isolation mechanism {mechanism.name!r}")
    return kind(mechanism, user)


def choose(requested: str, user: CaseUser) -> Mechanism:
    """The strongest mechanism that ran a probe case here as `user` ('auto'), or the one asked
    for; IsolationError saying why when none (or not that one) can."""
    if requested == NONE:
        return UNCONFINED
    if requested != "auto" and requested not in CANDIDATES:
        raise IsolationError(f"unknown isolation mechanism {requested!r}")
    from ssebench.daemon.confine.probe import probe  # the probe runs a case: it needs it all

    for name in CANDIDATES if requested == "auto" else (requested,):
        found = CANDIDATES[name]()
        if isinstance(found, Mechanism):
            failure = probe(found, user)
            if failure is None:
                return found
            found = f"a probe case failed: {failure}"
        if requested != "auto":
            what = "bubblewrap" if name == bubblewrap.NAME else "Landlock"
            raise IsolationError(f"{what} cannot isolate cases here: {found}")
    raise IsolationError(INSTALL_HINT)


def available(user: CaseUser) -> list[str]:
    """The mechanisms that work on this machine, strongest first."""
    found = []
    for name in CANDIDATES:
        try:
            choose(name, user)
        except IsolationError:
            continue
        found.append(name)
    return found


def binds(mechanism: Mechanism) -> bool:
    """Whether cases under `mechanism` see the runner copy at the tree's own path."""
    return KINDS[mechanism.name].binds


def hides_by_permissions(mechanism: Mechanism) -> bool:
    """Whether `mechanism` leaves withheld files to the case user's permissions (access.py)."""
    return KINDS[mechanism.name].shape.hide


def is_confined(mechanism: Mechanism) -> bool:
    """Whether `mechanism` confines cases (and so runs them as a user of their own)."""
    return mechanism.name != NONE
