"""task.toml: a good file loads whole; a bad one is a one-line ConfigError naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench.core.errors import ConfigError
from ssebench.core.registry import build_registry
from ssebench.daemon.confine.policy import Limits
from ssebench.daemon.task import DEFAULT_TIMEOUT, find_task_file, load_task
from ssebench.plugins.poc import PocOptions, TriggeredIf

CHECKS = build_registry().checks
BY_KEY = {check.key: check for check in CHECKS}


def _write(folder: Path, text: str) -> Path:
    (folder / "src").mkdir(exist_ok=True)
    (folder / "pocs").mkdir(exist_ok=True)  # GOOD's PoC inputs lie there
    path = folder / "task.toml"
    path.write_text(text)
    return path


def _error(folder: Path, text: str) -> str:
    path = _write(folder, text)
    with pytest.raises(ConfigError) as caught:
        load_task(path, CHECKS)
    message = str(caught.value)
    assert "\n" not in message
    return message


GOOD = """\
source = "src"

[checks.build]
run = "make -j2"
timeout = 1800

[checks.pocs]
files = ["pocs"]
cases = ["./rle decode $SSE_TASK_DIR/pocs/crash-1.bin",
         "./rle decode $SSE_TASK_DIR/pocs/crash-2.bin"]
timeout = 60
triggered_if = { sanitizer = false, exit_codes = [3, 4], output_regex = "boom" }

