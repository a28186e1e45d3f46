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

A run's fingerprint is not read from every kept event file each night (E-152): the manifest also
records each event file read, by its identity (size, modification and status-change times, the
sha256 of its Parquet footer) and the fingerprint of each run's rows in it. A file whose identity
is as recorded is not read again; the files new or changed since are read, and a run's
fingerprint is its files' combined, so a run split across an unchanged and a changed file, or one
that lost a removed file's rows, has a new fingerprint and is graded again.

A night costs what it adds in its outputs too (E-156). A night with nothing new, whose outputs
would be the ones already there, leaves them as they are: each is checked by its identity in
place (size, modification and status-change times), its sha256 only where that differs
(`Selection.unchanged`). A night that writes checks every file's sha256 before a byte is carried
(E-71), and carries the rows of the runs before its first new, changed or removed run as they
are: the leading row groups of the tables copied, not encoded again (`Carried.first_change`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow.parquet as pq

from evalbatch.extract import sql_files
from evalbatch.inputs import event_files, suites
from evalbatch.options import GradeOptions
from evalbatch.outputs import outdir, output_format
from evalbatch.outputs.manifest import (
    FileIdentity,
    FileRecord,
    InputRecord,
    Manifest,
    Untrusted,
    check_outputs,
    combine,
    read_manifest,
)
from evalbatch.outputs.output_format import RUN_INPUTS_FILE
from evalbatch.outputs.run_inputs import RunInputs
from evalbatch.problems import problem_message
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


#: the last bytes of a Parquet file: the footer's length (4 bytes, little-endian) and `PAR1`
_TAIL = 8
_MAGIC = b"PAR1"


def identify(path: str) -> FileIdentity | None:
    """An event file's identity (E-152), from one open file: its status and its footer's bytes
    (a few kilobytes, whatever the rows). None when it has none this can trust: not a local
    file, or no plain Parquet footer (the file is then read every time)."""
    try:
        with open(path, "rb") as handle:
            status = os.fstat(handle.fileno())
            if status.st_size < len(_MAGIC) + _TAIL:
                return None
            handle.seek(status.st_size - _TAIL)
            tail = handle.read(_TAIL)
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] != _MAGIC or length > status.st_size - len(_MAGIC) - _TAIL:
                return None
            handle.seek(status.st_size - _TAIL - length)
            footer = handle.read(length)
    except OSError:
        return None
    return FileIdentity(
        bytes=status.st_size,
        mtime_ns=status.st_mtime_ns,
        ctime_ns=status.st_ctime_ns,
        footer_sha256=hashlib.sha256(footer + tail).hexdigest(),
    )


@dataclass
class Inputs:
    """What the event files hold, run by run: each file's record (read for a new or changed
    file, the manifest's for an unchanged one) and which files were read."""

    records: dict[str, InputRecord]
    #: the files whose rows this run read (new, changed, or not known to the manifest)
    read: list[str]

    def fingerprints(self, only: frozenset[str] | None) -> dict[str, str]:
        """Each run's fingerprint over every file (among `only`, when given)."""
        parts: dict[str, list[str]] = defaultdict(list)
        for record in self.records.values():
            for run_id, part in record.runs.items():
                if only is None or run_id in only:
                    parts[run_id].append(part)
        return {run_id: combine(found) for run_id, found in parts.items()}

    def recorded(self) -> dict[str, InputRecord]:
        """The records the manifest keeps: every file that can be told unchanged next time."""
        return {p: r for p, r in self.records.items() if r.identity is not None}


def read_inputs(
    con: duckdb.DuckDBPyConnection, sources: event_files.Sources, previous: Manifest | None
) -> Inputs:
    """Each usable event file's record: the previous manifest's where the file's identity is
    the one recorded (its rows are not read), else its runs' fingerprints read from it alone.
    A file is identified before it is read, so one changed while it is read is read again
    next time."""
    known = previous.inputs if previous is not None else {}
    records: dict[str, InputRecord] = {}
    read: list[str] = []
    for plan, paths in sources.groups.items():
        for path in paths:
            identity = identify(path)
            old = known.get(path)
            if identity is not None and old is not None and old.identity == identity:
                records[path] = old
                continue
            one_file = event_files.Sources(groups={plan: [path]})
            records[path] = InputRecord(identity, event_fingerprints(con, one_file))
            read.append(path)
    return Inputs(records, read)


@dataclass
class Selection:
    """Which runs to grade, and what the previous outputs supply for the others."""

    dirty: frozenset[str] | None  # None: grade everything
    fingerprints: dict[str, str]
    previous: Manifest | None
    carried: Carried | None = None
    reason: str | None = None  # why everything is graded (a full regrade), content-free
    #: the event files as this run found them (E-152), for the manifest it writes
    inputs: Inputs | None = None
    #: the outputs this run would write are the ones there (E-156): they are left as they are
    unchanged: bool = False
    #: each output file's record with its identity now (E-156), for the manifest
    files: dict[str, FileRecord] | None = None

    @property
    def full(self) -> bool:
        return self.dirty is None


