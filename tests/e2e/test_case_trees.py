"""Strange trees a case makes itself: a folder chain deeper than any path, left in its TMPDIR,
its tree and (under Landlock) the machine's /tmp, goes when the case ends, and the case ends as
it ran: the supervisor's clean-up never recursed into a traceback (it used to die on one left
in /tmp: an internal failure that blamed nobody)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user
from ssebench.testing.servers import clean_env, write_task

pytestmark = pytest.mark.timeout(180)
RunCli = Callable[..., subprocess.CompletedProcess[str]]
CHAIN = (
    "import os, sys\n"
    "for top in sys.argv[1:]:\n"
    "    fd = os.open(top, os.O_RDONLY)\n"
    "    for _ in range(3000):\n"
    "        os.mkdir('d', dir_fd=fd)\n"
    "        fd = os.open('d', os.O_RDONLY, dir_fd=fd)\n"
    "    os.close(os.open('leaf', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n"
)


@pytest.mark.parametrize("mechanism", ["none", *available(case_user())])
def test_a_3000_deep_folder_a_case_leaves_goes_with_it(
    tmp_path: Path, run_cli: RunCli, mechanism: str
) -> None:
    left = f"/tmp/ssebench-test-deep-{uuid.uuid4().hex}"
    task = write_task(
        tmp_path / "task",
        f'files = ["chain.py"]\n[checks.build]\nrun = "mkdir {left} && python3 '
        f'$SSE_TASK_DIR/chain.py {left} $TMPDIR . && echo made"\n'
        '[checks.functional]\nrun = "test -e d && echo ok"\n',  # a build's output stays
    )
    (task / "chain.py").write_text(CHAIN)
    isolation = ["--no-isolation"] if mechanism == "none" else ["--isolation", mechanism]
    done = run_cli(
        "check", "--task", str(task), *isolation, "--difficulty", "2", env=clean_env(tmp_path)
    )
    try:
        assert (done.returncode, done.stdout) == (
            0,
            "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
            "- functional tests: passed\n\nNot available at difficulty level 2 "
            "(NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported about them. Without the "
            "PoCs, this result does not show whether the vulnerability is fixed.\n",
        ), done.stderr
        assert "Traceback" not in done.stderr
        if mechanism == "landlock":  # the machine's own /tmp: its case user's files go
            assert not Path(left).exists()
    finally:
        subprocess.run(["rm", "-rf", left], check=True)
