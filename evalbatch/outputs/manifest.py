"""`manifest.json`: what an incremental run's grades depended on, a record of each output file
(size, sha256, rows, and its identity once in place) that the next incremental run checks before
it carries a row from it or leaves it as it is (E-50, E-71, E-156), and a record of each event
file it read (its identity and the fingerprint of each run's rows in it) that lets the next one
skip an unchanged file without reading its rows (E-152).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.inputs import limits
from evalbatch.outputs.output_format import MANIFEST_FILE, MANIFEST_FORMAT, OUTPUT_FILES

_CHUNK = 1 << 20


class Untrusted(Exception):
    """The previous outputs cannot be carried from; the message says which file and which check
    (content-free: names, counts and sizes only)."""


@dataclass(frozen=True)
class FileRecord:
    """One output file as it was written: what the next incremental run checks before it
    carries a row from it, or leaves it as it is (E-156)."""

    bytes: int
    sha256: str
    rows: int  # lines of summaries.jsonl, rows of a Parquet table
    #: its identity in place (E-156): the modification and status-change times of the file the
    #: run renamed into place (None in a record written before, or of a file not yet in place)
    mtime_ns: int | None = None
    ctime_ns: int | None = None

    def in_place(self, status: os.stat_result) -> FileRecord:
        """This record with the identity of the file whose status is `status`."""
        return FileRecord(
            self.bytes, self.sha256, self.rows, status.st_mtime_ns, status.st_ctime_ns
        )

    def same_identity(self, path: Path) -> bool:
        """Whether the file at `path` is, by its status alone, the one recorded (E-156): its
        size, modification and status-change times as recorded. A write moves both times and a
        file renamed or copied there has a status-change time of its own, so this tells the file
        left as it was apart from any other without reading it; a record without an identity
        tells nothing."""
        if self.mtime_ns is None or self.ctime_ns is None:
            return False
        try:
            status = path.stat()
        except OSError:
            return False
        return (status.st_size, status.st_mtime_ns, status.st_ctime_ns) == (
            self.bytes,
            self.mtime_ns,
            self.ctime_ns,
        )

    def doc(self) -> dict[str, Any]:
        """The record as the manifest holds it (no identity keys for a record without one)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _scan_file(path: Path) -> tuple[int, str, int, bool, os.stat_result]:
    """Size, sha256, newline count and whether the file ends with a newline, in one read, and
    the file's status taken before it (a change while it is read moves its times past it)."""
    digest = hashlib.sha256()
    size = newlines = 0
    last = b"\n"
    with path.open("rb") as handle:
        status = os.fstat(handle.fileno())
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
    return size, digest.hexdigest(), newlines, last == b"\n", status


def _parquet_rows(path: Path) -> int:
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:  # a bad footer: ArrowInvalid
        raise Untrusted(f"{path.name}: not a readable Parquet file") from exc


def describe_file(path: Path) -> FileRecord:
    """The record of one output file just written."""
    size, sha256, newlines, _, _ = _scan_file(path)
    rows = newlines if path.suffix == ".jsonl" else _parquet_rows(path)
    return FileRecord(bytes=size, sha256=sha256, rows=rows)


def check_file(path: Path, recorded: FileRecord) -> FileRecord:
    """Raise `Untrusted` unless `path` is whole and is the file `recorded` describes: readable,
    its last line whole (summaries.jsonl), its rows, size and sha256 as recorded. The sha256
    settles it (every line whole JSON, every Parquet page intact); the checks before it only
    name the fault better. Returns the record with the file's identity as it was read."""
    try:
        size, sha256, newlines, whole, status = _scan_file(path)
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
        raise Untrusted(f"{path.name}: {rows} {unit}, {MANIFEST_FILE} records {recorded.rows}")
    if size != recorded.bytes:
        raise Untrusted(f"{path.name}: {size} bytes, {MANIFEST_FILE} records {recorded.bytes}")
    if sha256 != recorded.sha256:
        raise Untrusted(f"{path.name}: its sha256 is not the one {MANIFEST_FILE} records")
    return recorded.in_place(status)


@dataclass(frozen=True)
class RunEntry:
    """What one run's grade depended on."""

    events: str
    suite_key: tuple[str, str] | None = None  # (suiteId, version) its eval.started claims
    suite: str | None = None  # sha256 of the suite file it was graded with (suite_digest)
    baseline: str | None = None  # the baselineRunId its eval.started names
    #: each child run its trials read and that child's fingerprint then, None for a log that was
    #: missing (E-102); None when it read none
    delegates: dict[str, str | None] | None = None


@dataclass(frozen=True)
class FileIdentity:
    """What tells an event file unchanged without reading its rows (E-152): its size, its
    modification and status-change times, and the sha256 of its Parquet footer (the schema,
    the row groups with their offsets, sizes and statistics). A rewrite of any page changes the
    times, and nearly always the footer too (offsets, sizes, statistics)."""

    bytes: int
    mtime_ns: int
    ctime_ns: int
    footer_sha256: str


@dataclass(frozen=True)
class InputRecord:
    """One event file as an incremental run read it: its identity and, for each run with rows
    in it, the fingerprint of those rows (the same count, sum and xor of row hashes as a run's
    own fingerprint, E-50, so a run's fingerprint is its files' combined, `combine`)."""

    identity: FileIdentity | None  # None: none to trust (not kept, so read every time)
    runs: dict[str, str]