[checks.functional]
run = "make check"
timeout = 0.5
"""


def test_a_good_file_loads_whole(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    task = load_task(path, CHECKS)
    assert task.path == path.resolve()
    assert task.directory == path.resolve().parent
    assert task.source == (tmp_path / "src").resolve()
    assert list(task.checks) == ["build", "pocs", "functional"]
    build, pocs, functional = task.checks.values()
    assert (build.check, build.cases, build.timeout, build.options) == (
        BY_KEY["build"],
        ("make -j2",),
        1800.0,
        None,
    )
    assert (pocs.check, pocs.cases, pocs.timeout, pocs.files) == (
        BY_KEY["pocs"],
        (
            "./rle decode $SSE_TASK_DIR/pocs/crash-1.bin",
            "./rle decode $SSE_TASK_DIR/pocs/crash-2.bin",
        ),
        60.0,
        ((tmp_path / "pocs").resolve(),),
    )
    assert (task.files, task.env, task.network) == ((), {}, False)
    assert pocs.options == PocOptions(
        triggered_if=TriggeredIf(
            sanitizer=False, signal=True, timeout=True, exit_codes=(3, 4), output_regex="boom"
        )
    )
    assert (functional.cases, functional.timeout) == (("make check",), 0.5)
    assert isinstance(build.timeout, float)


def test_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, 'source = "src"\n[checks.pocs]\nrun = "./poc"\n')
    task = load_task(path, CHECKS)
    pocs = task.checks["pocs"]
    assert (pocs.cases, pocs.timeout, pocs.options) == (
        ("./poc",),
        DEFAULT_TIMEOUT,
        PocOptions(triggered_if=TriggeredIf()),
    )
    assert DEFAULT_TIMEOUT == 3600.0


def test_a_task_without_checks_has_none(tmp_path: Path) -> None:
    path = _write(tmp_path, 'source = "src"\n')
    task = load_task(path, CHECKS)
    assert (task.path, task.source, task.checks) == (
        path.resolve(),
        (tmp_path / "src").resolve(),
        {},
    )
    assert (task.files, task.env, task.network, task.readable, task.writable) == (
        (),
        {},
        False,
        (),
        (),
    )
    assert (task.limits, task.image, task.pass_env, task.protected) == (Limits(), None, (), ())


def test_a_task_read_from_a_copy_of_its_folder(tmp_path: Path) -> None:
    """A read-only task folder is read from a copy (daemon/policies.py): what lies in the folder
    moves there, the source tree and what lies outside stay; the task itself is unchanged."""
    tmp_path = tmp_path.resolve()
    outside, folder, copy = tmp_path / "outside", tmp_path / "task", tmp_path / "copy"
    outside.mkdir()
    folder.mkdir()
    text = f'source = "{outside}"\nfiles = ["pocs"]\n[checks.intent]\nfiles = ["{outside}"]\n'
    task = load_task(_write(folder, text + 'run = "t"\n'), CHECKS)
    moved = task.moved(copy)
    assert (moved.path, moved.directory, moved.files) == (
        copy / "task.toml",
        copy,
        (copy / "pocs",),
    )
    assert (moved.source, moved.checks["intent"].files) == (outside, (outside,))
    assert (task.path, task.files) == (folder / "task.toml", (folder / "pocs",))
    tree = moved.model_copy(update={"source": tmp_path})  # as imagetree.py makes one
    assert (tree.path, tree.source, tree.files) == (moved.path, tmp_path, moved.files)


def test_task_given_as_folder_or_file(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    assert find_task_file(tmp_path) == tmp_path / "task.toml"
    assert find_task_file(path) == path
    assert load_task(tmp_path, CHECKS) == load_task(path, CHECKS)


def test_a_file_with_another_name(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    path = tmp_path / "other.toml"
    path.write_text('source = "src"\n')
    assert load_task(path, CHECKS).path == path.resolve()


def test_relative_source_is_from_the_files_folder_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_dir = tmp_path / "task"
    (task_dir / "tree" / "project").mkdir(parents=True)
    (task_dir / "task.toml").write_text('source = "tree/../tree/project"\n')
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "tree" / "project").mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    assert load_task(Path("../task"), CHECKS).source == (task_dir / "tree" / "project").resolve()


def test_absolute_source(tmp_path: Path) -> None:
    tree = tmp_path / "abs-tree"
    tree.mkdir()
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "task.toml").write_text(f'source = "{tree}"\n')
    assert load_task(folder, CHECKS).source == tree.resolve()


def test_an_empty_cases_list_is_a_check_with_no_cases(tmp_path: Path) -> None:
    path = _write(tmp_path, 'source = "src"\n[checks.pocs]\ncases = []\n')
    assert load_task(path, CHECKS).checks["pocs"].cases == ()


def test_not_toml(tmp_path: Path) -> None:
    path = (tmp_path / "task.toml").resolve()
    assert _error(tmp_path, 'source = "src\n') == (
        f"{path}: not valid TOML: Illegal character '\\n' (at line 1, column 14)"
    )


def test_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_bytes(b'source = "\xff"\n')
    with pytest.raises(ConfigError) as caught:
        load_task(tmp_path, CHECKS)
    path = (tmp_path / "task.toml").resolve()
    assert str(caught.value) == (
        f"{path}: cannot read: 'utf-8' codec can't decode byte 0xff in position 10: "
        "invalid start byte"
    )


def test_missing_file_in_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_task(tmp_path, CHECKS)
    assert str(caught.value) == f"{(tmp_path / 'task.toml').resolve()}: no such task file"


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "task.toml"
    with pytest.raises(ConfigError) as caught:
        load_task(missing, CHECKS)
    assert str(caught.value) == f"{missing.resolve()}: no such task file"


BAD = [
    ('source = "src"\nsauce = 1\n', "sauce: unknown key"),
    ('source = "src"\nzeta = 1\nalpha = 2\n', "alpha: unknown key"),
    ('[checks.build]\nrun = "make"\n', "source: must be the path of the source tree"),
    ('source = ""\n', "source: must be the path of the source tree"),
    ("source = 3\n", "source: must be the path of the source tree"),
    ('source = "src"\nchecks = 3\n', "checks: must be a table of check tables"),
    ('source = "src"\n[checks]\nbuild = "make"\n', "checks.build: must be a table"),
    (
        'source = "src"\n[checks.lint]\nrun = "x"\n',
        "checks.lint: unknown check (known: build, pocs, intent, functional)",
    ),
    ('source = "src"\n[checks.build]\ncomand = "make"\n', "checks.build.comand: unknown key"),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ncomand = "make"\n',
        "checks.build.comand: unknown key",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ncases = ["make"]\n',
        "checks.build.run: give exactly one of 'run' (one case) or 'cases' (a list)",
    ),
    (
        'source = "src"\n[checks.build]\ntimeout = 5\n',
        "checks.build.run: give exactly one of 'run' (one case) or 'cases' (a list)",
    ),
    (
        'source = "src"\n[checks.pocs]\ncases = "./poc"\n',
        "checks.pocs.cases: must be a list of commands",
    ),
    (
        'source = "src"\n[checks.pocs]\ncases = ["./poc", ""]\n',
        "checks.pocs.cases: every command must be a non-empty string",
    ),
    (
        'source = "src"\n[checks.pocs]\ncases = ["./poc", "  "]\n',
        "checks.pocs.cases: every command must be a non-empty string",
    ),
    (
        'source = "src"\n[checks.pocs]\ncases = ["./poc", 3]\n',
        "checks.pocs.cases: every command must be a non-empty string",
    ),
    (
        'source = "src"\n[checks.build]\nrun = ""\n',
        "checks.build.run: every command must be a non-empty string",
    ),
    (
        'source = "src"\n[checks.build]\nrun = ["make"]\n',
        "checks.build.run: every command must be a non-empty string",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = 0\n',
        "checks.build.timeout: must be greater than 0 (got 0)",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = -5\n',
        "checks.build.timeout: must be greater than 0 (got -5)",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = -0.5\n',
        "checks.build.timeout: must be greater than 0 (got -0.5)",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = inf\n',
        "checks.build.timeout: must be a finite number of seconds (got inf)",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = nan\n',
        "checks.build.timeout: must be a finite number of seconds (got nan)",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = "60"\n',
        "checks.build.timeout: must be a number of seconds (got '60')",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntimeout = true\n',
        "checks.build.timeout: must be a number of seconds (got True)",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { output_regex = "(" }\n',
        "checks.pocs.triggered_if.output_regex: not a regular expression: "
        "missing ), unterminated subpattern at position 0",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { sanitiser = true }\n',
        "checks.pocs.triggered_if.sanitiser: unknown key",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = "always"\n',
        "checks.pocs.triggered_if: must be a table (got 'always')",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { exit_codes = 1 }\n',
        "checks.pocs.triggered_if.exit_codes: must be a list (got 1)",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { exit_codes = [1.5] }\n',
        "checks.pocs.triggered_if.exit_codes.0: must be a whole number (got 1.5)",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { signal = "maybe" }\n',
        "checks.pocs.triggered_if.signal: must be true or false (got 'maybe')",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { timeout = "yes" }\n',
        "checks.pocs.triggered_if.timeout: must be true or false (got 'yes')",
    ),
    (
        'source = "src"\n[checks.pocs]\nrun = "./poc"\ntriggered_if = { output_regex = 5 }\n',
        "checks.pocs.triggered_if.output_regex: must be a string (got 5)",
    ),
    (
        'source = "src"\n[checks.build]\nrun = "make"\ntriggered_if = { signal = true }\n',
        "checks.build.triggered_if: unknown key",
    ),
    (
        'source = "src"\n[checks.intent]\nrun = "t"\ntriggered_if = { signal = true }\n',
        "checks.intent.triggered_if: unknown key",
    ),
]


@pytest.mark.parametrize(("text", "problem"), BAD, ids=[problem for _, problem in BAD])
def test_bad_file(tmp_path: Path, text: str, problem: str) -> None:
    assert _error(tmp_path, text) == f"{(tmp_path / 'task.toml').resolve()}: {problem}"


def test_source_missing(tmp_path: Path) -> None:
    missing = (tmp_path / "gone").resolve()
    assert _error(tmp_path, 'source = "gone"\n') == (
        f"{(tmp_path / 'task.toml').resolve()}: source: {missing} is not a directory"
    )


def test_source_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    assert _error(tmp_path, 'source = "afile"\n') == (
        f"{(tmp_path / 'task.toml').resolve()}: source: "
        f"{(tmp_path / 'afile').resolve()} is not a directory"
    )


def test_the_first_bad_key_of_a_table_is_named_in_file_order(tmp_path: Path) -> None:
    text = 'source = "src"\n[checks.build]\nzzz = 1\naaa = 2\nrun = "make"\n'
    assert _error(tmp_path, text) == (
        f"{(tmp_path / 'task.toml').resolve()}: checks.build.zzz: unknown key"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            'files = "pocs"\n',
            "files: must be a list of paths (relative to the task folder, or absolute)",
        ),
        ('files = ["nope"]\n', "files: nope: no such file or folder ({tmp}/nope)"),
        ('files = ["."]\n', "files: .: the task folder and task.toml are never readable by a case"),
        (
            'files = ["task.toml"]\n',
            "files: task.toml: the task folder and task.toml are never readable by a case",
        ),
        ('files = ["p\\u0000"]\n', "files: must not contain a NUL character"),
        ("env = 3\n", 'env: must be a table of NAME = "value"'),
        ('env = { "1X" = "y" }\n', "env.1X: must be a variable name with a string value"),
        ("env = { X = 1 }\n", "env.X: must be a variable name with a string value"),
        (
            'env = { SSE_DIFFICULTY = "0" }\n',
            "env.SSE_DIFFICULTY: SSE_ variables are ssebench's own",
        ),
        ('network = "yes"\n', "network: must be true or false (got 'yes')"),
        (
            '[checks.pocs]\nfiles = ["nope"]\nrun = "true"\n',
            "checks.pocs.files: nope: no such file or folder ({tmp}/nope)",
        ),
        ('readable = "/usr"\n', "readable: must be a list of absolute paths"),
        (
            'readable = ["pocs"]\n',
            "readable: pocs: must be an absolute path (task files are `files`)",
        ),
        ('readable = ["/nope/x"]\n', "readable: /nope/x: no such file or folder (/nope/x)"),
        (
            'readable = ["{tmp}/pocs"]\n',
            "readable: {tmp}/pocs: is in the task folder: task files are `files`, granted by level",
        ),
        ('protected = "tests/"\n', "protected: must be a list of paths of the source tree"),
        ('protected = [""]\n', "protected: must be a list of paths of the source tree"),
        ('protected = ["../x"]\n', "protected: ../x: must be a path inside the source tree"),
        ('protected = ["!a/../b"]\n', "protected: !a/../b: must be a path inside the source tree"),
        ('protected = ["#x"]\n', "protected: '#x': empty or a comment, not a path"),
        ('protected = ["[z-a]"]\n', "protected: [z-a]: not a valid glob"),
        ('protected = ["a\\nb"]\n', "protected: 'a\\nb': a glob is one line, without NUL"),
        ("limits = 3\n", "limits: must be a table, e.g. { processes = 4096, memory_mb = 16384 }"),
        (
            "limits = { cpus = 2 }\n",
            "limits.cpus: unknown limit "
            "(known: processes, memory_mb, open_files, disk_mb, tree_mb)",
        ),
        (
            "limits = { processes = 0 }\n",
            "limits.processes: must be a whole number above 0 (got 0)",
        ),
        (
            "limits = { memory_mb = true }\n",
            "limits.memory_mb: must be a whole number above 0 (got True)",
        ),
    ],
)
def test_files_env_and_network_errors_are_one_line(tmp_path: Path, text: str, error: str) -> None:
    text, error = (part.replace("{tmp}", str(tmp_path)) for part in (text, error))
    assert _error(tmp_path, f'source = "src"\n{text}') == (f"{tmp_path / 'task.toml'}: {error}")


def test_a_source_tree_holding_the_task_is_refused(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text('source = "."\n')
    assert _error(tmp_path, 'source = "."\n') == (
        f"{tmp_path / 'task.toml'}: source: {tmp_path} holds the task folder; the task must lie "
        "outside it"
    )


def test_readable_paths_and_limits_load(tmp_path: Path) -> None:
    path = _write(
        tmp_path, 'source = "src"\nreadable = ["/usr/share"]\nlimits = { memory_mb = 512 }\n'
    )
    task = load_task(path, CHECKS)
    assert (task.readable, task.limits) == ((Path("/usr/share"),), Limits(memory_mb=512))
    assert load_task(_write(tmp_path, 'source = "src"\n'), CHECKS).limits == Limits(
        processes=4096, memory_mb=16384, open_files=65536
    )


def test_a_link_inside_a_declared_folder_is_part_of_it(tmp_path: Path) -> None:
    """A venv's bin/python points out of the venv: naming it is naming the declared venv."""
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "intent").symlink_to(tmp_path / "elsewhere")
    text = (
        'source = "src"\nfiles = ["venv"]\n[checks.build]\n'
        'run = "$SSE_TASK_DIR/venv/bin/python -m x"\n'
        '[checks.intent]\nfiles = ["intent"]\nrun = "sh $SSE_TASK_DIR/intent/t.sh"\n'
    )
    task = load_task(_write(tmp_path, text), CHECKS)
    assert task.files == (tmp_path / "venv",)  # as cases name it, not where it leads
    assert task.checks["intent"].files == (tmp_path / "intent",)
    assert _error(tmp_path, text.replace('files = ["venv"]\n', "")) == (
        f"{tmp_path / 'task.toml'}: checks.build: case 0 names $SSE_TASK_DIR/venv/bin/python, "
        "which is in neither this check's files nor the top-level files"
    )


