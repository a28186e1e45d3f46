"""Find the event files and present them to the SQL stage as one `source_events` view (§1.1).

Files, directories and globs are accepted, hive-partitioned or not. Each file's columns are looked
up once; aliases (`run_id`, `seq`, `data`) are mapped to the canonical names, a struct payload is
turned into JSON with null fields dropped (E-7), and files that cannot be read or lack a required
column are reported and left out while every other file is read.
"""

from __future__ import annotations

import glob
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from evalbatch.errors import InputError
from evalbatch.inputs import inspect_cache, inspect_logs, object_store, parquet_layout
from evalbatch.problems import MAX_SEQUENCE, ProblemRow

_T = TypeVar("_T")

#: canonical column -> accepted spellings, in order of preference
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "runId": ("runId", "run_id"),
    "sequence": ("sequence", "seq"),
    "type": ("type",),
    "payload": ("payload", "data"),
}
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {"timestamp": ("timestamp",)}
#: column types whose values are integers as stored (no fraction to check)
_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"}
    | {"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
)
#: E-125: the kinds of column (DuckDB's type name up to its first parenthesis) each required
#: column may be, and what it holds, for the message naming one that is not: a run id as text
#: (or an integer or UUID, read as its text), a sequence as E-76 reads it, a type name as text,
#: a payload as JSON text, bytes of it, or a struct or map (E-7). Bytes are not text: a runId or
#: type read from a BLOB is escaped (`\xFF`), an id that is not the log's (E-79).
COLUMN_KINDS: dict[str, tuple[frozenset[str], str]] = {
    "runId": (frozenset({"VARCHAR", "UUID"}) | _INTEGER_TYPES, "text"),
    "sequence": (
        frozenset({"FLOAT", "DOUBLE", "DECIMAL", "VARCHAR"}) | _INTEGER_TYPES,
        "integers",
    ),
    "type": (frozenset({"VARCHAR"}), "text"),
    "payload": (
        frozenset({"VARCHAR", "JSON", "BLOB", "STRUCT", "MAP"}),
        "JSON text (or a struct or map column)",
    ),
}


@dataclass(frozen=True)
class FileProblem:
    """A file that was left out, and why."""

    path: str
    code: str  # file-unreadable | columns-missing, or ingest's code for an Inspect log (E-144)
    message: str


@dataclass
class Sources:
    """The readable event files, grouped by how their columns map, plus the files left out."""

    groups: dict[tuple[tuple[str, str], ...], list[str]] = field(default_factory=dict)
    problems: list[FileProblem] = field(default_factory=list)
    #: grade only these runs (an incremental run's new and changed runs); None is every run
    only_runs: frozenset[str] | None = None


def problem_rows(problems: Iterable[FileProblem], rows_without_run: int = 0) -> list[ProblemRow]:
    """The problems not tied to a run: each file left out (once per file and code, in path
    order) and, when some rows name no run, one `row-invalid` counting them (E-3)."""
    found = {(problem.path, problem.code): problem for problem in problems}
    rows: list[ProblemRow] = [(None, None, p.code, p.message) for _, p in sorted(found.items())]
    if rows_without_run:
        rows.append((None, None, "row-invalid", f"{rows_without_run} row(s)"))
    return rows


def expand_paths(paths: list[str]) -> list[str]:
    """Files named directly, every `*.parquet` and every Inspect eval log (E-144) below a
    directory, glob matches; sorted. The index files of an Inspect eval set hold no events and
    are left out, however they were found (E-143). An object-store URI (`s3://...`: E-153) is
    expanded in its store, as a path is on the disk."""
    return _expand(paths)[0]


