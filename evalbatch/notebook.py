"""The SQL stage and the graded tables in one DuckDB connection, for notebooks and ad-hoc SQL.

`connect(events, suites)` runs the SQL stage over the given files once, exactly as grading does
(§2), grades its runs from that extraction as `grade_paths` would (§3), and keeps both: the
stage's frames, registered as Arrow tables, and the graded tables beside them, so an analyst can
join what the log says with how it was graded. Names are listed in `TABLES` and, inside the
connection, in the table `evalbatch_tables`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from evalbatch.errors import EvalbatchError
from evalbatch.extract import sql_files, trial_tables
from evalbatch.inputs import event_files
from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.grading import GradeResult, collect
from evalbatch.pipeline.local import stage_pass
from evalbatch.reduce import regression


class QueryError(EvalbatchError):
    """A query given by the user failed (syntax, unknown table or column, a cast at run time)."""


@dataclass(frozen=True)
class TableInfo:
    """One relation a notebook connection holds: where it comes from and what a row is."""

    name: str
    kind: str  # stage (a table of sql/), view (defined here, over the stage), graded
    rule: str  # the contract rules that decide its rows
    description: str


#: the views `connect` adds over the stage tables; their rows follow the stage's, in order
VIEWS: dict[str, tuple[str, str, str]] = {
    "event_log": (
        "D-1, D-3",
        "One row per event of an eval run, every type (tool-returned, run.started, ... included): "
        "run_id, sequence, type (v1 names mapped to v2), ts, payload (the JSON text as written). "
        "Duplicate rows are one event, the earliest timestamp kept. Read from the files on each "
        "query, not stored.",
        """
        SELECT run_id, sequence, type, ts, payload
        FROM ({event_rows})
        """,
    ),
    "tool_calls": (
        "§2.2, §3.3, D-2, D-5",
        "One row per agent.tool-called inside a trial's bracket (every agent's: the calls fixture "
        "replay walks), in order: run_id, task_id, trial_index (the graded index, D-5; null when "
        "the run was not graded), scored_seq (the eval.scored closing the trial), call_pos, "
        "sequence, agent_id, by_target (the bracket's agent made it: the observed trajectory "
        "unless includeDelegates), tool_name, inputs (JSON text, D-2).",
        """
        SELECT
            c.run_id, s.task_id, t.trial_index, s.scored_seq, c.call_pos, c.sequence,
            e.agent_id, c.by_target, c.tool_name, c.inputs
        FROM trial_calls AS c
        JOIN trial_segments AS s ON s.run_id = c.run_id AND s.segment_no = c.segment_no
        LEFT JOIN tool_called_events AS e ON e.run_id = c.run_id AND e.sequence = c.sequence
        LEFT JOIN trials AS t ON t.run_id = s.run_id AND t.sequence = s.scored_seq
        ORDER BY c.run_id, c.sequence
        """,
    ),
    "usage": (
        "§2.2, D-6, D-14, RFC 0244 §C",
        "One row per trial segment: run_id, task_id, trial_index (graded, D-5), counted (the "
        "trial counts: D-5, E-8), scored_seq, tool_call_count, model_call_count, input_tokens, "
        "output_tokens (inside the bracket: judge calls excluded, D-6) and usage_cost_usd (an "
        "exact decimal over the whole segment: judge calls included, cache hits 0, other "
        "currencies left out, D-14).",
        """
        SELECT
            u.run_id, s.task_id, t.trial_index, t.counted, s.scored_seq,
            u.tool_call_count, u.model_call_count, u.input_tokens, u.output_tokens,
            u.usage_cost_usd
        FROM trial_usage AS u
        JOIN trial_segments AS s ON s.run_id = u.run_id AND s.segment_no = u.segment_no
        LEFT JOIN trials AS t ON t.run_id = s.run_id AND t.sequence = s.scored_seq
        ORDER BY u.run_id, s.scored_seq
        """,
    ),
}

#: the tables `grade_paths` returns, as `evalbatch run` writes them (§4)
GRADED: dict[str, tuple[str, str]] = {
    "runs": ("§3.6, §4", "One row per eval run: suite, graded or not, score, passed, counts."),
    "tasks": ("§3.5, §4", "One row per task: score, gating score, passed, pass@k, pass^k, cost."),
    "trials": (
        "§3.1-§3.4, D-5, D-10",
        "One row per eval.scored of a graded run: trial index, counted or left out, score, "
        "gating score, passed, trajectory counts and reason, efficiency, cost. `sequence` is the "
        "eval.scored's (trial_segments.scored_seq).",
    ),
    "problems": ("§6", "One row per problem: run_id, sequence, code, severity, message."),
    "summaries": ("§4", "One row per graded run: run_id, summary (the EvalSummary, as JSON)."),
}

#: the stage tables an analyst reads most, with the rules that decide their rows; every other
#: table of sql/ is there too, under its own name
STAGE: dict[str, str] = {
    "events": "§2.2, D-1, D-3",
    "eval_runs": "§2.1",
    "trial_segments": "§2.1, §2.2",
    "trial_calls": "§2.2, §3.3",
    "trial_usage": "§2.2, D-6, D-14",
    "tool_called_events": "§2.2, D-2",
    "usage_events": "§2.2, D-14",
    "scored_events": "§2.2, D-5, D-11",
    "started_events": "§2.1",
    "bracket_events": "§2.1, D-2",
}


def tables() -> list[TableInfo]:
    """Every relation a notebook connection documents, graded tables first."""
    found = [TableInfo(name, "graded", rule, text) for name, (rule, text) in GRADED.items()]
    found += [TableInfo(name, "view", rule, text) for name, (rule, text, _) in VIEWS.items()]
    found += [
        TableInfo(name, "stage", rule, _stage_description(name)) for name, rule in STAGE.items()
    ]
    return found


def _stage_description(name: str) -> str:
    """What a stage relation holds: its SQL file's header, or the text of a frame the stage
    builds from its scan."""
    if name in trial_tables.FRAMES:
        return trial_tables.FRAMES[name]
    return sql_files.load(name).description


def _as_list(paths: str | Path | Sequence[str | Path]) -> list[str]:
    if isinstance(paths, str | Path):
        return [str(paths)]
    return [str(p) for p in paths]


def _store(
    con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame, columns: str = "*"
) -> None:
    """Keep a Polars frame as the temporary table `name` (a copy: no Python object behind it)."""
    scratch = f"__evalbatch_{name}"
    con.register(scratch, frame.to_arrow())
    try:
        con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS SELECT {columns} FROM "{scratch}"')
    finally:
        con.unregister(scratch)


def _store_events(con: duckdb.DuckDBPyConnection) -> None:
    """Keep the stage's `events` (a view over its scan) as a table, so a sealed connection,
    which reads no file, keeps it whatever the scan's table becomes."""
    con.execute('CREATE OR REPLACE TEMP TABLE "__evalbatch_events" AS FROM events')
    con.execute("DROP VIEW events")
    con.execute('ALTER TABLE "__evalbatch_events" RENAME TO events')


