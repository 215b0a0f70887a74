"""What the security tests share as fixtures."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def passable_tmp() -> Iterator[Path]:
    """A folder in /tmp the agent's user (uid 1000) may pass, pytest's own being root's alone:
    where its own folders lie, and where a grade applies a patch as the tree's owner."""
    folder = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
