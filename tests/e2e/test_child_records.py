"""One ssebench asks another by a typed request and reads its answer as a typed record
(core/cli/requests.py, core/cli/child.py, evaluate/ended.py), with real processes: a grade's error
reaches the run from the child's record with the child's stderr thrown away, a validation's
the same way, and a child takes the isolation its parent proved as it is, without a probe."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from ssebench.core.cli.batchrun import grade_request
from ssebench.core.cli.isolation import UNCONFINED_WARNING
from ssebench.core.cli.requests import Basis, GradePatchRequest, ValidateRequest
from ssebench.core.daemons.door import Mechanism
from ssebench.core.settings import load_settings
from ssebench.core.stopping import CHILD
from ssebench.evaluate.batch import ERROR, RESOLVED, grade_all
from ssebench.evaluate.ended import read_ended, why_no_verdict
from ssebench.evaluate.predictions import Prediction
from ssebench.evaluate.verdicts import PatchGrade, Validation
from ssebench.testing import task_toml

from .test_validate import FIX, SOUND

# The child with its stderr thrown away: what the parent learns, it learns from the record.
NO_STDERR = ["sh", "-c", 'exec "$@" 2>/dev/null', "sh", *CHILD]


def tasks_with(root: Path, **extra: str) -> Path:
    """`sound` (fixed by FIX) and `broken` (task.toml with a key that does not exist)."""
    for name, more in (("sound", ""), ("broken", extra.get("broken", "bogus = 1\n"))):
        (root / name / "src").mkdir(parents=True)
        (root / name / "src" / "state.txt").write_text("bug\n")
        (root / name / "task.toml").write_text(more + task_toml(SOUND))
    return root


def unconfined() -> Basis:
    return Basis(settings=load_settings(), isolation="none")


def test_a_grades_error_comes_from_its_record_not_its_stderr(tmp_path: Path) -> None:
    tasks, out = tasks_with(tmp_path / "tasks"), tmp_path / "out"
    items = [Prediction(0, 1, "broken", "m", FIX), Prediction(1, 2, "sound", "m", FIX)]
    asked = grade_request(unconfined(), "local")
    graded = asyncio.run(grade_all(items, tasks, out, command=NO_STDERR, request=asked))
    assert [(g.verdict, g.error) for g in graded] == [
        (ERROR, f"exit status 2: {tasks / 'broken' / 'task.toml'}: bogus: unknown key"),
        (RESOLVED, None),
    ]
    assert (out / "m" / "broken" / "grade.log").read_text() == ""  # nothing there to read


def test_a_validations_error_is_its_record_too(tmp_path: Path) -> None:
    tasks = tasks_with(tmp_path / "tasks")
    (tasks / "broken" / "fix.patch").write_text(FIX)
    asked = ValidateRequest(
        basis=unconfined().model_copy(update={"task": tasks / "broken"}),
        fix=tasks / "broken" / "fix.patch",
    )
    done = subprocess.run([*NO_STDERR, asked.model_dump_json()], capture_output=True, timeout=120)
    ended = read_ended(Validation, done.stdout)
    assert ended is not None and (done.returncode, ended.status) == (2, 2)
    assert why_no_verdict(done.returncode, ended) == (
        f"exit status 2: {tasks / 'broken' / 'task.toml'}: bogus: unknown key"
    )


def test_a_child_takes_the_isolation_its_parent_proved(tmp_path: Path) -> None:
    """Asked for bubblewrap but handed the mechanism the parent chose (here: none), the child
    runs under that one, as it is: it names it, and never probes for bubblewrap."""
    tasks = tasks_with(tmp_path / "tasks")
    (tmp_path / "fix.diff").write_text(FIX)
    proven = Mechanism("none", "cases run unconfined")
    basis = Basis(settings=load_settings(), task=tasks / "sound", isolation="bubblewrap",
                  mechanism=proven)  # fmt: skip
    asked = GradePatchRequest(basis=basis, patch=tmp_path / "fix.diff", quiet=True)
    done = subprocess.run([*CHILD, asked.model_dump_json()], capture_output=True, timeout=120)
    ended = read_ended(PatchGrade, done.stdout)
    assert ended is not None and ended.verdict is not None, done.stderr
    assert (done.returncode, ended.status, ended.verdict.resolved) == (0, 0, True)
    assert done.stderr.decode().splitlines() == [f"ssebench: warning: {UNCONFINED_WARNING}"]
