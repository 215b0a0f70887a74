"""Files of a tree, by descriptors and never through a link: what the runner copy's sync does
to each (a case may have left a link where the sync writes)."""

from __future__ import annotations

import os
import stat

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def copy_bytes(reader: int, writer: int) -> None:
    while True:
        try:
            moved = os.copy_file_range(reader, writer, 1 << 30)
        except OSError:
            moved = os.sendfile(writer, reader, None, 1 << 30)
        if moved == 0:
            return


def is_folder(folder: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def clear(folder: int, name: str, *, keep_folder: bool = False) -> None:
    """Nothing at `name` in `folder` (a real folder stays when `keep_folder`), links never
    followed: what a build left in the copy gives way to what the agent has there."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        if keep_folder:
            return
        inner = os.open(name, DIR_FLAGS, dir_fd=folder)
        try:
            for entry in os.listdir(inner):
                clear(inner, entry)
        finally:
            os.close(inner)
        os.rmdir(name, dir_fd=folder)
    else:
        os.unlink(name, dir_fd=folder)


def remove(root: int, path: str) -> None:
    """`path` (relative) gone from the copy, whatever it became there; never through a link."""
    parts = path.split("/")
    folder = os.dup(root)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, DIR_FLAGS, dir_fd=folder)
            except OSError:
                return  # its folder is gone already, or a link now: nothing of ours there
            os.close(folder)
            folder = inner
        clear(folder, parts[-1])
    finally:
        os.close(folder)
