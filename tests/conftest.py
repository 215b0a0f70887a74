"""Shared test helpers: the CLI as a real subprocess, and whom cases run as."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.user import case_user, own_user
from ssebench.testing.servers import run_ssebench

pytest_plugins = ("pytester",)  # tests/unit/test_in_process.py runs a planted suite


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `ssebench ARGS...` as a real process, as a user would:
    `run_cli(*args, env=None, timeout=120) -> CompletedProcess[str]`."""
    return run_ssebench


@pytest.fixture
def user() -> CaseUser:
    """Whom cases run as: a case user of their own when we are root, else ourselves."""
    return case_user() if os.geteuid() == 0 else own_user()
