"""The size rule for long logs: over 64 KiB (as JSON writes it) is long, and the shown tail
keeps its last 64 KiB.

Checked against `naive_byte_cut`, written here from DESIGN.md's sentence and nothing else (the
size is what pydantic's JSON writer, the one MCP's SDK sends with, makes of the text), through
the one driver (`view_log`) over logs in memory and in files, whole or cut into cases.
"""

from __future__ import annotations

import random
import tracemalloc
from itertools import accumulate
from pathlib import Path

import pydantic_core
import pytest

from ssebench.core.check import CheckOutcome, Outcome, Status
from ssebench.core.logs import BYTE_LIMIT, LINE_LIMIT, WORD_LIMIT, LogView, fitting_start, view_log
from ssebench.core.logsource import BytesLog, FileLog, LogSource
from ssebench.core.registry import build_registry
from ssebench.core.report import render

KIB = 1024


def json_size(text: str) -> int:
    """The bytes `text` takes inside a JSON string, as MCP sends it."""
    return len(pydantic_core.to_json(text)) - 2


def naive_byte_cut(shown: str) -> str:
    """The last BYTE_LIMIT bytes of `shown` as JSON writes it, starting at the first line
    start among them, else the first word start, else the first character that fits."""
    sizes = [json_size(char) for char in shown]
    suffix = list(accumulate(reversed(sizes)))[::-1]  # suffix[i]: bytes from i to the end
    fits = [i for i in range(len(shown)) if suffix[i] <= BYTE_LIMIT]
    if not fits or fits[0] == 0:
        return shown
    first = fits[0]
    lines = [i for i in fits if shown[i - 1] == "\n"]
    words = [i for i in fits if shown[i - 1].isspace() and not shown[i].isspace()]
    return shown[(lines or words or [first])[0] :]


def naive_view(data: bytes) -> tuple[str, bool]:
    """What the report shows of `data` and whether it is long, by the rules as written."""
    text = data.decode("utf-8", errors="replace").rstrip("\r\n")
    if len(text.split()) <= WORD_LIMIT and json_size(text) <= BYTE_LIMIT:
        return text, False
    line_tail = "\n".join(text.split("\n")[-LINE_LIMIT:])
    starts = [
        i for i, c in enumerate(text) if not c.isspace() and (i == 0 or text[i - 1].isspace())
    ]
    word_tail = text[starts[-WORD_LIMIT] :] if len(starts) >= WORD_LIMIT else text
    return naive_byte_cut(min(line_tail, word_tail, key=len)), True


def both_paths(data: bytes, tmp_path: Path, chunk: int = 64 * KIB) -> LogView:
    """The view of `data` in memory, read `chunk` bytes at a time, after checking that the same
    bytes in two files (cut at `chunk`, maybe inside a character) give the same."""
    whole = view_log([BytesLog(data)], tmp_path / "memory", step=chunk)
    files: list[LogSource] = []
    for i, part in enumerate([data[:chunk], data[chunk:]]):
        (tmp_path / f"case-{i}.log").write_bytes(part)
        files.append(FileLog(tmp_path / f"case-{i}.log", len(part)))
    cut = view_log(files, tmp_path / "files")
    assert (cut.text, cut.truncated) == (whole.text, whole.truncated)
    for view in (whole, cut):
        if view.truncated:
            assert view.saved_path is not None and view.saved_path.read_bytes() == data
        else:
            assert view.saved_path is None
    return whole


def _check(data: bytes, tmp_path: Path, chunk: int = 64 * KIB) -> LogView:
    view = both_paths(data, tmp_path, chunk)
    assert (view.text, view.truncated) == naive_view(data)
    assert json_size(view.text) <= BYTE_LIMIT
    return view


def test_exactly_64_kib_is_shown_whole(tmp_path: Path) -> None:
    data = b"x" * BYTE_LIMIT + b"\n\n"  # the dropped line breaks do not count
    view = _check(data, tmp_path)
    assert view == LogView("x" * BYTE_LIMIT, truncated=False, saved_path=None)


