"""The sanitizers' variables a case gets (daemon/sanitizers.py): the options parsed as their
runtimes parse them, the task's values kept, our `log_path` and N after them, N not told where
the task sets `exitcode` itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.daemon.caseenv import case_environment
from ssebench.daemon.confine.mechanism import Folders
from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.sanitizers import (
    EXIT_CODES,
    VARIABLES,
    exit_code,
    flags,
    report_options,
    sets_exit_code,
)
from ssebench.daemon.task import Task, load_task
from ssebench.plugins.build import BUILD


@pytest.mark.parametrize(
    ("options", "parsed"),
    [
        ("", []),
        ("detect_leaks=0:exitcode=42", [("detect_leaks", "0"), ("exitcode", "42")]),
        (" a=1,b=2\n\tc=3\r", [("a", "1"), ("b", "2"), ("c", "3")]),
        ("::a=1::", [("a", "1")]),
        ("log_path='/x y:z':b=\"q,r\"", [("log_path", "/x y:z"), ("b", "q,r")]),
        ("help", [("help", "")]),
        ("a=", [("a", "")]),
        ("a='open", [("a", "open")]),
        ("include=/etc/asan.supp:exitcode=3", [("include", "/etc/asan.supp"), ("exitcode", "3")]),
    ],
)
def test_options_parse_as_the_runtimes_parse_them(options: str, parsed: list[object]) -> None:
    assert flags(options) == parsed


def test_the_task_s_value_comes_first_and_ours_after_it() -> None:
    options = report_options({"ASAN_OPTIONS": "detect_leaks=0:log_path=/own"}, "/case/reports", 97)
    assert options == {
        "ASAN_OPTIONS": "detect_leaks=0:log_path=/own:log_path=/case/reports/report:exitcode=97",
        **{
            name: "log_path=/case/reports/report:exitcode=97"
            for name in VARIABLES
            if name != "ASAN_OPTIONS"
        },
    }


@pytest.mark.parametrize("where", VARIABLES)
def test_an_exitcode_of_the_task_s_in_any_variable_keeps_n_out_of_all(where: str) -> None:
    """ASan reads LSAN_OPTIONS and UBSAN_OPTIONS after its own: an N in any of them would
    replace the task's own status."""
    env = {where: "halt_on_error=1 exitcode='7'"}
    assert sets_exit_code(env)
    options = report_options(env, "/r", 97)
    assert {name: value.endswith(":exitcode=97") for name, value in options.items()} == {
        name: False for name in VARIABLES
    }
    assert options[where] == "halt_on_error=1 exitcode='7':log_path=/r/report"


def test_without_n_only_the_log_path_is_added() -> None:
    assert report_options({}, "/r", None) == {name: "log_path=/r/report" for name in VARIABLES}


def task_with(tmp_path: Path, lines: str) -> Task:
    (tmp_path / "src").mkdir(parents=True)
    (tmp_path / "task.toml").write_text(f'source = "src"\n{lines}\n[checks.build]\nrun = "true"\n')
    return load_task(tmp_path, [BUILD])


def test_n_is_drawn_for_each_case_from_statuses_programs_rarely_use(tmp_path: Path) -> None:
    task = task_with(tmp_path, 'env = { ASAN_OPTIONS = "detect_leaks=0" }')
    drawn = {exit_code(task, {}) for _ in range(400)}
    assert drawn <= set(EXIT_CODES) and len(drawn) > 20
    assert not set(EXIT_CODES) & {0, 1, 2, 77, 124, 125, 126, 127} and max(EXIT_CODES) < 128


def test_no_n_for_a_task_that_sets_exitcode_itself(tmp_path: Path) -> None:
    task = task_with(tmp_path, 'pass_env = ["UBSAN_OPTIONS"]')
    assert exit_code(task, {"UBSAN_OPTIONS": "exitcode=5"}) is None  # passed from the daemon's
    assert exit_code(task, {"TSAN_OPTIONS": "exitcode=5"}) in EXIT_CODES  # not passed: not seen


def test_a_case_s_environment_points_its_reports_into_its_own_folder(tmp_path: Path) -> None:
    task = task_with(tmp_path / "task", 'env = { ASAN_OPTIONS = "log_path=$SSE_SOURCE_DIR/x" }')
    folders = Folders(str(tmp_path / "case"))
    user = CaseUser(1900000016, 1900000016, "1900000016")
    env = case_environment({}, task, "/seen/src", folders, user, ("/",), 99)
    assert {name: env[name] for name in VARIABLES} == {
        "ASAN_OPTIONS": f"log_path=/seen/src/x:log_path={folders.reports}/report:exitcode=99",
        **{
            name: f"log_path={folders.reports}/report:exitcode=99"
            for name in VARIABLES
            if name != "ASAN_OPTIONS"
        },
    }
