"""The case supervisor: a process per daemon that runs one case at a time, confined, and ends all
of it.

It is a child subreaper, so every process a case starts stays its descendant whatever it does
(setsid, double fork, env -u, a new name); when the case's shell ends, or the daemon says stop,
it kills every one of them but the standbys waiting for the coming cases (pool.py), which it
makes while no case runs. Before a case starts it shapes the case user's permissions for the
case's check (access.py); while it runs it answers the case's connect() calls (broker.py),
copies its sanitizers' reports into its log (reports.py) and watches its processes, memory
and disk; when it ends it removes what the case left in /tmp.
It is single-threaded, so it may run Python between fork and exec. When the daemon goes away
(its socket closes) it kills what runs, undoes the permissions it gave, and exits. Messages
are messages.py's records, one a SOCK_SEQPACKET packet (the log's fd rides along with `Run`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import signal
import socket
import sys
import time
from dataclasses import dataclass, field

from ssebench.daemon.confine import messages as wire
from ssebench.daemon.confine.access import AccessError, View, plan_policy, readable
from ssebench.daemon.confine.broker import Broker
from ssebench.daemon.confine.choice import confinement
from ssebench.daemon.confine.disk import FLOOR, DiskWatch
from ssebench.daemon.confine.inotify import Inotify
from ssebench.daemon.confine.mechanism import Confinement, Folders
from ssebench.daemon.confine.policy import CaseUser, Policy
from ssebench.daemon.confine.pool import Pool, pool_size
from ssebench.daemon.confine.reaper import kill_all, signal_all, usage
from ssebench.daemon.confine.reports import Reports
from ssebench.daemon.confine.running import LIMIT_TICK, TICK, Case, readable_fds

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1 << 20
EOF_WAIT = 5.0  # seconds to wait for the output to close once every process was killed


@dataclass
class Supervisor:
    sock: socket.socket
    confined: Confinement | None = None
    user: CaseUser | None = None
    view: View | None = None
    case: Case | None = None  # one at a time
    pool: Pool = field(default_factory=Pool)  # the coming cases' sandboxes, waiting
    plans: dict[Policy, dict[str, int]] = field(default_factory=dict)
    floor: int = FLOOR
    events: Inotify | None = None  # the report folders' watches (reports.py), one at a time

    def send(self, message: wire.Message) -> None:
        with contextlib.suppress(OSError):
            self.sock.send(wire.encode(message))

    def setup(self, message: wire.Setup) -> None:
        self.close()
        self.user, self.floor = message.user, message.disk_floor
        self.confined = confinement(message.mechanism, message.user)
        self.view = View(self.user, message.stash, self.confined) if self.user.switched else None
        self.pool = Pool(pool_size(self.confined.confined))
        self.send(wire.Ready())

    def settle(self) -> None:
        """Once no case runs: pool.settle, and the case user's permissions shaped for the next
        case (its launch then finds them so)."""
        if self.case is None and (following := self.pool.settle(self.reap)) is not None:
            with contextlib.suppress(Exception):  # said by its launch, should it fail there
                self._shape(following.policy, Folders(following.case_dir))

    def _shape(self, policy: Policy, folders: Folders) -> None:
        """The case user's permissions for `policy`'s check: one user, so the running case's
        check decides them (a standby reads nothing before its command)."""
        if self.view is not None and self.confined is not None and self.confined.confined:
            self.view.shape(policy, lambda planned: self._plan(planned, folders))

    def start(self, message: wire.Run, fds: list[int]) -> None:
        (log,) = fds
        try:
            case = self._launch(message, log)
        except Exception as exc:  # whatever stops a case from starting is said, not raised
            os.close(log)
            self.send(wire.Failed(message.id, " ".join(str(exc).split()) or type(exc).__name__))
            return
        self.case = case
        self.send(wire.Started(case.id, case.pid))

    def _launch(self, message: wire.Run, log: int) -> Case:
        if self.confined is None or self.user is None:
            raise OSError("the supervisor was not set up")
        if self.case is not None:
            raise OSError("another case is running: the supervisor runs one at a time")
        self.settle()
        policy, folders = message.policy, Folders(message.case_dir)
        standby = self.pool.take(policy, message.case_dir)
        if not self.confined.confined:
            self.pool.clear()  # unconfined, a case could reach a waiting standby: none waits
        self.pool.sweep(self.reap, keep=[standby.pid] if standby else [])
        own = (*(g.real for g in policy.writable), folders.root)
        # The machine's /tmp, under Landlock: what a user of its own leaves there is the case's.
        shared = self.confined.shared_tmp
        skip = (folders.private,)  # every daemon's folders: each counts its own
        limit = policy.limits.disk_mb << 20
        reports = None
        try:
            self._shape(policy, folders)
            if standby is None:  # none was made for it, or it died waiting: one is made now
                standby = self.pool.start(self.confined, self.user, policy, message.case_dir)
            # The free space measured before the command can write a byte.
            disk = DiskWatch(own, shared, self.user.uid, limit, floor=self.floor, skip=skip)
            for path in message.reads:
                if not readable(self.user, self.confined.shape, path):
                    raise OSError(f"uid {self.user.uid}, who runs the case, cannot read {path}")
            with contextlib.suppress(OSError):
                fcntl.fcntl(standby.output, F_SETPIPE_SZ, PIPE_SIZE)
            self.events = self.events or Inotify()
            reports = Reports(folders.reports, self.user.uid, self.events)  # before a byte runs
            standby.ignite(message.argv, message.env, message.cwd)
        except BaseException:
            if standby is not None:
                standby.discard()
            if reports is not None:
                reports.close()
            kill_all(self.reap, self.pool.roots)
            raise
        case = Case(message.id, standby.pid, standby.output, log, message.log_limit, policy, disk,
                    reports=reports)  # fmt: skip
        if standby.listener is not None:
            broker = Broker(standby.listener, self.user, own, shared, self.confined.own_network)
            case.broker = broker
        return case

    def _plan(self, policy: Policy, folders: Folders) -> dict[str, int]:
        """The case user's permissions for this check (the same for all its cases)."""
        assert self.confined is not None and self.user is not None
        if policy not in self.plans:
            shape = self.confined.shape
            self.plans[policy] = plan_policy(self.user, shape, policy, folders.cases)
        return self.plans[policy]

    def stop(self, message: wire.Stop) -> None:
        case = self.case
        if case is not None and case.id == message.id and case.stop_at is None:
            case.stop_at = time.monotonic() + message.grace
            # bubblewrap dies of SIGTERM and takes its namespace with it at once: the case's
            # own processes get the grace, bubblewrap gets the SIGKILL after it.
            last = self.confined.spare if self.confined is not None else ""
            signal_all(signal.SIGTERM, spare=self.pool.roots, last=last)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            case = self.case
            if case is not None and case.pid == pid:
                case.status = status
            elif not self.pool.reaped(pid) and case is not None and case.broker is not None:
                case.broker.reaped(pid, status)

    def check_limits(self, now: float) -> None:
        """Stop the running case once its processes, their memory or its disk go over its
        limits (the kernel bounds open files; processes too, but not for root), or once the
        machine runs short of disk (a fault, not the patch's)."""
        case = self.case
        if case is None or case.status is not None or case.over or case.fault:
            return
        if now < case.checked_at + LIMIT_TICK:
            return
        case.checked_at = now
        over, fault = case.over_limits(*usage(self.pool.roots))
        if over or fault:
            case.killed += kill_all(self.reap, self.pool.roots)
            case.over, case.fault = over, case.fault or fault

    def advance(self, now: float) -> None:
        """Move the case on: kill what is left once its shell ended (or a stop ran out, or it
        went over a limit), and answer once its output is closed."""
        self.check_limits(now)
        case = self.case
        if case is None:
            return
        if case.status is None and case.stop_at is not None and now >= case.stop_at:
            case.killed += kill_all(self.reap, self.pool.roots)
        if case.status is not None and case.eof_by is None:
            case.killed += kill_all(self.reap, self.pool.roots)
            case.eof_by = now + EOF_WAIT
        if case.status is not None and (case.eof or (case.eof_by or now) <= now):
            self.case = None
            self.send(case.finish())

    def wait(self) -> float:
        """Seconds until the next thing the case waits for is due (at most TICK)."""
        return TICK if self.case is None else self.case.wait(time.monotonic())

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
        elif isinstance(message, wire.Prepare):
            self.pool.coming = message.cases  # taken once no case runs
            self.settle()
        elif isinstance(message, wire.Stop):
            self.stop(message)
        else:
            raise wire.MessageError(f"not a message for the supervisor: {message.op}")

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        try:
            self._loop(wake_r)
        finally:
            self.close()

    def _loop(self, wake_r: int) -> None:
        while True:
            case = self.case
            watched = [self.sock.fileno(), wake_r, *(case.watched() if case else [])]
            # A standby to make is made once what came in was read: a Run comes first.
            making = case is None and self.pool.missing() is not None
            ready = readable_fds(watched, 0 if making else self.wait())
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
            if case is not None:
                case.ready(ready)
            self.reap()
            if self.sock.fileno() in ready:
                data, fds, _, _ = socket.recv_fds(self.sock, 1 << 20, 4)
                if not data:
                    kill_all(self.reap)  # the daemon is gone: nothing it started may stay
                    return
                try:
                    self.handle(data, fds)
                except Exception as exc:  # a bad message or a setup failure: say so, go on
                    self.send(wire.Error(f"{type(exc).__name__}: {exc}"))
            elif making and self.confined is not None and self.user is not None:
                self.pool.make(self.confined, self.user)
            self.advance(time.monotonic())
            self.settle()

    def close(self) -> None:
        """Undo the permissions given, close what every case used."""
        self.pool.close(self.reap)
        if self.view is not None:
            with contextlib.suppress(AccessError):
                self.view.close()
            self.view = None
        if self.confined is not None:
            self.confined.close()
            self.confined = None
        if self.events is not None:
            self.events.close()
            self.events = None
        self.plans.clear()


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
