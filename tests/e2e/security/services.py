"""What the security tests share: services of the daemon's own user outside any case, as an
attacker's build would look for them (a pathname Unix socket in /tmp, where tmux keeps its
server's; an abstract Unix socket; a UDP port), each recording every connection or datagram it
gets, which a confined case must reach none of; the machine's SysV queues and kernel keys; and
copies of the C example whose build does more than build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
import threading
import uuid
from pathlib import Path
from types import TracebackType

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "c-rle"


class Services:
    """Listening from `start()` to `close()`; `heard` lists what reached them."""

    def __init__(self, tmp: Path | None = None) -> None:
        tag = uuid.uuid4().hex[:8]
        self.folder = Path(tempfile.mkdtemp(prefix=f"tmux-like-{tag}-", dir="/tmp"))
        os.chmod(self.folder, 0o700)  # as tmux keeps it: the user's own
        self.unix = str(self.folder / "default")
        # A service anyone may reach, in a folder a case reads (under /opt, as root can make
        # one): only a decision on the path at connect() keeps a case from it.
        opt = Path(f"/opt/ssebench-service-{tag}") if os.geteuid() == 0 else None
        self.opt = opt or Path(tempfile.mkdtemp(prefix="service-", dir=tmp))
        self.opt.mkdir(exist_ok=True)
        self.open_unix = str(self.opt / "service.sock")
        self.abstract = f"ssebench-test-{tag}"
        self.heard: list[str] = []
        self._sockets: list[socket.socket] = []
        self._closing = False
        self.udp = 0

    def start(self) -> Services:
        for family, kind, address in (
            (socket.AF_UNIX, socket.SOCK_STREAM, self.unix),
            (socket.AF_UNIX, socket.SOCK_STREAM, self.open_unix),
            (socket.AF_UNIX, socket.SOCK_STREAM, "\0" + self.abstract),
            (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)),
        ):
            sock = socket.socket(family, kind)
            sock.bind(address)
            if kind == socket.SOCK_STREAM:
                sock.listen(8)
            if address == self.open_unix:
                os.chmod(address, 0o777)
            else:
                self.udp = sock.getsockname()[1]
            self._sockets.append(sock)
            threading.Thread(target=self._serve, args=(sock, str(address)), daemon=True).start()
        return self

    def _serve(self, sock: socket.socket, name: str) -> None:
        with contextlib.suppress(OSError):
            while True:
                if sock.type == socket.SOCK_DGRAM:
                    data = sock.recv(65536)
                else:
                    conn, _ = sock.accept()
                    with conn:
                        conn.settimeout(2)
                        data = conn.recv(65536)
                        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nthe service answered\n")
                if self._closing:
                    return
                self.heard.append(f"{name}: {data[:100]!r}")

    def targets(self) -> dict[str, object]:
        return {"unix": [self.unix, self.open_unix], "abstract": [self.abstract], "udp": self.udp}

    def close(self) -> None:
        self._closing = True
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.opt, ignore_errors=True)

    def __enter__(self) -> Services:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def sysv_queues() -> set[str]:
    """The SysV message queues of the machine (of this IPC namespace), by key and id."""
    lines = Path("/proc/sysvipc/msg").read_text().splitlines()[1:]
    return {" ".join(line.split()[:2]) for line in lines}


def keys_described(mark: str) -> list[str]:
    """Kernel keys whose description holds `mark`, as /proc/keys shows them to this user."""
    with contextlib.suppress(OSError):
        return [line for line in Path("/proc/keys").read_text().splitlines() if mark in line]
    return []


def c_example(tmp: Path, recipe: str = "") -> Path:
    """A copy of the C example whose Makefile runs `recipe` after linking rle."""
    task = tmp / "c-rle"
    shutil.copytree(EXAMPLE, task, ignore=shutil.ignore_patterns("*.o", "rle", "test_rle"))
    if recipe:
        makefile = task / "src" / "Makefile"
        link = "\t$(CC) $(ALL_CFLAGS) -o $@ main.o rle.o\n"
        assert link in makefile.read_text()
        makefile.write_text(makefile.read_text().replace(link, link + recipe))
    return task


def statuses(answer: dict[str, object]) -> dict[str, str]:
    """Each check's status in a grade's JSON, by key."""
    return {check["key"]: check["status"] for check in answer["checks"]}  # type: ignore[index,union-attr]


def task_hashes(task: Path) -> dict[str, tuple[str, int]]:
    """Every file of the task folder but the tree, by content and mode."""
    return {
        str(path): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
        for path in sorted(task.rglob("*"))
        if path.is_file() and "src" not in path.relative_to(task).parts
    }