# --- env: the task's and the source's folders expand, nothing else -------------------------------


def test_env_expands_the_task_and_source_folders_and_nothing_else(tmp_path: Path) -> None:
    """A Node task: its node_modules beside the source are found in place by Node's upward
    lookup, but not from a grading copy elsewhere; NODE_PATH names them wherever the tree is."""
    (tmp_path / "node_modules").mkdir()
    text = (
        'source = "src"\nfiles = ["node_modules"]\n'
        'env = { NODE_PATH = "$SSE_TASK_DIR/node_modules", '
        'OUT = "${SSE_SOURCE_DIR}/build:$SSE_SOURCE_DIR", '
        'KEEP = "$HOME ${HOME} $SSE_TASK_DIRX ${SSE_TASK_DIR_2} $SSE_SOURCE_DIR_X" }\n'
    )
    task = load_task(_write(tmp_path, text), CHECKS)
    src = tmp_path / "src"
    assert task.case_env(str(src)) == {
        "NODE_PATH": f"{tmp_path}/node_modules",
        "OUT": f"{src}/build:{src}",
        "KEEP": "$HOME ${HOME} $SSE_TASK_DIRX ${SSE_TASK_DIR_2} $SSE_SOURCE_DIR_X",
    }
    assert task.env["NODE_PATH"] == "$SSE_TASK_DIR/node_modules"  # as written
    copy = str(tmp_path / "runner-copy")  # where the case sees its tree
    assert task.case_env(copy)["OUT"] == f"{copy}/build:{copy}"


