"""The daemon's spool: one log file per case, the newest run's only, out of every case's reach.

Each run of a case gets a new log (a new id), replacing the last one of that case, so a
long-lived daemon holds one log per case. A temp cleaner may remove the folder of a daemon
that lives for days: it is made again, or every later run would fail to open its log.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from ssebench.daemon.confine.runner import RunnerError
from ssebench.daemon.guard import make_folder, remove_folder


class Spool:
    """Logs in `folder` (the caller's; None: one of its own, removed at `close`)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.own = folder is None
        self.folder = make_folder("ssebench-logs-") if folder is None else folder
        self.logs: dict[str, Path] = {}
        self.latest: dict[tuple[str, int], str] = {}

    def new(self, key: str, index: int) -> tuple[str, Path]:
        """A new log for case `index` of check `key`, replacing its last one: (id, path)."""
        log_id = uuid.uuid4().hex
        old = self.latest.pop((key, index), None)
        if old is not None:
            with contextlib.suppress(OSError):  # gone with its folder, say
                self.logs.pop(old).unlink(missing_ok=True)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunnerError(f"cannot make the log folder {self.folder}: {exc}") from exc
        path = self.logs[log_id] = self.folder / f"{log_id}.log"
        self.latest[key, index] = log_id
        return log_id, path

    def path(self, log_id: str) -> Path | None:
        """The log `log_id` names, while it exists."""
        path = self.logs.get(log_id)
        return path if path is not None and path.exists() else None

    def close(self) -> None:
        if self.own:
            remove_folder(self.folder)


def log_owner(source: Path) -> tuple[int, int] | None:
    """Whose the saved long logs of this tree's cases are: the agent's, the tree's owner, when
    this process is root (so the agent can open the file the report names); else ours."""
    if os.geteuid() != 0:
        return None
    try:
        info = os.stat(source)
    except OSError:
        return None
    return info.st_uid, info.st_gid
