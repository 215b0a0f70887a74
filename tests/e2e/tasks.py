"""The end-to-end suite's tasks: tiny task.toml files whose checks are shell one-liners.

A whole test_patch call on one takes well under a second; the few slow ones sleep only where a
test needs a call in flight.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ssebench.testing.servers import runner_tree, write_task
from ssebench.testing.waiting import wait_for

TASKS = {
    # Every check passes; two PoCs so PoC progress shows per case.
    "passing": """
[checks.build]
run = "echo building"
[checks.pocs]
cases = ["echo poc one", "echo poc two"]
[checks.intent]
run = "echo intent ok"
[checks.functional]
run = "echo functional ok"
""",
    # The build passes; the second PoC still triggers, intent and functional tests fail.
    "failing": """
[checks.build]
run = "echo building"
timeout = 1
[checks.pocs]
cases = [
    "echo clean",
    "echo 'ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1'; exit 1",
    "echo never reached",
]
[checks.intent]
run = "echo 'intent: bounds not checked'; exit 1"
[checks.functional]
run = "echo 'FAIL: test_roundtrip'; echo 'expected 3, got 4'; exit 1"
""",
    # The build hangs while $SSE_SOURCE_DIR/hang exists: it records its process group and leaves
    # a background child in it, the case a kill must not miss.
    "switch": """
[checks.build]
run = '''
if [ -e "$SSE_SOURCE_DIR/hang" ]; then
  echo $$ > "$SSE_SOURCE_DIR/pgid.tmp" && mv "$SSE_SOURCE_DIR/pgid.tmp" "$SSE_SOURCE_DIR/pgid"
  sleep 30 & sleep 30
fi
echo built
'''
[checks.pocs]
cases = ["echo poc"]
[checks.functional]
run = "echo functional ok"
""",
    # Each check appends its start and end to $SSE_SOURCE_DIR/trace, taking a moment in between.
    "traced": """
[checks.build]
run = 't=trace; echo build start >>"$t"; sleep 0.4; echo build end >>"$t"'
[checks.functional]
run = 't=trace; echo functional start >>"$t"; sleep 0.4; echo functional end >>"$t"'
""",
    # A task without PoCs or intent tests: the daemon must answer about them as for any other.
    "bare": """
[checks.build]
run = "echo building"
[checks.functional]
run = "echo functional ok"
""",
}


def make_task(root: Path, kind: str) -> Path:
    return write_task(root, TASKS[kind])


def read_pgid(env: Mapping[str, str], limit: float = 30.0) -> int:
    """The process group the hanging "switch" build recorded in its tree (the runner copy of the
    server started with `env`), once it has started."""

    def recorded() -> Path | None:
        tree = runner_tree(env)
        return tree / "pgid" if tree is not None and (tree / "pgid").exists() else None

    return int(wait_for(recorded, limit, "the hanging build's process group").read_text())
