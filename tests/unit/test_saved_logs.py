"""Saved long logs: whose they are, who can open them, and how many a folder keeps.

The agent runs as the tree's owner (uid 1000 in a task container) while the server may run as
root: the file the report names must be the agent's to open, and no other user's. A folder
keeps the newest KEEP_LOGS saved logs (fewer past KEEP_BYTES), so calls do not fill the disk.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from ssebench.core.logs import view_log
from ssebench.core.logsource import FileLog
from ssebench.core.savedlogs import KEEP_LOGS, new_log_path, prune

ROOT = os.geteuid() == 0
LONG = b"word " * 20_000  # over WORD_LIMIT: saved


def saved(folder: Path, count: int, size: int = 10) -> list[Path]:
    """`count` saved logs, oldest first (mtimes a second apart)."""
    paths = []
    for age in range(count):
        path = folder / f"{uuid.uuid4()}.txt"
        path.write_bytes(b"x" * size)
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
        paths.append(path)
    return paths


def test_a_folder_keeps_the_newest_saved_logs_and_nothing_else_is_touched(tmp_path: Path) -> None:
    logs = saved(tmp_path, 12)
    (tmp_path / "notes.txt").write_text("the user's own\n")
    (tmp_path / "1234.txt").write_text("not a name of ours\n")
    prune(tmp_path, keep=5)
    assert sorted(tmp_path.iterdir()) == sorted(
        [*logs[-5:], tmp_path / "notes.txt", tmp_path / "1234.txt"]
    )


def test_the_bytes_bound_spares_the_newest(tmp_path: Path) -> None:
    logs = saved(tmp_path, 4, size=100)
    prune(tmp_path, keep=10, keep_bytes=250)
    assert sorted(tmp_path.iterdir()) == sorted(logs[-2:])
    prune(tmp_path, keep=10, keep_bytes=50)
    assert list(tmp_path.iterdir()) == [logs[-1]]


def test_a_new_saved_log_makes_room_for_itself(tmp_path: Path) -> None:
    saved(tmp_path, KEEP_LOGS + 3)
    path = new_log_path(tmp_path / "mcp")  # a fresh folder
    assert path.parent.stat().st_mode & 0o777 == 0o755
    saved(tmp_path / "mcp", KEEP_LOGS + 3)
    new_log_path(tmp_path / "mcp")
    assert len(list((tmp_path / "mcp").iterdir())) == KEEP_LOGS - 1


def test_a_saved_log_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    log = tmp_path / "case.log"
    log.write_bytes(LONG)
    view = view_log([FileLog(log, len(LONG))], tmp_path / "mcp")
    assert view.saved_path is not None
    assert (view.saved_path.stat().st_mode & 0o777, view.saved_path.read_bytes()) == (0o600, LONG)
