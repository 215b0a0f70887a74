"""Discovers check plugins through entry points and validates what they declare."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

import pluggy

from ssebench.core import hookspecs
from ssebench.core.check import Check
from ssebench.core.levels import LEVELS

ENTRY_POINT_GROUP = "ssebench.checks"


class PluginError(Exception):
    """A plugin that cannot be used: start-up stops, a benchmark must not run a check short."""


@dataclass(frozen=True)
class Registry:
    """The validated checks in run order, and where each came from."""

    checks: tuple[Check, ...]
    sources: dict[str, str]  # check key -> "entry point (distribution version)"

    def enabled(self, level: int | None) -> list[Check]:
        return [check for check in self.checks if check.runs_at(level)]

    def withheld(self, level: int | None) -> list[Check]:
        return [check for check in self.checks if not check.runs_at(level)]

    def by_key(self, key: str) -> Check | None:
        return next((check for check in self.checks if check.key == key), None)


def _describe(ep: EntryPoint) -> str:
    dist = ep.dist
    where = f" ({dist.name} {dist.version})" if dist is not None else ""
    return f'"{ep.name}"{where}'


def build_registry(*, plugins: Iterable[object] = (), use_entry_points: bool = True) -> Registry:
    """A fresh plugin manager every call: nothing is loaded at import time, tests stay isolated."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    names: dict[str, str] = {}
    if use_entry_points:
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            label = _describe(ep)
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:
                raise PluginError(f"Error loading plugin {label}: {_cause(exc)}") from None
            names[ep.name] = label
    for plugin in plugins:
        name = getattr(plugin, "__name__", None) or repr(plugin)
        if pm.get_plugin(name) is None:
            pm.register(plugin, name=name)
        names.setdefault(name, f'"{name}"')
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"Error loading plugin: {exc}") from None
    checks: list[Check] = []
    sources: dict[str, str] = {}
    for impl in pm.hook.ssebench_checks.get_hookimpls():
        label = names.get(impl.plugin_name, f'"{impl.plugin_name}"')
        try:
            provided = impl.function()
        except Exception as exc:
            raise PluginError(f"Error loading plugin {label}: {_cause(exc)}") from None
        if not isinstance(provided, list | tuple):
            raise PluginError(f"Plugin {label}: ssebench_checks() must return a list of Check")
        for check in provided:
            if not isinstance(check, Check):
                raise PluginError(f"Plugin {label}: returned {check!r}, which is not a Check")
            _validate_fields(check, label)
            for other in checks:
                if other.name == check.name or other.key == check.key:
                    raise PluginError(
                        f"Plugin {label}: check {check.name!r} (key {check.key!r}) clashes with "
                        f"{other.name!r} (key {other.key!r}) from {sources[other.key]}"
                    )
            checks.append(check)
            sources[check.key] = label
    checks.sort(key=lambda c: c.order)
    _validate_relations(checks, sources)
    return Registry(tuple(checks), sources)


def _cause(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _validate_fields(check: Check, label: str) -> None:
    problems = []
    if not check.name or not check.key:
        problems.append("name and key must not be empty")
    if not check.key.replace("_", "").replace("-", "").isalnum():
        problems.append(f"key {check.key!r} must be letters, digits, '-' or '_'")
    if not isinstance(check.order, int) or not isinstance(check.precedence, int):
        problems.append("order and precedence must be integers")
    if check.max_level not in LEVELS:
        problems.append(f"max_level {check.max_level!r} is not a level 0-4")
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
