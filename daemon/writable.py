"""A task's writable folders (`writable = ["/out"]`): the case user's for the daemon's life.

An in-image build writes outside its tree (OSS-Fuzz's `compile` writes /out and /work). When
the daemon starts, each folder becomes the case user's: a missing one is made, an empty one
handed over (its owner and mode kept, to be given back). One that holds anyone else's files is
refused in one line: the case user would own the folder, so it could remove or replace them
(`writable = ["/etc/app"]` by mistake, or another daemon's build outputs). When the daemon
stops, what the cases left is removed and the folder given back, or removed if it was made.

The exception is a fresh container of the task's image that ssebench owns (`--backend
docker`'s, told by `--fresh-container`): there the image's own outputs (an OSS-Fuzz image's
prebuilt /out) are the task's as shipped, the container goes when the grade ends, and the
folders are taken over as they are.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.policy import CaseUser, Grant
from ssebench.daemon.guard import remove_tree


@dataclass(frozen=True)
class _Taken:
    path: Path
    made: bool  # made for the daemon: removed when it stops
    owner: tuple[int, int, int] | None  # (uid, gid, mode) to give back; None: keep as it is


def _others(folder: Path, user: CaseUser) -> tuple[int, str] | None:
    """The first entry under `folder` (the folder aside) that is not `user`'s: its owner and
    path; no link is followed."""
    for here, folders, files in os.walk(folder):
        for name in sorted([*folders, *files]):
            path = os.path.join(here, name)
            with contextlib.suppress(FileNotFoundError):
                uid = os.lstat(path).st_uid
                if uid != user.uid:
                    return uid, path
    return None


def _hand_over(folder: Path, user: CaseUser) -> None:
    for here, folders, files in os.walk(folder):
        for name in (".", *folders, *files):
            os.lchown(os.path.join(here, name), user.uid, user.gid)


def _remove(path: Path) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        remove_tree(path)
    else:
        path.unlink()


class WritableFolders:
    """The task's writable folders, taken for `user` now (`take_over`: as they are, in a fresh
    container of the image), given back by `close`."""

    def __init__(self, folders: tuple[Path, ...], user: CaseUser, *, take_over: bool) -> None:
        self.user = user
        self.taken: list[_Taken] = []
        try:
            for folder in folders:
                self.taken.append(self._take(folder, take_over))
        except OSError as exc:
            self.close()
            raise ConfigError(f"writable: {exc.filename or ''}: {exc.strerror or exc}") from None
        except ConfigError:
            self.close()
            raise

    @property
    def grants(self) -> tuple[Grant, ...]:
        return tuple(Grant(str(t.path), os.path.realpath(t.path)) for t in self.taken)

    def _take(self, folder: Path, take_over: bool) -> _Taken:
        if not os.path.lexists(folder):
            os.makedirs(folder, 0o755)
            os.chmod(folder, 0o755)  # whatever the umask: the case user's build outputs
            if self.user.switched:
                os.chown(folder, self.user.uid, self.user.gid)
            return _Taken(folder, True, None)
        info = os.stat(folder)
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"writable: {folder}: is not a folder")
        other = None if take_over else _others(folder, self.user)
        if other is not None:
            uid, path = other
            raise ConfigError(
                f"writable: {folder} holds files of others (uid {uid}: {path}); cases may "
                "write only a folder that is empty or theirs: empty it"
            )
        if not self.user.switched:
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ConfigError(f"writable: {folder}: this user cannot write in it")
            return _Taken(folder, False, None)
        owner = None if take_over else (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode))
        _hand_over(folder, self.user)
        if owner is not None:
            os.chmod(folder, owner[2] | stat.S_IRWXU)
        return _Taken(folder, False, owner)

    def close(self) -> None:
        """What the cases left goes; each folder is given back (or removed, if made)."""
        for taken in reversed(self.taken):
            with contextlib.suppress(OSError):
                if taken.made:
                    remove_tree(taken.path)
                elif taken.owner is not None:
                    for entry in os.listdir(taken.path):
                        _remove(taken.path / entry)
                    uid, gid, mode = taken.owner
                    os.chown(taken.path, uid, gid)
                    os.chmod(taken.path, mode)
        self.taken.clear()
