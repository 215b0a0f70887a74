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
        Prediction(0, 2, "t1", "org/m", "a"),  # each at the line it starts on
        Prediction(1, 7, "t2", "default", ""),
        BadLine(2, 11, "not a JSON object"),
        BadLine(3, 12, "the same model and task as line 2", "t1", "org/m"),
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
    ],
)  # fmt: skip
def test_one_clear_error_per_bad_line(text: str, error: str) -> None:
    bad = parse_line(4, 9, text)
    assert isinstance(bad, BadLine)
    assert (bad.number, bad.line, bad.error) == (4, 9, error)


def test_a_file_keeps_every_line_and_refuses_a_second_grade_of_one_folder(
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
        line(task="t2", patch="d", model="org/m"),  # the same model and task again
        json.dumps({"task": "t3", "patch": "a\u2028b\x85c\x1cd"}, ensure_ascii=False),
    ]
    path.write_text("\n".join(lines) + "\r\n")
    assert read_predictions(path) == [
        Prediction(0, 1, "t1", "org/m", "a"),
        BadLine(1, 3, "not valid JSON (Expecting value)"),
        Prediction(2, 5, "t2", "org/m", "b"),
        BadLine(3, 6, "model 'org__m' would share the folder org__m/t1 with model 'org/m' of "
                "line 1", "t1", "org__m"),
        BadLine(4, 7, "the same model and task as line 5", "t2", "org/m"),
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
        ("4/4", "--shard 4/4: I must be from 0 to N-1"),
        ("0/0", "--shard 0/0: I must be from 0 to N-1"),
        ("1", "--shard 1: expected I/N, e.g. 0/4"),
        ("-1/4", "--shard -1/4: expected I/N, e.g. 0/4"),
        ("a/b", "--shard a/b: expected I/N, e.g. 0/4"),
        ("１/4", "--shard １/4: expected I/N, e.g. 0/4"),
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
