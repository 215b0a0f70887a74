"""The kit's pytest fixture: `ssebench_task` makes tasks in the test's tmp_path."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ssebench.testing.kit import Table, TaskHandle, make_task


@pytest.fixture
def ssebench_task(tmp_path: Path) -> Callable[..., TaskHandle]:
    """Factory: `ssebench_task({"build": "make"}, files={...})` → a TaskHandle in tmp_path."""
    counter = iter(range(1_000_000))

    def factory(checks: Mapping[str, Table], **kwargs: Any) -> TaskHandle:
        return make_task(tmp_path / f"task{next(counter)}", checks, **kwargs)

    return factory
