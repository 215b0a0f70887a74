"""The runner's and the supervisor's messages: each record survives the wire whole, and a
packet that is not exactly a record is refused, never half read."""

from __future__ import annotations

import re

import pytest

from ssebench.core.case import CaseRun
from ssebench.daemon.confine.mechanism import Mechanism
from ssebench.daemon.confine.messages import (
    RECORDS,
    Ended,
    Error,
    Failed,
    Message,
    MessageError,
    Prepare,
    Ready,
    Run,
    Setup,
    Started,
    Stop,
    Wanted,
    decode,
    encode,
)
from ssebench.daemon.confine.policy import CaseUser, Grant, Limits, Policy

POLICY = Policy(
    system=("/usr",),
    readable=(Grant("/t/intent", "/real/intent"),),
    writable=(Grant("/src", "/tmp/ssebench-0/ssebench-runner-x/src"),),
    hidden=("/t",),
    withheld=("/t", "/real/pocs"),
    network=True,
    limits=Limits(processes=10, memory_mb=20, open_files=30, disk_mb=40),
)
MESSAGES: list[Message] = [
    Setup(Mechanism("landlock", "ABI 6", landlock_abi=6), CaseUser(1900000016, 1900000016, "x")),
    Setup(Mechanism("none"), CaseUser(1000, 1000, "agent")),
    Ready(),
    Error("ValueError: no"),
    Run("c1", ("bash", "-c", "true"), "/src", {"PATH": "/bin"}, 1 << 30, "/case", POLICY),
    Run("c2", ("true",), "/", {}, 1, "/c", Policy(), reads=("/t/pocs/crash-1.bin",)),
    Prepare((Wanted(POLICY, "/case"), Wanted(Policy(), "/case-2"))),
    Started("c1", 42),
    Failed("c1", "no such file"),
    Ended("c1", CaseRun(None, 9, False, 0.25, killed=2, dropped=4005)),
    Ended("c1", CaseRun(0, None, False, 1.0), fault="cannot write the case's log: No space"),
    Stop("c1", 1.0),
]


def test_every_record_is_tested() -> None:
    assert {type(message) for message in MESSAGES} == set(RECORDS.values())


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: type(message).__name__)
def test_a_record_survives_the_wire_whole(message: Message) -> None:
    assert decode(encode(message)) == message


@pytest.mark.parametrize(
    ("packet", "error"),
    [
        (b"not json", "not JSON"),
        (b'{"op": "explode"}', "no such message"),
        (b'["ended"]', "no such message"),
        (b'{"op": "ended", "id": "c1", "case": {"exit_code": 0, "signal": null}}', "timed_out"),
        (
            b'{"op": "ended", "id": "c1", "case": {"exit_code": 0, "signal": null, '
            b'"timed_out": false, "seconds": 1, "log_path": "/etc/shadow"}}',
            "Ended.case.log_path",
        ),
        (b'{"op": "started", "id": "c1", "pid": "42"}', "Started.pid: '42' is not int"),
        (b'{"op": "started", "id": "c1", "pid": 42, "extra": 1}', "unknown fields ['extra']"),
        (b'{"op": "stop", "id": "c1", "grace": true}', "Stop.grace"),
        (
            b'{"op": "run", "id": "c", "argv": ["a", 1], "cwd": "/", "env": {}, '
            b'"log_limit": 1, "case_dir": "/"}',
            "Run.argv[]",
        ),
    ],
)
def test_a_packet_that_is_not_a_record_is_refused(packet: bytes, error: str) -> None:
    with pytest.raises(MessageError, match=re.escape(error)):
        decode(packet)
