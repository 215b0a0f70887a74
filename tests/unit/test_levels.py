"""Difficulty levels: the spec's table, and SSE_DIFFICULTY read strictly (unset means 2)."""

from __future__ import annotations

import pytest

from ssebench.core.levels import DEFAULT_LEVEL, LEVELS, LevelError, level_name, parse_level

# The spec's "Difficulty Levels" table.
SPEC_LEVELS = {
    0: "FULL_ASSISTANCE",
    1: "NO_INTENT_TEST",
    2: "NO_FUTURE_TEST",
    3: "BUILD_ONLY",
    4: "NO_BUILD",
}
BAD_VALUES = ["5", "-1", "02", " 2", "2 ", "2.0", "two", "", "+2", "2\n", "٢", "0x2", "12"]


def test_the_five_levels_and_their_names() -> None:
    assert LEVELS == (0, 1, 2, 3, 4)
    assert {level: level_name(level) for level in LEVELS} == SPEC_LEVELS


def test_unset_means_level_2() -> None:
    assert DEFAULT_LEVEL == 2
    assert parse_level(None) == 2


@pytest.mark.parametrize("level", range(5))
def test_each_level_is_read_from_its_bare_digit(level: int) -> None:
    assert parse_level(str(level)) == level


@pytest.mark.parametrize("raw", BAD_VALUES)
def test_anything_else_is_refused_in_one_line_naming_the_variable_and_value(raw: str) -> None:
    with pytest.raises(LevelError) as caught:
        parse_level(raw)
    message = str(caught.value)
    assert message == f"SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got {raw!r})"
    assert "\n" not in message


def test_the_message_names_the_variable_it_was_read_from() -> None:
    with pytest.raises(LevelError, match=r"^--difficulty must be one of .*\(got '7'\)$"):
        parse_level("7", variable="--difficulty")


def test_an_unknown_level_has_no_name() -> None:
    with pytest.raises(KeyError):
        level_name(5)
