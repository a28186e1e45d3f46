"""Incremental runs (E-50): grade only what is new or changed since the last run into an output
directory, and carry every other run's rows over as they were.

`manifest.json` in the output directory records, for each run the last run saw, a fingerprint of
its events, the suite it claimed (id and version) with the sha256 of the suite file it was
graded with, and the baseline its `eval.started` names; and, once, the settings every grade
depends on (evalbatch and DuckDB versions, grading options, the tables' schema version). A run
is graded again when its events or its suite file changed, when it is new, or when its baseline
is new, changed or gone (its regression block depends on the baseline's tasks). The manifest
also records each output file's size, sha256 and row count, and no row is carried from a file
that is not exactly the one recorded (E-71). Anything about the directory that is not as
expected (no manifest, an older manifest format, other settings, an output file missing,
changed, truncated or unreadable, the marker of a run that died putting its files in place)
makes it a full regrade, and `Selection.reason` says which file and which check. Either way
the outputs equal a full regrade's, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from evalbatch.extract import sql_files
from evalbatch.inputs import event_files, suites
from evalbatch.options import GradeOptions
from evalbatch.outputs import outdir, output_format
from evalbatch.outputs.manifest import Manifest, Untrusted, check_outputs, read_manifest
from evalbatch.version import package_version


def settings(options: GradeOptions) -> dict[str, Any]:
    """What every grade depends on besides a run's events and suite, and the schema version of
    the tables rows are carried from (rows of another version are never mixed in)."""
    return {
        "evalbatch": package_version(),
        "schema_version": output_format.SCHEMA_VERSION,
        "duckdb": duckdb.__version__,
        "options": {
            "default_pass_score": options.default_pass_score,
            "on_miss_default": options.on_miss_default,
        },
    }


def suite_digest(choice: suites.SuiteChoice | None) -> str | None:
    """The suite a run is graded with, as its runs-table provenance names it (the sha256 of the
    suite file, E-54), or the sha256 of the reason it has none usable; None when no suite was
    supplied."""
    if choice is None:
        return None
    if choice.doc is not None and choice.sha256 is not None:
        return choice.sha256
    text = f"problem:{choice.problem}:{choice.message}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_fingerprints(
    con: duckdb.DuckDBPyConnection, sources: event_files.Sources
) -> dict[str, str]:
    """A fingerprint of each run's rows as grading reads them (order-free: rows may move between
    files): their count and two sums of row hashes."""
    event_files.register(con, sources, None)
    return dict(sql_files.relation(con, "run_fingerprints").fetchall())


@dataclass
class Selection:
    """Which runs to grade, and what the previous outputs supply for the others."""

    dirty: frozenset[str] | None  # None: grade everything
    fingerprints: dict[str, str]
    previous: Manifest | None
    carried: Carried | None = None
    reason: str | None = None  # why everything is graded (a full regrade), content-free

    @property
    def full(self) -> bool:
        return self.dirty is None


def _settings_changed(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The settings that differ, by name (`evalbatch`, `options.default_pass_score`, ...)."""

    def flat(doc: Any, prefix: str = "") -> dict[str, Any]:
        if not isinstance(doc, dict):
            return {prefix.rstrip("."): doc}
        return {
            k: v for key, value in doc.items() for k, v in flat(value, f"{prefix}{key}.").items()
        }

    before, after = flat(old), flat(new)
    names = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return ", ".join(names)


