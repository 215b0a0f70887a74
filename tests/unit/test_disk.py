"""The disk watch of a case: what it holds is measured when the volume's free space falls by
more than the room the case has left, and every so often whatever the volume says (others'
files freed on the same volume meanwhile would hide what the case wrote)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ssebench.daemon.confine import disk
from ssebench.daemon.confine.disk import DiskWatch


def test_a_case_over_its_limit_is_found_though_the_volume_seems_not_to_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk, "free_bytes", lambda path: 10 << 30)  # others free what it fills
    monkeypatch.setattr(disk, "PERIOD", 0.2)
    watch = DiskWatch((str(tmp_path),), (), 0, 1 << 20, floor=0)
    (tmp_path / "big").write_bytes(b"x" * (2 << 20))
    assert watch.look() == ("", "")  # the volume did not fall: not measured yet
    time.sleep(0.25)
    assert watch.look() == ("over", "1 MB of disk")


def test_a_case_under_its_limit_stays_so_when_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk, "free_bytes", lambda path: 10 << 30)
    monkeypatch.setattr(disk, "PERIOD", 0.0)
    watch = DiskWatch((str(tmp_path),), (), 0, 4 << 20, floor=0)
    (tmp_path / "small").write_bytes(b"x" * (1 << 20))
    assert watch.look() == ("", "")
    assert watch.room < 4 << 20  # it was measured: the room left is what the file did not take
