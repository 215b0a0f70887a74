"""The runner copy handed over to the case user by a process of its own (chown): an adopted
tree (tests/unit/test_runnercopy.py has the syncs, which stay in the process)."""

from __future__ import annotations

from pathlib import Path

from unit.test_runnercopy import tree

from ssebench.daemon.confine.policy import CaseUser
from ssebench.daemon.runnercopy import RunnerCopy


def test_an_adopted_tree_becomes_the_case_users_and_is_never_synced(
    tmp_path: Path, user: CaseUser
) -> None:
    grade = tree(tmp_path / "grade")
    runner = RunnerCopy(grade, user, adopt=True)
    runner.sync()
    assert all(p.lstat().st_uid == user.uid for p in [grade, *grade.rglob("*")])
    (grade / "built").write_text("x\n")
    runner.sync()
    runner.close()
    assert runner.path == grade and (grade / "built").exists()  # its maker removes it
