"""The first thing a container of a task's image runs (a grade's, a Kubernetes pod's, an
agent's under `ssebench run`), with the image's own python3 and nothing else.

It gives ssebench an interpreter of its own, a venv (written by hand: Debian leaves out
ensurepip, and a venv needs none of it) whose only packages are the read-only copy of ssebench
mounted at /opt/ssebench: the image's own packages stay out of ssebench's way, and ours out of
the task's `python3`. The grade runs in it as a child, for two reasons:

- Lifeline: our stdin is a pipe that only the host's grade holds open. When that process ends,
  however it ends (SIGKILL included), the pipe closes, we exit, and the container goes with us
  (`docker run --init --rm`): a container never outlives the grade that started it. (Without
  `--interactive` stdin is /dev/null, no pipe: then there is no lifeline, and any ssebench
  command, `run` say, can start this way in an image that lacks ssebench.)
- What the grade wrote in the host's folders (the logs, the graded tree its cases built in) is
  handed to the host's user afterwards, who reads it and removes it.

Usage: python3 -I boot.py UID:GID FOLDER... -- ssebench's arguments (a FOLDER may be ""); or
FOLDER... --request REQUEST, what another ssebench asks of this one (core/cli/requests.py:
a grade's, as JSON). Standard library only: this runs before ssebench can be imported.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import sysconfig
import threading

SITE, ABI = "/opt/ssebench/site", "/opt/ssebench/abi"
REQUEST = "--request"  # then ssebench's child entry runs, not its command line
ENTRIES = {"--": "ssebench.core.cli", REQUEST: "ssebench.core.cli.child"}
VENV = "/opt/ssebench-venv"
EXIT_HOST_GONE = 137


def _abi() -> str:
    """The compiled part: ABI itself, or its folder for this Python where ABI holds a whole
    copy's (`python -m ssebench.evaluate.backends.export DEST` writes one per EXT_SUFFIX)."""
    suffix = (sysconfig.get_config_var("EXT_SUFFIX") or ".so").strip(".")
    own = os.path.join(ABI, suffix)
    return own if os.path.isdir(own) else ABI


def make_venv(venv: str = VENV, paths: tuple[str, ...] | None = None) -> str:
    """A venv over this interpreter whose only packages are in `paths` (the compiled part
    first: it must be this Python's); its python's path."""
    paths = paths if paths is not None else (_abi(), SITE)
    python = os.path.realpath(sys.executable)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    site = os.path.join(venv, "lib", f"python{version}", "site-packages")
    os.makedirs(site, exist_ok=True)
    os.makedirs(os.path.join(venv, "bin"), exist_ok=True)
    with open(os.path.join(venv, "pyvenv.cfg"), "w", encoding="utf-8") as cfg:
        cfg.write(f"home = {os.path.dirname(python)}\ninclude-system-site-packages = false\n")
        cfg.write(f"version = {'.'.join(map(str, sys.version_info[:3]))}\n")
    with open(os.path.join(site, "ssebench.pth"), "w", encoding="utf-8") as pth:
        pth.write("".join(f"{path}\n" for path in paths))
    link = os.path.join(venv, "bin", "python")
    if not os.path.lexists(link):
        os.symlink(python, link)
    return link


def _lifeline() -> None:
    """Exit the moment the host's grade is gone; the container's init then ends the rest."""
    while os.read(sys.stdin.fileno(), 65536):
        pass
    os._exit(EXIT_HOST_GONE)


def _hand_over(top: str, owner: str) -> None:
    uid, _, gid = owner.partition(":")
    if not top or (uid, gid) == ("0", "0"):
        return
    for folder, folders, names in os.walk(top):
        for path in [folder, *(os.path.join(folder, name) for name in (*folders, *names))]:
            os.lchown(path, int(uid), int(gid))


def main(argv: list[str]) -> int:
    ends = [index for index, arg in enumerate(argv) if arg in ENTRIES]
    assert ends, "usage: boot.py UID:GID FOLDER... -- ARGS (or --request REQUEST)"
    owner, *folders = argv[: ends[0]]
    args = argv[ends[0] + 1 :]
    python = make_venv()
    argv = [python, "-I", "-m", ENTRIES[argv[ends[0]]], *args]
    lifeline = stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode)
    # The lifeline is ours alone; without one, stdin is the command's (an agent's, say).
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL if lifeline else None)

    def forward(signum: int, frame: object) -> None:
        child.send_signal(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, forward)
    if lifeline:
        threading.Thread(target=_lifeline, daemon=True).start()
    code = child.wait()
    for folder in folders:
        _hand_over(folder, owner)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
