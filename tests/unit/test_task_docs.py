"""docs/tasks.md and `ssebench new`'s skeleton keep up with the task.toml loader: every key it
takes is documented in the page's tables and shown in the skeleton."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from ssebench.daemon.checktable import CheckTable, LimitsTable
from ssebench.daemon.task import Task
from ssebench.evaluate.skeleton import TASK_TOML
from ssebench.plugins.poc import TriggeredIf

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "tasks.md").read_text(encoding="utf-8")
DOCUMENTED = set(re.findall(r"^\| `([a-z_]+)` \|", PAGE, re.M))


@pytest.mark.parametrize("table", [Task, CheckTable, TriggeredIf])
def test_every_key_the_loader_takes_has_a_row(table: type[BaseModel]) -> None:
    assert set(table.model_fields) - {"checks"} <= DOCUMENTED


def test_every_limit_is_in_the_pages_example_and_the_skeletons() -> None:
    for limit in LimitsTable.model_fields:
        assert f"{limit} = " in PAGE
        assert f"{limit} = " in TASK_TOML


def test_the_skeleton_shows_every_top_level_key() -> None:
    for key in set(Task.model_fields) - {"checks"}:
        assert re.search(rf"^(# )?{key} = ", TASK_TOML, re.M), key
