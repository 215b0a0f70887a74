"""What the runner copy knows of the agent's tree, and why a tree may not be copied.

The model is a tree of folders, as the copy holds them: each file by what it was at the last
sync (by size, mtime, ctime and mode; ctime cannot be forged without privilege), each folder by
its entries' names, so it takes memory for names, never for paths (a 10,000-deep chain's
paths would be 10,000 strings of up to 20,000 characters).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from ssebench.daemon.treefiles import shown


class Seen(NamedTuple):
    """What a file of the agent's tree was at the last sync (a tuple: made and compared for
    every file at every sync, 3 times as fast as a frozen dataclass)."""

    size: int
    mtime: int
    ctime: int
    mode: int
    ino: int

    @classmethod
    def of(cls, info: os.stat_result) -> Seen:
        return cls(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode, info.st_ino)


@dataclass(eq=False)
class Folder:
    """A folder of the agent's that the copy holds: what it was when the copy's was last made
    like it (None: not yet), and its entries by name."""

    seen: Seen | None = None
    entries: dict[str, Seen | Folder] = field(default_factory=dict)

    def paths(self) -> Iterator[tuple[str, bool]]:
        """Every entry below, as a path of the tree and whether it is a folder (a walk without
        recursion: a chain may be deeper than Python's stack)."""
        stack: list[tuple[str, Folder]] = [("", self)]
        while stack:
            prefix, folder = stack.pop()
            for name, entry in folder.entries.items():
                is_folder = isinstance(entry, Folder)
                yield prefix + name, is_folder
                if isinstance(entry, Folder):
                    stack.append((f"{prefix}{name}/", entry))


class TreeRefused(Exception):
    """The agent's tree cannot be copied as it is (over its bound; a folder this process cannot
    read: `reason` the system's word for it): the agent's doing, so a case on it fails with
    `line` in its log, never an internal failure."""

    def __init__(self, line: str, reason: str | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.reason = reason


def over_bound(limit: int, largest: tuple[int, str]) -> TreeRefused:
    return TreeRefused(
        f"the source tree is over its limit of {limit >> 20} MB (limits.tree_mb), so this case "
        f"did not run; its largest file is {shown(largest[1])} ({largest[0] >> 20} MB)"
    )
