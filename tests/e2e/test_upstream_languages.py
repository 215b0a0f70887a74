"""Upstream ssebench's Go and Rust tasks, as its images hold them: a Go module and a Rust crate of
our own in upstream's layout (examples/upstream), imported with `--source` and run on this
machine's toolchains (Debian's golang-go, rustc and cargo) under each mechanism it has, as root
with the tree owned by the agent's user (uid 1000) and the task folder locked to root. As
shipped the PoC triggers at level 0 (a Go panic, a Rust panic: run.sh's exit status), with its
folder (the PoC's Go module, its crate) beside it; with the fix every check passes; `validate`
finds the task sound; `grade` resolves the fix and not an empty patch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user

from .test_grade_patch import tree_hash

pytestmark = pytest.mark.timeout(600)

RunCli = Callable[..., subprocess.CompletedProcess[str]]
DATASET = Path(__file__).resolve().parents[2] / "examples" / "upstream" / "datasets" / "mini"
MECHANISMS = available(case_user()) if os.geteuid() == 0 else ["landlock"]
# Where a case finds its tools: the system's folders, never a user's (~/.cargo/bin is root's).
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
AS_SHIPPED = """\
test_patch result: FAILED. At least one proof-of-concept (PoC) still triggers the vulnerability. \
Please reassess your patch and make sure it fixes the root cause of the vulnerability.

Checks:
- build: passed
- PoCs: FAILED (passed 0 of 1; stopped at the first that still triggers the bug)
- intent tests: FAILED
- functional tests: passed

Full log (PoCs):
"""
SOUND = """\
ssebench validate: 1 run on each tree

check             as shipped  with the fix
build             passed      passed
PoCs              FAILED      passed
intent tests      FAILED      passed
functional tests  passed      passed

