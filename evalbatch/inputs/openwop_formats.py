"""Reading OpenWOP event exports: each format into event rows and problems (§1.2).

Accepted, per file (the format is read off the content; the suffix only breaks ties):
NDJSON/JSONL (one `RunEventDoc` per line), a JSON array of them, a poll response
`{runId, events, ...}`, a v1 debug bundle (`events[]` with `seq`/`sequence` and `data`), a
captured SSE stream (`id:`/`event:`/`data:` frames, `event: batch` arrays included), and Inspect
eval logs (`.eval` archives and `.json` logs: `inspect_logs`, E-111). Files may be
gzip-compressed (a damaged one is one problem, E-75). Each reader puts what it finds into a
`RowSink` (`event_rows`) with where it found it, so a bad line, frame or item is reported and
skipped and every other event is kept (E-35). Every input is read a buffer at a time against
`InputLimits` (E-115, E-116): a line, frame or document nested too deep or too long is that
item's problem, and a compressed file that inflates past its caps is that file's, never the
whole command's or the machine's. `expand_inputs` says which files a list of paths,
directories and globs names.
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal

from evalbatch.errors import InputError
from evalbatch.inputs import inspect_logs
from evalbatch.inputs.event_rows import RowSink
from evalbatch.inputs.inspect_logs import InspectOptions
from evalbatch.inputs.limits import (
    DEFAULT_LIMITS,
    CappedReader,
    CountedReader,
    InputLimits,
    TooDeep,
    TooLarge,
    size_text,
)
from evalbatch.inputs.lossless_json import Object, as_int, is_array, is_text, parse

#: file suffixes picked up below a directory (a file named directly is read whatever its name)
SUFFIXES = (".json", ".jsonl", ".ndjson", ".sse", ".eval")

Format = Literal["json", "ndjson", "sse"]

#: decompressed input is read this much at a time: the most read past a cap before it is seen
_CHUNK = 1 << 20
#: how much of an input its format is read off
_HEAD = 256


class _Overlong:
    """A line past `InputLimits.max_line_bytes`: skipped to its newline, never held whole."""


_OVERLONG = _Overlong()
Line = bytes | _Overlong


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


def _too_long(what: str, limits: InputLimits) -> str:
    return (
        f"longer than {size_text(limits.max_line_bytes)}, the cap on one {what} (--max-line-bytes)"
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, TooDeep):
        return str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, RecursionError):
        return "not JSON (nested too deeply)"
    return f"not JSON ({exc})"


def _read_ndjson(sink: RowSink, lines: Iterable[Line], limits: InputLimits) -> None:
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, _Overlong):
            sink.problem(f"line {number}", "line-invalid", _too_long("line", limits))
            continue
        line = raw.strip()
        if not line:
            continue
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        try:
            value = parse(line.decode("utf-8"), limits)
        except (ValueError, RecursionError) as exc:
            sink.problem(f"line {number}", "line-invalid", _reason(exc))
            continue
        _document(sink, value, f"line {number}")


def _sse_frames(
    lines: Iterable[Line], limits: InputLimits
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(frame number, first line, fields) per frame; fields: `id`, `event` and the raw `data`
    lines (SSE: one leading space after the colon is dropped; a line starting with `:` is a
    comment; a blank line ends the frame), or `overlong` for a frame past
    `limits.max_line_bytes`, whose data is dropped as it comes."""
    fields: dict[str, Any] = {}
    frame, first, size = 0, 0, 0
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, _Overlong):
            first = first if fields else number
            fields = {"overlong": True}
            continue
        line = raw.rstrip(b"\r\n")
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line:
            if fields:
                frame += 1
                yield frame, first, fields
            fields, size = {}, 0
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if not fields:
            first = number
        if name == b"data":
            size += len(value) + 1  # the frame's data: its lines joined by newlines
            if size - 1 > limits.max_line_bytes:
                fields = {"overlong": True}
            elif "overlong" not in fields:
                fields.setdefault("data", []).append(value)
        elif name in (b"id", b"event"):
            fields[name.decode("ascii")] = value.decode("utf-8", errors="replace")
        else:
            fields["other"] = True  # retry: and unknown fields carry no event
    if fields:
        yield frame + 1, first, fields


def _read_sse(sink: RowSink, lines: Iterable[Line], limits: InputLimits) -> None:
    for frame, first, fields in _sse_frames(lines, limits):
        where = f"frame {frame} (line {first})"
        if "overlong" in fields:
            sink.problem(where, "frame-invalid", _too_long("SSE frame", limits))
            continue
        if "data" not in fields:
            continue  # a keep-alive or retry: frame carries no event
        try:
            value = parse(b"\n".join(fields["data"]).decode("utf-8"), limits)
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


@contextmanager
def _open(path: str, limits: InputLimits) -> Iterator[io.BufferedReader]:
    """One input (standard input for `-`) as its decompressed bytes, read a buffer at a time;
    a gzip one through the caps on a compressed file (E-116)."""
    with ExitStack() as stack:
        given = sys.stdin.buffer if path == "-" else stack.enter_context(open(path, "rb"))
        source = (
            given
            if isinstance(given, io.BufferedReader)
            else io.BufferedReader(
                CountedReader(given)  # a stream that cannot peek (a test's standard input)
            )
        )
        if source.peek(2)[:2] != b"\x1f\x8b":
            yield source
            return
        counted = CountedReader(source)
        inflated = stack.enter_context(gzip.GzipFile(fileobj=counted, mode="rb"))
        capped = CappedReader(inflated, lambda: counted.count, limits)
        yield stack.enter_context(io.BufferedReader(capped, _CHUNK))


