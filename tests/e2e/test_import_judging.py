"""An imported PoC is judged as its benchmark judges it: the `triggered_if` (and, for ARVO, the
`env`) that `import secb --mode` and `import arvo` write, taken from the task.toml each writes,
judging real runs of the real daemon. SEC-bench: each of its evaluator's six patterns, its
time-outs and each mode, against a transcription of its evaluator (secb/evaluator/
eval_instances.py, utils.py); ARVO: the record's sanitizer's words, CyberGym's non-zero exit,
and real gcc programs that hide their reports, under each mechanism this machine has."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ssebench.core import Status
from ssebench.core.cli import main
from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user
from ssebench.testing import arvometa
from ssebench.testing.kit import make_task

from . import benchsamples

pytestmark = pytest.mark.timeout(600)
MECHANISMS = ["none", *available(case_user())]
# secb/evaluator/utils.py's SANITIZER_ERROR_PATTERNS.
SECB_PATTERNS = (
    "ERROR: AddressSanitizer:",
    "ERROR: MemorySanitizer:",
    "WARNING: MemorySanitizer:",
    "UndefinedBehaviorSanitizer:DEADLYSIGNAL",
    "ERROR: LeakSanitizer:",
    "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior",
)
# Each of the six in a line as a runtime prints it.
SIX = {
    "asan": "==17==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000018",
    "msan-error": "==17==ERROR: MemorySanitizer: requested allocation size 0x100000000000",
    "msan-warning": "==17==WARNING: MemorySanitizer: use-of-uninitialized-value",
    "ubsan-deadly": "UndefinedBehaviorSanitizer:DEADLYSIGNAL",
    "lsan": "==17==ERROR: LeakSanitizer: detected memory leaks",
    "ubsan-summary": "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior tlv.c:21:9 in parse",
}
# How a run ends without a report: (what the harness does, the status a shell gives it).
ENDINGS = {
    "exit 0": ("exit 0", 0),
    "exit 2 (its exit_code)": ("exit 2", 2),
    "exit 1": ("exit 1", 1),
    "exit 124": ("exit 124", 124),
    "SIGKILL": ("kill -KILL $$", 137),
    "SIGSEGV": ("kill -SEGV $$", 139),
    "SIGABRT": ("kill -ABRT $$", 134),
}


def secb_fixed(status: int, output: str, mode: str, exit_code: int) -> bool:
    """SEC-bench's interpret_patch_results for a run that reached its PoC step."""
    start = re.search(r"==\d+==(?:ERROR|WARNING): (\w+)Sanitizer:", output)
    end = re.search(r"==\d+==ABORTING", output)
    report = bool(start and end and end.end() > start.start())
    if start and not end:
        report = bool(re.search(r"\s+#\d+ 0x[0-9a-f]+", output[start.start() :]))
    report = report or any(pattern in output for pattern in SECB_PATTERNS)
    timeout = status in (124, 137)
    if status == 0 and not timeout and not report:
        return True
    if timeout or report:
        return False
    return mode == "generous" or (mode == "medium" and status == exit_code)


def imported(tmp: Path, kind: str, source: Path, *flags: str) -> dict[str, Any]:
    out = tmp / f"out-{kind}-{'-'.join(flags)}"
    with pytest.raises(SystemExit) as ended:
        main(["import", kind, str(source), "--out", str(out), *flags])
    assert ended.value.code == 0
    (task,) = out.iterdir()
    return tomllib.loads((task / "task.toml").read_text())


def judged(
    tmp: Path,
    toml: dict[str, Any],
    run: str,
    mechanism: str = "none",
    program: str | None = None,
) -> tuple[bool, str]:
    """Whether `run`, a case of the imported PoC table, no longer triggers, and its log;
    `program`, C source built first as prog (UBSan's)."""
    pocs = toml["checks"]["pocs"]
    table = {"cases": [run], "timeout": pocs["timeout"], "triggered_if": pocs["triggered_if"]}
    checks: dict[str, Any] = {"pocs": table}
    if program is not None:
        checks = {"build": "gcc -fsanitize=undefined -g -o prog prog.c", **checks}
    files = {"prog.c": program} if program is not None else None
    handle = make_task(tmp, checks, files=files, env=toml.get("env"), isolation=mechanism)
    if program is not None:
        assert handle.run_check("build").status is Status.PASSED
    outcome, logs = handle.run_check_with_logs("pocs")
    return outcome.status is Status.PASSED, logs[-1].decode(errors="replace")


