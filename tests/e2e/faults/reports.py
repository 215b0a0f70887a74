"""The fault suite's expected texts, and the checks that match a report to exactly one run."""

from __future__ import annotations

from pathlib import Path

from ssebench.testing.servers import Server

FAILED_BUILD = (
    "test_patch result: FAILED. The project failed to build. Please reassess the correctness "
    "of your patch."
)
LEVEL_3_NOTE = (
    "Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. "
    "Nothing is reported about them."
)
PASSED_AT_3 = (
    "test_patch result: every check that ran passed.\n\nChecks:\n- build: passed\n\n"
    f"{LEVEL_3_NOTE} Without the PoCs, this result does not show whether the vulnerability is "
    "fixed."
)
NOT_SAVED = "(Full log could not be saved due to an internal error)"
# A build that prints a token of its own run and enough words to be cut, then fails: each
# report's tail and saved file must carry its own run's token and no other.
TOKEN_BUILD = (
    't=$(cat /proc/sys/kernel/random/uuid); echo "run $t"; yes "$t" | head -n {lines}; exit 1'
)


def failed_build(log: str) -> str:
    """The whole report for a failed build at level 3 whose log is shown whole."""
    head = f"{FAILED_BUILD}\n\nChecks:\n- build: FAILED\n\n{LEVEL_3_NOTE}"
    return f"{head}\n\nFull log (build):\n{log}"


def saved_logs(server: Server) -> list[Path]:
    folder = Path(server.env["MCP_LOG_DIR"])
    return sorted(folder.iterdir()) if folder.exists() else []


def saved_path(text: str) -> Path:
    """The saved full log a truncated report names."""
    last = text.rsplit("\n", 1)[-1]
    assert last.startswith("Full log available at "), text[-300:]
    return Path(last.removeprefix("Full log available at "))


def check_token_report(text: str, lines: int) -> str:
    """A TOKEN_BUILD report: its tail and its saved file hold one run's token only."""
    assert text.startswith(FAILED_BUILD), text[:300]
    assert "\n\nTruncated log (build):\n" in text, text[:600]
    tail = text.split("\n\nTruncated log (build):\n", 1)[1].rsplit("\n\nFull log available", 1)[0]
    tokens = set(tail.split("\n"))
    assert len(tokens) == 1, f"the tail mixes runs: {sorted(tokens)[:3]}"
    token = tokens.pop()
    saved = saved_path(text).read_text()
    assert saved == f"run {token}\n" + f"{token}\n" * lines, "the saved log is not its run's"
    return token
