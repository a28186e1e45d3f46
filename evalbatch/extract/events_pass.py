"""The events pass: one scan of the event files that parses each payload once, and the
checks the scan cannot make exactly (D-3, D-7, E-26, E-61).

It builds `events` for a set of runs — the eval runs of a batch (`eval_run_ids`), or the child
runs a batch's trials name (E-102, `chosen_runs`) — in the order `EVENTS_PASS` gives: the rows as
read, the scan, then a duplicated key's rows collapsed into one (D-3: equal by D-7, keys found by
adjacency) and the payloads DuckDB's lenient parser accepts but JSON does not (NaN, Infinity,
trailing commas) or reads differently (a repeated key: JSON parsers keep the last) scanned again
as a strict parser reads them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import NamedTuple

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from evalbatch import jsonvalue, problems
from evalbatch.extract import extractor, native_scan, scan_fields, sql_files
from evalbatch.inputs import event_files
from evalbatch.options import DEFAULT_BATCH_EVENTS, Resources

#: the events pass, in dependency order: which runs are eval runs, their rows as read (a view),
#: the one scan that parses each row's payload (stored, then its duplicate and lenient rows
#: replaced: `events_pass`) and the `events` it leaves
EVENTS_PASS = ("eval_run_ids", "scan_rows", "event_scan", "events")
#: the queries of `EVENTS_PASS` kept as views rather than tables
VIEWS = frozenset({"scan_rows", "events"})

#: the relations the pass builds in Python from what the scan found, registered in the connection
#: under these names (the queries of sql/ read them as tables), with what a row is and which
#: rules decide the rows
FRAMES: dict[str, str] = {
    "duplicate_keys": (
        "(runId, sequence) keys held by more than one row of an eval run (D-3), found as equal "
        "neighbours of the scanned keys in key order (no GROUP BY over all rows), or none when "
        "the native walk saw each key held once (E-108); usually none."
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
}

#: the value ranges of `problems` (E-76..E-78) as SQL macros, so the queries in sql/ name the one
#: constant instead of repeating its number
_LIMIT_MACROS = "\n".join(
    f"CREATE OR REPLACE TEMP MACRO {name.lower()}() AS {getattr(problems, name)};"
    for name in ("MAX_SEQUENCE", "MAX_COST_USD", "MAX_LATENCY_MS", "MAX_TOKENS", "MAX_TRIALS")
)

#: the payload fields of `f` by name (E-134), one macro per type
_FIELD_MACROS = scan_fields.macros()


def new_connection(resources: Resources | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with UTC timestamps (naive ones are read as UTC), using
    `resources` (a memory limit caps DuckDB's memory; past it, work spills)."""
    con = duckdb.connect(":memory:")
    (resources or Resources()).apply(con)
    prepare(con)
    return con


def prepare(
    con: duckdb.DuckDBPyConnection, parent: duckdb.DuckDBPyConnection | None = None
) -> None:
    """What every query of the stage expects of its connection: UTC timestamps and the shared
    macros, `f`'s fields by name among them (E-134; a cursor of a connection needs them again:
    they are its own), and for a cursor its `parent`'s extractor."""
    con.execute("SET TimeZone = 'UTC'")
    con.execute(sql_files.load_query("macros").text)
    con.execute(_LIMIT_MACROS)
    con.execute(_FIELD_MACROS)
    if parent is not None:
        extractor.carry_choice(parent, con)


#: the columns of a row the scan reads (scan_rows), as a frame of rows to scan again
_ROW_COLUMNS = ("run_id", "sequence", "sequence_ok", "type", "payload", "ts", "row_hash")
_KEY = ("run_id", "sequence")


