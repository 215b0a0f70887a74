"""Meta-tests of the shapes DESIGN.md's Layout names: one path per job.

- The daemon's cases are a service: an in-process caller calls it as objects; no ASGI
  transport stands between our own code and our own daemon.
- One place makes a daemon (core/daemons/inprocess.py's `open_service`).
- The daemon layer has one door: above it, only core/daemons and core/server import daemon/
  (and testing/ the walk over /proc, to watch what the tests started).
- The runner and the case supervisor speak in daemon/confine/messages.py's typed records only:
  neither builds, parses or indexes a raw JSON dict.
- The trusted core (daemon/confine) stands alone: it imports no pydantic, no httpx and nothing
  of the daemon's that reads task.toml or serves it (only the guard of its temporary folders),
  and nothing of core but its errors and the case's record, which it makes.
- One path to a failed check's log: every daemon hands over a log source, so nothing outside
  core/daemons asks what kind of daemon it holds; the tail rule's parts are named in
  core/logs.py only, where one function applies them, called from one driver, which the
  orchestrator alone calls.
- No import circle between any two modules of the package: dependencies go one way.
- No argv is rebuilt from argparse's internals (`_actions`): one ssebench asks another by a
  typed request (core/cli/requests.py), never by flags read back off the parser.
- One place builds the plugins' registry: the command line's composition root
  (core/cli/root.py); the plugin kit's tasks (testing/kit.py) run with the plugins a test gives.
- The tests wait through one helper (testing/waiting.py): no other loop in tests/ or testing/
  sleeps. And /proc is walked in one place (daemon/confine/procfs.py): nothing else lists it.
Each rule is also shown to find what it forbids, so it cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ABOVE_THE_DAEMON = ("core", "evaluate", "testing", "plugins")
DOORS = ("core/daemons", "core/server")
THE_WALK = "ssebench.daemon.confine.procfs"  # a leaf (it imports os alone) testing/ may import
MESSAGE_ENDS = ("daemon/confine/runner.py", "daemon/confine/supervisor.py")
# What the trusted core may import of ssebench: itself, the guard of ssebench's own folders,
# core's errors (which import nothing) and the case's record it makes (which imports no pydantic).
CORE_ALLOWED = (
    "ssebench.daemon.confine",
    "ssebench.daemon.guard",
    "ssebench.core.errors",
    "ssebench.core.case",
)
CORE_FORBIDDEN = ("pydantic", "httpx", "starlette", "uvicorn", "fastmcp", "mcp")
LOG_RULE = "core/logs.py"
RULE_PARTS = ("WORD_LIMIT", "LINE_LIMIT", "BYTE_LIMIT", "tail", "nth_newline_from_end",
              "fitting_start", "wire_size", "decode_end", "_tail_of")  # fmt: skip
PACKAGE = ("core", "daemon", "evaluate", "plugins", "testing")  # ssebench.core, ...
# Import circles left for another change to undo, each with why it is here; an entry no longer
# found must go (the test says so).
ALLOWED_CIRCLES = {
    frozenset({"ssebench.daemon.confine.choice", "ssebench.daemon.confine.probe"}): (
        "choice imports probe lazily to probe a mechanism, probe imports choice's "
        "`confinement`: the trusted core's own, left to the change that owns daemon/confine"
    ),
}
SHIPPED = ("core", "daemon", "evaluate", "plugins", "testing", "bench", "scripts")
ARGPARSE_INTERNALS = ("_actions", "_group_actions")
REGISTRY_ROOTS = ("core/cli/root.py", "testing/kit.py")
SLEEPS = ("time.sleep", "asyncio.sleep", "sleep", "anyio.sleep", "trio.sleep")
THE_WAIT = "testing/waiting.py"
LISTINGS = ("listdir", "scandir", "iterdir", "walk", "glob", "iglob", "rglob")
# The one walk over /proc, and the attacker's program a confined case runs (tests/e2e/security):
# it has no ssebench to import, and reading every process there is its attack.
PROC_WALKERS = ("daemon/confine/procfs.py", "tests/e2e/security/attack.py")


def sources(*folders: str) -> Iterator[tuple[str, ast.Module]]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield str(path.relative_to(ROOT)), ast.parse(path.read_text())


def daemon_imports(name: str, tree: ast.Module, package: str = "ssebench.daemon") -> list[str]:
    """Where `tree` imports `package` (at any depth, lazily too)."""
    found = []
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        found += [f"{name}:{node.lineno} {m}" for m in modules if m.startswith(package)]
    return found


def transports(name: str, tree: ast.Module) -> list[str]:
    """Classes that are an httpx transport, and uses of httpx's ASGI transport."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            if any(base.endswith(("BaseTransport", "AsyncBaseTransport")) for base in bases):
                found.append(f"{name}:{node.lineno} class {node.name}")
        if isinstance(node, ast.Attribute) and node.attr == "ASGITransport":
            found.append(f"{name}:{node.lineno} ASGITransport")
    return found


