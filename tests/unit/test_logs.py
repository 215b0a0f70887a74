"""The long-log rule: whole up to 10,000 words, else the tail shown and the raw bytes saved.

One driver (`view_log`) reads every log source: a file here, bytes in memory, a daemon elsewhere
(tests/unit/test_native.py). Words here are short (hexadecimal numbers), so that 10,000 of them
stay within the 64 KiB that would make a log long by its size alone (test_log_bytes.py).
"""

from __future__ import annotations

import asyncio
import random
import threading
import tracemalloc
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path

import pytest

from ssebench.core.errors import DaemonError
from ssebench.core.logs import WORD_LIMIT, LogView, in_worker, tail, view_log
from ssebench.core.logsource import BytesLog, FileLog, LogSource
from ssebench.core.savedlogs import Stopped
from unit.test_log_bytes import naive_view as _reference  # the spec's rules, written naively


def _view(data: bytes, log_dir: Path, step: int = 1 << 20) -> LogView:
    """A log in memory, its head decoded `step` bytes at a time."""
    return view_log([BytesLog(data)], log_dir, step=step)


def _cut(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in pairwise(edges)]


def _files(log_dir: Path) -> list[Path]:
    return sorted(log_dir.glob("*"))


def _assert_saved(view: LogView, log_dir: Path, data: bytes) -> None:
    assert view.saved_path is not None
    assert _files(log_dir) == [view.saved_path]
    assert view.saved_path.parent == log_dir
    assert view.saved_path.suffix == ".txt"
    assert view.saved_path.read_bytes() == data


def _file_logs(parts: Sequence[bytes], folder: Path) -> list[LogSource]:
    folder.mkdir(exist_ok=True)
    sources: list[LogSource] = []
    for i, part in enumerate(parts):
        (folder / f"case-{i}.log").write_bytes(part)
        sources.append(FileLog(folder / f"case-{i}.log", len(part)))
    return sources


def _peak(job: object) -> tuple[int, LogView]:
    """Bytes of memory `job()` took at its peak (what existed before is not counted)."""
    tracemalloc.start()
    try:
        view = job()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1], view
    finally:
        tracemalloc.stop()


