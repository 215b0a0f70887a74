"""One finished case: one record from the runner, through the judge and the wire, to the report.

The runner fills in how the command ended; the daemon adds where its log lies and the check's
options, asks the check's `judge`, and sends the record (less the daemon-side fields) to the
orchestrator, which keeps it in the check's outcome. A field added here appears everywhere.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

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
    options: BaseModel | None = None  # the check's own task.toml keys, in the daemon only
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
        """This record as the daemon's callers in this process have it: what only its judge
        reads dropped (a path in another process's file system means nothing there). The
        sanitizers' status stays: no secret once its case has ended (each case draws its own),
        and a grade keeps it with the case's log so a rejudge reads what the judge read. The
        HTTP answer leaves it out as ever (DAEMON_SIDE)."""
        return replace(self, log_path=None, options=None)

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


@functools.cache
def _wire() -> TypeAdapter[CaseRun]:
    """Built at first use: a daemon in this process never puts a case on the wire, and `serve`
    starts sooner without it (bench/startup.py)."""
    return TypeAdapter(CaseRun)


def case_to_wire(case: CaseRun) -> dict[str, Any]:
    """The JSON object the daemon answers a run with."""
    wire: dict[str, Any] = _wire().dump_python(case, mode="json", exclude=set(DAEMON_SIDE))
    return wire


def case_from_wire(data: bytes | str) -> CaseRun:
    """The record back from the daemon's JSON; unknown fields are ignored (a newer daemon), and
    so are daemon-side ones."""
    return _wire().validate_json(data).off_the_daemon()
