"""One running case in the supervisor: its output copied into its log, and how it ended.

The case writes into a pipe, which is copied into the daemon's log file up to a bound (so a
case that prints without end cannot fill the disk), its sanitizers' reports copied in beside
it as they come (reports.py), within the same bound, its exit status read the same under every
mechanism, and the notes of why it was stopped appended to the log.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import time
from dataclasses import dataclass, field

from ssebench.core.case import CaseRun
from ssebench.daemon.confine import leftovers
from ssebench.daemon.confine import messages as wire
from ssebench.daemon.confine.broker import Broker
from ssebench.daemon.confine.disk import DiskWatch
from ssebench.daemon.confine.policy import Policy
from ssebench.daemon.confine.reports import Reports

STEP = 1 << 20
TICK = 0.5  # seconds the supervisor waits at most between two looks at what it runs
LIMIT_TICK = 0.25  # seconds between two looks at a running case's processes, memory and disk
SIGNALS = {int(signum) for signum in signal.valid_signals()}


def exit_status(status: int) -> tuple[int | None, int | None]:
    """(exit code, signal) of a wait status, the same under every mechanism.

    A process killed by signal N is (None, N). So is an exit status of 128+N: bubblewrap
    reports its case's death by signal N so, and a shell a child's; whether the case died of
    the signal itself or its shell reported one cannot be told apart under bubblewrap, so it
    is read as the signal everywhere.
    """
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    if code is not None and code - 128 in SIGNALS:
        return None, code - 128
    return code, None


@dataclass
class Case:
    id: str
    pid: int
    pipe: int
    log: int
    limit: int
    policy: Policy
    disk: DiskWatch
    broker: Broker | None = None
    reports: Reports | None = None
    written: int = 0
    dropped: int = 0
    status: int | None = None  # the shell's wait status, once reaped
    eof: bool = False
    killed: int = 0
    stop_at: float | None = None  # when a stop asked for turns into SIGKILL
    eof_by: float | None = None
    over: str = ""  # the limit it went over, which stopped it
    fault: str = ""  # why it says nothing of the patch: the machine failed it
    # The last look at its processes, memory and disk: the first a tick after its start
    # (most cases are over by then).
    checked_at: float = field(default_factory=time.monotonic)
    started: float = field(default_factory=time.monotonic)  # when its command was given

    def over_limits(self, count: int, memory: int) -> tuple[str, str]:
        """(the limit it went over, why the machine failed it), each "" when not, given the
        processes it runs and the memory they hold."""
        limits = self.policy.limits
        if count > limits.processes:
            return f"{limits.processes} processes", ""
        if memory > limits.memory_mb << 20:
            return f"{limits.memory_mb} MB of memory", ""
        kind, why = self.disk.look()
        return (why, "") if kind == "over" else ("", why)

    def copy(self) -> None:
        """Move what the pipe holds into the log, up to the limit; drop the rest. A log that
        cannot be written is a fault of the machine (a full disk), never of the patch."""
        while True:
            try:
                if self.written < self.limit:
                    moved = _splice(self.pipe, self.log, min(STEP, self.limit - self.written))
                    self.written += moved
                else:
                    moved = len(os.read(self.pipe, STEP))
                    self.dropped += moved
            except BlockingIOError:
                return
            except OSError as exc:
                if self.written >= self.limit:
                    raise  # the pipe itself failed
                self.fault = self.fault or f"cannot write the case's log: {exc.strerror}"
                self.limit = self.written
                continue
            if moved == 0:
                self.eof = True
                return

    def watched(self) -> list[int]:
        """What the supervisor waits on for this case: its output until it closes, its
        broker's calls, its report folder."""
        fds = [] if self.eof else [self.pipe]
        return fds + [w.fileno() for w in (self.broker, self.reports) if w is not None]

    def ready(self, fds: set[int]) -> None:
        """Move on what `fds` says is ready: the output first, so a report follows it."""
        if not self.eof and self.pipe in fds:
            self.copy()
        if self.reports is not None and self.reports.fileno() in fds:
            self.copy_reports()
        if self.broker is not None and self.broker.fileno() in fds:
            self.broker.handle()

    def copy_reports(self, final: bool = False) -> None:
        """Copy the reports' new bytes into the log (`final`: all of them, the case ended). A
        folder that cannot be read is said, and watched no more: never the supervisor's end."""
        more = self.reports is not None
        while more and self.reports is not None:
            try:
                data, skipped, more = self.reports.take(self.limit - self.written, final)
            except OSError as exc:
                self.reports.close()
                self.reports, more = None, False
                data, skipped = f"\n[ssebench: the sanitizer reports: {exc}]\n".encode(), 0
            self.dropped += skipped
            self.append(data)

    def append(self, data: bytes) -> None:
        """Write our own bytes into the log, up to its limit; what is past it is dropped."""
        kept = memoryview(data)[: max(0, self.limit - self.written)]
        self.dropped += len(data) - len(kept)
        try:
            while kept:
                moved = os.write(self.log, kept)
                self.written += moved
                kept = kept[moved:]
        except OSError as exc:
            self.fault = self.fault or f"cannot write the case's log: {exc.strerror}"
            self.limit = self.written
            self.dropped += len(kept)

    def wait(self, now: float) -> float:
        """Seconds until the next thing this case waits for is due (at most TICK)."""
        due = [self.stop_at] if self.stop_at and self.status is None else []
        if self.status is None:
            due.append(self.checked_at + LIMIT_TICK)
        due += [self.eof_by] if self.eof_by else []
        return max(0.0, min([TICK, *(at - now for at in due)]))

    def clean(self) -> None:
        """What the case left in /tmp goes; a machine short of disk at its end is a fault."""
        if self.disk.shared:
            leftovers.remove(list(leftovers.owned(self.disk.shared, self.disk.uid, self.disk.skip)))
        if not self.fault and not self.over:
            kind, why = self.disk.look()
            self.fault = why if kind == "fault" else ""

    def finish(self) -> wire.Ended:
        """Nothing of the case runs now: the last of its output and all its reports copied,
        what it left in /tmp removed, its log closed; how it ended."""
        self.copy()
        self.copy_reports(final=True)
        self.clean()
        notes = []
        if self.dropped and not self.fault:
            notes.append(
                f"this case printed more than its log's limit of {self.limit} bytes;"
                f" the {self.dropped} bytes after it were dropped"
            )
        if self.over:
            notes.append(f"this case went over its limit of {self.over} and was stopped")
        for note in notes:
            with contextlib.suppress(OSError):
                os.write(self.log, f"\n[ssebench: {note}]\n".encode())
        os.close(self.log)
        os.close(self.pipe)
        if self.broker is not None:
            self.broker.close()
        if self.reports is not None:
            self.reports.close()
        code, signum = exit_status(self.status or 0)
        seconds = round(time.monotonic() - self.started, 3)
        case = CaseRun(code, signum, False, seconds, killed=self.killed, dropped=self.dropped)
        return wire.Ended(self.id, case, self.fault)


def readable_fds(fds: list[int], timeout: float) -> set[int]:
    """The descriptors that can be read now or within `timeout` seconds (poll, not select:
    select cannot watch a descriptor numbered past 1023)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(timeout * 1000)}


def _splice(source: int, target: int, count: int) -> int:
    try:
        return os.splice(source, target, count)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
    data = os.read(source, count)  # a file system that cannot splice: copy by hand
    os.write(target, data)
    return len(data)
