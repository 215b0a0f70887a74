"""The routes the red team found (issue 16), each as an attack through the real command line, with
every mechanism this machine has; and the positive controls that show confinement still lets a
correct fix pass.

- Grading: a build plants a git filter in the tree; `grade --patch` must not run it.
- State: what a case leaves beside its TMPDIR and HOME no later case reads.
- Who a case runs as: a tree owned by uid 1001 under a root daemon builds, as uid 1001, also
  with the task folder locked to root.
- Paths: a symbolic link inside a declared folder (a venv's python) is part of it; a check
  folder that is a symbolic link is readable where its check is enabled.
- Signals read the same under every mechanism; limits stop a case, not the server.
- Sockets: `socketpair` works, and so does a socket in the case's own folder where the
  mechanism can tell it from one outside; a task with `network = true` reaches loopback.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e.security.services import EXAMPLE, c_example, statuses, task_hashes
from e2e.security.test_attacks import mechanisms
from ssebench.daemon.confine.broker import possible
from ssebench.daemon.confine.landlock import RESOLVE_UNIX_ABI
from ssebench.daemon.confine.landlock import abi_version as landlock_abi
from ssebench.daemon.confine.user import case_user

pytestmark = [pytest.mark.security, pytest.mark.timeout(300)]

RunCli = Callable[..., subprocess.CompletedProcess[str]]
ROOT = os.geteuid() == 0
# The agent plants, in its own tree, a filter that rewrites the task's PoCs and intent script
# when git runs it (a build cannot: it writes only its runner copy).
PLANT = (
    "git init -q . && git config filter.x.clean 'sh .g.sh' && "
    "git config filter.x.smudge 'sh .g.sh' && echo '*.c filter=x' > .gitattributes && "
    "printf 'touch %s; for f in $SSE_TASK_DIR/pocs/*.bin; do printf RLE1 > $f; done; "
    "echo exit 0 > $SSE_TASK_DIR/intent/test_bounds.sh; cat\\n' {marker} > .g.sh"
)


def planted(tmp: Path, marker: Path) -> Path:
    """The C example with the agent's planted filter in its tree."""
    task = c_example(tmp)
    env = {**os.environ, "SSE_TASK_DIR": str(task)}
    subprocess.run(["bash", "-c", PLANT.format(marker=marker)], cwd=task / "src", env=env,
                   check=True)  # fmt: skip
    return task


def comment_patch() -> bytes:
    """A patch that adds a comment to rle.c and changes nothing else: it fixes nothing."""
    before = (EXAMPLE / "src" / "rle.c").read_text().splitlines(keepends=True)
    after = ["/* a comment, and nothing else */\n", *before]
    diff = difflib.unified_diff(before, after, "a/rle.c", "b/rle.c")
    return ("diff --git a/rle.c b/rle.c\n" + "".join(diff)).encode()


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_git_filter_planted_in_the_tree_runs_neither_for_a_call_nor_when_grading(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    marker = tmp_path / "the-filter-ran"
    task = planted(tmp_path, marker)
    patch = tmp_path / "comment.patch"
    patch.write_bytes(comment_patch())
    built = run_cli("check", "--task", str(task), "--difficulty", "3", "--isolation", mechanism)
    assert built.returncode == 0, built.stdout + built.stderr  # its copy was made as data
    before = task_hashes(task)
    done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--isolation", mechanism)
    answer = json.loads(done.stdout)
    assert (done.returncode, answer["resolved"], answer["patch"]) == (
        1,
        False,
        {"applied": True, "error": None, "dropped": []},
    )
    assert statuses(answer)["pocs"] == "failed"
    assert not marker.exists()
    assert task_hashes(task) == before


def test_the_planted_filter_is_real_plain_git_runs_it(tmp_path: Path, run_cli: RunCli) -> None:
    """The control: `git apply` as the grader used to run it does run the planted filter."""
    marker = tmp_path / "the-filter-ran"
    task = planted(tmp_path, marker)
    copy = tmp_path / "copy"
    shutil.copytree(task / "src", copy, symlinks=True)
    patch = comment_patch()
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "SSE_TASK_DIR": str(task)}  # fmt: skip
    subprocess.run(["git", "apply", "-"], input=patch, cwd=copy, env=env, check=True)
    assert marker.exists()


def small_task(root: Path, toml: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "task.toml").write_text('source = "src"\n' + toml)
    return root


