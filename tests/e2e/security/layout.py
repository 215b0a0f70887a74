"""The attack's task, laid out as real deployments lay tasks out, and what a test reads after.

The task folder holds the agent's tree; its PoCs lie outside it, named by their absolute path,
and its intent tests through a symbolic link out of it: under a system folder (/opt) when the
test runs as root, where a case reads the system, else beside the task. A 0700 root-only copy
of the dataset and a root-owned program lie there too, and a copy of the task beside it. The
tree belongs to root, or to the agent (uid 1000) with the task folder locked to root.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
ROOT = os.geteuid() == 0
AGENT_UID = 1000


@dataclass
class Markers:
    poc_file: str
    intent_file: str
    toml: str
    poc_command: str
    intent_command: str
    functional_command: str
    dataset: str
    credential: str

    @property
    def state(self) -> str:
        """What the attack names the state it leaves by (not withheld: it chose it)."""
        return "ssebench-state-" + self.toml[-12:]

    @classmethod
    def new(cls) -> Markers:
        tag = uuid.uuid4().hex[:12]
        names = ("POCFILE", "INTENTFILE", "TOML", "POCCMD", "INTENTCMD", "FUNCCMD", "DATASET")
        return cls(*(f"MARK{name}{tag}" for name in (*names, "CREDENTIAL")))

    def withheld(self, level: int) -> dict[str, str]:
        """The markers a case may not see at `level`: task.toml's, the datasets' and the
        evaluator's credentials always; the PoCs' files too (the build never reads them)."""
        hidden = {"task.toml": self.toml, "the dataset's copy": self.dataset}
        hidden |= {"a credential": self.credential, "PoC file": self.poc_file}
        if level >= 1:
            hidden |= {"intent file": self.intent_file, "intent command": self.intent_command}
        if level >= 2:
            hidden |= {"PoC command": self.poc_command}
        if level >= 3:
            hidden |= {"functional command": self.functional_command}
        return hidden


@dataclass
class Layout:
    task: Path
    outside: Path  # where the withheld files lie (under /opt when root)
    marks: Markers
    owner: str

    @property
    def pocs(self) -> Path:
        return self.outside / "pocs"

    def targets(self) -> dict[str, object]:
        """What the attack aims at beyond the task folder. A non-root daemon's cases run as
        itself, the owner of the task: the metadata of its files is theirs (docs/isolation.md),
        so those routes are tried only against a daemon of root's."""
        metadata = self.owner != "self"
        return {
            "paths": [f"{self.outside}/**", f"{self.task.parent}/dataset/**"],
            "withheld": [str(self.pocs / "crash.bin"), str(self.pocs), str(self.task / "intent")]
            if metadata
            else [],
            # Which withheld files exist, and their sizes (a withheld folder's own name shows).
            "stat": [str(self.pocs / "crash.bin"), f"{self.task}/intent/test.sh"] * metadata,
            "system": [str(self.outside / "tool")] * metadata,
            "root_only": [f"{self.outside}/dataset/**"],
            "state_mark": self.marks.state,
            "task_itself": metadata,
        }

    def remove(self) -> None:
        if str(self.outside).startswith("/opt/"):
            shutil.rmtree(self.outside, ignore_errors=True)


def make_layout(root: Path, marks: Markers, owner: str) -> Layout:
    """The task in `root`; its tree `owner`'s ("root", or "agent": uid 1000, the task folder
    then locked to root)."""
    outside = Path(f"/opt/ssebench-attack-{uuid.uuid4().hex[:8]}") if ROOT else root.parent / "data"
    source = root / "src"
    source.mkdir(parents=True)
    shutil.copy(HERE / "attack.py", source / "attack.py")
    pocs, intent = outside / "pocs", outside / "intent"
    pocs.mkdir(parents=True)
    (pocs / "crash.bin").write_text(f"{marks.poc_file}\n")
    intent.mkdir()
    (intent / "test.sh").write_text(f"echo {marks.intent_file}\nexit 1\n")
    (root / "intent").symlink_to(intent)
    (root / "task.toml").write_text(
        f"# {marks.toml}\n"
        'source = "src"\n'
        "[checks.build]\n"
        "run = 'make'\n"
        "timeout = 120\n"
        "[checks.pocs]\n"
        f'files = ["{pocs}"]\n'
        f'cases = ["cat {pocs}/crash.bin # {marks.poc_command}"]\n'
        "[checks.intent]\n"
        'files = ["intent"]\n'
        f'run = "sh $SSE_TASK_DIR/intent/test.sh # {marks.intent_command}"\n'
        "[checks.functional]\n"
        f'run = "true # {marks.functional_command}"\n'
    )
    (outside / "tool").write_text("#!/bin/sh\nid -u\n")
    (outside / "tool").chmod(0o755)
    for dataset, mode in ((outside / "dataset", 0o700), (root.parent / "dataset", 0o755)):
        (dataset / "task" / "pocs").mkdir(parents=True)
        dataset.chmod(mode)  # a root-only copy of the dataset, and one anyone reads
        for name in ("task.toml", "pocs/crash.bin"):
            (dataset / "task" / name).write_text(f"# {marks.dataset}\n")
    if owner == "agent":
        subprocess.run(["chown", "-R", f"{AGENT_UID}:{AGENT_UID}", str(source)], check=True)
        root.chmod(0o700)
    return Layout(root, outside, marks, owner)


def task_state(layout: Layout) -> dict[str, tuple[str, int, int, list[str]]]:
    """Every task file but the tree (and the withheld ones outside it): content, mode, owner and
    extended attributes, whatever a case may have tried to change."""
    roots = [layout.task, layout.outside, layout.task.parent / "dataset"]
    state = {}
    for root in roots:
        for path in sorted([root, *root.rglob("*")]):
            if "src" in path.relative_to(root).parts or path.is_symlink():
                continue
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            with contextlib.suppress(OSError):
                attributes = [a for a in os.listxattr(path) if a.startswith("user.")]
            state[str(path)] = (digest, info.st_mode, info.st_uid, attributes)
    return state


def agent_visible(report: str, folders: list[Path]) -> dict[str, str]:
    """Everything in `folders` (the saved logs, the agent's tree...) by path, and the report."""
    seen = {"the report": report}
    for folder in folders:
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file() and not path.is_symlink():
                seen[str(path)] = path.read_bytes().decode("latin-1")
    return seen
