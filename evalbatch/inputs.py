"""Find the event files and present them to the SQL stage as one `source_events` view (§1.1).

Files, directories and globs are accepted, hive-partitioned or not. Each file's columns are looked
up once; aliases (`run_id`, `seq`, `data`) are mapped to the canonical names, a struct payload is
turned into JSON with null fields dropped (E-7), and files that cannot be read or lack a required
column are reported and left out while every other file is read.
"""

from __future__ import annotations

import glob
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from evalbatch.errors import InputError

#: canonical column -> accepted spellings, in order of preference
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "runId": ("runId", "run_id"),
    "sequence": ("sequence", "seq"),
    "type": ("type",),
    "payload": ("payload", "data"),
}
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {"timestamp": ("timestamp",)}


@dataclass(frozen=True)
class FileProblem:
    """A file that was left out, and why."""

    path: str
    code: str  # file-unreadable | columns-missing
    message: str


@dataclass
class Sources:
    """The readable event files, grouped by how their columns map, plus the files left out."""

    groups: dict[tuple[tuple[str, str], ...], list[str]] = field(default_factory=dict)
    problems: list[FileProblem] = field(default_factory=list)
    #: grade only these runs (an incremental run's new and changed runs); None is every run
    only_runs: frozenset[str] | None = None


def expand_paths(paths: list[str]) -> list[str]:
    """Files named directly, every `*.parquet` below a directory, glob matches; sorted."""
    found: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.update(str(p) for p in path.rglob("*.parquet") if p.is_file())
        elif path.is_file():
            found.add(str(path))
        else:
            matches = [m for m in glob.glob(raw, recursive=True) if Path(m).is_file()]
            if not matches:
                raise InputError(
                    f"no event file at {raw!r}: give Parquet files, directories or globs"
                )
            found.update(matches)
    return sorted(found)


def _pick(columns: dict[str, str], spellings: tuple[str, ...]) -> str | None:
    return next((name for name in spellings if name in columns), None)


def hive_keys(path: str) -> tuple[str, ...]:
    """The hive partition keys in a file's path (`date=2026-11-02/...`), outermost first."""
    return tuple(part.split("=", 1)[0] for part in Path(path).parent.parts if "=" in part)


def _column_plan(con: duckdb.DuckDBPyConnection, path: str) -> tuple[tuple[str, str], ...]:
    """How one file's columns map to the canonical ones: ((canonical, 'column:type'), ...).

    Files are grouped by this plan, so it also carries the file's hive keys: one read of a group
    must see the same partition layout in every file.
    """
    keys = hive_keys(path)
    relation = con.read_parquet(path, hive_partitioning=bool(keys))
    columns = dict(zip(relation.columns, map(str, relation.types), strict=True))
    plan: list[tuple[str, str]] = [("hive", "/".join(keys))]
    missing = []
    for canonical, spellings in (COLUMN_ALIASES | OPTIONAL_COLUMNS).items():
        chosen = _pick(columns, spellings)
        if chosen is None:
            if canonical in COLUMN_ALIASES:
                missing.append(canonical)
            continue
        plan.append((canonical, f"{chosen}:{columns[chosen]}"))
    if missing:
        have = ", ".join(sorted(columns)) or "none"
        raise KeyError(
            f"missing required column(s) {', '.join(missing)} (accepted spellings: "
            + "; ".join("|".join(COLUMN_ALIASES[m]) for m in missing)
            + f"); the file has: {have}"
        )
    return tuple(plan)


def scan(con: duckdb.DuckDBPyConnection, paths: list[str]) -> Sources:
    """Look at every file's columns; group the usable ones, report the rest."""
    sources = Sources()
    groups: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
    for path in expand_paths(paths):
        try:
            plan = _column_plan(con, path)
        except KeyError as exc:
            sources.problems.append(FileProblem(path, "columns-missing", f"{path}: {exc.args[0]}"))
            continue
        except duckdb.Error as exc:
            reason = str(exc).splitlines()[0]
            sources.problems.append(
                FileProblem(
                    path, "file-unreadable", f"{path}: not a readable Parquet file ({reason})"
                )
            )
            continue
        groups[plan].append(path)
    sources.groups = dict(sorted(groups.items()))
    return sources