def _expand(paths: list[str]) -> tuple[list[str], list[object_store.Listing]]:
    """`expand_paths`, and what the listings of object-store URIs saw (their ingest markers)."""
    found: set[str] = set()
    listings: list[object_store.Listing] = []
    for raw in paths:
        if object_store.is_remote(raw):
            listings.append(object_store.expand(raw))
            found.update(listings[-1].files)
            continue
        path = Path(raw)
        if path.is_dir():
            found.update(
                str(p)
                for p in path.rglob("*")
                if (
                    p.name.endswith(".parquet")
                    or (inspect_cache.may_be_log(p.name) and inspect_cache.is_inspect_log(p))
                )
                and p.is_file()
            )
        elif path.is_file():
            found.add(str(path))
        else:
            object_store.check_scheme(raw)
            matches = [m for m in glob.glob(raw, recursive=True) if Path(m).is_file()]
            if not matches:
                raise InputError(
                    f"no event file at {raw!r}: give Parquet files, Inspect logs, directories "
                    "or globs"
                )
            found.update(matches)
    files = sorted(path for path in found if not inspect_logs.is_eval_set_index(path))
    return files, listings


def read_parquet(
    con: duckdb.DuckDBPyConnection,
    paths: str | list[str],
    hive: bool,
    union_by_name: bool = False,
) -> duckdb.DuckDBPyRelation:
    """DuckDB's Parquet reader over local files or object-store URIs alike: a URI is read
    through `pyarrow.fs` (E-153), by the same reader, so both give one answer."""
    object_store.attach(con, [paths] if isinstance(paths, str) else paths)
    return con.read_parquet(paths, hive_partitioning=hive, union_by_name=union_by_name)


def _pick(columns: dict[str, str], spellings: tuple[str, ...]) -> str | None:
    return next((name for name in spellings if name in columns), None)


def hive_keys(path: str) -> tuple[str, ...]:
    """The hive partition keys in a file's path (`date=2026-11-02/...`), outermost first."""
    return tuple(part.split("=", 1)[0] for part in Path(path).parent.parts if "=" in part)


def _column_plan(con: duckdb.DuckDBPyConnection, path: str) -> tuple[tuple[str, str], ...]:
    """How one file's columns map to the canonical ones: ((canonical, 'column:type'), ...).
    KeyError names a required column the file lacks, or holds in a type that cannot hold its
    values (E-125) while the file holds rows.

    Files are grouped by this plan, so it also carries the file's hive keys: one read of a group
    must see the same partition layout in every file.
    """
    keys = hive_keys(path)
    relation = read_parquet(con, path, hive=bool(keys))
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
    for canonical, spec in plan:
        chosen, _, type_name = spec.partition(":")
        if canonical not in COLUMN_KINDS or chosen in keys:  # a hive key is the path's text
            continue
        fault = _kind_fault(canonical, chosen, type_name)
        # a file of no rows loses nothing, whatever its types (an empty Arrow table's columns
        # are often of type null): it is read as before, and an empty log stays empty (E-70)
        if fault and relation.aggregate("count(*)").fetchall() != [(0,)]:
            raise KeyError(fault)
    return tuple(plan)


def _type_kind(type_name: str) -> str:
    """A column type's kind, without the field names a nested type carries (content-free):
    `STRUCT`, `MAP`, `LIST` (`INTEGER[]`), `ARRAY` (`INTEGER[3]`), `DECIMAL`, `BIGINT`..."""
    name = type_name.upper().strip('"')  # DuckDB quotes the type NULL
    if name.endswith("[]"):
        return "LIST"
    if name.endswith("]"):
        return "ARRAY"
    return name.split("(", 1)[0].strip()


def _kind_fault(canonical: str, chosen: str, type_name: str) -> str | None:
    """Why a required column's type cannot hold its values (E-79, E-125), None when it can: a
    `type` stored as integers named no event, so every row was ignored; a boolean sequence
    numbered rows 0 and 1; a payload of numbers or lists held no object. Content-free: the
    column's name, its role and its kind, never a value or a nested type's field names."""
    kinds, holds = COLUMN_KINDS[canonical]
    kind = _type_kind(type_name)
    if kind in kinds:
        return None
    fix = "a UTF-8 string column" if holds == "text" else holds
    if kind == "BLOB":
        return f"column {chosen} ({canonical}) holds bytes (BLOB), not text: write it as {fix}"
    if kind == "NULL":
        return (
            f"column {chosen} ({canonical}) holds no values (its type is NULL): write it as {fix}"
        )
    return f"column {chosen} ({canonical}) holds {kind} values, not {holds}: write it as {fix}"


