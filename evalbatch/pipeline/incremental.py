"""Incremental runs (E-50): grade only what is new or changed since the last run into an output
directory, and carry every other run's rows over as they were.

`manifest.json` in the output directory records, for each run the last run saw, a fingerprint of
its events, the suite it claimed (id and version) with the sha256 of the suite file it was
graded with, and the baseline its `eval.started` names; and, once, the settings every grade
depends on (evalbatch and DuckDB versions, grading options). A run is graded again when its events
or its suite file changed, when it is new, or when its baseline is new, changed or gone (its
regression block depends on the baseline's tasks). The manifest also records each output file's
size, sha256 and row count, and no row is carried from a file that is not exactly the one
recorded (E-71). Anything about the directory that is not as expected (no manifest, an older
manifest format, other settings, an output file missing, changed, truncated or unreadable) makes
it a full regrade, and `Selection.reason` says which file and which check. Either way the outputs
equal a full regrade's, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.extract import sql_files
from evalbatch.inputs import event_files, suites
from evalbatch.options import GradeOptions
from evalbatch.version import package_version

MANIFEST_NAME = "manifest.json"
#: 2: each output file's size, sha256 and rows are recorded (an older manifest: full regrade)
MANIFEST_FORMAT = 2
OUTPUT_NAMES = (
    "summaries.jsonl",
    "runs.parquet",
    "tasks.parquet",
    "trials.parquet",
    "problems.parquet",
)
_CHUNK = 1 << 20


class Untrusted(Exception):
    """The previous outputs cannot be carried from; the message says which file and which check
    (content-free: names, counts and sizes only)."""


@dataclass(frozen=True)
class FileRecord:
    """One output file as it was written: what the next incremental run checks before it
    carries a row from it."""

    bytes: int
    sha256: str
    rows: int  # lines of summaries.jsonl, rows of a Parquet table


def _scan_file(path: Path) -> tuple[int, str, int, bool]:
    """Size, sha256, newline count and whether the file ends with a newline, in one read."""
    digest = hashlib.sha256()
    size = newlines = 0
    last = b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
    return size, digest.hexdigest(), newlines, last == b"\n"


def _parquet_rows(path: Path) -> int:
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:  # a bad footer: ArrowInvalid
        raise Untrusted(f"{path.name}: not a readable Parquet file") from exc


def describe_file(path: Path) -> FileRecord:
    """The record of one output file just written."""
    size, sha256, newlines, _ = _scan_file(path)
    rows = newlines if path.suffix == ".jsonl" else _parquet_rows(path)
    return FileRecord(bytes=size, sha256=sha256, rows=rows)


def check_file(path: Path, recorded: FileRecord) -> None:
    """Raise `Untrusted` unless `path` is whole and is the file `recorded` describes: readable,
    its last line whole (summaries.jsonl), its rows, size and sha256 as recorded. The sha256
    settles it (every line whole JSON, every Parquet page intact); the checks before it only
    name the fault better."""
    try:
        size, sha256, newlines, whole = _scan_file(path)
    except FileNotFoundError as exc:
        raise Untrusted(f"{path.name}: missing") from exc
    except OSError as exc:
        raise Untrusted(f"{path.name}: cannot be read ({exc.strerror or 'I/O error'})") from exc
    if path.suffix == ".jsonl":
        if not whole:
            raise Untrusted(f"{path.name}: its last line is not whole (the file is truncated)")
        rows = newlines
    else:
        rows = _parquet_rows(path)
    if rows != recorded.rows:
        unit = "lines" if path.suffix == ".jsonl" else "rows"
        raise Untrusted(f"{path.name}: {rows} {unit}, {MANIFEST_NAME} records {recorded.rows}")
    if size != recorded.bytes:
        raise Untrusted(f"{path.name}: {size} bytes, {MANIFEST_NAME} records {recorded.bytes}")
    if sha256 != recorded.sha256:
        raise Untrusted(f"{path.name}: its sha256 is not the one {MANIFEST_NAME} records")


@dataclass(frozen=True)
class RunEntry:
    """What one run's grade depended on."""

    events: str
    suite_key: tuple[str, str] | None = None  # (suiteId, version) its eval.started claims
    suite: str | None = None  # sha256 of the suite file it was graded with (suite_digest)
    baseline: str | None = None  # the baselineRunId its eval.started names


