"""The report folder's watch alone (daemon/confine/reports.py), in-process on a real folder:
what it copies, when, and what it refuses to read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.daemon.confine import reports
from ssebench.daemon.confine.disk import DiskWatch
from ssebench.daemon.confine.inotify import Inotify
from ssebench.daemon.confine.policy import Policy
from ssebench.daemon.confine.reports import Reports
from ssebench.daemon.confine.running import Case

ROOT = os.geteuid() == 0


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "reports"
    path.mkdir()
    return path


@pytest.fixture
def events() -> Iterator[Inotify]:
    instance = Inotify()
    yield instance
    instance.close()


@pytest.fixture
def watch(folder: Path, events: Inotify) -> Iterator[Reports]:
    watching = Reports(str(folder), os.geteuid(), events)
    yield watching
    watching.close()


def take(watch: Reports, room: int = 1 << 20, final: bool = False) -> tuple[str, int]:
    data, skipped, more = watch.take(room, final)
    assert not more
    return data.decode(), skipped


def note(name: str, why: str) -> str:
    return f"\n[ssebench: the sanitizer report folder holds '{name}': {why}]\n"


def test_whole_lines_as_they_come_the_rest_at_the_end(folder: Path, watch: Reports) -> None:
    with (folder / "report.7").open("w") as report:
        report.write("==7==ERROR: AddressSanitizer: heap-buffer-overflow\n#0 in ma")
        report.flush()
        assert take(watch) == ("==7==ERROR: AddressSanitizer: heap-buffer-overflow\n", 0)
        assert take(watch) == ("", 0)
        report.write("in\n#1 in _sta")
        report.flush()
        assert take(watch) == ("#0 in main\n", 0)
    assert take(watch, final=True) == ("#1 in _sta", 0)


def test_what_was_copied_stays_copied(folder: Path, watch: Reports) -> None:
    (folder / "report.8").write_text("ERROR: LeakSanitizer: detected memory leaks\n")
    assert take(watch) == ("ERROR: LeakSanitizer: detected memory leaks\n", 0)
    os.truncate(folder / "report.8", 0)
    (folder / "report.8").rename(folder / "moved")
    (folder / "moved").unlink()
    assert take(watch, final=True) == (note("moved", "it was removed before it could be read"), 0)


def test_a_file_held_is_read_after_it_was_removed(folder: Path, watch: Reports) -> None:
    with (folder / "report.9").open("w") as report:
        assert take(watch) == ("", 0)  # seen, opened, held
        (folder / "report.9").unlink()
        report.write("SUMMARY: AddressSanitizer: heap-buffer-overflow\n")
    assert take(watch, final=True) == ("SUMMARY: AddressSanitizer: heap-buffer-overflow\n", 0)


def test_a_file_removed_before_it_was_seen_is_said(folder: Path, watch: Reports) -> None:
    (folder / "report.10").write_text("gone\n")
    (folder / "report.10").unlink()
    assert take(watch) == (note("report.10", "it was removed before it could be read"), 0)


def test_links_fifos_and_folders_are_never_read(
    folder: Path, watch: Reports, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("MARKER\n")
    (folder / "link").symlink_to(secret)
    os.mkfifo(folder / "fifo")  # opened for reading, it would wait for a writer
    (folder / "sub").mkdir()
    assert take(watch, final=True) == (
        note("link", "it is a symbolic link: it was not read")
        + note("fifo", "it is a FIFO: it was not read")
        + note("sub", "it is a folder: it was not read"),
        0,
    )


@pytest.mark.skipif(not ROOT, reason="gives a file to another user")
def test_another_users_file_is_never_read(folder: Path, watch: Reports) -> None:
    """A hard link to a file of someone else's would copy it into a log the agent reads."""
    (folder / "hard").write_text("MARKER\n")
    os.chown(folder / "hard", 1234, 1234)
    assert take(watch) == (note("hard", "it is not the case user's (uid 1234): it was not read"), 0)


def test_a_name_is_shown_on_one_line_whatever_it_holds(folder: Path, watch: Reports) -> None:
    os.mkfifo(folder / "x\n[ssebench: fake]")
    assert take(watch) == (note("x\\n[ssebench: fake]", "it is a FIFO: it was not read"), 0)


def test_past_the_room_left_bytes_are_counted_unread(folder: Path, watch: Reports) -> None:
    (folder / "big").write_text("0123456789\n" * 10)
    assert watch.take(15) == (b"0123456789\n", 0, True)  # its unfinished line waits
    assert watch.take(0) == (b"", 95, False)
    assert watch.take(0, final=True) == (b"0123", 0, False)


def test_the_files_held_and_the_notes_are_bounded(
    folder: Path, watch: Reports, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reports, "HELD", 3)
    monkeypatch.setattr(reports, "NOTES", 2)
    for i in range(4):
        (folder / f"r{i}").write_text(f"report {i}\n")
    for i in range(3):
        os.mkfifo(folder / f"f{i}")
    assert take(watch) == (
        note("r3", "more than 3 files are there: it was not read")
        + note("f0", "it is a FIFO: it was not read")
        + "\n[ssebench: more entries of the sanitizer report folder were ignored]\n"
        + "report 0\nreport 1\nreport 2\n",
        0,
    )


def test_one_case_s_watch_sees_nothing_of_an_earlier_case_s(
    tmp_path: Path, events: Inotify
) -> None:
    """The supervisor's one inotify instance serves every case, a watch each."""
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = Reports(str(tmp_path / "first"), os.geteuid(), events)
    (tmp_path / "first" / "report.1").write_text("first\n")
    first.close()  # its events still queued, unread
    second = Reports(str(tmp_path / "second"), os.geteuid(), events)
    (tmp_path / "second" / "report.2").write_text("second\n")
    assert second.take(1 << 20, final=True) == (b"second\n", 0, False)
    second.close()


def test_a_folder_not_ours_is_refused(tmp_path: Path, events: Inotify) -> None:
    with pytest.raises(OSError, match="No such file or directory"):
        Reports(str(tmp_path / "missing"), os.geteuid(), events)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError, match=r"Too many levels of symbolic links|Not a directory"):
        Reports(str(tmp_path / "link"), os.geteuid(), events)
    if ROOT:
        os.chown(tmp_path / "real", 1234, 1234)
        with pytest.raises(OSError, match="the case's report folder is not ours"):
            Reports(str(tmp_path / "real"), os.geteuid(), events)


class FailingFolder:
    """A report folder the file system fails to read (EIO): a fault no real folder shows."""

    closed = False

    def take(self, room: int, final: bool = False) -> tuple[bytes, int, bool]:
        raise OSError(5, "Input/output error")

    def close(self) -> None:
        self.closed = True


def test_a_folder_that_cannot_be_read_is_said_and_watched_no_more(tmp_path: Path) -> None:
    folder = FailingFolder()
    log = os.open(tmp_path / "case.log", os.O_WRONLY | os.O_CREAT, 0o600)
    disk = DiskWatch((str(tmp_path),), (), os.geteuid(), 1 << 30)
    case = Case("c", 0, -1, log, 1000, Policy(), disk, reports=folder)  # type: ignore[arg-type]
    try:
        case.copy_reports()
    finally:
        os.close(log)
    assert (folder.closed, case.reports) == (True, None)
    said = "\n[ssebench: the sanitizer reports: [Errno 5] Input/output error]\n"
    assert (tmp_path / "case.log").read_text() == said
