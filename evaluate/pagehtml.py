"""The few HTML pieces a run's page is made of: escaped text, percent-encoded relative links,
table rows. Every string of a page comes from the user (model names, task ids, errors, an
agent's headlines): it goes through `e`, every path through `href`."""

from __future__ import annotations

import html
from collections.abc import Iterable
from urllib.parse import quote


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


def href(*parts: str) -> str:
    return e("/".join(quote(part, safe="") for part in parts))


def row(cells: Iterable[str], attrs: str = "") -> str:
    return f"<tr{attrs}>{''.join(cells)}</tr>"


def table(name: str, heads: Iterable[str], rows: Iterable[str]) -> str:
    head = row(f"<th>{e(h)}</th>" for h in heads)
    return "\n".join([f'<table class="{name}">', head, *rows, "</table>"])


def percent(rate: float) -> str:
    return f"{rate:.1%}"
