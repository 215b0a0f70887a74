"""One finished case: one record, built once, extended on its way up, never copied.

The case supervisor builds it when the case ends (how the command ended, what it left behind,
how long it ran); the runner adds whether its time ran out; the case service adds where its log
lies and the check's options and asks the check's `judge`, whose verdict it adds; the
orchestrator keeps it in the check's outcome, and the grade's JSON reads its fields off it. Only
the HTTP adapter drops the daemon-side fields (a path in another process's file system means
nothing there). A field added here appears everywhere. Light: the trusted core imports it (no
pydantic).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

    Options = BaseModel  # a check's own task.toml keys, as its `options` model reads them
else:
    Options = object  # resolved at run time without pydantic (the supervisor decodes records)

_SCAN_CHUNK = 1 << 20
_LINE_OVERLAP = 1 << 16
# Known only inside the daemon, for its judge; the wire carries `log_id` instead of the path.
DAEMON_SIDE = frozenset({"log_path", "options", "sanitizer_exit"})
# The statuses a case's sanitizers may be told to end it with (one N drawn for each case): above
# what programs use for their own errors (1-10 or so: xmllint, curl, wget) and sysexits.h
# (64-78; 77 is also automake's "skipped"), below timeout(1)'s 124, git bisect's 125 (skip),
# the shell's 126 and 127 and the 128+N of a signal. A program whose own statuses lie here has
# its task set `exitcode` itself (docs/tasks.md). So a status here tells nothing across cases.
SANITIZER_EXITS = tuple(range(79, 124))


@dataclass(frozen=True)
class CaseRun:
    """A case of a check, run once. `judge` sees it with `log_path`, `options` and
    `sanitizer_exit` set.

    The log stays on disk: a judge that needs the output scans it with `log_search`.
    """

    exit_code: int | None  # None when a signal ended it, or it did not run (a tree refused)
    signal: int | None
    timed_out: bool
    seconds: float
    log_path: Path | None = None  # the spooled log, in the daemon only
    options: Options | None = None  # the check's own task.toml keys, in the daemon only
    key: str = ""
    index: int = 0
    passed: bool = False  # the judge's verdict
    log_id: str = ""
    log_size: int = 0
    killed: int = 0  # processes the case left behind, killed when its shell ended or it stopped
    dropped: int = 0  # bytes of its output past the log's limit, not kept
    # The status its sanitizers were told to end it with (daemon/sanitizers.py), in the daemon
    # only: a judge's to read, as the log is; None when the task sets `exitcode` itself.
    sanitizer_exit: int | None = None

    def off_the_daemon(self) -> CaseRun:
        """This record as a caller in another process has it: what only the daemon's judge
        reads dropped (the HTTP adapter's to do, and the wire's)."""
        return replace(self, log_path=None, options=None, sanitizer_exit=None)

    def log_search(self, pattern: re.Pattern[bytes]) -> bool:
        """Whether `pattern` matches in the log, read in chunks so a huge log never sits in memory.

        Each search covers whole lines only (an unfinished line waits for the next chunk), so
        `^` and `$` mean what they say. A match spanning lines across two chunks is not found;
        a single line longer than 4 MiB is searched in overlapping pieces.
        """
        if self.log_path is None:
            raise ValueError("this case's log is in the daemon; log_search runs in a judge")
        pending = b""
        with self.log_path.open("rb") as log:
            while chunk := log.read(_SCAN_CHUNK):
                data = pending + chunk
                cut = data.rfind(b"\n") + 1  # the end of the last whole line
                if cut == 0 and len(data) > 4 * _SCAN_CHUNK:
                    if pattern.search(data):
                        return True
                    pending = data[-_LINE_OVERLAP:]
                    continue
                if cut and pattern.search(data, 0, cut):
                    return True
                pending = data[cut:]
        return bool(pending) and pattern.search(pending) is not None
