"""`ssebench import upstream` of more than one task folder, and of what a task folder holds beside
its PoC: a dataset folder or a whole checkout in one command (all written or none), the PoC's
folder travelling with it as upstream's daemon stages it (but where a hidden file shares it),
the image's `ENV` as the task's `default_env`, and a line on stderr for what only the image has
of /ssebench. Run in this process: no case runs here."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from ssebench.core.cli import main

from .test_import_sources import Cli, refused

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "upstream"
MINI = EXAMPLES / "datasets" / "mini"
ONE_TASK = "ssebench: import upstream: 1 record: 1 task, 1 with a fix\n"  # the summary


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """`ssebench import ARGS...` in this process: its exit status, stdout and stderr."""

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as ended:
            main(["import", *args])
        out, err = capsys.readouterr()
        return int(ended.value.code or 0), out, err

    return run


@pytest.mark.parametrize("given", [MINI, EXAMPLES], ids=["dataset", "checkout"])
def test_a_dataset_or_a_checkout_in_one_command(cli: Cli, tmp_path: Path, given: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = cli("upstream", str(given), "--out", str(out))
    said = "ssebench: import upstream: 2 records: 2 tasks, 2 with a fix\n"
    assert (code, stdout, stderr) == (0, f"{out / 'go-tlv-1'}\n{out / 'rust-rle-1'}\n", said)
    toml = (out / "rust-rle-1" / "task.toml").read_text()
    assert "image = 'ghcr.io/42-b3yond-6ug/ssebench/case/mini/rust-rle-1:pilot-v1'\n" in toml


def test_one_bad_task_of_a_dataset_writes_none(cli: Cli, tmp_path: Path) -> None:
    dataset = tmp_path / "mini"
    shutil.copytree(MINI, dataset)
    config = dataset / "rust-rle-1" / "sse" / "config.yaml"
    config.write_text(config.read_text().replace("language:", "langage:"))
    assert refused(cli, tmp_path / "out", "upstream", str(dataset)) == (
        f"{config}: language: is required"
    )
    (dataset / "rust-rle-1" / "Dockerfile").unlink()
    assert refused(cli, tmp_path / "out", "upstream", str(dataset)) == (
        f"{dataset / 'rust-rle-1'}: an upstream task folder has a Dockerfile"
    )


def test_keep_going_writes_a_datasets_good_tasks(cli: Cli, tmp_path: Path) -> None:
    dataset = tmp_path / "mini"
    shutil.copytree(MINI, dataset)
    config = dataset / "go-tlv-1" / "sse" / "config.yaml"
    config.write_text(config.read_text().replace("language:", "langage:"))
    out = tmp_path / "out"
    assert cli("upstream", str(dataset), "--out", str(out), "--keep-going") == (
        1,
        f"{out / 'rust-rle-1'}\n",
        f"ssebench: error: {config}: language: is required\n"
        "ssebench: import upstream: 2 records: 1 task, 1 with a fix, 1 refused\n",
    )
    assert sorted(p.name for p in out.iterdir()) == ["rust-rle-1"]


@pytest.mark.parametrize("flag", ["--source", "--image"])
def test_a_dataset_takes_no_one_tasks_flags(cli: Cli, tmp_path: Path, flag: str) -> None:
    value = str(tmp_path) if flag == "--source" else "x/y:1"
    assert refused(cli, tmp_path / "out", "upstream", str(MINI), flag, value) == (
        f"{MINI}: {flag} is one task's: import a dataset without it"
    )


def test_the_images_env_is_the_tasks_default_env(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "mini" / "go-tlv-1"
    shutil.copytree(MINI / "go-tlv-1", folder)
    with (folder / "Dockerfile").open("a") as dockerfile:
        dockerfile.write('ENV CGO_ENABLED=0 GOTOOLCHAIN="local"\nENV HOME=/root\n')
    code, _, stderr = cli("upstream", str(folder), "--out", str(tmp_path / "out"))
    assert (code, stderr) == (0, ONE_TASK)
    toml = (tmp_path / "out" / "go-tlv-1" / "task.toml").read_text()
    assert (
        "# The image's environment (its Dockerfile's ENV): a case gets ssebench's own value of "
        "each\n# name where it has one (a host run's), else the image's.\n"
        'default_env = { GOPATH = "/go", GOFLAGS = "-mod=vendor", CGO_ENABLED = "0", '
        'GOTOOLCHAIN = "local" }\n'
    ) in toml
    assert (
        "# The toolchain caches that environment names: cases read them where they are.\n"
        "readable = ['$GOPATH', '$GOMODCACHE']\n"
    ) in toml


def test_a_poc_whose_folder_holds_a_hidden_file_comes_alone(cli: Cli, tmp_path: Path) -> None:
    """Upstream's daemon stages the PoC alone then: the hidden tests beside it are the intent
    check's, which no PoC case may read."""
    folder = tmp_path / "mini" / "go-tlv-1"
    shutil.copytree(MINI / "go-tlv-1", folder)
    (folder / "sse" / "diffs" / "test.diff").rename(folder / "sse" / "pocs" / "test.diff")
    config = folder / "sse" / "config.yaml"
    config.write_text(config.read_text().replace("diffs/test.diff", "pocs/test.diff"))
    code, _, stderr = cli("upstream", str(folder), "--out", str(tmp_path / "out"))
    assert (code, stderr) == (0, ONE_TASK)
    task = tmp_path / "out" / "go-tlv-1"
    assert "[checks.pocs]\nfiles = ['pocs/poc.go']\n" in (task / "task.toml").read_text()
    assert "[checks.intent]\nfiles = ['pocs/test.diff']\n" in (task / "task.toml").read_text()
    assert not (task / "pocs" / "go.mod").exists()


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (lambda pocs: (pocs / "vendor").symlink_to("/usr/share"),
         "files.poc.0: pocs/vendor: a link to a folder in the PoC's folder"),
        (lambda pocs: (pocs / "passwd").symlink_to("/etc/passwd"),
         "files.poc.0: pocs/passwd leaves the task folder"),
        (lambda pocs: (pocs / "a b.go").write_text(""),
         "files.poc.0: pocs/a b.go: a PoC's folder holds plain names only"),
    ],
    ids=["link to a folder", "link out", "odd name"],
)  # fmt: skip
def test_what_a_pocs_folder_may_not_hold_is_one_line(
    cli: Cli, tmp_path: Path, plant: object, problem: str
) -> None:
    folder = tmp_path / "mini" / "go-tlv-1"
    shutil.copytree(MINI / "go-tlv-1", folder)
    plant(folder / "sse" / "pocs")  # type: ignore[operator]
    config = folder / "sse" / "config.yaml"
    assert refused(cli, tmp_path / "out", "upstream", str(folder)) == f"{config}: {problem}"


