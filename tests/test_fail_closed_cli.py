"""Fail closed, the command side: options checked by click types, ids from the log printed escaped,
`validate`'s exit codes, library warnings kept off stderr, environment faults named (never an
internal error), `sql -o` and `report` on a failing disk, and `sql --safe` (E-82..E-86).

Most tests call the console-script entry point `evalbatch.cli.main` in process; the warning tests
start the installed script, since only a real process shows what reaches a user's stderr.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

import evalbatch
from evalbatch.cli import cli
from evalbatch.commands import sql as sql_command
from evalbatch.commands.types import MemoryLimit
from tests.helpers import (
    ROOT,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    make_suite,
    run_evalbatch,
    run_main,
    run_python,
    standard_run,
    write_events,
    write_json,
)

#: a slow family (every command's exit codes, end to end):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

#: a run id with an escape sequence (a terminal title), a colour, a newline and a NUL
HOSTILE_RUN = "acme/\x1b]0;owned\x07run-\x1b[31mred\nline\x00nul"
#: what must never reach a terminal raw
RAW = ("\x1b", "\x07", "\x00", "red\nline")


def assert_named(out: str, err: str) -> None:
    """No traceback and no internal error: the fault was named."""
    for text in (out, err):
        assert "Traceback" not in text, text
        assert "internal error" not in text, text


def assert_escaped(text: str) -> None:
    for raw in RAW:
        assert raw not in text, (raw, text)


# --------------------------------------------------------------------------------------------
# Options: click types (E-82)


@pytest.mark.parametrize(
    "args",
    [
        ["run", SAMPLE_EVENTS, "--memory-limit", "lots"],
        ["run", SAMPLE_EVENTS, "--memory-limit", "4 GB extra"],
        ["run", SAMPLE_EVENTS, "--memory-limit", "-4GB"],
        ["run", SAMPLE_EVENTS, "--memory-limit", "1e400GB"],
        ["run", SAMPLE_EVENTS, "--memory-limit", "0GB"],
        ["run", SAMPLE_EVENTS, "--memory-limit", "100KB"],
        ["run", SAMPLE_EVENTS, "--default-pass-score", "nan"],
        ["verify", SAMPLE_EVENTS, "--default-pass-score", "nan"],
        ["sql", SAMPLE_EVENTS, "--memory-limit", "150%", "-e", "SELECT 1"],
        ["sql", SAMPLE_EVENTS, "--threads", "99999999999999999999", "-e", "SELECT 1"],
        ["explain", SAMPLE_EVENTS, "--run-id", "x", "--memory-limit", "lots"],
        ["explain", SAMPLE_EVENTS, "--run-id", "x", "--default-pass-score", "nan"],
        ["export", "eee", "out", "--model-id", "a/b", "--org", "x", "--retrieved-at", "nan"],
        ["export", "eee", "out", "--model-id", "a/b", "--org", "x", "--retrieved-at", "inf"],
        ["export", "eee", "out", "--model-id", "a/b", "--org", "x", "--retrieved-at", "-1"],
        ["export", "otel", "out", "--memory-limit", "lots"],
    ],
    ids=[
        "run-memory-lots",
        "run-memory-trailing-words",
        "run-memory-negative",
        "run-memory-too-large",
        "run-memory-zero",
        "run-memory-below-1MB",
        "run-pass-score-nan",
        "verify-pass-score-nan",
        "sql-memory-percent-over-100",
        "sql-threads-overflow",
        "explain-memory-lots",
        "explain-pass-score-nan",
        "eee-retrieved-at-nan",
        "eee-retrieved-at-inf",
        "eee-retrieved-at-negative",
        "otel-memory-lots",
    ],
)
def test_e82_bad_option_values_are_usage_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str | Path],
) -> None:
    """E-82: a value an option cannot use is click's usage error (exit 2, "Invalid
    value for '--option'"), before anything is read or written, never an internal error or a
    silently accepted NaN."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert code == 2, (out, err)
    assert "Invalid value for '--" in err, err
    assert_named(out, err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "size", ["4GB", "4 GB", "500MiB", "1.5GB", "1.5 gigabytes", "80%", "0.5%", "2TB", "1e3MB"]
)
def test_e82_memory_limit_takes_duckdb_sizes_and_percentages(size: str) -> None:
    """E-82: what DuckDB's memory_limit takes, a number and one unit or a percentage, passes
    through as written, and DuckDB takes it."""
    assert MemoryLimit().convert(f" {size} ", None, None) == size
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit = $limit", {"limit": size})
    finally:
        con.close()