def scan(con: duckdb.DuckDBPyConnection, paths: list[str]) -> Sources:
    """Look at every file's columns; group the usable ones, report the rest. The files below a
    directory an ingest is linking into, or was killed linking into, are left out, and the
    directory is reported once (E-122): a run there may have only some of its parts. An
    Inspect eval log is read as the Parquet files `ingest` makes of it (E-144); one that
    cannot be read is reported by its own path, and the other files are read."""
    sources = Sources()
    groups: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
    found, listings = _expand(paths)
    files, logs = inspect_cache.as_parquet(found)
    sources.problems += [problem for log in logs for problem in _log_problems(log)]
    on_disk = [path for path in files if not object_store.is_remote(path)]
    in_store = [path for path in files if object_store.is_remote(path)]
    interrupted = parquet_layout.interrupted_ingests(
        [path for path in paths if not object_store.is_remote(path)], on_disk
    ) | object_store.interrupted(paths, in_store, listings)
    for directory, below in interrupted.items():
        sources.problems.append(
            FileProblem(directory, "file-unreadable", _interrupted_reason(directory, len(below)))
        )
    left_out = {path for below in interrupted.values() for path in below}
    for path in files:
        if path in left_out:
            continue
        try:
            plan = _column_plan(con, path)
        except KeyError as exc:
            sources.problems.append(FileProblem(path, "columns-missing", f"{path}: {exc.args[0]}"))
            continue
        except duckdb.Error:
            sources.problems.append(
                FileProblem(path, "file-unreadable", f"{path}: {_footer_reason(path)}")
            )
            continue
        groups[plan].append(path)
    sources.groups = dict(sorted(groups.items()))
    return sources


def _log_problems(log: inspect_cache.Converted) -> list[FileProblem]:
    """What converting an Inspect log skipped, as `ingest` says it (its code and reason), one
    problem per code: the warnings are left to the grading, which reports the trials they
    leave without a score and the eval left without eval.completed in its own words."""
    reasons: dict[str, list[str]] = defaultdict(list)
    for problem in log.errors:
        reasons[problem.code].append(
            f"{problem.where}: {problem.reason}" if problem.where else problem.reason
        )
    return [
        FileProblem(log.log, code, f"{log.log}: {'; '.join(texts)}")
        for code, texts in reasons.items()
    ]


def _interrupted_reason(directory: str, files: int) -> str:
    return (
        f"{directory}: an ingest into it was interrupted or is running "
        f"({parquet_layout.INCOMPLETE} is there): its runs may be partial, so its "
        f"{files} Parquet file{'s' if files != 1 else ''} {'are' if files != 1 else 'is'} "
        "left out; ingest again into it (E-122)"
    )


_NOT_PARQUET = "not a readable Parquet file (not Parquet, or its footer is truncated or damaged)"


def _footer_reason(path: str) -> str:
    """Why a file's footer cannot be read, without DuckDB's text (it can quote file bytes)."""
    if object_store.is_remote(path):
        reason = object_store.read_error(path)
        return f"cannot be read ({reason})" if reason else _NOT_PARQUET
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    return _NOT_PARQUET