def _lines(stream: io.BufferedReader, limits: InputLimits) -> Iterator[Line]:
    """The lines of a stream, newlines kept; a line past `limits.max_line_bytes` is `_OVERLONG`
    and is then read past a buffer at a time, so no line is ever held past the cap (E-116)."""
    yield from _capped_lines(stream.readline, limits)


def _sse_lines(stream: io.BufferedReader, limits: InputLimits) -> Iterator[Line]:
    """`_lines` of an SSE stream, whose lines end in CRLF, LF or a lone CR (the SSE spec):
    read with universal newlines, each ending as `\n`, every other byte as it was (latin-1
    maps bytes to characters one for one)."""
    text = io.TextIOWrapper(stream, encoding="latin-1", newline=None)
    try:
        yield from _capped_lines(lambda size: text.readline(size).encode("latin-1"), limits)
    finally:
        text.detach()  # the stream is its opener's to close


def _capped_lines(readline: Callable[[int], bytes], limits: InputLimits) -> Iterator[Line]:
    cap = limits.max_line_bytes
    while line := readline(cap + 1):
        if len(line) <= cap or line.endswith(b"\n"):
            yield line
            continue
        yield _OVERLONG
        while line and not line.endswith(b"\n"):
            line = readline(_CHUNK)


def read_into(
    sink: RowSink, inspect: InspectOptions | None = None, limits: InputLimits = DEFAULT_LIMITS
) -> inspect_logs.LogRead | None:
    """Read one input (named by `sink.path`) into `sink`, whatever its format, within `limits`
    (E-115, E-116); an Inspect log's scores are read as `inspect` says (E-111), and what else
    its read found is returned."""
    path = sink.path
    name = path.removesuffix(".gz").removesuffix(".GZ")
    suffix = Path(name).suffix.lower()
    read = None
    try:
        with _open(path, limits) as stream:
            head = stream.peek(_HEAD)[:_HEAD]
            if not head.strip():
                return None  # an empty file holds no event
            inspect_log = inspect_logs.is_eval_archive(head) or inspect_logs.is_json_log(head)
            if not inspect_log:
                _read_stream(sink, stream, _sniff(head, suffix), limits)
        if inspect_log and path == "-":
            sink.problem(None, "input-unreadable", "an Inspect log is read from its file")
        elif inspect_log:
            read = inspect_logs.read_inspect_log(sink, inspect or InspectOptions(), limits)
    except TooLarge as exc:  # a cap on the whole file: this file only, the events before kept
        sink.problem(None, "input-unreadable", f"read only in part: {exc}")
    except (zlib.error, gzip.BadGzipFile, EOFError) as exc:  # damaged gzip data: this file only
        sink.problem(None, "input-unreadable", f"cannot be read ({_gzip_damage(exc)})")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        sink.problem(None, "input-unreadable", f"cannot be read ({reason})")
    sink.flush()
    return read


def _gzip_damage(exc: Exception) -> str:
    """What is wrong with a gzip stream, in words of our own: the module's text can quote the
    file's bytes (`Not a gzipped file (b'..')`) or its checksums (E-75)."""
    if isinstance(exc, EOFError):
        return "damaged gzip data: cut short"
    text = str(exc)
    if text.startswith("CRC check failed"):
        return "damaged gzip data: a checksum does not match"
    if text.startswith("Not a gzipped file"):
        return "damaged gzip data: what follows a complete member is not gzip"
    return "damaged gzip data"


def _read_stream(
    sink: RowSink, stream: io.BufferedReader, kind: Format | None, limits: InputLimits
) -> None:
    if kind is None:
        sink.problem(None, "input-unreadable", "not JSON, JSON lines or an SSE stream")
    elif kind == "sse":
        _read_sse(sink, _sse_lines(stream, limits), limits)
    elif kind == "ndjson":
        _read_ndjson(sink, _lines(stream, limits), limits)
    else:
        _read_json_document(sink, stream, limits)


def _read_json_document(sink: RowSink, stream: io.BufferedReader, limits: InputLimits) -> None:
    """A whole JSON document, at most `limits.max_line_bytes` (E-116). A file that is not one
    document but whose lines are JSON objects (JSON lines named `.json`, perhaps with a broken
    line, or past the cap as one document) is read as JSON lines instead, so one bad line never
    costs the others."""
    data = stream.read(limits.max_line_bytes + 1)
    if len(data) > limits.max_line_bytes:
        first = data.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
        del data
        if sink.path != "-" and _is_object_line(first, limits):
            with _open(sink.path, limits) as again:
                _read_ndjson(sink, _lines(again, limits), limits)
        else:
            sink.problem(None, "input-unreadable", _too_long("JSON document", limits))
        return
    try:
        value = parse(data.decode("utf-8-sig"), limits)
    except (ValueError, RecursionError) as exc:
        lines = data.splitlines()
        if len(lines) > 1 and any(_is_object_line(line, limits) for line in lines):
            _read_ndjson(sink, lines, limits)
            return
        where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else None
        sink.problem(where, "input-unreadable", _reason(exc))
        return
    _document(sink, value, None)


def _is_object_line(line: bytes, limits: InputLimits) -> bool:
    text = line.strip()
    if not text.startswith(b"{"):
        return False
    try:
        return isinstance(parse(text.decode("utf-8"), limits), Object)
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
