"""SQL for notebooks (E-38..E-41): `evalbatch.connect`, `evalbatch sql`, and the example notebook.

`connect` must hold the SQL stage's tables over the given files (CONTRACT §2), the analyst views
over them, and the graded tables exactly as `grade_paths` returns them (§4); `evalbatch sql` must
print or write a query's rows in each format and turn bad input or bad SQL into one line and exit
code 2 (§6); `examples/analyst.ipynb` must run headless, and the outputs committed with it must be
what it prints today.

Refresh the notebook's committed outputs after a change with `python -m tests.test_notebook`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from polars.testing import assert_frame_equal

import evalbatch
from evalbatch import notebook
from evalbatch.api import GradeResult, grade_paths
from evalbatch.cli import cli
from evalbatch.commands.sql import sql_command
from evalbatch.errors import InputError
from evalbatch.options import GradeOptions
from tests.helpers import ROOT, SAMPLE_EVENTS, SAMPLE_SUITES, run_main

#: a slow family (a notebook run headless):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

NOTEBOOK = ROOT / "examples" / "analyst.ipynb"
SAMPLE_RUNS = ["acme/run-fixture-miss-0001", "acme/run-trajectory-0001", "acme/run-trials-k2-0001"]


@pytest.fixture(scope="module")
def graded() -> GradeResult:
    return grade_paths([SAMPLE_EVENTS], [SAMPLE_SUITES])


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = evalbatch.connect(SAMPLE_EVENTS, suites=SAMPLE_SUITES)
    yield connection
    connection.close()


def sample_rows_per_run() -> dict[str, int]:
    """Rows per run in the sample files, read without evalbatch."""
    counts: dict[str, int] = {}
    for path in sorted(SAMPLE_EVENTS.glob("*.parquet")):
        for run_id in pq.read_table(path, columns=["runId"])["runId"].to_pylist():
            counts[run_id] = counts.get(run_id, 0) + 1
    return counts


# --------------------------------------------------------------------------------------------
# evalbatch.connect


def test_connect_holds_every_documented_table(con: duckdb.DuckDBPyConnection) -> None:
    """E-38, E-90: the graded tables and the analyst views are registered and
    `evalbatch_tables` lists each one; the stage's tables are in `evalbatch_internal`."""
    present = {name for (name,) in con.execute("SELECT name FROM (SHOW TABLES)").fetchall()}
    documented = {name for (name,) in con.execute("SELECT name FROM evalbatch_tables").fetchall()}
    expected = {"runs", "tasks", "trials", "problems", "summaries", "history"}  # E-96
    expected |= {"event_log", "tool_calls", "usage", "trial_segments"}
    assert documented == expected
    assert present == documented | {"evalbatch_tables"}
    for name in ("events", "trial_calls", "trial_usage", "eval_runs"):
        assert con.execute(f"SELECT count(*) FROM evalbatch_internal.{name}").fetchall()[0][0]
    assert evalbatch.connect is notebook.connect


def test_event_tables_hold_every_sample_event(con: duckdb.DuckDBPyConnection) -> None:
    """§2 / D-3: the samples have no duplicates, so `event_log` and the stage's `events` hold
    exactly the rows of the sample files, per run."""
    expected = sample_rows_per_run()
    for table in ("event_log", "evalbatch_internal.events"):
        rows = con.execute(f"SELECT run_id, count(*) FROM {table} GROUP BY 1").fetchall()
        assert dict(rows) == expected, table
    (payload,) = con.execute(
        "SELECT payload FROM event_log WHERE run_id = 'acme/run-trials-k2-0001' AND sequence = 40"
    ).fetchall()
    assert json.loads(payload[0])["toolName"] == "billing:refund-all"


def test_graded_tables_are_grade_paths_tables(
    con: duckdb.DuckDBPyConnection, graded: GradeResult
) -> None:
    """§4: `runs`, `tasks`, `trials` and `problems` equal grade_paths' frames, column for column,
    and `summaries` holds each EvalSummary."""
    for name in ("runs", "tasks", "trials", "problems"):
        assert_frame_equal(con.sql(f"SELECT * FROM {name}").pl(), getattr(graded, name))
    rows = con.execute("SELECT run_id, CAST(summary AS VARCHAR) FROM summaries").fetchall()
    assert {run: json.loads(text) for run, text in rows} == graded.summaries


