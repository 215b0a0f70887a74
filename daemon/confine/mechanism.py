"""A confinement mechanism: what starting one case under it takes.

`Mechanism` is the record of the one chosen at start (named on stderr, sent to the supervisor);
`Confinement` is its behaviour in the supervisor, one class per mechanism (bubblewrap.py,
landlock.py, and `Unconfined` here): its seccomp flags, how the case becomes its user, what
the case user's permissions must be shaped to (access.py), which process a stop spares for
its grace, and whether the tools it needs are here. A new mechanism is one new class.

Every confined case also gets the connect broker's filter (broker.py): its child loads it
before anything else and sends the listener back to the supervisor over a socket pair.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ssebench.daemon.confine import broker, seccomp
from ssebench.daemon.confine.access import Shape
from ssebench.daemon.confine.policy import SHARED_TMP, CaseUser, Limits, Policy
from ssebench.daemon.confine.user import set_limits


class IsolationError(Exception):
    """The requested mechanism cannot work on this machine."""


@dataclass(frozen=True)
class Mechanism:
    """How cases are confined here; chosen once, at start, and named on stderr."""

    name: str
    detail: str = ""
    bwrap: str = ""  # the bubblewrap executable
    setpriv: str = ""  # util-linux's setpriv: how a root bubblewrap becomes the case's user
    landlock_abi: int = 0

    @property
    def description(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name


@dataclass(frozen=True)
class Folders:
    """One case's own folders, made fresh for it and removed after it: its TMPDIR and HOME,
    (where the mechanism binds them) what it sees as /tmp and /var/tmp, and the folder its
    sanitizers' reports go to (reports.py)."""

    root: str

    @property
    def cases(self) -> str:
        """The folder every case of a daemon has its own folder in."""
        return os.path.dirname(self.root)

    @property
    def private(self) -> str:
        """The folder every daemon's folders lie in (the case's is two levels below it)."""
        return os.path.dirname(os.path.dirname(self.root))

    @property
    def tmp(self) -> str:
        return os.path.join(self.root, "tmp")

    @property
    def home(self) -> str:
        return os.path.join(self.root, "home")

    def shared(self, path: str) -> str:
        """Where a bound /tmp or /var/tmp of this case lies."""
        return os.path.join(self.root, "sys" + path.replace("/", "-"))

    @property
    def reports(self) -> str:
        return os.path.join(self.root, "reports")

    def writable(self) -> tuple[str, ...]:
        """The folders in `root` the case writes as it likes (all but `reports`)."""
        return (self.tmp, self.home, *(self.shared(p) for p in SHARED_TMP))

    def make(self, user: CaseUser) -> None:
        """Made empty, the case user's: 0700, but the bound /tmp folders, 1777 as /tmp is, and
        the report folder, ours. `root` itself is ours too (0711) when the case runs as a user
        of its own: it can then neither rename nor remove what lies in it (its report folder
        above all), which Landlock cannot refuse where the case folder lies under /tmp."""
        os.mkdir(self.root, 0o711 if user.switched else 0o700)
        for folder in self.writable():
            os.mkdir(folder, 0o700)
            if user.switched:
                os.chown(folder, user.uid, user.gid)
        for path in SHARED_TMP:
            os.chmod(self.shared(path), 0o1777)
        self.make_reports()

    def make_reports(self) -> None:
        """The report folder, made if missing: ours, mode 1733 (the case's user makes files
        there, but cannot list it, nor remove what it did not make)."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.reports, 0o700)
        fd = os.open(self.reports, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                raise OSError(f"{self.reports} is not a folder of ours")
            os.fchmod(fd, 0o1733)
        finally:
            os.close(fd)


@dataclass
class Launch:
    """What Popen needs for one case; `close` once the child started. `listener` is the
    supervisor's end of the socket pair the child sends the broker's listener on."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None
    owned: list[int] = field(default_factory=list)
    listener: socket.socket | None = None
    child_end: socket.socket | None = None

    def close(self) -> None:
        for fd in self.owned:
            os.close(fd)
        self.owned = []
        if self.child_end is not None:
            self.child_end.close()
            self.child_end = None

    def start(self, limits: tuple[Limits, int], **popen: Any) -> subprocess.Popen[bytes]:
        """Popen for this launch, the case's limits set in its child first (`limits` and the
        processes its user has already); what was opened only for it is closed, whatever
        happens."""
        then = self.preexec

        def child() -> None:
            set_limits(*limits)
            if then is not None:
                then()

        try:
            return subprocess.Popen(self.argv, pass_fds=self.pass_fds, preexec_fn=child, **popen)
        finally:
            self.close()

    def broker_listener(self) -> int | None:
        """The listener the started child sent (None without a broker)."""
        if self.listener is None:
            return None
        try:
            self.listener.settimeout(5.0)
            _, fds, _, _ = socket.recv_fds(self.listener, 1, 1)
        finally:
            self.listener.close()
        if not fds:
            raise OSError("the case's child sent no listener")
        return fds[0]


