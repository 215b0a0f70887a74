"""The stash (daemon/confine/stash.py) on real files: a withheld file away and back exactly as it
was, shared by several holders, never put back through a link nor over the real file's place
taken by a planted one; what cannot go back stays, journal and all, for `recover`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ssebench.daemon.confine import acl
from ssebench.daemon.confine.policy import Policy
from ssebench.daemon.confine.stash import Hiding, Stash, StashError
from ssebench.daemon.confine.stashfolder import Holder


def shared(tmp: Path) -> Path:
    """A folder anyone writes, as /tmp (sticky)."""
    folder = tmp / "shared"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o1777)
    return folder


def stash_at(tmp: Path) -> Stash:
    return Stash(str(tmp / "private" / "stash"))


def poc(tmp: Path, text: str = "the real PoC\n") -> Path:
    path = shared(tmp) / "poc"
    path.write_text(text)
    path.chmod(0o640)
    os.utime(path, ns=(1_000_000_123, 2_000_000_456))
    with open(path) as file:
        acl.edit_entry(file.fileno(), 4242, acl.READ)  # someone's entry: kept as it is
    return path


def state(path: Path) -> tuple[object, ...]:
    """All a file is, read without touching its access time."""
    info = path.lstat()
    fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    with open(fd, "rb") as file:
        content = file.read()
    extended = os.getxattr(path, acl.XATTR)
    return (content, info.st_ino, info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns,
            info.st_atime_ns, extended)  # fmt: skip


def test_a_file_held_is_gone_and_comes_back_exactly_as_it_was(tmp_path: Path) -> None:
    path = poc(tmp_path)
    before = state(path)
    stash = stash_at(tmp_path)
    assert stash.hold(str(path)) is True
    assert not os.path.lexists(path)
    assert os.stat(tmp_path / "private" / "stash").st_mode & 0o777 == 0o700
    assert stash.release(str(path)) == []
    assert state(path) == before
    assert not (tmp_path / "private").exists()  # the last one out removes the stash


def test_nothing_there_is_nothing_held(tmp_path: Path) -> None:
    stash = stash_at(tmp_path)
    assert stash.hold(str(shared(tmp_path) / "none")) is False
    assert stash.held == {} and not (tmp_path / "private" / "stash").exists()


def test_a_file_comes_back_only_when_its_last_holder_lets_go(tmp_path: Path) -> None:
    path = poc(tmp_path)
    first, second = stash_at(tmp_path), stash_at(tmp_path)
    second.holder = Holder(os.getppid(), _start(os.getppid()))  # another living process
    assert first.hold(str(path)) and second.hold(str(path))
    assert first.release(str(path)) == [os.getppid()]
    assert not os.path.lexists(path)
    assert second.release(str(path)) == []
    assert path.read_text() == "the real PoC\n"


def _start(pid: int) -> int:
    from ssebench.daemon.confine.procfs import start_time

    start = start_time(pid)
    assert start is not None
    return start


@pytest.mark.parametrize("planted", ["file", "link", "folder"])
def test_what_was_planted_while_it_was_away_never_takes_its_place(
    tmp_path: Path, planted: str
) -> None:
    path = poc(tmp_path)
    before = state(path)
    target = tmp_path / "target"
    target.write_text("not to be written\n")
    stash = stash_at(tmp_path)
    stash.hold(str(path))
    if planted == "file":
        path.write_text("the agent's input\n")
    elif planted == "link":
        path.symlink_to(target)
    else:
        (path / "inner").mkdir(parents=True)
        (path / "inner" / "file").write_text("x\n")
        (path / "inner").chmod(0)
    assert stash.release(str(path)) == []
    assert state(path) == before
    assert target.read_text() == "not to be written\n"
    assert stash.notes == [f"{path}: removed what was put there while it was away"]


def test_a_folder_swapped_for_a_link_is_never_written_through(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "poc"
    path.write_text("the real PoC\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stash = stash_at(tmp_path)
    stash.hold(str(path))
    folder.rename(tmp_path / "data-moved")
    folder.symlink_to(elsewhere)
    with pytest.raises(
        StashError, match=f"^{re.escape(f'cannot put {path} back (')}.*it stays in "
    ):
        stash.release(str(path))
    assert list(elsewhere.iterdir()) == []
    folder.unlink()
    (tmp_path / "data-moved").rename(folder)
    assert stash_at(tmp_path).recover() == [
        f"put back {path}, which an ssebench process that was killed had kept away"
    ]
    assert path.read_text() == "the real PoC\n"


def test_a_folder_replaced_by_another_is_not_where_it_goes_back(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "poc").write_text("the real PoC\n")
    stash = stash_at(tmp_path)
    stash.hold(str(folder / "poc"))
    folder.rename(tmp_path / "data-moved")
    folder.mkdir()
    with pytest.raises(StashError, match="is not the folder it was taken from; it stays in "):
        stash.release(str(folder / "poc"))
    assert list(folder.iterdir()) == []


def test_another_file_at_the_path_is_never_taken_for_the_one_held_before(tmp_path: Path) -> None:
    path = poc(tmp_path)
    stash = stash_at(tmp_path)
    stash.hold(str(path))
    stash.release(str(path))
    path.unlink()
    path.write_text("someone else's\n")
    with pytest.raises(StashError, match="is not the file ssebench took from there before"):
        stash.hold(str(path))
    assert path.read_text() == "someone else's\n"


def test_a_stash_another_user_may_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / "private").mkdir(mode=0o777)
    (tmp_path / "private").chmod(0o777)
    with pytest.raises(StashError, match="is not this user's own folder"):
        stash_at(tmp_path).hold(str(poc(tmp_path)))


def test_the_supervisors_hiding_follows_each_checks_policy(tmp_path: Path) -> None:
    path = str(poc(tmp_path))
    pinned: list[str] = []

    def pin(pinned_path: str, fd: int) -> None:
        pinned.append(pinned_path)
        os.close(fd)

    hiding = Hiding(stash_at(tmp_path), pin)
    build, pocs = Policy(moved_away=(path,)), Policy()
    for policy, there in ((build, False), (build, False), (pocs, True), (build, False)):
        hiding.show(policy)
        hiding.hide(policy)
        assert os.path.lexists(path) is there
    assert pinned == [path]  # opened once, before it first moved
    assert hiding.close() == []
    assert Path(path).read_text() == "the real PoC\n"


def test_a_file_another_process_keeps_away_is_no_case_of_this_check(tmp_path: Path) -> None:
    path = str(poc(tmp_path))
    other = stash_at(tmp_path)
    other.holder = Holder(os.getppid(), _start(os.getppid()))
    hiding = Hiding(stash_at(tmp_path), lambda _, fd: os.close(fd))
    hiding.hide(Policy(moved_away=(path,)))
    other.hold(path)
    with pytest.raises(
        StashError, match=f"^{re.escape(path)} is kept away from every case by another "
    ):
        hiding.show(Policy())
    other.release(path)
    assert Path(path).read_text() == "the real PoC\n"
