"""The door into the trusted core: a command and a policy in, one end-of-case record out (the
case's `CaseRun`, made by the supervisor).

`Runner.run` runs one case, `bash -c`, through the daemon's case supervisor (supervisor.py):
a separate process, started at the first case and ended with the daemon, that starts each
case under the mechanism chosen at start as the daemon's case user, copies stdout and stderr,
interleaved as written, into the log up to a bound, and kills every process the case started
once its shell ends. This side sends it the case, waits for the answer on the event loop, and
on timeout or cancellation asks it to stop the case (SIGTERM, then SIGKILL after a grace)
before letting go.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.daemon.confine.answers import Answers
from ssebench.daemon.confine.disk import FLOOR
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.confine.messages import (
    Ended,
    Error,
    Failed,
    Message,
    MessageError,
    Prepare,
    Ready,
    Run,
    Setup,
    Started,
    Stop,
    Wanted,
    decode,
    encode,
)
from ssebench.daemon.confine.policy import CaseUser, Policy
from ssebench.daemon.confine.stash import stash_root

GRACE_SECONDS = 1.0
LOG_LIMIT = 1 << 30  # bytes of a case's output kept in its log; the rest is dropped
STOP_WAIT = 30.0  # seconds a stopped case may take to be reported gone
SUPERVISOR = [sys.executable, "-I", "-m", "ssebench.daemon.confine.supervisor"]


class RunnerError(Exception):
    """The command could not be started at all, or the machine failed it (a full disk): an
    internal failure, not the check failing."""


class Runner:
    """The daemon's side of one case supervisor: its cases confined by `mechanism`, run as
    `user`."""

    def __init__(
        self,
        mechanism: Mechanism,
        user: CaseUser,
        *,
        grace: float = GRACE_SECONDS,
        log_limit: int = LOG_LIMIT,
        disk_floor: int = FLOOR,
        stash: str | None = None,
    ) -> None:
        self.mechanism, self.user = mechanism, user
        self.disk_floor, self.stash = disk_floor, stash_root() if stash is None else stash
        self.grace, self.log_limit = grace, log_limit
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready: Answers[Ready | Error] = Answers()
        self._started: Answers[Started | Failed] = Answers()
        self._ended: Answers[Ended] = Answers()
        self._reader: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        self._stopping: set[asyncio.Future[Ended]] = set()  # stops still under way
        self._coming: tuple[Wanted, ...] = ()  # what the supervisor prepares, as last told

    async def run(
        self,
        command: str,
        policy: Policy,
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
        log_path: Path,
        case_dir: Path,
        reads: tuple[str, ...] = (),
    ) -> CaseRun:
        """Run `command` under `policy` with `case_dir` its own folder; on timeout or
        cancellation the case is stopped, and at its end whatever it left running is killed,
        wherever it went. Its record as the supervisor made it, with whether it timed out.
        RunnerError when it could not start, or the machine failed it."""
        case_id = uuid.uuid4().hex
        if not os.path.isdir(cwd):  # said here: the case's shell already waits in its sandbox
            raise RunnerError(f"cannot start {command!r} in {cwd}: {_missing(cwd)}")
        try:
            log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise RunnerError(f"cannot open the log {log_path}: {exc}") from exc
        started_answer = self._started.expect(case_id)
        ended = self._ended.expect(case_id)
        run = Run(case_id, ("bash", "-c", command), str(cwd), dict(env), self.log_limit,
                  str(case_dir), policy, reads)  # fmt: skip
        try:
            try:
                await self._ensure_started()
                # Its standby, if one was made, serves it alone: the supervisor forgets it too.
                self._coming = tuple(w for w in self._coming if w.case_dir != run.case_dir)
                await self._send(run, fds=[log])
            finally:
                os.close(log)
            end, timed_out = await self._finish(run, command, timeout, started_answer, ended)
        finally:
            self._started.pop(case_id)
            self._ended.pop(case_id)
        if end.fault:
            raise RunnerError(end.fault)
        return replace(end.case, timed_out=True) if timed_out else end.case

    async def prepare(self, coming: Sequence[tuple[Policy, Path]]) -> None:
        """Have the coming cases' sandboxes made while nothing runs (pool.py), in the order of
        the cases: a `run` with the same policy and folder as one then starts in it at once.
        Unanswered: a sandbox that cannot be made is made again, and its failure said, by its
        run. Said only when it changes (a call's cases take their standbys in order)."""
        wanted = tuple(Wanted(policy, str(case_dir)) for policy, case_dir in coming)
        await self._ensure_started()
        if wanted != self._coming:
            self._coming = wanted
            await self._send(Prepare(wanted))

    async def _finish(
        self,
        run: Run,
        command: str,
        timeout: float,
        started: asyncio.Future[Started | Failed],
        ended: asyncio.Future[Ended],
    ) -> tuple[Ended, bool]:
        """The case's end and whether it timed out, stopping it on timeout or cancellation."""
        try:
            answer = await started
            if isinstance(answer, Failed):
                raise RunnerError(f"cannot start {command!r} in {run.cwd}: {answer.message}")
            try:
                return await asyncio.wait_for(asyncio.shield(ended), timeout), False
            except TimeoutError:
                return await self._stop(run.id, started, ended), True
        except RunnerError:
            raise
        except BaseException:
            # Cancelled (the caller went away): the case is stopped before we let go, even one
            # not yet started (the supervisor takes the stop after the run); the stop is
            # awaited, shielded, so a closing loop cannot drop it half done.
            stop = asyncio.ensure_future(self._stop(run.id, started, ended))
            self._stopping.add(stop)
            stop.add_done_callback(self._stopping.discard)
            with contextlib.suppress(BaseException):
                await asyncio.shield(stop)
            raise

    async def _stop(
        self,
        case_id: str,
        started: asyncio.Future[Started | Failed],
        ended: asyncio.Future[Ended],
    ) -> Ended:
        """Stop the case (one the supervisor has not started yet too: it takes the stop after
        the run) and return its end; RunnerError when it never started or never ended."""
        await self._send(Stop(case_id, self.grace))
        try:
            if not isinstance(await asyncio.wait_for(asyncio.shield(started), STOP_WAIT), Started):
                raise RunnerError("the stopped case never started")
            return await asyncio.wait_for(asyncio.shield(ended), self.grace + STOP_WAIT)
        except TimeoutError:
            raise RunnerError("the case supervisor did not stop the case") from None

    async def _send(self, message: Message, fds: list[int] | None = None) -> None:
        if self._sock is None:
            raise RunnerError("the case supervisor is not running")
        data = encode(message)
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        try:
            self._sock.sendmsg([data], ancillary)
        except OSError as exc:
            raise RunnerError(f"the case supervisor is gone: {exc}") from exc

    async def _ensure_started(self) -> None:
        async with self._start_lock:
            if self._reader is not None and not self._reader.done():
                return
            if self._sock is not None:  # it died (killed from outside): start another
                self._end_supervisor()  # its reader failed its cases; later ones wait on
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._proc = subprocess.Popen(
                    [*SUPERVISOR, str(theirs.fileno())],
                    pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            except OSError as exc:
                ours.close()
                raise RunnerError(f"cannot start the case supervisor: {exc}") from exc
            finally:
                theirs.close()
            ours.setblocking(False)
            self._sock, self._coming = ours, ()
            weakref.finalize(self, _close, ours, self._proc)
            self._reader = asyncio.create_task(self._read())
            ready = self._ready.expect("")
            await self._send(Setup(self.mechanism, self.user, self.disk_floor, self.stash))
            try:
                answer = await asyncio.wait_for(ready, STOP_WAIT)
            finally:
                self._ready.pop("")
            if isinstance(answer, Error):
                raise RunnerError(f"the case supervisor cannot confine cases: {answer.message}")

    async def _read(self) -> None:
        """Hand each answer to whoever waits for it; when the supervisor dies, fail them all."""
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        try:
            while data := await loop.sock_recv(self._sock, 1 << 16):
                answer = decode(data)
                if isinstance(answer, Ready | Error):
                    self._ready.give("", answer)
                elif isinstance(answer, Started | Failed):
                    self._started.give(answer.id, answer)
                elif isinstance(answer, Ended):
                    self._ended.give(answer.id, answer)
        except (OSError, MessageError):
            pass
        self._fail("the case supervisor died")

    def _fail(self, message: str) -> None:
        for answers in (self._ready, self._started, self._ended):
            answers.fail(RunnerError(message))

    async def aclose(self) -> None:
        """Let the stops of cancelled cases finish (a caller cancelled again and again, as a
        server shutting down does, lets go of its stop before it ends), then close."""
        if self._stopping:
            await asyncio.wait(set(self._stopping), timeout=self.grace + STOP_WAIT)
        for stop in self._stopping:
            if stop.done() and not stop.cancelled():
                stop.exception()  # retrieved: whatever it was, the caller is gone
        self.close()

    def close(self) -> None:
        """End the supervisor: it kills whatever still runs, then exits. Whoever still waits
        for an answer (a call being cancelled while the server stops) has it now."""
        self._fail("the case supervisor was closed")
        self._end_supervisor()

    def _end_supervisor(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._sock is not None:
            _close(self._sock, self._proc)
        self._sock = self._proc = self._reader = None


def _missing(path: Path) -> OSError:
    try:
        os.stat(path)
    except OSError as exc:
        return exc
    return NotADirectoryError(20, os.strerror(20), str(path))


def _close(sock: socket.socket, proc: subprocess.Popen[bytes] | None) -> None:
    sock.close()
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
