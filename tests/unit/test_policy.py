"""Isolation's rules, each alone and in-process: the policy a check gets, the case environment,
the paths a mechanism leaves out, the case user, and its permissions as POSIX ACL entries."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ssebench.core.errors import ConfigError
from ssebench.daemon.caseenv import case_environment
from ssebench.daemon.confine import access, acl
from ssebench.daemon.confine.access import Shape, View, plan
from ssebench.daemon.confine.acl import allows, decode, encode
from ssebench.daemon.confine.choice import choose
from ssebench.daemon.confine.mechanism import Folders, IsolationError, Mechanism
from ssebench.daemon.confine.policy import CaseUser, Grant, system_paths, visible_roots
from ssebench.daemon.confine.user import (
    CASE_UID_BASE,
    SLOTS,
    CaseUserError,
    case_user,
    named_user,
)
from ssebench.daemon.guard import private_parent
from ssebench.daemon.policies import policy_for
from ssebench.daemon.task import load_task
from ssebench.plugins.build import BUILD
from ssebench.plugins.intent import INTENT
from ssebench.plugins.poc import POCS

CHECKS = [BUILD, POCS, INTENT]
ROOT = os.geteuid() == 0
TREE = Grant("/seen/src", "/copy/src")


def write_task(root: Path, toml: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "pocs").mkdir()
    (root / "pocs" / "one.bin").write_text("poc one\n")
    (root / "intent").mkdir()
    (root / "intent" / "t.sh").write_text("exit 0\n")
    (root / "task.toml").write_text('source = "src"\n' + toml)
    return root


TOML = """files = ["intent/t.sh"]
env = { GREETING = "hi", WHERE = "$SSE_SOURCE_DIR/x" }
pass_env = ["CARGO_HOME"]
[checks.build]
run = "true"
[checks.pocs]
files = ["pocs"]
cases = ["cat $SSE_TASK_DIR/pocs/one.bin"]
"""


def test_each_check_reads_the_top_level_files_and_its_own_never_another_checks(
    tmp_path: Path,
) -> None:
    task = load_task(write_task(tmp_path, TOML), CHECKS)
    script, pocs = str(tmp_path / "intent" / "t.sh"), str(tmp_path / "pocs")
    build = policy_for(task, "build", TREE, hidden=[Path("/x/logs")])
    assert build.readable == (Grant(script, script),)
    assert build.system == system_paths()
    assert "/usr" in build.system and "/tmp" not in build.system
    assert build.writable == (TREE,)
    assert build.withheld == (str(tmp_path), pocs)
    assert build.hidden == tuple(sorted({str(tmp_path), pocs, "/x/logs", str(private_parent())}))
    poc = policy_for(task, "pocs", TREE)
    assert poc.readable == (Grant(script, script), Grant(pocs, pocs))
    assert poc.withheld == (str(tmp_path),)


def test_a_check_folder_linked_elsewhere_is_hidden_where_it_really_lies(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path / "task", TOML)
    (tmp_path / "opt" / "pocs").mkdir(parents=True)
    (tmp_path / "opt" / "pocs" / "one.bin").write_text("x\n")
    os.rename(task_dir / "pocs", tmp_path / "moved")
    (task_dir / "pocs").symlink_to(tmp_path / "opt" / "pocs")
    task = load_task(task_dir, CHECKS)
    build = policy_for(task, "build", TREE)
    assert str(tmp_path / "opt" / "pocs") in build.hidden  # the link's target, under "/opt"
    assert str(tmp_path / "opt" / "pocs") in build.withheld
    poc = policy_for(task, "pocs", TREE)
    assert Grant(str(task_dir / "pocs"), str(tmp_path / "opt" / "pocs")) in poc.readable


def test_only_withheld_files_outside_the_task_folder_are_moved_away(tmp_path: Path) -> None:
    """A file outside the task folder, by its path or through a link (by where it lies), moves
    out of sight; not one in the task folder (its folders' entries hide it), a folder (its
    entry hides what it holds), a file of the system's, nor one a grant holds."""
    task_dir = write_task(tmp_path / "task", "")
    out = tmp_path / "out"
    (out / "folder").mkdir(parents=True)
    for name in ("poc", "linked", "granted/inner"):
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_text("x\n")
    (task_dir / "link").symlink_to(out / "linked")
    (task_dir / "task.toml").write_text(
        f'source = "src"\nfiles = ["{out}/granted"]\n[checks.build]\nrun = "true"\n'
        f'[checks.pocs]\nfiles = ["{out}/poc", "link", "{out}/folder", "pocs/one.bin", '
        f'"/etc/hostname", "{out}/granted/inner"]\nrun = "true"\n'
    )
    task = load_task(task_dir, CHECKS)
    build = policy_for(task, "build", TREE)
    assert build.moved_away == (str(out / "linked"), str(out / "poc"))
    assert policy_for(task, "pocs", TREE).moved_away == ()


