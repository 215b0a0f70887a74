"""Is a task sound: the verdict of `ssebench validate` from each case's verdicts over N runs.

As shipped, a task's tree must build and pass its tests while every case of the check that
shows the fix (`shows_fix`: the PoCs) still fails, and a check that tests the fixed behaviour
(`fails_as_shipped`: the intent tests) should fail too, a warning when it passes. With the
fix every case must pass. A case whose verdict differs between runs is flaky, and a flaky
case makes the task unsound whatever the verdicts: a grade could go either way. Checks are
known here only through their fields, never their names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ssebench.core.case import SANITIZER_EXITS
from ssebench.core.check import Check, Outcome
from ssebench.evaluate import verdicts
from ssebench.evaluate.verdicts import dump

Verdicts = tuple[bool | None, ...]  # one per run: passed, failed, or None when it did not run
SHIPPED, FIXED = "as shipped", "with the fix"


@dataclass(frozen=True)
class CaseVerdicts:
    """One case of one check, its verdict in each run on both trees."""

    check: Check
    index: int
    cases: int  # how many the check has, so a lone case is named by its check alone
    shipped: Verdicts
    fixed: Verdicts

    @property
    def label(self) -> str:
        return f"{self.check.name} case {self.index}" if self.cases > 1 else self.check.name


@dataclass(frozen=True)
class Validation:
    runs: int
    cases: tuple[CaseVerdicts, ...]
    fix_error: str | None = None  # why the fix did not apply
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()

    @property
    def sound(self) -> bool:
        return not self.problems and not self.flaky


def steady(verdicts: Verdicts) -> bool | None:
    """The one verdict of the runs that ran the case; None when none did or they differ."""
    ran = {v for v in verdicts if v is not None}
    return ran.pop() if len(ran) == 1 else None


def is_flaky(verdicts: Verdicts) -> bool:
    return len({v for v in verdicts if v is not None}) > 1


def _verdicts(runs: Sequence[Outcome], key: str, index: int) -> Verdicts:
    found: list[bool | None] = []
    for outcome in runs:
        check = next(o for o in outcome.outcomes if o.check.key == key)
        found.append(next((c.passed for c in check.cases if c.index == index), None))
    return tuple(found)


def case_verdicts(shipped: Sequence[Outcome], fixed: Sequence[Outcome]) -> list[CaseVerdicts]:
    """Every case of every check, in run order; `fixed` is empty when the fix did not apply."""
    rows = []
    for first in shipped[0].outcomes:
        key = first.check.key
        count = max(o.total_cases for run in shipped for o in run.outcomes if o.check.key == key)
        for index in range(count):
            rows.append(
                CaseVerdicts(
                    first.check,
                    index,
                    count,
                    _verdicts(shipped, key, index),
                    _verdicts(fixed, key, index),
                )
            )
    return rows


def same_end(shipped: Sequence[Outcome], fixed: Sequence[Outcome], row: CaseVerdicts) -> str | None:
    """How the case ended in every run on both trees, when that was one way (`exit status 1`,
    `signal 11`, `timed out`): a PoC that ends so whatever the tree may never reach the bug
    (upstream judges a PoC by run.sh's exit status, and a PoC that cannot even build exits 1).
    None when the ends differ, or one is a status the case's sanitizers were given (a fresh N
    for each case: alike by chance only)."""
    ends = set()
    for outcome in (*shipped, *fixed):
        check = next(o for o in outcome.outcomes if o.check.key == row.check.key)
        for case in (c for c in check.cases if c.index == row.index):
            ends.add((case.exit_code, case.signal, case.timed_out))
    if len(ends) != 1:
        return None
    ((code, signal, timed_out),) = ends
    if timed_out:
        return "timed out"
    if signal is not None:
        return f"signal {signal}"
    return None if code is None or code in SANITIZER_EXITS else f"exit status {code}"


def failed_with_fix(shipped: Sequence[Outcome], fixed: Sequence[Outcome], row: CaseVerdicts) -> str:
    """The problem of a case that fails with the fix; a PoC that ended as it did as shipped is
    named as the set-up problem it may be."""
    end = same_end(shipped, fixed, row) if row.check.shows_fix else None
    if end is None:
        return f"{row.label}: FAILED {FIXED}; every check must pass with it"
    return (
        f"{row.label}: FAILED {FIXED}, ending as it did {SHIPPED} ({end}, every run): it may "
        "never reach the bug, a set-up problem (it cannot build, or find its files: --logs DIR "
        "keeps its log), unless the fix does not fix it"
    )


def judge_task(
    shipped: Sequence[Outcome],
    fixed: Sequence[Outcome],
    fix_error: str | None = None,
    *,
    found: tuple[Sequence[str], Sequence[str]] = ((), ()),
) -> Validation:
    """The verdict over `shipped` and `fixed`, one Outcome per run on each tree; `found`: the
    problems and warnings found in the task's files before anything ran (a skeleton's)."""
    rows = case_verdicts(shipped, fixed)
    problems = [*found[0]]
    problems += [f"the fix does not apply: {fix_error}"] if fix_error is not None else []
    warnings = [*found[1]] + [
        f"the task has no {o.check.name}: nothing shows the bug"
        for o in shipped[0].outcomes
        if o.check.shows_fix and not o.total_cases
    ]
    flaky = [
        f"{row.label}: flaky {side} (passed {sum(v is True for v in runs)} of "
        f"{sum(v is not None for v in runs)} runs)"
        for row in rows
        for side, runs in ((SHIPPED, row.shipped), (FIXED, row.fixed))
        if is_flaky(runs)
    ]
    for row in rows:
        as_shipped, with_fix = steady(row.shipped), steady(row.fixed)
        if row.check.shows_fix and as_shipped is True:
            problems.append(f"{row.label}: passed {SHIPPED}; it must fail there (show the bug)")
        elif not (row.check.shows_fix or row.check.fails_as_shipped) and as_shipped is False:
            problems.append(f"{row.label}: FAILED {SHIPPED}; it must pass there")
        if with_fix is False:
            problems.append(failed_with_fix(shipped, fixed, row))
    for check in {row.check.key: row.check for row in rows}.values():
        mine = [row for row in rows if row.check.key == check.key]
        if check.fails_as_shipped and all(all(v is True for v in r.shipped) for r in mine):
            warnings.append(f"{check.name}: passed {SHIPPED}; they should fail without the fix")
    return Validation(
        runs=len(shipped),
        cases=tuple(rows),
        fix_error=fix_error,
        problems=tuple(problems),
        warnings=tuple(warnings),
        flaky=tuple(flaky),
    )


def cell(verdicts: Verdicts) -> str:
    ran = [v for v in verdicts if v is not None]
    if not ran:
        return "not run"
    if is_flaky(verdicts):
        return f"flaky ({sum(ran)} of {len(ran)} passed)"
    return "passed" if ran[0] else "FAILED"


def validation_table(validation: Validation) -> str:
    """For people: each case's verdicts on both trees, then what is wrong, then the verdict."""
    header = ("check", SHIPPED, FIXED)
    rows = [header] + [(r.label, cell(r.shipped), cell(r.fixed)) for r in validation.cases]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip() for a, b, c in rows]
    runs = "1 run" if validation.runs == 1 else f"{validation.runs} runs"
    lines.insert(0, f"ssebench validate: {runs} on each tree\n")
    for title, items in (
        ("Problems", validation.problems),
        ("Flaky", validation.flaky),
        ("Warnings", validation.warnings),
    ):
        if items:
            lines += ["", f"{title}:"] + [f"- {item}" for item in items]
    verdict = "sound" if validation.sound else "NOT sound"
    lines += ["", f"The task is {verdict}."]
    return "\n".join(lines)


def validation_json(validation: Validation) -> dict[str, Any]:
    return dump(validation_record(validation))


def validation_record(validation: Validation) -> verdicts.Validation:
    """`validate --json`'s model (what a dataset's validation hands its parent, too)."""
    return verdicts.Validation(
        sound=validation.sound,
        runs=validation.runs,
        fix=verdicts.Fix(applied=validation.fix_error is None, error=validation.fix_error),
        problems=list(validation.problems),
        flaky=list(validation.flaky),
        warnings=list(validation.warnings),
        cases=[
            verdicts.CaseVerdicts(
                check=row.check.key,
                name=row.check.name,
                index=row.index,
                as_shipped=list(row.shipped),
                with_fix=list(row.fixed),
            )
            for row in validation.cases
        ],
    )
