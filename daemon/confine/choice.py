"""The isolation mechanisms, one table, and the choice among them: the strongest that ran a
probe case here, or the one asked for.

A mechanism is one row: its name (as `--isolation` takes it), its title in a sentence, its
behaviour (a `Confinement`), its availability probe (what it needs, or why not), what to
install where it is missing, and a line of help. The command line's choices and help, the
install hint and every question about a mechanism come from the rows; a new mechanism is a new
row and its class. A mechanism is named only once a real case ran under it, as the user cases
will run as (probe.py); where none can, the daemon refuses to start, saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ssebench.daemon.confine import bubblewrap, landlock
from ssebench.daemon.confine.mechanism import Confinement, IsolationError, Mechanism, Unconfined
from ssebench.daemon.confine.policy import CaseUser


@dataclass(frozen=True)
class Kind:
    """One isolation mechanism. `candidate` None: nothing to probe, it confines nothing."""

    name: str
    title: str
    confinement: type[Confinement]
    candidate: Callable[[], Mechanism | str] | None
    install: str
    details: str


KINDS: tuple[Kind, ...] = (  # the strongest first: `auto` takes the first that works
    Kind(
        bubblewrap.NAME,
        "bubblewrap",
        bubblewrap.Bubblewrap,
        bubblewrap.candidate,
        "install bubblewrap (Debian: apt-get install bubblewrap) where user namespaces are allowed",
        "namespaces of its own for each case, the runner copy at the tree's own path",
    ),
    Kind(
        landlock.NAME,
        "Landlock",
        landlock.Landlock,
        landlock.candidate,
        f"run on Linux 6.12 or newer with Landlock enabled (ABI {landlock.MIN_ABI})",
        "a Landlock domain of its own for each case (in a Docker container too)",
    ),
    Kind(Unconfined.name, "no isolation", Unconfined, None, "", "cases run unconfined"),
)
NONE = Unconfined.name  # `--no-isolation`: the row without a probe
UNCONFINED = Mechanism(NONE, "cases run unconfined")
AUTO = "auto"


def kind(name: str) -> Kind | None:
    """The row named `name`; None for a name no row has."""
    return next((row for row in KINDS if row.name == name), None)


def candidates() -> tuple[Kind, ...]:
    """The rows that confine, strongest first: what `auto` tries and `available` lists."""
    return tuple(row for row in KINDS if row.candidate is not None)


def choices() -> tuple[str, ...]:
    """What --isolation takes."""
    return (AUTO, *(row.name for row in candidates()))


def install_hint() -> str:
    """The one line the daemon refuses to start with when no mechanism works here."""
    each = ", or ".join(row.install for row in candidates())
    unconfined = "or pass --no-isolation to run the agent's code unconfined"
    return f"no isolation mechanism works here: {each}; {unconfined}"


def isolation_help() -> str:
    """--isolation's help, from the rows."""
    each = "; ".join(f"{row.name}: {row.details}" for row in candidates())
    return f"how each case is confined (default {AUTO}: the strongest this machine allows; {each})"


def confinement(mechanism: Mechanism, user: CaseUser) -> Confinement:
    """The behaviour of `mechanism`, for cases run as `user`."""
    row = kind(mechanism.name)
    if row is None:
        raise IsolationError(f"unknown isolation mechanism {mechanism.name!r}")
    return row.confinement(mechanism, user)


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
    if requested not in choices():
        raise IsolationError(f"unknown isolation mechanism {requested!r}")
    rows = [row for row in candidates() if requested in (AUTO, row.name)]
    if not rows:
        raise IsolationError(install_hint())
    first = _probing(rows[0], user)

    def chosen() -> Mechanism:
        for row in rows:
            found = first() if row is rows[0] else _probing(row, user)()
            if isinstance(found, Mechanism):
                return found
            if requested != AUTO:
                raise IsolationError(f"{row.title} cannot isolate cases here: {found}")
        raise IsolationError(install_hint())

    return chosen


def _probing(row: Kind, user: CaseUser) -> Callable[[], Mechanism | str]:
    """`row`'s probe case, started: the call gives the mechanism once the case ran under it,
    else why not."""
    from ssebench.daemon.confine.probe import ProbeCase  # the probe runs a case: it needs it all

    assert row.candidate is not None
    found = row.candidate()
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
    for row in candidates():
        try:
            choose(row.name, user)
        except IsolationError:
            continue
        found.append(row.name)
    return found


def binds(mechanism: Mechanism) -> bool:
    """Whether cases under `mechanism` see the runner copy at the tree's own path."""
    return confinement_of(mechanism).binds


def hides_by_permissions(mechanism: Mechanism) -> bool:
    """Whether `mechanism` leaves withheld files to the case user's permissions (access.py)."""
    return confinement_of(mechanism).shape.hide


def is_confined(mechanism: Mechanism | str) -> bool:
    """Whether `mechanism` (or the one a name asks for, `auto` among them) confines cases, and
    so runs them as a user of their own."""
    row = kind(mechanism if isinstance(mechanism, str) else mechanism.name)
    return row is None or row.candidate is not None


def confinement_of(mechanism: Mechanism) -> type[Confinement]:
    """`mechanism`'s class, for what it declares (binds, shape)."""
    row = kind(mechanism.name)
    if row is None:
        raise IsolationError(f"unknown isolation mechanism {mechanism.name!r}")
    return row.confinement
