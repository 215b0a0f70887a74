"""The security suite again, inside Docker as task containers run: the daemon as root, Docker's
default seccomp profile and capabilities, no user namespaces (so Landlock, not bubblewrap); and
once more as an unprivileged user, as on a host where the daemon is not root. And in a
container run without a seccomp profile, where bubblewrap is there but cannot mount /proc: the
start-up probe must see it fail and choose Landlock, so that no build "fails" for it.

It needs the image `scripts/container.sh` builds (CI builds it and sets SSEBENCH_TEST_IMAGE);
without one it is skipped, and says so.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.security, pytest.mark.container, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[3]
IMAGE = os.environ.get("SSEBENCH_TEST_IMAGE", "")
SUITE = [
    "tests/unit/test_policy.py",
    "tests/unit/test_runnercopy.py",
    "tests/e2e/test_runnercopy.py",
    "tests/e2e/test_confine.py",
    "tests/e2e/security",
]


@pytest.mark.skipif(
    not IMAGE, reason="no image: run scripts/container.sh, then set SSEBENCH_TEST_IMAGE"
)
@pytest.mark.parametrize("user", ["0", "65534"])
def test_the_security_suite_holds_in_a_default_docker_container(user: str) -> None:
    probe = (
        "/venv/bin/python -c 'from ssebench.core.daemons.door import choose_isolation as c; "
        "print(c(\"auto\").description)'; id -u; grep -E '^Seccomp:' /proc/self/status; "
        f"/venv/bin/python -m pytest -p no:cacheprovider -q -m 'not container' {' '.join(SUITE)}"
    )
    mount = ["-v", f"{ROOT}:/src:ro", "-w", "/src"]
    done = subprocess.run(
        ["docker", "run", "--rm", "--user", f"{user}:{user}", *mount, IMAGE, "bash", "-c", probe],
        capture_output=True,
        text=True,
        timeout=840,
    )
    print(done.stdout[-3000:], done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "landlock (ABI 7: files, processes, signals and TCP confined, seccomp, no capabilities)",
        user,
        "Seccomp:\t2",
    ]
    assert done.returncode == 0
    summary = lines[-1]
    # As an ordinary user, the tests of a root daemon running cases as another user are skipped.
    skipped = "(, \\d+ skipped)?"  # tmpfs mounts (root) or user switches (not root) need more
    pattern = rf"\d+ passed{skipped}(, \d+ deselected)? in [\d.]+s( \(.*\))?"
    assert re.fullmatch(pattern, summary), summary


@pytest.mark.skipif(
    not IMAGE, reason="no image: run scripts/container.sh, then set SSEBENCH_TEST_IMAGE"
)
@pytest.mark.parametrize("requested", ["auto", "bubblewrap"])
def test_where_bubblewrap_cannot_run_a_case_the_probe_chooses_landlock(requested: str) -> None:
    task = "mkdir -p /tmp/t/src && printf %s 'source = \"src\"' > /tmp/t/task.toml && "
    task += "printf '\\n[checks.build]\\nrun = \"echo built\"\\n' >> /tmp/t/task.toml && "
    check = f"/venv/bin/ssebench check --task /tmp/t --difficulty 3 --isolation {requested}"
    done = subprocess.run(
        ["docker", "run", "--rm", "--security-opt", "seccomp=unconfined", IMAGE, "bash", "-c",
         f"command -v bwrap && {task}{check}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if requested == "auto":
        assert done.stderr.startswith("ssebench: isolation: landlock (ABI "), done.stderr
        assert (done.returncode, done.stdout.splitlines()[:5]) == (
            0,
            ["/usr/bin/bwrap", "test_patch result: every check that ran passed.", "", "Checks:",
             "- build: passed"],
        )  # fmt: skip
    else:
        assert done.returncode == 2
        assert done.stderr.startswith(
            "ssebench: error: bubblewrap cannot isolate cases here: a probe case failed: "
        ), done.stderr
