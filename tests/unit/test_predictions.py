"""Predictions files (evaluate/predictions.py): fields, SWE-bench's names, one error per bad line,
names that cannot leave the output folder, and shards that split a run exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssebench.core.errors import ConfigError
from ssebench.daemon import scratch
from ssebench.evaluate.predictions import (
    PATCH_LIMIT,
    BadLine,
    Prediction,
    in_shard,
    parse_line,
    parse_shard,
    read_predictions,
)
from ssebench.evaluate.verdicts import dump


def line(**fields: object) -> str:
    return json.dumps(fields)


def test_our_fields_and_swe_benchs() -> None:
    ours = parse_line(0, 1, line(task="t1", patch="diff", model="m"))
    swe = parse_line(3, 7, line(instance_id="t1", model_patch="diff", model_name_or_path="m"))
    assert ours == Prediction(0, 1, "t1", "m", "diff")
    assert swe == Prediction(3, 7, "t1", "m", "diff")
    assert parse_line(0, 1, line(task="t1", patch="")) == Prediction(0, 1, "t1", "default", "")


@pytest.mark.parametrize("patch", [None, ""])
def test_a_null_or_empty_patch_is_an_empty_prediction(patch: str | None) -> None:
    """As SWE-bench counts `None` and `""` alike; no patch key at all is still an error."""
    for fields in ({"task": "t", "patch": patch}, {"instance_id": "t", "model_patch": patch}):
        read = parse_line(0, 1, json.dumps(fields))
        assert read == Prediction(0, 1, "t", "default", "")
        assert isinstance(read, Prediction) and read.empty
    assert not Prediction(0, 1, "t", "m", " ").empty


def test_a_patch_over_the_limit_is_refused_as_it_is_read() -> None:
    assert PATCH_LIMIT == scratch.PATCH_LIMIT  # grade --patch's own limit
    at_limit = parse_line(0, 1, line(task="t", patch="x" * (PATCH_LIMIT - 1) + "é"))
    assert isinstance(at_limit, BadLine)  # é is two bytes: one over
    assert at_limit.error == "the patch is over 64 MiB, too large for a diff"
    assert isinstance(parse_line(0, 1, line(task="t", patch="x" * PATCH_LIMIT)), Prediction)


def test_a_json_list_is_read_as_lines_are(tmp_path: Path) -> None:
    path = tmp_path / "predictions.json"
    path.write_text(
        json.dumps(
            [
                {"instance_id": "t1", "model_patch": "a", "model_name_or_path": "org/m"},
                {"task": "t2", "patch": None},
                7,
                {"task": "t1", "patch": "b", "model": "org/m"},
            ],
            indent=2,
        )
    )
    assert read_predictions(path) == [
        Prediction(0, 2, "t1", "org/m", "a", 1),  # each at the line it starts on
        Prediction(1, 7, "t2", "default", ""),
        BadLine(2, 11, "not a JSON object"),
        Prediction(3, 12, "t1", "org/m", "b", 2),  # a second line for t1: its second trial
    ]
    path.write_text('  [ {"task": "t", "patch": "a"} ,{"task": "u", "patch": "b"}]\n')
    assert [p.line for p in read_predictions(path)] == [1, 1]
    path.write_text("[]")
    assert read_predictions(path) == []


def test_a_line_that_is_a_list_is_one_bad_line_of_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text('[1, 2]\n{"task": "t", "patch": "a"}\n')
    assert read_predictions(path) == [
        BadLine(0, 1, "not a JSON object"),
        Prediction(1, 2, "t", "default", "a"),
    ]


def test_a_list_that_does_not_parse_is_one_line_and_nothing_is_read(tmp_path: Path) -> None:
    path = tmp_path / "predictions.json"
    path.write_text('[\n  {"task": "t", "patch": x}\n]\n')
    with pytest.raises(ConfigError) as caught:
        read_predictions(path)
    assert str(caught.value) == (
        f"{path}: not a JSON list of predictions: Expecting value: line 2 column 26 (char 27)"
    )


def test_a_model_path_becomes_one_folder() -> None:
    prediction = parse_line(0, 1, line(task="t", patch="", model="org/model-7b"))
    assert isinstance(prediction, Prediction)
    assert prediction.folder == Path("org__model-7b/t")
    assert prediction.id == "org/model-7b/t"  # the model's own name, as summary.json lists it


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes)"),
        ("[1, 2]", "not a JSON object"),
        (line(patch="x"), "no task id (`task` or `instance_id`)"),
        (line(task="t"), "no patch (`patch` or `model_patch`)"),
        (line(task="t", patch=3), "the patch must be a string"),
        (line(task="t", patch="", model=7), "the model must be a string"),
        (line(task="../t", patch=""), "task id '../t' cannot name a task folder"),
        (line(task="..", patch=""), "task id '..' cannot name a task folder"),
        (line(task="a/b", patch=""), "task id 'a/b' cannot name a task folder"),
        (line(task="", patch=""), "task id '' cannot name a task folder"),
        (line(task=5, patch=""), "task id 5 cannot name a task folder"),
        (line(task="t", patch="", model=".."), "model '..' cannot name a folder"),
        (line(task="t", patch="", model="a\0b"),
         "model 'a\\x00b' holds a control character (a line break, say): it cannot name a folder"),
        (line(task="x" * 256, patch=""), f"task id {'x' * 256!r} cannot name a task folder"),
        (line(task="a\nb", patch=""), "task id 'a\\nb' cannot name a task folder"),
        (line(task="t", patch="", model="a\rb"),
         "model 'a\\rb' holds a control character (a line break, say): it cannot name a folder"),
        (line(task="t", patch="", model="a\u2028b"),
         "model 'a\\u2028b' holds a control character (a line break, say): it cannot name a "
         "folder"),
        (line(task="t", patch="", model="\x1b[2Kok"),
         "model '\\x1b[2Kok' holds a control character (a line break, say): it cannot name a "
         "folder"),
        (line(task="a", instance_id="b", patch=""),
         "`task` 'a' and `instance_id` 'b' disagree: give one"),
        (line(task="a", patch="x", model_patch="y"),
         "`patch` 'x' and `model_patch` 'y' disagree: give one"),
        (line(task="a", patch="", model="m", model_name_or_path="n"),
         "`model` 'm' and `model_name_or_path` 'n' disagree: give one"),
        (line(task="t", patch="", trial=0), "trial 0 must be a whole number from 1"),
        (line(task="t", patch="", trial=True), "trial True must be a whole number from 1"),
        (line(task="t", patch="", trial="2"), "trial '2' must be a whole number from 1"),
        (line(task="t", patch="", cost=-1), "cost: Input should be greater than or equal to 0"),
        (line(task="t", patch="", cost="cheap"),
         "cost: Input should be a valid number, unable to parse string as a number"),
        (line(task="t", patch="", tokens={"input": 1}), "tokens.output: Field required"),
        (line(task="t", patch="", duration_s=float("inf")),
         "duration_s: Value error, must be a finite number"),
        (line(task="t", patch="", test_patch_calls=[{"started": "x"}]),
         "test_patch_calls.0.seconds: Field required"),
    ],
)  # fmt: skip
def test_one_clear_error_per_bad_line(text: str, error: str) -> None:
    bad = parse_line(4, 9, text)
    assert isinstance(bad, BadLine)
    assert (bad.number, bad.line, bad.error) == (4, 9, error)


def test_a_file_keeps_every_line_and_refuses_a_second_model_in_one_folder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "predictions.jsonl"
    lines = [
        line(task="t1", patch="a", model="org/m"),
        "",
        "oops",
        "   ",
        line(task="t2", patch="b", model="org/m"),
        line(task="t1", patch="c", model="org__m"),  # another model, the same folder
        line(task="t2", patch="d", model="org/m"),  # the same model and task again: a trial
        json.dumps({"task": "t3", "patch": "a\u2028b\x85c\x1cd"}, ensure_ascii=False),
    ]
    path.write_text("\n".join(lines) + "\r\n")
    assert read_predictions(path) == [
        Prediction(0, 1, "t1", "org/m", "a"),
        BadLine(1, 3, "not valid JSON (Expecting value)"),
        Prediction(2, 5, "t2", "org/m", "b", 1),
        BadLine(3, 6, "model 'org__m' would share the folder org__m/t1 with model 'org/m' of "
                "line 1", "t1", "org__m"),
        Prediction(4, 7, "t2", "org/m", "d", 2),
        # JSON lets a string hold these unescaped; only a line feed ends a line
        Prediction(5, 8, "t3", "default", "a\u2028b\x85c\x1cd"),
    ]  # fmt: skip


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read the predictions: No such file"):
        read_predictions(tmp_path / "none.jsonl")


@pytest.mark.parametrize(("text", "shard"), [("0/1", (0, 1)), ("3/4", (3, 4)), ("0/10", (0, 10))])
def test_shards(text: str, shard: tuple[int, int]) -> None:
    assert parse_shard(text) == shard


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("4/4", "--shard 4/4: I must be from 0 to N-1 (0/4 to 3/4)"),
        ("0/0", "--shard 0/0: N must be at least 1"),
        ("1", "--shard 1: expected I/N, shard I of N counted from 0 (0/4 to 3/4, say)"),
        ("-1/3", "--shard -1/3: expected I/N, shard I of N counted from 0 (0/3 to 2/3)"),
        ("a/b", "--shard a/b: expected I/N, shard I of N counted from 0 (0/4 to 3/4, say)"),
        ("１/4", "--shard １/4: expected I/N, shard I of N counted from 0 (0/4 to 3/4)"),
    ],
)
def test_bad_shards(text: str, error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_shard(text)
    assert str(caught.value) == error


def test_shards_split_every_line_exactly_once() -> None:
    items = [BadLine(n, n + 1, "x") for n in range(23)]
    for count in (1, 2, 3, 7, 30):
        shards = [[i.number for i in items if in_shard(i, (k, count))] for k in range(count)]
        assert sorted(n for shard in shards for n in shard) == list(range(23))
    assert [i.number for i in items if in_shard(i, (1, 4))] == [1, 5, 9, 13, 17, 21]


def test_a_models_lines_for_one_task_are_its_trials(tmp_path: Path) -> None:
    """Numbered by `trial`, else the next after those before; a number twice is an error; a
    lone line keeps the plain folder, a lone line that gives `trial` a trial's."""
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join([
        line(task="a", patch="1"),
        line(task="a", patch="2"),
        line(task="a", patch="3", trial=5),
        line(task="a", patch="4"),
        line(task="a", patch="5", trial=2),
        line(task="b", patch="6"),
        line(task="c", patch="7", trial=1),
        line(task="a", patch="8", model="other"),
    ]))  # fmt: skip
    read = read_predictions(path)
    assert [(i.task, i.model, getattr(i, "trial", None)) for i in read] == [
        ("a", "default", 1),
        ("a", "default", 2),
        ("a", "default", 5),
        ("a", "default", 6),
        ("a", "default", None),
        ("b", "default", None),
        ("c", "default", 1),
        ("a", "other", None),
    ]
    assert read[4] == BadLine(4, 5, "trial 2 of the same model and task as line 2", "a", "default")
    trials = [i for i in read if isinstance(i, Prediction) and i.trial]
    assert [(i.folder.as_posix(), i.id) for i in trials[-2:]] == [
        ("default/a/trial-6", "default/a/trial-6"),
        ("default/c/trial-1", "default/c/trial-1"),
    ]
    assert [i.folder.as_posix() for i in read[5:8:2]] == ["default/b", "other/a"]


def test_what_a_line_says_of_the_agents_run() -> None:
    call = {"started": "2026-01-02T03:04:05.000+00:00", "seconds": 2.5, "level": 2,
            "headline": "test_patch result: every check that ran passed.",
            "checks": [{"name": "build", "status": "passed", "detail": None}]}  # fmt: skip
    read = parse_line(
        0,
        1,
        line(
            task="t",
            patch="",
            test_patch_calls=[call],
            cost=0.42,
            tokens={"input": 1200, "output": 300},
            duration_s=61.5,
        ),
    )
    assert isinstance(read, Prediction)
    assert dump(read.agent) == {
        "test_patch_calls": [call],
        "cost": 0.42,
        "tokens": {"input": 1200, "output": 300},
        "duration_s": 61.5,
    }
    bare = parse_line(0, 1, line(task="t", patch=""))
    assert isinstance(bare, Prediction)
    assert dump(bare.agent) == {"test_patch_calls": None, "cost": None, "tokens": None,
                                "duration_s": None}  # fmt: skip