@pytest.mark.parametrize("mode", ["strict", "medium", "generous"])
def test_secb_each_mode_judges_as_its_evaluator(tmp_path: Path, mode: str) -> None:
    """Each of the six patterns triggers whatever the status (0, the instance's exit_code 2,
    1); without one, the status decides as the mode says, 124 and 137 are time-outs, and so is
    a run ssebench stops (SEC-bench's `timeout 10`, exit 124)."""
    instance, _ = benchsamples.secb_instance(tmp_path)
    toml = imported(tmp_path, "secb", instance, "--mode", mode)
    toml["checks"]["pocs"]["timeout"] = 3  # the hung run below is stopped sooner than in 10 s
    verdicts, expected = {}, {}
    for name, line in SIX.items():
        for status in (0, 2, 1):
            run = f"echo 'harness: decoding'; echo '{line}' >&2; exit {status}"
            verdicts[name, status] = judged(tmp_path / f"{name}-{status}", toml, run)[0]
            expected[name, status] = secb_fixed(status, line, mode, 2)
    for name, (end, status) in ENDINGS.items():
        verdicts[name, status] = judged(tmp_path / name, toml, f"echo 'harness: ok'; {end}")[0]
        expected[name, status] = secb_fixed(status, "harness: ok", mode, 2)
    verdicts["hangs", 124] = judged(tmp_path / "hangs", toml, "exec sleep 30")[0]
    expected["hangs", 124] = secb_fixed(124, "", mode, 2)
    assert verdicts == expected
    fixed = {key for key, passed in verdicts.items() if passed}
    assert fixed == {
        "strict": {("exit 0", 0)},
        "medium": {("exit 0", 0), ("exit 2 (its exit_code)", 2)},
        "generous": {
            ("exit 0", 0), ("exit 2 (its exit_code)", 2), ("exit 1", 1), ("SIGSEGV", 139),
            ("SIGABRT", 134),
        },
    }[mode]  # fmt: skip


ARVO_WORDS = {
    "asan": "==9==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x7ffc",
    "msan": "==9==WARNING: MemorySanitizer: use-of-uninitialized-value",
    "ubsan": "tlv.c:21:9: runtime error: index 40 out of bounds for type 'char [16]'",
}


@pytest.mark.parametrize("sanitizer", ["asan", "msan", "ubsan"])
def test_arvo_judges_by_the_records_sanitizer_and_a_non_zero_exit(
    tmp_path: Path, sanitizer: str
) -> None:
    """Its sanitizer's report triggers even with exit 0; another's words, which its build
    cannot print, do not (a program's own `runtime error:` text); any status but 0, a fatal
    signal and a time-out trigger (CyberGym: a non-zero exit is a crash)."""
    checkout = arvometa.write_checkout(
        tmp_path / "ARVO-Meta", [arvometa.record(42, sanitizer=sanitizer)], {}
    )
    toml = imported(tmp_path, "arvo", checkout)
    toml["checks"]["pocs"]["timeout"] = 3  # sooner than 10 s, and ample for the rest
    runs = {
        f"{name} report, exit 0": f"echo '{line}' >&2; exit 0" for name, line in ARVO_WORDS.items()
    }
    runs |= {"exit 0": "exit 0", "exit 1": "exit 1", "SIGSEGV": "kill -SEGV $$"}
    runs["hangs"] = "exec sleep 30"
    verdicts = {name: judged(tmp_path / name, toml, run)[0] for name, run in runs.items()}
    others = {f"{name} report, exit 0" for name in ARVO_WORDS if name != sanitizer}
    assert {name for name, passed in verdicts.items() if passed} == {"exit 0", *others}


# Real gcc programs: UBSan's runtime error in a harness that then exits with its own status.
UBSAN = """\
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
BEFORE
int main(int argc, char **argv) {
    int total = INT_MAX;
    HIDE
    total += argc;  /* signed integer overflow */
    printf("%d\\n", total);
    return 2;
}
"""
# A patch's way to hide the report: fd 2 to /dev/null, and its own default options.
DEFAULTS = 'const char *__ubsan_default_options(void) { return "halt_on_error=1:exitcode=0"; }'
DEVNULL = 'stderr = fdopen(dup(2), "w"); dup2(open("/dev/null", O_WRONLY), 2);'
HIDDEN = UBSAN.replace("BEFORE", DEFAULTS).replace("HIDE", DEVNULL)
PLAIN = UBSAN.replace("BEFORE", "").replace("HIDE", "")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with UBSan")


@needs_gcc
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_secb_medium_a_ubsan_runtime_error_with_the_instances_exit_code_triggers(
    tmp_path: Path, mechanism: str
) -> None:
    """A UBSan runtime error prints no `==PID==ERROR:` line, and this harness exits with the
    instance's exit_code (2): a rule of that line alone read it as fixed. (gcc's UBSan prints
    no SUMMARY line either: ssebench's `runtime error:` is read as well as SEC-bench's six.)"""
    instance, _ = benchsamples.secb_instance(tmp_path)
    toml = imported(tmp_path, "secb", instance)
    passed, log = judged(tmp_path / "task", toml, "./prog", mechanism, PLAIN)
    assert not passed
    assert "runtime error: signed integer overflow" in log


@needs_gcc
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_arvo_ubsan_a_program_that_hides_its_report_still_triggers(
    tmp_path: Path, mechanism: str
) -> None:
    """fd 2 to /dev/null and `__ubsan_default_options` saying exitcode=0: run with ARVO's
    options as the task's env, ssebench's channel is kept (the report in the log, exit N).
    The control: run as `arvo` runs it, ARVO's own export taking the place of the task's
    options, the same program exits 0 with no report, and would pass."""
    checkout = arvometa.write_checkout(
        tmp_path / "ARVO-Meta", [arvometa.record(42, sanitizer="ubsan")], {}
    )
    toml = imported(tmp_path, "arvo", checkout)
    passed, log = judged(tmp_path / "kept", toml, "./prog", mechanism, HIDDEN)
    assert not passed
    assert "runtime error: signed integer overflow" in log
    exported = f"export UBSAN_OPTIONS='{toml['env']['UBSAN_OPTIONS']}'; ./prog"
    passed, log = judged(tmp_path / "as-arvo", toml, exported, mechanism, HIDDEN)
    assert (passed, "runtime error" in log) == (True, False)
