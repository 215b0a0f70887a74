"""A run's page in a real browser, for the tests that read it: headless Chromium loads it from the
run's folder (`file://`) and the test reads what it shows, the DOM after loading (its texts,
tables and the bars of its pictures) or a screenshot (where each bar's pixels are)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium (Debian's `chromium`; .ci/run installs it)"
)
FLAGS = [
    *("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"),
    *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
    "--force-device-scale-factor=1",
]
Cell = tuple[str, str, list[tuple[str, str]]]


@dataclass
class Bar:
    """A bar of a picture: its class, where it starts, how wide, its fill, its tooltip."""

    kind: str
    x: int
    width: int
    fill: str
    title: str = ""


@dataclass
class Chart:
    bars: list[Bar] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


class Shown(HTMLParser):
    """What a page shows: its title, headings and paragraphs, each table's rows, each cell as
    (its class, its text, its links as (text, href)), and each picture's bars and texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.texts: dict[str, list[str]] = {"title": [], "h1": [], "h2": [], "p": []}
        self.tables: dict[str, list[list[Cell]]] = {}
        self.charts: dict[str, Chart] = {}
        self.table = ""
        self.cell: list[Any] | None = None
        self.link: list[str] | None = None
        self.heading: str | None = None
        self.chart: Chart | None = None
        self.inside: str | None = None  # an SVG element whose text is read: title, text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        got = dict(attrs)
        if self.chart is not None or tag == "svg":
            self._svg(tag, got)
        elif tag == "table":
            self.table = got.get("class") or ""
            self.tables[self.table] = []
        elif tag == "tr":
            self.tables[self.table].append([])
        elif tag in ("td", "th"):
            self.cell = [got.get("class") or tag, "", []]
        elif tag == "a":
            self.link = ["", got.get("href") or ""]
        elif tag in self.texts:
            self.texts[tag].append("")
            self.heading = tag

    def _svg(self, tag: str, got: dict[str, str | None]) -> None:
        if tag == "svg":
            self.chart = self.charts.setdefault(got.get("class") or "", Chart())
        elif tag == "rect" and self.chart is not None:
            bar = Bar(got.get("class") or "", int(got["x"] or 0), int(got["width"] or 0),
                      got.get("fill") or "")  # fmt: skip
            self.chart.bars.append(bar)
        elif tag == "title" and self.chart is not None and self.chart.bars:
            self.inside = "title"
        elif tag == "text" and self.chart is not None:
            self.chart.texts.append("")
            self.inside = "text"

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.chart = None
        elif tag in ("title", "text") and self.chart is not None:
            self.inside = None
        elif tag == self.heading:
            self.heading = None
        elif tag in ("td", "th") and self.cell is not None:
            self.cell[1] = " ".join(self.cell[1].split())
            self.tables[self.table][-1].append((self.cell[0], self.cell[1], self.cell[2]))
            self.cell = None
        elif tag == "a" and self.link is not None and self.cell is not None:
            self.cell[2].append((self.link[0], self.link[1]))
            self.link = None

    def handle_data(self, data: str) -> None:
        if self.chart is not None:
            if self.inside == "title":
                self.chart.bars[-1].title += data
            elif self.inside == "text":
                self.chart.texts[-1] += data
        elif self.link is not None:
            self.link[0] += data
        elif self.cell is not None:
            self.cell[1] += data
        elif self.heading is not None:
            self.texts[self.heading][-1] += data


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "chromium-profile"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def shown(page: Path, tmp_path: Path) -> Shown:
    """The page as Chromium shows it, loaded from its folder."""
    done = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert done.returncode == 0 and "<body>" in done.stdout, done.stderr
    seen = Shown()
    seen.feed(done.stdout)
    return seen


def screenshot(page: Path, tmp_path: Path, size: tuple[int, int] = (1400, 1600),
               rows: int = 600) -> Pixels:  # fmt: skip
    """What Chromium draws of the page in a window of `size`: its first `rows` rows (the
    pictures are at the top; a PNG is undone row by row, in Python)."""
    shot = tmp_path / "screenshot.png"
    done = _chromium(tmp_path, f"--window-size={size[0]},{size[1]}", f"--screenshot={shot}",
                     page.as_uri())  # fmt: skip
    assert done.returncode == 0 and shot.is_file(), done.stderr
    return Pixels.from_png(shot.read_bytes(), rows)


@dataclass(frozen=True)
class Pixels:
    """A PNG's pixels as RGB (8 bits a channel, not interlaced: what Chromium writes)."""

    width: int
    height: int
    rows: list[bytes]  # each row's pixels, 3 bytes each
    channels: int

    @classmethod
    def from_png(cls, data: bytes, rows: int) -> Pixels:
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        at, idat, header = 8, b"", b""
        while at < len(data):
            (length,) = struct.unpack(">I", data[at : at + 4])
            kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
            header = body if kind == b"IHDR" else header
            idat += body if kind == b"IDAT" else b""
            at += 12 + length
        width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
        assert depth == 8 and interlace == 0 and color in (2, 6), (depth, color, interlace)
        channels = 3 if color == 2 else 4
        height = min(height, rows)
        return cls(width, height, _unfilter(zlib.decompress(idat), width, height, channels),
                   channels)  # fmt: skip

    def runs(self, rgb: str) -> list[tuple[int, int, int]]:
        """Each horizontal run of exactly the color `#rrggbb`: (row, first column, length)."""
        want = bytes.fromhex(rgb.lstrip("#"))
        found = []
        for y, line in enumerate(self.rows):
            x = 0
            while x < self.width:
                if line[x * 3 : x * 3 + 3] == want:
                    start = x
                    while x < self.width and line[x * 3 : x * 3 + 3] == want:
                        x += 1
                    found.append((y, start, x - start))
                x += 1
        return found


def _unfilter(raw: bytes, width: int, height: int, channels: int) -> list[bytes]:
    """PNG's five row filters undone; each row's pixels as RGB."""
    stride, rows, previous = width * channels, [], bytearray(width * channels)
    for y in range(height):
        at = y * (stride + 1)
        kind, line = raw[at], bytearray(raw[at + 1 : at + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                guess = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + guess) & 0xFF
        rows.append(bytes(line) if channels == 3 else bytes(
            b for px in range(width) for b in line[px * 4 : px * 4 + 3]))  # fmt: skip
        previous = line
    return rows
