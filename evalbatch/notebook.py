"""The graded tables and the SQL stage in one DuckDB connection, for notebooks and ad-hoc SQL.

`connect` opens either an output directory of `evalbatch run`, read as it was written (its
graded tables, never regraded, E-89), or event files, which it runs the SQL stage over
once, exactly as grading does (§2), and grades from that extraction as `grade_paths` would (§3).
Event files given with an output directory are extracted but not graded. The analyst relations
(the graded tables, the `history` series made from them, and the views over the events) are the
only ones `SHOW TABLES` lists; the stage's own relations live in the schema `evalbatch_internal`.
The analyst names are also in the table `evalbatch_tables`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from evalbatch.errors import EvalbatchError, InputError
from evalbatch.extract import sql_files, trial_tables
from evalbatch.history.series import series_of
from evalbatch.inputs import event_files
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.outputs import outdir, output_format
from evalbatch.pipeline.collect import GradeResult, collect
from evalbatch.pipeline.local import stage_pass
from evalbatch.reduce import paired_verdict

#: the schema that holds the SQL stage's relations: queryable by qualified name
#: (`evalbatch_internal.events`), never listed by `SHOW TABLES`
INTERNAL = "evalbatch_internal"


class QueryError(EvalbatchError):
    """A query given by the user failed (syntax, unknown table or column, a cast at run time)."""


@dataclass(frozen=True)
class TableInfo:
    """One analyst relation a connection holds: where it comes from and what a row is."""

    name: str
    kind: str  # graded (as `evalbatch run` writes it), view (over the events)
    rule: str  # the contract rules that decide its rows
    description: str


#: the tables `evalbatch run` writes (§4), as `grade_paths` returns them
GRADED: dict[str, tuple[str, str]] = {
    "runs": (
        "§3.6, §4",
        "One row per eval run: suite, graded or not, score, passed, counts, when the eval ran, "
        "its target agent, baseline and regression verdict (E-94), provenance (E-54).",
    ),
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

#: what is made from the graded tables: the series of each task's runs in time order
DERIVED: dict[str, tuple[str, str]] = {
    "history": (
        "E-96",
        "One row per series (suite_id, agent_id, model), task and night, in time order: the "
        "runs of a series in one night pooled into one point (E-151; here a night is a UTC day "
        "of the runs' starts, `undated` for runs without one): suite_id, "
        "suite_version, agent_id, model, task_id, night (its position in the series, from 0), "
        "night_label, runs, run_id and started_at (the earliest run's), trials (n) and "
        "passed_trials (c) summed, pass_rate, score, gating_score and pass_hat_k (at k = n) "
        "averaged, cost_usd, input_tokens and output_tokens summed, as `evalbatch history` "
        "shows it.",
    ),
}

#: the views over the events (when events are given), each over the stage's relations in
#: `evalbatch_internal` (`{internal}`); `{cost_type}` is the files' type of a cost
VIEWS: dict[str, tuple[str, str, str]] = {
    "event_log": (
        "D-1, D-3",
        "One row per event of an eval run, every type (tool-returned, run.started, ... included): "
        "run_id, sequence, type (v1 names mapped to v2), ts, payload (the JSON text as written). "
        "Duplicate rows are one event, the earliest timestamp kept. Read from the files on each "
        "query, not stored.",
        """
        SELECT run_id, sequence, type, ts, payload FROM {internal}.event_rows
        """,
    ),
    "trial_segments": (
        "§2.1, §2.2",
        "One row per eval.scored inside the eval span, as the log records it: run_id, "
        "segment_no, scored_seq, task_id, the host's record (host_score, host_passed, "
        "host_latency_ms, host_cost_usd) and the segment's invocation bracket.",
        """
        SELECT * FROM {internal}.trial_segments
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
        FROM {internal}.trial_calls AS c
        JOIN {internal}.trial_segments AS s
            ON s.run_id = c.run_id AND s.segment_no = c.segment_no
        LEFT JOIN {internal}.tool_called_events AS e
            ON e.run_id = c.run_id AND e.sequence = c.sequence
        LEFT JOIN trials AS t ON t.run_id = s.run_id AND t.sequence = s.scored_seq
        ORDER BY c.run_id, c.sequence
        """,
    ),
    "usage": (
        "§2.2, D-6, D-14, RFC 0244 §C",
        "One row per trial segment: run_id, task_id, trial_index (graded, D-5), counted (the "
        "trial counts: D-5, E-8), scored_seq, tool_call_count, model_call_count, input_tokens, "
        "output_tokens (inside the bracket: judge calls excluded, D-6) and usage_cost_usd (over "
        "the whole segment: judge calls included, cache hits 0, other currencies left out, D-14; "
        "the type of trials.usage_cost_usd).",
        """
        SELECT
            u.run_id, s.task_id, t.trial_index, t.counted, s.scored_seq,
            u.tool_call_count, u.model_call_count, u.input_tokens, u.output_tokens,
            CAST(u.usage_cost_usd AS {cost_type}) AS usage_cost_usd
        FROM {internal}.trial_usage AS u
        JOIN {internal}.trial_segments AS s
            ON s.run_id = u.run_id AND s.segment_no = u.segment_no
        LEFT JOIN trials AS t ON t.run_id = s.run_id AND t.sequence = s.scored_seq
        ORDER BY u.run_id, s.scored_seq
        """,
    ),
}


#: the graded tables' columns and types: the files' (`output_format`), summaries aside
def tables(with_events: bool = True) -> list[TableInfo]:
    """Every analyst relation, graded tables first; the views only over events."""
    found = [TableInfo(name, "graded", rule, text) for name, (rule, text) in GRADED.items()]
    found += [TableInfo(name, "derived", rule, text) for name, (rule, text) in DERIVED.items()]
    if with_events:
        found += [TableInfo(name, "view", rule, text) for name, (rule, text, _) in VIEWS.items()]
    return found


def _split(source: Paths, events: Paths) -> tuple[Path | None, list[str]]:
    """The output directory among `source` (at most one) and the event paths."""
    given = as_paths(source)
    found = [path for path in given if outdir.output_dir(path)]
    if len(found) > 1:
        raise InputError(
            f"{len(found)} output directories given ({', '.join(found)}): connect opens one"
        )
    paths = [path for path in given if path not in found] + as_paths(events)
    return (Path(found[0]) if found else None), paths


def _graded(result: GradeResult) -> tuple[dict[str, pl.DataFrame], dict[str, str]]:
    frames = {name: getattr(result, name) for name in outdir.GRADED_SCHEMAS}
    summaries = {
        run_id: json.dumps(doc, ensure_ascii=False) for run_id, doc in result.summaries.items()
    }
    return frames, summaries


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


def _add_graded(
    con: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame], summaries: dict[str, str]
) -> None:
    """The graded tables, with the columns and types of the files `evalbatch run` writes, and the
    `history` series made from them."""
    for name, schema in outdir.GRADED_SCHEMAS.items():
        _store(con, name, frames[name].match_to_schema(schema))
    _store(con, "history", series_of(frames["runs"], frames["tasks"], frames["trials"]))
    rows = pl.DataFrame(
        {"run_id": list(summaries), "summary": list(summaries.values())},
        schema={"run_id": pl.String, "summary": pl.String},
    ).sort("run_id")
    _store(con, "summaries", rows, "run_id, CAST(summary AS JSON) AS summary")


#: how DuckDB writes a view's definition: its name is replaced to define it in another schema
_VIEW_DDL = re.compile(r'CREATE (?:TEMP |TEMPORARY )?VIEW (?:"(?:[^"]|"")*"|[^\s(]+) AS ')


def _move_internals(con: duckdb.DuckDBPyConnection) -> None:
    """Move every relation the stage left in the default schema into `evalbatch_internal`, so
    `SHOW TABLES` lists the analyst relations only: tables and registered frames are copied
    (`events` too, so a sealed connection keeps it), the views that read the event files are
    defined again there (their names resolve in their own schema first), then the originals go."""
    con.execute(f"CREATE SCHEMA {INTERNAL}")
    tables = con.execute(
        "SELECT database_name, table_name FROM duckdb_tables() "
        "WHERE schema_name = 'main' AND NOT internal"
    ).fetchall()
    views = con.execute(
        "SELECT database_name, view_name, sql FROM duckdb_views() "
        "WHERE schema_name = 'main' AND NOT internal"
    ).fetchall()
    registered: list[str] = []
    for database, name, text in views:
        copy = "python_arrow_scan()" in text or name == "events"
        if copy:
            con.execute(f'CREATE TABLE {INTERNAL}."{name}" AS FROM "{database}".main."{name}"')
        else:
            body, found = _VIEW_DDL.subn(f'CREATE VIEW {INTERNAL}."{name}" AS ', text, count=1)
            if not found or not text.startswith("CREATE "):
                raise EvalbatchError(f"internal error: cannot move the view {name}")
            con.execute(body)
        if "python_arrow_scan()" in text:
            registered.append(name)
    for database, name in tables:
        con.execute(f'CREATE TABLE {INTERNAL}."{name}" AS FROM "{database}".main."{name}"')
    for database, name, _ in views:
        if name in registered:
            con.unregister(name)
        else:
            con.execute(f'DROP VIEW "{database}".main."{name}"')
    for database, name in tables:
        con.execute(f'DROP TABLE "{database}".main."{name}"')
    # event_log's rows, read from the files through the views just moved
    con.execute(f"CREATE VIEW {INTERNAL}.event_rows AS {sql_files.load_query('event_rows').text}")


def _duckdb_type(con: duckdb.DuckDBPyConnection, dtype: pl.DataType) -> str:
    """The DuckDB type a Polars type is written as (a Parquet file read back gives the same)."""
    (found,) = con.from_arrow(pl.DataFrame(schema={"x": dtype}).to_arrow()).types
    return str(found)


def _add_views(con: duckdb.DuckDBPyConnection, with_events: bool, stored: bool = False) -> None:
    """The `VIEWS` (over events only), as views, or as tables (`stored`) for a connection that
    will not read files; then `evalbatch_tables`."""
    if with_events:
        kind = "TABLE" if stored else "VIEW"
        cost_type = _duckdb_type(con, output_format.TRIAL_SCHEMA["usage_cost_usd"])
        for name, (_, _, query) in VIEWS.items():
            text = query.format(internal=INTERNAL, cost_type=cost_type)
            con.execute(f'CREATE OR REPLACE TEMP {kind} "{name}" AS {text}')
    rows = [(t.name, t.kind, t.rule, t.description) for t in tables(with_events)]
    con.execute(
        "CREATE OR REPLACE TEMP TABLE evalbatch_tables "
        "(name VARCHAR, kind VARCHAR, rule VARCHAR, description VARCHAR)"
    )
    con.executemany("INSERT INTO evalbatch_tables VALUES (?, ?, ?, ?)", rows)


def _seal(con: duckdb.DuckDBPyConnection) -> None:
    """Leave `con` able to query what it holds and nothing else (E-86): the views, which read
    the event files, are dropped (the analyst ones are already stored as tables), then DuckDB's
    external access is turned off (no file read or written, no ATTACH of a file, no extension
    installed or loaded) and its configuration locked, so a query cannot turn either back on."""
    views = con.execute(
        "SELECT database_name, schema_name, view_name FROM duckdb_views() "
        "WHERE NOT internal ORDER BY view_name"
    ).fetchall()
    for database, schema, name in views:
        con.execute(f'DROP VIEW "{database}"."{schema}"."{name}"')
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _add_left_out(con: duckdb.DuckDBPyConnection, sources: event_files.Sources) -> None:
    """The event files the stage left out (unreadable, columns missing), for a connection whose
    `problems` are an output directory's and so do not name them."""
    frame = pl.DataFrame(
        [(p.path, p.code, p.message) for p in sources.problems],
        schema={"path": pl.String, "code": pl.String, "message": pl.String},
        orient="row",
    )
    _store(con, "__evalbatch_left_out", frame)
    con.execute(
        f"CREATE TABLE {INTERNAL}.left_out_files AS FROM __evalbatch_left_out; "
        "DROP TABLE __evalbatch_left_out"
    )