class Confinement:
    """A mechanism's behaviour: one instance per supervisor, for its case user."""

    name: ClassVar[str] = ""
    shape: ClassVar[Shape] = Shape(paths=False, hide=False)
    binds: ClassVar[bool] = False  # shows the runner copy at the tree's own path
    own_network: ClassVar[bool] = False  # each case has a network namespace of its own
    spare: ClassVar[str] = ""  # on a stop, the process (by name) that dies only at the end

    def __init__(self, mechanism: Mechanism, user: CaseUser) -> None:
        self.mechanism = mechanism
        self.user = user
        self._filters: dict[bool, bytes] = {}
        self._broker = b""
        self._seccomp_nr = 0

    @property
    def confined(self) -> bool:
        return True

    @property
    def shared_tmp(self) -> tuple[str, ...]:
        """The machine's folders of SHARED_TMP a case writes (bound ones are its own)."""
        return ()

    def deny_filter(self, network: bool) -> bytes:
        """The deny filter for a task with or without the network, built once each."""
        if network not in self._filters:
            self._filters[network] = seccomp.build(
                network=network,
                own_network=self.own_network,
                host_ipc=not self.own_network,
                unix=self.unix_checked,
            )
        return self._filters[network]

    def launch(self, command: Sequence[str], policy: Policy, folders: Folders, cwd: str) -> Launch:
        raise NotImplementedError

    @functools.cached_property
    def brokers(self) -> bool:
        """Whether this supervisor can make a case's connections (broker.py): it must take a
        socket from a process of the case's user, which Docker's default profile refuses to a
        root without CAP_SYS_PTRACE. Where it cannot, Unix sockets are left to the mechanism's
        own check of their paths, or refused but socketpair's."""
        return broker.possible(self.user)

    @property
    def unix_checked(self) -> bool:
        """Whether a Unix socket's connection is decided by its path here."""
        return self.brokers

    def brokered(self, launch: Launch, policy: Policy) -> Callable[[], None]:
        """The child's first step: no new privileges, then the broker's filter, whose listener
        it sends back on a socket pair (`launch.listener` is our end). Nothing without it for
        a task with the network, or where there is no broker."""
        if policy.network or not self.brokers:
            return seccomp.no_new_privileges
        if not self._broker:
            self._broker = seccomp.broker_filter()
            self._seccomp_nr = seccomp.syscall_number("seccomp")
        launch.listener, launch.child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        program, number, theirs = self._broker, self._seccomp_nr, launch.child_end.fileno()

        def load_broker() -> None:
            seccomp.no_new_privileges()
            listener = seccomp.load_listened(program, number)
            with socket.socket(fileno=theirs) as back:
                socket.send_fds(back, [b"l"], [listener])
            os.close(listener)  # never the case's: with it, it could answer its own calls

        return load_broker

    def pin(self, path: str, fd: int) -> None:
        """`path` (its descriptor `fd`, ours now) opened before the stash moved it away
        (stash.py): where this mechanism opens granted paths for a sandbox, it takes this one."""
        os.close(fd)

    def close(self) -> None:
        """Release what was opened for every case (descriptors of granted paths)."""


class Unconfined(Confinement):
    """--no-isolation: the case runs as the daemon's user, unconfined (with a warning)."""

    name = "none"

    @property
    def confined(self) -> bool:
        return False

    def launch(self, command: Sequence[str], policy: Policy, folders: Folders, cwd: str) -> Launch:
        return Launch(list(command))
