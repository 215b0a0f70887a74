"""The seccomp filters every confined case runs under: the sockets and kernel state it may not
use, and the connections a supervisor decides.

Landlock (up to ABI 8) and bubblewrap leave some routes out of a case open: a socket of another
family (vsock to the host, packet, Bluetooth), UDP, MPTCP and SCTP where Landlock only knows
TCP, a pathname Unix socket anywhere the case can name one (a socket under /opt is reachable
under bubblewrap's read-only binds too), io_uring (which opens sockets without the socket()
system call), kernel keys and SysV IPC objects that outlive the case. The deny filter refuses
those with EACCES (sockets) or EPERM, and kills a process that makes system calls of another
architecture (32-bit code cannot slip past it). A second filter sends every connect() to the
case supervisor (a seccomp user notification): it lets inet ones go on and makes Unix ones
itself, on the case's behalf, only to sockets inside the case's own folders and tree
(daemon/confine/broker.py). Unix datagram sockets, whose every send names its own address,
are refused: nothing could decide where each one goes.

libseccomp writes the BPF programs (through its official Python binding where installed, else
pyseccomp, a ctypes binding with the same API); they are built once per daemon and loaded by
each case: through bubblewrap's --seccomp, or by the case's child itself before exec.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
from collections.abc import Iterable
from types import ModuleType

EACCES, EPERM = errno.EACCES, errno.EPERM
SOCK_TYPE_MASK = 0xF  # the type argument also carries SOCK_NONBLOCK and SOCK_CLOEXEC
MAX_FAMILY = 64
IPPROTO_TCP = socket.IPPROTO_TCP
NETLINK_ROUTE = 0
# Objects of the host's IPC namespace (SysV and POSIX message queues) outlive a case and are
# shared with every process of the user: under Landlock (no IPC namespace) a case may not use
# them. Under bubblewrap the case has an IPC namespace of its own, which dies with it.
HOST_IPC = (
    *("msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl"),
    *("shmget", "shmat", "shmdt", "shmctl", "mq_open", "mq_unlink", "mq_timedsend"),
    *("mq_timedreceive", "mq_notify", "mq_getsetattr"),
)
ALWAYS_DENIED = (
    # io_uring runs socket(), connect() and open() without the system calls a filter sees.
    *("io_uring_setup", "io_uring_enter", "io_uring_register"),
    # The user's keyrings outlive the case and are shared by every process of the user.
    *("keyctl", "add_key", "request_key"),
    # A file handle opens a file by number, past every path (and Landlock's path rules).
    *("open_by_handle_at", "name_to_handle_at"),
)


class SeccompError(Exception):
    """libseccomp is missing or refused the filter."""


def _library() -> ModuleType:
    try:
        import seccomp  # libseccomp's own binding (Debian: python3-seccomp)

        return seccomp  # type: ignore[no-any-return]
    except ImportError:
        pass
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as exc:  # RuntimeError: no libseccomp.so
        raise SeccompError(f"libseccomp is not available ({exc}): install libseccomp2") from None
    return pyseccomp  # type: ignore[no-any-return]


def socket_families(*, unix: bool) -> tuple[int, ...]:
    """The socket families a case may create with network = false: inet (in a network namespace
    of its own, under bubblewrap, all of it is the case's own; under Landlock only TCP, which
    Landlock checks: see `build`), netlink for routing information, and Unix where its
    connections are decided by their path (by the supervisor, daemon/confine/broker.py, or by
    Landlock from ABI 9); elsewhere only socketpair() makes Unix sockets."""
    families = [socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK]
    return tuple(sorted([*families, *([socket.AF_UNIX] if unix else [])]))


def build(*, network: bool, own_network: bool, host_ipc: bool, unix: bool) -> bytes:
    """The deny filter as a BPF program, for `--seccomp` or `load`.

    `network`: the task opted in (no socket rule at all). `own_network`: the case has its own
    network namespace. `host_ipc`: the case shares the host's IPC namespace (so SysV IPC and
    message queues are refused). `unix`: Unix sockets' paths are checked.
    """
    lib = _library()
    sf = lib.SyscallFilter(lib.ALLOW)
    sf.set_attr(lib.Attr.ACT_BADARCH, lib.KILL_PROCESS)
    deny, refuse = lib.ERRNO(EACCES), lib.ERRNO(EPERM)
    for name in (*ALWAYS_DENIED, *(HOST_IPC if host_ipc else ())):
        sf.add_rule(refuse, name)
    if not network:
        _families(lib, sf, deny, socket_families(unix=unix))
        _route_only(lib, sf, deny)
        _no_unix_datagrams(lib, sf, deny)
        if not own_network:
            for family in (socket.AF_INET, socket.AF_INET6):
                _tcp_only(lib, sf, deny, family)
    return _export(sf)


def broker_filter() -> bytes:
    """The filter that hands every connect() to the supervisor (SECCOMP_RET_USER_NOTIF)."""
    lib = _library()
    sf = lib.SyscallFilter(lib.ALLOW)
    sf.add_rule(lib.NOTIFY, "connect")
    return _export(sf)


def _no_unix_datagrams(lib: ModuleType, sf: object, deny: int) -> None:
    """No Unix datagram socket, by socket() or socketpair(): each send may name any address."""
    unix = lib.Arg(0, lib.EQ, socket.AF_UNIX)
    dgram = lib.Arg(1, lib.MASKED_EQ, SOCK_TYPE_MASK, socket.SOCK_DGRAM)
    for call in ("socket", "socketpair"):
        sf.add_rule(deny, call, unix, dgram)  # type: ignore[attr-defined]


def _families(lib: ModuleType, sf: object, deny: int, allowed: Iterable[int]) -> None:
    """Every family but `allowed` refused (seccomp compares whole 64-bit registers, so a
    family with high bits set is refused by the last rule)."""
    keep = set(allowed)
    for family in range(MAX_FAMILY):
        if family not in keep:
            sf.add_rule(deny, "socket", lib.Arg(0, lib.EQ, family))  # type: ignore[attr-defined]
    sf.add_rule(deny, "socket", lib.Arg(0, lib.GE, MAX_FAMILY))  # type: ignore[attr-defined]


def _tcp_only(lib: ModuleType, sf: object, deny: int, family: int) -> None:
    """Stream sockets with protocol 0 or TCP: what Landlock's TCP rules see. Not datagrams
    (UDP, ping), raw sockets, SCTP or MPTCP (protocol 262), which pass Landlock unchecked."""
    add = sf.add_rule  # type: ignore[attr-defined]
    fam = lib.Arg(0, lib.EQ, family)
    for kind in range(SOCK_TYPE_MASK + 1):
        if kind != socket.SOCK_STREAM:
            add(deny, "socket", fam, lib.Arg(1, lib.MASKED_EQ, SOCK_TYPE_MASK, kind))
    for protocol in range(1, IPPROTO_TCP):
        add(deny, "socket", fam, lib.Arg(2, lib.EQ, protocol))
    add(deny, "socket", fam, lib.Arg(2, lib.GT, IPPROTO_TCP))


def _route_only(lib: ModuleType, sf: object, deny: int) -> None:
    """Netlink for routing information only (getaddrinfo asks it): no other netlink family,
    some of which reach daemons of the host."""
    fam = lib.Arg(0, lib.EQ, socket.AF_NETLINK)
    sf.add_rule(deny, "socket", fam, lib.Arg(2, lib.GT, NETLINK_ROUTE))  # type: ignore[attr-defined]


def _export(sf: object) -> bytes:
    fd = os.memfd_create("ssebench-seccomp", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as file:
            sf.export_bpf(file)  # type: ignore[attr-defined]
        size = os.lseek(fd, 0, os.SEEK_END)
        return os.pread(fd, size, 0)
    except OSError as exc:
        raise SeccompError(f"libseccomp cannot build the filter: {exc}") from None
    finally:
        os.close(fd)


def program_fd(program: bytes) -> int:
    """A file holding `program`, read from the start, for bubblewrap's --seccomp."""
    fd = os.memfd_create("ssebench-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER, NEW_LISTENER = 1, 1 << 3


def load(program: bytes) -> None:
    """Apply `program` (libseccomp's BPF) to this process and what it starts; no_new_privs must
    be set already (or the process hold CAP_SYS_ADMIN)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def no_new_privileges() -> None:
    """What lets a process without CAP_SYS_ADMIN load a filter (Docker's root has not got it)."""
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def load_listened(program: bytes, seccomp_nr: int) -> int:
    """Apply `program`, whose notifications go to the descriptor returned (the listener).
    `seccomp_nr` is `syscall_number("seccomp")`, found before the fork."""
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    fd = int(_libc.syscall(seccomp_nr, SECCOMP_SET_MODE_FILTER, NEW_LISTENER, ctypes.byref(prog)))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)")
    return fd


def syscall_number(name: str) -> int:
    """The number of system call `name` on this machine's architecture."""
    lib = _library()
    return int(lib.resolve_syscall(lib.system_arch(), name))
