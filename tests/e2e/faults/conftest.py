"""The fault suite: every test here breaks something for real and is marked `faults`.

A test kills a daemon, fills a disk, or prints what a log should never hold, and checks four
things: the answer is the one the spec gives, no process the task started is left alive (found
by its environment, so even one that left its process group is seen), no log is lost or mixed
with another call's, and the next call is correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.faults)
