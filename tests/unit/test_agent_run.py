"""What `ssebench run` reads of the agent's dialog file (evaluate/agentrun.py): the last
`complete` entry's tokens and time, from a file the agent controls, so only a regular file it
wrote since it started, only its tail, and one warning line for anything else it wrote."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ssebench.evaluate.agentrun import from_dialog

COMPLETE = {"seq": 9, "ts": "2026-01-02T03:04:05+00:00", "type": "complete", "status": "success",
            "turns": 3, "duration_ms": 61500, "total_tokens": {"in": 1200, "out": 300}}  # fmt: skip
FOUND = {"tokens": {"input": 1200, "output": 300}, "duration_s": 61.5}


def archive(tmp_path: Path, *entries: object, text: str | None = None) -> dict[str, str]:
    folder = tmp_path / "archive"
    folder.mkdir(exist_ok=True)
    lines = text if text is not None else "".join(json.dumps(e) + "\n" for e in entries)
    (folder / "dialog.jsonl").write_text(lines)
    return {"SSE_ARCHIVE": str(folder)}


def test_the_last_complete_entry_gives_tokens_and_time(tmp_path: Path) -> None:
    earlier = {**COMPLETE, "duration_ms": 1, "total_tokens": {"in": 1, "out": 1}}
    env = archive(tmp_path, {"seq": 0, "type": "init", "data": {}}, earlier, COMPLETE)
    assert from_dialog(env, time.time() - 60) == (FOUND, None)


def test_a_long_dialog_is_read_by_its_tail(tmp_path: Path) -> None:
    message = {"seq": 1, "type": "message", "role": "assistant", "content": "x" * 4000}
    env = archive(tmp_path, *[message] * 1000, COMPLETE)  # 4 MB, the entry last
    assert from_dialog(env, time.time() - 60) == (FOUND, None)


def test_no_dialog_or_an_earlier_runs_says_nothing(tmp_path: Path) -> None:
    assert from_dialog({"SSE_ARCHIVE": str(tmp_path / "none")}, 0) == ({}, None)
    env = archive(tmp_path, COMPLETE)
    assert from_dialog(env, time.time() + 60) == ({}, None)  # written before the agent started


def test_a_link_or_a_pipe_is_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    folder.mkdir()
    (tmp_path / "elsewhere.jsonl").write_text(json.dumps(COMPLETE) + "\n")
    (folder / "dialog.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    env = {"SSE_ARCHIVE": str(folder)}
    assert from_dialog(env, 0) == ({}, None)
    (folder / "dialog.jsonl").unlink()
    os.mkfifo(folder / "dialog.jsonl")  # no writer: a read would wait for ever
    assert from_dialog(env, 0) == ({}, None)


def test_a_dialog_that_says_neither_is_one_warning(tmp_path: Path) -> None:
    bad = {**COMPLETE, "duration_ms": -5, "total_tokens": {"in": True, "out": 3}}
    for env in (archive(tmp_path, text="not json\n"), archive(tmp_path, bad),
                archive(tmp_path, {"seq": 0, "type": "init"})):  # fmt: skip
        path = Path(env["SSE_ARCHIVE"]) / "dialog.jsonl"
        assert from_dialog(env, 0) == (
            {}, f"{path}: no `complete` entry with total_tokens and duration_ms"
        )  # fmt: skip
    half = {**COMPLETE, "total_tokens": "many"}
    assert from_dialog(archive(tmp_path, half), 0) == ({"duration_s": 61.5}, None)
