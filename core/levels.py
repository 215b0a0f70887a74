"""Difficulty levels: the numbers the spec defines and the names it prints."""

from __future__ import annotations

LEVEL_NAMES: dict[int, str] = {
    0: "FULL_ASSISTANCE",
    1: "NO_INTENT_TEST",
    2: "NO_FUTURE_TEST",
    3: "BUILD_ONLY",
    4: "NO_BUILD",
}
DEFAULT_LEVEL = 2
LEVELS = tuple(LEVEL_NAMES)


class LevelError(ValueError):
    """A difficulty value that is not exactly one of the five levels."""


def parse_level(raw: str | None, *, variable: str = "SSE_DIFFICULTY") -> int:
    """Read a level strictly: only the bare digits 0-4 count, so typos never pick a level."""
    if raw is None:
        return DEFAULT_LEVEL
    if len(raw) == 1 and raw in "01234":
        return int(raw)
    raise LevelError(f"{variable} must be one of 0, 1, 2, 3, 4 (got {raw!r})")


def level_name(level: int) -> str:
    return LEVEL_NAMES[level]
