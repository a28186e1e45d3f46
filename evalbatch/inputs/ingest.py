"""Convert other OpenWOP event formats to the canonical Parquet layout, without loss (§1.2).

Accepted, per file (the format is read off the content; the suffix only breaks ties):
NDJSON/JSONL (one `RunEventDoc` per line), a JSON array of them, a poll response
`{runId, events, ...}`, a v1 debug bundle (`events[]` with `seq`/`sequence` and `data`), and a
captured SSE stream (`id:`/`event:`/`data:` frames, `event: batch` arrays included). Files may be
gzip-compressed.

Nothing is lost (E-32): JSON is parsed strictly (NaN and Infinity are not JSON) but every number
keeps the text it was written with, every object keeps its key order and repeated keys, and every
envelope field that has no canonical column, or whose value does not fit its column's type, is
kept in the JSON text column `extra`. Output is one directory per run (`runId=<id>/`, the id
percent-encoded, E-33), each file written aside and linked into place complete (E-34). A write
that fails (a full disk) is an `OutputError` and leaves nothing behind; a working directory left
by a killed ingest is removed by the next ingest into the same directory (E-75). Each file records
the sha256 of its rows, so ingesting the same export again adds nothing (issue 17 item 7).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.parse
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.errors import (
    EXIT_OK,
    EXIT_SKIPPED,
    EXIT_UNUSABLE,
    InputError,
    OutputError,
    write_failed,
)
from evalbatch.options import Resources
from evalbatch.problems import severity

#: the canonical columns (CONTRACT §1.1), then `extra`: every other envelope field, as JSON text
SCHEMA = pa.schema(
    [
        ("runId", pa.string()),
        ("sequence", pa.int64()),
        ("type", pa.string()),
        ("payload", pa.string()),
        ("timestamp", pa.string()),
        ("eventId", pa.string()),
        ("schemaVersion", pa.int64()),
        ("nodeId", pa.string()),
        ("causationId", pa.string()),
        ("engineVersion", pa.int64()),
        ("extra", pa.string()),
    ]
)
_TEXT_FIELDS = ("timestamp", "eventId", "nodeId", "causationId")
_INT_FIELDS = ("schemaVersion", "engineVersion")
_INT64_MAX = 2**63 - 1

#: file suffixes picked up below a directory (a file named directly is read whatever its name)
SUFFIXES = (".json", ".jsonl", ".ndjson", ".sse")

#: rows buffered before they are written out (bounds memory on large inputs)
DEFAULT_FLUSH_ROWS = 1_000_000

#: exit codes, as `evalbatch run`'s: all ingested; nothing usable; something skipped

#: the longest `runId=<encoded id>` directory name; longer ids use the `runKey=` layout (E-33)
_MAX_DIR_NAME = 200

Format = Literal["json", "ndjson", "sse"]


# --------------------------------------------------------------------------------------------
# Lossless JSON values


class _Number(str):
    """A JSON number as written (`1.0`, `1e2`, `12345678901234567890`): never re-rendered."""

    __slots__ = ()


class _Object(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs: key order and repeated keys survive."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        """The value JSON parsers see: the last of repeated keys (D-7)."""
        for name, value in reversed(self):
            if name == key:
                return value
        return default

    def __contains__(self, key: object) -> bool:
        return any(name == key for name, _ in self)


def _is_text(value: Any) -> bool:
    """A JSON string (a number's text is a `_Number`, not a string)."""
    return isinstance(value, str) and not isinstance(value, _Number)


def _is_array(value: Any) -> bool:
    return isinstance(value, list) and not isinstance(value, _Object)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(text: str | bytes) -> Any:
    """Parse JSON strictly, keeping number texts, key order and repeated keys."""
    return json.loads(
        text,
        object_pairs_hook=_Object,
        parse_float=_Number,
        parse_int=_Number,
        parse_constant=_reject_constant,
    )


def _dump_into(value: Any, out: list[str], ascii_only: bool) -> None:
    if isinstance(value, _Object):
        out.append("{")
        for index, (key, item) in enumerate(value):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=ascii_only))
            out.append(":")
            _dump_into(item, out, ascii_only)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _dump_into(item, out, ascii_only)
        out.append("]")
    elif isinstance(value, _Number):
        out.append(str.__str__(value))
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=ascii_only))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    else:
        out.append("null")