def test_trial_level_query_agrees_with_grade_paths(
    con: duckdb.DuckDBPyConnection, graded: GradeResult
) -> None:
    """§2.2, D-6, RFC 0244 §C: per trial, the `usage` and `tool_calls` views (the SQL stage) give
    the efficiency counts grading reports in `trials`, keyed by the graded trial index (D-5)."""
    from_sql = con.sql(
        """
        SELECT u.run_id, u.task_id, u.trial_index, u.scored_seq AS sequence,
            (SELECT count(*) FROM tool_calls AS c
             WHERE c.run_id = u.run_id AND c.scored_seq = u.scored_seq) AS tool_call_count,
            u.model_call_count, u.input_tokens, u.output_tokens
        FROM usage AS u WHERE u.counted ORDER BY u.run_id, u.scored_seq
        """
    ).pl()
    expected = graded.trials.filter("counted").select(from_sql.columns)
    assert from_sql.height == 16
    assert_frame_equal(from_sql, expected, check_dtypes=False)


def test_tool_calls_show_the_forbidden_call(con: duckdb.DuckDBPyConnection) -> None:
    """§3.2: trial 1 of refund-approved fails on the target agent's forbidden call; the view
    shows that path, in order, with the graded trial index."""
    rows = con.execute(
        """
        SELECT trial_index, call_pos, agent_id, by_target, tool_name FROM tool_calls
        WHERE run_id = 'acme/run-trials-k2-0001' AND task_id = 'refund-approved'
        ORDER BY sequence
        """
    ).fetchall()
    agent = "acme.agents.support"
    assert rows[2:4] == [
        (1, 0, agent, True, "crm:lookup-order"),
        (1, 1, agent, True, "billing:refund-all"),
    ]
    assert [r[0] for r in rows] == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("pass_score", [1.0, 0.0])
def test_connect_without_suites_grades_from_the_host_record(pass_score: float) -> None:
    """D-4: with no suite, runs are graded from the host record (suite-missing), and the grading
    options reach the graded tables (D-15: the default pass score decides no-suite runs)."""
    options = GradeOptions(default_pass_score=pass_score)
    con = evalbatch.connect([SAMPLE_EVENTS], options=options)
    try:
        runs = con.sql("SELECT * FROM runs").pl()
        codes = con.execute("SELECT DISTINCT code FROM problems").fetchall()
    finally:
        con.close()
    assert_frame_equal(runs, grade_paths([SAMPLE_EVENTS], options=options).runs)
    assert runs["has_suite"].to_list() == [False] * 3
    assert ("suite-missing",) in codes
    assert all(runs["passed"]) == (pass_score == 0.0)


def test_connect_rejects_missing_files(tmp_path: Path) -> None:
    """§6: an input that matches no file is the library's InputError, never a DuckDB one."""
    with pytest.raises(InputError, match="no event file"):
        evalbatch.connect(tmp_path / "nothing.parquet")


# --------------------------------------------------------------------------------------------
# evalbatch sql

QUERY = (
    "SELECT run_id, task_id, trial_index, passed, "
    "CAST(usage.usage_cost_usd AS DECIMAL(38, 18)) AS usage_cost_usd, "
    "usage.usage_cost_usd AS cost_double "
    "FROM trials JOIN usage USING (run_id, trial_index, task_id) WHERE trials.counted "
    "ORDER BY run_id, trials.sequence"
)


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(
        sql_command, [str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), *map(str, args)]
    )


@pytest.fixture(scope="module")
def expected_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(QUERY).fetchall()


def test_sql_table_format(expected_rows: list[tuple[Any, ...]]) -> None:
    """E-40: the default output is a fixed-width table with a header and the row count;
    numbers are right-aligned, decimals exact without trailing zeros."""
    result = invoke("-e", QUERY)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "run_id",
        "task_id",
        "trial_index",
        "passed",
        "usage_cost_usd",
        "cost_double",
    ]
    assert set(lines[1]) == {"-", " "}
    assert lines[-1] == f"({len(expected_rows)} rows)"
    body = [line.split() for line in lines[2:-1]]
    assert body[0] == ["acme/run-fixture-miss-0001", "served-refund", "0", "true", "0.001", "0.001"]
    assert len(body) == len(expected_rows)
    assert lines[2].index("0.001") + len("0.001") == lines[0].index("usage_cost_usd") + len(
        "usage_cost_usd"
    )
    capped = invoke("-e", QUERY, "--max-rows", "2")
    assert capped.stdout.splitlines()[-1] == f"({len(expected_rows)} rows, 14 not shown " + (
        "(--max-rows 0 shows all))"
    )


