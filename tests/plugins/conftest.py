"""What every built-in check's tests share: the `plugin` fixture.

Each test module names its plugin module and check (`MODULE = ssebench.plugins.build`,
`CHECK = BUILD`); `plugin` then gives the check's fields, the levels it runs at, what the module
and a registry of it provide, and its runs on throw-away tasks through the kit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from ssebench.core import Check, CheckOutcome
from ssebench.core.registry import build_registry
from ssebench.testing import TaskHandle
from ssebench.testing.kit import Table

Ending = tuple[bool | None, int | None, int | None, bool]


@dataclass
class Plugin:
    module: ModuleType
    check: Check
    task: Callable[..., TaskHandle]  # the kit's `ssebench_task`

    def fields(self) -> dict[str, object]:
        return {f.name: getattr(self.check, f.name) for f in dataclasses.fields(self.check)}

    def levels(self) -> list[int]:
        """The levels 0-4 the check runs at."""
        return [level for level in range(5) if self.check.runs_at(level)]

    def provided(self) -> list[Check]:
        """What the module's hook returns."""
        return list(self.module.ssebench_checks())

    def registered(self, *others: ModuleType) -> tuple[Check, ...]:
        """The checks of a registry of this module (and `others`), without entry points."""
        registry = build_registry(plugins=[*others, self.module], use_entry_points=False)
        return registry.checks

    def run(self, table: Table, **kwargs: Any) -> CheckOutcome:
        """The check alone, on a task with only its table."""
        return self.task({self.check.key: table}, **kwargs).run_check(self.check.key)

    @staticmethod
    def endings(outcome: CheckOutcome) -> list[Ending]:
        """How each case that ran ended: (passed, exit code, signal, timed out)."""
        return [(c.passed, c.exit_code, c.signal, c.timed_out) for c in outcome.cases]


@pytest.fixture
def plugin(request: pytest.FixtureRequest, ssebench_task: Callable[..., TaskHandle]) -> Plugin:
    return Plugin(request.module.MODULE, request.module.CHECK, ssebench_task)