def dump(value: Any) -> str:
    """Compact JSON text of a parsed value, numbers as written. Text that cannot be UTF-8 (a lone
    surrogate escape) is written as escapes, so the JSON value is the same."""
    out: list[str] = []
    _dump_into(value, out, ascii_only=False)
    text = "".join(out)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        out = []
        _dump_into(value, out, ascii_only=True)
        text = "".join(out)
    return text


def _as_int(value: Any) -> int | None:
    """An integral JSON number that fits int64 (`3.0` counts, as D-5 reads `1.0`); else None."""
    if not isinstance(value, _Number):
        return None
    try:
        number = json.loads(str.__str__(value), parse_float=Decimal)
    except ValueError:
        return None
    if isinstance(number, int):
        whole = number
    elif number == number.to_integral_value():
        whole = int(number)
    else:
        return None
    return whole if abs(whole) <= _INT64_MAX else None


# --------------------------------------------------------------------------------------------
# Problems and the report


@dataclass(frozen=True)
class IngestProblem:
    """Something in an input that was skipped or is known to be missing."""

    path: str
    where: str | None  # "line 12", "frame 3 (line 9)", "item 4", or None for the whole file
    code: str
    reason: str

    @property
    def severity(self) -> str:
        return severity(self.code)

    @property
    def message(self) -> str:
        place = f"{self.path}: {self.where}" if self.where else self.path
        return f"{place}: {self.reason} [{self.code}]"


@dataclass
class IngestReport:
    """What `ingest_paths` read and wrote."""

    out_dir: Path
    files: int = 0
    events: int = 0  # usable events read, whether written now or already there
    runs: int = 0
    written: list[Path] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    #: events, and runs with nothing new, whose rows a file in `out_dir` already holds (not added)
    events_already_there: int = 0
    runs_already_there: int = 0

    @property
    def exit_code(self) -> int:
        """0 everything ingested; 3 something skipped or known missing; 2 nothing usable."""
        if self.events == 0:
            return EXIT_UNUSABLE
        return EXIT_SKIPPED if self.problems else EXIT_OK


# --------------------------------------------------------------------------------------------
# Events out of documents


class _Skip(Exception):
    """An item that is not a usable RunEventDoc; the message says why (content-free)."""


def event_row(
    event: Any,
    default_run_id: str | None = None,
    default_sequence: int | None = None,
    default_type: str | None = None,
) -> tuple[Any, ...]:
    """One output row (in `SCHEMA` order) from one RunEventDoc.

    Aliases map to canonical columns (`seq` -> sequence, `data` -> payload, as a v1 debug bundle
    writes them); a container's runId (poll response, bundle) or an SSE frame's `id:`/`event:`
    fill what the event lacks. Everything else, and any value that does not fit its column, is
    kept in `extra`.
    """
    if not isinstance(event, _Object):
        raise _Skip("not a JSON object")
    extra = _Object()
    last: dict[str, Any] = {}
    for key, value in event:
        if key in last:
            extra.append((key, last[key]))  # an earlier repeated key: kept, the last one counts
        last[key] = value
    sequence_key = "sequence" if "sequence" in last else "seq"
    payload_key = "payload" if "payload" in last else "data"
    run_id = last.pop("runId", default_run_id)
    if not _is_text(run_id):
        raise _Skip("runId is missing or not a string")
    if sequence_key in last:
        sequence = _as_int(last.pop(sequence_key))
        if sequence is None or sequence < 0:
            raise _Skip(f"{sequence_key} is not an integer >= 0")
    elif default_sequence is not None:
        sequence = default_sequence
    else:
        raise _Skip("sequence is missing")
    type_ = last.pop("type", default_type)
    if not _is_text(type_):
        raise _Skip("type is missing or not a string")
    payload = dump(last.pop(payload_key)) if payload_key in last else None
    columns: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        if _is_text(last.get(name)):
            columns[name] = last.pop(name)
    for name in _INT_FIELDS:
        if name in last and (number := _as_int(last[name])) is not None:
            columns[name] = number
            del last[name]
    extra.extend(last.items())
    return (
        run_id,
        sequence,
        type_,
        payload,
        columns.get("timestamp"),
        columns.get("eventId"),
        columns.get("schemaVersion"),
        columns.get("nodeId"),
        columns.get("causationId"),
        columns.get("engineVersion"),
        dump(extra) if extra else None,
    )


