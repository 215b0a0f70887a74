"""The run an evaluator compares agents from (tests/e2e/test_run_record*.py): eight small tasks,
each named for the reason its `m1` prediction ends with; a model whose HTML name must stay text,
with trials of 3 on two tasks; an agent that called test_patch three times over MCP under a real
`ssebench run --prediction-out`, its tokens and time from its dialog file; costs and tokens on
some lines; a signal; a grade stopped at --timeout; an unknown task."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench.testing import task_toml
from ssebench.testing.servers import clean_env, free_port, run_ssebench

TRIGGERS = (
    "grep -q fixed state.txt || { echo 'ERROR: AddressSanitizer: heap-buffer-overflow'; exit 1; }"
)
CHECKS = {
    "build": "test -f state.txt && { ! grep -q slow state.txt || sleep 300; }",
    "pocs": [TRIGGERS],
    "intent": "grep -q tested state.txt",
    "functional": "! grep -q broken state.txt",
}
TASKS = ("resolved", "empty", "apply", "build", "poc", "intent", "functional", "slow")
ODD = "<i>org</i>/m2"  # a folder <i>org<__i>__m2, a name a page must escape
TIMEOUT = 30  # --timeout: the slow build sleeps far longer, every other grade takes seconds


def edit(text: str) -> str:
    """A patch that makes state.txt hold `text`."""
    return f"--- a/state.txt\n+++ b/state.txt\n@@ -1 +1 @@\n-bug\n+{text}\n"


FIXED = edit("fixed tested")
SHIPPED = "--- /dev/null\n+++ b/graded.txt\n@@ -0,0 +1 @@\n+graded\n"  # changes nothing checked
CONFTEST = "--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+import os\n"
M1 = {  # the patch that ends each task's prediction with its reason
    "resolved": FIXED + CONFTEST,  # and flagged: conftest.py is a file pytest loads by itself
    "empty": None,
    "apply": "not a diff",
    "build": "--- a/state.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bug\n",
    "poc": SHIPPED,  # its intent tests fail too; the PoC's failure comes first
    "intent": edit("fixed"),
    "functional": edit("fixed tested broken"),
    "slow": edit("slow fixed tested"),
}
SPENT = {  # what some of m1's lines say of their runs
    "resolved": {"cost": 0.4, "tokens": {"input": 1000, "output": 200}},
    "empty": {"cost": 0.1},
    "build": {"cost": 0.25, "tokens": {"input": 500, "output": 100}, "duration_s": 30.5},
}
TRIALS = {"resolved": [FIXED, SHIPPED, FIXED], "poc": [SHIPPED, SHIPPED, FIXED]}
# The agent: each time it writes state.txt, it calls test_patch (level 2: the build and the
# functional tests run, the PoCs and intent tests are withheld); then it writes its dialog file.
AGENT = """
import asyncio, json, os, sys
from pathlib import Path
from fastmcp import Client

url, tree = sys.argv[1], Path(sys.argv[2])

async def main():
    async with Client(url) as client:
        for text in ("broken", "fixed", "fixed tested"):
            (tree / "state.txt").write_text(text + "\\n")
            await client.call_tool_mcp("test_patch", {}, timeout=120)

asyncio.run(main())
archive = Path(os.environ["SSE_ARCHIVE"])
archive.mkdir(parents=True, exist_ok=True)
complete = {"seq": 1, "ts": "2026-01-02T03:04:05+00:00", "type": "complete", "status": "success",
            "turns": 4, "duration_ms": 61500, "total_tokens": {"in": 1200, "out": 300}}
(archive / "dialog.jsonl").write_text(json.dumps({"seq": 0, "type": "init", "data": {}}) + "\\n"
                                      + json.dumps(complete) + "\\n")
"""


@dataclass(frozen=True)
class RecordRun:
    tasks: Path
    predictions: Path
    out: Path
    agent_line: dict[str, Any]
    summary: dict[str, Any]
    stderr: str


def make_tasks(root: Path) -> Path:
    for name in TASKS:
        (root / name / "src").mkdir(parents=True)
        (root / name / "src" / "state.txt").write_text("bug\n")
        (root / name / "task.toml").write_text(task_toml(CHECKS))
    return root


def agent_line(tmp: Path) -> dict[str, Any]:
    """The prediction a real `ssebench run --prediction-out` writes for the agent."""
    task = make_tasks(tmp / "agent") / "resolved"
    (tmp / "agent.py").write_text(AGENT)
    port = free_port()
    out = tmp / "agent.jsonl"
    env = clean_env(tmp, SSE_ARCHIVE=str(tmp / "archive"))
    done = run_ssebench(
        "run", "--task", str(task), "--port", str(port), "--daemon-port", str(free_port()),
        "--prediction-out", str(out), "--model", "agent", "--task-id", "resolved", "--",
        sys.executable, str(tmp / "agent.py"), f"http://127.0.0.1:{port}/mcp", str(task / "src"),
        env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line: dict[str, Any] = json.loads(out.read_text())
    return line


def predictions(tmp: Path, agent: dict[str, Any]) -> Path:
    lines: list[dict[str, Any]] = [
        {"task": task, "model": "m1", "patch": patch, **SPENT.get(task, {})}
        for task, patch in M1.items()
    ]
    lines.append({"task": "zz", "model": "m1", "patch": FIXED})  # no such task
    lines += [{"instance_id": task, "model_name_or_path": ODD, "model_patch": patch}
              for task, patches in TRIALS.items() for patch in patches]  # fmt: skip
    lines.append(agent)
    path = tmp / "predictions.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def record_run(tmp: Path) -> RecordRun:
    """The whole run, graded with -j 2 under umask 022."""
    tasks = make_tasks(tmp / "tasks")
    agent = agent_line(tmp)
    preds = predictions(tmp, agent)
    out = tmp / "out"
    old = os.umask(0o022)
    try:
        done = run_ssebench("grade", "--tasks", str(tasks), "--predictions", str(preds),
                            "--out", str(out), "-j", "2", "--timeout", str(TIMEOUT),
                            env=clean_env(tmp), timeout=600)  # fmt: skip
    finally:
        os.umask(old)
    assert done.returncode == 1, done.stderr  # two errors: the unknown task, the slow grade
    assert "Traceback" not in done.stderr, done.stderr
    return RecordRun(tasks, preds, out, agent, json.loads(done.stdout), done.stderr)
