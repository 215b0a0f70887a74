"""The probe case: a mechanism is named only once a real case ran under it here.

A mechanism whose tools are present can still fail where it runs (bubblewrap cannot mount
/proc in a container without a seccomp profile; libseccomp may be missing), and a case that
cannot start would read as the build failing, blaming the patch. So at start a probe case
runs through the very confinement every case gets, as the user cases will run as, its user's
permissions shaped as for a case: it must write its TMPDIR and its tree, read the system and a
granted file in a folder locked to root (as deployments lock the task folder), and not read a
file of ours beside them; run as a user of its own, it must neither read a root-only file nor
change a system file's mode.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.confine.access import View, plan
from ssebench.daemon.confine.choice import confinement
from ssebench.daemon.confine.mechanism import Folders, Mechanism
from ssebench.daemon.confine.policy import CaseUser, Grant, Policy, system_paths
from ssebench.daemon.guard import make_folder, private_parent, remove_folder

PROBE_SECONDS = 20.0
_SCRIPT = (
    'echo probe > "$TMPDIR/t" && cat "$TMPDIR/t" "$GRANTED" && echo built > out && '
    'if [ -n "$TMP_TOO" ]; then echo tmp > /tmp/p$$ && rm /tmp/p$$; fi && '
    "test -r /etc/passwd && ! cat ../ours/secret 2>/dev/null && "
    'if [ -n "$ROOT_ONLY" ]; then ! cat "$ROOT_ONLY" 2>/dev/null && '
    '! chmod 0600 "$ROOT_ONLY" 2>/dev/null; fi'
)


def probe(mechanism: Mechanism, user: CaseUser) -> str | None:
    """None when a probe case ran confined by `mechanism` as `user`; else what went wrong."""
    return ProbeCase(mechanism, user).outcome()


class ProbeCase:
    """A probe case, started when made and judged by `outcome()`: its processes need nothing of
    ours while they run, so the caller may do other work meanwhile (`serve` imports its server:
    bench/startup.py)."""

    def __init__(self, mechanism: Mechanism, user: CaseUser) -> None:
        self._started: tuple[subprocess.Popen[bytes], Path] | None = None
        self._failure: str | None = None
        self._cleanup = contextlib.ExitStack()
        folder = make_folder("ssebench-probe-", reachable=True)
        self._cleanup.callback(remove_folder, folder)
        try:
            self._started = self._start(mechanism, user, folder)
        except ConfigError:
            self._cleanup.close()
            raise  # ours to report as such (a private folder another user made, say)
        except Exception as exc:  # whatever stops a case from starting is the answer
            self._failure = _said(exc)
            self._cleanup.close()

    def outcome(self) -> str | None:
        """None when the case ran confined as it should; else what went wrong. Its folder and
        whatever was opened for it are gone afterwards."""
        with self._cleanup:
            if self._started is not None:
                try:
                    self._failure = _outcome(*self._started)
                except Exception as exc:
                    self._failure = _said(exc)
                self._started = None
        return self._failure

    def _start(
        self, mechanism: Mechanism, user: CaseUser, folder: Path
    ) -> tuple[subprocess.Popen[bytes], Path]:
        tree, case = folder / "src", folder / "case"
        tree.mkdir()
        case.mkdir(mode=0o711)
        folders = Folders(str(case / "id"))
        folders.make(user)
        if user.switched:
            os.chown(tree, user.uid, user.gid)
        (folder / "ours").mkdir(mode=0o700)  # as the daemon's spool is
        (folder / "ours" / "secret").write_text("not for cases\n")
        (folder / "locked").mkdir(mode=0o700)
        granted = folder / "locked" / "granted"
        granted.write_text("granted\n")
        root_only = folder / "root-only"
        root_only.write_text("not for the case's user\n")
        root_only.chmod(0o600)
        confined = confinement(mechanism, user)
        self._cleanup.callback(confined.close)
        policy = Policy(
            system=(*system_paths(), str(root_only)),
            readable=(Grant(str(granted), str(granted)),),
            writable=(Grant(str(tree), str(tree)),),
            hidden=(str(private_parent()),),
            withheld=(str(folder / "locked"),),
        )
        if user.switched:
            view = View(user)
            self._cleanup.callback(view.close)
            view.apply(plan(user, confined.shape, [str(granted)], [str(tree)], policy.withheld))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": folders.tmp}
        env |= {"HOME": folders.home, "GRANTED": str(granted)}
        env["ROOT_ONLY"] = str(root_only) if user.switched else ""
        env["TMP_TOO"] = "yes" if confined.binds or confined.shared_tmp else ""
        launch = confined.launch(["bash", "-c", _SCRIPT], policy, folders, str(tree))
        proc = launch.start(
            (policy.limits, 0), cwd=tree, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        listener = launch.broker_listener()
        if listener is not None:
            os.close(listener)  # the probe connects to nothing
        return proc, tree


def _said(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _outcome(proc: subprocess.Popen[bytes], tree: Path) -> str | None:
    try:
        output, _ = proc.communicate(timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return f"it did not end within {PROBE_SECONDS:g} s"
    text = " ".join(output.decode("utf-8", "replace").split())
    if proc.returncode != 0 or text != "probe granted" or not (tree / "out").exists():
        return text or f"exit status {proc.returncode}"
    return None