def register_frame(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> None:
    """Make `frame` readable in `con` under `name` (Arrow, no copy)."""
    con.register(name, frame.to_arrow())


def _scan_again(con: duckdb.DuckDBPyConnection, keys: str, rows: pl.DataFrame) -> None:
    """Replace the rows of event_scan whose keys are in the relation `keys` by the scan of
    `rows` (`_ROW_COLUMNS`: rows re-read for a second look)."""
    _stored(con)
    scratch = "__evalbatch_rescan"
    con.register(scratch, rows.select(_ROW_COLUMNS).to_arrow())
    try:
        con.execute(
            "DELETE FROM event_scan WHERE (run_id, sequence) IN "
            f"(SELECT run_id, sequence FROM {keys})"
        )
        query = sql_files.load_query("event_scan").text
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


#: duplicate_keys when the scan saw each key held by one row
_NO_KEYS = pl.DataFrame(schema={"run_id": pl.String, "sequence": pl.Int64})


def _collapse_duplicates(
    con: duckdb.DuckDBPyConnection, held_once: bool = False
) -> list[tuple[str, int]]:
    """One row per key (D-3): a key held by several rows keeps the row duplicate_events
    chooses, scanned again on its own. Only the keys leave DuckDB, and not even they when the
    scan saw each held by one row (`held_once`). Returns the keys whose rows are not one
    event."""
    keys = (
        _NO_KEYS
        if held_once
        else _duplicate_keys(
            con.sql("SELECT run_id, sequence FROM event_scan WHERE sequence IS NOT NULL").pl()
        )
    )
    register_frame(con, "duplicate_keys", keys)
    if keys.is_empty():
        register_frame(con, "duplicate_row_hashes", _NO_ROW_HASHES)
        return []
    duplicates = sql_files.relation(con, "duplicate_events").pl()
    register_frame(con, "duplicate_row_hashes", duplicates.select(*_KEY, "row_hash"))
    _scan_again(con, "duplicate_keys", duplicates.filter("kept"))
    return _conflicts(duplicates)


def _strict_rereads(con: duckdb.DuckDBPyConnection, look: bool = True) -> None:
    """Re-read the payloads DuckDB reads leniently as a strict JSON parser reads them (D-7,
    E-26, E-61) and scan those rows again in their place.

    A payload that is not JSON becomes the empty text, which no parser accepts (so past the
    depth Python recurses to as well: E-60); one with a repeated key becomes its canonical text,
    where the last value stands. A row without a usable sequence has no key to be put back
    under, and is left as read. Without `look`, the scan is known to have marked no row suspect
    (the native walk's own count), and event_scan is not read again.
    """
    query = (
        "SELECT run_id, sequence, sequence_ok, type, suspect_payload AS payload, ts, row_hash "
        "FROM event_scan WHERE payload_suspect AND sequence IS NOT NULL"
    )
    suspects = con.sql(query if look else f"{query} LIMIT 0").pl()
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


#: the most rows whose event_scan the native extractor leaves in place, as the Arrow table it built
#: (E-108): a batch of `run`'s size is read faster so; a larger one (every run of a large log in
#: one batch, as a notebook's connection reads it) is copied into DuckDB, whose memory limit holds
#: it and spills past it, where Python's memory would only grow
IN_PLACE_ROWS = 2 * DEFAULT_BATCH_EVENTS

#: event_scan's input rows as its own query reads them (its `rows`), for the native extractor
_SCAN_INPUT = (
    "SELECT run_id, sequence, sequence_ok, v2_type(type) AS type, "
    "coalesce(payload, 'null') AS payload, ts, row_hash FROM scan_rows"
)


def _streamed(relation: duckdb.DuckDBPyRelation, rows: int) -> Iterator[pa.RecordBatch]:
    """The rows of `relation`, `rows` at a time. DuckDB's error in producing them (a damaged
    file met while reading: E-22) reaches Python through the Arrow stream as Arrow's exception
    (an OSError) once the stream has started; it is raised as DuckDB's, which the damaged-file
    pass takes (`event_files.leaving_out_damaged`), as it is when the stream has not."""
    reader = relation.to_arrow_reader(rows)
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as exc:
            raise duckdb.InvalidInputException(str(exc)) from exc
        yield batch


class _NativeFacts(NamedTuple):
    """What the native extractor's scan of a batch saw, so the events pass looks no further."""

    #: every (run_id, sequence) key is held by one row only (D-3)
    held_once: bool
    #: some row is marked suspect (D-7, E-26, E-61: only the reference query marks one)
    suspects: bool


#: what the events pass assumes of a scan it knows nothing of (DuckDB's): look for both
_UNKNOWN = _NativeFacts(held_once=False, suspects=True)


def _scan_natively(con: duckdb.DuckDBPyConnection) -> _NativeFacts:
    """Store event_scan as the native extractor gives it (E-108): the rows of scan_rows read
    batch by batch, each payload walked once, the rows the walk leaves to the reference query
    scanned by it (on a cursor: the connection is streaming the rows)."""
    threads = int(con.sql("SELECT current_setting('threads')").fetchall()[0][0])
    # the previous batch's scan, as either kind, is let go before this one is built
    con.unregister("event_scan")
    con.execute("DROP TABLE IF EXISTS event_scan")
    reference = con.cursor()
    try:
        prepare(reference)
        parts, blocks = [], []
        for batch in _streamed(con.sql(_SCAN_INPUT), native_scan.BATCH_ROWS):
            blocks.append(native_scan.key_blocks(batch))
            parts.append(native_scan.scan_batch(reference, batch, threads))
    finally:
        reference.close()
    if not parts:
        sql_files.materialize(con, "event_scan")
        return _NativeFacts(held_once=True, suspects=False)
    facts = _NativeFacts(
        held_once=native_scan.keys_held_once(blocks),
        suspects=any(pc.any(part["payload_suspect"]).as_py() for part in parts),
    )
    scanned = pa.concat_tables(parts)
    del parts
    if scanned.num_rows > IN_PLACE_ROWS:
        _copy_in(con, scanned)
    else:
        con.register("event_scan", scanned)
    return facts


def _copy_in(con: duckdb.DuckDBPyConnection, scanned: pa.Table) -> None:
    """Store `scanned` as the DuckDB table event_scan."""
    scratch = "__evalbatch_native_scan"
    con.register(scratch, scanned)
    try:
        con.execute(f"CREATE TEMP TABLE event_scan AS FROM {scratch}")
    finally:
        con.unregister(scratch)


def _stored(con: duckdb.DuckDBPyConnection) -> None:
    """Make event_scan a table, for a second look that changes its rows: the native extractor
    leaves a batch's as the Arrow table it built, registered under the name (E-108: read in
    place, as most batches never change a row)."""
    views = con.sql(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = 'event_scan' AND temporary"
    ).fetchall()[0][0]
    if not views:
        return
    scanned = con.sql("FROM event_scan").to_arrow_table()
    con.unregister("event_scan")
    _copy_in(con, scanned)


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
    facts = _UNKNOWN
    for name in EVENTS_PASS:
        if chosen_runs and name == "eval_run_ids":
            continue
        if name in VIEWS:
            sql_files.define_view(con, name)
        elif name == "event_scan" and extractor.chosen(con) == "native":
            facts = _scan_natively(con)
        elif name == "event_scan":
            con.unregister("event_scan")
            sql_files.materialize(con, name)
        else:
            sql_files.materialize(con, name)
    conflicts = _collapse_duplicates(con, facts.held_once)
    # a row the collapse scans again has the text of a row already scanned: no new suspect
    _strict_rereads(con, look=facts.suspects)
    return conflicts