def test_what_only_the_image_has_of_ssebench_is_said(cli: Cli, tmp_path: Path) -> None:
    """As the Go pilot tasks' Dockerfiles make their PoC module in the image, and their test.sh
    calls /ssebench/scripts/build.sh: the task is written, and the user told."""
    folder = tmp_path / "mini" / "go-tlv-1"
    shutil.copytree(MINI / "go-tlv-1", folder)
    (folder / "sse" / "pocs" / "go.mod").unlink()
    with (folder / "Dockerfile").open("a") as dockerfile:
        dockerfile.write("RUN cd /ssebench/pocs && \\\n    go mod init poc-tlv && go mod tidy\n")
    test = folder / "sse" / "test.sh"
    test.write_text(test.read_text().replace("set -euo pipefail\n", "/ssebench/scripts/build.sh\n"))
    out = tmp_path / "out"
    code, stdout, stderr = cli("upstream", str(folder), "--out", str(out))
    assert (code, stdout) == (0, f"{out / 'go-tlv-1'}\n")
    assert stderr == (
        "ssebench: warning: go-tlv-1: its image makes more of /ssebench than sse/ holds "
        "(RUN cd /ssebench/pocs && go mod init poc-tlv && go mod tidy): run the task in its "
        "image, or import the image's /ssebench folder\n"
        "ssebench: warning: go-tlv-1: scripts/test.sh names /ssebench/, the image's "
        "folder, which no case reads (the task has it as $SSE_TASK_DIR): make the script name "
        "$SSE_TASK_DIR there\n" + ONE_TASK
    )


def test_the_docs_sample_config_imports_where_it_says(cli: Cli, tmp_path: Path) -> None:
    """docs/importing.md's sample config.yaml is the example's, it imports, and each file its
    comments place in the task folder (`# sse/...`) is one the imported task holds."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "importing.md"
    sample = docs.read_text().split("```yaml\n", 1)[1].split("```\n", 1)[0]
    folder = tmp_path / "mini" / "go-tlv-1"
    shutil.copytree(MINI / "go-tlv-1", folder)
    config = folder / "sse" / "config.yaml"
    assert yaml.safe_load(sample) == yaml.safe_load(config.read_text())
    config.write_text(sample)
    out = tmp_path / "out"
    assert cli("upstream", str(folder), "--out", str(out)) == (0, f"{out / 'go-tlv-1'}\n", ONE_TASK)
    placed = re.findall(r"# (sse/\S+)", sample)
    assert placed == [
        "sse/reports/issue.md", "sse/build.sh", "sse/run.sh", "sse/test.sh",
        "sse/diffs/patch.diff", "sse/pocs/poc.go", "sse/diffs/test.diff",
    ]  # fmt: skip
    held = {p.read_bytes() for p in (out / "go-tlv-1").rglob("*") if p.is_file()}
    assert [path for path in placed if (folder / path).read_bytes() not in held] == []
