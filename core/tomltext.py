"""TOML text from Python values: what the testing kit and the importers write task.toml with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def toml_value(value: Any) -> str:
    """`value` (a string, number, boolean, list or table) as TOML, tables inline."""
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # A JSON string is a TOML basic string, but for JSON's surrogate pairs (written raw here)
    # and DEL, which TOML wants escaped.
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_string(text: str) -> str:
    """`text` as a literal string ('...': nothing escaped, as a command reads best) when it can
    be one, else as a basic string."""
    plain = "'" not in text and all(ch == "\t" or (ch >= " " and ch != "\x7f") for ch in text)
    return f"'{text}'" if plain else toml_value(text)


def toml_array(items: list[str], key: str, *, one_a_line: bool = False) -> str:
    """`key = [...]` of strings: on one line when it fits in 100 columns, else on as many
    indented lines as it takes (`one_a_line`: an item on each)."""
    shown = [toml_string(item) + "," for item in items]
    inline = f"{key} = [{' '.join(shown)[:-1]}]"
    if len(inline) <= 100:
        return inline
    lines = [""]
    for item in shown:
        if lines[-1] and (one_a_line or len(lines[-1]) + len(item) > 95):
            lines.append("")
        lines[-1] = f"{lines[-1]} {item}".lstrip()
    return f"{key} = [\n" + "".join(f"    {line}\n" for line in lines) + "]"
