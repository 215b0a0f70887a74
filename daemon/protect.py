"""task.toml's `protected` paths: put back in a graded copy as the pristine tree has them.

A patch is the agent's code, and it can rig its own grade by editing what the checks run (the
tests, the Makefile) or by adding what a runner loads by itself (a conftest.py). So before any
check of a grade runs, every path of the copy that a `protected` glob names is made what it is
in the pristine tree: a changed file restored, a deleted one brought back, one the patch added
removed. Both trees are read as data: no symbolic link is followed (a protected file the patch
turned into a link is replaced, never written through), nothing of git's is read. Nothing else
runs in the copy meanwhile (the patch is applied, no case has started), so a path's folders,
checked to be folders, stay folders while it is written.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from ssebench.core.gitignore import Ignore
from ssebench.core.toolfiles import OUTPUT_HEAD, TreeRules, build_output, tree_rules

_CHUNK = 1 << 20


def _walk(root: Path, rules: Ignore) -> Iterator[tuple[str, os.stat_result, bool]]:
    """Each entry under `root` (folders before what they hold, links never entered): its
    relative path, its lstat and whether a rule protects it."""
    stack = [""]
    while stack:
        folder = stack.pop()
        with os.scandir(root / folder) as entries:
            found = sorted(entries, key=lambda entry: entry.name, reverse=True)
        for entry in found:
            path = f"{folder}{entry.name}"
            info = entry.stat(follow_symlinks=False)
            is_folder = stat.S_ISDIR(info.st_mode)
            yield path, info, rules.excludes(path, is_folder)
            if is_folder:
                stack.append(f"{path}/")


def protected_entries(root: Path, rules: Ignore) -> dict[str, os.stat_result]:
    return {path: info for path, info, protected in _walk(root, rules) if protected}


def _same_content(a: Path, b: Path) -> bool:
    fa = os.open(a, os.O_RDONLY | os.O_NOFOLLOW)
    fb = os.open(b, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fa, "rb") as one, os.fdopen(fb, "rb") as other:
        while True:
            chunk = one.read(_CHUNK)
            if chunk != other.read(_CHUNK):
                return False
            if not chunk:
                return True


def _same(pristine: Path, copy: Path, was: os.stat_result, now: os.stat_result) -> bool:
    """Whether the copy's entry is the pristine one, as git would see it: the same kind, the
    same bytes (or link target) and, for a file, the same executable bit."""
    if stat.S_IFMT(was.st_mode) != stat.S_IFMT(now.st_mode):
        return False
    if stat.S_ISLNK(was.st_mode):
        return os.readlink(pristine) == os.readlink(copy)
    if stat.S_ISREG(was.st_mode):
        return (
            was.st_size == now.st_size
            and (was.st_mode & 0o100) == (now.st_mode & 0o100)
            and _same_content(pristine, copy)
        )
    return True  # a folder (its entries are judged each), a FIFO


def _remove(path: Path) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)  # never follows a link inside
    else:
        os.unlink(path)


def _keep_metadata(path: Path, info: os.stat_result) -> None:
    """Mode, times and (as root) owner of the pristine entry: the cases run as the tree's
    owner, and a build judges by times."""
    if os.geteuid() == 0:
        os.lchown(path, info.st_uid, info.st_gid)
    if not stat.S_ISLNK(info.st_mode):
        os.chmod(path, stat.S_IMODE(info.st_mode))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)


def _put_back(pristine: Path, copy: Path, info: os.stat_result) -> None:
    """The pristine entry, made anew at `copy` (where nothing is)."""
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(copy, 0o700)
    elif stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(pristine), copy)
    elif stat.S_ISFIFO(info.st_mode):
        os.mkfifo(copy, 0o600)
    elif stat.S_ISREG(info.st_mode):
        source = os.open(pristine, os.O_RDONLY | os.O_NOFOLLOW)
        target = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(source, "rb") as reader, os.fdopen(target, "wb") as writer:
            shutil.copyfileobj(reader, writer, _CHUNK)
    else:
        return  # a socket or a device: no source tree holds one, cp -a made what it could
    _keep_metadata(copy, info)


def _folders_of(pristine: Path, copy: Path, path: str, changed: set[str]) -> None:
    """Every folder on the way to `path` in the copy made a real folder again, where the
    patch replaced one by a file or a link (or removed it)."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        try:
            now = os.lstat(copy / folder)
        except FileNotFoundError:
            now = None
        if now is not None and stat.S_ISDIR(now.st_mode):
            continue
        if now is not None:
            os.unlink(copy / folder)
            changed.add(folder)
        _put_back(pristine / folder, copy / folder, os.lstat(pristine / folder))


def revert_protected(pristine: Path, copy: Path, rules: TreeRules) -> list[str]:
    """Every path of `copy` that `rules.protected` (gitignore-style) protect made as `pristine`
    has it, and every path that `rules.no_add` names and `pristine` lacks removed; the paths
    put back (files and links restored, brought back or removed), sorted."""
    changed: set[str] = set()
    if rules.protected:
        _put_back_protected(pristine, copy, Ignore.of(rules.protected), changed)
    if rules.no_add:
        _remove_added(pristine, copy, Ignore.of(rules.no_add), changed)
    return sorted(changed)


