"""What an event row is, and how a reader hands rows and problems on (§1.1, §1.2, E-32).

An event row is one RunEventDoc as a tuple in `SCHEMA` order: the canonical columns (CONTRACT
§1.1), then `extra`, every other envelope field as JSON text. `event_row` makes one from a parsed
event (`lossless_json`), so nothing of it is lost. A reader of an input format puts each event it
finds into a `RowSink` with where it was found; the sink keeps the row or, for an item that is not
a usable event, an `IngestProblem`, and hands rows on in batches to whatever writes them (the
Parquet layout, `parquet_layout`). Every reader, of whatever format, makes rows this one way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from evalbatch.inputs.lossless_json import Number, Object, as_int, dump, is_text, parse
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
    if not isinstance(event, Object):
        raise _Skip("not a JSON object")
    extra = Object()
    last: dict[str, Any] = {}
    for key, value in event:
        if key in last:
            extra.append((key, last[key]))  # an earlier repeated key: kept, the last one counts
        last[key] = value
    sequence_key = "sequence" if "sequence" in last else "seq"
    payload_key = "payload" if "payload" in last else "data"
    run_id = last.pop("runId", default_run_id)
    if not is_text(run_id):
        raise _Skip("runId is missing or not a string")
    if sequence_key in last:
        sequence = as_int(last.pop(sequence_key))
        if sequence is None or sequence < 0:
            raise _Skip(f"{sequence_key} is not an integer >= 0")
    elif default_sequence is not None:
        sequence = default_sequence
    else:
        raise _Skip("sequence is missing")
    type_ = last.pop("type", default_type)
    if not is_text(type_):
        raise _Skip("type is missing or not a string")
    payload = dump(last.pop(payload_key)) if payload_key in last else None
    columns: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        if is_text(last.get(name)):
            columns[name] = last.pop(name)
    for name in _INT_FIELDS:
        if name in last and (number := as_int(last[name])) is not None:
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


def event_json(row: dict[str, Any]) -> str:
    """A written row back as RunEventDoc JSON text: the canonical columns that hold a value, the
    payload as written, then `extra` (the inverse of `event_row`, for exports and tests)."""
    fields = Object()
    for name in SCHEMA.names:
        value = row.get(name)
        if name == "extra" or value is None:
            continue
        if name == "payload":
            fields.append((name, parse(value)))
        elif isinstance(value, int):
            fields.append((name, Number(str(value))))
        else:
            fields.append((name, value))
    if row.get("extra"):
        fields.extend(parse(row["extra"]))
    return dump(fields)


@dataclass
class RowSink:
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
        """Keep `event`'s row (`event_row`, with `defaults`), or an `event-invalid` problem at
        `where` when it is not a usable RunEventDoc."""
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
