"""A walk of a tree of any depth by descriptors, never through a link: the runner copy's sync
(daemon/treesync.py), its removals, and the disk a case holds (disk.py) all walk trees an agent
or its case made, which may be deeper than any path (a 10,000-deep folder chain made by
relative names) and than Python's recursion or the descriptors a process may hold.

So a walk holds one descriptor per tree, goes down by name and up by `..`, and checks on the
way up that it came back to the folder it went down from: a folder moved meanwhile can never
take it outside the tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# What opening an entry listed a moment ago says when it is gone or became something else.
GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


class Moved(OSError):
    """A folder was moved while a walk was inside it: `..` is no longer where it came from."""

    def __init__(self) -> None:
        super().__init__(errno.ESTALE, "a folder was moved while it was walked")


class Chain:
    """One descriptor on a chain of folders of any depth: down by name (never through a link),
    up by `..`, checked against the folder it went down from (its device and inode)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        info = os.fstat(fd)
        self._trail = [(info.st_dev, info.st_ino)]

    @property
    def depth(self) -> int:
        return len(self._trail) - 1

    def down(self, name: str) -> os.stat_result:
        """Into the folder `name`; its status. OSError (and nothing moves) when it is none."""
        inner = os.open(name, DIR_FLAGS, dir_fd=self.fd)
        info = os.fstat(inner)
        os.close(self.fd)
        self.fd = inner
        self._trail.append((info.st_dev, info.st_ino))
        return info

    def up(self) -> None:
        """Back to the folder above; Moved when `..` is another folder than that one."""
        outer = os.open("..", DIR_FLAGS, dir_fd=self.fd)
        info = os.fstat(outer)
        if (info.st_dev, info.st_ino) != self._trail[-2]:
            os.close(outer)
            raise Moved()
        os.close(self.fd)
        self.fd = outer
        self._trail.pop()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def entries(top: int) -> Iterator[tuple[int, str, os.stat_result, list[str]]]:
    """Every entry below the folder `top` (not closed), depth first, however deep: the
    descriptor of its folder, its name, its status (a link's own) and the names of the folders
    on its way (the walk's own list: read it, keep none of it). What vanishes meanwhile, and a
    folder this process may not enter, are left out."""
    chain = Chain(os.dup(top))
    try:
        pending = [listing(chain.fd)]
        folders: list[str] = []
        while pending:
            if not pending[-1]:
                pending.pop()
                if pending:
                    chain.up()
                    folders.pop()
                continue
            name, info = pending[-1].pop()
            yield chain.fd, name, info, folders
            if stat.S_ISDIR(info.st_mode):
                try:
                    chain.down(name)
                except OSError as exc:
                    if exc.errno in (*GONE, errno.EACCES):
                        continue  # gone, no longer a folder, or closed to this process
                    raise
                pending.append(listing(chain.fd))
                folders.append(name)
    finally:
        chain.close()


def listing(folder: int) -> list[tuple[str, os.stat_result]]:
    """The folder's entries and their status (a link's own), in the order the folder gives."""
    found = []
    with os.scandir(folder) as each:
        for entry in each:
            with contextlib.suppress(FileNotFoundError):
                found.append((entry.name, entry.stat(follow_symlinks=False)))
    return found
