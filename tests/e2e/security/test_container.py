"""The security suite again, inside Docker as task containers run: the daemon as root, Docker's
default seccomp profile and capabilities, no user namespaces (so Landlock, not bubblewrap); and
once more as an unprivileged user, as on a host where the daemon is not root. And in a
container run without a seccomp profile, where bubblewrap is there but cannot mount /proc: the
start-up probe must see it fail and choose Landlock, so that no build "fails" for it. And in an
image that holds its own /tmp/poc, as ARVO's do: `ssebench run` keeps it from the agent, the
build never finds it, the PoC case reads it.

It needs the image `scripts/container.sh` builds (CI builds it and sets SSEBENCH_TEST_IMAGE);
without one it is skipped, and says so.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from e2e.security.outside import NOTHING, PROBE, SEEN, SIZE, make_outside

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


# As ARVO's images ship it: /tmp/poc a file of the image itself (a lower layer, which overlayfs
# copies up when it is renamed), readable by every user, the agent uid 1000.
IN_IMAGE = """set -e
cp -r /given/task /task && chown -R 1000:1000 /task/src && chmod 700 /task
mkdir -m 755 /agent && cp /given/probe.py /given/name.txt /agent/
looks() { stat -c '%i %s %Y %X %a %U' /tmp/poc; }
before=$(looks)
echo "== the agent, before"
setpriv --reuid 1000 --regid 1000 --clear-groups python3 /agent/probe.py /agent/name.txt
echo "== the agent, in ssebench run"
ssebench run --task /task --difficulty 2 -- setpriv --reuid 1000 --regid 1000 --clear-groups \\
    python3 /agent/probe.py /agent/name.txt 2>/run.err
grep '^ssebench: run' /run.err
echo "== the build at level 2"
ssebench check --task /task --difficulty 2 2>/dev/null | tail -n 4 || true
[ "$(looks)" = "$before" ] && echo "== as it was"
chmod 755 /task && printf -- '--- /dev/null\\n+++ b/PASS\\n@@ -0,0 +1 @@\\n+x\\n' >/pass.patch
ssebench grade --task /task --patch /pass.patch --logs /logs --quiet >/dev/null
echo "== the build at grading" && cat /logs/build-0.log
echo "== the PoC case" && sed -n 1p /logs/pocs-0.log && tail -c 12 /logs/pocs-0.log
"""


@pytest.mark.skipif(
    not IMAGE, reason="no image: run scripts/container.sh, then set SSEBENCH_TEST_IMAGE"
)
def test_an_images_own_tmp_poc_is_kept_from_the_agent_and_the_build(tmp_path: Path) -> None:
    given = tmp_path / "given"
    poc = make_outside(given / "task")
    poc.remove()  # the image's own, below
    (given / "probe.py").write_text(PROBE)
    (given / "name.txt").write_text("/tmp/poc\n")
    toml = (given / "task" / "task.toml").read_text().replace(str(poc.path), "/tmp/poc")
    (given / "task" / "task.toml").write_text(toml)
    (given / "task" / "src" / "name.txt").write_text("/tmp/poc\n")
    (given / "in-image.sh").write_text(
        IN_IMAGE
    )  # no command line names the file: a probe reads them
    given.chmod(0o755)
    (given / "task").chmod(0o755)
    image = f"ssebench-test-poc:{uuid.uuid4().hex[:12]}"
    write = f"open('/tmp/poc', 'wb').write(b'{poc.marker}\\\\n'.ljust({SIZE}, b'#'))"
    dockerfile = f'FROM {IMAGE}\nRUN python3 -c "{write}" && chmod 644 /tmp/poc\n'

    subprocess.run(["docker", "build", "-q", "-t", image, "-"], input=dockerfile, text=True,
                   check=True, capture_output=True)  # fmt: skip
    try:
        done = subprocess.run(
            ["docker", "run", "--rm", "-v", f"{given}:/given:ro", "-e",
             "PATH=/venv/bin:/usr/bin:/bin", image, "bash", "/given/in-image.sh"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
    locked = "locked 1 withheld file outside the task folder until the run ends: /tmp/poc"
    assert done.stdout == (
        f"== the agent, before\n{SEEN}/proc: 0\n== the agent, in ssebench run\n{NOTHING}"
        f"ssebench: run: {locked}\n== the build at level 2\n{NOTHING}"
        f"== as it was\n== the build at grading\n{NOTHING}== the PoC case\n"
        f"stat: 4321 bytes, uid 0\n{poc.content.decode()[-12:]}"
    ), done.stdout + done.stderr