def find_unreadable(con: duckdb.DuckDBPyConnection, sources: Sources) -> list[FileProblem]:
    """Read every file in full and report those whose data cannot be decoded.

    The column check reads only a file's footer; a file damaged inside its data pages fails only
    when the events are read, so after such a failure each file is read once more on its own.
    """
    bad: list[FileProblem] = []
    for plan, paths in sources.groups.items():
        hive = dict(plan)["hive"] != ""
        for path in paths:
            try:
                con.read_parquet(path, hive_partitioning=hive).aggregate(
                    "min(hash(COLUMNS(*)))"
                ).fetchall()
            except duckdb.Error as exc:
                reason = str(exc).splitlines()[0]
                bad.append(
                    FileProblem(path, "file-unreadable", f"{path}: damaged Parquet data ({reason})")
                )
    if bad:
        broken = {problem.path for problem in bad}
        sources.groups = {
            plan: kept
            for plan, paths in sources.groups.items()
            if (kept := [p for p in paths if p not in broken])
        }
        sources.problems.extend(bad)
    return bad


#: a batch of whole runs: the run ids from `low` (inclusive) to `high` (exclusive); None is open
RunRange = tuple[str | None, str | None]


def _range_filter(run_col: str, runs: RunRange | None, only: bool = False) -> str:
    """Rows with a run id (a row without one belongs to no run: counted once by `plan_batches`),
    inside the batch's range of run ids (and, with `only`, among the `selected_runs`)."""
    col = f"CAST({_ident(run_col)} AS VARCHAR)"
    low, high = runs or (None, None)
    where = [f"{col} IS NOT NULL"]
    if only:
        where.append(f"{col} IN (SELECT run_id FROM selected_runs)")
    if low is not None:
        where.append(f"{col} >= {_literal(low)}")
    if high is not None:
        where.append(f"{col} < {_literal(high)}")
    return " WHERE " + " AND ".join(where)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _payload_expr(column: str, type_name: str) -> str:
    col = _ident(column)
    upper = type_name.upper()
    if upper.startswith(("STRUCT", "MAP")):
        # E-7: a struct is the union of all events' fields; a merge patch onto {} drops nulls.
        return f"json_merge_patch('{{}}', to_json({col}))"
    if upper == "BLOB":
        return f"decode({col})"
    return f"CAST({col} AS VARCHAR)"


def _timestamp_expr(column: str, type_name: str) -> str:
    col = _ident(column)
    if type_name.upper().startswith("TIMESTAMP"):
        return f"CAST({col} AS TIMESTAMPTZ)"
    return f"TRY_CAST(CAST({col} AS VARCHAR) AS TIMESTAMPTZ)"


@dataclass(frozen=True)
class BatchPlan:
    """How the runs are split into batches, and what the split saw."""

    ranges: list[RunRange]
    events: list[int]  # events per batch
    runs: int  # runs in the input (eval or not)
    rows_without_run: int


