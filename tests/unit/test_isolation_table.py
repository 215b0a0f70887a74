"""The isolation mechanisms are one table (daemon/confine/choice.py's KINDS): a new mechanism is
a new row and its class, and every place that names mechanisms (the command line's choices and
help, the install hint, the refusals, the listing of what works here) reads the rows. A row
planted in the table, with no other edit, shows up in each of them."""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from ssebench.core.cli.parser import build_parser
from ssebench.daemon.confine import choice
from ssebench.daemon.confine.choice import (
    AUTO,
    Kind,
    available,
    candidates,
    choose,
    isolation_help,
    kind,
)
from ssebench.daemon.confine.mechanism import IsolationError, Unconfined
from ssebench.daemon.confine.policy import CaseUser

USER = CaseUser(os.geteuid(), os.getegid(), "me")


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table with JAIL first (the strongest) and the machine's own mechanisms faked away,
    so that the answers do not depend on this machine. Gives the names the probes were asked."""
    asked: list[str] = []

    def missing(name: str) -> Kind:
        def candidate() -> str:
            asked.append(name)
            return f"no {name} here"

        row = kind(name)
        assert row is not None
        return Kind(row.name, row.title, row.confinement, candidate, row.install, row.details)

    def jail() -> str:
        asked.append("jail")
        return "no /usr/sbin/jail here"

    rows = (
        Kind(
            "jail",
            "Jail",
            Unconfined,  # its behaviour is not what these tests are about
            jail,
            "install jail (apt-get install jail)",
            "a jail of its own for each case",
        ),
        missing("bubblewrap"),
        missing("landlock"),
        *(row for row in choice.KINDS if row.candidate is None),
    )
    monkeypatch.setattr(choice, "KINDS", rows)
    return asked


def isolation_flag_help(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    return " ".join(out.getvalue().split())


def test_the_command_line_takes_and_explains_the_tables_mechanisms() -> None:
    names = [AUTO, *(row.name for row in candidates())]
    assert names == [AUTO, "bubblewrap", "landlock"]
    shown = isolation_flag_help("check")
    assert "--isolation {auto,bubblewrap,landlock}" in shown
    assert isolation_help() in shown
    assert all(row.details in shown for row in candidates())


@pytest.mark.usefixtures("planted")
def test_a_planted_row_reaches_the_command_lines_choices_and_help() -> None:
    for command in ("check", "grade", "serve", "daemon", "validate"):
        shown = isolation_flag_help(command)
        assert "--isolation {auto,jail,bubblewrap,landlock}" in shown, command
        assert "jail: a jail of its own for each case" in shown, command
    args = build_parser().parse_args(["check", "--task", "t", "--isolation", "jail"])
    assert args.isolation == "jail"


def test_a_planted_row_is_probed_listed_and_named_in_the_refusals(planted: list[str]) -> None:
    assert available(USER) == []
    assert planted == ["jail", "bubblewrap", "landlock"]
    with pytest.raises(IsolationError) as caught:
        choose("jail", USER)
    assert str(caught.value) == "Jail cannot isolate cases here: no /usr/sbin/jail here"
    with pytest.raises(IsolationError) as caught:
        choose("auto", USER)
    assert str(caught.value) == (
        "no isolation mechanism works here: install jail (apt-get install jail), or install "
        "bubblewrap (Debian: apt-get install bubblewrap) where user namespaces are allowed, or "
        "run on Linux 6.12 or newer with Landlock enabled (ABI 6); or pass --no-isolation to "
        "run the agent's code unconfined"
    )


def test_without_the_row_its_name_is_refused() -> None:
    with pytest.raises(IsolationError) as caught:
        choose("jail", USER)
    assert str(caught.value) == "unknown isolation mechanism 'jail'"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check", "--task", "t", "--isolation", "jail"])