def test_env_naming_a_task_path_no_case_may_read_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    text = 'source = "src"\nenv = { NODE_PATH = "${SSE_TASK_DIR}/node_modules" }\n'
    assert _error(tmp_path, text) == (
        f"{tmp_path / 'task.toml'}: env.NODE_PATH: names $SSE_TASK_DIR/node_modules, which is in "
        "neither a check's files nor the top-level files"
    )
    pocs_only = 'source = "src"\nenv = { P = "$SSE_TASK_DIR/node_modules" }\n'
    pocs_only += '[checks.pocs]\nfiles = ["node_modules"]\nrun = "true"\n'
    assert load_task(_write(tmp_path, pocs_only), CHECKS).case_env("/t") == {
        "P": f"{tmp_path}/node_modules"
    }


def test_image_names_the_tasks_environment(tmp_path: Path) -> None:
    assert load_task(_write(tmp_path, 'source = "src"\n'), CHECKS).image is None
    text = 'source = "src"\nimage = "registry.example/tasks/c-rle:1"\n'
    assert load_task(_write(tmp_path, text), CHECKS).image == "registry.example/tasks/c-rle:1"


@pytest.mark.parametrize(
    ("image", "shown"),
    [('""', "''"), ('"--privileged"', "'--privileged'"), ('"a b"', "'a b'"), ("3", "3"),
     ('["x"]', "['x']")],
)  # fmt: skip
def test_an_image_that_is_no_image_name_is_one_line(tmp_path: Path, image: str, shown: str) -> None:
    assert _error(tmp_path, f'source = "src"\nimage = {image}\n') == (
        f'{tmp_path / "task.toml"}: image: must be a Docker image name, e.g. "debian:12" '
        f"(got {shown})"
    )


# --- the models themselves ------------------------------------------------------------------


def test_the_models_forbid_unknown_keys_and_speak_our_words(tmp_path: Path) -> None:
    """Each one-line message is ours, never pydantic's ("Input should be ...")."""
    from ssebench.daemon.checktable import CheckTable
    from ssebench.daemon.task import Task

    assert CheckTable.model_config["extra"] == Task.model_config["extra"] == "forbid"
    for text in ['source = "src"\nnetwork = 1\n', 'source = "src"\n[checks.build]\nrun = 1\n',
                 'source = "src"\nlimits = { processes = "x" }\n', "source = []\n"]:  # fmt: skip
        message = _error(tmp_path, text)
        assert "Input should" not in message and "Value error" not in message, message


def test_protected_globs_load_as_written(tmp_path: Path) -> None:
    text = 'source = "src"\nprotected = ["tests/**", "/Makefile", "!tests/data/gen.c"]\n'
    task = load_task(_write(tmp_path, text), CHECKS)
    assert task.protected == ("tests/**", "/Makefile", "!tests/data/gen.c")
    assert load_task(_write(tmp_path, 'source = "src"\n'), CHECKS).protected == ()