def _damaged_columns(
    con: duckdb.DuckDBPyConnection, path: str, plan: tuple[tuple[str, str], ...]
) -> str:
    """Which of a damaged file's columns fail to decode, named by the role grading gives them
    (runId, sequence, type, payload, timestamp; any other column is "another column"), so the
    message carries no name or value taken from the file."""
    roles = {spec.split(":", 1)[0]: canonical for canonical, spec in plan if canonical != "hive"}
    relation = read_parquet(con, path, hive=dict(plan)["hive"] != "")
    damaged: list[str] = []
    for column in relation.columns:
        try:
            relation.aggregate(f"min(hash({_ident(column)}))").fetchall()
        except duckdb.Error:
            role = roles.get(column)
            damaged.append(f"its {role} column" if role else "another column")
    return ", ".join(dict.fromkeys(damaged)) or "its data pages"


def find_unreadable(con: duckdb.DuckDBPyConnection, sources: Sources) -> list[FileProblem]:
    """Read every file in full and report those whose data cannot be decoded (E-22).

    The column check reads only a file's footer; a file damaged inside its data pages (cut
    pages, invalid UTF-8 in a string column) fails only when its rows are read, so after such a
    failure each file is read once more on its own. The message names the file and the damaged
    columns' roles, never DuckDB's text, which quotes the offending value (§H).
    """
    bad: list[FileProblem] = []
    for plan, paths in sources.groups.items():
        hive = dict(plan)["hive"] != ""
        for path in paths:
            try:
                read_parquet(con, path, hive=hive).aggregate("min(hash(COLUMNS(*)))").fetchall()
            except duckdb.Error:
                bad.append(FileProblem(path, "file-unreadable", _data_reason(con, path, plan)))
    if bad:
        broken = {problem.path for problem in bad}
        sources.groups = {
            plan: kept
            for plan, paths in sources.groups.items()
            if (kept := [p for p in paths if p not in broken])
        }
        sources.problems.extend(bad)
    return bad


def _data_reason(
    con: duckdb.DuckDBPyConnection, path: str, plan: tuple[tuple[str, str], ...]
) -> str:
    """Why a file's rows could not be read: an object that can no longer be fetched (E-153)
    says so, rather than naming columns that could not be decoded."""
    unreachable = object_store.read_error(path) if object_store.is_remote(path) else None
    if unreachable:
        return f"{path}: cannot be read ({unreachable})"
    where = _damaged_columns(con, path, plan)
    return f"{path}: damaged Parquet data (invalid values or pages in {where})"


#: DuckDB errors that are not about the data read: stopping on purpose, running out of memory
NOT_THE_DATA = (duckdb.InterruptException, duckdb.OutOfMemoryException)


def leaving_out_damaged(
    con: duckdb.DuckDBPyConnection, sources: Sources, read: Callable[[], _T]
) -> _T:
    """`read()` over the sources; when DuckDB fails, leave out the files whose data cannot be
    decoded (E-22) and read again, so a damaged file costs only its own runs (§6). A failure no
    damaged file explains is raised."""
    try:
        return read()
    except NOT_THE_DATA:
        raise  # a cancelled pass or a full memory says nothing about the files: no re-read
    except duckdb.Error:
        if not find_unreadable(con, sources):
            raise
        return read()


#: a batch of whole runs: the run ids from `low` (inclusive) to `high` (exclusive); None is open
RunRange = tuple[str | None, str | None]


#: E-3: a runId of these characters only (Unicode's White_Space, RE2's syntax) names no run
_BLANK_RUN_ID = (
    r"[\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}"
    r"\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]*"
)


def _run_id_expr(run_col: str) -> str:
    """The row's run id as text, NULL when it is empty or white space only (E-3: it names no
    run, as a null one). Ids starting with a printable ASCII character skip the pattern."""
    col = f"CAST({_ident(run_col)} AS VARCHAR)"
    return (
        f"CASE WHEN {col} >= '!' AND {col} < chr(127) THEN {col} "
        f"WHEN regexp_full_match({col}, '{_BLANK_RUN_ID}') THEN NULL ELSE {col} END"
    )


