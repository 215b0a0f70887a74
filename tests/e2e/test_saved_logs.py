"""Saved long logs given away by a root server: the agent's user opens the file with a process
of its own (tests/unit/test_saved_logs.py has the rest)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from unit.test_saved_logs import LONG, ROOT

from ssebench.core.logs import view_log
from ssebench.core.logsource import BytesLog, FileLog


@pytest.mark.skipif(not ROOT, reason="only root gives a file away")
@pytest.mark.parametrize("how", ["file", "memory"])
def test_a_root_server_gives_the_saved_log_to_the_agents_user(tmp_path: Path, how: str) -> None:
    top = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))  # as /tmp/mcp/logs is
    os.chmod(top, 0o755)
    folder = top / "mcp" / "logs"
    (tmp_path / "case.log").write_bytes(LONG)
    source = FileLog(tmp_path / "case.log", len(LONG)) if how == "file" else BytesLog(LONG)
    view = view_log([source], folder, owner=(1001, 1001))
    assert view.saved_path is not None
    info = view.saved_path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (1001, 1001, 0o600)
    read = subprocess.run(
        ["setpriv", "--reuid=1001", "--regid=1001", "--clear-groups", "cat", str(view.saved_path)],
        capture_output=True,
    )
    shutil.rmtree(top)
    assert (read.returncode, read.stdout == LONG) == (0, True)
