"""Meta-tests of issue 34's shapes (DESIGN.md, "One call, one tree"; STYLE.md, "Fewer layers, one
record, tables"), each shown to refuse a planted example of what it forbids:

- A case's end is one record (core/case.py's `CaseRun`), built once by the supervisor and
  extended: no other class declares how a case ended (but the grade's JSON shape, read off the
  record by its own fields), and no call copies a record field by field.
- The orchestrator hands the daemon its plan: nothing in daemon/ orders the cases itself from
  the level's listing (only the API's list and a call's counts read it).
- The case service is the one owner of its lock, policies, folders, logs and trusted core's
  door: daemon/ makes them in service.py and place.py only.
- The daemon's configuration is one value: no call passes a parameter list on unchanged.
- Only the HTTP adapter drops a case's log path (the wire's own functions do it for it).
- Isolation mechanisms are one table: no code branches on a mechanism's name (that the
  command line's choices and help are the table's: test_isolation_table.py).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from ssebench.core.case import CaseRun
from ssebench.daemon.confine.choice import KINDS
from ssebench.evaluate.verdicts import CaseVerdict

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ("core", "daemon", "evaluate", "plugins", "testing")
RECORD = ("core/case.py", "CaseRun")
JSON_SHAPES = {("evaluate/verdicts.py", "CaseVerdict")}  # read off the record (from_attributes)
OWNED = ("Runner", "Lock", "CaseFolders", "Spool", "WritableFolders", "RunnerCopy.of")
# The service and what it holds; the trusted core's door has a lock of its own (its supervisor).
OWNERS = ("daemon/confine/runner.py", "daemon/place.py", "daemon/service.py")
LISTING_READERS = {("daemon/app.py", "_infos"), ("daemon/service.py", "begin")}
DROPS = ("off_the_daemon", "case_to_wire")
DROPPERS = ("core/protocol.py", "daemon/app.py")  # the wire's functions, and the HTTP adapter
TABLE = "daemon/confine/choice.py"
MECHANISM_NAMES = {kind.name for kind in KINDS}
FORWARDED_AT_MOST = 3
CASE_FIELDS = {field.name for field in dataclasses.fields(CaseRun)}


def sources(*folders: str) -> Iterator[tuple[str, ast.Module]]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield str(path.relative_to(ROOT)), ast.parse(path.read_text())


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Every node, with the name of the function it lies in ("" at module level)."""
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        where, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            )
            yield inner, child
            stack.append((inner, child))


def case_records(name: str, tree: ast.Module) -> list[str]:
    """Classes that declare how a case ended (`exit_code` and `signal` both)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
            if {"exit_code", "signal"} <= fields:
                found.append(f"{name}:{node.name}")
    return found


def field_copies(name: str, tree: ast.Module) -> list[str]:
    """Calls that pass two or more of a case's fields read off another object under their own
    names (`exit_code=end.exit_code, signal=end.signal`): the record copied field by field."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            owners = [
                ast.unparse(word.value.value)
                for word in node.keywords
                if isinstance(word.value, ast.Attribute)
                and word.value.attr == word.arg
                and word.arg in CASE_FIELDS
                and ast.unparse(word.value.value) != "self"  # made from its own state: built
            ]
            if any(owners.count(owner) >= 2 for owner in owners):
                found.append(f"{name}:{node.lineno}")
    return found