@dataclass
class _Sink:
    """Where the rows and problems of one input go. With `drain`, rows are handed on every
    `drain_every` rows, so a large file is never held in memory whole."""

    path: str
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    drain: Callable[[list[tuple[Any, ...]]], None] | None = None
    drain_every: int = 100_000

    def problem(self, where: str | None, code: str, reason: str) -> None:
        self.problems.append(IngestProblem(self.path, where, code, reason))

    def event(self, event: Any, where: str, **defaults: Any) -> None:
        try:
            self.rows.append(event_row(event, **defaults))
        except _Skip as exc:
            self.problem(where, "event-invalid", str(exc))
            return
        if self.drain is not None and len(self.rows) >= self.drain_every:
            self.flush()

    def flush(self) -> None:
        if self.drain is not None and self.rows:
            self.drain(self.rows)
            self.rows = []


def _document(sink: _Sink, value: Any, where: str | None) -> None:
    """A parsed JSON value: an event, an array of events, a poll response or a debug bundle."""
    prefix = f"{where}, " if where else ""
    if _is_array(value):
        for index, item in enumerate(value):
            sink.event(item, f"{prefix}item {index}")
        return
    if not isinstance(value, _Object):
        sink.problem(
            where,
            "input-unreadable",
            "not an event, an array of events, a poll response or a debug bundle",
        )
        return
    events = value.get("events")
    if "events" not in value or "type" in value:
        sink.event(value, where or "item 0")
        return
    if not _is_array(events):
        sink.problem(where, "input-unreadable", "events is not an array")
        return
    run_id = value.get("runId")
    if "bundleVersion" in value:
        run = value.get("run")
        if isinstance(run, _Object) and _is_text(run.get("runId")):
            run_id = run.get("runId")
        _bundle_checks(sink, value, len(events), where)
    default = run_id if _is_text(run_id) else None
    for index, item in enumerate(events):
        sink.event(item, f"{prefix}event {index}", default_run_id=default)


def _bundle_checks(sink: _Sink, bundle: _Object, count: int, where: str | None) -> None:
    """A v1 debug bundle that says it lost events (`truncated`, or fewer events than
    `metrics.eventCount`) is ingested and reported: the log is incomplete."""
    if bundle.get("truncated") is True:
        sink.problem(
            where,
            "bundle-truncated",
            "the debug bundle is truncated: only a prefix of the run's events was kept",
        )
    metrics = bundle.get("metrics")
    declared = _as_int(metrics.get("eventCount")) if isinstance(metrics, _Object) else None
    if declared is not None and declared != count:
        sink.problem(
            where,
            "bundle-count-mismatch",
            f"metrics.eventCount is {declared} but the bundle holds {count} events",
        )


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, RecursionError):
        return "not JSON (nested too deeply)"
    return f"not JSON ({exc})"


