"""The errors that cross layers, in one place so no layer imports another's machinery to raise one.

Each maps to one outcome the user sees: a ConfigError or PluginError is one line and exit
status 2; a DaemonError is the spec's internal-failure text (exit status 3 on the command line);
a NoVerdict is its own exit status, its cause already said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ConfigError(Exception):
    """A bad setting, flag or task: reported as one line, exit status 2."""


class PluginError(ConfigError):
    """A plugin that cannot be used: start-up stops, a benchmark must not run a check short."""


class PatchError(Exception):
    """A patch that does not apply: the grade's verdict (unresolved), given with git's reason."""


class DaemonError(Exception):
    """Testing itself failed (the daemon unreachable, a malformed answer): not the patch's fault."""


class NoVerdict(Exception):
    """A grade or a validation that ended without a verdict, its cause said on stderr already:
    the exit status it ends with, and the cause in one line (what a parent ssebench records)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# What pydantic's error types mean for someone writing a task.toml or a variable, in our words
# (pydantic's own read "Input should be a valid boolean").
_PLAIN = {
    "extra_forbidden": "unknown key",
    "missing": "is required",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be at most {le}",
}


def plain_error(error: Mapping[str, Any], *, with_input: bool = True) -> str:
    """One pydantic error (an item of `ValidationError.errors()`) as a short phrase of ours,
    with the value given (`with_input`) when it helps; a validator's own message as written."""
    kind = str(error.get("type", ""))
    if kind not in _PLAIN:  # a validator of ours, or a kind too rare to have our words
        return str(error.get("msg", "")).removeprefix("Value error, ")
    phrase = _PLAIN[kind].format(**error.get("ctx", {}))
    if not with_input or kind in ("extra_forbidden", "missing"):
        return phrase
    return f"{phrase} (got {error.get('input')!r})"