#: E-140: the most chosen run ids also named as literals on the run-id column itself, which
#: DuckDB checks against each row group's statistics: a few runs of a large log are read without
#: decompressing the others' rows (more ids are matched through `selected_runs` alone)
PUSHED_RUN_IDS = 1000


def _pushed_ids(run_col: str, run_type: str, only: frozenset[str] | None) -> str | None:
    """The chosen runs as a condition on the run-id column as stored (E-140), where it is exactly
    `_run_id_expr`'s: a text column, whose value is the run id unless it is blank (a chosen id
    never is); None for other types, or too many ids."""
    if only is None or run_type.upper() != "VARCHAR" or len(only) > PUSHED_RUN_IDS:
        return None
    if not only:
        return "false"
    return f"{_ident(run_col)} IN ({', '.join(_literal(run) for run in sorted(only))})"


def _range_filter(
    run_col: str,
    runs: RunRange | None,
    only: frozenset[str] | None = None,
    run_type: str = "",
) -> str:
    """Rows with a run id (a row without one belongs to no run: counted once by `plan_batches`),
    inside the batch's range of run ids (and, with `only`, among the `selected_runs`, also named
    on the column where DuckDB can skip the rest unread: `_pushed_ids`)."""
    col = _run_id_expr(run_col)
    low, high = runs or (None, None)
    where = [f"{col} IS NOT NULL"]
    if only is not None:
        pushed = _pushed_ids(run_col, run_type, only)
        if pushed is not None:
            where.insert(0, pushed)
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
        # bytes that are not UTF-8 are no JSON text: the empty text, which no parser accepts
        # (payload-invalid on a type grading reads), never a failure of the whole read
        return f"coalesce(try(decode({col})), CASE WHEN {col} IS NOT NULL THEN '' END)"
    return f"CAST({col} AS VARCHAR)"


def _sequence_expr(column: str, type_name: str) -> str:
    """The row's sequence, or NULL when it is not an integer 0..MAX_SEQUENCE (E-3, E-76).

    DuckDB's casts round (`3.5` becomes 4), so a value of any other column type must also equal
    its double: a fractional sequence is invalid, never another event's number.
    """
    col = _ident(column)
    value = f"TRY_CAST({col} AS BIGINT)"
    in_range = f"{value} BETWEEN 0 AND {MAX_SEQUENCE}"
    if type_name.upper() not in _INTEGER_TYPES:
        in_range += f" AND {value} = TRY_CAST({col} AS DOUBLE)"
    return f"CASE WHEN {in_range} THEN {value} END"


#: E-124: the instants a timestamp may name, years 1 to 9999 in UTC (ISO 8601's four-digit years;
#: what Python's datetime, and so every reader of the runs table, holds), first and last
TIMESTAMP_RANGE = ("0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00")


def _timestamp_expr(column: str, type_name: str) -> str:
    """The row's timestamp, or NULL when it does not parse or lies outside `TIMESTAMP_RANGE`
    (E-17, E-124): year 0 or 10000 is a timestamp that does not parse, never an error."""
    col = _ident(column)
    if type_name.upper().startswith("TIMESTAMP"):
        value = f"CAST({col} AS TIMESTAMPTZ)"
    else:
        value = f"TRY_CAST(CAST({col} AS VARCHAR) AS TIMESTAMPTZ)"
    first, last = (f"TIMESTAMPTZ '{bound}'" for bound in TIMESTAMP_RANGE)
    return f"CASE WHEN {value} BETWEEN {first} AND {last} THEN {value} END"


@dataclass(frozen=True)
class BatchPlan:
    """How the runs are split into batches, and what the split saw."""

    ranges: list[RunRange]
    events: list[int]  # events per batch
    runs: int  # runs in the input (eval or not)
    rows_without_run: int
    #: per batch, its first and last run id and how many runs it holds (a batch without runs
    #: has none): how a batch that failed is named (E-155)
    spans: list[tuple[str, str, int]] = field(default_factory=list)


