"""One file or link of the agent's tree into the runner copy: by descriptors, never through a
link, the case user's, its times kept (so make sees what changed), its holes kept.

A sparse file stays sparse: a 16 GiB file of holes is a few reads of where its data lies,
where the kernel's own copy (copy_file_range, sendfile) writes every hole as zeros on ext4 and
tmpfs. The daemon copies as root, outside any case's disk limit: that copy must cost what the
agent's file costs on disk, not what its size says.
"""

from __future__ import annotations

import errno
import os
import stat

from ssebench.core.toolfiles import OUTPUT_HEAD, build_output
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.walk import GONE
from ssebench.daemon.treefiles import FILE_FLAGS

SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID  # never carried: the copy is the case user's
_STEP = 1 << 30


def carry(source: int, target: int, name: str, temp: str, info: os.stat_result,
          user: CaseUser) -> bool:  # fmt: skip
    """The file or link `name` of the folder `source`, seen as `info`, written as `temp` in the
    folder `target` (which holds no `temp`). False when it is gone or another kind of file
    since it was seen: the next sync takes what is there. PermissionError when this process
    may not read it."""
    if stat.S_ISLNK(info.st_mode):
        try:
            link = os.readlink(name, dir_fd=source)
        except OSError as exc:
            if exc.errno in (*GONE, errno.EINVAL):  # EINVAL: no longer a link
                return False
            raise
        os.symlink(link, temp, dir_fd=target)
        if user.switched:
            os.chown(temp, user.uid, user.gid, dir_fd=target, follow_symlinks=False)
    elif not _carry_file(source, target, name, temp, info, user):
        return False
    os.utime(temp, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=target, follow_symlinks=False)
    return True


def _carry_file(source: int, target: int, name: str, temp: str, info: os.stat_result,
                user: CaseUser) -> bool:  # fmt: skip
    try:
        reader = os.open(name, FILE_FLAGS, dir_fd=source)
    except OSError as exc:
        if exc.errno in GONE:
            return False
        raise
    try:
        if not stat.S_ISREG(os.fstat(reader).st_mode):
            return False  # swapped since it was listed
        writer = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600,
                         dir_fd=target)  # fmt: skip
        try:
            sparse = info.st_blocks * 512 < info.st_size  # holes, or nothing on disk yet
            copy_data(reader, writer, info.st_size, sparse=sparse)
            own(writer, info, user)
        finally:
            os.close(writer)
    finally:
        os.close(reader)
    return True


def own(fd: int, info: os.stat_result, user: CaseUser) -> None:
    """The copy's file or folder `fd` made the case user's, with the agent's modes (less
    setuid and setgid)."""
    if user.switched:
        os.fchown(fd, user.uid, user.gid)
    os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~SPECIAL_BITS)


def copy_data(reader: int, writer: int, size: int, *, sparse: bool) -> None:
    """The first `size` bytes of `reader` into the empty `writer`. A `sparse` file's holes stay
    holes (only its data is read and written, found by SEEK_DATA and SEEK_HOLE: the kernel's
    own copy writes a hole as zeros on ext4 and tmpfs), so a 1 TiB file of holes costs nothing.
    Never more than `size`: a file the agent appends to while it is copied ends where it was
    seen, and the next sync takes the rest."""
    if not sparse:
        _copy_range(reader, writer, 0, size)
        return
    offset = 0
    while offset < size:
        try:
            start = os.lseek(reader, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # holes to the end
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
            start, end = offset, size  # a file system that knows no holes: all data
        else:
            end = os.lseek(reader, start, os.SEEK_HOLE)
        if start >= size:
            break
        end = min(end, size)
        _copy_range(reader, writer, start, end)
        offset = end
    os.ftruncate(writer, size)


def _copy_range(reader: int, writer: int, start: int, end: int) -> None:
    """Bytes `start` to `end` of `reader` to the same place in `writer`, by the kernel where
    it can (copy_file_range), else by sendfile; earlier, when the file got shorter."""
    while start < end:
        try:
            moved = os.copy_file_range(reader, writer, min(end - start, _STEP), start, start)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            os.lseek(writer, start, os.SEEK_SET)
            moved = os.sendfile(writer, reader, start, min(end - start, _STEP))
        if moved == 0:
            return
        start += moved


def is_output(source: int, name: str, info: os.stat_result) -> bool:
    """Whether the regular file `name` of the folder `source` is a build output by its first
    bytes (core/toolfiles.py): the runner copy does not carry one, as a grade drops it."""
    if not stat.S_ISREG(info.st_mode):
        return False
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=source)  # fmt: skip
    except OSError:
        return False  # gone or swapped since listed: carry() says what it finds
    try:
        return build_output(os.pread(fd, OUTPUT_HEAD, 0)) is not None
    finally:
        os.close(fd)