def test_one_byte_over_is_long_and_cut_at_a_character(tmp_path: Path) -> None:
    view = _check(b"x" * (BYTE_LIMIT + 1), tmp_path)
    assert view.truncated and view.text == "x" * BYTE_LIMIT


def test_one_byte_over_cuts_at_the_first_line_start_that_fits(tmp_path: Path) -> None:
    """Indented lines of 5 KB, fewer than 100 of them in the last 64 KiB: the spec's tail
    keeps them all, and the cut starts a line (which comes before its first word)."""
    lines = [b"  l%05d " % i + b"-" * 5_000 for i in range(20)]
    data = b"\n".join(lines)[: BYTE_LIMIT + 1]
    view = _check(data, tmp_path)
    assert view.text.startswith("  l0")  # a whole line, not the cut one's end
    assert data.decode().endswith("\n" + view.text)


def test_one_huge_line_is_cut_at_a_word(tmp_path: Path) -> None:
    data = b" ".join([b"w" * 999] * 200)  # 200 KB on one line, 200 words
    view = _check(data, tmp_path)
    assert view.text.startswith("w") and view.text.split() == ["w" * 999] * (
        len(view.text) // 1000 + 1
    )


def test_no_line_or_word_start_cuts_at_a_character(tmp_path: Path) -> None:
    data = b"head\n" + b"y" * (BYTE_LIMIT + 500)
    view = _check(data, tmp_path)
    assert view.text == "y" * BYTE_LIMIT