def own_orders(name: str, tree: ast.Module) -> list[str]:
    """Where daemon/ reads the level's listing, but to list it (the API) and to count a call's
    cases: anywhere else it would be the daemon's own order of the cases."""
    return [
        f"{name}:{node.lineno} {where}"
        for where, node in _functions(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "listing"
        and (name, where) not in LISTING_READERS
    ]


def parts_made(name: str, tree: ast.Module) -> list[str]:
    """Where the service's owned parts are made."""
    return [
        f"{name}:{node.lineno} {ast.unparse(node.func)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and any(ast.unparse(node.func).endswith(part) for part in OWNED)
    ]


def forwarded(name: str, tree: ast.Module) -> list[str]:
    """Calls that pass more than FORWARDED_AT_MOST of their function's own parameters on by
    name as they came (`f(spool=spool, mechanism=mechanism, ...)`): a layer that only hands a
    parameter list on, which one value should carry."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        every = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        params = {arg.arg for arg in every} - {"self", "cls"}
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            passed = [
                word.arg
                for word in call.keywords
                if isinstance(word.value, ast.Name) and word.value.id == word.arg
            ]
            if len(params.intersection(passed)) > FORWARDED_AT_MOST:
                found.append(f"{name}:{call.lineno}")
    return found


def drops(name: str, tree: ast.Module) -> list[str]:
    """Where a case's daemon-side fields are dropped."""
    return [
        f"{name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).rpartition(".")[2] in DROPS
    ]


def name_branches(name: str, tree: ast.Module) -> list[str]:
    """Comparisons of something with a mechanism's name (a literal, or a module's NAME)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [
                side
                for side in sides
                if (isinstance(side, ast.Constant) and side.value in MECHANISM_NAMES)
                or (isinstance(side, ast.Attribute) and side.attr == "NAME")
                or (isinstance(side, ast.Name) and side.id == "NONE")
            ]
            if named:
                found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_a_case_end_is_one_record() -> None:
    found = [f for name, tree in sources(*PACKAGE) for f in case_records(name, tree)]
    assert found == [":".join(RECORD), *sorted(":".join(shape) for shape in JSON_SHAPES)]
    assert [f for name, tree in sources(*PACKAGE) for f in field_copies(name, tree)] == []
    record = {field.name for field in dataclasses.fields(CaseRun)}
    assert set(CaseVerdict.model_fields) <= record  # its fields are the record's own


def test_the_daemon_orders_no_cases_of_its_own() -> None:
    assert [f for name, tree in sources("daemon") for f in own_orders(name, tree)] == []


def test_the_case_service_alone_makes_what_it_owns() -> None:
    found = [f for name, tree in sources("daemon") for f in parts_made(name, tree)]
    assert sorted({where.split(":")[0] for where in found}) == sorted(OWNERS)
    assert [where for where in found if where.startswith(OWNERS[0])] == [
        f"{OWNERS[0]}:85 asyncio.Lock"
    ]


def test_no_parameter_list_is_handed_on_unchanged() -> None:
    assert [f for name, tree in sources(*PACKAGE) for f in forwarded(name, tree)] == []


def test_only_the_http_adapter_drops_a_log_path() -> None:
    found = [f for name, tree in sources(*PACKAGE) for f in drops(name, tree)]
    assert sorted({where.split(":")[0] for where in found}) == sorted(DROPPERS)


def test_no_code_branches_on_a_mechanisms_name() -> None:
    found = [
        f
        for name, tree in sources("core", "daemon", "evaluate", "testing")
        if name != TABLE
        for f in name_branches(name, tree)
    ]
    assert found == []


def test_the_rules_find_what_they_forbid() -> None:
    planted = ast.parse(
        "@dataclass\nclass Ended:\n    exit_code: int\n    signal: int\n"
        "run = CaseRun(exit_code=end.exit_code, signal=end.signal, timed_out=False)\n"
        "def _prepare(self):\n    order = [(one.check.key, i) for one in self.listing()]\n"
        "class Cases:\n    def __init__(self):\n        self.runner = Runner(mechanism, user)\n"
        "def open_service(task, registry, level, *, spool, mechanism, log_dir, case_user):\n"
        "    return CaseService(task, registry, level, spool=spool, mechanism=mechanism,\n"
        "                       log_dir=log_dir, case_user=case_user)\n"
        "def run_case(self):\n    return run.off_the_daemon()\n"
        "what = 'bubblewrap' if name == bubblewrap.NAME else 'Landlock'\n"
        "if mechanism.name == 'none':\n    pass\n"
    )
    assert case_records("m", planted) == ["m:Ended"]
    assert field_copies("m", planted) == ["m:5"]
    assert own_orders("daemon/service.py", planted) == ["daemon/service.py:7 _prepare"]
    assert parts_made("m", planted) == ["m:10 Runner"]
    assert forwarded("m", planted) == ["m:12"]
    assert drops("m", planted) == ["m:15"]
    assert sorted(name_branches("m", planted)) == [
        "m:16 name == bubblewrap.NAME",
        "m:17 mechanism.name == 'none'",
    ]
