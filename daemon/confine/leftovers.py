"""What a case left in the machine's /tmp and /var/tmp, removed when it ends (Landlock).

Under Landlock a case writes the machine's own /tmp (programs write there whatever TMPDIR says),
so nothing it leaves there may reach a later case: its user's files are found where that user
can write (its own folders, folders anyone may write) and removed, never through a link.
Only a case user of its own is cleaned up after: it owns nothing before the case. A non-root
daemon's cases run as its own user, whose other processes keep files there too: nothing of
theirs can be told from the case's, so nothing is removed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ssebench.daemon.confine.policy import inside
from ssebench.daemon.guard import remove_tree


def owned(roots: tuple[str, ...], uid: int, skip: tuple[str, ...] = ()) -> Iterator[str]:
    """`uid`'s files and folders under `roots` (its folders whole, not entered), looking only
    in folders it can write: those it owns are yielded, and folders anyone may write entered
    (by a stack, not recursion: another daemon's case may leave a deep chain of them)."""
    pending = list(roots)
    while pending:
        try:
            found = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in found:
            if inside(entry.path, skip):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if info.st_uid == uid:
                    yield entry.path
                elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002:
                    pending.append(entry.path)


def remove(paths: list[str]) -> None:
    """Remove each path (a folder with all it holds, however deep: a case's 3,000-deep folder
    ended the supervisor in shutil.rmtree's recursion), never following a link, folders of
    mode 0 too (Go's module cache is read-only); what cannot go is left (clean-up is never an
    error)."""
    for path in paths:
        remove_tree(Path(path))
