"""Unit tests stay in this process: one that starts a process or reaches past loopback fails.

Every door to a new process (subprocess and so asyncio's subprocesses, multiprocessing,
os.fork, os.posix_spawn, os.system) and every look-up or connection of an address that is not
this machine's loopback raises while a unit test runs, and the test fails at its end even when
some code swallowed the error (a daemon thread, a best-effort helper). What needs a process or
the network belongs in tests/e2e. tests/unit/test_in_process.py plants offenders.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import ipaddress
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ssebench.daemon.guard import make_folder, remove_folder

# Where a process is made. subprocess keeps a reference of its own to fork_exec; the one in
# _posixsubprocess is multiprocessing's (spawn and forkserver).
DOORS = [
    (subprocess, "_fork_exec"),
    (_posixsubprocess, "fork_exec"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
]
CONNECTS = ("connect", "connect_ex", "sendto")  # the address is the last argument of each


class LeftTheProcess(AssertionError):
    """A unit test started a process or reached past this machine's loopback."""


def _loopback(host: object) -> bool:
    """Whether `host` is this machine's loopback as it stands: no name is looked up."""
    if host is None or host in ("localhost", b"localhost"):
        return True
    try:
        return ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host).is_loopback
    except (ValueError, UnicodeDecodeError):
        return False


def refusal(attempts: list[str]) -> str:
    return f"a unit test may not {'; '.join(attempts)}: move it to tests/e2e"


@contextlib.contextmanager
def in_this_process() -> Iterator[list[str]]:
    """Within the block each door raises LeftTheProcess; the list gathers every attempt."""
    attempts: list[str] = []

    def refused(what: str) -> LeftTheProcess:
        attempts.append(what)
        return LeftTheProcess(refusal([what]))

    def door(name: str) -> Callable[..., Any]:
        def start(*args: Any, **kwargs: Any) -> Any:
            raise refused(f"start a process ({name})")

        return start

    def look_up(real: Callable[..., Any]) -> Callable[..., Any]:
        def checked(host: object, *args: Any, **kwargs: Any) -> Any:
            if not _loopback(host):
                raise refused(f"look up {host!r}")
            return real(host, *args, **kwargs)

        return checked

    def connect(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def checked(sock: socket.socket, *args: Any) -> Any:
            inet = sock.family in (socket.AF_INET, socket.AF_INET6)
            if inet and not _loopback(args[-1][0]):
                raise refused(f"reach {args[-1]!r} ({name})")
            return real(sock, *args)

        return checked

    saved = [(owner, name, getattr(owner, name)) for owner, name in DOORS]
    saved.append((socket, "getaddrinfo", socket.getaddrinfo))
    saved += [(socket.socket, name, getattr(socket.socket, name)) for name in CONNECTS]
    for owner, name, real in saved:
        if owner is socket.socket:
            setattr(owner, name, connect(name, real))
        elif owner is socket:
            setattr(owner, name, look_up(real))
        else:
            setattr(owner, name, door(f"{owner.__name__}.{name}"))
    try:
        yield attempts
    finally:
        for owner, name, real in saved:
            setattr(owner, name, real)


@pytest.fixture(scope="session", autouse=True)
def _folder_guard() -> None:
    """ssebench's folders have a guard, one process for the whole of ours, started on first
    use (daemon/guard.py); it starts here, before any test, so that the rule judges the tests
    and not which of them happened to run first."""
    remove_folder(make_folder("ssebench-unit-"))


@pytest.fixture(autouse=True)
def _stays_in_this_process() -> Iterator[None]:
    with in_this_process() as attempts:
        yield
    if attempts:
        pytest.fail(refusal(attempts), pytrace=False)
