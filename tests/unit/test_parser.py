"""The parser's refusals that need no process: every single-valued flag of every command given
twice is one line and exit status 2 (argparse would keep the last one silently), while a
repeatable flag stays repeatable."""

from __future__ import annotations

import argparse

import pytest

from ssebench.core.cli.parser import build_parser

# A value each flag takes, so the first time it is given is accepted.
VALUES = {
    "port": "3100",
    "daemon_port": "3101",
    "difficulty": "2",
    "jobs": "2",
    "runs": "2",
    "progress_interval": "5",
    "timeout": "5",
    "daemon_url": "http://127.0.0.1:3001",
    "host": "localhost",
    "shard": "0/2",
    "tree_mb": "8192",
}
BEFORE = {"mcp-config": ["json"]}  # positionals a command needs first


def single_valued() -> list[tuple[str, argparse.Action]]:
    """Every command's flags that keep one value (or none): argparse stores the last."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [
        (name, action)
        for name, command in sub.choices.items()
        for action in command._actions
        if action.option_strings
        and isinstance(action, argparse._StoreAction | argparse._StoreConstAction)
    ]


FLAGS = single_valued()


def value_of(action: argparse.Action) -> str:
    return str(next(iter(action.choices))) if action.choices else VALUES.get(action.dest, "x")


def test_the_flags_are_found() -> None:
    """Not vacuous: the flags the issue names are among them."""
    names = {(command, action.option_strings[-1]) for command, action in FLAGS}
    assert {("serve", "--port"), ("check", "--difficulty"), ("grade", "--jobs")} <= names
    assert len(FLAGS) > 60


@pytest.mark.parametrize(
    ("command", "action"), FLAGS, ids=[f"{c} {a.option_strings[-1]}" for c, a in FLAGS]
)
def test_a_single_valued_flag_given_twice(
    command: str, action: argparse.Action, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = action.option_strings[-1]
    once = [flag] if action.nargs == 0 else [flag, value_of(action)]
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, *BEFORE.get(command, []), *once, *once])
    assert exited.value.code == 2
    name = "/".join(action.option_strings)
    assert capsys.readouterr() == (
        "",
        f"ssebench {command}: error: argument {name}: given more than once; give it once\n",
    )


def test_a_repeatable_flag_and_values_after_the_command_stay_as_they_were() -> None:
    args = build_parser().parse_args(
        ["serve", "--allowed-host", "a", "--allowed-host", "b", "--port", "3100"]
    )
    assert (args.allowed_host, args.port) == (["a", "b"], 3100)
    args = build_parser().parse_args(["run", "--port", "3100", "--", "agent", "--port", "1"])
    assert (args.port, args.cmd) == (3100, ["--", "agent", "--port", "1"])