def _put_back_protected(pristine: Path, copy: Path, rules: Ignore, changed: set[str]) -> None:
    was = protected_entries(pristine, rules)
    now = protected_entries(copy, rules)
    for path, info in was.items():  # folders first: each is there before what it holds
        _folders_of(pristine, copy, path, changed)
        try:
            current = os.lstat(copy / path)
        except FileNotFoundError:
            current = None
        if current is not None and _same(pristine / path, copy / path, info, current):
            continue
        if current is not None:
            _remove(copy / path)
        _put_back(pristine / path, copy / path, info)
        if not stat.S_ISDIR(info.st_mode) or current is not None:
            changed.add(path)
    for path in now:  # what the patch added: a folder goes with all it holds
        if path not in was and os.path.lexists(copy / path):
            _remove(copy / path)
            inside = (p for p in now if p == path or p.startswith(f"{path}/"))
            changed.update(p for p in inside if not stat.S_ISDIR(now[p].st_mode))


def _remove_added(pristine: Path, copy: Path, rules: Ignore, changed: set[str]) -> None:
    """What the patch added where `rules` name (a folder with all it holds): removed."""
    named = protected_entries(copy, rules)
    gone: list[str] = []
    for path, info in named.items():  # folders before what they hold
        if any(path.startswith(f"{folder}/") for folder in gone):
            if not stat.S_ISDIR(info.st_mode):
                changed.add(path)
            continue
        if os.path.lexists(pristine / path):
            continue
        _remove(copy / path)
        if stat.S_ISDIR(info.st_mode):
            gone.append(path)
        else:
            changed.add(path)


def output_kind(path: Path) -> str | None:
    """What build output the regular file at `path` is by its first bytes (no link followed at
    its end), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return build_output(os.pread(fd, OUTPUT_HEAD, 0))
    finally:
        os.close(fd)


def drop_outputs(pristine: Path, copy: Path, paths: Iterable[str]) -> dict[str, str]:
    """Each file of `paths` that the copy holds as a build output (by its bytes, not its name)
    made as `pristine` has it (removed when new): a build's outputs come from the build. The
    paths dropped, each with what it was."""
    dropped: dict[str, str] = {}
    for path in sorted(set(paths)):
        inside = copy / path
        if ".." in path.split("/") or not os.path.realpath(inside).startswith(f"{copy}/"):
            continue  # git refused it already; nothing outside the copy is read
        if (kind := output_kind(inside)) is None:
            continue
        _remove(inside)
        with contextlib.suppress(FileNotFoundError):
            _put_back(pristine / path, inside, os.lstat(pristine / path))
        dropped[path] = kind
    return dropped


def order_times(copy: Path, touched: Iterable[str]) -> None:
    """Every file of `touched` made newer than any other file of the copy, so that an
    incremental build rebuilds what the patch changed (a shipped output dated later than the
    patched source would be taken as up to date)."""
    wanted = {path for path in touched if os.path.isfile(copy / path)}
    if not wanted:
        return
    rest = (info.st_mtime_ns for path, info, _ in _walk(copy, Ignore.of([])) if path not in wanted)
    newest = max((t for t in rest), default=0)
    oldest = min(os.lstat(copy / path).st_mtime_ns for path in wanted)
    if oldest > newest:
        return
    stamp = max(time.time_ns(), newest + 1_000_000_000)
    for path in wanted:
        os.utime(copy / path, ns=(stamp, stamp), follow_symlinks=False)


def rules_of(pristine: Path, protected: Sequence[str], modules: Iterable[str]) -> TreeRules:
    """The rules for grading a copy of `pristine` (core/toolfiles.py), read from it as data."""
    entries = (
        (path, stat.S_ISDIR(info.st_mode)) for path, info, _ in _walk(pristine, Ignore.of([]))
    )
    return tree_rules(entries, protected, functools.partial(read_lines, pristine), modules)


def read_lines(root: Path, path: str) -> list[str]:
    """A build file's lines, read without following a link at its end; none when unreadable."""
    try:
        fd = os.open(root / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return []
        return file.read(_CHUNK).decode("utf-8", "replace").splitlines()


def globs(raw: list[str], fail: Callable[[str], Exception]) -> tuple[str, ...]:
    """task.toml's `protected`, each glob a path of the tree; `fail(text)` for one that is not."""
    for glob in raw:
        if ".." in glob.removeprefix("!").split("/"):
            raise fail(f"{glob}: must be a path inside the source tree")
        try:
            Ignore.of([glob])
        except ValueError as exc:
            raise fail(str(exc)) from None
    return tuple(raw)


def unmatched_globs(tree: Path, patterns: Sequence[str]) -> list[str]:
    """The globs (a `!` one read without it) that match nothing in `tree`: likely misspelt."""
    left = {glob: Ignore.of([glob.removeprefix("!")]) for glob in patterns}
    for path, info, _ in _walk(tree, Ignore.of([])):
        is_folder = stat.S_ISDIR(info.st_mode)
        for glob in [g for g, rules in left.items() if rules.excludes(path, is_folder)]:
            del left[glob]
        if not left:
            break
    return list(left)
