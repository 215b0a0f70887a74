"""The composition root: what a command runs with, built once, in one place.

Settings are read once (by `main`, which checks them for every command), then `setup` builds
the plugins' registry, loads the task and chooses (and proves) the isolation, and
`open_daemon` gives the orchestrator its daemon: the case service in this process for a task,
or a client of the daemon at an address. Every command takes these from here.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

from ssebench.core.daemons.local import Mechanism, Task, choose_isolation, load_task
from ssebench.core.errors import DaemonError
from ssebench.core.orchestrator import Daemon
from ssebench.core.registry import Registry, build_registry
from ssebench.core.settings import Settings, load_settings


@dataclass(frozen=True)
class Setup:
    """A command's settings (flags applied), its checks, its task, how cases are confined and
    who they run as (`case_user`: --case-user, else a user of their own). `tree` is a grade's
    scratch copy of the task's tree, which the cases run on as it is; `fresh_container`: the
    command owns the fresh container of the task's image it runs in (`grade
    --fresh-container`, as `--backend docker` starts it): the tree is graded where it is and
    the task's writable folders are taken as the image has them."""

    settings: Settings
    registry: Registry
    task: Task | None = None
    mechanism: Mechanism | None = None
    case_user: str | None = None
    tree: Path | None = None
    fresh_container: bool = False


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings `main` read for this command; read now for a caller that skipped main."""
    found = getattr(args, "settings", None)
    if isinstance(found, Settings):
        return found
    return load_settings(
        SSE_DIFFICULTY=getattr(args, "difficulty", None),
        SSE_DAEMON_URL=getattr(args, "daemon_url", None),
        SSE_PROGRESS_INTERVAL=getattr(args, "progress_interval", None),
    )


def setup(args: argparse.Namespace, *, confine: bool = True) -> Setup:
    """Everything a command checks before it does anything: settings, plugins, the task of
    `--task` (if given) and, with `confine`, its isolation, proven by a probe case as a user
    like the cases'. One line each."""
    settings = settings_of(args)
    registry = build_registry()
    path = getattr(args, "task", None)
    # A grade in the task's image reads task.toml here: its image's own paths are not here.
    for_image = getattr(args, "backend", "local") == "docker"
    task = load_task(path, registry.checks, for_image=for_image) if path is not None else None
    plain = Setup(settings, registry, task, case_user=getattr(args, "case_user", None))
    return confined(plain, args.isolation) if confine else plain


def confined(setup: Setup, requested: str) -> Setup:
    """`setup` with its cases' isolation chosen (for a task; without one there are no cases
    here to confine), for a command that checks its other inputs first."""
    if setup.task is None:
        return setup
    return replace(setup, mechanism=choose_isolation(requested, setup.case_user))


@contextlib.asynccontextmanager
async def open_daemon(
    setup: Setup,
    level: int | None,
    *,
    api: str = "auto",
    grading: bool = False,
) -> AsyncIterator[Daemon]:
    """The orchestrator's daemon: the case service for the setup's task, in this process; else
    the daemon at the settings' address (sidecar mode), which must offer every check."""
    if setup.task is not None:
        from ssebench.core.daemons.inprocess import local_daemon

        async with local_daemon(
            setup.task,
            setup.registry,
            level,
            mechanism=setup.mechanism,
            log_dir=setup.settings.log_dir,
            case_user=setup.case_user,
            tree=setup.tree,
            take_over=setup.fresh_container,
        ) as service:
            yield service
        return
    from ssebench.core.daemons.connect import open_daemon as connect
    from ssebench.core.daemons.connect import unsupported_warning

    async with connect(api, setup.settings.daemon_url, grading=grading) as remote:
        if grading and remote.problem is not None:  # a grade cannot wait for one to start
            raise DaemonError(f"no daemon answers at {remote.location} ({remote.problem})")
        print(f"ssebench: daemon: {remote.description}", file=sys.stderr, flush=True)
        if names := remote.unsupported(setup.registry.checks):
            print(f"ssebench: warning: {unsupported_warning(names)}", file=sys.stderr)
        yield remote