def test_exactly_word_limit_stays_whole_and_nothing_saved(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    words = [f"{i:x}" for i in range(WORD_LIMIT)]
    data = ("\t".join(words[:5000]) + " \n  " + "\n".join(words[5000:]) + "\n\r\n").encode()
    view = _view(data, log_dir, step=4096)
    expected = "\t".join(words[:5000]) + " \n  " + "\n".join(words[5000:])
    assert view == LogView(text=expected, truncated=False, saved_path=None)
    assert not log_dir.exists()


def test_one_word_over_is_truncated_and_saved_byte_identical(tmp_path: Path) -> None:
    log_dir = tmp_path / "a" / "b" / "logs"
    words = [f"w{i}" for i in range(WORD_LIMIT + 1)]
    data = (" ".join(words) + "\n").encode()
    view = _view(data, log_dir, step=1000)
    assert view.text == " ".join(words[1:])
    assert view.truncated is True
    _assert_saved(view, log_dir, data)


def test_many_short_lines_last_lines_win(tmp_path: Path) -> None:
    lines = [f"line{i}" for i in range(20_000)]
    data = "\n".join(lines).encode()
    view = _view(data, tmp_path)
    assert view.text == "\n".join(lines[-100:])
    assert view.truncated is True
    _assert_saved(view, tmp_path, data)


def test_one_huge_line_last_words_win(tmp_path: Path) -> None:
    words = [f"{i:x}" for i in range(30_000)]
    data = ("  ".join(words) + "\n").encode()
    view = _view(data, tmp_path)
    assert view.text == "  ".join(words[-10_000:])
    _assert_saved(view, tmp_path, data)


def test_trailing_line_breaks_dropped_before_counting_lines(tmp_path: Path) -> None:
    lines = [f"line{i}" for i in range(20_000)]
    data = ("\n".join(lines) + "\n\n\r\n").encode()
    view = _view(data, tmp_path)
    assert view.text == "\n".join(lines[-100:])
    _assert_saved(view, tmp_path, data)


def _lines_of_words(n_lines: int, per_line: int) -> list[list[str]]:
    return [[f"{i % 10}{j:x}" for j in range(per_line)] for i in range(n_lines)]


def test_crossover_word_start_wins_when_last_lines_hold_too_many_words(tmp_path: Path) -> None:
    lines = _lines_of_words(150, 101)  # the last 100 lines hold 10,100 words
    data = "\n".join(" ".join(line) for line in lines).encode()
    # 99 full lines are 9,999 words, so the tail starts at line -100's last word
    expected = lines[-100][-1] + "\n" + "\n".join(" ".join(line) for line in lines[-99:])
    assert _view(data, tmp_path).text == expected


def test_crossover_line_start_wins_when_last_lines_hold_fewer_words(tmp_path: Path) -> None:
    lines = _lines_of_words(150, 99)  # 14,850 words; the last 100 lines hold 9,900
    data = "\n".join(" ".join(line) for line in lines).encode()
    assert _view(data, tmp_path).text == "\n".join(" ".join(line) for line in lines[-100:])


def test_crossover_both_starts_coincide(tmp_path: Path) -> None:
    lines = _lines_of_words(101, 100)  # the last 100 lines are exactly the last 10,000 words
    data = "\n".join(" ".join(line) for line in lines).encode()
    assert _view(data, tmp_path).text == "\n".join(" ".join(line) for line in lines[1:])


@pytest.mark.parametrize("step", [1, 2, 3, 5])
def test_multibyte_characters_split_between_reads(tmp_path: Path, step: int) -> None:
    data = "naïve 日本 🙂 end".encode()
    view = _view(data, tmp_path, step=step)
    assert view == LogView(text="naïve 日本 🙂 end", truncated=False, saved_path=None)


def test_invalid_utf8_becomes_replacement_char_across_cases(tmp_path: Path) -> None:
    sources: list[LogSource] = [BytesLog(b"abc \xff\xfe def"), BytesLog(b" x\xc3")]
    view = view_log(sources, tmp_path)
    assert view == LogView(text="abc \ufffd\ufffd def x\ufffd", truncated=False, saved_path=None)


def test_word_split_across_one_byte_reads_counts_once(tmp_path: Path) -> None:
    words = [f"ö{i % 100}" for i in range(WORD_LIMIT)]
    data = " ".join(words).encode()
    assert _view(data, tmp_path / "a", step=1) == LogView(
        text=" ".join(words), truncated=False, saved_path=None
    )
    over = data + b" last"
    view = _view(over, tmp_path / "b", step=1)
    assert view.text == " ".join([*words[1:], "last"])
    _assert_saved(view, tmp_path / "b", over)


def test_unwritable_log_dir_still_returns_tail(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    log_dir = blocker / "logs"
    lines = [f"line{i}" for i in range(20_000)]
    data = "\n".join(lines).encode()
    view = _view(data, log_dir)
    assert view == LogView(text="\n".join(lines[-100:]), truncated=True, saved_path=None)
    files = view_log(_file_logs([data], tmp_path / "spool"), log_dir)
    assert files == view
    short = _view(b"short log\n", log_dir)
    assert short == LogView(text="short log", truncated=False, saved_path=None)
    assert sorted(p for p in tmp_path.rglob("*") if "spool" not in p.parts) == [blocker]


class _Failing(BytesLog):
    """A log whose whole stream breaks after its first chunk, as a dropped connection does."""

    def __init__(self, data: bytes, error: Exception) -> None:
        super().__init__(data)
        self.error = error
        self.closed = False

    def chunks(self) -> Iterator[bytes]:
        yield self.read(0, 1000)
        raise self.error

    def close(self) -> None:
        self.closed = True


def test_a_source_fault_while_saving_leaves_no_file_and_is_raised(tmp_path: Path) -> None:
    """A daemon elsewhere that fails mid-log fails the call (an internal failure); only a fault
    of this machine's disk (OSError) is a log that could not be saved."""
    error = DaemonError("GET /v1/logs/abc: ReadError: connection reset")
    source = _Failing(b"word " * 20_000, error)
    with pytest.raises(DaemonError) as caught:
        view_log([source], tmp_path)
    assert caught.value is error
    assert source.closed
    assert _files(tmp_path) == []


def test_tail_pure_rule() -> None:
    assert tail("a b\nc") == "a b\nc"
    lines = [f"x{i}" for i in range(150)]
    assert tail("\n".join(lines)) == "\n".join(lines[-100:])
    words = [f"y{i}" for i in range(10_050)]
    assert tail(" ".join(words)) == " ".join(words[-10_000:])


def test_a_long_log_is_read_in_bounded_memory(tmp_path: Path) -> None:
    filler = " ".join(["ab"] * 149)
    lines = [f"L{j} {filler}" for j in range(112_000)]  # 150 words a line, ~50 MB
    data = "\n".join(lines).encode()
    sources = _file_logs([data], tmp_path / "spool")
    largest, view = _peak(lambda: view_log(sources, tmp_path / "logs"))
    assert largest < 8_000_000  # the log is 50 MB
    # 66 full lines are 9,900 words; the other 100 are line -67's last 100 "ab"s
    assert view.text == " ".join(["ab"] * 100) + "\n" + "\n".join(lines[-66:])
    _assert_saved(view, tmp_path / "logs", data)


@pytest.mark.parametrize("run", ["\n", "\r\n"])
@pytest.mark.parametrize("lines", [0, 20_000])
def test_a_huge_run_of_line_breaks_is_read_in_bounded_memory(
    tmp_path: Path, run: str, lines: int
) -> None:
    head = "\n".join(f"line{i}" for i in range(lines))
    blank = run * (5_000_000 // len(run))  # 5 MB of breaks
    for suffix, expected, long in [
        ("", "\n".join(head.split("\n")[-100:]), bool(lines)),  # dropped, with what they end
        ("x", run * 99 + "x", True),  # 100 lines of which 99 are empty
    ]:
        data = (head + blank + suffix).encode()
        log_dir = tmp_path / f"logs{len(suffix)}"
        sources = _file_logs([data], tmp_path / f"spool{len(suffix)}")
        largest, view = _peak(lambda: view_log(sources, log_dir))  # noqa: B023
        assert largest < 8_000_000  # the log is 5 MB of breaks
        assert (view.text, view.truncated) == (expected, long)
        if long:
            _assert_saved(view, log_dir, data)


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
    """In memory, in files, cut into cases anywhere (inside a character too), read in steps."""
    rng = random.Random(seed)
    n_words = rng.choice([WORD_LIMIT - 1, WORD_LIMIT, WORD_LIMIT + 1, 12_000, 25_000])
    parts = []
    for _ in range(n_words):
        parts += [rng.choice(_TOKENS), rng.choice(_GAPS) if rng.random() < 0.9 else b" "]
    parts.append(rng.choice([b"", b"\n\n\r\n", b"\n" * 400, b"\r\n" * 300]))
    data = b"".join(parts)
    text, truncated = _reference(data)
    cases = _cut(data, sorted(rng.sample(range(len(data) + 1), rng.choice([1, 2, 5]))))
    step = rng.randint(1, 3000)
    ways = {
        "memory": [BytesLog(part) for part in cases],
        "files": _file_logs(cases, tmp_path / "spool"),
    }
    for way, sources in ways.items():
        log_dir = tmp_path / way
        view = view_log(sources, log_dir, step=step)
        assert (view.text, view.truncated) == (text, truncated)
        if truncated:
            _assert_saved(view, log_dir, data)
        else:
            assert view.saved_path is None and not log_dir.exists()


@pytest.mark.parametrize("seed", range(40))
def test_local_files_match_the_naive_rule(tmp_path: Path, seed: int) -> None:
    """Logs on local disk (the daemon in our process): escapes, stray bytes, break runs."""
    rng = random.Random(seed)
    alphabet = [b"a", b"bc", b" ", b"  ", b"\n", b"\r\n", b"\t", b"\xc3\xa9", b"\xe3\x80\x80"]
    alphabet += [b"\xff", b"\x00", b"\x1b[31m", b"\xe2\x82", b"\x80"]
    weights = [30, 10, 20, 3, rng.choice([1, 8, 30]), 2, 2, 3, 1, 1, 1, 1, 1, 1]
    size = rng.choice([10, 1_000, 30_000, 60_000, 150_000])
    data = b"".join(rng.choices(alphabet, weights, k=size))
    if rng.random() < 0.3:
        data += b"\n" * rng.choice([1, 99, 100, 101, 5_000])
    cases = _cut(data, sorted(rng.sample(range(len(data) + 1), rng.choice([0, 1, 2]))))
    view = view_log(_file_logs(cases, tmp_path / "spool"), tmp_path / "logs")
    text, truncated = _reference(data)
    assert (view.text, view.truncated) == (text, truncated)
    if truncated:
        _assert_saved(view, tmp_path / "logs", data)
    else:
        assert not (tmp_path / "logs").exists()


def test_local_files_huge_word_tail_and_long_lines(tmp_path: Path) -> None:
    # 12,000 words of 300 bytes on one line: the tail span must grow well past its first guess.
    data = b" ".join([b"w" * 300] * 12_000) + b"\n\n"
    view = view_log(_file_logs([data], tmp_path / "spool"), tmp_path / "logs")
    assert view.text == _reference(data)[0]
    _assert_saved(view, tmp_path / "logs", data)


def test_one_spooled_file_is_saved_as_a_link_several_by_a_copy(tmp_path: Path) -> None:
    """The kernel's ways: the same file linked when it is one, copied when it is several."""
    data = b"word " * (WORD_LIMIT + 5)
    one = view_log(_file_logs([data], tmp_path / "one"), tmp_path / "logs1")
    two = view_log(_file_logs(_cut(data, [7]), tmp_path / "two"), tmp_path / "logs2")
    memory = _view(data, tmp_path / "logs3")
    for view, links in [(one, 2), (two, 1), (memory, 1)]:
        assert view.saved_path is not None and view.saved_path.read_bytes() == data
        assert view.saved_path.stat().st_nlink == links


def test_stopped_leaves_no_file_and_closes_the_sources(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    sources = _file_logs([b"word " * (WORD_LIMIT + 5)], tmp_path / "spool")
    with pytest.raises(Stopped):
        view_log(sources, tmp_path / "logs", stop)
    with pytest.raises(OSError):
        sources[0].read(0, 1)  # closed
    assert not (tmp_path / "logs").exists() or not _files(tmp_path / "logs")


class _Slow(BytesLog):
    """A long log whose stream gives a chunk only when the test lets it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.started = threading.Event()
        self.go_on = threading.Event()
        self.closed = threading.Event()
        self.given = 0

    def chunks(self) -> Iterator[bytes]:
        for chunk in super().chunks():
            self.started.set()
            self.go_on.wait(10)
            self.given += 1
            yield chunk

    def close(self) -> None:
        self.closed.set()


def test_a_cancelled_call_leaves_no_partial_saved_log(tmp_path: Path) -> None:
    """The worker is mid-save when the caller is cancelled: it stops at its next chunk and
    removes the file, and the caller does not wait for it."""
    source = _Slow(b"word " * 500_000)  # 2.5 MB: three chunks

    async def main() -> None:
        job = asyncio.create_task(
            in_worker(lambda stop: view_log([source], tmp_path / "logs", stop))
        )
        await asyncio.to_thread(source.started.wait, 10)
        assert len(_files(tmp_path / "logs")) == 1  # the partial save
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        source.go_on.set()
        await asyncio.to_thread(source.closed.wait, 10)

    asyncio.run(main())
    assert source.closed.is_set()
    assert source.given == 1  # of 3: it stopped, rather than saving the rest for nothing
    assert _files(tmp_path / "logs") == []