def test_e82_memory_limit_reaches_duckdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-82: an accepted --memory-limit is the one DuckDB uses (sql reads it back)."""
    code, out, err = run_main(
        monkeypatch,
        capsys,
        "sql",
        SAMPLE_EVENTS,
        "--memory-limit",
        "500MiB",
        "--format",
        "csv",
        "-e",
        "SELECT current_setting('memory_limit') AS m",
    )
    assert code == 0, err
    assert out.splitlines()[1] == "500.0 MiB"


def test_e83_out_of_memory_is_named_not_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-83: DuckDB running out of memory under a too small --memory-limit is one line saying
    so and which options help, exit 2; no internal error."""
    code, out, err = run_main(
        monkeypatch,
        capsys,
        "run",
        SAMPLE_EVENTS,
        "--suites",
        SAMPLE_SUITES,
        "--out",
        tmp_path / "out",
        "--memory-limit",
        "1MB",
        "--threads",
        "1",
    )
    assert code == 2
    assert err.startswith("evalbatch: out of memory") and "--memory-limit" in err, err
    assert_named(out, err)


#: each command of `evalbatch` with arguments that name no usable input (a missing path)
UNUSABLE_ARGS: dict[str, list[str]] = {
    "run": ["{missing}", "--out", "{tmp}/out"],
    "validate": ["{missing}"],
    "regress": ["{missing}", "{missing}"],
    "verify": ["{missing}"],
    "ingest": ["{missing}", "--out", "{tmp}/ingested"],
    "sql": ["{missing}", "-e", "SELECT 1"],
    "explain": ["{missing}", "--run-id", "acme/run-0001"],
    "report": ["{missing}"],
    "history": ["{missing}"],
    "export otel": ["{missing}"],
    "export eee": ["{missing}", "--model-id", "acme/agent", "--org", "acme"],
    "suite infer": ["{missing}", "--out", "{tmp}/inferred.json"],
}


def _leaf_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= _leaf_commands(command, f"{prefix}{name} ")
        else:
            found[f"{prefix}{name}"] = command
    return found


def test_e83_every_command_is_walked_for_its_fault_line() -> None:
    """A guard on the next test: a command added to `evalbatch` must be added to it too."""
    assert sorted(_leaf_commands(cli)) == sorted(UNUSABLE_ARGS)


