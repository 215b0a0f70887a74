"""The composition root: what a command runs with, made in one place, each part once.

`compose` reads the settings (for every command: a bad setting is refused at start, whether the
command reads it or not) and gives the command its `Root`; a command that another ssebench
started gets its root from its request's `Basis` (core/cli/child.py), the same way. The root
makes each other part the first time the command asks for it, and never twice: the plugins'
registry, the task, the isolation its cases run under (proven by a probe case as a user like
the cases', or the one the parent proved), and the orchestrator's daemon. So a command that
checks its own inputs first (a patch, a logs folder) asks for the isolation after them, and a
command that runs no case here never probes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from ssebench.core.cli.isolation import announce
from ssebench.core.cli.requests import Basis
from ssebench.core.daemons.door import (
    Mechanism,
    ServiceConfig,
    Task,
    adopt_isolation,
    choose_isolation,
    load_task,
    recover_withheld,
    start_isolation,
)
from ssebench.core.errors import ConfigError, DaemonError
from ssebench.core.orchestrator import Daemon
from ssebench.core.registry import Registry, build_registry
from ssebench.core.settings import load_settings


def compose(args: argparse.Namespace) -> Root:
    """The root of the command `args` asks for. The environment is checked as it is, then with
    the flags: a flag that overrides a bad variable leaves the mistake where the next command
    would meet it."""
    load_settings()
    settings = load_settings(
        SSE_DIFFICULTY=getattr(args, "difficulty", None),
        SSE_DAEMON_URL=getattr(args, "daemon_url", None),
        SSE_PROGRESS_INTERVAL=getattr(args, "progress_interval", None),
    )
    return Root(
        Basis(
            settings=settings,
            task=getattr(args, "task", None),
            # A grade in the task's image reads task.toml here: its image's paths are not here.
            for_image=getattr(args, "backend", "local") == "docker",
            tree_mb=getattr(args, "tree_mb", None),
            isolation=getattr(args, "isolation", "auto"),
            case_user=getattr(args, "case_user", None),
            daemon_api=getattr(args, "daemon_api", None) or "auto",
        )
    )


class Root:
    """A command's settings, checks, task, isolation and daemon (see the module's docstring)."""

    def __init__(self, basis: Basis) -> None:
        self.basis = basis
        given_settings = basis.settings
        self.settings = load_settings() if given_settings is None else given_settings
        proven = basis.mechanism
        self._mechanism = None if proven is None else adopt_isolation(proven)
        self._announced = False

    @functools.cached_property
    def registry(self) -> Registry:
        return build_registry()

    @functools.cached_property
    def task(self) -> Task | None:
        """The task of `--task`, or None (a command without one: sidecar mode, a dataset);
        `--tree-mb` in place of its `limits.tree_mb`."""
        path = self.basis.task
        if path is None:
            return None
        # Files a killed ssebench left out of sight go back first: the task names them.
        for problem in recover_withheld():
            print(f"ssebench: warning: {problem}", file=sys.stderr)
        task = load_task(path, self.registry.checks, for_image=self.basis.for_image)
        if self.basis.tree_mb is not None:
            task = task.bounded(self.basis.tree_mb)
        return task

    def mechanism(self) -> Mechanism:
        """How the command's cases are confined: chosen (probed) at the first ask, a one-line
        error when none works; this process then becomes undumpable."""
        if self._mechanism is None:
            self._mechanism = choose_isolation(self.basis.isolation, self.basis.case_user)
        return self._mechanism

    @contextlib.contextmanager
    def proving(self) -> Iterator[None]:
        """Prove the isolation while the body runs (`serve` imports its server, ~0.5 s; the
        probe case's processes need nothing of ours meanwhile): on leaving, the mechanism is
        chosen, or its one-line error raised. Nothing to prove without a task here."""
        if self._mechanism is not None or self.task is None:
            yield
            return
        finish = start_isolation(self.basis.isolation, self.basis.case_user)
        try:
            yield
        except BaseException:
            with contextlib.suppress(ConfigError):
                finish()  # the probe case ends and its folder goes; the body's error is told
            raise
        self._mechanism = finish()

    def announce(self, *, quiet: bool = False) -> None:
        """Name the mechanism on stderr, once, when this command runs cases here (a task); a
        grade says it before its first case, so a patch that does not apply says none."""
        if self.task is not None and not self._announced:
            announce(self.mechanism(), quiet=quiet)
            self._announced = True

    def service_config(
        self, level: int | None, tree: Path | None = None, take_over: bool = False
    ) -> ServiceConfig:
        """The case service's one configuration value, for the task at `level`."""
        assert self.task is not None
        return ServiceConfig(
            task=self.task,
            registry=self.registry,
            level=level,
            mechanism=self.mechanism(),
            log_dir=self.settings.log_dir,
            case_user=self.basis.case_user,
            tree=tree,
            take_over=take_over,
        )

    @contextlib.asynccontextmanager
    async def open_daemon(
        self,
        level: int | None,
        *,
        tree: Path | None = None,
        take_over: bool = False,
        grading: bool = False,
    ) -> AsyncIterator[Daemon]:
        """The orchestrator's daemon: the case service for the task, in this process (on
        `tree`, a grade's scratch copy, when given; `take_over`: the command owns the fresh
        container of the task's image it runs in, so the task's writable folders are taken as
        the image has them); else the daemon at the settings' address (sidecar mode), which
        must offer every check."""
        if self.task is not None:
            from ssebench.core.daemons.inprocess import local_daemon

            async with local_daemon(self.service_config(level, tree, take_over)) as service:
                yield service
            return
        from ssebench.core.daemons.connect import open_daemon as connect
        from ssebench.core.daemons.connect import unsupported_warning

        api, url = self.basis.daemon_api, self.settings.daemon_url
        async with connect(api, url, grading=grading) as remote:
            if grading and remote.problem is not None:  # a grade cannot wait for one to start
                raise DaemonError(f"no daemon answers at {remote.location} ({remote.problem})")
            print(f"ssebench: daemon: {remote.description}", file=sys.stderr, flush=True)
            if names := remote.unsupported(self.registry.checks):
                print(f"ssebench: warning: {unsupported_warning(names)}", file=sys.stderr)
            yield remote
