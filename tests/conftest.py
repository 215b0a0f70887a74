"""Shared test helpers: the CLI as a real subprocess."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from ssebench.testing.servers import run_ssebench


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `ssebench ARGS...` as a real process, as a user would:
    `run_cli(*args, env=None, timeout=120) -> CompletedProcess[str]`."""
    return run_ssebench
