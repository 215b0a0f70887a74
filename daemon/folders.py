"""Each case's own folder, and those made ahead for the coming cases of a call's plan.

A case gets a folder of its own (its TMPDIR, HOME, sanitizer report folder, bound /tmp), made
fresh and removed after it while the next case starts: no other case can reach it, each sees
only its own. The plan's coming cases get theirs ahead, each with a sandbox waiting in it
(daemon/confine/pool.py); folders made for a case of the same check are kept for it, the
others go with their sandboxes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from pathlib import Path

from ssebench.daemon.confine.mechanism import Folders
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.guard import make_folder, remove_folder, remove_tree


class CaseFolders:
    """The case folders of one daemon, in one folder made now, reachable by path for the case
    user, and removed by the guard should this process die."""

    def __init__(self, user: CaseUser) -> None:
        self.user = user
        self.root = make_folder("ssebench-cases-", reachable=True)
        self.coming: list[tuple[str, Folders]] = []  # the coming cases' checks and folders
        self._removals: set[asyncio.Future[None]] = set()  # folders of ended cases

    def ahead(self, checks: Sequence[str]) -> list[tuple[str, Folders]]:
        """Folders for a coming case of each of `checks`, in order: those made before for a
        case of the same check kept, new ones made, the rest removed."""
        before, coming = list(self.coming), []
        for check in checks:
            same = next((i for i, (key, _) in enumerate(before) if key == check), None)
            coming.append(before.pop(same) if same is not None else (check, self._new()))
        for _, folders in before:
            self.remove(folders)
        self.coming = coming
        return coming

    def take(self, check: str) -> Folders:
        """A case's own folders: the first made ahead for a case of `check`, else new."""
        same = next((i for i, (key, _) in enumerate(self.coming) if key == check), None)
        return self.coming.pop(same)[1] if same is not None else self._new()

    def _new(self) -> Folders:
        folders = Folders(str(self.root / uuid.uuid4().hex))
        folders.make(self.user)
        return folders

    def remove(self, folders: Folders) -> None:
        """Remove `folders` in a worker thread (nothing of their case runs now)."""
        removal = asyncio.ensure_future(asyncio.to_thread(remove_tree, Path(folders.root)))
        self._removals.add(removal)
        removal.add_done_callback(self._removals.discard)

    async def settle(self) -> None:
        """Until every removal under way has finished."""
        if self._removals:
            await asyncio.wait(set(self._removals))

    def close(self) -> None:
        remove_folder(self.root, remove_tree)
