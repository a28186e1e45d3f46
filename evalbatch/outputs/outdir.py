"""Reading an `evalbatch run` output directory back, for every command that works from one
(`export`, `report`, `history`, `sql`, `evalbatch.connect`); they write their files whole with
`evalbatch.files.write_atomic` (E-132). The files they write into it by default
(`output_format.DERIVED_FILES`) are removed by the next `run` into it, which makes them stale.

Every reader goes through `load` (E-121), so one directory gets one answer everywhere: it is
read as `run` wrote it (§4), `summaries.jsonl` plus the four Parquet tables of this schema
version, one run's files (E-119: no run was putting them in place; E-71: they are those its
manifest records) holding the same graded runs. Anything else is an `InputError` naming the file,
so a command stops with one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from evalbatch.errors import InputError
from evalbatch.inputs import limits
from evalbatch.outputs import manifest
from evalbatch.outputs.output_format import (
    INCOMPLETE_FILE,
    MANIFEST_FILE,
    PROBLEM_SCHEMA,
    REQUIRED_COLUMNS,
    RUN_SCHEMA,
    SCHEMA_VERSION,
    SUMMARIES_FILE,
    TASK_SCHEMA,
    TRIAL_SCHEMA,
    table_file,
)
from evalbatch.outputs.run_inputs import RunInputs, read_run_inputs


@dataclass
class RunOutputs:
    """What one `evalbatch run` wrote: the summaries in runId order, the four tables, and the
    paths the run was given, where the directory records them for these summaries (E-118)."""

    path: Path
    summaries: list[tuple[str, dict[str, Any]]]
    tables: dict[str, pl.DataFrame]
    inputs: RunInputs | None = None

    def table(self, name: str) -> pl.DataFrame:
        return self.tables[name]


def _read_summaries(path: Path) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """The `{runId, summary}` lines of summaries.jsonl in runId order, and the sha256 of the file
    they were read from. The directory may have been handed on and changed since `run` wrote
    it, so each line is read as any user's JSON is (E-115)."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read ({exc.__class__.__name__})") from exc
    found: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = limits.loads(line)
        except limits.TooDeep as exc:
            raise InputError(f"{path}: line {number}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {number}: not JSON ({exc.msg})") from exc
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("runId"), str)
            or not isinstance(doc.get("summary"), dict)
        ):
            raise InputError(f"{path}: line {number}: not a {{runId, summary}} line")
        found.append((doc["runId"], doc["summary"]))
    return sorted(found, key=lambda item: item[0]), hashlib.sha256(data).hexdigest()


def _read_table(path: Path, name: str) -> pl.DataFrame:
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(f"{path}: not a readable Parquet file") from exc
    missing = sorted(REQUIRED_COLUMNS[name] - set(frame.columns))
    if missing:
        raise InputError(f"{path}: not a {name} table of `evalbatch run` (no {', '.join(missing)})")
    return frame


#: the graded tables of an output directory, with the columns and types `run` writes
GRADED_SCHEMAS: dict[str, pl.Schema] = {
    "runs": RUN_SCHEMA,
    "tasks": TASK_SCHEMA,
    "trials": TRIAL_SCHEMA,
    "problems": PROBLEM_SCHEMA,
}


def output_dir(path: str | Path) -> bool:
    """Whether `path` is an output directory of `evalbatch run` rather than event files: it
    holds summaries.jsonl, an incremental run's manifest, or the marker of a run putting its
    files in place (not a table: an event file may be called trials.parquet)."""
    root = Path(path)
    names = (SUMMARIES_FILE, MANIFEST_FILE)
    return root.is_dir() and (any((root / name).is_file() for name in names) or incomplete(root))


def incomplete(out: Path) -> bool:
    """Whether a run is putting its files into `out`, or died doing it (E-119)."""
    return os.path.lexists(out / INCOMPLETE_FILE)


def check_complete(out: Path) -> None:
    """The check every reader of an output directory makes first (E-119): a directory holding
    the marker may hold two runs' files, so it is refused until a run completes it.

    Raises:
        InputError: the marker is there.
    """
    if incomplete(out):
        raise InputError(
            f"{out}: the outputs of a run that was interrupted while writing them (or is "
            "writing them now): run it again"
        )


def _check_manifest(out: Path) -> None:
    """An incremental run's manifest records each file it wrote (E-71): when there is one, the
    files must be those, whole (a file changed by hand is refused)."""
    if not (out / MANIFEST_FILE).is_file():
        return
    try:
        manifest.check_outputs(out, manifest.read_manifest(out))
    except manifest.Untrusted as exc:
        raise InputError(
            f"{out}: {exc}: these are not the files its last run wrote "
            "(run `evalbatch run` into it again)"
        ) from None


def _schema_version(path: Path) -> str:
    metadata = pq.read_schema(path).metadata or {}
    return metadata.get(b"evalbatch.schema_version", b"?").decode(errors="replace")


def _checked_root(out_dir: str | Path) -> Path:
    """OUT_DIR, refused unless it is an output directory no run is writing, whose files are
    those its manifest records, with a summaries.jsonl."""
    root = Path(out_dir)
    if not root.is_dir():
        what = "not a directory" if root.exists() else "no such directory"
        raise InputError(f"{root}: {what} (give the --out directory of evalbatch run)")
    check_complete(root)
    _check_manifest(root)
    if not (root / SUMMARIES_FILE).is_file():
        raise InputError(
            f"{root}: no summaries.jsonl here (not an `evalbatch run` output directory)"
        )
    return root