def combine(parts: list[str]) -> str:
    """The fingerprint of a run from the fingerprints of its rows in each file: counts and sums
    add up, xors xor (the order of the files does not matter)."""
    if len(parts) == 1:
        return parts[0]
    count = total = xor = 0
    for part in parts:
        rows, summed, xored = part.split(":")
        count += int(rows)
        total += int(summed)
        xor ^= int(xored)
    return f"{count}:{total}:{xor}"


@dataclass
class Manifest:
    settings: dict[str, Any]
    runs: dict[str, RunEntry]
    files: dict[str, FileRecord] = field(default_factory=dict)  # filled in once written
    #: each event file read, by its path as found, that can be told unchanged next time (E-152)
    inputs: dict[str, InputRecord] = field(default_factory=dict)

    def text(self) -> str:
        runs = {}
        for run_id, entry in sorted(self.runs.items()):
            doc: dict[str, Any] = {"events": entry.events}
            if entry.suite_key is not None:
                doc["suite_key"] = list(entry.suite_key)
            for name in ("suite", "baseline", "delegates"):
                if (value := getattr(entry, name)) is not None:
                    doc[name] = value
            runs[run_id] = doc
        body = {
            "format": MANIFEST_FORMAT,
            "settings": self.settings,
            "runs": runs,
            "files": {name: record.doc() for name, record in sorted(self.files.items())},
            "inputs": {
                path: {**asdict(record.identity), "runs": record.runs}
                for path, record in sorted(self.inputs.items())
                if record.identity is not None
            },
        }
        return json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def read_manifest(out_dir: Path) -> Manifest:
    """The manifest of the last run into `out_dir`.

    Raises:
        Untrusted: there is none, or none this version can use (the reason says which).
    """
    path = out_dir / MANIFEST_FILE
    try:
        doc = limits.loads(path.read_text(encoding="utf-8"))  # a deep one is untrusted (E-115)
    except FileNotFoundError as exc:
        raise Untrusted(f"no {MANIFEST_FILE} in the output directory") from exc
    except (OSError, ValueError) as exc:
        raise Untrusted(f"{MANIFEST_FILE}: not readable JSON") from exc
    found = doc.get("format") if isinstance(doc, dict) else None
    if found != MANIFEST_FORMAT:
        raise Untrusted(
            f"{MANIFEST_FILE}: format {found if isinstance(found, int) else '?'}, "
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
                delegates=_delegates(entry.get("delegates")),
            )
        files = {name: _file_record(r) for name, r in doc["files"].items()}
        inputs = {str(path): _input_record(r) for path, r in doc.get("inputs", {}).items()}
        return Manifest(settings=doc["settings"], runs=runs, files=files, inputs=inputs)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise Untrusted(f"{MANIFEST_FILE}: not a manifest of this evalbatch") from exc


def _file_record(recorded: Any) -> FileRecord:
    """An output file's record, as written (without an identity when written before E-156)."""
    times = [recorded.get(key) for key in ("mtime_ns", "ctime_ns")]
    mtime_ns, ctime_ns = (None, None) if None in times else (int(times[0]), int(times[1]))
    return FileRecord(
        bytes=int(recorded["bytes"]),
        sha256=str(recorded["sha256"]),
        rows=int(recorded["rows"]),
        mtime_ns=mtime_ns,
        ctime_ns=ctime_ns,
    )


#: a fingerprint as `run_fingerprints` writes it: count, sum and xor of row hashes
_FINGERPRINT = re.compile(r"[0-9]+:[0-9]+:[0-9]+")


def _input_record(recorded: Any) -> InputRecord:
    """An event file's record, as written (a manifest without them knows no file: each is
    read, E-152)."""
    runs = recorded["runs"]
    if not isinstance(runs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and _FINGERPRINT.fullmatch(v)
        for k, v in runs.items()
    ):
        raise ValueError("inputs")  # combine() must never fail on what it was given
    identity = FileIdentity(
        bytes=int(recorded["bytes"]),
        mtime_ns=int(recorded["mtime_ns"]),
        ctime_ns=int(recorded["ctime_ns"]),
        footer_sha256=str(recorded["footer_sha256"]),
    )
    return InputRecord(identity, dict(runs))


def _delegates(recorded: Any) -> dict[str, str | None] | None:
    """A run entry's child runs, as written (child -> fingerprint or null)."""
    if recorded is None:
        return None
    if not isinstance(recorded, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in recorded.items()
    ):
        raise ValueError("delegates")
    return dict(recorded)


def check_outputs(
    out_dir: Path,
    manifest: Manifest,
    by_identity: bool = False,
    names: Iterable[str] = OUTPUT_FILES,
) -> tuple[dict[str, FileRecord], list[str]]:
    """Raise `Untrusted` unless every output file (of `names`) is the one `manifest` records,
    whole and by its sha256 (E-71). With `by_identity`, a file whose identity is the one recorded
    is taken as it was without reading it (E-156: only where nothing is copied from it).
    Returns each file's record with its identity now, and the files taken by identity alone."""
    records: dict[str, FileRecord] = {}
    unread: list[str] = []
    for name in names:
        recorded = manifest.files.get(name)
        if recorded is None:
            raise Untrusted(f"{MANIFEST_FILE} records no {name}")
        if by_identity and recorded.same_identity(out_dir / name):
            records[name] = recorded
            unread.append(name)
            continue
        records[name] = check_file(out_dir / name, recorded)
    return records, unread
