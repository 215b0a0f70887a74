"""`ssebench grade --task DIR --patch FILE` as a user runs it: real tasks, real patches (the C
example's, and ones `git diff` wrote with new, deleted and binary files), always on a scratch
copy: the task's tree is hashed before and after every grade, and the scratch folder (in a
TMPDIR of the test's own) is gone afterwards, also after Ctrl+C or SIGKILL."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.stopping import SSEBENCH
from ssebench.testing import TaskHandle
from ssebench.testing.servers import start_child
from ssebench.testing.waiting import wait_for

pytestmark = pytest.mark.timeout(300)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUILD_OUTPUTS = shutil.ignore_patterns("*.o", "rle", "test_rle", "__pycache__", "*.pyc")
RunCli = Callable[..., subprocess.CompletedProcess[str]]


def tree_hash(root: Path) -> str:
    """Every path under `root` with its mode and content (or link target)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        digest.update(f"{path.relative_to(root)}\0{stat.st_mode}\0".encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def git_diff(tmp: Path, before: Mapping[str, bytes], after: Mapping[str, bytes | None],
             *, binary: bool = True) -> bytes:  # fmt: skip
    """What `git diff` writes for a change from `before` (None in `after` deletes a file)."""
    repo = tmp / "diff-repo"
    shutil.rmtree(repo, ignore_errors=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> bytes:
        ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
        done = subprocess.run(["git", *ident, *args], cwd=repo, env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    repo.mkdir()
    git("init", "-q")
    for name, content in before.items():
        (repo / name).write_bytes(content)
    git("add", "-A")
    git("commit", "-qm", "before")
    for name, new in after.items():
        if new is None:
            (repo / name).unlink()
        else:
            (repo / name).write_bytes(new)
    git("add", "-A")
    return git("diff", "--cached", *(["--binary"] if binary else []))


@pytest.fixture
def scratch_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a grade whose scratch folders land in a TMPDIR of our own."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    return {**os.environ, "TMPDIR": str(tmpdir)}


def grade(run_cli: RunCli, task: Path, patch: Path, env: Mapping[str, str],
          *extra: str) -> tuple[int, dict[str, Any], str]:  # fmt: skip
    """Grade, and check the two promises of every grade: the task unchanged, no scratch left."""
    before = tree_hash(task)
    done = run_cli("grade", "--task", str(task), "--patch", str(patch), *extra, env=env)
    assert tree_hash(task) == before
    assert list(Path(env["TMPDIR"]).iterdir()) == []
    assert done.stdout.startswith("{"), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


# --- the C example, with AddressSanitizer -------------------------------------------------


@pytest.fixture(scope="module")
def c_rle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("c-rle needs a C compiler and make")
    task = tmp_path_factory.mktemp("examples") / "c-rle"
    shutil.copytree(EXAMPLES / "c-rle", task, ignore=BUILD_OUTPUTS)  # never built in examples/
    return task


def statuses(answer: dict[str, Any]) -> dict[str, tuple[str, list[bool]]]:
    return {c["key"]: (c["status"], [x["passed"] for x in c["cases"]]) for c in answer["checks"]}


LOGS = ["build-0.log", "functional-0.log", "intent-0.log"]
PASSED = ("passed", [True])


@pytest.mark.parametrize(
    ("patch", "code", "checks", "logs"),
    [
        ("fix.patch", 0, {"build": PASSED, "pocs": ("passed", [True, True, True]),
                          "intent": PASSED, "functional": PASSED},
         [*LOGS, "pocs-0.log", "pocs-1.log", "pocs-2.log"]),
        # Unresolved at the second PoC: a grade stops at the first that still triggers.
        ("partial.patch", 1, {"build": PASSED, "pocs": ("failed", [True, False]),
                              "intent": ("failed", [False]), "functional": PASSED},
         [*LOGS, "pocs-0.log", "pocs-1.log"]),
    ],
)  # fmt: skip
def test_the_fix_and_the_partial_fix_with_every_case_log(
    run_cli: RunCli,
    c_rle: Path,
    scratch_env: dict[str, str],
    tmp_path: Path,
    patch: str,
    code: int,
    checks: dict[str, tuple[str, list[bool]]],
    logs: list[str],
) -> None:
    saved = tmp_path / "logs"
    found = grade(run_cli, c_rle, c_rle / patch, scratch_env, "--logs", str(saved))
    answer = found[1]
    assert (found[0], answer["resolved"], answer["patch"]) == (
        code, code == 0, {"applied": True, "error": None, "dropped": []},
    )  # fmt: skip
    assert statuses(answer) == checks
    assert sorted(p.name for p in saved.iterdir()) == sorted(logs)
    asan = b"ERROR: AddressSanitizer: heap-buffer-overflow"
    assert (asan in (saved / "pocs-1.log").read_bytes()) == (code == 1)


def test_a_patch_that_does_not_apply_runs_no_check(
    run_cli: RunCli, c_rle: Path, scratch_env: dict[str, str], tmp_path: Path
) -> None:
    env = scratch_env
    stale = tmp_path / "stale.patch"  # the fix, written against another version of rle.c
    stale.write_text((c_rle / "fix.patch").read_text().replace(" \t\tsize_t count;", " \t\tint n;"))
    code, answer, stderr = grade(run_cli, c_rle, stale, env)
    error = "patch failed: rle.c:88; rle.c: patch does not apply"
    patch = {"applied": False, "error": error, "dropped": []}
    assert (code, answer) == (1, {"resolved": False, "reason": "patch-does-not-apply",
                                  "patch": patch, "protected": {"reverted": []},
                                  "signals": [], "checks": []})  # fmt: skip
    assert stderr == f"ssebench: the patch does not apply: {error}\n"


ESCAPES = {
    "a path out of the tree": (
        "diff --git a/../evil b/../evil\nnew file mode 100644\n--- /dev/null\n+++ b/../evil\n"
        "@@ -0,0 +1 @@\n+owned\n",
        "invalid path '../evil'",
    ),
    "a file through a new symbolic link": (
        "diff --git a/out b/out\nnew file mode 120000\n--- /dev/null\n+++ b/out\n@@ -0,0 +1 @@\n"
        "+{outside}\n\\ No newline at end of file\n"
        "diff --git a/out/evil b/out/evil\nnew file mode 100644\n--- /dev/null\n+++ b/out/evil\n"
        "@@ -0,0 +1 @@\n+owned\n",
        "affected file 'out/evil' is beyond a symbolic link",
    ),
}


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_patch_that_writes_outside_the_tree_is_refused(
    run_cli: RunCli, c_rle: Path, scratch_env: dict[str, str], tmp_path: Path, escape: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    text, error = ESCAPES[escape]
    evil = tmp_path / "evil.patch"
    evil.write_text(text.format(outside=outside))
    code, answer, _ = grade(run_cli, c_rle, evil, scratch_env)
    assert (code, answer["patch"]) == (1, {"applied": False, "error": error, "dropped": []})
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "evil").exists() and not (c_rle / "evil").exists()


# --- patches `git diff` wrote: new, deleted and binary files --------------------------------

BEFORE = {"keep.txt": b"keep\n", "removed.txt": b"gone soon\n", "data.bin": bytes(range(256)) * 4}
AFTER: dict[str, bytes | None] = {
    "removed.txt": None,
    "added.txt": b"new\n",
    "data.bin": bytes(reversed(range(256))) * 4 + b"\0\xff",
    "new.bin": b"\x00\x01\x02\xfe\xff" * 100,
}


def sha256_check(files: Mapping[str, bytes | None]) -> str:
    """A command that passes only when the tree holds exactly these files (None: absent)."""
    sums = "".join(f"{hashlib.sha256(v).hexdigest()}  {k}\n" for k, v in files.items() if v)
    gone = "".join(f"test ! -e {k}\n" for k, v in files.items() if v is None)
    return f"sha256sum -c --quiet <<'END'\n{sums}END\n{gone}"


@pytest.fixture
def files_task(ssebench_task: Callable[..., TaskHandle]) -> Path:
    """A task whose build passes only when the tree is exactly AFTER."""
    check = sha256_check({**AFTER, "keep.txt": BEFORE["keep.txt"]})
    return ssebench_task({"build": check, "functional": "test -f keep.txt"}, files=BEFORE).path


def test_a_git_patch_with_new_deleted_and_binary_files(
    run_cli: RunCli, files_task: Path, scratch_env: dict[str, str], tmp_path: Path
) -> None:
    env = scratch_env
    patch = tmp_path / "change.patch"
    patch.write_bytes(git_diff(tmp_path, BEFORE, AFTER))
    assert b"GIT binary patch" in patch.read_bytes() and b"deleted file mode" in patch.read_bytes()
    code, answer, _ = grade(run_cli, files_task, patch, env)
    assert (code, statuses(answer)) == (0, {"build": ("passed", [True]),
                                            "pocs": ("passed", []), "intent": ("passed", []),
                                            "functional": ("passed", [True])})  # fmt: skip
    # As shipped the build fails: the grade did run on the patched copy.
    assert run_cli("grade", "--task", str(files_task), "--quiet").returncode == 1


def test_a_binary_change_without_its_hunk_does_not_apply(
    run_cli: RunCli, files_task: Path, scratch_env: dict[str, str], tmp_path: Path
) -> None:
    env = scratch_env
    patch = tmp_path / "change.patch"
    patch.write_bytes(git_diff(tmp_path, BEFORE, AFTER, binary=False))  # "Binary files differ"
    code, answer, _ = grade(run_cli, files_task, patch, env)
    assert (code, answer["checks"]) == (1, [])
    assert answer["patch"] == {
        "applied": False,
        "error": "cannot apply binary patch to 'data.bin' without full index line; "
        "data.bin: patch does not apply; "
        "cannot apply binary patch to 'new.bin' without full index line; "
        "new.bin: patch does not apply",
        "dropped": [],
    }


def test_an_enclosing_git_repository_changes_nothing(
    run_cli: RunCli, files_task: Path, tmp_path: Path
) -> None:
    # Under a repository, git apply would take a git patch's paths as the repository's and,
    # from a subfolder, skip them all without a word: the scratch copy must stay its own root.
    repo = tmp_path / "enclosing"
    (repo / "tmp").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    patch = tmp_path / "change.patch"
    patch.write_bytes(git_diff(tmp_path, BEFORE, AFTER))
    env = {**os.environ, "TMPDIR": str(repo / "tmp")}
    code, answer, _ = grade(run_cli, files_task, patch, env)
    assert (code, answer["resolved"]) == (0, True)


def test_an_empty_patch_grades_the_tree_as_shipped(
    run_cli: RunCli, files_task: Path, scratch_env: dict[str, str], tmp_path: Path
) -> None:
    env = scratch_env
    empty = tmp_path / "empty.patch"
    empty.write_text("")
    code, answer, _ = grade(run_cli, files_task, empty, env)
    assert (code, answer["patch"], statuses(answer)["build"]) == (
        1, {"applied": True, "error": None, "dropped": []}, ("failed", [False]),
    )  # fmt: skip


# --- stopping, and bad input ----------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_stopped_grade_leaves_no_scratch_copy(
    ssebench_task: Callable[..., TaskHandle],
    scratch_env: dict[str, str],
    tmp_path: Path,
    sig: signal.Signals,
) -> None:
    env = scratch_env
    tmpdir = Path(env["TMPDIR"])
    task = ssebench_task({"build": "touch started; sleep 60"}, files={"a.txt": "a\n"}).path
    empty = tmp_path / "empty.patch"
    empty.write_text("")
    args = ["grade", "--task", str(task), "--patch", str(empty), "--quiet"]
    proc = start_child([*SSEBENCH, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    started = "ssebench-*/ssebench-grade-*/*/started"
    wait_for(lambda: list(tmpdir.glob(started)), 60, "the build started", 0.05, alive=proc)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    wait_for(  # after SIGKILL the guard removes it, a moment later
        lambda: not list(tmpdir.iterdir()),
        deadline - time.monotonic(),
        lambda: f"an empty TMPDIR (left: {list(tmpdir.iterdir())})",
        0.05,
    )
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)


def test_without_git_one_line(
    run_cli: RunCli, files_task: Path, scratch_env: dict[str, str], tmp_path: Path
) -> None:
    env = scratch_env
    tmpdir = Path(env["TMPDIR"])
    bin_dir = tmp_path / "bin"  # no git, no cp (the copy falls back to Python's)
    bin_dir.mkdir()
    patch = tmp_path / "change.patch"
    patch.write_bytes(git_diff(tmp_path, BEFORE, AFTER))
    done = run_cli("grade", "--task", str(files_task), "--patch", str(patch),
                   env={**env, "PATH": str(bin_dir)})  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "ssebench: error: applying a patch needs git (`git apply`); install git\n"
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--daemon-url", "http://127.0.0.1:9", "--patch", "p"],
         "--patch grades a pristine copy of a task: use it with --task DIR"),
        (["--task", ".", "-j", "2"], "-j grades a benchmark run: use it with --tasks DIR"),
        (["--task", ".", "--shard", "0/2"],
         "--shard grades a benchmark run: use it with --tasks DIR"),
        (["--task", ".", "--logs", "x"],
         "--logs saves the logs of a patch's grade: use it with --patch FILE"),
        (["--task", "{task}", "--patch", "/nonexistent.patch"],
         "/nonexistent.patch: cannot read the patch: No such file or directory"),
        (["--task", "{task}", "--patch", "/dev/zero"],
         "/dev/zero: cannot read the patch: over 64 MiB, too large for a diff"),
        (["--task", "{task}", "--patch", "/dev/null", "--logs", "/etc/passwd"],
         "--logs /etc/passwd: not a folder"),
        (["--task", "{task}", "--patch", "/dev/null", "--logs", "/etc/passwd/logs"],
         "--logs /etc/passwd/logs: cannot make the folder: Not a directory"),
    ],
)  # fmt: skip
def test_bad_flags_are_one_line(
    run_cli: RunCli, files_task: Path, args: list[str], error: str
) -> None:
    done = run_cli("grade", *[a.replace("{task}", str(files_task)) for a in args])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"ssebench: error: {error}\n")
