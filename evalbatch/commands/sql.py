"""`evalbatch sql`: one query over the graded tables and the SQL stage, printed or written.

The connection is `evalbatch.connect`'s, so the query sees what a notebook sees: an output
directory of `evalbatch run` is opened as it is, not regraded (E-89). Bad SQL and
unusable input raise the library's errors, which `faults.Command` turns into one line and exit
code 2; an output file that cannot be written is exit code 4 (`OutputError`). The output file,
when there is one, appears only when complete, and nothing is left beside it when it fails.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from evalbatch import files
from evalbatch.commands import faults, filters, resources
from evalbatch.commands.click_options import (
    default_pass_score_option,
    on_miss_default_option,
    out_option,
    suites_option,
)
from evalbatch.commands.types import printable
from evalbatch.errors import OutputError, write_failed
from evalbatch.options import GradeOptions, OnMissDefault, Resources

if TYPE_CHECKING:
    import duckdb

FORMATS = ("table", "csv", "json", "parquet")

#: DuckDB type ids shown right-aligned in a table
NUMERIC_TYPES = {
    "tinyint",
    "smallint",
    "integer",
    "bigint",
    "hugeint",
    "utinyint",
    "usmallint",
    "uinteger",
    "ubigint",
    "uhugeint",
    "float",
    "double",
    "decimal",
}

#: a table cell longer than this is cut (csv, json and parquet keep every character)
CELL_WIDTH = 60

#: rows fetched from DuckDB at a time
CHUNK_ROWS = 10_000


def _decimal_text(value: Decimal) -> str:
    """A decimal as written, without the trailing zeros of its column's scale (0.002, not
    0.002000000000000000)."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _text(value: Any) -> str:
    """A value as a CSV or table cell: SQL's spelling of booleans, ISO 8601 times, exact decimals,
    shortest round-trip floats, nested values as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return _decimal_text(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list | tuple | dict):
        return _json(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def _json(value: Any) -> str:
    """A value as a JSON token: decimals keep their digits, NaN and infinities (not JSON) are null,
    times are ISO 8601 strings."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "null"
    if isinstance(value, Decimal):
        return _decimal_text(value) if value.is_finite() else "null"
    if isinstance(value, dict):
        fields = (f"{_json(str(k))}: {_json(v)}" for k, v in value.items())
        return "{" + ", ".join(fields) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_json(v) for v in value) + "]"
    return json.dumps(_text(value), ensure_ascii=False)


def _rows(relation: duckdb.DuckDBPyRelation) -> Iterator[tuple[Any, ...]]:
    """The result's rows, a batch at a time: a large result never sits in Python whole."""
    return relation.iter_rows(batch_size=CHUNK_ROWS)


