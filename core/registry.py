"""Discovers check plugins through entry points and validates what they declare."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

import pluggy
from pydantic import BaseModel

from ssebench.core import hookspecs
from ssebench.core.check import Check, LevelSplit, split_by_level
from ssebench.core.errors import PluginError
from ssebench.core.levels import LEVELS

ENTRY_POINT_GROUP = "ssebench.checks"
# Level 4 runs nothing (the spec), so the highest level a check can run at is the one below it.
MAX_LEVELS = LEVELS[:-1]
_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TABLE_KEYS = {"run", "cases", "timeout", "files"}  # every check table has these


@dataclass(frozen=True)
class Registry:
    """The validated checks in run order, and where each came from."""

    checks: tuple[Check, ...]
    sources: dict[str, str]  # check key -> "entry point (distribution version)"

    def at_level(self, level: int | None) -> LevelSplit:
        return split_by_level(self.checks, level)

    def by_key(self, key: str) -> Check | None:
        return next((check for check in self.checks if check.key == key), None)


def _labelled(found: Iterable[EntryPoint]) -> list[tuple[EntryPoint, str | None, str]]:
    """Each entry point with its distribution's name and how messages name it: `"ep" (dist
    version)`. A distribution's metadata is read once (each read parses its METADATA file)."""
    read: dict[int, tuple[str, str]] = {}
    labelled: list[tuple[EntryPoint, str | None, str]] = []
    for ep in found:
        dist = ep.dist
        if dist is None:
            labelled.append((ep, None, f'"{ep.name}"'))
            continue
        if id(dist) not in read:
            metadata = dist.metadata
            read[id(dist)] = (metadata["Name"], metadata["Version"])
        name, version = read[id(dist)]
        labelled.append((ep, name, f'"{ep.name}" ({name} {version})'))
    return labelled


def build_registry(*, plugins: Iterable[object] = (), use_entry_points: bool = True) -> Registry:
    """A fresh plugin manager every call: nothing is loaded at import time, tests stay isolated."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    labels: dict[str, str] = {}  # registered name -> how messages and `sources` name it
    if use_entry_points:
        _load_entry_points(pm, labels)
    for plugin in plugins:
        if pm.is_registered(plugin):
            continue  # already loaded through its entry point
        name = base = getattr(plugin, "__name__", None) or type(plugin).__name__
        suffix = 1
        while pm.has_plugin(name):  # another object of that name: both are used
            suffix += 1
            name = f"{base}#{suffix}"
        _register(pm, labels, plugin, name, f'"{name}"')
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        label = labels.get(pm.get_name(exc.plugin) or "", repr(exc.plugin))
        raise PluginError(f"Error loading plugin {label}: {_one_line(str(exc))}") from None
    checks, sources = _collect(pm, labels)
    _validate_relations(checks, sources)
    return Registry(split_by_level(checks, None).enabled, sources)


def _load_entry_points(pm: pluggy.PluginManager, labels: dict[str, str]) -> None:
    # ssebench's own checks first, so a clash is blamed on the plugin that came second.
    labelled = _labelled(entry_points(group=ENTRY_POINT_GROUP))
    for ep, _, label in sorted(labelled, key=lambda found: (found[1] != "ssebench", found[0].name)):
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(f"Error loading plugin {label}: {_cause(exc)}") from None
        _register(pm, labels, plugin, ep.name, label)


def _collect(
    pm: pluggy.PluginManager, labels: dict[str, str]
) -> tuple[list[Check], dict[str, str]]:
    """Every plugin's checks, each validated on its own and against the ones before it."""
    impls = pm.hook.ssebench_checks.get_hookimpls()
    for name, label in labels.items():
        # An unmarked or misspelt hook would leave the benchmark a check short without a word.
        if not any(impl.plugin_name == name for impl in impls):
            raise PluginError(
                f"Plugin {label}: implements no ssebench_checks() hook (is it marked @hookimpl?)"
            )
    checks: list[Check] = []
    sources: dict[str, str] = {}
    for impl in impls:
        label = labels[impl.plugin_name]
        try:
            provided = impl.function()
        except Exception as exc:
            raise PluginError(f"Error loading plugin {label}: {_cause(exc)}") from None
        if not isinstance(provided, list | tuple):
            raise PluginError(
                f"Plugin {label}: ssebench_checks() must return a list of Check, "
                f"not {_short(provided)}"
            )
        for check in provided:
            if not isinstance(check, Check):
                raise PluginError(f"Plugin {label}: returned {_short(check)}, which is not a Check")
            _validate_fields(check, label)
            for other in checks:
                if other.name == check.name or other.key == check.key:
                    raise PluginError(
                        f"Plugin {label}: check {check.name!r} (key {check.key!r}) clashes with "
                        f"{other.name!r} (key {other.key!r}) from {sources[other.key]}"
                    )
            checks.append(check)
            sources[check.key] = label
    return checks, sources


def _register(
    pm: pluggy.PluginManager, labels: dict[str, str], plugin: object, name: str, label: str
) -> None:
    """pluggy's own errors here span lines or name no entry point: say it in one line instead."""
    if pm.has_plugin(name):
        raise PluginError(f"Error loading plugin {label}: the name is taken by {labels[name]}")
    if pm.is_registered(plugin):
        other = labels[pm.get_name(plugin) or ""]
        raise PluginError(f"Error loading plugin {label}: it is the same plugin as {other}")
    try:
        pm.register(plugin, name=name)
    except Exception as exc:
        raise PluginError(f"Error loading plugin {label}: {_one_line(str(exc))}") from None
    labels[name] = label


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _cause(exc: BaseException) -> str:
    message = _one_line(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _short(value: object, limit: int = 60) -> str:
    text = _one_line(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate_fields(check: Check, label: str) -> None:
    problems = []
    if not isinstance(check.name, str) or not check.name:
        problems.append("name must be a non-empty string")
    if not isinstance(check.key, str) or not _KEY.fullmatch(check.key):
        problems.append(f"key {check.key!r} must be letters, digits, '-' or '_'")
    if not _is_int(check.order) or not _is_int(check.precedence):
        problems.append("order and precedence must be integers")
    if not _is_int(check.max_level) or check.max_level not in MAX_LEVELS:
        problems.append(f"max_level {check.max_level!r} is not a level 0-3 (level 4 runs nothing)")
    if not isinstance(check.failure_reason, str):
        problems.append("failure_reason must be a string")
    if check.covered_by is not None and not isinstance(check.covered_by, str):
        problems.append("covered_by must be a check's key")
    if not callable(check.judge) or not callable(check.detail):
        problems.append("judge and detail must be callable")
    if check.options is not None and not (
        isinstance(check.options, type) and issubclass(check.options, BaseModel)
    ):
        problems.append("options must be a pydantic model class")
    elif check.options is not None and (shadowed := _TABLE_KEYS & set(check.options.model_fields)):
        problems.append(f"options must not redefine the task.toml keys {sorted(shadowed)}")
    if problems:
        raise PluginError(f"Plugin {label}: check {check.name!r}: {'; '.join(problems)}")


def _validate_relations(checks: list[Check], sources: dict[str, str]) -> None:
    keys = {check.key: check for check in checks}
    orders: dict[int, Check] = {}
    for check in checks:
        label = sources[check.key]
        if check.order in orders:
            other = orders[check.order]
            raise PluginError(
                f"Plugin {label}: check {check.name!r} has order {check.order}, like "
                f"{other.name!r}: the run order would be ambiguous"
            )
        orders[check.order] = check
        if check.covered_by is None:
            continue
        cover = keys.get(check.covered_by)
        if cover is None:
            raise PluginError(
                f"Plugin {label}: check {check.name!r} is covered_by {check.covered_by!r}, "
                "which no plugin provides"
            )
        if cover.order >= check.order or cover.covered_by is not None:
            raise PluginError(
                f"Plugin {label}: check {check.name!r} is covered_by {cover.name!r}, which must "
                "run before it and not itself be covered"
            )
        if check.gate:
            raise PluginError(
                f"Plugin {label}: check {check.name!r} is a gate and covered_by {cover.name!r}: "
                "a gate must always run"
            )
