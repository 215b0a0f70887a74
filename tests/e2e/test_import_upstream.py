"""`ssebench import upstream` of a task folder in upstream's layout, run on this machine with
`--source`: the task folder it writes (task.toml compared whole), the tree as shipped failing its
PoCs at level 0 with the exact report, its fix resolving it, an empty patch not, `validate`
finding it sound; its scripts run directly (their `#!` line holds), and the intent check's
hidden tests applied as data to a copy of the tree, never to the agent's tree, whatever git
configuration the tree plants."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from . import benchsamples
from .test_grade_patch import BUILD_OUTPUTS, tree_hash

pytestmark = pytest.mark.timeout(300)

RunCli = Callable[..., subprocess.CompletedProcess[str]]
POC_REASON = (
    "test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the "
    "vulnerability. Please reassess your patch and make sure it fixes the root cause of the "
    "vulnerability."
)
AS_SHIPPED_AT_LEVEL_0 = f"""\
{POC_REASON}

Checks:
- build: passed
- PoCs: FAILED (passed 0 of 3; stopped at the first that still triggers the bug)
- intent tests: FAILED
- functional tests: passed

Full log (PoCs):
"""
TASK_TOML = """\
# Imported by `ssebench import upstream` (ssebench 0.1.0) from
# FOLDER: upstream ssebench task c-rle-1 (c-rle, c).
# The source's own metadata is beside this file: upstream/.
source = 'TREE'
image = 'ghcr.io/42-b3yond-6ug/ssebench/case/standin/c-rle-1:pilot-v1'
files = ['scripts/build.sh', 'scripts/run.sh', 'scripts/test.sh']
# The image's build variables (a case's environment is an allow-list).
pass_env = [
    'SRC', 'OUT', 'WORK', 'CC', 'CXX', 'CCC', 'CFLAGS', 'CXXFLAGS', 'LDFLAGS', 'LIB_FUZZING_ENGINE',
    'SANITIZER', 'SANITIZER_FLAGS', 'FUZZING_ENGINE', 'FUZZING_LANGUAGE', 'ARCHITECTURE',
    'MSAN_LIBS_PATH', 'GOPATH', 'GOROOT', 'GOFLAGS', 'GOTOOLCHAIN', 'CGO_ENABLED', 'CARGO_HOME',
    'RUSTUP_HOME', 'RUSTUP_TOOLCHAIN', 'RUSTFLAGS',
]
# What decides the build and the tests, as shipped (less what the reference fix changes):
# a graded patch cannot change it (docs/evaluating.md).
protected = ['/Makefile', '/tests/']

[checks.build]
run = '"$SSE_TASK_DIR/scripts/build.sh"'

# Judged as upstream judges them, by run.sh's exit status (0: no longer triggers),
# and by a sanitizer's report, which reaches the log whatever run.sh reads.
[checks.pocs]
files = ['pocs/crash-1.bin', 'pocs/crash-2.bin', 'pocs/crash-3.bin']
cases = [
    '"$SSE_TASK_DIR/scripts/run.sh" "$SSE_TASK_DIR/pocs/crash-1.bin"',
    '"$SSE_TASK_DIR/scripts/run.sh" "$SSE_TASK_DIR/pocs/crash-2.bin"',
    '"$SSE_TASK_DIR/scripts/run.sh" "$SSE_TASK_DIR/pocs/crash-3.bin"',
]
triggered_if = { passing_exit_codes = [0] }

[checks.intent]
files = ['diffs/test.diff']
run = '''
set -eu
# The hidden tests (upstream: a fresh copy of the tree, the diff applied with git apply -p1),
# in this case's own folder: never in the tree the other checks see. git reads no repository,
# configuration, attribute, hook or filter of the tree: the diff is applied as data.
copy="$TMPDIR/$(basename "$PWD")"
cp -a . "$copy"
mkdir "$TMPDIR/no-repository"
cd "$copy"
GIT_DIR="$TMPDIR/no-repository" GIT_CEILING_DIRECTORIES="$TMPDIR" GIT_CONFIG_NOSYSTEM=1 \\
    GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 \\
    git apply -p1 --whitespace=nowarn "$SSE_TASK_DIR/diffs/test.diff"
exec "$SSE_TASK_DIR/scripts/test.sh"
'''

[checks.functional]
run = '"$SSE_TASK_DIR/scripts/test.sh"'
"""
# A smudge filter git runs when it writes a file of a repository's work tree: what an agent
# could plant in its tree for a grader that runs git there.
PLANTED = (
    "git init -q . && printf '* filter=evil\\n' > .gitattributes && "
    "git config filter.evil.smudge \"sh -c 'echo SMUDGE RAN >&2; cat'\""
)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The sample, the tree on this machine (as shipped) and the task imported with it."""
    if shutil.which("cc") is None or shutil.which("make") is None or shutil.which("git") is None:
        pytest.skip("c-rle needs a C compiler, make and git")
    root = tmp_path_factory.mktemp("upstream")
    sample = benchsamples.upstream_task(root)
    tree = root / "tree" / "c-rle"
    shutil.copytree(benchsamples.C_RLE / "src", tree, ignore=BUILD_OUTPUTS)
    argv = ["import", "upstream", str(sample), "--source", str(tree), "--out", str(root / "tasks")]
    done = subprocess.run(["ssebench", *argv], capture_output=True, text=True, timeout=60)
    said = "ssebench: import upstream: 1 record: 1 task, 1 with a fix\n"
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{root / 'tasks/c-rle-1'}\n", said)
    return sample, tree, root / "tasks" / "c-rle-1"


