"""The README and docs/: the exact texts they quote are the ones the code gives (so a changed
string cannot leave the docs behind). What they name of the repository: test_docs_paths.py."""

from __future__ import annotations

from pathlib import Path

from ssebench.core.cli.serve import registration
from ssebench.core.logs import BYTE_LIMIT, LINE_LIMIT, WORD_LIMIT
from ssebench.core.registry import build_registry
from ssebench.core.report import INTERNAL_FAILURE, NOT_SAVED, NOTHING_RAN
from ssebench.core.server.app import ANNOTATIONS, MAX_RESULT_CHARS

ROOT = Path(__file__).resolve().parents[2]


def test_the_report_page_quotes_every_fixed_text() -> None:
    text = (ROOT / "docs" / "report.md").read_text()
    quoted = [INTERNAL_FAILURE, NOT_SAVED, NOTHING_RAN]
    quoted += [check.failure_reason for check in build_registry().checks]
    quoted += [
        f"test_patch result: {h}"
        for h in ("FAILED. <reason>", "every check passed.", "no checks ran.")
    ]
    for fixed in quoted:
        assert f"`{fixed}`" in text or f"\n{fixed}\n" in text, fixed


def test_the_long_log_page_states_the_limits() -> None:
    text = (ROOT / "docs" / "long-logs.md").read_text()
    assert f"more than **{WORD_LIMIT:,} words**" in text
    assert f"more than **{BYTE_LIMIT // 1024} KiB** ({BYTE_LIMIT:,} bytes)" in text
    assert f"only its last {BYTE_LIMIT // 1024} KiB" in text
    assert f"the last **{LINE_LIMIT} lines**" in text


def test_the_clients_page_shows_the_codex_registration_as_printed() -> None:
    text = (ROOT / "docs" / "clients.md").read_text()
    assert f"$ ssebench mcp-config codex\n{registration('codex')}\n```" in text


def test_the_pages_state_the_result_size_the_tool_declares() -> None:
    clients = (ROOT / "docs" / "clients.md").read_text()
    assert f'`"anthropic/maxResultSizeChars": {MAX_RESULT_CHARS}`' in clients
    assert f"up to {MAX_RESULT_CHARS:,} characters" in (ROOT / "docs" / "long-logs.md").read_text()


def test_the_clients_page_says_which_clients_reset_their_timeout_on_progress() -> None:
    text = (ROOT / "docs" / "clients.md").read_text()
    header = "| client | gives up | resets its timeout on progress |"
    assert header in text
    table = text[text.index(header) :].split("\n\n", 1)[0].splitlines()[2:]
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in row.split("|")[1:-1]]
                                             for row in table)}  # fmt: skip
    assert rows["Claude Code"][1].startswith("yes")
    typescript = rows["the TypeScript SDK (OpenCode, other agents on it)"][1]
    assert typescript.startswith("only when the caller sets `resetTimeoutOnProgress`")
    for client in ("Codex", "the Python SDK, fastmcp's client"):
        assert rows[client][1].startswith("no: ") and "cover a whole call" in rows[client][1]
    inspector = rows["the MCP Inspector's CLI (`npx @modelcontextprotocol/inspector --cli`)"]
    assert inspector == ["after 60 s", "no: it sends no `progressToken`, so the server sends it "
                         "no progress at all"]  # fmt: skip


def test_the_clients_page_gives_the_tools_hints_as_declared() -> None:
    """Their reasons are the page's; that the agent's tree is only read, test_client_doc.py."""
    text = (ROOT / "docs" / "clients.md").read_text()
    header = "| hint | value | why |"
    table = text[text.index(header) :].split("\n\n", 1)[0].splitlines()[2:]
    shown = {row.split("|")[1].strip(" `"): row.split("|")[2].strip() for row in table}
    declared = ANNOTATIONS.model_dump(by_alias=True, exclude_none=True)
    del declared["title"]
    assert shown == {hint: str(value).lower() for hint, value in declared.items()}