def _add_graded(con: duckdb.DuckDBPyConnection, result: GradeResult) -> None:
    for name in ("runs", "tasks", "trials", "problems"):
        _store(con, name, getattr(result, name))
    summaries = pl.DataFrame(
        {
            "run_id": list(result.summaries),
            "summary": [json.dumps(s, ensure_ascii=False) for s in result.summaries.values()],
        },
        schema={"run_id": pl.String, "summary": pl.String},
    ).sort("run_id")
    _store(con, "summaries", summaries, "run_id, CAST(summary AS JSON) AS summary")


def _add_views(con: duckdb.DuckDBPyConnection, stored: bool = False) -> None:
    """The `VIEWS`, as views, or as tables (`stored`) for a connection that will not read files."""
    event_rows = sql_files.load("event_rows").text
    kind = "TABLE" if stored else "VIEW"
    for name, (_, _, query) in VIEWS.items():
        con.execute(
            f'CREATE OR REPLACE TEMP {kind} "{name}" AS ' + query.format(event_rows=event_rows)
        )
    rows = [(t.name, t.kind, t.rule, t.description) for t in tables()]
    con.execute(
        "CREATE OR REPLACE TEMP TABLE evalbatch_tables "
        "(name VARCHAR, kind VARCHAR, rule VARCHAR, description VARCHAR)"
    )
    con.executemany("INSERT INTO evalbatch_tables VALUES (?, ?, ?, ?)", rows)


