"""Shared test helpers: the CLI as a real subprocess, whom cases run as, and where each
session's temporary folders lie."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.confine.user import case_user, own_user
from ssebench.daemon.guard import remove_tree
from ssebench.testing.servers import run_ssebench

pytest_plugins = ("pytester",)  # tests/unit/test_in_process.py runs a planted suite
KEPT_SESSIONS = 3  # the newest ended sessions' folders are kept to look at, as pytest keeps 3


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp is None:
        config.option.basetemp = session_folder()


def session_folder() -> Path:
    """This session's temporary folders (tmp_path's), in a folder of its own that no other
    process changes.

    pytest's own root, $TMPDIR/pytest-of-<user>, is shared by every session of the user on
    the machine, and each session resets its mode to 0700 as it starts. A case user under
    Landlock walks real paths: it reaches the tests' task folders and its daemon's folders
    under that root only by the ACL entry the daemon gives it there, and that chmod narrows
    the entry's mask to nothing. On a busy machine, with other sessions starting, a probe case
    was refused its own TMPDIR (`.../case/<id>/tmp/t: Permission denied`) and a build its
    runner copy. Here every session's folder lies in one that anyone may enter (0711) and
    only these sessions make, and no session changes another's. Its name is the session's
    pid (pytest empties it first): paths stay as short as pytest's own, for Unix sockets
    (108 bytes) made in them, as Slurm's are."""
    parent = Path(tempfile.gettempdir()) / f"ssebench-tests-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        parent.mkdir(mode=0o711)
    info = parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise pytest.UsageError(f"{parent} is not a folder of this user's: remove it")
    if stat.S_IMODE(info.st_mode) != 0o711:
        parent.chmod(0o711)
    ended = [folder for folder in parent.iterdir() if not Path(f"/proc/{folder.name}").exists()]
    for folder in sorted(ended, key=lambda f: f.stat().st_mtime)[:-KEPT_SESSIONS]:
        remove_tree(folder)  # a deep tree a failed test left too
    return parent / str(os.getpid())


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `ssebench ARGS...` as a real process, as a user would:
    `run_cli(*args, env=None, timeout=120) -> CompletedProcess[str]`."""
    return run_ssebench


@pytest.fixture
def user() -> CaseUser:
    """Whom cases run as: a case user of their own when we are root, else ourselves."""
    return case_user() if os.geteuid() == 0 else own_user()
