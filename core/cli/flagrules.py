"""Rules on flags that argparse leaves out: a single-valued flag is given once, and a host is
one a URL can hold."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import ipaddress
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
# Flags that keep one value (or none): given twice, argparse keeps the last and loses one.
_SINGLE = (argparse._StoreAction, argparse._StoreConstAction)
# A host name's labels (underscores too: Docker's container names resolve with them).
_HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?")


class OnceParser(argparse.ArgumentParser):
    """Refuses a single-valued flag given twice (`--port 3100 --port 3200`), as a mutually
    exclusive group refuses two of its flags: one rule for every such flag of every command."""

    _seen: set[argparse.Action]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._seen = set()
        return super().parse_known_args(args, namespace)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        # argparse calls this once each time a flag is given, before it stores the value.
        if action.option_strings and isinstance(action, _SINGLE):
            if action in self._seen:
                raise argparse.ArgumentError(action, "given more than once; give it once")
            self._seen.add(action)
        return super()._get_values(action, arg_strings)


def url_host(raw: str) -> str:
    """A host an agent's URL can hold: a host name, an IPv4 or IPv6 address (brackets or not)."""
    bracketed = raw.startswith("[") and raw.endswith("]")
    with contextlib.suppress(ValueError):
        if "%" not in raw:  # a zone (fe80::1%eth0) would need escaping in the URL
            address = ipaddress.ip_address(raw[1:-1] if bracketed else raw)
            if not bracketed or address.version == 6:  # brackets hold IPv6 only
                return raw
    if len(raw) <= 253 and _HOST_NAME.fullmatch(raw):
        return raw
    raise argparse.ArgumentTypeError(
        f"must be a host name or an IP address, as a URL holds it (got {raw!r})"
    )


def checked(check: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type from a setting's own check: a flag and its variable say the same."""

    def convert(raw: str) -> T:
        try:
            return check(raw)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (got {raw!r})") from None

    return convert


class TableNames:
    """A table's names as a flag's choices, its module loaded only when argparse asks (a value
    given to that flag, its help shown): the evaluator's tables (evaluate/) stay out of the
    commands that never use them, `serve` first of all. `name` is the names, or a function
    that gives them as the table is when asked."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def _names(self) -> Collection[str]:
        found: Collection[str] | Callable[[], Collection[str]] = getattr(
            importlib.import_module(self.module), self.name
        )
        return found() if callable(found) else found

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


def _called(found: Any) -> str:
    return str(found())


class TableHelp(str):
    """A flag's help made from a table below the command line (`module.name`, given to `make`:
    by default a function, called), its module loaded only when the help is shown (argparse
    formats a help with `%`): as TableNames, for the tables `serve` must not load."""

    module: str
    name: str
    make: Callable[[Any], str]

    def __new__(cls, module: str, name: str, make: Callable[[Any], str] = _called) -> TableHelp:
        made = super().__new__(cls, f"(see {module}.{name})")
        made.module, made.name, made.make = module, name, make
        return made

    def __mod__(self, params: object) -> str:
        return self.make(getattr(importlib.import_module(self.module), self.name)) % params