class NothingNew(Exception):
    """Raised to stop a grading pass once its runs are chosen (before its batches are planned,
    E-156): the outputs it would write are the ones already there (`Selection.unchanged`)."""


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


@dataclass
class Trusted:
    """The last run's manifest, trusted, with each output file's record as found (`files`) and
    the files taken by their identity alone, still to be read whole before a byte of them is
    carried into a new file (`unread`, E-156)."""

    manifest: Manifest
    files: dict[str, FileRecord]
    unread: list[str]


def trusted_manifest(out_dir: Path, options: GradeOptions) -> tuple[Trusted | None, str | None]:
    """The last run's manifest, when its outputs may be kept or carried from; else None and why.
    Every output file is checked against it (E-71): by its identity in place, else whole with
    its sha256 (E-156; whole in any case before a row of it is carried, `verify_unread`), and
    none is trusted in a directory a run died putting its files in (E-119)."""
    if outdir.incomplete(out_dir):
        return None, "the last run was interrupted while putting its outputs in place"
    try:
        previous = read_manifest(out_dir)
    except Untrusted as exc:
        return None, str(exc)
    current = settings(options)
    if previous.settings != current:
        return None, f"settings changed: {_settings_changed(previous.settings, current)}"
    try:
        files, unread = check_outputs(out_dir, previous, by_identity=True)
    except Untrusted as exc:
        return None, str(exc)
    return Trusted(previous, files, unread), None


def verify_unread(out_dir: Path, trusted: Trusted) -> str | None:
    """Read whole the output files taken by their identity alone (E-156): nothing is carried
    into a new file from one whose sha256 was not checked (E-71). Why not, or None."""
    try:
        files, _ = check_outputs(out_dir, trusted.manifest, names=trusted.unread)
    except Untrusted as exc:
        return str(exc)
    trusted.files.update(files)
    trusted.unread = []
    return None


def _file_problems_kept(out_dir: Path, sources: event_files.Sources) -> bool:
    """Whether the problems not tied to a run that tonight's files give (E-156) are those the
    outputs hold. The rows without a runId (E-3) are not counted again: where the outputs count
    none, tonight's files, each as it was last night, hold none; where they count some, the
    night writes (a file read last night, one without an identity, may be gone with its rows)."""
    found = {
        (code, problem_message(None, None, code, detail))
        for _, _, code, detail in event_files.problem_rows(sources.problems)
    }
    try:
        frame = pl.read_parquet(
            out_dir / output_format.table_file("problems"), columns=["run_id", "code", "message"]
        )
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return False
    held = set(frame.filter(pl.col("run_id").is_null()).select("code", "message").iter_rows())
    return held == found and all(code != "row-invalid" for code, _ in held)


def _unchanged(
    out_dir: Path,
    trusted: Trusted,
    inputs: Inputs,
    sources: event_files.Sources,
    given: RunInputs | None,
) -> bool:
    """Whether the outputs this run would write are the ones there (E-156): every event file
    as the manifest records it (none read, none gone), no run to grade or drop (the caller's
    part), at least one run in them (an empty selection is told as such, E-70), the same
    run-inputs.json, and the same problems not tied to a run."""
    previous = trusted.manifest
    if inputs.read or set(inputs.records) != set(previous.inputs):
        return False
    runs = previous.files.get(output_format.table_file("runs"))
    summaries = previous.files.get(output_format.SUMMARIES_FILE)
    if given is None or runs is None or runs.rows == 0 or summaries is None:
        return False
    try:
        held = (out_dir / RUN_INPUTS_FILE).read_bytes()
    except OSError:
        return False
    if held != given.text(summaries.sha256).encode("utf-8"):
        return False
    return _file_problems_kept(out_dir, sources)


def choose(
    con: duckdb.DuckDBPyConnection,
    sources: event_files.Sources,
    out_dir: Path,
    options: GradeOptions,
    choices: Mapping[tuple[str, str], suites.SuiteChoice],
    given: RunInputs | None = None,
) -> Selection:
    """The runs to grade again, reading only the event files new or changed since the last run
    (E-152); all of them when its outputs cannot be carried from (the reason says why). When
    the outputs it would write are the ones there (`given` the paths it was given), the
    selection says so (`unchanged`, E-156).

    Raises:
        duckdb.Error: a file to read cannot be read whole.
    """
    trusted, reason = trusted_manifest(out_dir, options)
    previous = trusted.manifest if trusted is not None else None
    inputs = read_inputs(con, sources, previous)
    fingerprints = inputs.fingerprints(sources.only_runs)
    if trusted is None:
        return Selection(None, fingerprints, None, reason=reason, inputs=inputs)
    selection = select(out_dir, trusted, fingerprints, choices, inputs)
    if (
        selection.carried is None
        and not selection.full
        and _unchanged(out_dir, trusted, inputs, sources, given)
    ):
        selection.unchanged = True
        return selection
    return carry(out_dir, trusted, selection)