def _seal(con: duckdb.DuckDBPyConnection) -> None:
    """Leave `con` able to query what it holds and nothing else (E-86): the views that read the
    event files are dropped (their rows are already in tables), then DuckDB's external access is
    turned off (no file read or written, no ATTACH of a file, no extension installed or loaded)
    and its configuration locked, so a query cannot turn either back on."""
    views = con.execute(
        "SELECT database_name, schema_name, view_name FROM duckdb_views() "
        "WHERE NOT internal ORDER BY view_name"
    ).fetchall()
    kept = {*VIEWS, *trial_tables.FRAMES, *trial_tables.FETCHED}  # registered Arrow tables
    for database, schema, name in views:
        if name not in kept:
            con.execute(f'DROP VIEW "{database}"."{schema}"."{name}"')
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def connect(
    events: str | Path | Sequence[str | Path],
    suites: str | Path | Sequence[str | Path] = (),
    *,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    run_filter: event_files.RunFilter | None = None,
    safe: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection holding the SQL stage's tables over `events` and the graded tables.

    `events` and `suites` are what `evalbatch run` takes (files, directories, globs); runs whose
    suite is not given are graded from the host record (D-4). The connection holds:

    - every table of `sql/` under its own name (`events`, `eval_runs`, `trial_segments`,
      `trial_calls`, `trial_usage`, ...), built over all runs at once;
    - the views `event_log` (every event with its payload), `tool_calls` and `usage` (the
      stage's per-trial rows with the task and graded trial index);
    - the graded tables `runs`, `tasks`, `trials`, `problems` and `summaries`, equal to
      `grade_paths(events, suites, options=options)`'s;
    - `evalbatch_tables`: each of these names with its rules and what a row is.

    `resources` set DuckDB as for `grade_paths`. The connection is the caller's to close.

    The connection is all of DuckDB: a query can read any file, write anywhere (`COPY ... TO`),
    `ATTACH` databases and install extensions. `safe=True` is for wrapping it in a service: the
    tables above are stored (`event_log` too), then external access is turned off and the
    configuration locked, so queries read only what the connection holds (E-86).

    Raises:
        InputError: no event file can be used at all.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    choices = load_suites(_as_list(suites), suite_docs)
    con = trial_tables.connect(resources)
    try:
        sources = event_files.scan(con, _as_list(events))
        if run_filter is not None:
            run_filter.apply(con, sources)
        # one extraction: the runs are graded from the very frames the connection keeps
        # (registered Arrow tables, `trial_tables.FRAMES`)
        grading = stage_pass(con, sources, choices, options or GradeOptions())
        result = collect(grading, regression.RegressOptions())
        _store_events(con)
        _add_graded(con, result)
        _add_views(con, stored=safe)
        if safe:
            _seal(con)
    except BaseException:
        con.close()
        raise
    return con


def query(con: duckdb.DuckDBPyConnection, text: str) -> duckdb.DuckDBPyRelation | None:
    """Run the user's SQL (several statements allowed; the last one's rows are returned).

    Raises:
        QueryError: the query cannot be parsed or bound (DuckDB's message, on one line).
    """
    try:
        return con.sql(text)
    except duckdb.Error as exc:
        raise QueryError(error_line(exc)) from None


def error_line(exc: duckdb.Error) -> str:
    """DuckDB's message on one line: what is wrong and its hint ("Did you mean ..."), without the
    query excerpt and caret lines that follow a blank line."""
    text = str(exc).strip().split("\n\n", 1)[0]
    return "query failed: " + (" ".join(text.split()) or type(exc).__name__)
