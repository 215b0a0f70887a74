"""The daemon, called directly, enforces the level itself: at level 2 no PoC or intent test."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.timeout(120)

INDICES = ["0", "1", "2", "3", "99", "100000", "-1", "x", "00", "1.0"]
WITHHELD = ["pocs", "intent"]


def _probe(base: str) -> dict[str, tuple[int, str]]:
    """Every way of asking about a withheld check, and what each answered."""
    answers = {}
    with httpx.Client(base_url=base, timeout=10) as http:
        for key in WITHHELD:
            for index in INDICES:
                response = http.post(f"/v1/checks/{key}/cases/{index}/run")
                answers[f"POST {key} case {index}"] = (response.status_code, response.text)
            for path in (f"/v1/checks/{key}", f"/v1/checks/{key}/cases", f"/v1/checks/{key}/x/y"):
                for method in ("GET", "POST"):
                    response = http.request(method, path)
                    answers[f"{method} {path}"] = (response.status_code, response.text)
    return answers


def test_level_2_daemon_refuses_and_hides_pocs_and_intent_tests(serve: Any) -> None:
    with_pocs = serve("passing", 2)
    without = serve("bare", 2)
    for server in (with_pocs, without):
        listed = httpx.get(f"{server.daemon_url}/v1/checks").json()
        assert [check["key"] for check in listed["checks"]] == ["build", "functional"]
        assert httpx.get(f"{server.daemon_url}/v1/health").json()["difficulty"] == 2
    answers = _probe(with_pocs.daemon_url)
    assert {status for status, _ in answers.values()} == {403}
    # The same answer whatever the index, and whether or not the task has PoCs at all:
    # nothing tells how many there are.
    bodies = {key: body for key, (_, body) in answers.items()}
    assert len({body for key, body in bodies.items() if "pocs" in key}) == 1
    assert len({body for key, body in bodies.items() if "intent" in key}) == 1
    assert _probe(without.daemon_url) == answers
    # A check the level allows answers 404 past its last case, so the 403s are the level's.
    gone = httpx.post(f"{with_pocs.daemon_url}/v1/checks/build/cases/1/run")
    assert gone.status_code == 404


def test_daemon_listens_on_loopback_only(serve: Any) -> None:
    import socket

    server = serve("bare", 2)
    with socket.create_connection(("127.0.0.1", server.daemon_port), timeout=2):
        pass
    outside = _non_loopback_address()
    if outside is None:
        pytest.skip("this machine has no non-loopback IPv4 address to try")
    with pytest.raises(OSError), socket.create_connection((outside, server.daemon_port), 2):
        pass


def _non_loopback_address() -> str | None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent; this only picks a route
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address