def test_sql_csv_round_trip(expected_rows: list[tuple[Any, ...]], tmp_path: Path) -> None:
    """E-40: --format csv prints RFC 4180 CSV that reads back to the query's rows; --out
    (E-93) writes the same bytes to a file."""
    result = invoke("-e", QUERY, "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][0] == "run_id"
    parsed = [(r[0], r[1], int(r[2]), r[3] == "true", Decimal(r[4]), float(r[5])) for r in rows[1:]]
    assert parsed == expected_rows
    out = tmp_path / "deep" / "rows.csv"
    assert invoke("-e", QUERY, "--format", "csv", "--out", out).exit_code == 0
    assert out.read_text(encoding="utf-8") == result.stdout
    assert not [p for p in out.parent.iterdir() if p.name != "rows.csv"]  # no scratch file left


def test_sql_json_round_trip(expected_rows: list[tuple[Any, ...]]) -> None:
    """E-40: --format json prints an array of row objects; decimals stay exact numbers and a
    JSON column is nested as JSON, not as a string."""
    result = invoke("-e", QUERY, "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout, parse_float=Decimal)
    assert [tuple(r.values()) for r in rows] == [
        (*r[:4], r[4], Decimal(repr(r[5]))) for r in expected_rows
    ]
    assert '"usage_cost_usd": 0.001,' in result.stdout
    nested = invoke(
        "-e", "SELECT run_id, summary FROM summaries ORDER BY run_id", "--format", "json"
    )
    docs = json.loads(nested.stdout)
    assert docs[2]["summary"]["trialStats"]["k"] == 2
    empty = invoke("-e", "SELECT * FROM trials WHERE false", "--format", "json")
    assert json.loads(empty.stdout) == []


def test_sql_parquet_round_trip(expected_rows: list[tuple[Any, ...]], tmp_path: Path) -> None:
    """E-40: --format parquet writes the rows with their types (exact decimals included)."""
    out = tmp_path / "rows.parquet"
    result = invoke("-e", QUERY, "--format", "parquet", "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    table = pq.read_table(out)
    assert str(table.schema.field("usage_cost_usd").type) == "decimal128(38, 18)"
    assert [tuple(r.values()) for r in table.to_pylist()] == expected_rows


def test_sql_sees_what_a_notebook_sees() -> None:
    """E-40: several statements run in order and the last one's rows are shown; the stage
    tables, views and graded tables share one connection."""
    result = invoke(
        "-e",
        "CREATE TEMP VIEW failing AS SELECT * FROM trials WHERE NOT passed; "
        "SELECT count(*) AS n FROM failing JOIN trial_segments AS s "
        "ON s.run_id = failing.run_id AND s.scored_seq = failing.sequence",
        "--format",
        "csv",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "n\n7\n"


def run_sql(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, str, str]:
    """The console script's entry point with `sql` registered: (exit code, stdout, stderr)."""
    monkeypatch.setitem(cli.commands, "sql", sql_command)
    return run_main(monkeypatch, capsys, "sql", *args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-e", "SELEC 1"], "evalbatch: query failed: Parser Error: syntax error"),
        (
            ["-e", "SELECT * FROM trial"],
            "evalbatch: query failed: Catalog Error: Table with name trial does not exist! "
            'Did you mean "trials"?',
        ),
        (["-e", "SELECT CAST(run_id AS INTEGER) FROM runs"], "evalbatch: query failed: Conv"),
        (["-e", "  "], "evalbatch: query failed: no statement"),
    ],
)
def test_sql_errors_are_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    """§6: bad SQL (a parse, catalog or run-time error) and usage errors end in one line on
    stderr and exit code 2, never a traceback."""
    code, out, err = run_sql(monkeypatch, capsys, SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, *args)
    assert code == 2
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err + out


def test_sql_parquet_needs_output(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-40: parquet is written to a file only; asking for it on stdout is a usage error
    (exit 2), caught before any grading."""
    code, out, err = run_sql(
        monkeypatch, capsys, "no-such-dir", "-e", "SELECT 1", "--format", "parquet"
    )
    assert code == 2
    assert "Error: --format parquet writes a file: give --out FILE" in err
    assert out == ""
    assert "Traceback" not in err


def test_sql_missing_file_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """§6: an events path that matches no file is unusable input: one line, exit 2."""
    code, _, err = run_sql(monkeypatch, capsys, tmp_path / "missing.parquet", "-e", "SELECT 1")
    assert code == 2
    assert err.startswith("evalbatch: no event file at"), err
    assert len(err.strip().splitlines()) == 1
    # the command alone (no `main()`) says the same: E-83
    result = CliRunner().invoke(sql_command, [str(tmp_path / "missing.parquet"), "-e", "SELECT 1"])
    assert (result.exit_code, result.stderr) == (2, err)


def test_sql_reports_left_out_files(tmp_path: Path) -> None:
    """§6: a file that cannot be read is left out and named on stderr; the query still runs."""
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    result = CliRunner().invoke(
        sql_command, [str(SAMPLE_EVENTS), str(broken), "-e", "SELECT count(*) AS n FROM runs"]
    )
    assert result.exit_code == 0, result.output
    assert "evalbatch: left out:" in result.stderr
    assert "broken.parquet" in result.stderr
    assert result.stdout.splitlines()[2].strip() == "3"


# --------------------------------------------------------------------------------------------
# examples/analyst.ipynb


def execute_notebook(path: Path = NOTEBOOK) -> Any:
    """The notebook executed headless from its own folder, as Jupyter runs it."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def text_outputs(nb: Any) -> list[list[str]]:
    """Per code cell, the text a reader sees: streams and plain-text results."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for output in cell.outputs:
            if output.output_type == "stream":
                texts.append(output.text)
            elif "data" in output:
                texts.append(output.data.get("text/plain", ""))
            elif output.output_type == "error":
                texts.append(f"{output.ename}: {output.evalue}")
        found.append(texts)
    return found


def tagged_rows(nb: Any, tag: str) -> list[dict[str, str]]:
    """The rows of the table a tagged cell shows (Polars' markdown-style plain text)."""
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    (text,) = [o.data["text/plain"] for o in cell.outputs if "data" in o]
    lines = [line.strip().strip("|").split("|") for line in text.strip().splitlines()]
    header = [h.strip() for h in lines[0]]
    return [dict(zip(header, (v.strip() for v in line), strict=True)) for line in lines[2:]]


@pytest.fixture(scope="module")
def executed() -> Any:
    return execute_notebook()


def test_notebook_runs_headless_and_its_outputs_are_current(executed: Any) -> None:
    """E-41: the example runs without errors, and the outputs committed with it are exactly
    what it shows when run again (readers see real answers)."""
    import nbformat

    committed = nbformat.read(NOTEBOOK, as_version=4)
    fresh = text_outputs(executed)
    assert all(texts for texts in fresh[1:-1]), "every query cell shows its rows"
    assert not any(o.output_type == "error" for c in executed.cells for o in c.get("outputs", []))
    assert text_outputs(committed) == fresh, "refresh with: python -m tests.test_notebook"


def test_notebook_answers_agree_with_grade_paths(executed: Any, graded: GradeResult) -> None:
    """E-41, §3.5, §2.2: the notebook's pass counts per task, its tokens per trial and its
    events per run are what grade_paths and the sample files say."""
    passed = {
        (r["run_id"], r["task_id"]): int(r["passed"]) for r in tagged_rows(executed, "pass-rate")
    }
    expected = {
        (r["run_id"], r["task_id"]): r["passed_count"] for r in graded.tasks.iter_rows(named=True)
    }
    assert passed == expected
    tokens = [
        (r["run_id"], r["task_id"], int(r["trial_index"]), int(r["input_tokens"]))
        for r in tagged_rows(executed, "tokens-per-trial")
    ]
    trials = graded.trials.filter("counted").sort("run_id", "sequence")
    assert tokens == list(
        trials.select("run_id", "task_id", "trial_index", "input_tokens").iter_rows()
    )
    events = {r["run_id"]: int(r["events"]) for r in tagged_rows(executed, "events-per-run")}
    assert events == sample_rows_per_run()
    (failed,) = tagged_rows(executed, "refund-fails")
    assert (failed["task_id"], failed["called_before"]) == ("missed-refund", "crm:lookup-order")
    assert sorted(r["task_id"] for r in tagged_rows(executed, "host-disagrees")) == sorted(
        ["wrong-order", "forbidden-hit", "exact-args-mismatch", "refund-approved"]
    )


if __name__ == "__main__":  # python -m tests.test_notebook: re-run the example, keep its outputs
    import nbformat

    nbformat.write(execute_notebook(), NOTEBOOK)
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}")