@pytest.mark.parametrize("char", ["é", "日", "🙂"])
@pytest.mark.parametrize("shift", range(4))
def test_multibyte_characters_at_the_cut_are_never_split(
    tmp_path: Path, char: str, shift: int
) -> None:
    width = len(char.encode())
    data = b"a" * shift + char.encode() * (BYTE_LIMIT // width + 3)
    view = _check(data, tmp_path)
    assert set(view.text) == {char}
    assert BYTE_LIMIT - width < len(view.text.encode()) <= BYTE_LIMIT


def test_invalid_bytes_count_as_the_replacement_they_show(tmp_path: Path) -> None:
    """\\xff shows as U+FFFD, 3 bytes: 30,000 of them are 90,000 bytes on screen."""
    view = _check(b"\xff" * 30_000, tmp_path)
    assert view.truncated and view.text == "\ufffd" * (BYTE_LIMIT // 3)


def test_a_tail_under_64_kib_is_not_cut(tmp_path: Path) -> None:
    """Long by words, the tail of 100 short lines is far below the limit: shown as the spec says."""
    data = "\n".join(f"line {i}" for i in range(30_000)).encode()
    view = _check(data, tmp_path)
    assert view.text == "\n".join(f"line {i}" for i in range(29_900, 30_000))


def test_a_single_word_of_100_mb_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """Only the head (until the log is long) and the end (for the tail) are read."""
    (tmp_path / "case.log").write_bytes(b"z" * (100 << 20))
    source = FileLog(tmp_path / "case.log", 100 << 20)
    tracemalloc.start()
    try:
        view = view_log([source], tmp_path / "logs")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000, peak
    assert view.text == "z" * BYTE_LIMIT and view.truncated


@pytest.mark.parametrize("seed", range(12))
def test_random_large_logs_match_the_naive_rule(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [b"a" * rng.choice([1, 50, 4000]), b" ", b"\n", "é".encode(), "🙂".encode()]
    alphabet += [b"\xff", b"\t", b"\r\n"]
    weights = [20, rng.choice([0, 1, 10]), rng.choice([0, 1, 5]), 3, 1, 1, 1, 1]
    data = b"".join(rng.choices(alphabet, weights, k=120_000))
    data = data[: rng.choice([BYTE_LIMIT - 3, BYTE_LIMIT + 2, 150_000, 2_000_000])]
    _check(data, tmp_path, chunk=rng.choice([1_000, 65_536, 1 << 20]))


def test_a_whole_report_stays_near_64_kib() -> None:
    """The largest report the built-in checks give: every check listed, the longest failure
    reason in the headline, a full 64 KiB of 4-byte characters, and the longest saved path a
    file system allows. Only the log grows with what a case prints."""
    checks = build_registry().checks
    failed = max(checks, key=lambda check: len(check.failure_reason or ""))
    outcomes = tuple(
        CheckOutcome(check, Status.FAILED if check is failed else Status.PASSED, 1)
        for check in checks
    )
    view = LogView("🙂" * (BYTE_LIMIT // 4), truncated=True, saved_path=Path("/" + "p" * 4095))
    size = json_size(render(Outcome(0, outcomes, ()), view))
    print(f"\nlargest report: {size} bytes ({size - BYTE_LIMIT} besides the log)")
    assert size < BYTE_LIMIT + 8 * KIB


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (b"\x00" * 300_000, "\x00" * (BYTE_LIMIT // 6)),  # long by bytes, then cut for JSON
        (b"\x01" * 20_000, "\x01" * (BYTE_LIMIT // 6)),  # short as UTF-8, long as JSON
        (b"\x02" * (BYTE_LIMIT // 6), "\x02" * (BYTE_LIMIT // 6)),  # fits JSON: whole
        (b'"' * 40_000, '"' * (BYTE_LIMIT // 2)),  # a quote takes two
    ],
)
def test_control_characters_are_counted_as_json_writes_them(
    tmp_path: Path, data: bytes, shown: str
) -> None:
    """A report travels as JSON, where a control character takes six bytes (a quote two): the
    shown text stays within BYTE_LIMIT bytes of JSON, so the report does too, near enough."""
    view = both_paths(data, tmp_path)
    assert view.text == shown
    assert view.truncated == (len(data) > len(shown))
    outcomes = build_registry().at_level(3).enabled
    report = render(Outcome(3, (CheckOutcome(outcomes[0], Status.FAILED, 1),), ()), view)
    assert json_size(report) < BYTE_LIMIT + 1 * KIB


@pytest.mark.parametrize("seed", range(12))
def test_the_first_fitting_character_is_found_as_the_naive_rule_finds_it(seed: int) -> None:
    """fitting_start measures only what it drops: the same index as measuring every suffix,
    with characters of every width (JSON escapes, 2-4 byte UTF-8) anywhere in the text."""
    rng = random.Random(seed)
    alphabet = ["a", " ", "\n", '"', "\\", "\x01", "\t", "é", "€", "😀"]
    weights = [60, 10, 5, 2, 2, 3, 2, 5, 5, 6] if seed % 2 else [1] * len(alphabet)
    size = rng.choice([BYTE_LIMIT // 7, BYTE_LIMIT - 5, BYTE_LIMIT + 1, 2 * BYTE_LIMIT])
    text = "".join(rng.choices(alphabet, weights, k=size))
    sizes = [json_size(char) for char in text]
    suffix = list(accumulate(reversed(sizes)))[::-1]
    expected = next(i for i in range(len(text) + 1) if i == len(text) or suffix[i] <= BYTE_LIMIT)
    head = max(0, len(text) - BYTE_LIMIT - 1)  # the rule looks no further back than this
    assert fitting_start(text) == max(expected, head)


@pytest.mark.parametrize(
    "end",
    [
        b"\x80" * 70_000,  # stray continuation bytes: each its own replacement character
        "\U0001f642".encode() * 20_000,  # 4-byte characters, cut anywhere inside one
        b"\xe2\x82" * 30_000 + b"x",  # truncated sequences
        (b"\xf0\x9f\x99\x82\x80" * 15_000),
    ],
)
@pytest.mark.parametrize("chunk", [1000, 4093, 64 * KIB])
def test_the_smallest_end_of_a_long_log_holds_its_tail(
    tmp_path: Path, end: bytes, chunk: int
) -> None:
    """The tail is read from the end in spans: however a span's start cuts into a character,
    and the cases' seam too, the tail is the naive rule's over the whole log."""
    data = b"head " * 20_000 + end
    view = both_paths(data, tmp_path, chunk)
    assert (view.text, view.truncated) == naive_view(data)
