"""The SQL stage: event files in, one row per trial (plus its calls and usage) out (§2).

The queries live in `sql/`; this module runs them in order and does the two checks SQL cannot do
exactly: D-7 equality of duplicate rows (D-3) and the payloads DuckDB's lenient parser accepts but
JSON does not (NaN, Infinity) or reads differently (a repeated key: JSON parsers keep the last).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import duckdb
import polars as pl

from evalbatch import jsonvalue, problems
from evalbatch.extract import sql_files
from evalbatch.inputs import event_files
from evalbatch.options import Resources

#: the events pass, in dependency order: which runs are eval runs, the keys held by more than one
#: row (D-3), each event's row (a view, read once) and the parsed `events` table built from them
EVENTS_PASS = ("eval_run_ids", "duplicate_keys", "event_rows", "events")
#: the queries of `EVENTS_PASS` kept as views rather than tables
VIEWS = frozenset({"event_rows"})

#: the queries that build the trial tables from `events`, in dependency order: per-type events
#: (sql/typed), eval runs and the events of their spans (sql/spans), then the trial rows
#: (sql/trials); `event_problems` and `usage_problems` are read from these when asked for
PIPELINE = (
    "tool_called_events",
    "usage_events",
    "bracket_events",
    "scored_events",
    "started_events",
    "eval_runs",
    "span_scored",
    "span_calls",
    "span_usage",
    "span_brackets",
    "trial_segments",
    "trial_calls",
    "trial_usage",
    "run_cost_source",
)


@dataclass
class Extraction:
    """Everything grading needs, as Polars frames (small next to the events)."""

    eval_runs: pl.DataFrame
    trial_segments: pl.DataFrame
    trial_usage: pl.DataFrame
    trial_calls: pl.DataFrame
    cost_source_runs: set[str]
    event_problems: pl.DataFrame  # run_id, sequence, code, message
    usage_problems: pl.DataFrame  # run_id, segment_no, sequence, code


#: the value ranges of `problems` (E-76..E-78) as SQL macros, so the queries in sql/ name the one
#: constant instead of repeating its number
_LIMIT_MACROS = "\n".join(
    f"CREATE OR REPLACE TEMP MACRO {name.lower()}() AS {getattr(problems, name)};"
    for name in ("MAX_SEQUENCE", "MAX_COST_USD", "MAX_LATENCY_MS", "MAX_TOKENS", "MAX_TRIALS")
)


def connect(resources: Resources | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with UTC timestamps (naive ones are read as UTC), using
    `resources` (a memory limit caps DuckDB's memory; past it, work spills)."""
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    (resources or Resources()).apply(con)
    con.execute(sql_files.load("macros").text)
    con.execute(_LIMIT_MACROS)
    return con


def _payload_fixes(con: duckdb.DuckDBPyConnection) -> bool:
    """Re-read the few payloads DuckDB accepts leniently, as a strict JSON parser would (D-7).

    A payload that is not JSON becomes the empty text, which no parser accepts; one with a
    repeated key becomes its canonical text, where the last value stands. Returns whether any
    payload was re-read.
    """
    (count,) = con.execute("SELECT count(*) FROM events WHERE payload_suspect").fetchall()
    if not count[0]:
        return False
    suspects = con.execute(
        "SELECT r.run_id, r.sequence, r.payload FROM event_rows AS r "
        "SEMI JOIN (SELECT run_id, sequence FROM events WHERE payload_suspect) AS s "
        "ON s.run_id = r.run_id AND s.sequence = r.sequence"
    ).fetchall()
    rows = []
    for run_id, sequence, payload in suspects:
        try:
            fixed = jsonvalue.canonical_text(payload)
        except jsonvalue.NotJson:
            fixed = ""
        rows.append((run_id, sequence, fixed))
    if not rows:
        return False
    con.execute(
        "CREATE OR REPLACE TEMP TABLE payload_fixes "
        "(run_id VARCHAR, sequence BIGINT, payload VARCHAR)"
    )
    con.executemany("INSERT INTO payload_fixes VALUES (?, ?, ?)", rows)
    return True