def test_the_task_folder_it_writes(imported: tuple[Path, Path, Path]) -> None:
    sample, tree, task = imported
    expected = TASK_TOML.replace("FOLDER", str(sample)).replace("TREE", str(tree))
    assert (task / "task.toml").read_text() == expected
    files = {
        str(path.relative_to(task)): stat.S_IMODE(path.stat().st_mode)
        for path in task.rglob("*")
        if path.is_file()
    }
    assert files == {
        "task.toml": 0o644, "fix.patch": 0o644, "diffs/test.diff": 0o644,
        "scripts/build.sh": 0o755, "scripts/run.sh": 0o755, "scripts/test.sh": 0o755,
        "pocs/crash-1.bin": 0o644, "pocs/crash-2.bin": 0o644, "pocs/crash-3.bin": 0o644,
        "upstream/config.yaml": 0o644, "upstream/Dockerfile": 0o644,
        "upstream/reports/crash-1.txt": 0o644,
    }  # fmt: skip
    sse = sample / "sse"
    for ours, theirs in [("fix.patch", "diffs/patch.diff"), ("scripts/run.sh", "run.sh"),
                         ("upstream/config.yaml", "config.yaml")]:  # fmt: skip
        assert (task / ours).read_bytes() == (sse / theirs).read_bytes()


def test_as_shipped_it_fails_its_pocs_at_level_0(
    run_cli: RunCli, imported: tuple[Path, Path, Path]
) -> None:
    _, tree, task = imported
    before = tree_hash(tree)
    done = run_cli("check", "--task", str(task), "--difficulty", "0", "--quiet")
    assert done.returncode == 1, done.stderr
    head, marker, log = done.stdout.partition("Full log (PoCs):\n")
    assert head + marker == AS_SHIPPED_AT_LEVEL_0
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log
    assert tree_hash(tree) == before  # not built, and no hidden test left in it


def test_its_fix_resolves_it_and_an_empty_patch_does_not(
    run_cli: RunCli, imported: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, task = imported
    empty = tmp_path / "empty.diff"
    empty.write_text("")
    found = {}
    for name, patch in (("fix", task / "fix.patch"), ("empty", empty)):
        logs = tmp_path / name
        done = run_cli("grade", "--task", str(task), "--patch", str(patch), "--logs", str(logs),
                       "--quiet")  # fmt: skip
        found[name] = json.loads(done.stdout)
        assert done.returncode == (0 if name == "fix" else 1), done.stderr
    statuses = {name: [c["status"] for c in grade["checks"]] for name, grade in found.items()}
    assert statuses == {
        "fix": ["passed", "passed", "passed", "passed"],
        "empty": ["passed", "failed", "failed", "passed"],
    }
    # build.sh ran directly: `#!/bin/bash -eu` gave it -e and -u.
    assert (tmp_path / "fix" / "build-0.log").read_text().splitlines()[0] == ("shell options: ehuB")


def test_validate_finds_it_sound(run_cli: RunCli, imported: tuple[Path, Path, Path]) -> None:
    _, _, task = imported
    done = run_cli("validate", "--task", str(task), "--fix", str(task / "fix.patch"), "--quiet")
    assert (done.returncode, done.stdout) == (
        0,
        "ssebench validate: 1 run on each tree\n\n"
        "check             as shipped  with the fix\n"
        "build             passed      passed\n"
        "PoCs case 0       FAILED      passed\n"
        "PoCs case 1       FAILED      passed\n"
        "PoCs case 2       FAILED      passed\n"
        "intent tests      FAILED      passed\n"
        "functional tests  passed      passed\n\n"
        "The task is sound.\n",
    ), done.stderr


def test_the_hidden_tests_are_applied_as_data(
    run_cli: RunCli, imported: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A repository planted in the tree, whose smudge filter git runs when it writes a file of
    it (as plain `git apply` there shows), is not obeyed: the intent check's git has none."""
    sample, shipped, _ = imported
    tree = tmp_path / "c-rle"
    shutil.copytree(shipped, tree)
    subprocess.run(["bash", "-c", PLANTED], cwd=tree, check=True, env=_plain_git_env())
    control = tmp_path / "control"
    shutil.copytree(tree, control)
    diff = sample / "sse" / "diffs" / "test.diff"
    plain = subprocess.run(["git", "apply", "-p1", str(diff)], cwd=control, capture_output=True,
                           text=True, env=_plain_git_env())  # fmt: skip
    assert plain.returncode == 0 and "SMUDGE RAN" in plain.stderr, plain.stderr
    out = tmp_path / "tasks"
    done = run_cli("import", "upstream", str(sample), "--source", str(tree), "--out", str(out))
    assert done.returncode == 0, done.stderr
    task = out / "c-rle-1"
    logs = tmp_path / "logs"
    done = run_cli("grade", "--task", str(task), "--patch", str(task / "fix.patch"), "--logs",
                   str(logs), "--quiet")  # fmt: skip
    assert json.loads(done.stdout)["resolved"] is True, done.stderr
    intent = (logs / "intent-0.log").read_text()
    assert "all intent tests passed" in intent and "SMUDGE RAN" not in intent


def _plain_git_env() -> dict[str, str]:
    """git as a user runs it, but for a name to commit with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.environ.get("HOME", "/root")}