@pytest.mark.parametrize("path", sorted(UNUSABLE_ARGS))
def test_e83_a_command_stops_on_a_fault_the_same_way_however_invoked(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-83, CONTRACT §6: unusable input is one line `evalbatch: ...` and exit code 2, whether
    the command starts as `evalbatch` (`main()`) or is invoked on its own through click's runner
    (a notebook, a test), where `main()`'s handling does not run; never a traceback."""
    args = [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in UNUSABLE_ARGS[path]]
    code, out, err = run_main(monkeypatch, capsys, *path.split(), *args)
    alone = CliRunner().invoke(_leaf_commands(cli)[path], args)
    assert code == 2, err
    assert err.startswith("evalbatch: ") and err.count("\n") == 1, err
    assert_named(out, err)
    assert (alone.exit_code, alone.stdout, alone.stderr) == (code, out, err)
    assert alone.exception is None or isinstance(alone.exception, SystemExit)


# --------------------------------------------------------------------------------------------
# Ids from the log are printed escaped


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """Events of a clean run whose id holds control characters, and of a second such run with a
    conflict (a skipped run: its problem message names it); a suite for both; their outputs."""
    clean = standard_run(HOSTILE_RUN)
    broken = standard_run(HOSTILE_RUN + "-2")
    broken.rows[3] = {**broken.rows[3], "sequence": 1}  # two rows with one sequence, D-3
    events = write_events(tmp_path / "events" / "a.parquet", clean.rows + broken.rows)
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    return {"events": events.parent, "suites": suites, "out": tmp_path / "out"}


def test_e83_run_prints_ids_escaped_and_writes_them_raw(
    hostile: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-83: `run`'s table and its `skipped:` lines show run ids escaped (`\\x1b`, `\\n`,
    `\\x00`); the outputs keep them as they are in the log."""
    code, out, err = run_main(
        monkeypatch,
        capsys,
        "run",
        hostile["events"],
        "--suites",
        hostile["suites"],
        "--out",
        hostile["out"],
    )
    assert code == 3, (out, err)
    assert_escaped(out)
    assert_escaped(err)
    assert "acme/\\x1b]0;owned\\x07run-\\x1b[31mred\\nline\\x00nul" in out
    assert "skipped: run acme/\\x1b]0;owned" in err
    runs = pl.read_parquet(hostile["out"] / "runs.parquet")
    assert HOSTILE_RUN in runs["run_id"].to_list()


def test_e83_verify_explain_sql_print_ids_escaped(
    hostile: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-83: `verify`'s tables, `explain`'s text and `sql`'s table show ids escaped; their
    JSON output stays JSON (control characters escaped by JSON itself)."""
    given = [hostile["events"], "--suites", hostile["suites"]]
    code, out, err = run_main(monkeypatch, capsys, "verify", *given)
    assert code in (0, 1, 3), err
    assert "\\x1b]0;owned" in out
    assert_escaped(out + err)

    code, out, err = run_main(monkeypatch, capsys, "explain", *given, "--run-id", HOSTILE_RUN)
    assert code == 0, err
    assert "\\x1b]0;owned" in out
    assert_escaped(out + err)

    query = "SELECT run_id, 'a' || chr(27) || '[2J' || chr(10) AS cell FROM runs"
    code, out, err = run_main(monkeypatch, capsys, "sql", *given, "-e", query)
    assert code == 0, err
    assert "\\x1b]0;owned" in out and "a\\x1b[2J\\n" in out
    assert_escaped(out + err)

    code, out, err = run_main(monkeypatch, capsys, "sql", *given, "--format", "json", "-e", query)
    assert code == 0, err
    assert HOSTILE_RUN in [row["run_id"] for row in json.loads(out)]


def test_e83_file_names_printed_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-83: file names from the command line are printed escaped by `validate`, `export`
    and the errors every command shows."""
    name = "suite\x1b]0;owned\x07\nx.json"
    write_json(tmp_path / name, make_suite())
    code, out, err = run_main(monkeypatch, capsys, "validate", tmp_path / name)
    assert code == 0, err
    assert "suite\\x1b]0;owned\\x07\\nx.json: ok" in out
    assert_escaped(out + err)

    code, out, err = run_main(monkeypatch, capsys, "validate", tmp_path / ("gone" + name))
    assert code == 2
    assert "gonesuite\\x1b]0;owned" in err
    assert_escaped(out + err)

    graded = tmp_path / "out"
    code, out, err = run_main(
        monkeypatch, capsys, "run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", graded
    )
    assert code == 0, err
    target = tmp_path / "eee\x1b]0;owned\x07\n.jsonl"
    code, out, err = run_main(
        monkeypatch,
        capsys,
        *("export", "eee", graded, "--model-id", "a/b", "--org", "x", "--out", target),
    )
    assert code == 0, err
    assert target.is_file()
    assert_escaped(out + err)


# --------------------------------------------------------------------------------------------
# validate's exit codes (E-85)


@pytest.mark.parametrize(
    "doc",
    [
        {"version": "1.0.0"},
        {"suiteId": "acme.x"},
        {"suiteId": 7, "version": "1.0.0"},
        ["a"],
        {"suiteId": "", "version": "1.0.0"},
        {"suiteId": "acme.x.evals.y", "version": ""},
    ],
    ids=[
        "no-suiteId",
        "no-version",
        "suiteId-not-a-string",
        "not-an-object",
        "suiteId-empty",
        "version-empty",
    ],
)
def test_e85_validate_unmatchable_suite_is_invalid_exit_1(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    doc: Any,
) -> None:
    """E-85: a JSON document without a string suiteId or version is an invalid suite
    (exit 1), its faults printed with their JSON paths like any other; the valid suite beside it
    is still checked."""
    write_json(tmp_path / "suites" / "a.json", make_suite())
    write_json(tmp_path / "suites" / "b.json", doc)
    code, out, err = run_main(monkeypatch, capsys, "validate", tmp_path / "suites")
    assert code == 1, (out, err)
    assert f"{tmp_path / 'suites' / 'a.json'}: ok" in out
    assert f"{tmp_path / 'suites' / 'b.json'}: error: $" in out
    assert_named(out, err)


def test_e85_validate_path_without_suites_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-85: a directory holding no suite file checked nothing: exit 2 with a message
    naming it, never 0 in silence (also beside a valid suite)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a suite")
    code, out, err = run_main(monkeypatch, capsys, "validate", empty)
    assert code == 2
    assert err == f"evalbatch: no suite file found in {empty} (no *.json in it)\n"
    code, out, err = run_main(monkeypatch, capsys, "validate", SAMPLE_SUITES, empty)
    assert code == 2
    assert f"no suite file found in {empty}" in err and ": ok" in out


def test_e85_validate_help_and_docs_agree() -> None:
    """E-85: `validate --help` and its page, docs/validate.md, state the same exit codes."""
    from click.testing import CliRunner

    from evalbatch.cli import cli

    help_text = " ".join(CliRunner().invoke(cli, ["validate", "--help"]).output.split())
    page = " ".join((ROOT / "docs" / "validate.md").read_text(encoding="utf-8").split())
    assert (
        "1 some suite is invalid (a fault of the schema or the suite rules, no suiteId" in help_text
    )
    assert "2 a file cannot be read as JSON, or a path holds no suite file" in help_text
    assert "`1` some suite is invalid (a fault of the schema or the suite rules, no" in page
    assert "`2` a file cannot be read as JSON, or a path holds no suite file" in page


# --------------------------------------------------------------------------------------------
# Library warnings never reach a user's stderr (E-84)


def _console(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_evalbatch(*args, env=env)


@pytest.fixture(scope="module")
def odd_outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples' outputs with a hand-edited summaries.jsonl whose numbers are 1e308: drawing
    them makes numpy and matplotlib warn."""
    out = tmp_path_factory.mktemp("odd") / "out"
    graded = _console("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out, "--quiet")
    assert graded.returncode == 0, graded.stderr
    path = out / "summaries.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        summary = line["summary"]
        summary["aggregateScore"] = summary["totalCostUsd"] = 1e308
        for task in summary["tasks"]:
            task["score"] = task["costUsd"] = task["latencyMs"] = 1e308
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return out


def test_e84_library_warnings_stay_off_stderr(odd_outputs: Path, tmp_path: Path) -> None:
    """E-84: `report` over numbers that make numpy (RuntimeWarning) and matplotlib
    (UserWarning, log records) warn prints only its own line on stderr: nothing. With
    EVALBATCH_DEBUG=1 the warnings are shown."""
    quiet = _console("report", odd_outputs, "--out", tmp_path / "r.html")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    loud = _console(
        "report", odd_outputs, "--out", tmp_path / "r2.html", env={"EVALBATCH_DEBUG": "1"}
    )
    assert loud.returncode == 0
    assert "Warning" in loud.stderr


def test_e84_matplotlib_config_message_stays_off_stderr(odd_outputs: Path, tmp_path: Path) -> None:
    """E-84: with a home matplotlib cannot write its cache to, its log record (a temporary cache
    directory was created) does not reach stderr."""
    home = tmp_path / "home"
    home.write_text("a file, not a directory")
    env = {"HOME": str(home), "MPLCONFIGDIR": "", "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": ""}
    graded = _console("report", odd_outputs, "--out", tmp_path / "r.html", env=env)
    assert graded.returncode == 0
    assert graded.stderr == "", graded.stderr


@pytest.mark.parametrize(
    "emit",
    [
        "import polars.exceptions as e, warnings; warnings.warn('slow', e.PerformanceWarning)",
        "import numpy as np; np.float64(1) / np.float64(0)",
        "import logging; logging.getLogger('matplotlib').warning('posx should be finite')",
    ],
    ids=["polars", "numpy", "matplotlib-log"],
)
def test_e84_main_routes_library_warnings(emit: str, tmp_path: Path) -> None:
    """E-84: whatever a library warns or logs while a command runs goes to the logging system
    `main()` set up, not to stderr."""
    script = (
        "import sys, click\n"
        "from evalbatch import cli\n"
        "@cli.cli.command(name='noisy')\n"
        "def noisy():\n"
        f"    {emit}\n"
        "    click.echo('done')\n"
        "sys.argv = ['evalbatch', 'noisy']\n"
        "cli.main()\n"
    )
    run = run_python(script)
    assert (run.returncode, run.stdout, run.stderr) == (0, "done\n", "")


# --------------------------------------------------------------------------------------------
# Writing: a failing disk is exit 4, nothing left behind (E-83)


def _no_space(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(args[0]), None, str(args[-1]))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("graded") / "out"
    done = _console("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    return out


def test_e83_report_on_a_full_disk_is_exit_4(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """E-83: `report` whose page cannot be put in place (ENOSPC) exits 4 with a line
    naming the page; no temporary file is left and no page appears."""
    target = tmp_path / "pages" / "report.html"
    monkeypatch.setattr(os, "replace", _no_space)
    code, out, err = run_main(monkeypatch, capsys, "report", graded, "--out", target)
    assert code == 4, (out, err)
    assert str(target) in err and "No space left on device" in err
    assert_named(out, err)
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_e83_sql_output_on_a_full_disk_is_exit_4(
    fmt: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """E-83: `sql -o FILE` when the disk fills mid-write exits 4 naming FILE, and
    leaves neither FILE nor its temporary file."""

    def half_then_full(*args: Any) -> None:
        out = next(a for a in args if hasattr(a, "write"))
        out.write("id\n1\n")
        out.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    for name in ("_write_table", "_write_csv", "_write_json"):
        monkeypatch.setattr(sql_command, name, half_then_full)
    target = tmp_path / "results" / f"rows.{fmt}"
    target.parent.mkdir()
    code, out, err = run_main(
        monkeypatch, capsys, "sql", SAMPLE_EVENTS, "--format", fmt, "-o", target, "-e", "SELECT 1"
    )
    assert code == 4, (out, err)
    assert str(target) in err and "No space left on device" in err
    assert_named(out, err)
    assert list(target.parent.iterdir()) == []


def test_e83_sql_output_unwritable_is_exit_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-83: `sql -o FILE` in a directory that may not be written (EACCES) exits 4
    naming FILE; nothing is written."""
    import tempfile

    def denied(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), kwargs.get("dir"))

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    target = tmp_path / "rows.csv"
    code, out, err = run_main(
        monkeypatch, capsys, "sql", SAMPLE_EVENTS, "--format", "csv", "-o", target, "-e", "SELECT 1"
    )
    assert code == 4, (out, err)
    assert str(target) in err and "Permission denied" in err
    assert_named(out, err)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------
# sql --safe and connect(safe=True) (E-86)


@pytest.fixture(scope="module")
def safe_con() -> Any:
    con = evalbatch.connect(SAMPLE_EVENTS, suites=SAMPLE_SUITES, safe=True)
    yield con
    con.close()


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT * FROM trials) TO '{tmp}/trials.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_parquet('{events}/*.parquet')",
        "ATTACH '{tmp}/other.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        "EXPORT DATABASE '{tmp}/dump'",
    ],
    ids=[
        "copy-to",
        "read-csv",
        "read-text",
        "read-parquet",
        "attach",
        "install",
        "load",
        "reenable",
        "unlock",
        "export-database",
    ],
)
def test_e86_safe_connection_refuses_files_and_extensions(
    safe_con: Any, tmp_path: Path, statement: str
) -> None:
    """E-86: in safe mode DuckDB reads and writes no file, attaches nothing, installs
    or loads no extension, and the setting cannot be turned back."""
    text = statement.format(tmp=tmp_path, events=SAMPLE_EVENTS)
    with pytest.raises(duckdb.Error):
        safe_con.execute(text)
    assert list(tmp_path.iterdir()) == []


def test_e86_safe_connection_holds_the_analyst_tables(safe_con: Any) -> None:
    """E-86: in safe mode every documented table and view answers as without it."""
    open_con = evalbatch.connect(SAMPLE_EVENTS, suites=SAMPLE_SUITES)
    try:
        names = [row[0] for row in open_con.execute("SELECT name FROM evalbatch_tables").fetchall()]
        assert {"event_log", "tool_calls", "usage", "trials", "trial_segments"} <= set(names)
        for name in names:
            query = f'SELECT * FROM "{name}" ORDER BY ALL'
            assert safe_con.execute(query).fetchall() == open_con.execute(query).fetchall(), name
    finally:
        open_con.close()


def test_e86_sql_safe_runs_queries_and_refuses_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-86: `evalbatch sql --safe` answers a query over the analyst views and
    refuses a COPY to a file (exit 2, DuckDB's permission error on one line)."""
    given = [SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--safe", "--format", "csv"]
    code, out, err = run_main(
        monkeypatch, capsys, "sql", *given, "-e", "SELECT count(*) AS n FROM event_log"
    )
    assert code == 0, err
    assert out.splitlines()[1] == "170"
    target = tmp_path / "stolen.csv"
    code, out, err = run_main(
        monkeypatch, capsys, "sql", *given, "-e", f"COPY (SELECT 1) TO '{target}'"
    )
    assert code == 2
    assert "Permission Error" in err and err.count("\n") == 1
    assert not target.exists()


def test_e86_sql_safe_refuses_parquet_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-86: DuckDB writes --format parquet itself, which --safe forbids: a usage error."""
    code, _, err = run_main(
        monkeypatch,
        capsys,
        *("sql", SAMPLE_EVENTS, "--safe", "--format", "parquet", "-o", tmp_path / "x.parquet"),
        *("-e", "SELECT 1"),
    )
    assert code == 2
    assert "--format parquet is written by DuckDB, which --safe keeps from files" in err
    assert list(tmp_path.iterdir()) == []


def test_e31_verify_with_a_skipped_file_is_not_all_agree(tmp_path: Path) -> None:
    """E-31: an event file verify could not read holds runs nobody checked, so the
    verdict cannot be "every run agrees" (exit 0): it is not-verified, exit 3, naming the file."""
    events = tmp_path / "events"
    shutil.copytree(SAMPLE_EVENTS, events)
    (events / "damaged.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    agreeing = ["--suites", str(SAMPLE_SUITES), "--run-id", "acme/run-fixture-miss-0001"]
    result = CliRunner().invoke(cli, ["verify", str(SAMPLE_EVENTS), *agreeing])
    assert result.exit_code == 0, result.output  # the run agrees when every file is read
    result = CliRunner().invoke(cli, ["verify", str(events), *agreeing])
    assert result.exit_code == 3, result.output
    assert "skipped file:" in result.stderr and "damaged.parquet" in result.stderr
    assert "verdict: not-verified" in result.stdout
    as_json = CliRunner().invoke(cli, ["verify", str(events), *agreeing, "--json"])
    assert as_json.exit_code == 3
    document = json.loads(as_json.stdout)
    assert document["verdict"] == "not-verified"
    assert [f["path"].endswith("damaged.parquet") for f in document["skippedFiles"]] == [True]


def test_h_an_unnamed_fault_prints_its_type_not_its_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """RFC 0244 §H, E-79: an exception's text may quote the data it choked on (a parser's
    message quotes the payload), so the last-resort line names the exception's type only."""

    def broken(paths: object) -> None:
        raise RuntimeError('could not parse {"tool": "crm:lookup-order-SECRET"}')

    monkeypatch.setattr("evalbatch.inputs.suites.validate_suite", broken)
    code, out, err = run_main(monkeypatch, capsys, "validate", SAMPLE_SUITES)
    assert code == 2
    assert "internal error: RuntimeError" in err
    assert "SECRET" not in out + err and "crm:" not in out + err


def test_e31_verify_with_no_run_recomputed_prints_its_tables(tmp_path: Path) -> None:
    """E-31: when no run could be recomputed (its suite invalid, here `trials.count` past
    the limit, E-78), no host field was compared: verify still prints its tables, empty tally
    included, and the run as not-verified, exit 3, never an internal error."""
    suite = json.loads((SAMPLE_SUITES / "trials.json").read_text())
    suite["trials"]["count"] = 1_000_000
    write_json(tmp_path / "suites" / "trials.json", suite)
    result = CliRunner().invoke(
        cli, ["verify", str(SAMPLE_EVENTS / "trials.parquet"), "--suites", str(tmp_path / "suites")]
    )
    assert result.exit_code == 3, result.output
    assert "not recomputed: suite-invalid" in result.stdout
    assert "verdict: not-verified" in result.stdout