def _read_ndjson(sink: _Sink, lines: Iterable[bytes]) -> None:
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        try:
            value = parse(line.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            sink.problem(f"line {number}", "line-invalid", _reason(exc))
            continue
        _document(sink, value, f"line {number}")


def _sse_frames(lines: Iterable[bytes]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(frame number, first line, fields) per frame; fields: `id`, `event` and the raw `data`
    lines (SSE: one leading space after the colon is dropped; a line starting with `:` is a
    comment; a blank line ends the frame)."""
    fields: dict[str, Any] = {}
    frame, first = 0, 0
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip(b"\r\n")
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line:
            if fields:
                frame += 1
                yield frame, first, fields
            fields = {}
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if not fields:
            first = number
        if name == b"data":
            fields.setdefault("data", []).append(value)
        elif name in (b"id", b"event"):
            fields[name.decode("ascii")] = value.decode("utf-8", errors="replace")
        else:
            fields["other"] = True  # retry: and unknown fields carry no event
    if fields:
        yield frame + 1, first, fields


def _read_sse(sink: _Sink, lines: Iterable[bytes]) -> None:
    for frame, first, fields in _sse_frames(lines):
        where = f"frame {frame} (line {first})"
        if "data" not in fields:
            continue  # a keep-alive or retry: frame carries no event
        try:
            value = parse(b"\n".join(fields["data"]).decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            sink.problem(where, "frame-invalid", _reason(exc))
            continue
        if _is_array(value):  # `event: batch`: an array of RunEventDocs
            for index, item in enumerate(value):
                sink.event(item, f"{where}, item {index}")
            continue
        name = fields.get("event")
        frame_id = fields.get("id", "")
        sink.event(
            value,
            where,
            default_sequence=int(frame_id) if frame_id.isascii() and frame_id.isdigit() else None,
            default_type=name if name and name not in ("message", "batch") else None,
        )


# --------------------------------------------------------------------------------------------
# Files


def _sniff(head: bytes, suffix: str) -> Format | None:
    """The format of a file from its first bytes; the suffix decides only between JSON forms."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{"):
        return "ndjson" if suffix in (".jsonl", ".ndjson") else "json"
    if text.startswith((b"id:", b"event:", b"data:", b":", b"retry:")):
        return "sse"
    return None


def _read_bytes(path: str) -> bytes:
    """A whole input (standard input for `-`), gunzipped when it is gzip."""
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _lines(path: str) -> Iterator[bytes]:
    """The lines of a file, streamed (JSON lines and SSE need not fit in memory)."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if compressed else open
    with opener(path, "rb") as handle:
        yield from handle


def _head(path: str) -> bytes:
    with open(path, "rb") as raw:
        start = raw.read(2)
    if start == b"\x1f\x8b":
        with gzip.open(path, "rb") as handle:
            return handle.read(256)
    with open(path, "rb") as handle:
        return handle.read(256)


def read_file(path: str) -> tuple[list[tuple[Any, ...]], list[IngestProblem]]:
    """Every event row of one input file, and what was skipped in it."""
    sink = _Sink(path)
    _read_into(sink)
    return sink.rows, sink.problems


def _read_into(sink: _Sink) -> None:
    """Read one input (named by `sink.path`) into `sink`, whatever its format."""
    path = sink.path
    name = path.removesuffix(".gz").removesuffix(".GZ")
    suffix = Path(name).suffix.lower()
    try:
        data = _read_bytes(path) if path == "-" else None
        head = data[:256] if data is not None else _head(path)
        if not head.strip():
            return  # an empty file holds no event
        kind = _sniff(head, suffix)
        lines: Iterable[bytes] = data.splitlines(keepends=True) if data is not None else ()
        if kind is None:
            sink.problem(None, "input-unreadable", "not JSON, JSON lines or an SSE stream")
        elif kind == "sse":
            _read_sse(sink, lines if data is not None else _lines(path))
        elif kind == "ndjson":
            _read_ndjson(sink, lines if data is not None else _lines(path))
        else:
            _read_json_document(sink, data if data is not None else _read_bytes(path))
    except zlib.error:  # a gzip header over a damaged stream: this file only
        sink.problem(None, "input-unreadable", "cannot be read (damaged gzip data)")
    except (OSError, EOFError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        sink.problem(None, "input-unreadable", f"cannot be read ({reason})")
    sink.flush()


def _read_json_document(sink: _Sink, data: bytes) -> None:
    """A whole JSON document. A file that is not one document but whose lines are JSON objects
    (JSON lines named `.json`, perhaps with a broken line) is read as JSON lines instead, so one
    bad line never costs the others."""
    try:
        value = parse(data.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
        lines = data.splitlines()
        if len(lines) > 1 and any(_is_object_line(line) for line in lines):
            _read_ndjson(sink, lines)
            return
        where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else None
        sink.problem(where, "input-unreadable", _reason(exc))
        return
    _document(sink, value, None)


def _is_object_line(line: bytes) -> bool:
    text = line.strip()
    if not text.startswith(b"{"):
        return False
    try:
        return isinstance(parse(text.decode("utf-8")), _Object)
    except (ValueError, RecursionError):
        return False


def expand_inputs(paths: Sequence[str | Path]) -> list[str]:
    """Files named directly, every file with a known suffix (`.json`, `.jsonl`, `.ndjson`,
    `.sse`, each optionally `.gz`) below a directory, and glob matches; `-` is standard input."""
    found: list[str] = []
    seen: set[str] = set()
    for raw in paths:
        text = str(raw)
        path = Path(text)
        if text == "-":
            matches = ["-"]
        elif path.is_dir():
            matches = sorted(
                str(p)
                for p in path.rglob("*")
                if p.is_file() and p.name.lower().removesuffix(".gz").endswith(SUFFIXES)
            )
        elif path.is_file():
            matches = [text]
        else:
            matches = sorted(m for m in glob.glob(text, recursive=True) if Path(m).is_file())
            if not matches:
                raise InputError(
                    f"no input at {text!r}: give NDJSON, JSON, poll-response, debug-bundle or "
                    "SSE files, directories or globs"
                )
        for match in matches:
            if match not in seen:
                seen.add(match)
                found.append(match)
    return found


# --------------------------------------------------------------------------------------------
# Writing


def _castable_ids(run_ids: Sequence[str], resources: Resources | None) -> set[str]:
    """Ids DuckDB's hive partitioning would read as another type (`2026-1-2` as a date, `42` as
    a number) and so could hand back changed: they use the `runKey=` layout (E-33)."""
    if not run_ids:
        return set()
    con = duckdb.connect(":memory:")
    (resources or Resources()).apply(con)
    try:
        con.register("ids", pa.table({"id": pa.array(run_ids, pa.string())}))
        casts = " OR ".join(
            f"TRY_CAST(id AS {kind}) IS NOT NULL"
            for kind in ("BIGINT", "HUGEINT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "BOOLEAN")
        )
        rows = con.execute(f"SELECT id FROM ids WHERE {casts}").fetchall()
    finally:
        con.close()
    return {row[0] for row in rows}


def partition_names(
    run_ids: Sequence[str], existing: Iterable[str] = (), resources: Resources | None = None
) -> dict[str, str]:
    """The directory of each run (E-33): `runId=<id>` with every character outside
    `[A-Za-z0-9._~-]` percent-encoded (DuckDB decodes it back, so the partition value is the id),
    or `runKey=<sha-256 prefix>` for an id that is empty, too long for a file name, would be read
    as another type, or differs only in case from another run's directory."""
    existing_folded = {name.casefold(): name for name in existing}
    castable = _castable_ids(run_ids, resources)
    names: dict[str, str] = {}
    for run_id in sorted(run_ids):
        name = f"runId={urllib.parse.quote(run_id, safe='')}"
        folded = name.casefold()
        clash = existing_folded.get(folded, name) != name
        if not run_id or run_id in castable or len(name) > _MAX_DIR_NAME or clash:
            digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()
            name = f"runKey={digest[:32]}"
            folded = name.casefold()
        existing_folded.setdefault(folded, name)
        names[run_id] = name
    return names


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