def plan_batches(
    con: duckdb.DuckDBPyConnection,
    sources: Sources,
    batch_events: int | None = None,
    batches: int | None = None,
) -> BatchPlan:
    """Split the runs, in run-id order, into batches of whole runs of about `batch_events` events
    (or into about `batches` batches of equal size).

    Batches are ranges of run ids, so each batch's outputs follow the previous one's in sorted
    order and can be written as they come; only the run-id column is read here.
    """
    register(con, sources, runs=None)
    counts = con.execute(
        "SELECT run_id, count(*) FROM source_runs GROUP BY run_id ORDER BY run_id"
    ).fetchall()
    (without,) = con.execute(
        "SELECT count(*) FROM (" + _runs_union(sources, with_nulls=True) + ") WHERE run_id IS NULL"
    ).fetchall()
    if batches:
        batch_events = -(-sum(count for _, count in counts) // batches)
    batch_events = max(1, batch_events or 1)
    ranges: list[RunRange] = []
    events: list[int] = []
    low: str | None = None
    size = 0
    for run_id, count in counts:
        if size and size + count > batch_events:
            ranges.append((low, run_id))
            events.append(size)
            low, size = run_id, 0
        size += count
    ranges.append((low, None))
    events.append(size)
    return BatchPlan(ranges, events, len(counts), int(without[0]))


def _runs_union(sources: Sources, with_nulls: bool = False) -> str:
    """Just the run-id column of every usable file (one cheap column to read)."""
    selects = []
    for number, (plan, _) in enumerate(sources.groups.items()):
        run_col = dict(plan)["runId"].split(":", 1)[0]
        where = "" if with_nulls else _range_filter(run_col, None, sources.only_runs is not None)
        selects.append(
            f"SELECT CAST({_ident(run_col)} AS VARCHAR) AS run_id FROM source_group_{number}{where}"
        )
    return " UNION ALL ".join(selects)


def register(
    con: duckdb.DuckDBPyConnection, sources: Sources, runs: RunRange | None = None
) -> None:
    """Create the `source_events` view over every usable file (columns run_id, sequence,
    sequence_ok, type, payload, ts) holding the rows of the runs in `runs` (all runs when None),
    and the `source_runs` view of their run ids."""
    if not sources.groups:
        raise InputError(
            "no usable event file: "
            + ("; ".join(p.message for p in sources.problems) or "no Parquet file found")
        )
    if sources.only_runs is not None:
        selected = pa.table({"run_id": pa.array(sorted(sources.only_runs), pa.string())})
        con.register("selected_runs_arrow", selected)
        con.execute("CREATE OR REPLACE TEMP TABLE selected_runs AS FROM selected_runs_arrow")
        con.unregister("selected_runs_arrow")
    selects = []
    for number, (plan, paths) in enumerate(sources.groups.items()):
        view = f"source_group_{number}"
        hive = dict(plan)["hive"] != ""
        con.read_parquet(paths, hive_partitioning=hive, union_by_name=True).create_view(
            view, replace=True
        )
        columns = {canonical: spec.split(":", 1) for canonical, spec in plan if canonical != "hive"}
        run_col, seq_col, type_col = (columns[c][0] for c in ("runId", "sequence", "type"))
        payload_col, payload_type = columns["payload"]
        ts = (
            _timestamp_expr(*columns["timestamp"])
            if "timestamp" in columns
            else "CAST(NULL AS TIMESTAMPTZ)"
        )
        selects.append(
            f"SELECT CAST({_ident(run_col)} AS VARCHAR) AS run_id, "
            f"TRY_CAST({_ident(seq_col)} AS BIGINT) AS sequence, "
            f"TRY_CAST({_ident(seq_col)} AS BIGINT) IS NOT NULL AS sequence_ok, "
            f"CAST({_ident(type_col)} AS VARCHAR) AS type, "
            f"{_payload_expr(payload_col, payload_type)} AS payload, "
            f"{ts} AS ts FROM {view}" + _range_filter(run_col, runs, sources.only_runs is not None)
        )
    con.execute("CREATE OR REPLACE TEMP VIEW source_events AS " + " UNION ALL ".join(selects))
    con.execute("CREATE OR REPLACE TEMP VIEW source_runs AS " + _runs_union(sources))


@dataclass(frozen=True)
class RunFilter:
    """Which runs a command reads (E-63): run ids matching any glob in `run_ids`, and eval runs
    whose `eval.started` names a suite in `suites` and falls in [`since`, `until`)."""

    run_ids: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    @property
    def empty(self) -> bool:
        return not (self.run_ids or self.suites or self.since or self.until)

    def apply(self, con: duckdb.DuckDBPyConnection, sources: Sources) -> None:
        """Narrow `sources` to the runs that pass (read once: run ids, and `eval.started` rows
        for the suite and time bounds); every later scan of the sources reads only them."""
        if self.empty:
            return
        register(con, sources, None)
        where: list[str] = []
        params: list[Any] = []
        if self.run_ids:
            where.append("(" + " OR ".join("run_id GLOB ?" for _ in self.run_ids) + ")")
            params += list(self.run_ids)
        if self.suites or self.since or self.until:
            started = ["type IN ('eval.started')"]
            if self.suites:
                started.append(
                    "json_extract_string(CASE WHEN json_valid(payload) THEN payload END, "
                    "'$.suiteId') IN (SELECT unnest(?::VARCHAR[]))"
                )
                params.append(list(self.suites))
            if self.since:
                started.append("ts >= ?")
                params.append(self.since)
            if self.until:
                started.append("ts < ?")
                params.append(self.until)
            where.append(
                "run_id IN (SELECT run_id FROM source_events WHERE " + " AND ".join(started) + ")"
            )
        query = "SELECT DISTINCT run_id FROM source_runs WHERE " + " AND ".join(where)
        chosen = frozenset(run_id for (run_id,) in con.execute(query, params).fetchall())
        if sources.only_runs is not None:
            chosen &= sources.only_runs
        sources.only_runs = chosen