def _table_path(root: Path, name: str) -> Path:
    path = root / table_file(name)
    if not path.is_file():
        raise InputError(f"{root}: no {path.name} here (rerun `evalbatch run` into it)")
    return path


def _check_schema(root: Path, path: Path, name: str, schema: pl.Schema) -> None:
    if schema != GRADED_SCHEMAS[name]:
        raise InputError(
            f"{path}: written with schema version {_schema_version(path)}, this evalbatch "
            f"reads version {SCHEMA_VERSION} (run `evalbatch run` into {root} again)"
        )


def _check_same_runs(root: Path, summaries: int, summary_ids: set[str], runs: pl.DataFrame) -> None:
    graded = set(runs.filter(pl.col("graded"))["run_id"].to_list())
    if summary_ids != graded or len(summary_ids) != summaries:
        raise InputError(
            f"{root}: {SUMMARIES_FILE} holds {summaries} line(s), "
            f"{table_file('runs')} {len(graded)} graded run(s), not the same runs: "
            "not the outputs of one run (run `evalbatch run` into it again)"
        )


def load(out_dir: str | Path) -> RunOutputs:
    """Read OUT_DIR whole and checked, as every command that reads one does (E-121): its
    summaries in runId order, the four tables with this evalbatch's columns and types
    (`output_format`), summaries.jsonl holding a line for each graded run and no other, and the
    record of the paths its run was given, where there is one for these summaries (E-118).

    Raises:
        InputError: not an output directory; a run is writing it or died doing it (E-119); a
            file missing, unreadable or not the one its manifest records (E-71); a table of
            another schema version; files that do not belong together.
    """
    root = _checked_root(out_dir)
    summaries, summaries_sha256 = _read_summaries(root / SUMMARIES_FILE)
    tables: dict[str, pl.DataFrame] = {}
    for name in GRADED_SCHEMAS:
        path = _table_path(root, name)
        frame = _read_table(path, name)
        _check_schema(root, path, name, frame.schema)
        tables[name] = frame
    run_ids = {run_id for run_id, _ in summaries}
    _check_same_runs(root, len(summaries), run_ids, tables["runs"])
    inputs = read_run_inputs(root, summaries_sha256)
    check_complete(root)  # again: a run may have begun putting its files in place meanwhile
    return RunOutputs(path=root, summaries=summaries, tables=tables, inputs=inputs)


#: how `run` writes each line of summaries.jsonl: its runId first (`writer.summary_line`)
_SUMMARY_LINE = re.compile(rb'\{"runId": ("(?:[^"\\\n]|\\.)*"), "summary": \{')


def _summary_run_ids(path: Path) -> list[str]:
    """The runId of each line of summaries.jsonl, without reading the summaries: a line as
    `run` writes it (`{"runId": "...", "summary": {...`) gives its runId from its first bytes;
    any other line is read whole, as `load` reads it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.__class__.__name__})") from exc
    found: list[str] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        head = _SUMMARY_LINE.match(line)
        try:
            if head is not None and line.rstrip().endswith(b"}"):
                found.append(json.loads(head.group(1)))
                continue
            doc = limits.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, limits.TooDeep):
            raise InputError(f"{path}: line {number}: not a {{runId, summary}} line") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("runId"), str):
            raise InputError(f"{path}: line {number}: not a {{runId, summary}} line")
        found.append(doc["runId"])
    return found


def load_tables(
    out_dir: str | Path, columns: Mapping[str, Sequence[str]]
) -> dict[str, pl.DataFrame]:
    """The `columns` of some graded tables of OUT_DIR, checked as `load` checks the directory
    (E-121: not being written, its manifest's files, every table of this schema version, the
    graded runs those of summaries.jsonl), without reading the summaries or the other columns:
    for readers of many directories (`history`), whose cost is then the columns they use.

    Raises:
        InputError: as `load`.
    """
    root = _checked_root(out_dir)
    run_ids = _summary_run_ids(root / SUMMARIES_FILE)
    tables: dict[str, pl.DataFrame] = {}
    for name in GRADED_SCHEMAS:
        path = _table_path(root, name)
        try:
            schema = pl.read_parquet_schema(path)
        except Exception as exc:  # polars raises several error types for a damaged file
            raise InputError(f"{path}: not a readable Parquet file") from exc
        missing = sorted(REQUIRED_COLUMNS[name] - set(schema))
        if missing:
            raise InputError(
                f"{path}: not a {name} table of `evalbatch run` (no {', '.join(missing)})"
            )
        _check_schema(root, path, name, pl.Schema(schema))
        wanted = list(columns.get(name, ()))
        if name == "runs":
            wanted = list(dict.fromkeys(["run_id", "graded", *wanted]))
        if wanted:
            try:
                tables[name] = pl.read_parquet(path, columns=wanted)
            except Exception as exc:  # a footer that reads but data that does not
                raise InputError(f"{path}: not a readable Parquet file") from exc
    _check_same_runs(root, len(run_ids), set(run_ids), tables["runs"])
    check_complete(root)  # again: a run may have begun putting its files in place meanwhile
    return {name: frame for name, frame in tables.items() if name in columns}


def read_graded(out: Path) -> tuple[dict[str, pl.DataFrame], dict[str, str]]:
    """The graded tables of an output directory and each graded run's summary as JSON text, as
    `load` reads and checks them (for `history` and `evalbatch.connect`).

    Raises:
        InputError: as `load`.
    """
    read = load(out)
    summaries = {run_id: json.dumps(doc, ensure_ascii=False) for run_id, doc in read.summaries}
    return read.tables, summaries