#: the private working directories of ingests into an output directory
WORK_PREFIX = ".ingest-"

#: the Parquet key-value metadata key under which each written file records `rows_digest`
DIGEST_KEY = "evalbatch.ingest.sha256"


def rows_digest(columns: Sequence[Sequence[Any]]) -> str:
    """The sha256 of a file's rows, taken over each column (in `SCHEMA` order, rows in file
    order) as one line of ASCII JSON: it depends on the values alone, not on how Parquet or a
    library version encodes them, so the same events from the same export give the same digest."""
    digest = hashlib.sha256()
    for column in columns:
        digest.update(json.dumps(column, separators=(",", ":")).encode("ascii"))
        digest.update(b"\n")
    return digest.hexdigest()


def _recorded_digest(path: Path) -> tuple[str, int] | None:
    """The digest a part file records and its row count; None for a file from before digests
    were recorded or one that cannot be read (then nothing is taken as already there)."""
    try:
        footer = pq.read_metadata(path)
    except (OSError, ValueError, pa.ArrowException):
        return None
    recorded = (footer.metadata or {}).get(DIGEST_KEY.encode("ascii"))
    return (recorded.decode("ascii"), footer.num_rows) if recorded else None


def _write_error(out_dir: Path, exc: OSError) -> OutputError:
    return write_failed(out_dir, exc, "nothing was added and the files already there are unchanged")


