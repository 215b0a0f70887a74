"""Unix socket connections decided by the case supervisor: only to the case's own sockets.

A pathname Unix socket is reached by its path, and neither bubblewrap's read-only binds nor a
network namespace nor Landlock (before ABI 9) stop a case from connecting to one that lies
where it can look (a service's socket under /opt, a 0777 one anywhere). So every connect() of
a case stops at a seccomp user notification (daemon/confine/seccomp.py) and comes here:

- a socket that is not a Unix one goes on (the network namespace or Landlock decide);
- a Unix one is connected here, never let go on (the case could rewrite the address once read):
  its path is resolved as the case sees it (in its root, from its working folder), the socket
  file must lie in the case's own folders or tree (or, under Landlock, be a socket of the
  case's user in /tmp), and a helper process that became the case's user connects the case's
  own socket (shared with it through pidfd_getfd), so the peer sees the case's credentials,
  then answers the notification itself: a connection that waits never holds up the supervisor.
- An abstract address is reached only in a network namespace of the case's own (bubblewrap);
  elsewhere it is refused, since whose socket it names cannot be told.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
import stat
import subprocess
from dataclasses import dataclass, field

from ssebench.daemon.confine.policy import CaseUser, inside
from ssebench.daemon.confine.seccomp import syscall_number

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)


class _Data(ctypes.Structure):
    _fields_ = (
        ("nr", ctypes.c_int),
        ("arch", ctypes.c_uint32),
        ("instruction_pointer", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    )


class _Notif(ctypes.Structure):
    _fields_ = (
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("data", _Data),
    )


class _Resp(ctypes.Structure):
    _fields_ = (
        ("id", ctypes.c_uint64),
        ("val", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    )


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


def _iowr(number: int, size: int, write_only: bool = False) -> int:
    direction = 1 if write_only else 3  # _IOC_WRITE, or _IOC_READ | _IOC_WRITE
    return (direction << 30) | (size << 16) | (ord("!") << 8) | number


RECV = _iowr(0, ctypes.sizeof(_Notif))
SEND = _iowr(1, ctypes.sizeof(_Resp))
ID_VALID = _iowr(2, 8, write_only=True)
FLAG_CONTINUE = 1
RESOLVE_NO_MAGICLINKS, RESOLVE_BENEATH, RESOLVE_IN_ROOT = 0x02, 0x08, 0x10
SOCKADDR_UN = 110  # sizeof(struct sockaddr_un)
SO_DOMAIN = 39
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000


@dataclass
class Broker:
    """The connections of one case: `listener` its notifications, `allowed` the folders (as
    this process sees them) whose sockets it may reach, `own_network` whether the case has a
    network namespace of its own (so abstract sockets are all its own)."""

    listener: int
    user: CaseUser
    allowed: tuple[str, ...]
    shared_tmp: tuple[str, ...] = ()
    own_network: bool = False
    helpers: dict[int, int] = field(default_factory=dict)  # helper pid -> notification id

    def __post_init__(self) -> None:
        self._pidfd_getfd = syscall_number("pidfd_getfd")
        self._openat2 = syscall_number("openat2")

    def fileno(self) -> int:
        return self.listener

    def handle(self) -> None:
        """Take one notification and answer it (or leave the answer to a helper)."""
        notif = _Notif()
        if _libc.ioctl(self.listener, RECV, ctypes.byref(notif)) != 0:
            return  # the caller died meanwhile, or a signal interrupted its call
        try:
            answer = self._decide(notif)
        except OSError as exc:
            answer = -(exc.errno or errno.EACCES)
        if answer is not None:
            self._respond(notif.id, answer)

    def _decide(self, notif: _Notif) -> int | None:
        """FLAG_CONTINUE (as 1), a negative errno, or None when a helper answers."""
        pidfd = os.pidfd_open(notif.pid)
        try:
            if not self._valid(notif.id):
                raise OSError(errno.ESRCH, "gone")
            fd = int(self._libc_call(self._pidfd_getfd, pidfd, int(notif.data.args[0]), 0))
        finally:
            os.close(pidfd)
        try:
            sock = socket.socket(fileno=fd)
            try:
                family = sock.getsockopt(socket.SOL_SOCKET, SO_DOMAIN)
            finally:
                sock.detach()  # the descriptor stays ours to close below
            if family != socket.AF_UNIX:
                return FLAG_CONTINUE
            address = self._address(notif)
            if address[:1] == b"\0":
                if not self.own_network:
                    return -errno.EACCES
                self._connect(notif, fd, address, None)
                return None
            target = self._resolve(notif.pid, address)
            try:
                self._connect(notif, fd, address, target)
            finally:
                os.close(target)
            return None
        finally:
            os.close(fd)

    def _valid(self, notif_id: int) -> bool:
        value = ctypes.c_uint64(notif_id)
        return bool(_libc.ioctl(self.listener, ID_VALID, ctypes.byref(value)) == 0)

    @staticmethod
    def _libc_call(number: int, *args: int) -> int:
        result = int(_libc.syscall(number, *args))
        if result < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return result

    def _address(self, notif: _Notif) -> bytes:
        """The sun_path the case gave (read once: what is decided is what is connected)."""
        pointer, length = int(notif.data.args[1]), int(notif.data.args[2])
        if not 2 < length <= SOCKADDR_UN:
            raise OSError(errno.EINVAL, "address")
        with open(f"/proc/{notif.pid}/mem", "rb", buffering=0) as memory:
            memory.seek(pointer)
            raw = memory.read(length)
        if not self._valid(notif.id):
            raise OSError(errno.ESRCH, "gone")
        if len(raw) != length or int.from_bytes(raw[:2], "little") != socket.AF_UNIX:
            raise OSError(errno.EINVAL, "address")
        path = raw[2:]
        return path if path[:1] == b"\0" else path.split(b"\0", 1)[0]

    def _resolve(self, pid: int, path: bytes) -> int:
        """The socket file as the case names it (an O_PATH descriptor); EACCES outside the
        case's own folders."""
        absolute = path.startswith(b"/")
        base = os.open(f"/proc/{pid}/{'root' if absolute else 'cwd'}", os.O_PATH | os.O_CLOEXEC)
        try:
            how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS)
            how.resolve |= RESOLVE_IN_ROOT if absolute else RESOLVE_BENEATH
            name = ctypes.c_char_p(path.lstrip(b"/") or b".")
            target = int(
                _libc.syscall(self._openat2, base, name, ctypes.byref(how), ctypes.sizeof(how))
            )
            if target < 0:
                code = ctypes.get_errno()
                raise OSError(errno.EACCES if code == errno.EXDEV else code, "resolve")
        finally:
            os.close(base)
        info = os.fstat(target)
        real = os.readlink(f"/proc/self/fd/{target}")
        own = inside(real, self.shared_tmp) and info.st_uid == self.user.uid and self.user.switched
        if not stat.S_ISSOCK(info.st_mode) or not (inside(real, self.allowed) or own):
            os.close(target)
            raise OSError(errno.EACCES if stat.S_ISSOCK(info.st_mode) else errno.ECONNREFUSED, "")
        return target

    def _connect(self, notif: _Notif, fd: int, address: bytes, target: int | None) -> None:
        """A helper, as the case's user, connects the case's socket and answers."""
        netns = None
        if target is None:  # an abstract address: in the case's own network namespace
            netns = [os.open(f"/proc/{notif.pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC)
                     for name in ("user", "net")]  # fmt: skip
        try:
            pid = os.fork()
        except OSError:
            self._close(netns)
            raise
        if pid == 0:  # pragma: no cover - the helper's answer is what the tests see
            code = 0
            try:
                self._as_case(netns)
                sock = socket.socket(fileno=fd)
                sock.connect(f"/proc/self/fd/{target}".encode() if target is not None else address)
            except OSError as exc:
                code = -(exc.errno or errno.ECONNREFUSED)
            finally:
                self._respond(notif.id, code)
                os._exit(0)
        self._close(netns)
        self.helpers[pid] = notif.id

    def _as_case(self, netns: list[int] | None) -> None:
        if netns is not None:
            user, net = netns
            # Root enters it directly; another user through bubblewrap's user namespace first.
            entered = _libc.setns(net, CLONE_NEWNET) == 0 or (
                _libc.setns(user, CLONE_NEWUSER) == 0 and _libc.setns(net, CLONE_NEWNET) == 0
            )
            if not entered:
                raise OSError(ctypes.get_errno(), "setns")
        if self.user.switched:
            os.setgroups([])
            os.setresgid(self.user.gid, self.user.gid, self.user.gid)
            os.setresuid(self.user.uid, self.user.uid, self.user.uid)

    @staticmethod
    def _close(fds: list[int] | None) -> None:
        for fd in fds or ():
            os.close(fd)

    def _respond(self, notif_id: int, answer: int) -> None:
        continuing = answer == FLAG_CONTINUE
        response = _Resp(notif_id, 0, 0 if continuing else answer, FLAG_CONTINUE * continuing)
        _libc.ioctl(self.listener, SEND, ctypes.byref(response))  # ENOENT: the call is gone

    def reaped(self, pid: int, status: int) -> None:
        """A helper ended: had it no chance to answer (killed), the call is refused now."""
        notif_id = self.helpers.pop(pid, None)
        if notif_id is not None and status != 0:
            self._respond(notif_id, -errno.ECONNREFUSED)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.listener)


def possible(user: CaseUser) -> bool:
    """Whether this process can take a socket from a case of `user`'s (pidfd_getfd): tried on
    a child that became `user` and exec'd, as a case does (a root without CAP_SYS_PTRACE, as
    Docker's, cannot: its profile refuses the call)."""

    def become() -> None:
        if user.switched:
            os.setgroups([])
            os.setresgid(user.gid, user.gid, user.gid)
            os.setresuid(user.uid, user.uid, user.uid)

    try:
        child = subprocess.Popen(
            ["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=become
        )
    except (OSError, subprocess.SubprocessError):
        return False
    try:  # past its exec (Popen waits for it): dumpable again, as a case's processes are
        pidfd = os.pidfd_open(child.pid)
        try:
            fd = int(_libc.syscall(syscall_number("pidfd_getfd"), pidfd, 0, 0))
        finally:
            os.close(pidfd)
        if fd < 0:
            return False
        os.close(fd)
        return True
    except OSError:
        return False
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