def test_a_granted_link_is_readable_by_its_name_and_where_it_points(tmp_path: Path) -> None:
    write_task(tmp_path / "task", TOML)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "task" / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "task" / "task.toml").write_text(
        'source = "src"\nfiles = ["linked"]\nreadable = ["/usr/share"]\n'
    )
    task = load_task(tmp_path / "task", [BUILD])
    policy = policy_for(task, "build", TREE)
    assert policy.readable == (
        Grant(str(tmp_path / "task" / "linked"), str(tmp_path / "elsewhere")),
        Grant("/usr/share", "/usr/share"),
    )


def test_the_case_environment_is_an_allow_list(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, TOML), CHECKS)
    environ = {
        "PATH": "/root/.pyenv/shims:/usr/local/bin:/bin:/work/.venv/bin:/usr/bin",
        **{"SSE_DIFFICULTY": "2", "MCP_LOG_DIR": "/l", "SSE_X": "y", "A": "b"},
        **{"AWS_SECRET_ACCESS_KEY": "k", "HF_TOKEN": "t", "PIP_INDEX_URL": "u"},
        **{"SSH_AUTH_SOCK": "/s", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC", "TERM": "xt"},
        **{"USER": "root", "HOME": "/root", "CARGO_HOME": "/c"},
    }
    roots = ("/usr", "/bin")  # PATH keeps only what the case can reach, in its order
    folders = Folders(str(tmp_path / "case"))
    user = CaseUser(CASE_UID_BASE + 16, CASE_UID_BASE + 16, "1900000016")
    reports = f"log_path={tmp_path}/case/reports/report"
    assert case_environment(environ, task, "/seen/src", folders, user, roots, 97) == {
        "PATH": "/usr/local/bin:/bin:/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TZ": "UTC",
        "TERM": "xt",
        "CARGO_HOME": "/c",
        "TMPDIR": str(tmp_path / "case" / "tmp"),
        "HOME": str(tmp_path / "case" / "home"),
        "USER": "1900000016",
        "LOGNAME": "1900000016",
        "GREETING": "hi",
        "WHERE": "/seen/src/x",
        "SSE_TASK_DIR": str(tmp_path),
        "SSE_SOURCE_DIR": "/seen/src",
        "ASAN_OPTIONS": f"{reports}:exitcode=97",
        "UBSAN_OPTIONS": f"{reports}:exitcode=97",
        "MSAN_OPTIONS": f"{reports}:exitcode=97",
        "LSAN_OPTIONS": f"{reports}:exitcode=97",
        "TSAN_OPTIONS": f"{reports}:exitcode=97",
        "HWASAN_OPTIONS": f"{reports}:exitcode=97",
    }


@pytest.mark.parametrize(
    ("toml", "error"),
    [
        ('pass_env = "HOME"', "pass_env: must be a list of variable names"),
        ('pass_env = ["A B"]', "pass_env: 'A B' is not a variable name"),
        ('pass_env = ["SSE_DIFFICULTY"]', "pass_env: SSE_DIFFICULTY: ssebench's own settings"),
        ('pass_env = ["MCP_LOG_DIR"]', "pass_env: MCP_LOG_DIR: ssebench's own settings"),
        ("limits = { disk_mb = 0 }", "limits.disk_mb: must be a whole number above 0 (got 0)"),
        ("limits = { tree_mb = 0 }", "limits.tree_mb: must be a whole number above 0 (got 0)"),
        ('limits = { tree_mb = "8G" }', "limits.tree_mb: must be a whole number above 0"),
    ],
)
def test_pass_env_and_the_disk_limit_are_checked(tmp_path: Path, toml: str, error: str) -> None:
    write_task(tmp_path, toml + "\n")
    with pytest.raises(ConfigError) as caught:
        load_task(tmp_path, CHECKS)
    assert str(caught.value).startswith(f"{tmp_path / 'task.toml'}: {error}")


def test_visible_roots_split_only_along_hidden_paths(tmp_path: Path) -> None:
    for name in ("a/x", "a/y", "b", "c/d/e", "c/d/f", "c/g"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "b")
    hidden = (str(tmp_path / "a" / "x"), str(tmp_path / "c" / "d" / "e"))
    assert list(visible_roots(hidden, str(tmp_path))) == [
        str(tmp_path / "a" / "y"),
        str(tmp_path / "b"),
        str(tmp_path / "c" / "d" / "f"),
        str(tmp_path / "c" / "g"),
    ]


def test_an_unknown_mechanism_is_refused_and_none_is_unconfined() -> None:
    user = CaseUser(os.geteuid(), os.getegid(), "me")
    with pytest.raises(IsolationError, match="unknown isolation mechanism 'chroot'"):
        choose("chroot", user)
    assert choose("none", user) == Mechanism("none", "cases run unconfined")


def test_where_no_mechanism_works_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A machine without bubblewrap and without Landlock cannot be made here; fake its answers.
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr("ssebench.daemon.confine.landlock.abi_version", lambda: 0)
    user = CaseUser(os.geteuid(), os.getegid(), "me")
    with pytest.raises(IsolationError) as caught:
        choose("auto", user)
    assert str(caught.value) == (
        "no isolation mechanism works here: install bubblewrap (Debian: apt-get install "
        "bubblewrap) where user namespaces are allowed, or run on Linux 6.12 or newer with "
        "Landlock enabled (ABI 6); or pass --no-isolation to run the agent's code unconfined"
    )
    with pytest.raises(
        IsolationError,
        match=r"^Landlock cannot isolate cases here: ABI 6 or newer is needed \(none\)$",
    ):
        choose("landlock", user)
    with pytest.raises(IsolationError, match=r"^bubblewrap cannot isolate cases here: bwrap"):
        choose("bubblewrap", user)


@pytest.mark.skipif(not ROOT, reason="a case user of its own is a root daemon's")
def test_each_daemon_of_a_process_gets_a_user_of_its_own_that_no_account_has() -> None:
    first, second = case_user(), case_user()
    for user in (first, second):
        assert (
            CASE_UID_BASE + SLOTS * os.getpid()
            <= user.uid
            < CASE_UID_BASE + SLOTS * (os.getpid() + 1)
        )
        assert (user.gid, user.name, user.switched) == (user.uid, str(user.uid), True)
    assert first.uid != second.uid
    assert case_user("nobody") == CaseUser(65534, 65534, "nobody")
    assert case_user("4242") == CaseUser(4242, 4242, "4242")


def test_a_case_user_that_cannot_be_is_one_line() -> None:
    with pytest.raises(CaseUserError, match=r"^--case-user no-such-user: no such user$"):
        named_user("no-such-user")
    if ROOT:
        with pytest.raises(CaseUserError, match=r"^--case-user root: cases never run as root$"):
            case_user("root")
    else:
        with pytest.raises(CaseUserError, match="only a root daemon runs cases as another user"):
            case_user("root")


def test_an_acl_survives_its_encoding() -> None:
    entries = [(acl.USER_OBJ, 7, acl.UNDEFINED), (acl.USER, 0, 1900000016),
               (acl.GROUP_OBJ, 5, acl.UNDEFINED), (acl.MASK, 5, acl.UNDEFINED),
               (acl.OTHER, 5, acl.UNDEFINED)]  # fmt: skip
    assert decode(encode(list(reversed(entries)))) == entries


def _info(mode: int, uid: int = 0, gid: int = 0) -> os.stat_result:
    return os.stat_result((mode, 1, 1, 1, uid, gid, 0, 0, 0, 0))


@pytest.mark.parametrize(
    ("mode", "entries", "want", "expected"),
    [
        (0o40755, None, access.SEARCH, True),  # other's bits
        (0o40700, None, access.SEARCH, False),
        (0o40700, [(acl.USER, 1, 7)], access.SEARCH, True),  # its own entry, under the mask
        (0o40755, [(acl.USER, 0, 7)], access.SEARCH, False),  # refused whatever other says
        (0o40700, [(acl.USER, 1, 7), (acl.MASK, 6, 0)], access.SEARCH, False),
    ],
)
def test_what_the_case_user_may_do_is_its_entry_else_others_bits(
    mode: int, entries: list[tuple[int, int, int]] | None, want: int, expected: bool
) -> None:
    user = CaseUser(7, 7, "7")
    full = None
    if entries is not None:
        base = [(acl.USER_OBJ, 7, 0), (acl.GROUP_OBJ, 0, 0), (acl.OTHER, mode & 7, 0)]
        full = base + entries
    assert allows(user, _info(mode), full, want) is expected


@pytest.mark.skipif(not ROOT, reason="ACL entries for another user are a root daemon's to give")
def test_a_plan_opens_the_way_to_grants_and_closes_what_is_withheld_then_all_is_undone(
    tmp_path: Path,
) -> None:
    task = tmp_path / "task"
    write_task(task, "")
    task.chmod(0o700)  # locked to root, as deployments do
    (tmp_path / "another-task").mkdir()  # beside it, in a folder locked to root (pytest's)
    user = case_user()
    # (pytest's own folders above may hold entries a killed daemon left: a new edit drops those)
    touched = (tmp_path, task, task / "pocs", task / "intent", task / "task.toml")
    before = {p: (os.stat(p).st_mode, _acl(p)) for p in touched}
    wanted = plan(user, Shape(True, True), [str(task / "pocs")], [], [str(task)])
    locked = [p for p in task.parents if not os.stat(p).st_mode & 0o001]  # pytest's own 0700
    assert {k: v for k, v in wanted.items() if k.startswith(f"{task}/") or k == str(task)} == {
        str(task): access.SEARCH,
        str(task / "intent"): 0,
        str(task / "src"): 0,
        str(task / "task.toml"): 0,
    }
    for folder in locked:  # opened for the way to the grant alone
        assert wanted[str(folder)] == access.SEARCH
        beside = [str(p) for p in folder.iterdir() if p not in (*task.parents, task)]
        beside = [p for p in beside if not os.path.islink(p)]  # pytest's "current" link
        assert {p: wanted[p] for p in beside} == dict.fromkeys(beside, 0)
    assert wanted[str(tmp_path / "another-task")] == 0
    view = View(user)
    view.apply(wanted)
    assert stat.S_IMODE(os.stat(task).st_mode) == 0o710  # the mask, not more for the group
    assert access.readable(user, Shape(True, True), str(task / "pocs" / "one.bin"))
    assert not access.readable(user, Shape(True, True), str(task / "task.toml"))
    assert not access.readable(user, Shape(True, True), str(task / "intent" / "t.sh"))
    view.apply({})  # another check's plan: nothing of this one's stays
    assert not access.readable(user, Shape(True, True), str(task / "pocs" / "one.bin"))
    view.apply(wanted)
    view.close()
    assert {p: (os.stat(p).st_mode, _acl(p)) for p in before} == before


def _acl(path: Path) -> bytes | None:
    try:
        return os.getxattr(path, acl.XATTR)
    except OSError:
        return None
