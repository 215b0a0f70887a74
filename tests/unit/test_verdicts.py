"""The JSON shapes: docs/evaluating.md's tables are the models' own, and a model refuses a
shape it does not declare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from ssebench.evaluate.agentrun import AgentRun
from ssebench.evaluate.datasetverdicts import DatasetSummary, ValidatedWith
from ssebench.evaluate.runrecord import RunRecord
from ssebench.evaluate.runshapes import Summary, SwebenchReport
from ssebench.evaluate.verdicts import (
    GradedWith,
    PatchGrade,
    SavedGrade,
    Validation,
    dump,
    field_table,
    read_saved,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "evaluating.md"


@pytest.mark.parametrize(
    "shape",
    [PatchGrade, Validation, Summary, GradedWith, DatasetSummary, ValidatedWith, SwebenchReport,
     AgentRun, RunRecord],
)  # fmt: skip
def test_the_docs_table_is_the_models(shape: type[BaseModel]) -> None:
    assert field_table(shape) in DOCS.read_text(encoding="utf-8"), (
        f"docs/evaluating.md's table of {shape.__name__} differs from the model: paste "
        f"field_table({shape.__name__}):\n{field_table(shape)}"
    )


def test_a_table_row_per_field_nested_by_path() -> None:
    rows = field_table(Summary).splitlines()
    assert rows[:3] == [
        "| field | meaning |",
        "|---|---|",
        "| `run_id` | `--run-id` (default: the predictions file's stem) |",
    ]
    assert "| `error_list[].line` | its line in the predictions file |" in rows
    assert (
        "| `models.<model>.cost.per_resolved` | `total` / its resolved predictions: what a "
        "resolved task cost; `null` when none is resolved or no line gives a cost |" in rows
    )


def test_an_unknown_key_or_a_wrong_type_is_refused() -> None:
    good = {
        "resolved": True,
        "reason": "resolved",
        "patch": {"applied": True, "error": None, "dropped": []},
        "protected": {"reverted": []},
        "signals": [{"kind": "sanitizer-off", "path": "Makefile", "line": 3, "detail": "x"}],
        "checks": [],
    }
    assert PatchGrade.model_validate(good).resolved is True
    assert dump(PatchGrade.model_validate(good)) == good
    with pytest.raises(ValidationError):
        PatchGrade.model_validate({**good, "extra": 1})
    with pytest.raises(ValidationError):
        PatchGrade.model_validate({**good, "patch": {"applied": [1], "error": None}})
    with pytest.raises(ValidationError):
        PatchGrade.model_validate({**good, "signals": [{"kind": "x", "path": "y"}]})


@pytest.mark.parametrize(
    "text",
    ['{"resolved": "yes"}', '{"resolved": true, "graded_with": "x"}', '{"resolved": 1}'],
)
def test_a_saved_result_the_model_refuses_is_not_graded(tmp_path: Path, text: str) -> None:
    path = tmp_path / "result.json"
    path.write_text(text)
    assert read_saved(path) is None


def test_a_saved_result_keeps_what_the_grade_printed(tmp_path: Path) -> None:
    data = {"resolved": False, "task": "t", "graded_with": {"model": "m", "grader": None}}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    saved = read_saved(path)
    assert saved is not None and dump(saved) == data  # as saved, what it did not say left unsaid
    assert SavedGrade.model_validate(data).graded_with == GradedWith(model="m")
