"""Ports on loopback for the tests' servers: a free one, one taken, whether one is free."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def taken_port() -> Iterator[int]:
    """A port something else listens on, for as long as the block lasts."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def port_is_free(port: int, *, reuse_address: bool = False) -> bool:
    """Nothing listens there (a server that was refused or stopped let go of its port);
    `reuse_address` lets connections left in TIME_WAIT not count."""
    with socket.socket() as sock:
        if reuse_address:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
