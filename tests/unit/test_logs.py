"""The long-log rule: whole up to 10,000 words, else the tail shown and the raw bytes saved.

Words here are short (hexadecimal numbers), so that 10,000 of them stay within the 64 KiB that
would make a log long by its size alone (tests/unit/test_log_bytes.py)."""

from __future__ import annotations

import asyncio
import random
import tracemalloc
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest

from ssebench.core.logfiles import view_log_files
from ssebench.core.logs import (
    BYTE_LIMIT,
    MIN_KEEP,
    WORD_LIMIT,
    LogAccumulator,
    LogView,
    tail,
    view_log,
)
from unit.test_log_bytes import naive_view as _reference  # the spec's rules, written naively


async def _stream(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _view(chunks: Iterable[bytes], log_dir: Path) -> LogView:
    return asyncio.run(view_log(_stream(chunks), log_dir))


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def view_log_bytes(data: bytes, log_dir: Path) -> LogView:
    """A log in memory, streamed in the daemon's 64 KiB chunks."""
    return _view(_pieces(data, 64 * 1024), log_dir)


def _peak_while_feeding(acc: LogAccumulator, chunks: Iterable[bytes]) -> int:
    """Bytes of memory the accumulator took at its peak while fed `chunks` (already in memory)."""
    tracemalloc.start()
    try:
        for chunk in chunks:
            acc.feed(chunk)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _files(log_dir: Path) -> list[Path]:
    return sorted(log_dir.glob("*"))


def _assert_saved(view: LogView, log_dir: Path, data: bytes) -> None:
    assert view.saved_path is not None
    assert _files(log_dir) == [view.saved_path]
    assert view.saved_path.parent == log_dir
    assert view.saved_path.suffix == ".txt"
    assert view.saved_path.read_bytes() == data


def test_exactly_word_limit_stays_whole_and_nothing_saved(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    words = [f"{i:x}" for i in range(WORD_LIMIT)]
    data = ("\t".join(words[:5000]) + " \n  " + "\n".join(words[5000:]) + "\n\r\n").encode()
    view = _view(_pieces(data, 4096), log_dir)
    expected = "\t".join(words[:5000]) + " \n  " + "\n".join(words[5000:])
    assert view == LogView(text=expected, truncated=False, saved_path=None)
    assert _files(log_dir) == []


def test_one_word_over_is_truncated_and_saved_byte_identical(tmp_path: Path) -> None:
    log_dir = tmp_path / "a" / "b" / "logs"
    words = [f"w{i}" for i in range(WORD_LIMIT + 1)]
    data = (" ".join(words) + "\n").encode()
    view = _view(_pieces(data, 1000), log_dir)
    assert view.text == " ".join(words[1:])
    assert view.truncated is True
    _assert_saved(view, log_dir, data)


def test_many_short_lines_last_lines_win(tmp_path: Path) -> None:
    lines = [f"line{i}" for i in range(20_000)]
    data = "\n".join(lines).encode()
    view = view_log_bytes(data, tmp_path)
    assert view.text == "\n".join(lines[-100:])
    assert view.truncated is True
    _assert_saved(view, tmp_path, data)


def test_one_huge_line_last_words_win(tmp_path: Path) -> None:
    words = [f"{i:x}" for i in range(30_000)]
    data = ("  ".join(words) + "\n").encode()
    view = view_log_bytes(data, tmp_path)
    assert view.text == "  ".join(words[-10_000:])
    assert view.truncated is True
    _assert_saved(view, tmp_path, data)


def test_trailing_line_breaks_dropped_before_counting_lines(tmp_path: Path) -> None:
    lines = [f"line{i}" for i in range(20_000)]
    data = ("\n".join(lines) + "\n\n\r\n").encode()
    view = view_log_bytes(data, tmp_path)
    assert view.text == "\n".join(lines[-100:])
    _assert_saved(view, tmp_path, data)


def _lines_of_words(n_lines: int, per_line: int) -> list[list[str]]:
    return [[f"{i % 10}{j:x}" for j in range(per_line)] for i in range(n_lines)]


def test_crossover_word_start_wins_when_last_lines_hold_too_many_words(tmp_path: Path) -> None:
    lines = _lines_of_words(150, 101)  # the last 100 lines hold 10,100 words
    data = "\n".join(" ".join(line) for line in lines).encode()
    view = view_log_bytes(data, tmp_path)
    # 99 full lines are 9,999 words, so the tail starts at line -100's last word
    expected = lines[-100][-1] + "\n" + "\n".join(" ".join(line) for line in lines[-99:])
    assert view.text == expected


def test_crossover_line_start_wins_when_last_lines_hold_fewer_words(tmp_path: Path) -> None:
    lines = _lines_of_words(150, 99)  # 14,850 words; the last 100 lines hold 9,900
    data = "\n".join(" ".join(line) for line in lines).encode()
    view = view_log_bytes(data, tmp_path)
    assert view.text == "\n".join(" ".join(line) for line in lines[-100:])


def test_crossover_both_starts_coincide(tmp_path: Path) -> None:
    lines = _lines_of_words(101, 100)  # the last 100 lines are exactly the last 10,000 words
    data = "\n".join(" ".join(line) for line in lines).encode()
    view = view_log_bytes(data, tmp_path)
    assert view.text == "\n".join(" ".join(line) for line in lines[1:])


def test_multibyte_char_split_across_chunks(tmp_path: Path) -> None:
    data = "naïve 日本 🙂 end".encode()
    chunks = [data[:3], data[3:8], data[8:13], data[13:15], data[15:]]
    assert b"".join(chunks) == data
    view = _view(chunks, tmp_path)
    assert view == LogView(text="naïve 日本 🙂 end", truncated=False, saved_path=None)


def test_invalid_utf8_becomes_replacement_char(tmp_path: Path) -> None:
    view = _view([b"abc \xff\xfe def", b" x\xc3"], tmp_path)
    assert view == LogView(text="abc \ufffd\ufffd def x\ufffd", truncated=False, saved_path=None)


def test_word_split_across_one_byte_chunks_counts_once(tmp_path: Path) -> None:
    words = [f"ö{i % 100}" for i in range(WORD_LIMIT)]
    data = " ".join(words).encode()
    one_byte = [data[i : i + 1] for i in range(len(data))]
    assert _view(one_byte, tmp_path / "a") == LogView(
        text=" ".join(words), truncated=False, saved_path=None
    )
    over = data + b" last"
    view = _view([over[i : i + 1] for i in range(len(over))], tmp_path / "b")
    assert view.text == " ".join([*words[1:], "last"])
    assert view.truncated is True
    _assert_saved(view, tmp_path / "b", over)


def test_unwritable_log_dir_still_returns_tail(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    log_dir = blocker / "logs"
    lines = [f"line{i}" for i in range(20_000)]
    view = view_log_bytes("\n".join(lines).encode(), log_dir)
    assert view == LogView(text="\n".join(lines[-100:]), truncated=True, saved_path=None)
    short = view_log_bytes(b"short log\n", log_dir)
    assert short == LogView(text="short log", truncated=False, saved_path=None)
    assert sorted(tmp_path.rglob("*")) == [blocker]


def test_stream_error_removes_partial_file_and_propagates(tmp_path: Path) -> None:
    error = ConnectionError("dropped")

    async def failing() -> AsyncIterator[bytes]:
        yield b"word " * 20_000
        yield b"more"
        raise error

    with pytest.raises(ConnectionError) as caught:
        asyncio.run(view_log(failing(), tmp_path))
    assert caught.value is error
    assert _files(tmp_path) == []


def test_tail_pure_rule() -> None:
    assert tail("a b\nc") == "a b\nc"
    lines = [f"x{i}" for i in range(150)]
    assert tail("\n".join(lines)) == "\n".join(lines[-100:])
    words = [f"y{i}" for i in range(10_050)]
    assert tail(" ".join(words)) == " ".join(words[-10_000:])


def test_long_log_window_stays_bounded(tmp_path: Path) -> None:
    filler = " ".join(["ab"] * 149)
    lines = [f"L{j} {filler}" for j in range(112_000)]  # 150 words a line, ~50 MB
    data = "\n".join(lines).encode()
    acc = LogAccumulator(tmp_path)
    largest = _peak_while_feeding(acc, _pieces(data, 65_537))
    view = acc.finish()
    assert largest < 8_000_000  # the log is 50 MB
    # 66 full lines are 9,900 words; the other 100 are line -67's last 100 "ab"s
    assert view.text == " ".join(["ab"] * 100) + "\n" + "\n".join(lines[-66:])
    _assert_saved(view, tmp_path, data)


@pytest.mark.parametrize("run", ["\n", "\r\n"])
@pytest.mark.parametrize(("keep", "size"), [(4 * BYTE_LIMIT, 65_536), (MIN_KEEP, 2000)])
def test_huge_trailing_break_run_stays_bounded(
    tmp_path: Path, run: str, keep: int, size: int
) -> None:
    """The smallest end is cut at almost every chunk, so the run is trailing at the last cut."""
    lines = [f"line{i}" for i in range(20_000)]
    head = "\n".join(lines).encode()
    blank = (run * (5_000_000 // len(run))).encode()  # 5 MB of breaks
    for suffix, expected in [
        (b"", "\n".join(lines[-100:])),
        (b"x", run * 99 + "x"),
    ]:
        log_dir = tmp_path / f"logs{len(suffix)}"
        acc = LogAccumulator(log_dir, keep=keep)
        largest = _peak_while_feeding(acc, [head, *_pieces(blank, size), suffix])
        view = acc.finish()
        assert largest < 8_000_000  # the log is 5 MB of breaks after 20,000 lines
        assert view.text == expected
        _assert_saved(view, log_dir, head + blank + suffix)


_TOKENS = [
    b"word",
    b"x",
    "na\u00efve".encode(),
    "\u65e5\u672c".encode(),
    "\U0001f642".encode(),
    b"\xff",
    b"\xc3",
    b"a" * 300,
]
_GAPS = [b" ", b"  ", b"\t", b"\n", b"\r\n", b"\n\n\n", "\u3000".encode(), b"\x1c", b"\n" * 250]


@pytest.mark.parametrize("seed", range(8))
def test_random_logs_match_the_naive_rule(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n_words = rng.choice([WORD_LIMIT - 1, WORD_LIMIT, WORD_LIMIT + 1, 12_000, 25_000])
    parts = []
    for _ in range(n_words):
        parts += [rng.choice(_TOKENS), rng.choice(_GAPS) if rng.random() < 0.9 else b" "]
    parts.append(rng.choice([b"", b"\n\n\r\n", b"\n" * 400, b"\r\n" * 300]))
    data = b"".join(parts)
    chunks, i = [], 0
    while i < len(data):
        step = rng.randint(1, 3000)
        chunks.append(data[i : i + step])
        i += step
    acc = LogAccumulator(tmp_path, keep=rng.choice([MIN_KEEP, MIN_KEEP + 4_999, 4 * BYTE_LIMIT]))
    for chunk in chunks:
        acc.feed(chunk)
    view = acc.finish()
    text, truncated = _reference(data)
    assert (view.text, view.truncated) == (text, truncated)
    if truncated:
        _assert_saved(view, tmp_path, data)
    else:
        assert view.saved_path is None
        assert _files(tmp_path) == []
    assert view_log_bytes(data, tmp_path / "again").text == text


def _view_files(parts: list[bytes], tmp_path: Path) -> LogView:
    files = []
    for i, part in enumerate(parts):
        path = tmp_path / f"case-{i}.log"
        path.write_bytes(part)
        files.append(path.open("rb"))
    return view_log_files(files, tmp_path / "logs")


@pytest.mark.parametrize("seed", range(40))
def test_local_files_match_the_naive_rule(tmp_path: Path, seed: int) -> None:
    """Logs on local disk (the daemon in our process): the same view, the same saved bytes."""
    rng = random.Random(seed)
    alphabet = [b"a", b"bc", b" ", b"  ", b"\n", b"\r\n", b"\t", b"\xc3\xa9", b"\xe3\x80\x80"]
    alphabet += [b"\xff", b"\x00", b"\x1b[31m", b"\xe2\x82", b"\x80"]
    weights = [30, 10, 20, 3, rng.choice([1, 8, 30]), 2, 2, 3, 1, 1, 1, 1, 1, 1]
    size = rng.choice([10, 1_000, 30_000, 60_000, 150_000])
    data = b"".join(rng.choices(alphabet, weights, k=size))
    if rng.random() < 0.3:
        data += b"\n" * rng.choice([1, 99, 100, 101, 5_000])
    cuts = sorted(rng.sample(range(len(data) + 1), rng.choice([0, 1, 2])))
    parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    view = _view_files(parts, tmp_path)
    text, truncated = _reference(data)
    assert view.truncated is truncated
    assert view.text == text
    if truncated:
        _assert_saved(view, tmp_path / "logs", data)
    else:
        assert not (tmp_path / "logs").exists() or not _files(tmp_path / "logs")


def test_local_files_huge_word_tail_and_long_lines(tmp_path: Path) -> None:
    # 12,000 words of 300 bytes on one line: the tail span must grow well past its first guess.
    data = b" ".join([b"w" * 300] * 12_000) + b"\n\n"
    view = _view_files([data], tmp_path)
    assert view.text == _reference(data)[0]
    _assert_saved(view, tmp_path / "logs", data)


def test_local_files_unwritable_log_dir_still_returns_tail(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    data = b"word " * (WORD_LIMIT + 5)
    path = tmp_path / "case.log"
    path.write_bytes(data)
    view = view_log_files([path.open("rb")], blocker / "logs")
    assert view == LogView(_reference(data)[0], truncated=True, saved_path=None)


def test_local_files_stopped_leaves_no_file(tmp_path: Path) -> None:
    import threading

    stop = threading.Event()
    stop.set()
    path = tmp_path / "case.log"
    path.write_bytes(b"word " * (WORD_LIMIT + 5))
    file = path.open("rb")
    with pytest.raises(Exception) as caught:
        view_log_files([file], tmp_path / "logs", stop)
    assert type(caught.value).__name__ == "_Stopped"
    assert file.closed
    assert not (tmp_path / "logs").exists() or not _files(tmp_path / "logs")
