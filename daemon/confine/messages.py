"""The messages between the runner and the case supervisor: one typed record each.

One message is one SOCK_SEQPACKET packet of JSON: an object with `op` naming the record and
its fields beside it (the log file's fd rides along with `Run`). `decode` checks every field
against the record's type, nested records too, so a field the other side sends is never
dropped or misread silently. The supervisor imports this: keep it light (no pydantic).

The runner sends Setup (answered Ready or Error), Prepare (not answered), Run (answered
Started or Failed, then Ended) and Stop (a case's Ended comes sooner).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from ssebench.core.case import CaseRun
from ssebench.daemon.confine.disk import FLOOR
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.confine.policy import CaseUser, Policy


@dataclass(frozen=True)
class Setup:
    """How this supervisor's cases are confined, and who they run as."""

    op: ClassVar[str] = "setup"
    mechanism: Mechanism
    user: CaseUser
    disk_floor: int = FLOOR  # bytes of free disk under which a case is a fault of the machine
    stash: str = ""  # where policies' `moved_away` files wait (stash.py); "": none is moved


@dataclass(frozen=True)
class Ready:
    op: ClassVar[str] = "ready"


@dataclass(frozen=True)
class Error:
    """A message the supervisor could not handle (a failed setup among them)."""

    op: ClassVar[str] = "error"
    message: str


@dataclass(frozen=True)
class Run:
    """A command and its policy: the one door into the trusted core. `case_dir` is the case's
    own folder (made empty by the daemon, with `tmp`, `home` and the bound /tmp folders).
    A file in `reads` the case's user cannot read fails the start: a PoC that cannot open its
    input would otherwise "no longer trigger" and pass."""

    op: ClassVar[str] = "run"
    id: str
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    log_limit: int
    case_dir: str
    policy: Policy
    reads: tuple[str, ...] = ()  # task files the command names: the case's user must read them


@dataclass(frozen=True)
class Wanted:
    """One coming case's sandbox: its check's policy and its own folder."""

    policy: Policy
    case_dir: str


@dataclass(frozen=True)
class Prepare:
    """Have the coming cases' sandboxes ready, in the order they will run (the daemon guesses
    their checks): a `Run` with the same policy and folder as one starts in it at once. It
    replaces the list sent before; not answered."""

    op: ClassVar[str] = "prepare"
    cases: tuple[Wanted, ...]


@dataclass(frozen=True)
class Started:
    op: ClassVar[str] = "started"
    id: str
    pid: int


@dataclass(frozen=True)
class Failed:
    """The case could not be started."""

    op: ClassVar[str] = "failed"
    id: str
    message: str


@dataclass(frozen=True)
class Ended:
    """The case's shell ended and everything it started was killed: `case` is its record
    (core/case.py), made here, which the layers above extend. `fault` says why the case says
    nothing of the patch (a full disk, a log that could not be written): an error of the
    machine, never a verdict."""

    op: ClassVar[str] = "ended"
    id: str
    case: CaseRun
    fault: str = ""


@dataclass(frozen=True)
class Stop:
    """SIGTERM for the case, SIGKILL after `grace` seconds."""

    op: ClassVar[str] = "stop"
    id: str
    grace: float


Message = Setup | Ready | Error | Prepare | Run | Started | Failed | Ended | Stop
RECORDS: dict[str, type[Message]] = {
    record.op: record
    for record in (Setup, Ready, Error, Prepare, Run, Started, Failed, Ended, Stop)
}


class MessageError(ValueError):
    """A packet that is not one of the records."""


def encode(message: Message) -> bytes:
    return json.dumps({"op": message.op, **_plain(message)}).encode()


def _plain(value: Any) -> Any:
    """`value` as JSON holds it (dataclasses.asdict deep-copies every string: 0.1 ms a case)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value  # str, int, float, bool, None, dict[str, str]


@functools.cache
def _fields(record: type) -> tuple[dict[str, Any], frozenset[str]]:
    """A record's field types and names, found once (get_type_hints evaluates every annotation)."""
    return typing.get_type_hints(record), frozenset(f.name for f in dataclasses.fields(record))


def decode(data: bytes) -> Message:
    """The record a packet holds; MessageError when it is not exactly one."""
    try:
        fields = json.loads(data)
    except ValueError as exc:
        raise MessageError(f"not JSON: {exc}") from None
    if not isinstance(fields, dict) or fields.get("op") not in RECORDS:
        raise MessageError(f"no such message: {data[:80]!r}")
    record = RECORDS[fields.pop("op")]
    built: Message = _build(record, fields, record.__name__)
    return built


def _build(hint: Any, value: Any, where: str) -> Any:
    """`value` (parsed JSON) as `hint` says, or MessageError naming `where`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise MessageError(f"{where}: not an object")
        hints, names = _fields(hint)
        if unknown := set(value) - names:
            raise MessageError(f"{where}: unknown fields {sorted(unknown)}")
        try:
            return hint(**{k: _build(hints[k], v, f"{where}.{k}") for k, v in value.items()})
        except TypeError as exc:  # a field missing
            raise MessageError(f"{where}: {exc}") from None
    if origin in (types.UnionType, typing.Union):
        for arg in args:
            try:
                return _build(arg, value, where)
            except MessageError:
                continue
        raise MessageError(f"{where}: not {hint}")
    if origin is tuple and isinstance(value, list):
        return tuple(_build(args[0], item, f"{where}[]") for item in value)
    if hint == dict[str, str] and isinstance(value, dict):  # an environment: one pass
        if all(type(k) is str and type(v) is str for k, v in value.items()):
            return value
        raise MessageError(f"{where}: not {hint}")
    if origin is dict and isinstance(value, dict):
        return {_build(args[0], k, where): _build(args[1], v, where) for k, v in value.items()}
    if hint is type(None) and value is None:
        return None
    if hint is float and type(value) in (int, float):
        return float(value)
    if hint in (str, int, bool) and type(value) is hint:
        return value
    raise MessageError(f"{where}: {value!r} is not {getattr(hint, '__name__', hint)}")
