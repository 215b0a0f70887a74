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
import shutil
import stat
from collections.abc import Iterator

from ssebench.daemon.confine.policy import inside


def owned(roots: tuple[str, ...], uid: int, skip: tuple[str, ...] = ()) -> Iterator[str]:
    """`uid`'s files and folders under `roots` (its folders whole, not entered), looking only
    in folders it can write: those it owns are yielded, and folders anyone may write entered."""
    for root in roots:
        yield from _walk(root, uid, skip)


def _walk(folder: str, uid: int, skip: tuple[str, ...]) -> Iterator[str]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if inside(entry.path, skip):
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid:
                yield entry.path
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002:
                yield from _walk(entry.path, uid, skip)


def remove(paths: list[str]) -> None:
    """Remove each path (a folder with all it holds), never following a link; what cannot go
    is left (clean-up is never an error)."""
    for path in paths:
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                _unlock(path)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


def _unlock(folder: str) -> None:
    """A case may leave folders of mode 0 (Go's module cache is read-only): open them up."""
    for here, folders, _ in os.walk(folder):
        for name in folders:
            path = os.path.join(here, name)
            with contextlib.suppress(OSError):
                if not os.path.islink(path):
                    os.chmod(path, 0o700)
