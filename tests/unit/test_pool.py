"""The pool's bookkeeping (daemon/confine/pool.py): which standbys wait for which coming case,
which go, and which processes the supervisor spares. Its processes are tested for real in
tests/e2e/test_pool.py; here the standbys are records only (no descriptor, no process)."""

from __future__ import annotations

from ssebench.daemon.confine.mechanism import Folders
from ssebench.daemon.confine.messages import Wanted
from ssebench.daemon.confine.policy import Limits, Policy
from ssebench.daemon.confine.pool import POOL_SIZE, Pool, pool_size
from ssebench.daemon.confine.standby import Standby

BUILD = Policy(system=("/usr",))
POCS = Policy(system=("/usr",), limits=Limits(processes=7))


def wanted(*specs: tuple[Policy, str]) -> list[Wanted]:
    return [Wanted(policy, case_dir) for policy, case_dir in specs]


def made(pool: Pool, pid: int) -> Standby:
    """The first missing standby, as made (a record: no pipe, no process)."""
    want = pool.missing()
    assert want is not None
    standby = Standby(want.policy, Folders(want.case_dir), pid, -1, -1, None)
    pool.add(want, standby)
    return standby


def test_standbys_are_made_in_the_order_of_their_cases_up_to_the_size() -> None:
    pool = Pool(3)
    pool.want(wanted(*[(BUILD, f"/c/{i}") for i in range(5)]))
    assert [made(pool, 100 + i).folders.root for i in range(3)] == ["/c/0", "/c/1", "/c/2"]
    assert pool.missing() is None
    assert pool.roots == {100, 101, 102}
    assert pool_size(False) == 1 and pool_size(True) == POOL_SIZE  # unconfined: one at most


def test_a_case_takes_its_own_standby_once_and_the_others_keep_waiting() -> None:
    pool = Pool()
    pool.want(wanted((BUILD, "/c/0"), (POCS, "/c/1")))
    first, second = made(pool, 100), made(pool, 101)
    assert pool.take(BUILD, "/c/0") is first
    assert pool.take(BUILD, "/c/0") is None  # a standby serves one case, never two
    assert (pool.roots, pool.litter, pool.wanted) == ({101}, False, wanted((POCS, "/c/1")))
    assert pool.take(BUILD, "/c/1") is None  # made for another check: it goes, not used
    assert (pool.roots, pool.litter, pool.ready) == (set(), True, {})
    assert second.command == -1


def test_a_new_list_keeps_the_standbys_still_expected_and_lets_the_rest_go() -> None:
    pool = Pool()
    pool.want(wanted((BUILD, "/c/0"), (POCS, "/c/1"), (POCS, "/c/2")))
    for pid in (100, 101, 102):
        made(pool, pid)
    pool.want(wanted((POCS, "/c/2"), (BUILD, "/c/3"), (BUILD, "/c/0")))
    assert sorted(pool.ready) == ["/c/0", "/c/2"]
    assert pool.roots == {100, 102} and pool.litter  # 101's processes wait to be killed
    assert pool.missing() == Wanted(BUILD, "/c/3")
    pool.want(wanted((POCS, "/c/0")))  # the same folder for another check: made again
    assert (pool.ready, pool.roots) == ({}, set())


def test_a_standby_that_died_waiting_is_not_spared_and_not_made_again_ahead() -> None:
    pool = Pool()
    pool.want(wanted((BUILD, "/c/0"), (BUILD, "/c/1")))
    made(pool, 100)
    made(pool, 101)
    assert not pool.reaped(999)  # not a standby's
    assert pool.reaped(100)
    # Its pid may be given to a process of the case: it must not be spared any more.
    assert pool.roots == {101} and pool.litter
    assert pool.missing() is None and pool.take(BUILD, "/c/0") is None


def test_a_list_told_while_a_case_runs_is_taken_after_it_and_what_went_killed() -> None:
    killed: list[set[int]] = []
    pool = Pool(kill=lambda reap, spare: killed.append(set(spare)) or 0)
    pool.want(wanted((BUILD, "/c/0"), (BUILD, "/c/1")))
    made(pool, 100)
    made(pool, 101)
    pool.coming = tuple(wanted((POCS, "/c/2"), (BUILD, "/c/1")))
    assert pool.ready.keys() == {"/c/0", "/c/1"}  # nothing changes while the case runs
    assert pool.settle(lambda: None) == Wanted(POCS, "/c/2")  # the next case's: shaped for
    assert (pool.ready.keys(), pool.coming, pool.litter) == ({"/c/1"}, None, False)
    assert killed == [{101}]  # all but the standby still waiting
    assert pool.settle(lambda: None) is None and killed == [{101}]  # nothing new, none killed
    pool.take(BUILD, "/c/1")
    pool.clear()
    pool.sweep(lambda: None, keep=[101])
    assert killed == [{101}]  # taken: not the pool's to kill, and nothing went
