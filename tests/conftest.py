"""Shared test helpers: the CLI as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping

import pytest

CLI = [sys.executable, "-c", "from ssebench.core.cli import main; main()"]


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `ssebench ARGS...` as a real process, as a user would."""

    def run(
        *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args], capture_output=True, text=True, env=env, timeout=timeout
        )

    return run