def select(
    out_dir: Path,
    options: GradeOptions,
    fingerprints: dict[str, str],
    choices: Mapping[tuple[str, str], suites.SuiteChoice],
) -> Selection:
    """Compare the inputs with the last run's manifest: the runs to grade again. Every output
    file is checked against the manifest before a row of it is trusted (E-71), and none is
    trusted from a directory a run died putting its files in (E-119)."""
    if outdir.incomplete(out_dir):
        reason = "the last run was interrupted while putting its outputs in place"
        return Selection(None, fingerprints, None, reason=reason)
    try:
        previous = read_manifest(out_dir)
    except Untrusted as exc:
        return Selection(None, fingerprints, None, reason=str(exc))
    current = settings(options)
    if previous.settings != current:
        changed_names = _settings_changed(previous.settings, current)
        return Selection(None, fingerprints, previous, reason=f"settings changed: {changed_names}")
    try:
        check_outputs(out_dir, previous)
    except Untrusted as exc:
        return Selection(None, fingerprints, previous, reason=str(exc))
    old = previous.runs
    reading_delegates = suites.delegate_suites(choices)

    def changed(run_id: str, fingerprint: str) -> bool:
        entry = old.get(run_id)
        if entry is None or entry.events != fingerprint:
            return True  # new, or its events changed
        if entry.delegates is not None and any(
            fingerprints.get(child) != recorded for child, recorded in entry.delegates.items()
        ):
            return True  # a child run its trials read changed, came or went (E-102)
        if entry.suite_key is None:
            return False
        choice = choices.get(entry.suite_key)
        if entry.delegates is None and entry.suite_key in reading_delegates:
            return True  # graded before its suite's trials read child runs (E-102)
        return entry.suite != suite_digest(choice)

    direct = {
        run_id for run_id, fingerprint in fingerprints.items() if changed(run_id, fingerprint)
    }
    gone = set(old) - set(fingerprints)
    moved = direct | gone
    follows = {
        run_id
        for run_id in fingerprints
        if run_id in old and old[run_id].baseline is not None and old[run_id].baseline in moved
    }
    dirty = frozenset(direct | follows)
    try:
        carried = Carried.load(out_dir, set(fingerprints) - dirty)
    except (OSError, ValueError, pl.exceptions.PolarsError):
        reason = "runs.parquet, tasks.parquet or problems.parquet: cannot be read"
        return Selection(None, fingerprints, previous, reason=reason)
    return Selection(dirty, fingerprints, previous, carried)


def _in_range(low: str | None, high: str | None) -> pl.Expr:
    """Whether a row's run id is in a batch's range: low <= run_id < high (None is open)."""
    keep = pl.lit(True)
    if low is not None:
        keep &= pl.col("run_id") >= low
    if high is not None:
        keep &= pl.col("run_id") < high
    return keep


def _read_table(out_dir: Path, table: str, keep: pl.Expr) -> pl.DataFrame:
    """The rows of one previous output table that are carried over."""
    return pl.read_parquet(out_dir / output_format.table_file(table)).filter(keep)


def _run_id_of_line(line: str) -> str:
    """The runId of a summaries.jsonl line: `{"runId": "...", "summary": ...}`."""
    prefix = '{"runId": '
    if not line.startswith(prefix):
        raise ValueError("not a summaries.jsonl line")
    run_id, _ = json.JSONDecoder().raw_decode(line, len(prefix))
    return run_id


@dataclass
class Carried:
    """The previous outputs of the runs that are not graded again."""

    runs: set[str]
    summaries_path: Path
    trials_path: Path
    run_rows: pl.DataFrame
    task_rows: pl.DataFrame
    problem_rows: pl.DataFrame

    @classmethod
    def load(cls, out_dir: Path, runs: set[str]) -> Carried:
        keep = pl.col("run_id").is_in(sorted(runs))
        return cls(
            runs=runs,
            summaries_path=out_dir / output_format.SUMMARIES_FILE,
            trials_path=out_dir / output_format.table_file("trials"),
            run_rows=_read_table(out_dir, "runs", keep),
            task_rows=_read_table(out_dir, "tasks", keep),
            problem_rows=_read_table(out_dir, "problems", keep),
        )

    def summary_lines(self) -> Iterator[tuple[str, str]]:
        """(runId, line) of each carried run, in file (runId) order, read one at a time."""
        with self.summaries_path.open(encoding="utf-8") as lines:
            for line in lines:
                run_id = _run_id_of_line(line)
                if run_id in self.runs:
                    yield run_id, line

    def tasks(self, low: str | None, high: str | None) -> pl.DataFrame:
        """The carried task rows with low <= run_id < high (None is open)."""
        return self.task_rows.filter(_in_range(low, high))

    def trials(self, low: str | None, high: str | None) -> pl.DataFrame:
        """The carried trial rows with low <= run_id < high (None is open)."""
        keep = pl.col("run_id").is_in(sorted(self.runs)) & _in_range(low, high)
        return pl.scan_parquet(self.trials_path).filter(keep).collect()
