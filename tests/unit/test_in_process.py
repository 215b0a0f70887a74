"""The unit suite's own rule (tests/unit/conftest.py) refuses planted offenders: its conftest,
as it is, runs a planted suite in this process (pytester), where each test leaves the process
through one door and swallows the error, and one stays on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

# Each starts a process or reaches past loopback: harmless should the rule ever let it through
# (the child ends at once; 0.0.0.0 is no loopback address to the rule, yet is this machine).
PLANTED = {
    "subprocess": ("subprocess.run(['true'])", "start a process (subprocess._fork_exec)"),
    "asyncio": (
        "asyncio.run(asyncio.create_subprocess_exec('true'))",
        "start a process (subprocess._fork_exec)",
    ),
    "fork": ("if os.fork() == 0: os._exit(0)", "start a process (os.fork)"),
    "spawn": ("os.posix_spawn('/bin/true', ['true'], {})", "start a process (os.posix_spawn)"),
    "system": ("os.system('true')", "start a process (os.system)"),
    "multiprocessing": (
        "p = multiprocessing.get_context('spawn').Process(target=os.getpid); p.start(); p.join()",
        "start a process (_posixsubprocess.fork_exec)",
    ),
    "thread": (
        "t = threading.Thread(target=os.system, args=('true',)); t.start(); t.join()",
        "start a process (os.system)",
    ),
    "network": (
        "socket.create_connection(('0.0.0.0', 9), timeout=0.1)",
        "look up '0.0.0.0'",
    ),
    "connect": (
        "socket.socket().connect(('0.0.0.0', 9))",
        "reach ('0.0.0.0', 9) (connect)",
    ),
}
PLANTED_SUITE = """
import asyncio, multiprocessing, os, socket, subprocess, threading
import pytest

@pytest.mark.parametrize("door", {doors!r})
def test_leaves(door):
    try:
        exec(DOORS[door])
    except BaseException:
        pass  # swallowed, as a best-effort helper or a thread would

def test_stays_on_loopback():
    with socket.create_server(("127.0.0.1", 0)) as server:
        socket.create_connection(server.getsockname()).close()

DOORS = {code!r}
"""


def test_the_rule_fails_every_planted_offender_and_spares_loopback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    code = {door: planted[0] for door, planted in PLANTED.items()}
    pytester.makepyfile(test_planted=PLANTED_SUITE.format(doors=list(PLANTED), code=code))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rE", "-vv")
    result.assert_outcomes(passed=len(PLANTED) + 1, errors=len(PLANTED))
    refused = {
        line.split("[", 1)[1].split("]", 1)[0]: line.split(" - ", 1)[1]
        for line in result.outlines
        if line.startswith("ERROR test_planted.py::test_leaves[")
    }
    assert refused == {
        door: f"Failed: a unit test may not {said}: move it to tests/e2e"
        for door, (_, said) in PLANTED.items()
    }
