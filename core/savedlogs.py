"""Saved long logs: where they go, whose they are, and how many a folder keeps.

The server may run as root while the agent runs as the source tree's owner, who must be able
to open the file a report names, and no other user: a saved log is given to that user and
readable by it only, in folders anyone may enter. Calls must not fill the disk: a folder keeps
only the newest saved logs.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path

# Saved logs are pruned as new ones are saved: a folder keeps the newest KEEP_LOGS, fewer if
# they hold more than KEEP_BYTES together (the newest is always kept). The agent needs the file
# its latest report names; a call's log replaces the last call's as what it reads.
KEEP_LOGS = 10
KEEP_BYTES = 2 << 30
_SAVED_NAME = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.txt"
)
Owner = tuple[int, int]  # (uid, gid): whose a saved log is, so the agent can open it


def _make_folder(folder: Path) -> None:
    """`folder` and its missing parents, each one the agent's user can enter (0755, whatever
    the umask): the files in it are the agent's own, each readable by its owner only.

    Each is changed through a descriptor that refuses a symbolic link: a parent the agent made
    first (/tmp/mcp, say) could otherwise have ours swapped for a link to a folder of root's.
    """
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir()
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                os.fchmod(fd, 0o755)
            finally:
                os.close(fd)


def prune(log_dir: Path, keep: int = KEEP_LOGS, keep_bytes: int = KEEP_BYTES) -> None:
    """Remove the saved logs beyond the newest `keep`, or beyond `keep_bytes` together (the
    newest stays whatever its size). Only files named as ssebench names them are touched."""
    found = []
    with contextlib.suppress(OSError), os.scandir(log_dir) as entries:
        for entry in entries:
            if _SAVED_NAME.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.append((info.st_mtime_ns, info.st_size, entry.path))
    total = 0
    for rank, (_, size, path) in enumerate(sorted(found, reverse=True)):
        total += size
        if rank >= keep or (rank and total > keep_bytes):
            with contextlib.suppress(OSError):
                os.unlink(path)


def new_log_path(log_dir: Path) -> Path:
    """Where the next saved log goes; the folder made if needed, older logs pruned to make
    room for it."""
    _make_folder(log_dir)
    prune(log_dir, KEEP_LOGS - 1)
    return log_dir / f"{uuid.uuid4()}.txt"


def hand_over(fd: int, owner: Owner | None) -> None:
    """The saved log open as `fd` is the agent's: its user's (when we may give it away),
    readable by it only. Through the descriptor, never the name: the folder may be the agent's,
    and a name swapped for a link would have root change another file."""
    if owner is not None and os.geteuid() == 0:
        os.fchown(fd, *owner)
    os.fchmod(fd, 0o600)
