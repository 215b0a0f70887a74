"""The agent's tree as the daemon copies it, through the commands a user runs: a 16 GiB sparse
file costs a few blocks and no time; a tree over `limits.tree_mb` (or `--tree-mb`) is one line
in a failed build, for test_patch as for `check` and `grade`, and the next call after the agent
removed what was too big runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ssebench.testing.calls import call
from ssebench.testing.servers import clean_env, start_server, write_task

pytestmark = pytest.mark.timeout(180)
RunCli = Callable[..., subprocess.CompletedProcess[str]]

BUILD_FAILED = (
    "test_patch result: FAILED. The project failed to build. Please reassess the correctness of "
    "your patch.\n\nChecks:\n- build: FAILED\n"
)
LEVEL_3 = (
    "\nNot available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
    "Nothing is reported about them.\n\n"
)
LEVEL_2_PASSED = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n"
    "- functional tests: passed\n\nNot available at difficulty level 2 (NO_FUTURE_TEST): PoCs, "
    "intent tests. Nothing is reported about them. Without the PoCs, this result does not show "
    "whether the vulnerability is fixed."
)


PATCH = """\
diff --git a/x.c b/x.c
new file mode 100644
--- /dev/null
+++ b/x.c
@@ -0,0 +1 @@
+int x;
"""


def sparse(path: Path, size: int, marks: dict[int, bytes]) -> None:
    with open(path, "wb") as file:
        file.truncate(size)
        for offset, data in marks.items():
            file.seek(offset)
            file.write(data)


def test_a_16_gib_sparse_file_costs_a_few_blocks_and_no_time(tmp_path: Path, run_cli: RunCli):
    """The build measures its own copy of the file: what it holds on disk, and its bytes."""
    task = write_task(
        tmp_path / "task",
        '[checks.build]\nrun = "du -k huge.img; tail -c 4 huge.img; exit 1"\n',
    )
    sparse(task / "src" / "huge.img", 16 << 30, {0: b"head", (16 << 30) - 4: b"tail"})
    started = time.monotonic()
    done = run_cli(
        "check", "--task", str(task), "--difficulty", "3", "--tree-mb", "20480", "--quiet",
        env=clean_env(tmp_path),
    )  # fmt: skip
    took = time.monotonic() - started
    log = done.stdout.split("Full log (build):\n", 1)[1]
    allocated_kib = int(log.split()[0])
    assert (done.returncode, log.split("\n", 1)[1]) == (1, "tail\n"), done.stderr
    assert allocated_kib < 4096  # a dense copy: 16,777,216
    assert took < 10  # a dense copy of 16 GiB takes minutes on this machine's disk


def test_a_tree_over_its_bound_fails_the_build_in_one_line(tmp_path: Path, run_cli: RunCli):
    task = write_task(
        tmp_path / "task",
        'limits = { tree_mb = 1 }\n[checks.build]\nrun = "echo built"\n'
        '[checks.functional]\nrun = "echo ok"\n',
    )
    sparse(task / "src" / "big.img", 2 << 20, {})
    env = clean_env(tmp_path)
    done = run_cli("check", "--task", str(task), "--difficulty", "3", "--quiet", env=env)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        BUILD_FAILED + LEVEL_3 + "Full log (build):\n[ssebench: the source tree is over its "
        "limit of 1 MB (limits.tree_mb), so this case did not run; its largest file is big.img "
        "(2 MB)]\n",
        "",
    )
    bigger = run_cli("check", "--task", str(task), "--tree-mb", "3", "--quiet", env=env)
    assert (bigger.returncode, bigger.stdout) == (0, LEVEL_2_PASSED + "\n")


def test_grade_takes_a_tree_over_its_bound_as_a_failed_build(tmp_path: Path, run_cli: RunCli):
    task = write_task(
        tmp_path / "task",
        '[checks.build]\nrun = "echo built"\n[checks.functional]\nrun = "echo ok"\n',
    )
    sparse(task / "src" / "big.img", 2 << 20, {})
    args = ("grade", "--task", str(task), "--quiet")
    done = run_cli(*args, "--tree-mb", "1", env=clean_env(tmp_path))
    answer = json.loads(done.stdout)
    statuses = [(check["key"], check["status"]) for check in answer["checks"]]
    assert (done.returncode, answer["resolved"]) == (1, False), done.stderr
    assert statuses == [
        ("build", "failed"),
        ("pocs", "not run"),
        ("intent", "not run"),
        ("functional", "not run"),
    ]
    assert answer["checks"][0]["cases"] == [
        {"index": 0, "passed": False, "exit_code": None, "signal": None, "timed_out": False,
         "seconds": 0.0, "sanitizer_exit": None}
    ]  # fmt: skip
    logs, patch = tmp_path / "logs", tmp_path / "fix.patch"
    patch.write_text(PATCH)
    again = run_cli(
        *args, "--patch", str(patch), "--tree-mb", "1", "--logs", str(logs), env=clean_env(tmp_path)
    )
    assert json.loads(again.stdout)["resolved"] is False, again.stderr
    assert (logs / "build-0.log").read_text() == (
        "[ssebench: the source tree is over its limit of 1 MB (limits.tree_mb), so this case "
        "did not run; its largest file is big.img (2 MB)]\n"
    )
    passed = run_cli(*args, env=clean_env(tmp_path))  # the default bound: 8192 MB
    assert (passed.returncode, json.loads(passed.stdout)["resolved"]) == (0, True)


def test_test_patch_says_so_and_the_next_call_after_the_agent_cleaned_up_runs(tmp_path: Path):
    task = write_task(
        tmp_path / "task",
        'limits = { tree_mb = 1 }\n[checks.build]\nrun = "echo built"\n'
        '[checks.functional]\nrun = "echo ok"\n',
    )
    (task / "src" / "a.c").write_text("int a;\n")
    server = start_server(tmp_path, ["--task", str(task)])
    try:
        assert call(server.url) == LEVEL_2_PASSED
        big = task / "src" / "deep" / "er"
        big.mkdir(parents=True)
        sparse(big / "core", 5 << 20, {4 << 20: b"x"})  # what the agent's program dumped
        assert call(server.url) == (
            BUILD_FAILED + "- functional tests: not run (the build failed)\n\n"
            "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing "
            "is reported about them.\n\nFull log (build):\n[ssebench: the source tree is over "
            "its limit of 1 MB (limits.tree_mb), so this case did not run; its largest file is "
            "deep/er/core (5 MB)]"
        )
        os.unlink(big / "core")
        assert call(server.url) == LEVEL_2_PASSED
        assert "Traceback" not in server.stderr()
    finally:
        server.stop()


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "8G", ""])
def test_a_bad_tree_mb_is_one_line(tmp_path: Path, run_cli: RunCli, value: str) -> None:
    task = write_task(tmp_path / "task", '[checks.build]\nrun = "true"\n')
    done = run_cli("check", "--task", str(task), f"--tree-mb={value}", env=clean_env(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"ssebench check: error: argument --tree-mb: expected a whole number of at least 1, "
        f"got {value!r}\n",
    )


def test_a_benchmark_runs_grades_take_the_flag_too(tmp_path: Path, run_cli: RunCli) -> None:
    """Each prediction is graded by a process of its own, which gets the bound from its parent."""
    tasks = tmp_path / "tasks"
    task = write_task(tasks / "t1", '[checks.build]\nrun = "echo built"\n')
    sparse(task / "src" / "big.img", 2 << 20, {})
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"task": "t1", "model": "m", "patch": PATCH}) + "\n")
    out = tmp_path / "out"
    args = ("grade", "--tasks", str(tasks), "--predictions", str(predictions), "--quiet")
    done = run_cli(*args, "--out", str(out), "--tree-mb", "1", env=clean_env(tmp_path))
    result = json.loads((out / "m" / "t1" / "result.json").read_text())
    build = result["checks"][0]
    assert (done.returncode, result["resolved"], build["status"]) == (0, False, "failed")
    fits = run_cli(*args, "--out", str(tmp_path / "out2"), env=clean_env(tmp_path))
    result = json.loads((tmp_path / "out2" / "m" / "t1" / "result.json").read_text())
    assert (fits.returncode, result["resolved"]) == (0, True), fits.stderr
