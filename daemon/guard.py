"""The guard: a small process that removes the daemon's folders (spool, case folders) if it dies.

SIGKILL leaves the daemon no chance to clean up, so a process of its own, started on first
use, holds what must not outlive it. It reads registrations from a pipe whose write end only
the daemon holds; at end of input (the daemon is gone) it removes what is still registered.
(Running cases are the case supervisor's to end: it sees its socket close too.)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

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
for dir in "${!dirs[@]}"; do rm -rf -- "$dir"; done
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
    """The daemon's spool: removed by the guard should this process die before removing it."""
    _GUARD.own(folder)


def disown_folder(folder: Path) -> None:
    _GUARD.disown(folder)
