"""Whether the agent changed its tree since the runner copy's last sync, copying nothing.

A call's cases run on the tree as it was when the call began (one call, one tree); when the
agent edits meanwhile, the call says so. The sync's model (daemon/treemodel.py) holds what each
file and folder it carried was when it was taken (size, mtime, ctime, mode, inode: ctime
cannot be set back without privilege), so one status per entry of the model tells: a changed
file differs, and a file added, removed or renamed changes its folder. What the sync never
carries is not looked at: `.git`, protected paths, files it left out as build outputs. The walk
holds one descriptor, as the sync's does (daemon/confine/walk.py), so any depth is one folder
more; a folder the agent moved or swapped for a link meanwhile is a change.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ssebench.core.gitignore import Ignore
from ssebench.daemon.confine.walk import DIR_FLAGS, Chain
from ssebench.daemon.treemodel import Folder, Seen


def tree_changed(origin: Path, root: Folder, frozen: Ignore | None) -> bool:
    """Whether anything the model `root` holds of the tree at `origin` changed since it was
    taken (paths `frozen` protects aside: the copy keeps them as shipped)."""
    try:
        chain = Chain(os.open(origin, DIR_FLAGS))
    except OSError:
        return True  # gone, or no longer a folder
    try:
        return _differs(chain, root, frozen)
    except OSError:
        return True  # removed, moved or swapped for a link while we looked
    finally:
        chain.close()


def _differs(chain: Chain, root: Folder, frozen: Ignore | None) -> bool:
    if _other(root.seen, os.fstat(chain.fd)):
        return True
    stack: list[tuple[str, Iterator[tuple[str, Seen | Folder]]]]
    stack = [("", iter(root.entries.items()))]
    while stack:
        prefix, todo = stack[-1]
        for name, entry in todo:
            inner = isinstance(entry, Folder)
            if frozen is not None and frozen.excludes_itself(prefix + name, inner):
                continue
            if not isinstance(entry, Folder):
                if Seen.of(os.stat(name, dir_fd=chain.fd, follow_symlinks=False)) != entry:
                    return True
                continue
            if _other(entry.seen, chain.down(name)):
                return True
            stack.append((f"{prefix}{name}/", iter(entry.entries.items())))
            break
        else:
            stack.pop()
            if stack:
                chain.up()
    return False


def _other(seen: Seen | None, info: os.stat_result) -> bool:
    """Whether a folder is not what the sync left it (None: the sync never finished it)."""
    return seen is not None and Seen.of(info) != seen