The task is sound.
"""


@dataclass(frozen=True)
class Language:
    id: str
    project: str  # the tree's folder in the task folder, and the tree's name here
    tools: tuple[str, ...]
    triggered: str  # what the PoC's log says as shipped
    poc_files: tuple[str, ...]  # the PoC's folder, as it travels with it
    unbuilt: int  # run.sh's status when the PoC's go.mod or Cargo.toml is not there


LANGUAGES = {
    "go": Language(
        "go-tlv-1", "tlv", ("go",),
        "panic: runtime error: slice bounds out of range [:202] with capacity 4\n",
        ("pocs/go.mod", "pocs/poc.go"), 1,
    ),
    "rust": Language(
        "rust-rle-1", "rle", ("cargo", "rustc"),
        "thread 'main' panicked at 'range end index 7 out of range for slice of length 3'",
        ("pocs/Cargo.toml", "pocs/src/main.rs"), 2,
    ),
}  # fmt: skip


def need(tools: tuple[str, ...]) -> None:
    """Skipped where a toolchain is missing, but failed in CI (CI=true): .ci/run installs them
    (Debian's golang-go, rustc, cargo), so there a missing one is CI's own bug, never a pass."""
    missing = [tool for tool in tools if shutil.which(tool, path=SYSTEM_PATH) is None]
    if not missing:
        return
    said = f"needs {', '.join(missing)} in {SYSTEM_PATH} (Debian's golang-go, rustc, cargo)"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{said}: CI installs them (.ci/run)", pytrace=False)
    pytest.skip(said)


@dataclass(frozen=True)
class Imported:
    language: Language
    tree: Path
    task: Path


@pytest.fixture(scope="module", params=sorted(LANGUAGES))
def imported(request: pytest.FixtureRequest) -> Iterator[Imported]:
    """The task imported with a copy of its tree, the tree the agent's, the task root's."""
    language = LANGUAGES[request.param]
    need(language.tools)
    root = Path(tempfile.mkdtemp(prefix="ssebench-test-", dir="/tmp"))
    root.chmod(0o711)  # the agent's user may pass, to its tree
    try:
        tree = root / "tree" / language.project
        shutil.copytree(DATASET / language.id / language.project, tree)
        argv = ["import", "upstream", str(DATASET / language.id), "--source", str(tree),
                "--out", str(root / "tasks")]  # fmt: skip
        done = subprocess.run(["ssebench", *argv], capture_output=True, text=True, timeout=60)
        task = root / "tasks" / language.id
        said = "ssebench: import upstream: 1 record: 1 task, 1 with a fix\n"
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{task}\n", said)
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", "1000:1000", str(root / "tree")], check=True)
            task.chmod(0o700)
        yield Imported(language, tree, task)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _isolation(mechanism: str) -> list[str]:
    return ["--isolation", mechanism, "--quiet"]


def test_the_pocs_folder_travels_with_it(imported: Imported) -> None:
    files = sorted(
        str(p.relative_to(imported.task)) for p in imported.task.rglob("*") if p.is_file()
    )
    sse = DATASET / imported.language.id / "sse"
    for name in imported.language.poc_files:
        assert name in files
        assert (imported.task / name).read_bytes() == (sse / name).read_bytes()
    toml = (imported.task / "task.toml").read_text()
    assert "[checks.pocs]\nfiles = ['pocs']\n" in toml


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_as_shipped_its_poc_triggers_at_level_0(
    run_cli: RunCli, imported: Imported, mechanism: str
) -> None:
    before = tree_hash(imported.tree)
    done = run_cli("check", "--task", str(imported.task), "--difficulty", "0",
                   *_isolation(mechanism))  # fmt: skip
    assert done.returncode == 1, done.stderr
    head, marker, log = done.stdout.partition("Full log (PoCs):\n")
    assert head + marker == AS_SHIPPED
    assert imported.language.triggered in log
    assert tree_hash(imported.tree) == before  # built in a copy, tested in another


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_validate_finds_it_sound(run_cli: RunCli, imported: Imported, mechanism: str) -> None:
    done = run_cli("validate", "--task", str(imported.task), "--fix",
                   str(imported.task / "fix.patch"), *_isolation(mechanism))  # fmt: skip
    assert (done.returncode, done.stdout) == (0, SOUND), done.stderr


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_grade_resolves_its_fix_and_not_an_empty_patch(
    run_cli: RunCli, imported: Imported, mechanism: str, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.diff"
    empty.write_text("")
    found = {}
    for name, patch in (("fix", imported.task / "fix.patch"), ("empty", empty)):
        done = run_cli("grade", "--task", str(imported.task), "--patch", str(patch),
                       *_isolation(mechanism))  # fmt: skip
        assert done.returncode == (0 if name == "fix" else 1), done.stderr
        found[name] = json.loads(done.stdout)
    assert {name: [c["status"] for c in grade["checks"]] for name, grade in found.items()} == {
        "fix": ["passed", "passed", "passed", "passed"],
        "empty": ["passed", "failed", "failed", "passed"],
    }
    assert found["fix"]["protected"] == {"reverted": []}  # the fix stays whole


def test_a_poc_without_its_module_is_named_a_set_up_problem(
    run_cli: RunCli, imported: Imported, tmp_path: Path
) -> None:
    """As the importer left a Go pilot task's PoC (poc.go without its go.mod): run.sh fails the
    same way on both trees, which upstream's exit-status rule reads as still triggering."""
    task = tmp_path / imported.language.id
    shutil.copytree(imported.task, task)
    (task / imported.language.poc_files[0]).unlink()
    done = run_cli("validate", "--task", str(task), "--fix", str(task / "fix.patch"),
                   *_isolation(MECHANISMS[0]))  # fmt: skip
    assert (done.returncode, done.stdout) == (
        1,
        (
            SOUND.replace(
                "PoCs              FAILED      passed", "PoCs              FAILED      FAILED"
            ).replace(
                "\nThe task is sound.\n",
                "\nProblems:\n- PoCs: FAILED with the fix, ending as it did as shipped (exit "
                f"status {imported.language.unbuilt}, every run): it may never reach the bug, a "
                "set-up problem (it cannot build, or find its files: --logs DIR keeps its log), "
                "unless the fix does not fix it\n\nThe task is NOT sound.\n",
            )
        ),
    ), done.stderr


RACY = """\
package main

import (
	"fmt"
	"sync"
)

func main() {
	n := 0
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { LOCK_; n++; UNLOCK_; wg.Done() }()
	}
	wg.Wait()
	fmt.Println(n)
}
"""


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_go_race_report_triggers_by_its_exit_status(
    run_cli: RunCli, mechanism: str, tmp_path: Path
) -> None:
    """Go's race detector reports on stderr, not through a sanitizer's log_path, and exits 66
    (`go run` then 1): judged by exit status, as upstream's run.sh is."""
    need(("go",))
    found = []
    variants = [("racy", ("", "")), ("locked", ("mu.Lock()", "mu.Unlock()"))]
    for name, lock in variants[: 2 if mechanism == MECHANISMS[0] else 1]:  # one control
        task = tmp_path / name
        (task / "src").mkdir(parents=True)
        (task / "src" / "go.mod").write_text("module racy\n\ngo 1.19\n")
        main = RACY.replace("UNLOCK_", lock[1]).replace("LOCK_", lock[0])
        if not lock[0]:
            main = main.replace("\tvar mu sync.Mutex\n", "")
        (task / "src" / "main.go").write_text(main)
        (task / "task.toml").write_text(
            'source = "src"\n[checks.pocs]\nrun = "go run -race main.go"\n'
            "triggered_if = { passing_exit_codes = [0] }\n"
        )
        done = run_cli("check", "--task", str(task), "--difficulty", "1", *_isolation(mechanism))
        found.append((done.returncode, done.stdout))
    (racy, racy_text), *control = found
    assert racy == 1 and "- PoCs: FAILED (passed 0 of 1;" in racy_text, racy_text
    assert "WARNING: DATA RACE" in racy_text and "Found 1 data race(s)" in racy_text
    for locked, locked_text in control:
        assert locked == 0 and "- PoCs: passed (1 of 1)" in locked_text, locked_text
