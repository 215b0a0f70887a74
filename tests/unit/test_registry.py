"""The registry: built-ins and third-party checks found through entry points, and every way a
plugin can be unusable, each a one-line PluginError that names the plugin."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import ssebench.plugins.build
from ssebench.core import Check, hookimpl
from ssebench.core.errors import PluginError
from ssebench.core.registry import Registry, build_registry
from ssebench.plugins.build import BUILD
from ssebench.plugins.functional import FUNCTIONAL
from ssebench.plugins.intent import INTENT
from ssebench.plugins.poc import POCS

FAKE_PLUGINS = Path(__file__).parents[1] / "fixtures" / "plugins"
VERSION = importlib.metadata.version("ssebench")
BUILTIN_SOURCES = {
    "build": f'"build" (ssebench {VERSION})',
    "pocs": f'"pocs" (ssebench {VERSION})',
    "intent": f'"intent" (ssebench {VERSION})',
    "functional": f'"functional" (ssebench {VERSION})',
}
LINT = Check(name="lint", key="lint", order=35, max_level=2, precedence=5)


class Plugin:
    """A plugin object whose hook returns `provided`, registered under `name`."""

    def __init__(self, name: str, provided: Any) -> None:
        self.__name__ = name
        self.provided = provided

    @hookimpl
    def ssebench_checks(self) -> Any:
        return self.provided


def lint(**changes: Any) -> Check:
    return dataclasses.replace(LINT, **changes)


def plugin_error(*plugins: object, use_entry_points: bool = True) -> str:
    with pytest.raises(PluginError) as caught:
        build_registry(plugins=plugins, use_entry_points=use_entry_points)
    return str(caught.value)


@pytest.fixture
def install_dist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[Mapping[str, str]], None]:
    """Install a distribution `ssebench-fake 1.0` declaring `entry_points` in ssebench.checks.

    Its modules come from tests/fixtures/plugins; both folders leave sys.path after the test.
    """

    def install(entry_points: Mapping[str, str]) -> None:
        info = tmp_path / "ssebench_fake-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ssebench-fake\nVersion: 1.0\n")
        lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
        (info / "entry_points.txt").write_text(f"[ssebench.checks]\n{lines}")
        monkeypatch.syspath_prepend(str(FAKE_PLUGINS))
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.invalidate_caches()

    return install


# --- discovery ---------------------------------------------------------------------------------


def test_builtins_come_through_their_entry_points_in_run_order() -> None:
    registry = build_registry()
    assert [check.name for check in registry.checks] == [
        "build",
        "PoCs",
        "intent tests",
        "functional tests",
    ]
    assert registry.checks == (BUILD, POCS, INTENT, FUNCTIONAL)
    assert registry.sources == BUILTIN_SOURCES


def test_without_entry_points_only_the_given_plugins_count() -> None:
    registry = build_registry(plugins=[Plugin("lint", [LINT])], use_entry_points=False)
    assert registry == Registry(checks=(LINT,), sources={"lint": '"lint"'})


def test_no_plugins_at_all_is_an_empty_registry() -> None:
    assert build_registry(use_entry_points=False) == Registry(checks=(), sources={})


def test_given_plugins_join_the_builtins_by_order_not_by_registration() -> None:
    first = lint(name="first", key="first", order=5)
    registry = build_registry(plugins=[Plugin("lint", [LINT]), Plugin("early", [first])])
    assert registry.checks == (first, BUILD, POCS, INTENT, LINT, FUNCTIONAL)
    assert registry.sources == {**BUILTIN_SOURCES, "lint": '"lint"', "first": '"early"'}


def test_a_builtin_module_given_again_is_used_once() -> None:
    registry = build_registry(plugins=[ssebench.plugins.build])
    assert registry.checks == (BUILD, POCS, INTENT, FUNCTIONAL)
    assert registry.sources == BUILTIN_SOURCES


def test_two_plugin_objects_of_one_name_are_both_used() -> None:
    other = lint(name="other", key="other", order=36)
    registry = build_registry(
        plugins=[Plugin("p", [LINT]), Plugin("p", [other])], use_entry_points=False
    )
    assert registry == Registry(checks=(LINT, other), sources={"lint": '"p"', "other": '"p#2"'})


def test_a_plugin_may_return_a_tuple_or_nothing() -> None:
    registry = build_registry(
        plugins=[Plugin("t", (LINT,)), Plugin("none", [])], use_entry_points=False
    )
    assert registry == Registry(checks=(LINT,), sources={"lint": '"t"'})


def test_a_third_party_check_comes_through_its_entry_point(install_dist: Any) -> None:
    install_dist({"lint": "ssebench_fake_lint"})
    registry = build_registry()
    assert [check.name for check in registry.checks] == [
        "build",
        "PoCs",
        "intent tests",
        "lint",
        "functional tests",
    ]
    assert registry.sources == {**BUILTIN_SOURCES, "lint": '"lint" (ssebench-fake 1.0)'}


def test_the_fake_distribution_leaves_with_its_test() -> None:
    # Runs after the test above in file order: its entry point must not leak.
    assert build_registry().sources == BUILTIN_SOURCES


def test_registry_lookups() -> None:
    registry = build_registry()
    assert registry.at_level(None).enabled == (BUILD, POCS, INTENT, FUNCTIONAL)
    assert registry.at_level(0).enabled == (BUILD, POCS, INTENT, FUNCTIONAL)
    assert registry.at_level(1).enabled == (BUILD, POCS, FUNCTIONAL)
    assert registry.at_level(2).enabled == (BUILD, FUNCTIONAL)
    assert registry.at_level(3).enabled == (BUILD,)
    assert registry.at_level(4).enabled == ()
    assert registry.at_level(2).withheld == (POCS, INTENT)
    assert registry.at_level(4).withheld == (BUILD, POCS, INTENT, FUNCTIONAL)
    assert registry.at_level(None).withheld == ()
    assert registry.by_key("pocs") is POCS
    assert registry.by_key("PoCs") is None


# --- plugins that cannot load, through real entry points -----------------------------------------


def test_a_plugin_that_raises_on_import(install_dist: Any) -> None:
    install_dist({"broken": "ssebench_fake_import_error"})
    assert plugin_error() == (
        'Error loading plugin "broken" (ssebench-fake 1.0): '
        "RuntimeError: this plugin cannot load; second line of the cause"
    )


def test_a_plugin_module_that_does_not_exist(install_dist: Any) -> None:
    install_dist({"missing": "ssebench_fake_nowhere"})
    assert plugin_error() == (
        'Error loading plugin "missing" (ssebench-fake 1.0): '
        "ModuleNotFoundError: No module named 'ssebench_fake_nowhere'"
    )


def test_a_hookimpl_with_a_wrong_signature(install_dist: Any) -> None:
    install_dist({"wrong": "ssebench_fake_wrong_signature"})
    assert plugin_error() == (
        'Error loading plugin "wrong" (ssebench-fake 1.0): '
        "Plugin 'wrong' for hook 'ssebench_checks'; "
        "hookimpl definition: ssebench_checks(config: 'object') -> 'list[Check]'; "
        "Argument(s) {'config'} are declared in the hookimpl but can not be found in the hookspec"
    )


def test_a_hook_not_marked_hookimpl(install_dist: Any) -> None:
    install_dist({"unmarked": "ssebench_fake_unmarked"})
    assert plugin_error() == (
        'Plugin "unmarked" (ssebench-fake 1.0): '
        "implements no ssebench_checks() hook (is it marked @hookimpl?)"
    )


def test_a_misspelt_hook(install_dist: Any) -> None:
    install_dist({"misspelt": "ssebench_fake_misspelt"})
    module = FAKE_PLUGINS / "ssebench_fake_misspelt.py"
    assert plugin_error() == (
        'Error loading plugin "misspelt" (ssebench-fake 1.0): '
        f"unknown hook 'ssebench_check' in plugin <module 'ssebench_fake_misspelt' from '{module}'>"
    )


def test_a_third_party_check_named_like_a_builtin(install_dist: Any) -> None:
    install_dist({"second": "ssebench_fake_second_build"})
    assert plugin_error() == (
        "Plugin \"second\" (ssebench-fake 1.0): check 'build' (key 'compile') clashes with "
        f"'build' (key 'build') from \"build\" (ssebench {VERSION})"
    )


def test_an_entry_point_name_declared_by_two_distributions(install_dist: Any) -> None:
    install_dist({"build": "ssebench_fake_lint"})
    # ssebench's own entry points load first, so the newcomer is the one blamed.
    assert plugin_error() == (
        'Error loading plugin "build" (ssebench-fake 1.0): '
        f'the name is taken by "build" (ssebench {VERSION})'
    )


def test_one_module_under_two_entry_points(install_dist: Any) -> None:
    install_dist({"again": "ssebench.plugins.build"})
    assert plugin_error() == (
        'Error loading plugin "again" (ssebench-fake 1.0): '
        f'it is the same plugin as "build" (ssebench {VERSION})'
    )


# --- what a hook returns -----------------------------------------------------------------------


def test_a_hook_that_raises() -> None:
    class Raising:
        @hookimpl
        def ssebench_checks(self) -> list[Check]:
            raise KeyError("lint")

    assert plugin_error(Raising()) == "Error loading plugin \"Raising\": KeyError: 'lint'"


def test_a_hook_with_a_wrong_signature_given_directly() -> None:
    class Wrong:
        @hookimpl
        def ssebench_checks(self, level):  # type: ignore[no-untyped-def]
            return []

    assert plugin_error(Wrong(), use_entry_points=False) == (
        "Error loading plugin \"Wrong\": Plugin 'Wrong' for hook 'ssebench_checks'; "
        "hookimpl definition: ssebench_checks(level); "
        "Argument(s) {'level'} are declared in the hookimpl but can not be found in the hookspec"
    )


def test_a_plugin_object_without_the_hook() -> None:
    assert plugin_error(object, use_entry_points=False) == (
        'Plugin "object": implements no ssebench_checks() hook (is it marked @hookimpl?)'
    )


@pytest.mark.parametrize(
    ("provided", "message"),
    [
        (None, 'Plugin "p": ssebench_checks() must return a list of Check, not None'),
        (
            {"lint": 1},
            "Plugin \"p\": ssebench_checks() must return a list of Check, not {'lint': 1}",
        ),
        (
            LINT,
            'Plugin "p": ssebench_checks() must return a list of Check, '
            "not Check(name='lint', key='lint', order=35, max_level=2, pre...",
        ),
        (["lint"], "Plugin \"p\": returned 'lint', which is not a Check"),
        ([LINT, None], 'Plugin "p": returned None, which is not a Check'),
        ([type], "Plugin \"p\": returned <class 'type'>, which is not a Check"),
    ],
    ids=["none", "dict", "bare-check", "string", "list-with-none", "class"],
)
def test_a_hook_that_returns_something_else(provided: Any, message: str) -> None:
    assert plugin_error(Plugin("p", provided), use_entry_points=False) == message


# --- the fields of one check -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"max_level": 5}, "max_level 5 is not a level 0-3 (level 4 runs nothing)"),
        ({"max_level": -1}, "max_level -1 is not a level 0-3 (level 4 runs nothing)"),
        ({"max_level": 4}, "max_level 4 is not a level 0-3 (level 4 runs nothing)"),
        ({"max_level": True}, "max_level True is not a level 0-3 (level 4 runs nothing)"),
        ({"max_level": 2.0}, "max_level 2.0 is not a level 0-3 (level 4 runs nothing)"),
        ({"key": ""}, "key '' must be letters, digits, '-' or '_'"),
        ({"key": "li nt"}, "key 'li nt' must be letters, digits, '-' or '_'"),
        ({"key": "lïnt"}, "key 'lïnt' must be letters, digits, '-' or '_'"),
        ({"order": "35"}, "order and precedence must be integers"),
        ({"precedence": 5.5}, "order and precedence must be integers"),
        ({"covered_by": 30}, "covered_by must be a check's key"),
        ({"judge": "exit 0"}, "judge and detail must be callable"),
        ({"options": dict}, "options must be a pydantic model class"),
        (
            {"key": "a b", "max_level": 9},
            "key 'a b' must be letters, digits, '-' or '_'; "
            "max_level 9 is not a level 0-3 (level 4 runs nothing)",
        ),
    ],
    ids=[
        "max-level-5",
        "max-level-minus-1",
        "max-level-4",
        "max-level-bool",
        "max-level-float",
        "empty-key",
        "key-with-space",
        "key-not-ascii",
        "order-str",
        "precedence-float",
        "covered-by-int",
        "judge-not-callable",
        "options-not-a-model",
        "two-problems",
    ],
)
def test_a_malformed_check(changes: dict[str, Any], problem: str) -> None:
    assert plugin_error(Plugin("p", [lint(**changes)])) == f"Plugin \"p\": check 'lint': {problem}"


def test_an_empty_name() -> None:
    assert plugin_error(Plugin("p", [lint(name="")])) == (
        "Plugin \"p\": check '': name must be a non-empty string"
    )


def test_every_level_a_check_can_run_at_is_accepted() -> None:
    checks = [
        lint(key=f"l{level}", name=f"l{level}", order=50 + level, max_level=level)
        for level in range(4)
    ]
    registry = build_registry(plugins=[Plugin("p", checks)], use_entry_points=False)
    assert [check.max_level for check in registry.checks] == [0, 1, 2, 3]


# --- checks against each other -----------------------------------------------------------------


def test_a_duplicate_name() -> None:
    assert plugin_error(Plugin("p", [lint(name="PoCs")])) == (
        "Plugin \"p\": check 'PoCs' (key 'lint') clashes with 'PoCs' (key 'pocs') "
        f'from "pocs" (ssebench {VERSION})'
    )


def test_a_duplicate_key() -> None:
    assert plugin_error(Plugin("p", [lint(key="intent")])) == (
        "Plugin \"p\": check 'lint' (key 'intent') clashes with 'intent tests' (key 'intent') "
        f'from "intent" (ssebench {VERSION})'
    )


def test_a_duplicate_within_one_plugin() -> None:
    assert plugin_error(Plugin("p", [LINT, LINT]), use_entry_points=False) == (
        "Plugin \"p\": check 'lint' (key 'lint') clashes with 'lint' (key 'lint') from \"p\""
    )


def test_two_checks_with_the_same_order() -> None:
    assert plugin_error(Plugin("p", [lint(order=30)])) == (
        "Plugin \"p\": check 'lint' has order 30, like 'intent tests': "
        "the run order would be ambiguous"
    )


def test_covered_by_an_unknown_key() -> None:
    assert plugin_error(Plugin("p", [lint(covered_by="style")])) == (
        "Plugin \"p\": check 'lint' is covered_by 'style', which no plugin provides"
    )


def test_covered_by_a_later_check() -> None:
    assert plugin_error(Plugin("p", [lint(covered_by="functional")])) == (
        "Plugin \"p\": check 'lint' is covered_by 'functional tests', which must run before it "
        "and not itself be covered"
    )


def test_covered_by_itself() -> None:
    assert plugin_error(Plugin("p", [lint(covered_by="lint")])) == (
        "Plugin \"p\": check 'lint' is covered_by 'lint', which must run before it "
        "and not itself be covered"
    )


def test_covered_by_a_covered_check() -> None:
    assert plugin_error(Plugin("p", [lint(order=45, covered_by="functional")])) == (
        "Plugin \"p\": check 'lint' is covered_by 'functional tests', which must run before it "
        "and not itself be covered"
    )


def test_a_covered_gate() -> None:
    assert plugin_error(Plugin("p", [lint(gate=True, covered_by="intent")])) == (
        "Plugin \"p\": check 'lint' is a gate and covered_by 'intent tests': a gate must always run"
    )


def test_covered_by_an_earlier_check_is_accepted() -> None:
    covered = lint(covered_by="pocs")
    registry = build_registry(plugins=[Plugin("p", [covered])])
    assert registry.by_key("lint") is covered


def test_options_may_not_redefine_the_table_keys() -> None:
    from pydantic import BaseModel

    class Shadowing(BaseModel):
        timeout: int = 5

    assert plugin_error(Plugin("p", [lint(options=Shadowing)]), use_entry_points=False) == (
        "Plugin \"p\": check 'lint': options must not redefine the task.toml keys ['timeout']"
    )