def select(
    out_dir: Path,
    trusted: Trusted,
    fingerprints: dict[str, str],
    choices: Mapping[tuple[str, str], suites.SuiteChoice],
    inputs: Inputs | None = None,
) -> Selection:
    """Compare the runs' fingerprints and suites with the last run's manifest (trusted, with
    its outputs: `trusted_manifest`): the runs to grade again. When none is to be graded or
    dropped, nothing is read yet (the outputs may be kept, E-156); else the rows of the others
    are ready to be carried (`carry`)."""
    previous = trusted.manifest
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
    selection = Selection(dirty, fingerprints, previous, inputs=inputs, files=trusted.files)
    if dirty or gone:
        return carry(out_dir, trusted, selection, min(dirty | gone))
    return selection


def carry(
    out_dir: Path, trusted: Trusted, selection: Selection, first_change: str | None = None
) -> Selection:
    """`selection` with the rows of the runs it does not grade ready to be carried, once every
    output file is checked whole (E-71); a full regrade when one fails (the reason says which
    check). `first_change` is the first run id graded or dropped: the rows before it are
    carried as they are (E-156)."""
    if selection.carried is not None or selection.full:
        return selection
    reason = verify_unread(out_dir, trusted)
    if reason is None:
        try:
            runs = set(selection.fingerprints) - (selection.dirty or frozenset())
            selection.carried = Carried.load(out_dir, runs, first_change)
            selection.files = trusted.files
            return selection
        except (OSError, ValueError, pl.exceptions.PolarsError):
            reason = "runs.parquet, tasks.parquet or problems.parquet: cannot be read"
    return Selection(
        None, selection.fingerprints, trusted.manifest, reason=reason, inputs=selection.inputs
    )


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


#: how much of a summaries.jsonl line is decoded to read its runId (a longer id: the whole line)
_HEAD = 4096


def _run_id_of_line(line: bytes) -> str:
    """The runId of a summaries.jsonl line: `{"runId": "...", "summary": ...}`."""
    prefix = b'{"runId": '
    if not line.startswith(prefix):
        raise ValueError("not a summaries.jsonl line")
    decoder = json.JSONDecoder()
    try:  # the id is near the start: decode that much (a character cut at the end is after it)
        run_id, _ = decoder.raw_decode(line[:_HEAD].decode("utf-8", "replace"), len(prefix))
    except ValueError:
        run_id, _ = decoder.raw_decode(line.decode("utf-8"), len(prefix))
    if not isinstance(run_id, str):
        raise ValueError("not a summaries.jsonl line")
    return run_id


@dataclass
class Carried:
    """The previous outputs of the runs that are not graded again. Every row of a run before
    `first_change` (the first run graded or dropped; None: none is) is carried as it is, so
    the writer copies the leading row groups of the trials and tasks that hold only such rows
    (E-156); the rows read here are those after them (`copied`)."""

    runs: set[str]
    summaries_path: Path
    trials_path: Path
    tasks_path: Path
    run_rows: pl.DataFrame
    problem_rows: pl.DataFrame
    first_change: str | None = None
    #: table -> the leading row groups of the previous file the writer copied (not read here)
    copied: dict[str, int] = field(default_factory=dict)
    _task_rows: pl.DataFrame | None = None

    @classmethod
    def load(cls, out_dir: Path, runs: set[str], first_change: str | None = None) -> Carried:
        keep = pl.col("run_id").is_in(sorted(runs))
        return cls(
            runs=runs,
            summaries_path=out_dir / output_format.SUMMARIES_FILE,
            trials_path=out_dir / output_format.table_file("trials"),
            tasks_path=out_dir / output_format.table_file("tasks"),
            run_rows=_read_table(out_dir, "runs", keep),
            problem_rows=_read_table(out_dir, "problems", keep),
            first_change=first_change,
        )

    def summary_lines(self) -> Iterator[tuple[str, bytes]]:
        """(runId, line) of each carried run, in file (runId) order, read one at a time, as the
        bytes the file holds."""
        with self.summaries_path.open("rb") as lines:
            for line in lines:
                run_id = _run_id_of_line(line)
                if run_id in self.runs:
                    yield run_id, line

    def _rows(self, table: str, path: Path, keep: pl.Expr) -> pl.DataFrame:
        """The carried rows of the previous `table` that `keep` keeps, after the row groups the
        writer copied."""
        keep = pl.col("run_id").is_in(sorted(self.runs)) & keep
        skip = self.copied.get(table, 0)
        if not skip:
            return pl.scan_parquet(path).filter(keep).collect()
        parquet = pq.ParquetFile(path)
        rest = pl.from_arrow(parquet.read_row_groups(range(skip, parquet.num_row_groups)))
        assert isinstance(rest, pl.DataFrame)
        return rest.filter(keep)

    def tasks(self, low: str | None, high: str | None) -> pl.DataFrame:
        """The carried task rows with low <= run_id < high (None is open), after those the
        writer copied."""
        if self._task_rows is None:
            self._task_rows = self._rows("tasks", self.tasks_path, pl.lit(True))
        return self._task_rows.filter(_in_range(low, high))

    def trials(self, low: str | None, high: str | None) -> pl.DataFrame:
        """The carried trial rows with low <= run_id < high (None is open), after those the
        writer copied."""
        return self._rows("trials", self.trials_path, _in_range(low, high))