def _write_table(relation: duckdb.DuckDBPyRelation, out: IO[str], max_rows: int) -> None:
    """Columns padded to their widest cell, numbers right-aligned, NULL spelled out; at most
    `max_rows` rows (0: all), then how many were left out. It is for reading: control characters
    in names and cells are shown escaped (`\\n`, `\\x1b`)."""
    header = [printable(name) for name in relation.columns]
    right = {i for i, t in enumerate(relation.types) if t.id in NUMERIC_TYPES}
    shown: list[list[str]] = []
    total = 0
    for row in _rows(relation):
        total += 1
        if max_rows and len(shown) >= max_rows:
            continue
        cells = []
        for value in row:
            cell = printable("NULL" if value is None else _text(value))
            if len(cell) > CELL_WIDTH:
                cell = cell[: CELL_WIDTH - 1] + "…"
            cells.append(cell)
        shown.append(cells)
    widths = [max([len(h), *(len(r[i]) for r in shown)]) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out.write(line(header) + "\n")
    out.write(line(["-" * w for w in widths]) + "\n")
    for cells in shown:
        out.write(line(cells) + "\n")
    more = total - len(shown)
    note = f", {more} not shown (--max-rows 0 shows all)" if more else ""
    out.write(f"({total} row{'s' if total != 1 else ''}{note})\n")


def _write_csv(relation: duckdb.DuckDBPyRelation, out: IO[str]) -> None:
    """RFC 4180 CSV with a header row; NULL is the empty field."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(relation.columns)
    writer.writerows([_text(v) for v in row] for row in _rows(relation))


def _write_json(relation: duckdb.DuckDBPyRelation, out: IO[str]) -> None:
    """A JSON array of row objects, one row per line; a JSON-typed column is written as the JSON
    it holds, not as a string."""
    names = [json.dumps(name, ensure_ascii=False) for name in relation.columns]
    is_json = [str(t) == "JSON" for t in relation.types]
    out.write("[")
    first = True
    for row in _rows(relation):
        fields = ", ".join(
            f"{name}: {value if raw and value is not None else _json(value)}"
            for name, value, raw in zip(names, row, is_json, strict=True)
        )
        out.write(("\n" if first else ",\n") + "{" + fields + "}")
        first = False
    out.write("\n]\n" if not first else "]\n")


#: the errno DuckDB reports with a failed write
_DUCKDB_ERRNO = re.compile(r'"errno"\s*:\s*"(\d+)"')


def _unwritable(target: str | Path, exc: OSError | duckdb.Error) -> OutputError:
    """A failed write as an `OutputError` naming the file and the OS's reason (DuckDB's errors
    carry the errno in their text, which is otherwise not shown)."""
    import duckdb  # the engine loads when the command runs, not for --help

    if isinstance(exc, duckdb.Error) and (found := _DUCKDB_ERRNO.search(str(exc))):
        exc = OSError(int(found.group(1)), "")
    return write_failed(target, exc, _NOTHING_WRITTEN)


#: what a failed write of the output file leaves
_NOTHING_WRITTEN = "nothing written"


def _emit(relation: duckdb.DuckDBPyRelation, fmt: str, output: str | None, max_rows: int) -> None:
    import duckdb  # the engine loads when the command runs, not for --help

    if fmt == "parquet":
        assert output is not None
        with files.write_aside(output, _NOTHING_WRITTEN) as scratch:
            try:
                relation.write_parquet(str(scratch))
            except duckdb.IOException as exc:
                # DuckDB writes the file itself: its write failures name the scratch file
                if scratch.name not in str(exc):
                    raise
                raise _unwritable(output, exc) from None
        return
    writers: dict[str, Callable[[IO[str]], None]] = {
        "table": lambda out: _write_table(relation, out, max_rows),
        "csv": lambda out: _write_csv(relation, out),
        "json": lambda out: _write_json(relation, out),
    }
    if output is None:
        writers[fmt](sys.stdout)
        return
    with (
        files.write_aside(output, _NOTHING_WRITTEN) as scratch,
        scratch.open("w", encoding="utf-8", newline="") as out,
    ):
        writers[fmt](out)


def _warn_left_out(con: duckdb.DuckDBPyConnection) -> None:
    """Files that could not be read are left out of every table: say so on stderr (the event
    files given with an output directory are not in its `problems`: `connect` lists them)."""
    from evalbatch import notebook  # the engine loads when the command runs, not for --help

    query = "SELECT message FROM problems WHERE run_id IS NULL AND severity = 'error'"
    listed = con.execute(
        "SELECT count(*) FROM duckdb_tables() "
        "WHERE schema_name = ? AND table_name = 'left_out_files'",
        [notebook.INTERNAL],
    ).fetchone()
    if listed and listed[0]:
        query += f" UNION ALL SELECT message FROM {notebook.INTERNAL}.left_out_files"
    rows = con.execute(f"SELECT message FROM ({query}) ORDER BY message").fetchall()
    for (message,) in rows:
        click.echo(f"evalbatch: left out: {printable(message)}", err=True)


#: the options that grade events: given with an output directory, they would be ignored
_GRADING_OPTIONS = (
    "suite_paths",
    "default_pass_score",
    "on_miss_default",
    "run_ids",
    "filter_suites",
    "since",
    "until",
)


def _grading_options_given(ctx: click.Context) -> list[str]:
    """The grading options given on the command line (not left at their defaults), as spelt."""
    given = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name or "")
        if param.name in _GRADING_OPTIONS and source not in (None, ParameterSource.DEFAULT):
            given.append(next(o for o in param.opts if o.startswith("--")))
    return given


@click.command(
    name="sql", cls=faults.Command, short_help="Run SQL over graded outputs or event logs."
)
@click.argument("sources", nargs=-1, required=True, metavar="OUT_DIR|EVENTS...")
@suites_option
@click.option(
    "-e",
    "--execute",
    "query_text",
    required=True,
    help="The SQL to run; with several statements, the last one's rows are output.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table (for reading), csv, json (an array of row objects) or parquet (needs --out).",
)
@out_option(
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write to this file (renamed into place when complete) instead of standard output "
    "(default: standard output).",
)
@click.option(
    "--max-rows",
    type=click.IntRange(0),
    default=100,
    show_default=True,
    help="table: rows shown (0: all).",
)
@click.option(
    "--safe",
    is_flag=True,
    help="Let the query read only the tables above: no file read or written, no ATTACH, no "
    "extension (for running queries on behalf of others).",
)
@default_pass_score_option
@on_miss_default_option
@resources.resource_options()
@filters.run_filter_options
@click.pass_context
def sql_command(
    ctx: click.Context,
    sources: tuple[str, ...],
    suite_paths: tuple[str, ...],
    query_text: str,
    fmt: str,
    out: str | None,
    max_rows: int,
    safe: bool,
    default_pass_score: float,
    on_miss_default: OnMissDefault,
    resources: Resources,
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Run SQL over an output directory of `evalbatch run` (OUT_DIR, opened as it is, not
    regraded) and/or over the eval runs in EVENTS (graded now, unless OUT_DIR is given too;
    Parquet, or Inspect eval logs: E-144).

    \b
    Tables (SELECT * FROM evalbatch_tables lists them, with their rules):
      runs, tasks, trials, problems, summaries   graded, as `evalbatch run` writes them
      event_log       every event of an eval run, with its payload       (EVENTS)
      trial_segments  each eval.scored as the log records it: the host's record
      tool_calls      each tool call inside a trial's bracket, with task and trial
      usage           per trial: tool and model calls, tokens, cost
      evalbatch_internal.events, ...   the extraction's own relations (EVENTS)

    \b
    Examples:
      evalbatch sql out/samples -e "SELECT run_id, aggregate_score FROM runs"
      evalbatch sql data/samples/events --suites data/samples/suites \\
        -e "SELECT task_id, count(*) FILTER (passed) AS passed FROM trials GROUP BY 1"

    With OUT_DIR, the options that grade (--suites, --default-pass-score, --on-miss-default,
    the run filters) are refused: select runs in the query instead.

    The query is all of DuckDB: it can read any file, write anywhere (COPY ... TO), ATTACH
    databases and install extensions. --safe turns that off once the tables are built.

    Exit codes: 0 the query ran; 2 unusable input, a query that fails, or a usage error (--out
    one of the files read, too); 4 the output file could not be written.
    """
    if fmt == "parquet" and out is None:
        raise click.UsageError("--format parquet writes a file: give --out FILE")
    if fmt == "parquet" and safe:
        raise click.UsageError(
            "--format parquet is written by DuckDB, which --safe keeps from files"
        )
    import duckdb  # the engine loads when the command runs, not for --help

    from evalbatch import notebook
    from evalbatch.outputs import outdir
    from evalbatch.outputs.destinations import Inputs, refuse_overwrite

    if out is not None:
        out_dirs = [path for path in sources if outdir.output_dir(path)]
        events = [path for path in sources if path not in out_dirs]
        reads = Inputs(events=events, suites=suite_paths, out_dirs=out_dirs)
        refuse_overwrite("--out", out, reads)
    if any(outdir.output_dir(path) for path in sources):
        if given := _grading_options_given(ctx):
            raise click.UsageError(
                f"OUT_DIR is already graded: {', '.join(given)} grade events; select runs in "
                "the query instead (WHERE run_id = ...)"
            )
        con = notebook.connect(list(sources), resources=resources, safe=safe)
    else:
        options = GradeOptions(
            default_pass_score=default_pass_score, on_miss_default=on_miss_default
        )
        con = notebook.connect(
            list(sources),
            list(suite_paths),
            options=options,
            resources=resources,
            run_filter=filters.build_run_filter(run_ids, filter_suites, since, until),
            safe=safe,
        )
    try:
        _warn_left_out(con)
        relation = notebook.query(con, query_text)
        if relation is None:
            raise notebook.QueryError("query failed: no statement to run")
        try:
            _emit(relation, fmt, out, max_rows)
        except duckdb.Error as exc:
            raise notebook.QueryError(notebook.error_line(exc)) from None
    finally:
        con.close()
