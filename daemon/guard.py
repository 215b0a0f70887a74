"""ssebench's own temporary folders, and the guard that removes them should the daemon die first.

SIGKILL leaves the daemon no chance to clean up, so a process of its own, started on first
use, holds what must not outlive it. It reads registrations from a pipe whose write end only
the daemon holds; at end of input (the daemon is gone) it removes what is still registered.
(Running cases are the case supervisor's to end: it sees its socket close too.)

Every such folder (spool, case folders, grading copies) lies in one parent per user,
`$TMPDIR/ssebench-<uid>`, that can be entered but not listed (0711: a case running as the
tree's owner reaches its own folder in it by path, and every name in it is random), refused if
another user made it, and removed by whoever leaves it empty: while a daemon lives its own
folders keep the parent there, so the daemon's cases can be kept from all of it (every
daemon's folders, even ones made later) by one path that does not come and go.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.treefiles import remove_path

# Reads "+ DIR" / "- DIR" lines; at end of input, which comes when every copy of the write end
# is closed (our process died), it removes the folders still registered.
_GUARD_SCRIPT = """
declare -A dirs
while IFS= read -r line; do
  case "$line" in
    "+ "*) dirs[${line#+ }]=1 ;;
    "- "*) unset "dirs[${line#- }]" ;;
  esac
done
for dir in "${!dirs[@]}"; do
  rm -rf -- "$dir"
  parent=$(dirname -- "$dir")
  case "${parent##*/}" in ssebench-*) rmdir -- "$parent" 2>/dev/null ;; esac
done
"""


class _Guard:
    """The process-wide guard: started on first use, ends when its pipe closes with us.

    It runs in its own session with no output, so neither a terminal's signals nor a reader
    of our stdout ever waits on it. What is registered is also kept here, so a guard that had
    to be started again (it was killed, or we are a forked child) learns all of it. It is best
    effort: a guard that cannot start or stalls costs the protection, never a run.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipe: int | None = None
        self._pid = 0  # the process that started the guard
        self._lines: set[str] = set()

    def own(self, folder: Path) -> None:
        """Remove `folder` if we die without doing it ourselves."""
        if "\n" not in str(folder):
            self._register(f"+ {folder}", f"- {folder}")

    def disown(self, folder: Path) -> None:
        if "\n" not in str(folder):
            self._register(f"- {folder}", f"+ {folder}")

    def _register(self, line: str, undone: str) -> None:
        if undone in self._lines:
            self._lines.discard(undone)
        elif line.startswith("+"):
            self._lines.add(line)
        else:
            return  # never registered: nothing to tell
        alive = self._proc is not None and self._proc.poll() is None
        if alive and self._pipe is not None and self._pid == os.getpid():
            self._write(f"{line}\n")
        elif self._lines:
            self._start()

    def _write(self, text: str) -> None:
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.write(self._pipe, text.encode())

    def _start(self) -> None:
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe)  # in a forked child, the parent's copy: it is not ours
        self._pipe = None
        read_end, write_end = os.pipe()
        try:
            self._proc = subprocess.Popen(
                ["bash", "-c", _GUARD_SCRIPT],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            os.close(write_end)
            return
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)  # a stalled guard must not block the event loop
        self._pipe = write_end
        self._pid = os.getpid()
        self._write("".join(f"{line}\n" for line in sorted(self._lines)))


_GUARD = _Guard()


def own_folder(folder: Path) -> None:
    """Removed by the guard should this process die before removing it."""
    _GUARD.own(folder)


def disown_folder(folder: Path) -> None:
    _GUARD.disown(folder)


def private_parent() -> Path:
    """`$TMPDIR/ssebench-<uid>`: where every folder of ssebench's lies, none of it a case's."""
    return Path(os.path.realpath(tempfile.gettempdir())) / f"ssebench-{os.geteuid()}"


def _parent() -> Path:
    """The private parent, made if missing. It can be entered but not listed (0711): a case
    running as another user (the tree's owner) must reach its own folder inside by path,
    while every name in it is random. Another user's folder of that name is refused."""
    parent = private_parent()
    with contextlib.suppress(FileExistsError):
        os.mkdir(parent, 0o711)
    info = os.lstat(parent)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        owner = f"uid {info.st_uid}" if stat.S_ISDIR(info.st_mode) else "not a folder"
        raise ConfigError(
            f"{parent} belongs to another user ({owner}): ssebench will not use it; remove "
            "it, or set TMPDIR to a folder of your own"
        )
    if stat.S_IMODE(info.st_mode) != 0o711:
        os.chmod(parent, 0o711)
    return parent


def make_folder(prefix: str, *, reachable: bool = False) -> Path:
    """A new folder of ours in the private parent, removed by the guard if we die.

    `reachable` folders (0711) hold what a case running as another user must reach by path
    (its own folder, the source tree of a grade); the others (spools) are 0700."""
    for _ in range(10):
        parent = _parent()
        try:
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        except FileNotFoundError:
            continue  # another daemon found the parent empty and removed it just now
        if reachable:
            os.chmod(folder, 0o711)
        own_folder(folder)
        return folder
    raise OSError(f"cannot make a folder in {private_parent()}")


def remove_tree(folder: Path) -> None:
    """Remove `folder` however deep it goes (shutil.rmtree recurses: a case's 3,000-deep
    folder would end it), also what a case left read-only (Go's module cache does, say); what
    still cannot go is left (never an error: it is only clean-up)."""

    def unlock(function: Callable[[str], object], path: str, exc_info: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            function(path)

    try:
        remove_path(str(folder))
    except OSError:
        if folder.exists():
            with contextlib.suppress(RecursionError):
                shutil.rmtree(folder, onerror=unlock)  # what can go, goes


def remove_folder(folder: Path, remove: Callable[[Path], None] | None = None) -> None:
    """Remove a folder of `make_folder`'s, and the parent when it was the last one there."""
    if remove is None:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        remove(folder)
    disown_folder(folder)
    with contextlib.suppress(OSError):
        os.rmdir(folder.parent)