def connect(
    source: Paths = (),
    suites: Paths = (),
    *,
    events: Paths = (),
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    run_filter: event_files.RunFilter | None = None,
    safe: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection holding graded tables and, over event files, the SQL stage's tables.

    `source` is one path or a list: an output directory of `evalbatch run`, or event files
    (files, directories, globs), or both; `events` adds event files.

    - From an output directory (`connect("out/nightly")`), the graded tables are read from its
      files, not regraded; with event files too (`connect("out/nightly", events="exports/")`)
      the SQL stage runs over them, nothing graded. `suites`, `suite_docs`, `options` and
      `run_filter` are for grading and are refused with an output directory.
    - From event files alone, the SQL stage runs once and its runs are graded from it as
      `grade_paths(events, suites, options=options)` grades them; runs whose suite is not given
      are graded from the host record (D-4).

    The connection lists (`SHOW TABLES`, `evalbatch_tables`) only the analyst relations: the
    graded tables `runs`, `tasks`, `trials`, `problems` (with the files' columns and types) and
    `summaries`; `history`, each task's runs in time order (made from the graded tables); over
    events, the views `event_log`, `trial_segments`, `tool_calls` and `usage`. The stage's own
    relations (`events`, `eval_runs`, `trial_calls`, `trial_usage`, ...) are in the schema
    `evalbatch_internal`: `SELECT * FROM evalbatch_internal.events`.

    `resources` set DuckDB as for `grade_paths`. The connection is the caller's to close.

    The connection is all of DuckDB: a query can read any file, write anywhere (`COPY ... TO`),
    `ATTACH` databases and install extensions. `safe=True` is for wrapping it in a service: the
    tables above are stored (`event_log` too), then external access is turned off and the
    configuration locked, so queries read only what the connection holds (E-86).

    Raises:
        InputError: no event file can be used at all; an output directory that cannot be read
            whole (`outputs.outdir.read_graded`); grading settings given with an output
            directory.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    out, event_paths = _split(source, events)
    if out is not None:
        given = [
            name
            for name, value in (
                ("suites", as_paths(suites) or suite_docs),
                ("options", options),
                ("run_filter", run_filter),
            )
            if value
        ]
        if given:
            raise InputError(
                f"{out} is an output directory, already graded: {', '.join(given)} grade events "
                "(select runs in the query instead)"
            )
        frames, summaries = outdir.read_graded(out)
    con = trial_tables.new_connection(resources)
    try:
        if out is None:
            choices = load_suites(as_paths(suites), suite_docs)
            sources = event_files.scan(con, event_paths)
            if run_filter is not None:
                run_filter.apply(con, sources)
            # one extraction: the runs are graded from the very frames the connection keeps
            grading = stage_pass(con, sources, choices, options or GradeOptions())
            frames, summaries = _graded(collect(grading, paired_verdict.RegressOptions()))
            _move_internals(con)
        elif event_paths:
            sources = event_files.scan(con, event_paths)
            trial_tables.extract(con, sources)  # the stage's tables only: nothing is graded
            _move_internals(con)
            _add_left_out(con, sources)
        _add_graded(con, frames, summaries)
        _add_views(con, with_events=bool(event_paths), stored=safe)
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
