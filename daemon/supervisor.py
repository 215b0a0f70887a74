"""The case supervisor: a process per daemon that starts each case confined and ends all of it.

It is a child subreaper, so every process a case starts stays its descendant whatever it does
(setsid, double fork, env -u, a new name); when the case's shell ends, or the daemon says stop,
it kills every one of them. It is single-threaded, so it may run Python between fork and exec:
the Landlock domain and the capability drop are applied there. The case writes into a pipe,
which it copies into the daemon's log file up to a bound, so a case that prints without end
cannot fill the disk. When the daemon goes away (its socket closes) it kills what runs and exits.

Messages are the typed records of daemon/messages.py, one a packet over a SOCK_SEQPACKET socket
(the log file's fd rides along with `Run`): see daemon/runner.py, the daemon's side.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from ssebench.daemon import messages as wire
from ssebench.daemon.confine import Launcher, start
from ssebench.daemon.reaper import kill_all, signal_all, usage

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1 << 20
STEP = 1 << 20
EOF_WAIT = 5.0  # seconds to wait for the output to close once every process was killed
TICK = 0.5
LIMIT_TICK = 0.25  # seconds between two looks at a running case's processes and memory
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
    written: int = 0
    dropped: int = 0
    status: int | None = None  # the shell's wait status, once reaped
    eof: bool = False
    killed: int = 0
    stop_at: float | None = None  # when a stop asked for turns into SIGKILL
    eof_by: float | None = None
    over: str = ""  # the limit it went over, which stopped it

    def copy(self) -> None:
        """Move what the pipe holds into the log, up to the limit; drop the rest (and all of it
        once the log cannot be written: a full disk must not stop the case or the supervisor)."""
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
            except OSError:
                if self.written >= self.limit:
                    raise  # the pipe itself failed
                self.limit = self.written
            if moved == 0:
                self.eof = True
                return

    def finish(self) -> wire.Ended:
        notes = []
        if self.dropped:
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
        code, signum = exit_status(self.status or 0)
        return wire.Ended(self.id, code, signum, killed=self.killed, dropped=self.dropped)


def _splice(source: int, target: int, count: int) -> int:
    try:
        return os.splice(source, target, count)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
    data = os.read(source, count)  # a file system that cannot splice: copy by hand
    os.write(target, data)
    return len(data)


@dataclass
class Supervisor:
    sock: socket.socket
    launcher: Launcher | None = None
    cases: dict[str, Case] = field(default_factory=dict)
    checked_at: float = 0.0

    def send(self, message: wire.Message) -> None:
        with contextlib.suppress(OSError):
            self.sock.send(wire.encode(message))

    def setup(self, message: wire.Setup) -> None:
        if self.launcher is not None:
            self.launcher.close()
        self.launcher = Launcher(message.mechanism, message.policy)
        self.launcher.limit_own_processes()
        self.send(wire.Ready())

    def start(self, message: wire.Run, fds: list[int]) -> None:
        (log,) = fds
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        with contextlib.suppress(OSError):
            fcntl.fcntl(read_end, F_SETPIPE_SZ, PIPE_SIZE)
        os.set_blocking(read_end, False)
        try:
            if self.launcher is None:
                raise OSError("the supervisor was not set up")
            spec = self.launcher.launch(list(message.argv), message.case_dir, message.cwd)
            proc = start(
                spec, cwd=message.cwd, env=message.env, stdin=subprocess.DEVNULL,
                stdout=write_end, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            for fd in (read_end, write_end, log):
                os.close(fd)
            self.send(wire.Failed(message.id, str(exc)))
            return
        finally:
            with contextlib.suppress(OSError):
                os.close(write_end)
        # We reap every child ourselves (orphans included): this Popen must never wait for it.
        proc.returncode = 0
        case = Case(message.id, proc.pid, read_end, log, message.log_limit)
        self.cases[case.id] = case
        self.checked_at = time.monotonic()  # the first look a tick from now: most cases are over
        self.send(wire.Started(case.id, proc.pid))

    def stop(self, message: wire.Stop) -> None:
        case = self.cases.get(message.id)
        if case is not None and case.stop_at is None:
            case.stop_at = time.monotonic() + message.grace
            # bubblewrap dies of SIGTERM and takes its namespace with it at once: the case's
            # own processes get the grace, bubblewrap gets the SIGKILL after it.
            signal_all(signal.SIGTERM, spare="bwrap")

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for case in self.cases.values():
                if case.pid == pid:
                    case.status = status

    def check_limits(self, now: float) -> None:
        """Stop the running case once its processes or their memory go over its limits (the
        kernel bounds open files; processes too, but not for root)."""
        running = [case for case in self.cases.values() if case.status is None and not case.over]
        if not running or self.launcher is None or now < self.checked_at + LIMIT_TICK:
            return
        self.checked_at = now
        limits = self.launcher.policy.limits
        count, memory = usage()
        over = ""
        if count > limits.processes:
            over = f"{limits.processes} processes"
        elif memory > limits.memory_mb << 20:
            over = f"{limits.memory_mb} MB of memory"
        if over:
            killed = kill_all(self.reap)
            for case in running:
                case.over, case.killed = over, case.killed + killed

    def advance(self, now: float) -> None:
        """Move each case on: kill what is left once its shell ended (or a stop ran out, or
        it went over a limit), and answer once its output is closed."""
        self.check_limits(now)
        for case in list(self.cases.values()):
            if case.status is None and case.stop_at is not None and now >= case.stop_at:
                case.killed += kill_all(self.reap)
            if case.status is not None and case.eof_by is None:
                case.killed += kill_all(self.reap)
                case.eof_by = now + EOF_WAIT
            if case.status is not None and (case.eof or (case.eof_by or now) <= now):
                case.copy()
                del self.cases[case.id]
                self.send(case.finish())

    def wait(self) -> float:
        """Seconds until the next thing a case waits for is due (at most TICK)."""
        due = [c.stop_at for c in self.cases.values() if c.stop_at and c.status is None]
        if any(case.status is None for case in self.cases.values()):
            due.append(self.checked_at + LIMIT_TICK)
        due += [c.eof_by for c in self.cases.values() if c.eof_by]
        return max(0.0, min([TICK, *(at - time.monotonic() for at in due)]))

    def handle(self, data: bytes, fds: list[int]) -> None:
        try:
            message = wire.decode(data)
        except wire.MessageError:
            for fd in fds:
                os.close(fd)
            raise
        if isinstance(message, wire.Setup):
            self.setup(message)
        elif isinstance(message, wire.Run):
            self.start(message, fds)
        elif isinstance(message, wire.Stop):
            self.stop(message)
        else:
            raise wire.MessageError(f"not a message for the supervisor: {message.op}")

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        while True:
            pipes = {case.pipe: case for case in self.cases.values() if not case.eof}
            watched: list[Any] = [self.sock, wake_r, *pipes]
            ready, _, _ = select.select(watched, [], [], self.wait())
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
            for fd in ready:
                if fd in pipes:
                    pipes[fd].copy()
            self.reap()
            if self.sock in ready:
                data, fds, _, _ = socket.recv_fds(self.sock, 1 << 20, 4)
                if not data:
                    kill_all(self.reap)  # the daemon is gone: nothing it started may stay
                    return
                try:
                    self.handle(data, fds)
                except Exception as exc:  # a bad message or a setup failure: say so, go on
                    self.send(wire.Error(f"{type(exc).__name__}: {exc}"))
            self.advance(time.monotonic())


def main() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no same-uid reader of our memory
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl+C is the daemon's to handle
    # We write the logs: a file size limit lowered for the daemon would cut them (and kill us).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    sock = socket.socket(fileno=int(sys.argv[1]))
    Supervisor(sock).serve()


if __name__ == "__main__":
    main()
