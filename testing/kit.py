"""Throw-away tasks run through the real daemon's case service in this process: the kit's tasks
and handles.

The same code path as `ssebench check`: the daemon's case service in this process, the
orchestrator, the report.
"""

from __future__ import annotations

import asyncio
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ssebench.core.case import CaseRun
from ssebench.core.check import Check, CheckOutcome, Outcome
from ssebench.core.daemons.door import load_task
from ssebench.core.logsource import read_whole
from ssebench.core.orchestrator import run_checks, run_test_patch
from ssebench.core.registry import Registry, build_registry
from ssebench.core.tomltext import toml_value

if TYPE_CHECKING:  # the kit is a pytest plugin of every session: no transport at import
    from ssebench.core.orchestrator import Daemon

Table = str | Sequence[str] | Mapping[str, Any]
T = TypeVar("T")


def task_toml(
    checks: Mapping[str, Table],
    source: str = "src",
    *,
    readable: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    network: bool = False,
) -> str:
    """task.toml text; a table given as a string is `run`, as a list `cases`. `readable` is the
    top-level `files` (task files every case may read), `env` and `network` the keys so named."""
    lines = [f"source = {toml_value(source)}"]
    if readable:
        lines.append(f"files = {toml_value(list(readable))}")
    if env:
        lines.append(f"env = {toml_value(dict(env))}")
    if network:
        lines.append("network = true")
    for key, table in checks.items():
        if isinstance(table, str):
            table = {"run": table}
        elif not isinstance(table, Mapping):
            table = {"cases": list(table)}
        lines.append(f"\n[checks.{key}]")
        lines.extend(f"{name} = {toml_value(value)}" for name, value in table.items())
    return "\n".join(lines) + "\n"


@dataclass
class TaskHandle:
    """A task on disk and the checks to run it with."""

    path: Path
    registry: Registry
    log_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ssebench-mcp-")))
    isolation: str = "none"  # or "auto", "bubblewrap", "landlock": how cases are confined
    # The tree every call of this handle runs on, as one agent's calls share one runner copy:
    # what a build leaves there, a later call's PoCs find; the task's own tree stays as written.
    _tree: Any = field(default=None, init=False, repr=False)

    @property
    def source(self) -> Path:
        return load_task(self.path, self.registry.checks).source

    def check(self, key: str) -> Check:
        found = self.registry.by_key(key)
        if found is None:
            raise KeyError(f"no check with key {key!r} is registered")
        return found

    def _with_daemon(self, level: int | None, job: Callable[[Daemon], Awaitable[T]]) -> T:
        """Run `job` against a daemon of this task at `level`, made for the run alone."""

        from ssebench.core.daemons.door import ServiceConfig, choose_isolation, runner_copy
        from ssebench.core.daemons.inprocess import local_daemon

        mechanism = choose_isolation(self.isolation)
        if self._tree is None:
            self._tree = runner_copy(self.source)
            weakref.finalize(self, self._tree.close)
        self._tree.sync()  # what the test changed in the task's tree since the last call
        task = load_task(self.path, self.registry.checks)
        config = ServiceConfig(
            task, self.registry, level, mechanism, log_dir=self.log_dir, tree=self._tree.path
        )

        async def main() -> T:
            async with local_daemon(config) as daemon:
                return await job(daemon)

        return asyncio.run(main())

    def report(self, level: int) -> str:
        """Exactly what test_patch returns at `level`."""
        return self._with_daemon(
            level, lambda d: run_test_patch(self.registry.checks, level, d, self.log_dir)
        )

    def outcome(self, level: int | None, *, coverage: bool = True) -> Outcome:
        """Every enabled check's outcome; `level` None runs all, as the evaluator does."""
        return self._with_daemon(
            level, lambda d: run_checks(self.registry.checks, level, d, coverage=coverage)
        )

    def enabled_check(self, key: str, level: int | None) -> Check:
        """The check of `key`, which must run at `level` (None: every level)."""
        check = self.check(key)
        if not check.runs_at(level):
            raise ValueError(f"the {check.name} check does not run at difficulty level {level}")
        return check

    def run_check(self, key: str, level: int | None = None) -> CheckOutcome:
        """One check alone, no gate or coverage from the others."""
        check = self.enabled_check(key, level)
        outcome = self._with_daemon(level, lambda d: run_checks([check], level, d, coverage=False))
        return outcome.outcomes[0]

    def case_logs(self, key: str, level: int | None = None) -> list[bytes]:
        """Run one check alone and return what each case that ran printed, in order."""
        return self.run_check_with_logs(key, level)[1]

    def run_check_with_logs(
        self, key: str, level: int | None = None
    ) -> tuple[CheckOutcome, list[bytes]]:
        """One check alone, no gate or coverage from the others, and what each case that ran
        printed, in order. Logs live in the daemon, which lives only for the run, so they are
        fetched inside it."""
        check = self.enabled_check(key, level)

        async def job(daemon: Daemon) -> tuple[CheckOutcome, list[bytes]]:
            outcome = (await run_checks([check], level, daemon, coverage=False)).outcomes[0]
            return outcome, [await _read(daemon, case) for case in outcome.cases]

        return self._with_daemon(level, job)


async def _read(daemon: Daemon, case: CaseRun) -> bytes:
    source = await daemon.open_log(case)
    try:
        return await asyncio.to_thread(read_whole, source)
    finally:
        source.close()


def make_task(
    directory: Path,
    checks: Mapping[str, Table],
    *,
    files: Mapping[str, str | bytes] | None = None,
    task_files: Mapping[str, str | bytes] | None = None,
    readable: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    plugins: Iterable[object] = (),
    use_entry_points: bool = True,
    isolation: str = "none",
) -> TaskHandle:
    """Write task.toml under `directory`, `files` into the source tree and `task_files` into the
    task folder (a check reads them only when its table's `files`, or `readable`, names them)."""
    _write_files(directory / "src", files or {})
    _write_files(directory, task_files or {})
    (directory / "task.toml").write_text(task_toml(checks, readable=readable, env=env))
    registry = build_registry(plugins=plugins, use_entry_points=use_entry_points)
    return TaskHandle(directory, registry, log_dir=directory / "mcp-logs", isolation=isolation)


def _write_files(folder: Path, files: Mapping[str, str | bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
