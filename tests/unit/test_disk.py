"""The disk watch of a case: what it holds is measured when the volume's free space falls by
more than the room the case has left, and every so often whatever the volume says (others'
files freed on the same volume meanwhile would hide what the case wrote)."""

from __future__ import annotations

import os
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


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user")
def test_in_a_shared_folder_only_what_the_user_could_write_is_measured(tmp_path: Path) -> None:
    """A shared /tmp holds others' trees, which a walk of it all would cost on every look: only
    folders the case's user can write are entered (as its leftovers are found)."""
    uid, mb = 1234567, 1 << 20
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = shared / "mine"
    (mine / "deep").mkdir(parents=True)
    files = {shared / "loose": 1, mine / "deep" / "file": 2, shared / "other" / "file": 4}
    (shared / "other").mkdir(mode=0o700)  # a folder of root's the user could never write in
    for path, size in files.items():
        path.write_bytes(b"x" * (size * mb))
    for path in (shared / "loose", mine, mine / "deep", mine / "deep" / "file",
                 shared / "other" / "file"):  # fmt: skip
        os.chown(path, uid, uid)
    watch = DiskWatch((), (str(shared),), uid, 100 * mb, floor=0)
    assert 3 * mb <= watch.usage() < 4 * mb  # the loose file and `mine` whole: not `other`
