"""What changed between two trees, written as `git diff --binary` writes it, without git.

`ssebench run --prediction-out` turns what an agent did to the task's tree into the patch a
benchmark run grades. That tree is the agent's: git would read configuration, attributes and
hooks from it (a planted `.gitattributes` filter runs a command; an `eol` rule rewrites bytes),
and task images often have no git at all. So the trees are compared here, every file read as
bytes and no symbolic link followed, and the patch is what `git apply` takes: text hunks with
three lines of context, other files as `GIT binary patch` literals, new and deleted files,
modes and links. New files that the shipped tree's .gitignore excludes (build outputs) are
left out: a prediction is source.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ssebench.core.gitignore import Ignore

NULL_ID = "0" * 40
_BINARY_PROBE = 8000  # git's rule: a NUL byte in the first 8000 bytes makes a file binary
_LINE = 52  # bytes per line of a binary literal


@dataclass(frozen=True)
class _Entry:
    path: Path
    mode: int  # 0o100644, 0o100755 or 0o120000 (a link), as git writes them

    def data(self) -> bytes:
        if self.mode == 0o120000:
            return os.fsencode(os.readlink(self.path))
        fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as file:
            return file.read()


def scan(root: Path) -> dict[str, _Entry]:
    """Every regular file and link under `root` by its relative path; `.git` folders left out."""
    found = {}
    for here, folders, names in os.walk(root):
        links = [name for name in folders if os.path.islink(os.path.join(here, name))]
        folders[:] = [name for name in folders if name != ".git" and name not in links]
        for name in names + links:  # a link to a folder is listed with the folders
            path = Path(here, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                mode = 0o120000
            elif stat.S_ISREG(info.st_mode):
                mode = 0o100755 if info.st_mode & 0o100 else 0o100644
            else:
                continue  # a FIFO or a socket: git keeps none either
            found[path.relative_to(root).as_posix()] = _Entry(path, mode)
    return found


def diff_trees(before: Path, after: Path) -> bytes:
    """The patch that turns `before` into `after` (empty when they are the same)."""
    old, new = scan(before), scan(after)
    ignore = Ignore(before)
    paths = set(old) | {path for path in new if path not in old and not ignore.excludes(path)}
    keys = sorted(paths, key=lambda path: path.encode("utf-8", "surrogateescape"))
    return b"".join(b"".join(_file(path, old.get(path), new.get(path))) for path in keys)


def _file(path: str, a: _Entry | None, b: _Entry | None) -> Iterator[bytes]:
    if a is not None and b is not None and (a.mode == 0o120000) != (b.mode == 0o120000):
        yield from _file(path, a, None)  # a file became a link or back: git deletes and adds
        yield from _file(path, None, b)
        return
    old, new = (a.data() if a else None), (b.data() if b else None)
    if a is not None and b is not None and old == new and a.mode == b.mode:
        return
    yield b"diff --git " + _name("a/", path) + b" " + _name("b/", path) + b"\n"
    if a is None and b is not None:
        yield b"new file mode %o\n" % b.mode
    elif b is None and a is not None:
        yield b"deleted file mode %o\n" % a.mode
    elif a is not None and b is not None and a.mode != b.mode:
        yield b"old mode %o\nnew mode %o\n" % (a.mode, b.mode)
    if (old or b"") == (new or b""):
        return  # a mode change, or an empty file added or deleted: no hunk
    if _binary(old) or _binary(new):
        yield from _binary_hunks(old, new)
        return
    yield b"--- " + (_name("a/", path, tab=True) if a else b"/dev/null") + b"\n"
    yield b"+++ " + (_name("b/", path, tab=True) if b else b"/dev/null") + b"\n"
    lines = difflib.diff_bytes(
        difflib.unified_diff, (old or b"").splitlines(True), (new or b"").splitlines(True), n=3
    )
    for line in list(lines)[2:]:  # difflib's own ---/+++ lines, replaced above
        yield line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n"


def _binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:_BINARY_PROBE]


def _blob_id(data: bytes | None) -> bytes:
    if data is None:
        return NULL_ID.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest().encode()


def _binary_hunks(old: bytes | None, new: bytes | None) -> Iterator[bytes]:
    """`git diff --binary`'s form: the whole new content, then the whole old (to reverse)."""
    yield b"index " + _blob_id(old) + b".." + _blob_id(new) + b"\n"
    yield b"GIT binary patch\n"
    for data in (new or b"", old or b""):
        packed = zlib.compress(data, 9)
        yield b"literal %d\n" % len(data)
        for start in range(0, len(packed), _LINE):
            chunk = packed[start : start + _LINE]
            size = len(chunk)
            yield bytes([ord("A") + size - 1 if size <= 26 else ord("a") + size - 27])
            yield base64.b85encode(chunk, pad=True) + b"\n"
        yield b"\n"


_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r",
            34: b'\\"', 92: b"\\\\"}  # fmt: skip


def _name(prefix: str, path: str, *, tab: bool = False) -> bytes:
    """A path as git writes it: C-quoted when it holds a quote, a backslash, a control
    character or a byte past ASCII; a tab after a name with a space on the ---/+++ lines."""
    raw = (prefix + path).encode("utf-8", "surrogateescape")
    if any(byte < 32 or byte >= 127 or byte in (34, 92) for byte in raw):
        quoted = b"".join(
            _ESCAPES.get(byte, b"\\%03o" % byte if byte < 32 or byte >= 127 else bytes([byte]))
            for byte in raw
        )
        return b'"' + quoted + b'"'
    return raw + (b"\t" if tab and b" " in raw else b"")
