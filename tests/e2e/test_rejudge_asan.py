"""`grade --rejudge` on real AddressSanitizer programs (the C example), under each confinement
mechanism this machine has: the status a PoC's sanitizer was told to end it with is what the
grade saved, and the rejudge judges by it as the grade did, its log's text aside; a rule that
now reaches a PoC the grade never ran is an error of the rejudge, the verdict left as it was.
(tests/e2e/test_run_record.py rejudges a whole run of stand-in PoCs.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ssebench.core.daemons.door import available
from ssebench.daemon.confine.user import case_user
from ssebench.daemon.sanitizers import EXIT_CODES

from .runs import RunCli
from .test_grade_patch import BUILD_OUTPUTS, EXAMPLES

pytestmark = pytest.mark.timeout(900)
ASAN = b"ERROR: AddressSanitizer: heap-buffer-overflow"


def run(run_cli: RunCli, tasks: Path, preds: Path, out: Path, *extra: str) -> tuple[int, str]:
    done = run_cli("grade", "--tasks", str(tasks), "--predictions", str(preds), "--out",
                   str(out), *extra, timeout=600)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


def result(out: Path, model: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / model / "c-rle" / "result.json").read_text())
    return data


@pytest.mark.parametrize("mechanism", available(case_user()))
def test_a_rejudge_reads_the_status_a_real_sanitizer_was_told(
    run_cli: RunCli, tmp_path: Path, mechanism: str
) -> None:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("c-rle needs a C compiler and make")
    tasks, out, preds = tmp_path / "tasks", tmp_path / "out", tmp_path / "predictions.jsonl"
    shutil.copytree(EXAMPLES / "c-rle", tasks / "c-rle", ignore=BUILD_OUTPUTS)
    preds.write_text("".join(
        json.dumps({"task": "c-rle", "model": model, "patch": (tasks / "c-rle" / name).read_text()})
        + "\n" for model, name in (("gold", "fix.patch"), ("partial", "partial.patch"))
    ))  # fmt: skip
    code, stderr = run(run_cli, tasks, preds, out, "--isolation", mechanism)
    assert code == 0, stderr
    partial = result(out, "partial")
    assert partial["reason"] == "poc-still-triggers"
    (pocs,) = [check for check in partial["checks"] if check["key"] == "pocs"]
    crash = pocs["cases"][1]  # crash-2: partial.patch fixes only crash-1
    assert crash["passed"] is False and crash["sanitizer_exit"] in EXIT_CODES
    assert crash["exit_code"] == crash["sanitizer_exit"]  # the real report ended it so
    log = out / "partial" / "c-rle" / "logs" / "pocs-1.log"
    assert ASAN in log.read_bytes()

    # The report's text gone from the saved log: the status alone still says it triggered.
    log.write_bytes(b"")
    before = {model: result(out, model) for model in ("gold", "partial")}
    code, stderr = run(run_cli, tasks, preds, out, "--rejudge")
    assert code == 0, stderr
    assert stderr.splitlines()[-1].endswith("2 rejudged from their saved logs, 0 changed "
                                            f"({out}/summary.json)")  # fmt: skip
    assert {model: result(out, model) for model in ("gold", "partial")} == before

    # PoCs judged by how they ended, not by their sanitizer: crash-2 now passes, and crash-3,
    # which the grade never ran (it stopped at crash-2), cannot be judged from what it saved.
    toml = tasks / "c-rle" / "task.toml"
    toml.write_text(toml.read_text().replace("[checks.pocs]\n", "[checks.pocs]\n"
                                             "triggered_if = { sanitizer = false }\n"))  # fmt: skip
    code, stderr = run(run_cli, tasks, preds, out, "--rejudge")
    assert code == 1
    assert (f"error: {preds}:2: partial/c-rle: cannot rejudge from its saved logs: PoCs case 2 "
            "never ran in the grade") in stderr  # fmt: skip
    assert stderr.splitlines()[-1].endswith("1 rejudged from their saved logs, 0 changed "
                                            f"({out}/summary.json)")  # fmt: skip
    assert {model: result(out, model) for model in ("gold", "partial")} == before
