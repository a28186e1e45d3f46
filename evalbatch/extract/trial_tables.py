"""The SQL stage: event files in, one row per trial (plus its calls and usage) out (§2).

The queries live in `sql/`; this module runs them in order: one scan of the event files that
parses each payload once (event_scan), the per-type relations read off it, then the eval spans,
trial segments, calls and usage in Polars (`segments`). It also does the two checks SQL cannot do
exactly: D-7 equality of duplicate rows (D-3, keys found by adjacency) and the payloads DuckDB's
lenient parser accepts but JSON does not (NaN, Infinity, trailing commas) or reads differently (a
repeated key: JSON parsers keep the last).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import duckdb
import polars as pl

from evalbatch import jsonvalue, problems
from evalbatch.extract import delegates, segments, sql_files
from evalbatch.inputs import event_files
from evalbatch.options import Resources

#: the events pass, in dependency order: which runs are eval runs, their rows as read (a view),
#: the one scan that parses each row's payload (stored, then its duplicate and lenient rows
#: replaced: `events_pass`) and the `events` it leaves
EVENTS_PASS = ("eval_run_ids", "scan_rows", "event_scan", "events")
#: the queries of `EVENTS_PASS` kept as views rather than tables
VIEWS = frozenset({"scan_rows", "events"})

#: the stage's relations built in Python from what the scan found, registered in the connection
#: under these names (the queries of sql/ read them as tables), with what a row is and which
#: rules decide the rows
FRAMES: dict[str, str] = {
    "duplicate_keys": (
        "(runId, sequence) keys held by more than one row of an eval run (D-3), found as equal "
        "neighbours of the scanned keys in key order (no GROUP BY over all rows); usually none."
    ),
    "duplicate_row_hashes": (
        "The rows behind each duplicated key (D-3), every one of them: run_id, sequence and the "
        "row's hash as read, for its run's events fingerprint (E-50; batch_fingerprints)."
    ),
    "fixed_event_rows": (
        "The events whose payload DuckDB's lenient parser reads differently from JSON (NaN and "
        "Infinity are not JSON, nor is a trailing comma: E-61; a repeated key keeps its last "
        "value: D-7, E-26), with the payload as the strict parser re-read it (the empty text when "
        "it is not JSON), scanned again in their place."
    ),
    **segments.FRAMES,
    **delegates.FRAMES,
}

#: the queries that read the events: the per-type relations (sql/typed) and the runs whose costs
#: come from provider.usage (sql/trials); the eval spans, trial segments, calls and usage are
#: then built from the per-type relations in Polars (`segments.FRAMES`), and `event_problems`
#: and `usage_problems` are read from them when asked for
PIPELINE = (
    "tool_called_events",
    "usage_events",
    "bracket_events",
    "scored_events",
    "started_events",
    "run_cost_source",
)
#: the queries of `PIPELINE` whose rows are fetched once into Polars (for `segments`) and
#: registered under their own name, rather than stored in DuckDB as well
FETCHED = frozenset(PIPELINE[:5])


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
    #: what trials read from child runs (E-102): empty unless a suite includes delegates
    delegates: delegates.DelegateFrames = field(default_factory=delegates.DelegateFrames)


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
    (resources or Resources()).apply(con)
    prepare(con)
    return con


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """What every query of the stage expects of its connection: UTC timestamps and the shared
    macros (a cursor of a connection needs them again: they are its own)."""
    con.execute("SET TimeZone = 'UTC'")
    con.execute(sql_files.load("macros").text)
    con.execute(_LIMIT_MACROS)


#: the columns of a row the scan reads (scan_rows), as a frame of rows to scan again
_ROW_COLUMNS = ("run_id", "sequence", "sequence_ok", "type", "payload", "ts", "row_hash")
_KEY = ("run_id", "sequence")


def register_frame(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> None:
    """Make `frame` readable in `con` under `name` (Arrow, no copy)."""
    con.register(name, frame.to_arrow())


def _scan_again(con: duckdb.DuckDBPyConnection, keys: str, rows: pl.DataFrame) -> None:
    """Replace the rows of event_scan whose keys are in the relation `keys` by the scan of
    `rows` (`_ROW_COLUMNS`: rows re-read for a second look)."""
    scratch = "__evalbatch_rescan"
    con.register(scratch, rows.select(_ROW_COLUMNS).to_arrow())
    try:
        con.execute(
            "DELETE FROM event_scan WHERE (run_id, sequence) IN "
            f"(SELECT run_id, sequence FROM {keys})"
        )
        query = sql_files.load("event_scan").text
        con.execute(
            f"INSERT INTO event_scan WITH scan_rows AS (FROM {scratch}) SELECT * FROM ({query})"
        )
    finally:
        con.unregister(scratch)


def _duplicate_keys(keys: pl.DataFrame) -> pl.DataFrame:
    """The (run, sequence) keys held by more than one row (D-3): equal neighbours once the keys
    are in order, sorted only when they are not already (no GROUP BY over all rows)."""
    run, sequence = pl.col("run_id"), pl.col("sequence")
    step_ok = (run > run.shift()) | ((run == run.shift()) & (sequence >= sequence.shift()))
    if not keys.select(step_ok.fill_null(True).all()).item():
        keys = keys.sort(_KEY)
    repeats = (run == run.shift()) & (sequence == sequence.shift())
    return keys.filter(repeats.fill_null(False)).unique(maintain_order=True)


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


def _conflicts(duplicates: pl.DataFrame) -> list[tuple[str, int]]:
    """(run, sequence) keys whose rows (of duplicate_events) are not one event (D-3)."""
    groups: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
    for run_id, sequence, type_, payload in duplicates.select(
        "run_id", "sequence", "type", "payload"
    ).iter_rows():
        groups[(run_id, sequence)].append((type_, payload))
    return [
        key for key, rows in groups.items() if not all(_same_event(rows[0], r) for r in rows[1:])
    ]


#: duplicate_row_hashes when no key is held by more than one row
_NO_ROW_HASHES = pl.DataFrame(
    schema={"run_id": pl.String, "sequence": pl.Int64, "row_hash": pl.UInt64}
)


def _collapse_duplicates(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """One row per key (D-3): a key held by several rows keeps the row duplicate_events
    chooses, scanned again on its own. Only the keys leave DuckDB. Returns the keys whose rows
    are not one event."""
    keys = _duplicate_keys(
        con.sql("SELECT run_id, sequence FROM event_scan WHERE sequence IS NOT NULL").pl()
    )
    register_frame(con, "duplicate_keys", keys)
    if keys.is_empty():
        register_frame(con, "duplicate_row_hashes", _NO_ROW_HASHES)
        return []
    duplicates = sql_files.relation(con, "duplicate_events").pl()
    register_frame(con, "duplicate_row_hashes", duplicates.select(*_KEY, "row_hash"))
    _scan_again(con, "duplicate_keys", duplicates.filter("kept"))
    return _conflicts(duplicates)


def _strict_rereads(con: duckdb.DuckDBPyConnection) -> None:
    """Re-read the payloads DuckDB reads leniently as a strict JSON parser reads them (D-7,
    E-26, E-61) and scan those rows again in their place.

    A payload that is not JSON becomes the empty text, which no parser accepts (so past the
    depth Python recurses to as well: E-60); one with a repeated key becomes its canonical text,
    where the last value stands. A row without a usable sequence has no key to be put back
    under, and is left as read.
    """
    suspects = con.sql(
        "SELECT run_id, sequence, sequence_ok, type, suspect_payload AS payload, ts, row_hash "
        "FROM event_scan WHERE payload_suspect AND sequence IS NOT NULL"
    ).pl()
    fixed: list[str] = []
    for payload in suspects["payload"]:
        try:
            fixed.append(jsonvalue.canonical_text(payload))
        except jsonvalue.NotJson:
            fixed.append("")
    rows = suspects.with_columns(payload=pl.Series(fixed, dtype=pl.String))
    register_frame(con, "fixed_event_rows", rows)
    if not rows.is_empty():
        _scan_again(con, "fixed_event_rows", rows)


def events_pass(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources,
    runs: event_files.RunRange | None,
    chosen_runs: bool = False,
) -> list[tuple[str, int]]:
    """Build `events` from one scan of the event files, as `EVENTS_PASS` orders it: duplicates
    collapsed (D-3), the payloads DuckDB reads leniently re-read as JSON (D-7). Returns the
    conflicting (run, sequence) keys (D-3). With `chosen_runs`, the runs read are the ones the
    caller put in `eval_run_ids` (child runs, E-102), not the eval runs."""
    event_files.register(con, sources, runs)
    for name in EVENTS_PASS:
        if chosen_runs and name == "eval_run_ids":
            continue
        if name in VIEWS:
            sql_files.define_view(con, name)
        else:
            sql_files.materialize(con, name)
    conflicts = _collapse_duplicates(con)
    _strict_rereads(con)
    return conflicts


def _build(
    con: duckdb.DuckDBPyConnection, sources: event_files.Sources, runs: event_files.RunRange | None
) -> tuple[list[tuple[str, int]], dict[str, pl.DataFrame]]:
    """Build every relation of the SQL stage; returns the conflicting (run, sequence) keys and
    the trial frames (`segments.FRAMES`, also registered under their names)."""
    conflicts = events_pass(con, sources, runs)
    typed = {name: sql_files.relation(con, name).pl() for name in PIPELINE if name in FETCHED}
    for name, frame in typed.items():
        register_frame(con, name, frame)
    for name in PIPELINE:
        if name not in FETCHED:
            sql_files.materialize(con, name)
    frames = segments.build(con, typed)
    for name, frame in frames.items():
        register_frame(con, name, frame)
    return conflicts, frames


def extract(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources | list[str],
    runs: event_files.RunRange | None = None,
    delegate_suites: frozenset[tuple[str, str]] = frozenset(),
) -> Extraction:
    """Run the SQL stage over the event files (`sources`, or paths to scan), for the runs of one
    batch (a range of run ids) or for all runs. The trials of eval runs of `delegate_suites`
    (suiteId, version: those with a task that includes delegates) also read the child runs
    their brackets name (E-102).

    A file whose data pages turn out to be damaged is reported and left out, and the stage runs
    again over the other files (§6: a broken file never costs the good ones).
    """
    if not isinstance(sources, event_files.Sources):
        sources = event_files.scan(con, sources)

    def build() -> tuple[list[tuple[str, int]], dict[str, pl.DataFrame], delegates.DelegateFrames]:
        conflicts, frames = _build(con, sources, runs)
        read = delegates.DelegateFrames()
        if delegate_suites:
            wanted = frames["eval_runs"].filter(
                pl.struct("suite_id", "suite_version").is_in(
                    [{"suite_id": s, "suite_version": v} for s, v in sorted(delegate_suites)]
                )
            )
            if wanted.height:
                read = delegates.read_delegates(
                    con,
                    sources,
                    frames["trial_segments"],
                    wanted,
                    frozenset(wanted["run_id"].to_list()),
                )
        register_frame(con, "trial_delegate_calls", read.calls)
        register_frame(con, "trial_delegate_faults", read.faults)
        register_frame(con, "run_delegates", read.runs)
        return conflicts, frames, read

    conflicts, frames, read = event_files.leaving_out_damaged(con, sources, build)

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
        eval_runs=frames["eval_runs"].sort("run_id"),
        trial_segments=frames["trial_segments"].sort("run_id", "segment_no"),
        trial_usage=frames["trial_usage"].sort("run_id", "segment_no"),
        trial_calls=frames["trial_calls"].sort("run_id", "segment_no", "call_pos"),
        cost_source_runs={
            row[0] for row in con.sql("SELECT run_id FROM run_cost_source").fetchall()
        },
        event_problems=event_problems,
        usage_problems=sql_files.relation(con, "usage_problems").pl(),
        delegates=read,
    )
