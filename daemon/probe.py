"""The probe case: a mechanism is named only once a real case ran under it here.

A mechanism whose tools are present can still fail where it runs (bubblewrap cannot mount
/proc in a container without a seccomp profile; libseccomp may be missing), and a case that
cannot start would read as the build failing, blaming the patch. So at start a probe case
runs through the very launcher every case uses, as the user cases will run as: it must write
its TMPDIR and the source tree, read the system and a granted file in a folder locked to its
user (as deployments lock the task folder), and not read a file of ours beside them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ssebench.core.errors import ConfigError
from ssebench.daemon.confine import Launcher, start
from ssebench.daemon.credentials import CaseUser
from ssebench.daemon.guard import make_folder, private_parent, remove_folder
from ssebench.daemon.isolation import Grant, Mechanism, Policy, system_paths

PROBE_SECONDS = 20.0
_SCRIPT = (
    'echo probe > "$TMPDIR/t" && cat "$TMPDIR/t" "$GRANTED" && echo built > out && '
    "test -r /etc/passwd && ! cat ../secret 2>/dev/null"
)


def probe(mechanism: Mechanism, user: CaseUser | None) -> str | None:
    """None when a probe case ran confined by `mechanism` as `user`; else what went wrong."""
    folder = make_folder("ssebench-probe-", reachable=True)
    try:
        source, case = folder / "src", folder / "case"
        for path in (source, case, case / "tmp", case / "home"):
            path.mkdir()
            if user is not None and os.geteuid() == 0:
                os.chown(path, user.uid, user.gid)
        (folder / "secret").write_text("not for cases\n")
        (folder / "locked").mkdir(mode=0o700)
        granted = folder / "locked" / "granted"
        granted.write_text("granted\n")
        policy = Policy(
            system=system_paths(),
            readable=(Grant(str(granted), str(granted)),),
            writable=(str(source),),
            hidden=(str(private_parent()),),
            user=user,
        )
        launcher = Launcher(mechanism, policy)
        try:
            return _run(launcher, source, case, granted)
        finally:
            launcher.close()
    except ConfigError:
        raise  # ours to report as such (a private folder another user made, say)
    except Exception as exc:  # whatever stops a case from starting is the answer
        return " ".join(str(exc).split()) or type(exc).__name__
    finally:
        remove_folder(folder)


def _run(launcher: Launcher, source: Path, case: Path, granted: Path) -> str | None:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(case / "tmp")}
    env["GRANTED"] = str(granted)
    spec = launcher.launch(["bash", "-c", _SCRIPT], str(case), str(source))
    proc = start(
        spec,
        cwd=source,
        env={**env, "HOME": str(case / "home")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return f"it did not end within {PROBE_SECONDS:g} s"
    text = " ".join(output.decode("utf-8", "replace").split())
    if proc.returncode != 0 or text != "probe granted" or not (source / "out").exists():
        return text or f"exit status {proc.returncode}"
    return None