def _lock_dir(path: Path, blocking: bool) -> int | None:
    """An open descriptor of directory `path` holding an exclusive `flock` on it; None when
    another process holds it (only when not `blocking`)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def clear_stale_work(out_dir: Path) -> int:
    """Remove the working directories of ingests that died; returns how many there were.

    A live ingest holds a `flock` on its working directory until it ends (the kernel drops it
    when the process dies, however it dies), so one whose lock can be taken belongs to no live
    ingest. Call it holding the lock on `out_dir` itself (`_Writer` does): a directory is made
    and locked in one step under that lock, so none is seen unlocked while its ingest lives."""
    cleared = 0
    for path in out_dir.iterdir():
        if not path.name.startswith(WORK_PREFIX) or path.is_symlink() or not path.is_dir():
            continue
        try:
            fd = _lock_dir(path, blocking=False)
        except OSError:
            continue  # gone meanwhile, or cannot be locked here: left alone
        if fd is None:
            continue  # a live ingest's
        try:
            shutil.rmtree(path, ignore_errors=True)
            cleared += 1
        finally:
            os.close(fd)
    return cleared


class _Writer:
    """Buffers rows by run and writes them as Parquet parts into a private temporary directory
    inside the output directory; `commit` links each finished part into place. Every `OSError`
    while writing is an `OutputError`, and `discard` leaves nothing behind."""

    def __init__(self, out_dir: Path, flush_rows: int, resources: Resources | None) -> None:
        self.out_dir = out_dir
        self.flush_rows = flush_rows
        self.resources = resources
        self.tmp, self._held = self._make_work_dir(out_dir)
        self.buffer: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        self.buffered = 0
        self.parts: dict[str, list[Path]] = defaultdict(list)
        self.digests: dict[Path, tuple[str, int]] = {}  # each part's rows_digest and rows
        self.files_written = 0
        self.events = 0
        self.events_already_there = 0
        self.runs_already_there = 0

    @staticmethod
    def _make_work_dir(out_dir: Path) -> tuple[Path, int | None]:
        """Clear dead ingests' working directories and make and lock this one, under a short
        lock on `out_dir` (E-75). Where directories cannot be locked nothing is cleared."""
        try:
            guard = _lock_dir(out_dir, blocking=True)
        except OSError:
            guard = None
        try:
            held = None
            if guard is not None:
                clear_stale_work(out_dir)
            tmp = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=out_dir))
            with contextlib.suppress(OSError):
                held = _lock_dir(tmp, blocking=False)
            return tmp, held
        except OSError as exc:
            raise _write_error(out_dir, exc) from exc
        finally:
            if guard is not None:
                os.close(guard)

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            self.buffer[row[0]].append(row)
        self.buffered += len(rows)
        self.events += len(rows)
        if self.buffered >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        try:
            for run_id, rows in sorted(self.buffer.items()):
                rows.sort(key=lambda row: row[1])  # stable: rows of one sequence keep input order
                columns = [[row[i] for row in rows] for i in range(len(SCHEMA))]
                digest = rows_digest(columns)
                table = pa.Table.from_arrays(
                    [pa.array(values, f.type) for values, f in zip(columns, SCHEMA, strict=True)],
                    schema=SCHEMA.with_metadata({DIGEST_KEY: digest}),
                )
                # not named *.parquet until committed: a reader never sees a partial file
                target = self.tmp / f"{self.files_written}.part"
                self.files_written += 1
                pq.write_table(table, target)
                os.chmod(target, _file_mode())
                self.parts[run_id].append(target)
                self.digests[target] = (digest, len(rows))
        except OSError as exc:  # raised past the input readers, which report their own OSErrors
            raise _write_error(self.out_dir, exc) from exc
        self.buffer.clear()
        self.buffered = 0

    def commit(self) -> list[Path]:
        """Link every part into place, less the parts whose rows a file of their run's directory
        already holds (the same digest and row count: the same export ingested again). If one
        cannot be linked, the ones already linked and the run directories made for them are
        removed again, so a failed ingest adds nothing. Under the output directory's lock, so two
        ingests of the same export never both add it."""
        self.flush()
        written: list[Path] = []
        made: list[Path] = []
        try:
            guard = _lock_dir(self.out_dir, blocking=True)
        except OSError:
            guard = None  # a file system without locks: checked and linked all the same
        try:
            existing = [p.name for p in self.out_dir.iterdir() if p.is_dir() and p != self.tmp]
            names = partition_names(list(self.parts), existing, self.resources)
            for run_id in sorted(self.parts):
                directory = self.out_dir / names[run_id]
                if not directory.is_dir():
                    directory.mkdir()
                    made.append(directory)
                there = {_recorded_digest(p) for p in sorted(directory.glob("part-*.parquet"))}
                added = 0
                for part in self.parts[run_id]:
                    if self.digests[part] in there:
                        self.events_already_there += self.digests[part][1]
                        continue
                    written.append(_link_next(part, directory))
                    there.add(self.digests[part])
                    added += 1
                self.runs_already_there += added == 0
        except OSError as exc:
            for path in written:
                with contextlib.suppress(OSError):
                    path.unlink()
            for directory in reversed(made):
                with contextlib.suppress(OSError):
                    directory.rmdir()
            raise _write_error(self.out_dir, exc) from exc
        finally:
            if guard is not None:
                os.close(guard)
        return written

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self._held is not None:
            os.close(self._held)
            self._held = None


def _link_next(part: Path, directory: Path) -> Path:
    """Give a finished file the first free name `part-<n>.parquet` in `directory` without ever
    replacing one (a hard link fails when the name is taken); earlier ingests are kept."""
    number = 0
    while True:
        target = directory / f"part-{number}.parquet"
        try:
            os.link(part, target)
        except FileExistsError:
            number += 1
            continue
        except OSError:  # a file system without hard links: rename to a name still free
            if target.exists():
                number += 1
                continue
            os.replace(part, target)
            return target
        part.unlink()
        return target


def ingest_paths(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    flush_rows: int = DEFAULT_FLUSH_ROWS,
    resources: Resources | None = None,
) -> IngestReport:
    """Convert every event in `paths` to Parquet under `out_dir`, one directory per run.

    A line, frame or item that cannot be used is reported (file, line or frame, reason) and
    skipped; every other event is written. Nothing is written when no event is usable.

    Raises:
        InputError: an input path matches no file.
        OutputError: the events could not be written (a full disk); nothing was added.
    """
    files = expand_inputs(paths)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_error(out, exc) from exc
    report = IngestReport(out_dir=out, files=len(files))
    writer = _Writer(out, flush_rows, resources)
    try:
        for path in files:
            sink = _Sink(path, drain=writer.add)
            _read_into(sink)
            report.problems += sink.problems
        report.events = writer.events
        report.runs = len(set(writer.parts) | set(writer.buffer))
        if report.events:
            report.written = writer.commit()
            report.events_already_there = writer.events_already_there
            report.runs_already_there = writer.runs_already_there
    finally:
        writer.discard()
    return report


def event_json(row: dict[str, Any]) -> str:
    """A written row back as RunEventDoc JSON text: the canonical columns that hold a value, the
    payload as written, then `extra` (the inverse of `event_row`, for exports and tests)."""
    fields = _Object()
    for name in SCHEMA.names:
        value = row.get(name)
        if name == "extra" or value is None:
            continue
        if name == "payload":
            fields.append((name, parse(value)))
        elif isinstance(value, int):
            fields.append((name, _Number(str(value))))
        else:
            fields.append((name, value))
    if row.get("extra"):
        fields.extend(parse(row["extra"]))
    return dump(fields)
