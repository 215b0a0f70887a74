"""Files of a tree, by descriptors and never through a link: what the runner copy's sync does
to each (a case may have left a link where the sync writes), at any depth (the walk itself is
daemon/confine/walk.py's, which the trusted core measures a case's disk with)."""

from __future__ import annotations

import contextlib
import os
import stat

from ssebench.daemon.confine.walk import DIR_FLAGS, Chain

FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_file(folder: int, name: str) -> bytes:
    with os.fdopen(os.open(name, FILE_FLAGS & ~os.O_NONBLOCK, dir_fd=folder), "rb") as file:
        return file.read()


def is_folder(folder: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def clear(folder: int, name: str, *, keep_folder: bool = False) -> None:
    """Nothing at `name` in `folder` (a real folder stays when `keep_folder`), links never
    followed, at any depth: what a build left in the copy gives way to what the agent has
    there. A folder its owner made unreadable (Go's module cache is read-only) is opened up."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=folder)
    elif not keep_folder:
        _empty(folder, name)
        os.rmdir(name, dir_fd=folder)


def _empty(folder: int, name: str) -> None:
    """Everything in the folder `name` removed, one descriptor held, however deep it goes."""
    chain = Chain(os.dup(folder))
    try:
        _enter(chain, name)
        pending: list[list[str]] = [_clear_files(chain.fd)]  # each level's folders to empty
        names = [name]
        while pending:
            if pending[-1]:
                inner = pending[-1].pop()
                _enter(chain, inner)
                names.append(inner)
                pending.append(_clear_files(chain.fd))
                continue
            pending.pop()
            chain.up()
            done = names.pop()
            if pending:
                os.rmdir(done, dir_fd=chain.fd)
    finally:
        chain.close()


def _enter(chain: Chain, name: str) -> None:
    try:
        chain.down(name)
    except PermissionError:
        _open_up(chain.fd, name)
        chain.down(name)
    writable(chain.fd)


def writable(folder: int) -> bool:
    """A folder of ours that a case (our own user, under a non-root daemon) or the agent's
    modes left closed to us opened up (0700): False when it needed nothing."""
    info = os.fstat(folder)
    if os.geteuid() == 0 or info.st_mode & 0o700 == 0o700 or info.st_uid != os.geteuid():
        return False
    os.fchmod(folder, 0o700)
    return True


def _open_up(folder: int, name: str) -> None:
    """Mode 0700 for the folder `name`, never through a link (Linux has no lchmod: by its
    descriptor, opened as a path only)."""
    handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
    try:
        os.chmod(f"/proc/self/fd/{handle}", 0o700)
    finally:
        os.close(handle)


def _clear_files(folder: int) -> list[str]:
    """Everything in `folder` but its folders removed; the folders' names."""
    folders = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.name, dir_fd=folder)
    return folders


def shown(path: str) -> str:
    """A path of the agent's as one readable line: bytes that are no UTF-8 as \\xNN, a line
    break or other control character escaped."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def remove_path(path: str) -> None:
    """The folder (or file) at `path` gone, however deep it goes (shutil.rmtree recurses)."""
    parent, name = os.path.split(os.path.abspath(path))
    try:
        folder = os.open(parent, DIR_FLAGS)
    except FileNotFoundError:
        return
    try:
        clear(folder, name)
    finally:
        os.close(folder)
