"""The agent's code against the standbys waiting for the next cases (daemon/confine/pool.py).

While a case runs, the sandboxes of the next cases wait for their commands, as the same case
user: a shell each, reading its command from a pipe and writing into the next case's log.
A case that could reach one would run its own code in the next case (with that check's
files: the PoCs, say) or write the next case's log. So the attack, a case with standbys
waiting, takes every process of its user outside its own session and tries to read its
environment, to write into each of its descriptors through /proc/<pid>/fd (the command pipe
and the output pipe among them: a script there is run by the next case), and to kill it (and
`kill -9 -1`). None may work: under bubblewrap each standby is in a PID namespace of its own;
under Landlock each is a Landlock domain of its own, which a case can neither signal nor
trace. The next cases must then run in those standbys and print their own output alone.
The same attack on a process of its user outside any domain (the control) does all of it,
which shows the attack can succeed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from e2e.test_confine import open_cases, standbys
from e2e.test_pool import ready, run
from ssebench.testing.procs import alive

from .test_attacks import mechanisms

pytestmark = [pytest.mark.security, pytest.mark.timeout(180)]

# SELECT picks the targets among the processes of the case's user outside its session: every
# one, where that user is the case's own (a root daemon); else only the waiting shells, so a
# failure cannot reach the rest of the test's own user's processes.
ATTACK = r"""
own=$(cut -d' ' -f6 /proc/$$/stat); tree=$PWD
targets=0; environ=0; written=0; killed=0; pids=
for d in /proc/[0-9]*; do
  [ -O "$d" ] || continue
  [ "$(cut -d' ' -f6 "$d/stat" 2>/dev/null)" = "$own" ] && continue
  SELECT || continue
  targets=$((targets+1)); pids="$pids ${d#/proc/}"
  cat "$d/environ" >/dev/null 2>&1 && environ=$((environ+1))
  for f in "$d"/fd/* "$d"/fd/{0..20}; do
    { printf 'echo INJECTED >> %s/injected; ' "$tree" > "$f"; } 2>/dev/null &&
      written=$((written+1))
  done
done
for p in $pids; do kill -9 "$p" 2>/dev/null && killed=$((killed+1)); done
for p in $pids; do tr '\0' ' ' < /proc/$p/cmdline; echo; done  # what it found, said
echo "targets $targets environ $environ written $written killed $killed"
kill -9 -1 2>/dev/null
true
"""
EVERY = "true"
WAITING = "grep -q 'ssebench-cas[e]' \"$d/cmdline\" 2>/dev/null"


def attack(select: str) -> str:
    return ATTACK.replace("SELECT", select)


@pytest.mark.parametrize("mechanism", mechanisms())
def test_a_case_cannot_signal_trace_or_write_to_the_standbys_of_the_next_cases(
    tmp_path: Path, mechanism: str
) -> None:
    cases = open_cases(tmp_path, mechanism)
    log = tmp_path / "case.log"
    select = EVERY if cases.place.user.switched else WAITING

    async def scenario() -> tuple[str, list[int], list[int], list[str], list[int], bool]:
        await run(cases, "true", "build", log)  # the supervisor started
        await cases.prepare(["build", "pocs", "pocs", "pocs"])
        made = await ready(cases, 4)
        attacked = await run(cases, attack(select), "build", log)
        after = [pid for pid in made if alive(pid)]
        nexts = [await run(cases, f"echo next {i}", "pocs", log) for i in range(3)]
        injected = (cases.place.copy.path / "injected").exists()
        return attacked, made, after, nexts, standbys(cases), injected

    try:
        attacked, made, after, nexts, left, injected = asyncio.run(scenario())
    finally:
        cases.close()
    # Landlock shows the three waiting shells in /proc (their command lines, nothing more);
    # bubblewrap shows none of them.
    targets = "3" if mechanism == "landlock" else "0"
    assert attacked.startswith("exit 0 signal None ")
    last = attacked.removeprefix("exit 0 signal None ").splitlines()[-1]
    assert last == f"targets {targets} environ 0 written 0 killed 0", attacked
    assert after == made[1:]  # the first ran the attack; the others waited on, untouched
    assert nexts == [f"exit 0 signal None next {i}\n" for i in range(3)]  # their own output
    assert left == []  # each next case ran in a standby made before the attack
    assert not injected


def test_the_attack_does_all_of_it_to_a_shell_of_its_user_outside_any_sandbox(
    tmp_path: Path,
) -> None:
    """The control: a shell waiting on a pipe as a standby does, in a session of its own, run
    by this test's user, is attacked by the same script run as that user, unconfined (which
    only asks whether it may signal it: `kill -0`). The script it wrote runs."""
    reader, writer = os.pipe()
    decoy = subprocess.Popen(
        ["bash", "-c", f'IFS= read -r -d "" s <&{reader}; eval "$s"', "ssebench-case"],
        pass_fds=[reader], start_new_session=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(reader)
    try:
        only = f'[ "${{d#/proc/}}" = {decoy.pid} ]'
        script = attack(only).replace("kill -9", "kill -0").replace("kill -0 -1", ":")
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    finally:
        os.close(writer)  # the decoy reads to the end: what the attack wrote
        decoy.wait(10)
    counts = dict(zip(*[iter(done.stdout.split())] * 2, strict=True))
    assert (counts["targets"], counts["environ"], counts["killed"]) == ("1", "1", "1")
    assert int(counts["written"]) >= 3  # its pipe and its output among them
    assert (tmp_path / "injected").read_text().startswith("INJECTED\n")
