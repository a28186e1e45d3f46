"""Reading OpenWOP event exports: each format into event rows and problems (§1.2).

Accepted, per file (the format is read off the content; the suffix only breaks ties):
NDJSON/JSONL (one `RunEventDoc` per line), a JSON array of them, a poll response
`{runId, events, ...}`, a v1 debug bundle (`events[]` with `seq`/`sequence` and `data`), a
captured SSE stream (`id:`/`event:`/`data:` frames, `event: batch` arrays included), and Inspect
eval logs (`.eval` archives and `.json` logs: `inspect_logs`, E-111). Files may be
gzip-compressed (a damaged one is one problem, E-75). Each reader puts what it finds into a
`RowSink` (`event_rows`) with where it found it, so a bad line, frame or item is reported and
skipped and every other event is kept (E-35). `expand_inputs` says which files a list of paths,
directories and globs names.
"""

from __future__ import annotations

import glob
import gzip
import json
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from evalbatch.errors import InputError
from evalbatch.inputs import inspect_logs
from evalbatch.inputs.event_rows import IngestProblem, RowSink
from evalbatch.inputs.inspect_logs import InspectOptions
from evalbatch.inputs.lossless_json import Object, as_int, is_array, is_text, parse

#: file suffixes picked up below a directory (a file named directly is read whatever its name)
SUFFIXES = (".json", ".jsonl", ".ndjson", ".sse", ".eval")

Format = Literal["json", "ndjson", "sse"]


# --------------------------------------------------------------------------------------------
# Events out of documents, lines and frames


def _document(sink: RowSink, value: Any, where: str | None) -> None:
    """A parsed JSON value: an event, an array of events, a poll response or a debug bundle."""
    prefix = f"{where}, " if where else ""
    if is_array(value):
        for index, item in enumerate(value):
            sink.event(item, f"{prefix}item {index}")
        return
    if not isinstance(value, Object):
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
    if not is_array(events):
        sink.problem(where, "input-unreadable", "events is not an array")
        return
    run_id = value.get("runId")
    if "bundleVersion" in value:
        run = value.get("run")
        if isinstance(run, Object) and is_text(run.get("runId")):
            run_id = run.get("runId")
        _bundle_checks(sink, value, len(events), where)
    default = run_id if is_text(run_id) else None
    for index, item in enumerate(events):
        sink.event(item, f"{prefix}event {index}", default_run_id=default)


def _bundle_checks(sink: RowSink, bundle: Object, count: int, where: str | None) -> None:
    """A v1 debug bundle that says it lost events (`truncated`, or fewer events than
    `metrics.eventCount`) is ingested and reported: the log is incomplete."""
    if bundle.get("truncated") is True:
        sink.problem(
            where,
            "bundle-truncated",
            "the debug bundle is truncated: only a prefix of the run's events was kept",
        )
    metrics = bundle.get("metrics")
    declared = as_int(metrics.get("eventCount")) if isinstance(metrics, Object) else None
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


def _read_ndjson(sink: RowSink, lines: Iterable[bytes]) -> None:
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


def _read_sse(sink: RowSink, lines: Iterable[bytes]) -> None:
    for frame, first, fields in _sse_frames(lines):
        where = f"frame {frame} (line {first})"
        if "data" not in fields:
            continue  # a keep-alive or retry: frame carries no event
        try:
            value = parse(b"\n".join(fields["data"]).decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            sink.problem(where, "frame-invalid", _reason(exc))
            continue
        if is_array(value):  # `event: batch`: an array of RunEventDocs
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
    sink = RowSink(path)
    read_into(sink)
    return sink.rows, sink.problems


def read_into(sink: RowSink, inspect: InspectOptions | None = None) -> inspect_logs.LogRead | None:
    """Read one input (named by `sink.path`) into `sink`, whatever its format; an Inspect log's
    scores are read as `inspect` says (E-111), and what else its read found is returned."""
    path = sink.path
    name = path.removesuffix(".gz").removesuffix(".GZ")
    suffix = Path(name).suffix.lower()
    try:
        data = _read_bytes(path) if path == "-" else None
        head = data[:256] if data is not None else _head(path)
        if not head.strip():
            return None  # an empty file holds no event
        if inspect_logs.is_eval_archive(head) or inspect_logs.is_json_log(head):
            read = None
            if data is not None:
                sink.problem(None, "input-unreadable", "an Inspect log is read from its file")
            else:
                read = inspect_logs.read_inspect_log(sink, inspect or InspectOptions())
            sink.flush()
            return read
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
    return None


def _read_json_document(sink: RowSink, data: bytes) -> None:
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
        return isinstance(parse(text.decode("utf-8")), Object)
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