@dataclass
class Manifest:
    settings: dict[str, Any]
    runs: dict[str, RunEntry]
    files: dict[str, FileRecord] = field(default_factory=dict)  # filled in once written

    def text(self) -> str:
        runs = {}
        for run_id, entry in sorted(self.runs.items()):
            doc = {k: v for k, v in asdict(entry).items() if v is not None}
            if entry.suite_key is not None:
                doc["suite_key"] = list(entry.suite_key)
            runs[run_id] = doc
        body = {
            "format": MANIFEST_FORMAT,
            "settings": self.settings,
            "runs": runs,
            "files": {name: asdict(record) for name, record in sorted(self.files.items())},
        }
        return json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def read_manifest(out_dir: Path) -> Manifest:
    """The manifest of the last run into `out_dir`.

    Raises:
        Untrusted: there is none, or none this version can use (the reason says which).
    """
    path = out_dir / MANIFEST_NAME
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise Untrusted(f"no {MANIFEST_NAME} in the output directory") from exc
    except (OSError, ValueError) as exc:
        raise Untrusted(f"{MANIFEST_NAME}: not readable JSON") from exc
    found = doc.get("format") if isinstance(doc, dict) else None
    if found != MANIFEST_FORMAT:
        raise Untrusted(
            f"{MANIFEST_NAME}: format {found if isinstance(found, int) else '?'}, "
            f"this evalbatch reads format {MANIFEST_FORMAT}"
        )
    try:
        runs = {}
        for run_id, entry in doc["runs"].items():
            key = entry.get("suite_key")
            runs[run_id] = RunEntry(
                events=entry["events"],
                suite_key=(key[0], key[1]) if key else None,
                suite=entry.get("suite"),
                baseline=entry.get("baseline"),
            )
        files = {
            name: FileRecord(bytes=int(r["bytes"]), sha256=str(r["sha256"]), rows=int(r["rows"]))
            for name, r in doc["files"].items()
        }
        return Manifest(settings=doc["settings"], runs=runs, files=files)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise Untrusted(f"{MANIFEST_NAME}: not a manifest of this evalbatch") from exc


def check_outputs(out_dir: Path, manifest: Manifest) -> None:
    """Raise `Untrusted` unless every output file is the one `manifest` records."""
    for name in OUTPUT_NAMES:
        recorded = manifest.files.get(name)
        if recorded is None:
            raise Untrusted(f"{MANIFEST_NAME} records no {name}")
        check_file(out_dir / name, recorded)


def settings(options: GradeOptions) -> dict[str, Any]:
    """What every grade depends on besides a run's events and suite."""
    return {
        "evalbatch": package_version(),
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
    file is checked against the manifest before a row of it is trusted (E-71)."""
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

    def changed(run_id: str, fingerprint: str) -> bool:
        entry = old.get(run_id)
        if entry is None or entry.events != fingerprint:
            return True  # new, or its events changed
        if entry.suite_key is None:
            return False
        return entry.suite != suite_digest(choices.get(entry.suite_key))

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
            summaries_path=out_dir / "summaries.jsonl",
            trials_path=out_dir / "trials.parquet",
            run_rows=pl.read_parquet(out_dir / "runs.parquet").filter(keep),
            task_rows=pl.read_parquet(out_dir / "tasks.parquet").filter(keep),
            problem_rows=pl.read_parquet(out_dir / "problems.parquet").filter(keep),
        )

    def summary_lines(self) -> Iterator[tuple[str, str]]:
        """(runId, line) of each carried run, in file (runId) order, read one at a time."""
        with self.summaries_path.open(encoding="utf-8") as lines:
            for line in lines:
                run_id = _run_id_of_line(line)
                if run_id in self.runs:
                    yield run_id, line

    def trials(self, low: str | None, high: str | None) -> pl.DataFrame:
        """The carried trial rows with low <= run_id < high (None is open)."""
        keep = pl.col("run_id").is_in(sorted(self.runs))
        if low is not None:
            keep &= pl.col("run_id") >= low
        if high is not None:
            keep &= pl.col("run_id") < high
        return pl.scan_parquet(self.trials_path).filter(keep).collect()
