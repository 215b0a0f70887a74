"""Choosing the mechanism: the strongest that ran a probe case here, or the one asked for.

A mechanism is named only once a real case ran under it, as the user cases will run as
(probe.py); where none can, the daemon refuses to start, saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable

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
    return choosing(requested, user)()


def choosing(requested: str, user: CaseUser) -> Callable[[], Mechanism]:
    """`choose`, begun: the first candidate's probe case runs while the caller goes on (`serve`
    imports its server meanwhile); calling the result waits for it, probes the next candidates
    should it fail, and returns the mechanism or raises as `choose` does."""
    if requested == NONE:
        return lambda: UNCONFINED
    if requested != "auto" and requested not in CANDIDATES:
        raise IsolationError(f"unknown isolation mechanism {requested!r}")
    names = list(CANDIDATES) if requested == "auto" else [requested]
    first = _probing(names[0], user)

    def chosen() -> Mechanism:
        for name in names:
            found = first() if name == names[0] else _probing(name, user)()
            if isinstance(found, Mechanism):
                return found
            if requested != "auto":
                what = "bubblewrap" if name == bubblewrap.NAME else "Landlock"
                raise IsolationError(f"{what} cannot isolate cases here: {found}")
        raise IsolationError(INSTALL_HINT)

    return chosen


def _probing(name: str, user: CaseUser) -> Callable[[], Mechanism | str]:
    """Candidate `name`'s probe case, started: the call gives the mechanism once the case ran
    under it, else why not."""
    from ssebench.daemon.confine.probe import ProbeCase  # the probe runs a case: it needs it all

    found = CANDIDATES[name]()
    if not isinstance(found, Mechanism):
        return lambda: found
    case = ProbeCase(found, user)

    def judged() -> Mechanism | str:
        failure = case.outcome()
        return found if failure is None else f"a probe case failed: {failure}"

    return judged


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
