"""An output directory is a database (E-89).

`evalbatch.connect(OUT_DIR)` and `evalbatch sql OUT_DIR` open what `evalbatch run` wrote without
grading again, with the tables `connect(events, suites)` gives and the files' column types
(CONTRACT §4); event files given with it add the views over the events, nothing graded. Only the
analyst relations are listed by `SHOW TABLES`; the stage's own are in `evalbatch_internal`. A
directory whose files do not belong together is refused with one line naming the file (§6).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import evalbatch
from evalbatch.cli import cli
from evalbatch.errors import InputError
from evalbatch.outputs import outdir, output_format
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES, run_main

#: the graded tables, and the series made from them (E-96)
GRADED = ("runs", "tasks", "trials", "problems", "summaries", "history")
ANALYST = {*GRADED, "event_log", "trial_segments", "tool_calls", "usage"}
#: internals an analyst may still read by their qualified name, and near-synonyms of the
#: analyst views that used to be listed beside them
INTERNAL = (
    "events",
    "eval_runs",
    "trial_calls",
    "trial_usage",
    "tool_called_events",
    "usage_events",
    "span_calls",
    "duplicate_keys",
    "fixed_event_rows",
    "event_scan",
    "scan_rows",
    "source_group_0",
    "source_events",
)


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("db") / "nightly"
    evalbatch.write_outputs(SAMPLE_EVENTS, out, suites=SAMPLE_SUITES)
    return out


@pytest.fixture(scope="module")
def from_events() -> Iterator[duckdb.DuckDBPyConnection]:
    con = evalbatch.connect(SAMPLE_EVENTS, suites=SAMPLE_SUITES)
    yield con
    con.close()


@pytest.fixture
def no_grading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grading anything fails the test: an output directory is read, not regraded."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("graded again")

    monkeypatch.setattr("evalbatch.notebook.stage_pass", refuse)
    monkeypatch.setattr("evalbatch.notebook.collect", refuse)
    monkeypatch.setattr("evalbatch.pipeline.shard.grade_extracted", refuse)
    monkeypatch.setattr("evalbatch.pipeline.shard._grade_batch", refuse)


def listed(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {name for (name,) in con.execute("SHOW TABLES").fetchall()}


def rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


def types(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple[str, str]]:
    return [(name, kind) for name, kind, *_ in con.execute(f"DESCRIBE {query}").fetchall()]


# --------------------------------------------------------------------------------------------
# connect(out_dir)


@pytest.mark.usefixtures("no_grading")
def test_out_dir_holds_the_graded_tables_without_regrading(
    out_dir: Path, from_events: duckdb.DuckDBPyConnection
) -> None:
    """E-89: `connect(OUT_DIR)` needs no suite and grades nothing, yet holds the same
    rows and column types as `connect(events, suites)`."""
    con = evalbatch.connect(out_dir)
    try:
        for table in GRADED:
            assert rows(con, table) == rows(from_events, table), table
            assert types(con, table) == types(from_events, table), table
        assert listed(con) == {*GRADED, "evalbatch_tables"}
    finally:
        con.close()


def test_graded_column_types_are_the_files(
    out_dir: Path, from_events: duckdb.DuckDBPyConnection
) -> None:
    """E-94 and E-89: a graded table has in `connect` the column types its Parquet file
    has (output_format's), and `usage.usage_cost_usd` the type of `trials.usage_cost_usd`, not
    a DECIMAL beside a DOUBLE."""
    for table in output_format.TABLE_NAMES:
        path = out_dir / output_format.table_file(table)
        in_file = types(from_events, f"SELECT * FROM read_parquet('{path}')")
        assert types(from_events, table) == in_file, table
    cost = dict(types(from_events, "trials"))["usage_cost_usd"]
    assert dict(types(from_events, "usage"))["usage_cost_usd"] == cost


@pytest.mark.usefixtures("no_grading")
def test_out_dir_with_events_adds_the_views(
    out_dir: Path, from_events: duckdb.DuckDBPyConnection
) -> None:
    """E-89: the events given with an output directory are extracted, not graded:
    the views over them equal `connect(events, suites)`'s, joined to the directory's trials."""
    con = evalbatch.connect(out_dir, events=SAMPLE_EVENTS)
    try:
        assert listed(con) == ANALYST | {"evalbatch_tables"}
        for view in ("event_log", "trial_segments", "tool_calls", "usage"):
            assert rows(con, view) == rows(from_events, view), view
        assert con.execute("SELECT count(trial_index) FROM usage").fetchall() == [(16,)]
    finally:
        con.close()
    as_list = evalbatch.connect([out_dir, SAMPLE_EVENTS])  # one list, as `evalbatch sql` gives
    try:
        assert rows(as_list, "event_log") == rows(from_events, "event_log")
    finally:
        as_list.close()


def test_show_tables_lists_only_the_analyst_relations(
    from_events: duckdb.DuckDBPyConnection,
) -> None:
    """E-90: `SHOW TABLES` lists the analyst relations, one name per concept (no
    `trial_calls` or `tool_called_events` beside `tool_calls`, no `events` beside `event_log`),
    and `evalbatch_tables` documents exactly those."""
    query = "SELECT name FROM evalbatch_tables"
    documented = {name for (name,) in from_events.execute(query).fetchall()}
    assert listed(from_events) == ANALYST | {"evalbatch_tables"}
    assert documented == ANALYST
    assert not listed(from_events) & set(INTERNAL)


@pytest.mark.parametrize("name", INTERNAL)
def test_internals_are_reachable_by_schema(
    from_events: duckdb.DuckDBPyConnection, name: str
) -> None:
    """E-90: the stage's relations live in `evalbatch_internal`, still queryable."""
    (count,) = from_events.execute(f"SELECT count(*) FROM evalbatch_internal.{name}").fetchone()
    if name not in ("duplicate_keys", "fixed_event_rows"):  # the samples have none
        assert count > 0
    with pytest.raises(duckdb.CatalogException):
        from_events.execute(f"SELECT * FROM main.{name}")


def test_safe_out_dir_connection(out_dir: Path) -> None:
    """E-86 with E-89: a safe connection over an output directory and its events
    answers from what it holds and reads no file."""
    con = evalbatch.connect(out_dir, events=SAMPLE_EVENTS, safe=True)
    try:
        assert con.execute("SELECT count(*) FROM event_log").fetchall() == [(170,)]
        assert con.execute("SELECT count(*) FROM evalbatch_internal.events").fetchall() == [(170,)]
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT * FROM read_parquet('{out_dir}/runs.parquet')")
    finally:
        con.close()


def test_grading_settings_with_an_out_dir_are_refused(out_dir: Path) -> None:
    """E-89: suites and grading options grade events; an output directory is
    already graded, so giving them is an error rather than silently ignored."""
    with pytest.raises(InputError, match="already graded: suites"):
        evalbatch.connect(out_dir, suites=SAMPLE_SUITES)
    with pytest.raises(InputError, match="already graded: options"):
        evalbatch.connect(out_dir, options=evalbatch.GradeOptions(default_pass_score=0.5))
    with pytest.raises(InputError, match="connect opens one"):
        evalbatch.connect([out_dir, out_dir])


# --------------------------------------------------------------------------------------------
# fail closed: a directory whose files do not belong together


def copy_of(out_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(out_dir, target)
    return target


def test_a_table_of_another_schema_is_refused(out_dir: Path, tmp_path: Path) -> None:
    """§6, E-89: a table without this version's columns is named with its schema
    version, never read with columns missing."""
    broken = copy_of(out_dir, tmp_path)
    path = broken / "tasks.parquet"
    table = pq.read_table(path)
    old = table.drop_columns(["fixture_miss_count"]).replace_schema_metadata(
        {b"evalbatch.table": b"tasks", b"evalbatch.schema_version": b"2"}
    )
    pq.write_table(old, path)
    with pytest.raises(InputError, match=r"tasks\.parquet: written with schema version 2"):
        evalbatch.connect(broken)


def test_summaries_that_do_not_match_the_runs_are_refused(out_dir: Path, tmp_path: Path) -> None:
    """§6, E-89: summaries.jsonl missing a graded run is not read as if complete."""
    broken = copy_of(out_dir, tmp_path)
    lines = (broken / "summaries.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (broken / "summaries.jsonl").write_text("".join(lines[1:]), encoding="utf-8")
    with pytest.raises(InputError, match="not the outputs of one run"):
        evalbatch.connect(broken)


def test_files_changed_since_the_manifest_are_refused(tmp_path: Path) -> None:
    """§6, E-71, E-89: when an incremental run's manifest is there, every file must
    be the one it records."""
    out = tmp_path / "incremental"
    evalbatch.write_outputs(SAMPLE_EVENTS, out, suites=SAMPLE_SUITES, incremental_run=True)
    assert (out / output_format.MANIFEST_FILE).is_file()
    evalbatch.connect(out).close()
    path = out / "runs.parquet"
    table = pq.read_table(path)
    pq.write_table(table.set_column(0, "run_id", pa.array(["x", "y", "z"])), path)
    with pytest.raises(InputError, match=r"runs\.parquet: .* manifest\.json records"):
        evalbatch.connect(out)


# --------------------------------------------------------------------------------------------
# evalbatch sql OUT_DIR


QUERY = "SELECT run_id, aggregate_score, passed FROM runs ORDER BY run_id"


def test_sql_on_an_out_dir(
    out_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-89: `evalbatch sql OUT_DIR -e` answers as over the events, graded now."""
    code, from_dir, err = run_main(monkeypatch, capsys, "sql", out_dir, "-e", QUERY)
    assert (code, err) == (0, "")
    code, graded_now, _ = run_main(
        monkeypatch, capsys, "sql", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "-e", QUERY
    )
    assert code == 0
    assert from_dir == graded_now
    assert from_dir.splitlines()[-1] == "(3 rows)"
    code, out, _ = run_main(
        monkeypatch,
        capsys,
        *("sql", out_dir, SAMPLE_EVENTS, "--format", "json"),
        *("-e", "SELECT count(*) AS n FROM event_log"),
    )
    assert code == 0
    assert json.loads(out) == [{"n": 170}]


def test_sql_refuses_grading_options_with_an_out_dir(
    out_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-89: --suites (or a run filter) with OUT_DIR would be ignored: a usage error
    naming them, exit 2."""
    code, out, err = run_main(
        monkeypatch,
        capsys,
        *("sql", out_dir, "--suites", SAMPLE_SUITES, "--run-id", "acme/*", "-e", "SELECT 1"),
    )
    assert code == 2
    assert "OUT_DIR is already graded: --suites, --run-id grade events" in err
    assert out == "" and "Traceback" not in err


def test_sql_names_a_broken_out_dir_in_one_line(
    out_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§6, E-89: an output directory that cannot be read whole is one line, exit 2."""
    broken = copy_of(out_dir, tmp_path)
    (broken / "trials.parquet").unlink()
    code, out, err = run_main(monkeypatch, capsys, "sql", broken, "-e", "SELECT 1")
    assert code == 2
    assert err.startswith("evalbatch: ") and "trials.parquet" in err
    assert len(err.strip().splitlines()) == 1 and out == ""


COUNT = "SELECT count(*) AS n FROM event_log"


def test_sql_names_event_files_left_out_beside_an_out_dir(out_dir: Path, tmp_path: Path) -> None:
    """§6, E-89: an event file given with OUT_DIR that cannot be read is named on
    stderr and left out; the query still runs."""
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(b"not parquet")
    result = CliRunner().invoke(
        cli,
        [*("sql", str(out_dir), str(SAMPLE_EVENTS), str(damaged), "--format", "csv"), "-e", COUNT],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "n\n170\n"
    assert "evalbatch: left out:" in result.stderr and "damaged.parquet" in result.stderr


def test_sql_out_and_no_old_spelling(out_dir: Path, tmp_path: Path) -> None:
    """E-93 in `sql`: `-o/--out` names the output file, written with the file mode
    (E-132); `--output`, a spelling never released, is no option."""
    args = ["sql", str(out_dir), "--format", "csv", "-e", "SELECT count(*) AS n FROM runs"]
    new = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "new.csv")])
    assert new.exit_code == 0 and new.stderr == ""
    assert (tmp_path / "new.csv").read_text() == "n\n3\n"
    assert [p.name for p in tmp_path.iterdir()] == ["new.csv"]
    old = CliRunner().invoke(cli, [*args, "--output", str(tmp_path / "old.csv")])
    assert old.exit_code == 2 and "No such option '--output'" in old.stderr
    assert not (tmp_path / "old.csv").exists()


def test_notebook_module_recognises_an_out_dir(out_dir: Path) -> None:
    """E-89: an output directory is told from event files by summaries.jsonl (the
    samples hold an event file named trials.parquet)."""
    assert outdir.output_dir(out_dir)
    assert not outdir.output_dir(SAMPLE_EVENTS)