def plan_batches(
    con: duckdb.DuckDBPyConnection,
    sources: Sources,
    batch_events: int | None = None,
    batches: int | None = None,
) -> BatchPlan:
    """Split the runs, in run-id order, into batches of whole runs of about `batch_events` events
    (or into about `batches` batches of equal size; with both, the smaller size: at least
    `batches` batches, none much over `batch_events`).

    Batches are ranges of run ids, so each batch's outputs follow the previous one's in sorted
    order and can be written as they come; only the run-id column is read here.
    """

    def count_runs() -> tuple[list[tuple[str, int]], int]:
        register(con, sources, runs=None)
        counts = con.execute(
            "SELECT run_id, count(*) FROM source_runs GROUP BY run_id ORDER BY run_id"
        ).fetchall()
        (without,) = con.execute(
            "SELECT count(*) FROM (" + _runs_union(sources, with_nulls=True) + ") "
            "WHERE run_id IS NULL"
        ).fetchall()
        return counts, int(without[0])

    counts, without = leaving_out_damaged(con, sources, count_runs)
    if batches:
        even = -(-sum(count for _, count in counts) // batches)
        batch_events = min(even, batch_events) if batch_events else even
    batch_events = max(1, batch_events or 1)
    ranges: list[RunRange] = []
    events: list[int] = []
    spans: list[tuple[str, str, int]] = []
    low: str | None = None
    size = 0
    first = 0  # the index in `counts` of the batch's first run
    for index, (run_id, count) in enumerate(counts):
        if size and size + count > batch_events:
            ranges.append((low, run_id))
            events.append(size)
            spans.append((counts[first][0], counts[index - 1][0], index - first))
            low, size, first = run_id, 0, index
        size += count
    ranges.append((low, None))
    events.append(size)
    if counts:
        spans.append((counts[first][0], counts[-1][0], len(counts) - first))
    return BatchPlan(ranges, events, len(counts), without, spans)


def _runs_union(sources: Sources, with_nulls: bool = False) -> str:
    """Just the run-id column of every usable file (one cheap column to read)."""
    selects = []
    for number, (plan, _) in enumerate(sources.groups.items()):
        run_col, run_type = dict(plan)["runId"].split(":", 1)
        where = "" if with_nulls else _range_filter(run_col, None, sources.only_runs, run_type)
        selects.append(
            f"SELECT {_run_id_expr(run_col)} AS run_id FROM source_group_{number}{where}"
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
            + (
                "; ".join(p.message for p in sources.problems)
                or "no Parquet file or Inspect log found"
            )
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
        read_parquet(con, paths, hive=hive, union_by_name=True).create_view(view, replace=True)
        columns = {canonical: spec.split(":", 1) for canonical, spec in plan if canonical != "hive"}
        run_col, seq_col, type_col = (columns[c][0] for c in ("runId", "sequence", "type"))
        payload_col, payload_type = columns["payload"]
        ts = (
            _timestamp_expr(*columns["timestamp"])
            if "timestamp" in columns
            else "CAST(NULL AS TIMESTAMPTZ)"
        )
        selects.append(
            f"SELECT {_run_id_expr(run_col)} AS run_id, "
            f"{_sequence_expr(seq_col, columns['sequence'][1])} AS sequence, "
            f"{_sequence_expr(seq_col, columns['sequence'][1])} IS NOT NULL AS sequence_ok, "
            f"CAST({_ident(type_col)} AS VARCHAR) AS type, "
            f"{_payload_expr(payload_col, payload_type)} AS payload, "
            f"{ts} AS ts FROM {view}"
            + _range_filter(run_col, runs, sources.only_runs, columns["runId"][1])
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

        def choose() -> frozenset[str]:
            register(con, sources, None)
            return frozenset(run_id for (run_id,) in con.execute(query, params).fetchall())

        chosen = leaving_out_damaged(con, sources, choose)
        if sources.only_runs is not None:
            chosen &= sources.only_runs
        sources.only_runs = chosen