def grade(run_cli: RunCli, task: Path, mechanism: str) -> dict[str, object]:
    done = run_cli("grade", "--task", str(task), "--isolation", mechanism, "--quiet")
    assert done.returncode in (0, 1), done.stderr
    return dict(json.loads(done.stdout))


def cases(answer: dict[str, object], key: str) -> list[dict[str, object]]:
    check = next(c for c in answer["checks"] if c["key"] == key)  # type: ignore[attr-defined]
    return list(check["cases"])


@pytest.mark.parametrize("mechanism", mechanisms())
def test_nothing_a_case_leaves_beside_its_folders_reaches_a_later_case(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    leave = 'for d in "$TMPDIR/.." "$HOME/.." "$TMPDIR/../.."; do echo left > "$d/left"; done'
    find = 'for d in "$TMPDIR/.." "$HOME/.." "$TMPDIR/../.."; do test ! -e "$d/left"; done'
    task = small_task(
        tmp_path / "task",
        f"[checks.build]\nrun = '{leave}; exit 0'\n[checks.functional]\nrun = '{find}'\n",
    )
    answer = grade(run_cli, task, mechanism)
    assert (statuses(answer)["build"], statuses(answer)["functional"]) == ("passed", "passed")


@pytest.mark.skipif(not ROOT, reason="a root daemon runs cases as a user of their own")
@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_root_daemon_runs_the_agents_tree_as_a_user_of_its_own_on_a_copy(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    """As task containers run the agent (uid 1001 here), with the task folder locked to root:
    the cases are neither root nor the agent, keep no capability and no group, and never write
    the agent's tree."""
    caps = "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status | awk '{print $$2}' | sort -u"
    who = f"\t@echo ids $$(id -u) $$(id -G) caps $$({caps})\n"
    task = c_example(tmp_path, who)
    subprocess.run(["patch", "-s", "-p1", "-d", str(task / "src")],
                   input=(EXAMPLE / "fix.patch").read_bytes(), check=True)  # fmt: skip
    subprocess.run(["chown", "-R", "1001:1001", str(task / "src")], check=True)
    os.chmod(task, 0o700)
    os.chmod(tmp_path, 0o755)
    done = run_cli("check", "--task", str(task), "--difficulty", "0", "--isolation", mechanism)
    assert (done.returncode, done.stdout) == (
        0,
        "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (3 of 3)\n- intent tests: passed\n"
        "- functional tests: passed (covered by the intent tests)\n",
    )
    assert not (task / "src" / "rle").exists()  # built in the daemon's copy, not the tree
    # The agent's own user gained nothing: the locked folder is as locked to it as before,
    # and no ACL entry of the cases' user is left on it.
    peek = subprocess.run(["setpriv", "--reuid=1001", "--regid=1001", "--clear-groups", "cat",
                           str(task / "task.toml")], capture_output=True)  # fmt: skip
    assert peek.returncode != 0 and peek.stdout == b""
    assert not os.listxattr(task) or "system.posix_acl_access" not in os.listxattr(task)
    logs, patch = tmp_path / "logs", tmp_path / "add.patch"
    patch.write_text("--- /dev/null\n+++ b/NOTES\n@@ -0,0 +1 @@\n+a note\n")
    graded = run_cli("grade", "--task", str(task), "--patch", str(patch), "--isolation",
                     mechanism, "--logs", str(logs))  # fmt: skip
    [line] = [x for x in (logs / "build-0.log").read_text().splitlines() if x.startswith("ids")]
    _, uid, gid, caps, *bits = line.split()
    assert (uid == gid, int(uid) not in (0, 1001), caps, bits) == (
        True, True, "caps", ["0000000000000000"]
    )  # fmt: skip
    assert json.loads(graded.stdout)["resolved"] is True
    grading = run_cli("grade", "--task", str(task), "--patch", str(EXAMPLE / "fix.patch"),
                      "--isolation", mechanism, "--quiet")  # fmt: skip
    assert json.loads(grading.stdout)["patch"]["applied"] is False  # applied already: reversed
    shutil.rmtree(task / "src")
    shutil.copytree(EXAMPLE / "src", task / "src")
    subprocess.run(["chown", "-R", "1001:1001", str(task / "src")], check=True)
    grading = run_cli("grade", "--task", str(task), "--patch", str(EXAMPLE / "fix.patch"),
                      "--isolation", mechanism, "--quiet")  # fmt: skip
    assert (grading.returncode, json.loads(grading.stdout)["resolved"]) == (0, True)


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_link_in_a_declared_folder_and_a_linked_check_folder_are_readable(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    elsewhere = tmp_path / "elsewhere" / "intent"
    elsewhere.mkdir(parents=True)
    (elsewhere / "t.sh").write_text("echo intent-ran\n")
    task = small_task(
        tmp_path / "task",
        'files = ["venv"]\n[checks.build]\nrun = "$SSE_TASK_DIR/venv/bin/python -c '
        '\'print(6 * 7)\'"\n[checks.intent]\nfiles = ["intent"]\n'
        'run = "sh $SSE_TASK_DIR/intent/t.sh"\n',
    )
    (task / "venv" / "bin").mkdir(parents=True)
    (task / "venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (task / "intent").symlink_to(elsewhere)
    done = run_cli("check", "--task", str(task), "--difficulty", "0", "--isolation", mechanism)
    assert (done.returncode, done.stdout) == (
        0,
        "test_patch result: every check passed.\n\nChecks:\n- build: passed\n"
        "- PoCs: passed (the task has none)\n- intent tests: passed\n"
        "- functional tests: passed (the task has none)\n",
    )


@pytest.mark.parametrize("mechanism", [*mechanisms(), "none"])
def test_a_case_killed_by_a_signal_reads_the_same_under_every_mechanism(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    task = small_task(
        tmp_path / "task",
        "[checks.functional]\ncases = ['kill -TERM $$', 'sh segv.sh; exit $?', 'exit 3']\n",
    )
    (task / "src" / "segv.sh").write_text("kill -SEGV $$\n")
    flag = "--no-isolation" if mechanism == "none" else f"--isolation={mechanism}"
    done = run_cli("grade", "--task", str(task), flag, "--quiet")
    ends = [(c["exit_code"], c["signal"]) for c in cases(json.loads(done.stdout), "functional")]
    assert ends == [(None, 15), (None, 11), (3, None)]


FORK_BOMB = "for i in $(seq 200); do sleep 30 & done; wait"
HOG = 'python3 -c "b = bytearray(400 << 20); import time; time.sleep(30)"'
FILES = "python3 -c \"fs = [open('/dev/null') for _ in range(100)]\""


@pytest.mark.parametrize("mechanism", [*mechanisms(), "none"])
def test_a_case_over_its_limits_fails_and_says_so(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    task = small_task(
        tmp_path / "task",
        "limits = { processes = 50, memory_mb = 200, open_files = 64 }\n"
        f"[checks.functional]\ncases = {json.dumps([FORK_BOMB, HOG, FILES, 'echo fine'])}\n"
        "timeout = 60\n",
    )
    logs, empty = tmp_path / "logs", tmp_path / "empty.patch"
    empty.write_text("")
    flag = "--no-isolation" if mechanism == "none" else f"--isolation={mechanism}"
    done = run_cli(
        "grade", "--task", str(task), "--patch", str(empty), flag, "--quiet", "--logs", str(logs)
    )
    ran = cases(json.loads(done.stdout), "functional")
    assert [(c["passed"], c["timed_out"]) for c in ran] == [(False, False)] * 3 + [(True, False)]
    texts = [(logs / f"functional-{i}.log").read_text() for i in range(4)]
    # Processes: the kernel's own bound where it counts them (a case user other than root)
    # may stop the forks before the supervisor sees 50 of them; either way the case fails.
    assert texts[0].endswith(
        "\n[ssebench: this case went over its limit of 50 processes and was stopped]\n"
    ) or texts[0].endswith("bash: fork: Resource temporarily unavailable\n")
    assert texts[1].endswith(
        "\n[ssebench: this case went over its limit of 200 MB of memory and was stopped]\n"
    )
    assert "Too many open files" in texts[2]
    assert texts[3] == "fine\n"
    assert [c["seconds"] < 20 for c in ran] == [True] * 4  # stopped, not timed out at 30 s


SOCKETS = r"""
import os, socket
a, b = socket.socketpair(); a.send(b"pair"); print(b.recv(4).decode())
path = os.path.join(os.environ["TMPDIR"], "own.sock")
try:
    server = socket.socket(socket.AF_UNIX); server.bind(path); server.listen()
    client = socket.socket(socket.AF_UNIX); client.connect(path)
    conn, _ = server.accept(); client.send(b"own"); print(conn.recv(3).decode())
except OSError as exc:
    print("own folder refused:", exc.strerror)
"""


@pytest.mark.parametrize("mechanism", mechanisms())
def test_socketpair_and_a_socket_in_the_case_folder_work(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    task = small_task(tmp_path / "task", "[checks.build]\nrun = 'python3 sockets.py; exit 1'\n")
    (task / "src" / "sockets.py").write_text(SOCKETS)
    done = run_cli("check", "--task", str(task), "--difficulty", "3", "--isolation", mechanism)
    log = done.stdout.split("```")[1] if "```" in done.stdout else done.stdout
    if possible(case_user()) or (mechanism == "landlock" and landlock_abi() >= RESOLVE_UNIX_ABI):
        assert "pair\nown\n" in log  # its path is the case's own: the connection is made
    else:
        # Nothing can tell a socket's path from another's here (a root without CAP_SYS_PTRACE,
        # as Docker's, cannot take the case's socket to connect it): only socketpair works.
        assert "pair\nown folder refused: Permission denied" in log


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_task_with_network_reaches_loopback(
    tmp_path: Path, mechanism: str, run_cli: RunCli
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        probe = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo reached"
        task = small_task(tmp_path / "task", f"network = true\n[checks.build]\nrun = '{probe}'\n")
        done = run_cli("check", "--task", str(task), "--difficulty", "3", "--isolation", mechanism)
    assert done.returncode == 0, done.stdout
    without = small_task(tmp_path / "without", f"[checks.build]\nrun = '{probe}'\n")
    refused = run_cli(
        "check", "--task", str(without), "--difficulty", "3", "--isolation", mechanism
    )
    assert refused.returncode == 1


@pytest.mark.skipif(not ROOT, reason="a root daemon runs cases as the tree's owner")
def test_a_saved_long_log_is_the_tree_owners(tmp_path: Path, run_cli: RunCli) -> None:
    top = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))  # as /tmp/mcp is
    try:
        task = small_task(tmp_path / "task", "[checks.build]\nrun = 'seq 30000; exit 1'\n")
        subprocess.run(["chown", "-R", "1001:1001", str(task / "src")], check=True)
        env = {**os.environ, "MCP_LOG_DIR": str(top / "mcp" / "logs")}
        done = run_cli("check", "--task", str(task), "--difficulty", "3", env=env)
        saved = Path(done.stdout.rsplit("Full log available at ", 1)[1].split()[0])
        info = saved.stat()
        assert (info.st_uid, info.st_mode & 0o777, saved.parent.stat().st_mode & 0o777) == (
            1001,
            0o600,
            0o755,
        )
    finally:
        shutil.rmtree(top)


def test_a_private_folder_another_user_made_first_is_one_line(
    tmp_path: Path, run_cli: RunCli
) -> None:
    squat = tmp_path / f"ssebench-{os.geteuid()}"
    squat.mkdir()
    if ROOT:
        os.chown(squat, 1001, 1001)
        owner = "uid 1001"
    else:  # an ordinary user cannot give a folder away: a file stands in the way instead
        squat.rmdir()
        squat.write_text("")
        owner = "not a folder"
    task = small_task(tmp_path / "task", "[checks.build]\nrun = 'true'\n")
    done = run_cli("check", "--task", str(task), env={**os.environ, "TMPDIR": str(tmp_path)})
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"ssebench: error: {squat} belongs to another user ({owner}): ssebench will not use it; "
        "remove it, or set TMPDIR to a folder of your own\n",
    )


@pytest.mark.skipif(not ROOT, reason="runs ssebench as another user")
def test_a_daemon_that_cannot_read_the_tree_says_so_at_start(tmp_path: Path) -> None:
    """A non-root daemon copies the tree its cases run on as itself: a tree it cannot read is
    one line, exit 2, not a failed build that blames the patch."""
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    ssebench = Path(sys.executable).with_name("ssebench")
    if subprocess.run([*as_nobody, "test", "-x", os.path.realpath(sys.executable)]).returncode:
        pytest.skip(f"{ssebench} cannot be run by uid 65534 here")
    top = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        task = small_task(top / "task", "[checks.build]\nrun = 'true'\n")
        os.chmod(task / "src", 0o700)  # root's
        done = subprocess.run(
            [*as_nobody, str(ssebench), "check", "--task", str(task)],
            capture_output=True,
            text=True,
            env={**os.environ, "TMPDIR": "/tmp"},
        )
        assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
            2,
            "",
            f"ssebench: error: {task / 'src'}: cannot copy the tree for its cases (Permission "
            "denied): run ssebench as root, or as a user who can read the tree",
        )
    finally:
        shutil.rmtree(top)