def services_made(name: str, tree: ast.Module) -> list[str]:
    return [
        f"{name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "CaseService"
    ]


def untyped_messages(name: str, tree: ast.Module) -> list[str]:
    """JSON by hand (json imported, dumps or loads), `dict[str, Any]`, and a dict indexed by
    a string (`message["op"]`, `message.get("id")`): what typed records replace."""
    found = []
    for node in ast.walk(tree):
        what = ""
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [node.module] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names if isinstance(node, ast.Import)]
            what = "import json" if "json" in modules else ""
        elif isinstance(node, ast.Attribute) and ast.unparse(node) in ("json.dumps", "json.loads"):
            what = ast.unparse(node)
        elif isinstance(node, ast.Subscript):
            keyed = isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
            what = ast.unparse(node) if keyed or ast.unparse(node) == "dict[str, Any]" else ""
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            first = node.args[0] if node.args else None
            keyed = isinstance(first, ast.Constant) and isinstance(first.value, str)
            what = ast.unparse(node) if node.func.attr == "get" and keyed else ""
        if what:
            found.append((node.lineno, f"{name}:{node.lineno} {what}"))
    return [where for _, where in sorted(found)]


def daemon_kinds(name: str, tree: ast.Module) -> list[str]:
    """isinstance() and issubclass() asking what kind of daemon something is."""
    return [
        f"{name}:{node.lineno} {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("isinstance", "issubclass")
        and node.args
        and "daemon" in ast.unparse(node.args[0]).lower()
    ]


