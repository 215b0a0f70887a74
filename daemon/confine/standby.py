"""A case's sandbox, made before its command is known: what a case starts in.

Starting a sandbox costs most of what a case adds to its command (bubblewrap takes ~8 ms, a
confined fork ~2 ms), and none of it depends on the command: only on the check's policy and
the case's own folder. So every case starts as a standby — the sandbox, its user, its filters
and its broker in place, and in it a shell that waits for one script on a pipe of its own —
and is set going when the command comes. The daemon asks for the coming cases' standbys while
nothing runs (pool.py), so a call's cases find theirs ready; a command for another check finds
none and starts its own the same way, then at once. Every case still gets a sandbox of its
own: a standby serves one case.

The script the shell reads is ours: it changes to the case's folder and replaces itself with
the command, in the command's environment alone; the pipe is closed before anything of the
agent's runs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ssebench.daemon.confine.mechanism import Confinement, Folders, Launch
from ssebench.daemon.confine.policy import CaseUser, Policy
from ssebench.daemon.confine.user import processes_of

# The shell waits on the pipe numbered $1 (`read` to its end: no process of its own), closes
# it, then runs what it read.
WAITER = [
    "bash", "-c", 'IFS= read -r -d "" s <&"$1"; eval "exec $1<&-" && eval "$s"', "ssebench-case"
]  # fmt: skip
WAITER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


@dataclass
class Standby:
    """One sandbox waiting for its command: `pid` is the case's first process, its output
    goes to `output` (the read end, non-blocking), its command to `command`."""

    policy: Policy
    folders: Folders
    pid: int
    output: int
    command: int
    listener: int | None

    @classmethod
    def start(
        cls, confined: Confinement, user: CaseUser, policy: Policy, folders: Folders, room: int
    ) -> Standby:
        """The sandbox, its shell started. `room`: processes of the case's user that may be
        added before its case runs (the other standbys), which the kernel's bound allows."""
        folders.make_reports()  # a bare case folder (the daemon's are made with it) has one
        output, write_end = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(output, False)
        reader, command = os.pipe2(os.O_CLOEXEC)
        cwd = folders.root  # the waiter's; the script changes to the case's own
        launch: Launch | None = None
        try:
            launch = confined.launch([*WAITER, str(reader)], policy, folders, cwd)
            launch.pass_fds = (*launch.pass_fds, reader)
            others = processes_of(user.uid) + room if user.switched else 0
            proc = launch.start(
                (policy.limits, others), cwd=cwd, env=WAITER_ENV, stdin=subprocess.DEVNULL,
                stdout=write_end, stderr=write_end, start_new_session=True,
            )  # fmt: skip
            proc.returncode = 0  # the supervisor reaps every child itself
            listener = launch.broker_listener()
        except BaseException:
            for fd in (output, command):
                os.close(fd)
            raise
        finally:
            for fd in (write_end, reader):
                os.close(fd)
        return cls(policy, folders, proc.pid, output, command, listener)

    def ignite(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> None:
        """Give the waiting shell its command: it runs `argv` in `cwd` with `env` alone."""
        pairs = " ".join(shlex.quote(f"{name}={value}") for name, value in env.items())
        script = f"cd -- {shlex.quote(cwd)} && exec /usr/bin/env -i -- {pairs} "
        script += " ".join(map(shlex.quote, argv)) + "\n"
        command, self.command = self.command, -1
        try:
            data = script.encode()
            while data:  # the pipe holds 64 KiB: a long environment is written in parts
                data = data[os.write(command, data) :]
        finally:
            os.close(command)

    def discard(self) -> None:
        """Let go of an unused standby's pipes (its processes are the supervisor's to kill)."""
        for fd in (self.command, self.output, self.listener):
            if fd is not None and fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
