"""The first added line of a file that a rule finds, without trying the rule on every line.

A 20 MB patch has some 200,000 added lines, and trying every rule on every line cost a grade
0.3 s per MB. So each rule has a hint: words, one of which every line the rule finds holds (a
word the rule cannot do without). The words are looked for in the file's added lines joined
(`str.find`, in C, jumping from one to the next), and the rule runs only on the lines they are
in, in their order: the first line it finds is the one a look at every line would find.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ssebench.core.patchparse import Line

T = TypeVar("T")
EXCERPT = 60  # characters of code a detail quotes


@dataclass(frozen=True)
class Hint:
    """Words every line a rule finds holds one of: `words` as written, `folded` in any case
    (given in lower case)."""

    words: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.words or self.folded)


class AddedLines:
    """The lines a file's diff adds, joined once for the hints."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.text = "\n".join(line.text for line in lines)
        self.starts, at = [], 0
        for line in lines:
            self.starts.append(at)
            at += len(line.text) + 1
        self._lowered: str | None = None

    def first(self, hint: Hint, rule: Callable[[str], T | None]) -> tuple[Line, T] | None:
        """The first line `rule` finds (with what it found), tried only where `hint` is."""
        if not hint:
            return None
        if hint.folded and self._lowered is None:
            self._lowered = self.text.lower()
        texts = [(self.text, word) for word in hint.words]
        texts += [(self._lowered or "", word) for word in hint.folded]
        heap = [(at, i) for i, (text, word) in enumerate(texts) if (at := text.find(word)) >= 0]
        heapq.heapify(heap)
        tried = -1
        while heap:
            at, index = heapq.heappop(heap)
            line = bisect.bisect_right(self.starts, at) - 1
            if line > tried and (found := rule(self.lines[line].text)) is not None:
                return self.lines[line], found
            tried = line
            text, word = texts[index]
            following = self.starts[line + 1] if line + 1 < len(self.starts) else len(text)
            if (at := text.find(word, following)) >= 0:
                heapq.heappush(heap, (at, index))
        return None


def path_term(term: str) -> re.Pattern[str] | None:
    """A check folder's name as part of a path (a folder's name alone is common enough as a
    word); None for the task folder's own path, looked for as it is."""
    if term.startswith("/"):
        return None
    escaped = re.escape(term)
    return re.compile(rf"(?<![\w.-]){escaped}/|/{escaped}(?![\w.-])")


def name_term(base: str) -> re.Pattern[str] | None:
    """A PoC file's name as a word; None for a name as short as `poc`, found by chance."""
    if len(base) < 5 and "." not in base:
        return None
    return re.compile(rf"(?<![\w.-]){re.escape(base)}(?![\w.-])")


def excerpt(text: str) -> str:
    """Code quoted in a one-line detail: spaces collapsed, odd characters escaped, cut short."""
    flat = " ".join(text.split())
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in flat)
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"