def _same_event(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """D-3/E-4: one type, and JSON-equal payloads (or equal texts when either is not JSON)."""
    if a[0] != b[0]:
        return False
    if a[1] is None or b[1] is None:
        return a[1] == b[1]
    try:
        return jsonvalue.canonical_text(a[1]) == jsonvalue.canonical_text(b[1])
    except jsonvalue.NotJson:
        return a[1] == b[1]


def _conflicts(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """(run, sequence) keys whose rows are not one event (D-3)."""
    groups: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
    for run_id, sequence, type_, payload in sql_files.relation(con, "duplicate_events").fetchall():
        groups[(run_id, sequence)].append((type_, payload))
    return [
        key for key, rows in groups.items() if not all(_same_event(rows[0], r) for r in rows[1:])
    ]


def events_pass(
    con: duckdb.DuckDBPyConnection, sources: event_files.Sources, runs: event_files.RunRange | None
) -> None:
    """Build `events` from the event files, as `EVENTS_PASS` orders it, with the payloads DuckDB
    reads leniently re-read as JSON (D-7)."""
    event_files.register(con, sources, runs)
    for name in EVENTS_PASS:
        if name in VIEWS:
            sql_files.define_view(con, name)
        else:
            sql_files.materialize(con, name)
    if _payload_fixes(con):
        con.execute(
            "CREATE OR REPLACE TEMP VIEW event_rows AS " + sql_files.load("fixed_event_rows").text
        )
        con.execute("CREATE OR REPLACE TEMP TABLE fixed_events AS " + sql_files.load("events").text)
        con.execute(
            "DELETE FROM events WHERE (run_id, sequence) IN "
            "(SELECT run_id, sequence FROM fixed_events)"
        )
        con.execute("INSERT INTO events SELECT * FROM fixed_events")


def _build(
    con: duckdb.DuckDBPyConnection, sources: event_files.Sources, runs: event_files.RunRange | None
) -> list[tuple[str, int]]:
    """Materialize every table of the SQL stage; returns the conflicting (run, sequence) keys."""
    events_pass(con, sources, runs)
    conflicts = _conflicts(con)
    for name in PIPELINE:
        sql_files.materialize(con, name)
    return conflicts


def extract(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources | list[str],
    runs: event_files.RunRange | None = None,
) -> Extraction:
    """Run the SQL stage over the event files (`sources`, or paths to scan), for the runs of one
    batch (a range of run ids) or for all runs.

    A file whose data pages turn out to be damaged is reported and left out, and the stage runs
    again over the other files (§6: a broken file never costs the good ones).
    """
    if not isinstance(sources, event_files.Sources):
        sources = event_files.scan(con, sources)
    conflicts = event_files.leaving_out_damaged(con, sources, lambda: _build(con, sources, runs))

    event_problems = sql_files.relation(con, "event_problems").pl()
    if conflicts:
        conflict_frame = pl.DataFrame(
            {
                "run_id": [run for run, _ in conflicts],
                "sequence": [seq for _, seq in conflicts],
                "code": ["event-conflict"] * len(conflicts),
            },
            schema=event_problems.schema,
        )
        event_problems = pl.concat([event_problems, conflict_frame]).sort(
            ["run_id", "sequence", "code"]
        )
    return Extraction(
        eval_runs=con.sql("SELECT * FROM eval_runs ORDER BY run_id").pl(),
        trial_segments=con.sql("SELECT * FROM trial_segments ORDER BY run_id, segment_no").pl(),
        trial_usage=con.sql("SELECT * FROM trial_usage ORDER BY run_id, segment_no").pl(),
        trial_calls=con.sql("SELECT * FROM trial_calls ORDER BY run_id, segment_no, call_pos").pl(),
        cost_source_runs={
            row[0] for row in con.sql("SELECT run_id FROM run_cost_source").fetchall()
        },
        event_problems=event_problems,
        usage_problems=sql_files.relation(con, "usage_problems").pl(),
    )