def rule_parts(name: str, tree: ast.Module) -> list[str]:
    """Where a module takes a part of the tail rule from core/logs.py (imported by name, or
    as an attribute of the module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "ssebench.core.logs":
            found += [(node.lineno, a.name) for a in node.names if a.name in RULE_PARTS]
        elif isinstance(node, ast.Attribute) and node.attr in RULE_PARTS:
            found += [(node.lineno, ast.unparse(node))] * ast.unparse(node.value).endswith("logs")
    return [f"{name}:{line} {what}" for line, what in sorted(found)]


def callers(name: str, tree: ast.Module, callee: str) -> list[str]:
    """The functions of `tree` that call `callee` (by its bare name)."""
    found = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            calls = [
                node
                for node in ast.walk(function)
                if isinstance(node, ast.Call) and ast.unparse(node.func) == callee
            ]
            found += [f"{name}:{function.name}"] * len(calls)
    return found


def test_one_path_to_a_failed_checks_log() -> None:
    everywhere = list(sources(*ABOVE_THE_DAEMON, "daemon"))
    asked = [where for name, tree in everywhere if not name.startswith("core/daemons")
             for where in daemon_kinds(name, tree)]  # fmt: skip
    assert asked == []
    outside = [where for name, tree in everywhere if name != LOG_RULE
               for where in rule_parts(name, tree)]  # fmt: skip
    assert outside == []
    rule = ast.parse((ROOT / LOG_RULE).read_text())
    assert callers(LOG_RULE, rule, "tail") == [f"{LOG_RULE}:_tail_of"]
    assert callers(LOG_RULE, rule, "_tail_of") == [f"{LOG_RULE}:view_log"]
    drivers = [where for name, tree in everywhere for where in callers(name, tree, "view_log")]
    assert drivers == ["core/orchestrator.py:view_failed_log"]


def test_only_the_doors_import_the_daemon_layer() -> None:
    found = [
        where
        for name, tree in sources(*ABOVE_THE_DAEMON)
        if not name.startswith(DOORS)
        for where in daemon_imports(name, tree)
        if not (name.startswith("testing/") and where.endswith(THE_WALK))
    ]
    assert found == []


def test_only_the_command_line_imports_the_command_line() -> None:
    """The command line composes the rest; nothing under core/, daemon/, evaluate/, plugins/
    or testing/ reaches up into it (what two of them shared moved down: core/stopping.py's
    argv, core/server/handshake.py's probe)."""
    found = [
        where
        for name, tree in sources(*PACKAGE)
        if not name.startswith("core/cli/")
        for where in daemon_imports(name, tree, "ssebench.core.cli")
    ]
    assert found == []


def test_test_patchs_domain_never_imports_the_evaluator() -> None:
    """core/ (but the command line), daemon/ and plugins/ serve test_patch: the evaluator's
    side (evaluate/) stands above them, and `serve` loads none of it."""
    found = [
        where
        for name, tree in sources("core", "daemon", "plugins")
        if not name.startswith("core/cli/")
        for where in daemon_imports(name, tree, "ssebench.evaluate")
    ]
    assert found == []


def test_no_asgi_transport_between_our_code_and_our_daemon() -> None:
    found = [where for name, tree in sources(*ABOVE_THE_DAEMON, "daemon") for where in
             transports(name, tree)]  # fmt: skip
    assert found == []


def test_one_place_makes_a_daemon() -> None:
    found = [where for name, tree in sources(*ABOVE_THE_DAEMON, "daemon") for where in
             services_made(name, tree)]  # fmt: skip
    assert [where.split(":")[0] for where in found] == ["core/daemons/inprocess.py"]


def core_imports(name: str, tree: ast.Module) -> list[str]:
    """What a module of the trusted core imports that it may not."""
    found = []
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        for module in modules:
            ours = module.startswith("ssebench") and not module.startswith(CORE_ALLOWED)
            if ours or module.split(".")[0] in CORE_FORBIDDEN:
                found.append(f"{name}:{node.lineno} {module}")
    return found


def test_the_trusted_core_stands_alone() -> None:
    found = [where for name, tree in sources("daemon/confine") for where in
             core_imports(name, tree)]  # fmt: skip
    assert found == []


def test_runner_and_supervisor_exchange_typed_records_only() -> None:
    found = [where for name, tree in sources("daemon") if name in MESSAGE_ENDS for where in
             untyped_messages(name, tree)]  # fmt: skip
    assert found == []


def argparse_internals(name: str, tree: ast.Module) -> list[str]:
    """Where `tree` reads a parser's actions: what rebuilding argv from a parser takes."""
    return [
        f"{name}:{node.lineno} {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ARGPARSE_INTERNALS
    ]


def registries_built(name: str, tree: ast.Module) -> list[str]:
    """Where `tree` calls build_registry (by its name, or as a module's attribute)."""
    return [
        f"{name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func).rpartition(".")[2] == "build_registry"
    ]


def test_no_argv_is_rebuilt_from_argparse_internals() -> None:
    found = [where for name, tree in sources(*SHIPPED) for where in
             argparse_internals(name, tree)]  # fmt: skip
    assert found == []


def test_only_the_composition_root_builds_the_registry() -> None:
    found = [where for name, tree in sources(*SHIPPED) for where in
             registries_built(name, tree)]  # fmt: skip
    assert sorted({where.split(":")[0] for where in found}) == sorted(REGISTRY_ROOTS)
    assert len(found) == len(REGISTRY_ROOTS)  # once each


def test_the_rules_find_what_they_forbid() -> None:
    tree = ast.parse(
        "import httpx\n"
        "def f():\n    from ssebench.daemon.task import load_task\n"
        "class T(httpx.AsyncBaseTransport): pass\n"
        "x = httpx.ASGITransport(app)\n"
        "s = CaseService(task)\n"
    )
    assert daemon_imports("m", tree) == ["m:3 ssebench.daemon.task"]
    upward = ast.parse(
        "def f():\n    from ssebench.core.cli.run import CHILD\nimport ssebench.evaluate.grade\n"
    )
    assert daemon_imports("m", upward, "ssebench.core.cli") == ["m:2 ssebench.core.cli.run"]
    assert daemon_imports("m", upward, "ssebench.evaluate") == ["m:3 ssebench.evaluate.grade"]
    assert transports("m", tree) == ["m:4 class T", "m:5 ASGITransport"]
    assert services_made("m", tree) == ["m:6"]
    core = ast.parse(
        "import pydantic\nfrom ssebench.daemon.task import load_task\n"
        "from ssebench.daemon.confine.policy import Policy\nimport httpx\n"
    )
    assert core_imports("m", core) == ["m:1 pydantic", "m:2 ssebench.daemon.task", "m:4 httpx"]
    untyped = ast.parse(
        "import json\n"
        "def send(message: dict[str, Any]) -> None:\n"
        "    sock.send(json.dumps({'op': 'ended', 'exit_code': message['exit_code']}))\n"
        "answer = json.loads(data)\n"
        "case = cases.get(answer.get('id'))\n"
    )
    two_paths = ast.parse(
        "from ssebench.core.logs import LINE_LIMIT, LogView, tail, view_log\n"
        "from ssebench.core import logs\n"
        "async def view_failed_log(daemon, outcome):\n"
        "    if isinstance(daemon, LocalLogs):\n"
        "        return view_log(daemon.open_logs(outcome.cases))\n"
        "    return LogView(logs.tail(await stream(daemon)), True, None)\n"
        "def finish(self):\n"
        "    return tail(self.end.text())\n"
    )
    assert daemon_kinds("m", two_paths) == ["m:4 isinstance(daemon, LocalLogs)"]
    assert rule_parts("m", two_paths) == ["m:1 LINE_LIMIT", "m:1 tail", "m:6 logs.tail"]
    assert callers("m", two_paths, "tail") == ["m:finish"]
    assert callers("m", two_paths, "view_log") == ["m:view_failed_log"]
    rebuilt = ast.parse(
        "flags = argparse.ArgumentParser(add_help=False)\n"
        "for action in flags._actions:\n"
        "    argv += [action.option_strings[0]]\n"
        "group = [a.dest for a in where._group_actions]\n"
    )
    assert argparse_internals("m", rebuilt) == ["m:2 flags._actions", "m:4 where._group_actions"]
    built = ast.parse(
        "from ssebench.core.registry import build_registry\n"
        "checks = build_registry().checks\n"
        "again = registry.build_registry(plugins=[x])\n"
        "def build_registry(): pass\n"
    )
    assert sorted(registries_built("m", built)) == ["m:2", "m:3"]
    assert untyped_messages("m", untyped) == [
        "m:1 import json",
        "m:2 dict[str, Any]",
        "m:3 json.dumps",
        "m:3 message['exit_code']",
        "m:4 json.loads",
        "m:5 answer.get('id')",
    ]


def module_name(name: str) -> str:
    """The module a source file of the package is: core/x/y.py is ssebench.core.x.y."""
    parts = Path(name).with_suffix("").parts
    return ".".join(("ssebench", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def imported(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    """The modules of `known` that the file `name` imports anywhere: at the top, in a function
    (lazily) or for the type checker only. Each counts: a lazy import hides a circle from the
    interpreter, not from a reader, and task ↔ taskpaths was a circle of types only."""
    module = module_name(name)
    package = module if name.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up one more for each further dot
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                      for a in node.names}  # fmt: skip
    return (found & known) - {module}


def import_graph(files: Iterable[tuple[str, ast.Module]]) -> dict[str, set[str]]:
    trees = dict(files)
    known = {module_name(name) for name in trees}
    return {module_name(name): imported(name, tree, known) for name, tree in trees.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, directly or through others, each circle sorted."""

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for module in graph.get(todo.pop(), set()) - seen:
                seen.add(module)
                todo.append(module)
        return seen

    reached = {module: reach(module) for module in graph}
    found = {frozenset(m for m in reached[start] if start in reached[m])
             for start in graph if start in reached[start]}  # fmt: skip
    return sorted(sorted(circle) for circle in found)


def test_no_import_circle_between_any_two_modules() -> None:
    found = {frozenset(circle) for circle in circles(import_graph(sources(*PACKAGE)))}
    assert sorted(sorted(circle) for circle in found - ALLOWED_CIRCLES.keys()) == []
    assert ALLOWED_CIRCLES.keys() - found == set()  # fixed since: remove its entry


def test_the_circle_rule_finds_what_it_forbids() -> None:
    """Module-level, lazy and type-only imports, absolute and relative, all close a circle."""
    planted = [
        ("daemon/__init__.py", ast.parse("")),
        ("daemon/a.py", ast.parse("from ssebench.daemon.b import f\n")),
        ("daemon/b.py", ast.parse("def f():\n    from ssebench.daemon import c\n")),
        ("daemon/c.py", ast.parse("if TYPE_CHECKING:\n    from ssebench.daemon.a import A\n")),
        ("core/d.py", ast.parse("from .e import x\nimport ssebench.daemon.a\n")),
        ("core/e.py", ast.parse("from . import d\n")),
        ("core/f.py", ast.parse("from ssebench.core.d import x\nimport os\n")),
    ]
    graph = import_graph(planted)
    assert graph["ssebench.daemon.b"] == {"ssebench.daemon.c"}
    assert graph["ssebench.core.d"] == {"ssebench.core.e", "ssebench.daemon.a"}
    assert graph["ssebench.core.f"] == {"ssebench.core.d"}
    assert circles(graph) == [
        ["ssebench.core.d", "ssebench.core.e"],
        ["ssebench.daemon.a", "ssebench.daemon.b", "ssebench.daemon.c"],
    ]


def poll_loops(name: str, tree: ast.Module) -> list[str]:
    """Loops that sleep: a wait written by hand, which testing/waiting.py's helper replaces."""
    return [
        f"{name}:{loop.lineno} {type(loop).__name__.lower()} sleeps"
        for loop in ast.walk(tree)
        if isinstance(loop, ast.While | ast.For | ast.AsyncFor)
        and any(
            isinstance(call, ast.Call) and ast.unparse(call.func) in SLEEPS
            for call in ast.walk(loop)
        )
    ]


def proc_listings(name: str, tree: ast.Module) -> list[str]:
    """Listings of /proc itself (`os.listdir("/proc")`, `Path("/proc").iterdir()`, a glob of
    its entries): a walk over every process, which daemon/confine/procfs.py's replaces."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else ast.unparse(func)
        named = list(node.args)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            named += func.value.args  # Path("/proc").iterdir()
        proc = [arg for arg in named if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                and re.fullmatch(r"/proc/?([*\[].*)?", arg.value)]  # fmt: skip
        if called in LISTINGS and proc:
            found.append((node.lineno, f"{name}:{node.lineno} {ast.unparse(node)}"))
    return [where for _, where in sorted(found)]


def test_the_tests_wait_through_one_helper() -> None:
    found = [where for name, tree in sources("tests", "testing") if name != THE_WAIT for where
             in poll_loops(name, tree)]  # fmt: skip
    assert found == []


def test_proc_is_walked_in_one_place() -> None:
    folders = ("core", "daemon", "plugins", "testing", "tests", "bench")
    found = [where for name, tree in sources(*folders) if name not in PROC_WALKERS for where
             in proc_listings(name, tree)]  # fmt: skip
    assert found == []


def test_the_wait_and_walk_rules_find_what_they_forbid() -> None:
    waits = ast.parse(
        "while not ready():\n    time.sleep(0.05)\n"
        "async def f():\n    for _ in range(50):\n        await asyncio.sleep(0.1)\n"
        "for line in lines:\n    print(line)\n"
        "time.sleep(1)\n"
    )
    assert poll_loops("m", waits) == ["m:1 while sleeps", "m:4 for sleeps"]
    walks = ast.parse(
        "for pid in filter(str.isdigit, os.listdir('/proc')): pass\n"
        "live = [e for e in Path('/proc').iterdir() if e.name.isdigit()]\n"
        "stats = glob.glob('/proc/[0-9]*/stat')\n"
        "fds = os.listdir(f'/proc/{pid}/fd')\n"
        "status = Path('/proc/self/status').read_text()\n"
    )
    assert proc_listings("m", walks) == [
        "m:1 os.listdir('/proc')",
        "m:2 Path('/proc').iterdir()",
        "m:3 glob.glob('/proc/[0-9]*/stat')",
    ]
