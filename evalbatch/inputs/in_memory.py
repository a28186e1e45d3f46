"""Events held in memory (notebooks, tests), written as one canonical Parquet file so they go
through the same path as files on disk (§1.1)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@contextmanager
def events_file(events: Iterable[Mapping[str, Any]]) -> Iterator[Path]:
    """A temporary Parquet file of `events` (dicts with runId, sequence, type, payload,
    timestamp), removed when the block ends."""
    rows = list(events)
    table = pa.table(
        {
            "runId": pa.array([r.get("runId") for r in rows], pa.string()),
            "sequence": pa.array([r.get("sequence") for r in rows], pa.int64()),
            "type": pa.array([r.get("type") for r in rows], pa.string()),
            "payload": pa.array([r.get("payload") for r in rows], pa.string()),
            "timestamp": pa.array([r.get("timestamp") for r in rows], pa.string()),
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.parquet"
        pq.write_table(table, path)
        yield path
