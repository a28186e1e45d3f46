"""The per-record baseline: the package's reference grader over the same files, run by run.

    python bench/reference_run.py SUITE.json EVENTS...   # Parquet files or directories of them

Rows are streamed from Parquet in batches and handed to `grade_reference` one run at a time
(each file is written in run order and no run spans two files), so memory stays bounded by the
largest run. Prints the number of summaries graded.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from evalbatch.reference import grade_reference

COLUMNS = ["runId", "sequence", "type", "payload", "timestamp"]


def runs(path: str) -> Iterator[list[dict[str, Any]]]:
    current: list[dict[str, Any]] = []
    for batch in pq.ParquetFile(path).iter_batches(batch_size=65536, columns=COLUMNS):
        for row in batch.to_pylist():
            if current and row["runId"] != current[-1]["runId"]:
                yield current
                current = []
            current.append(row)
    if current:
        yield current


def event_files(paths: list[str]) -> list[str]:
    """Files named directly, and the `*.parquet` files of a directory, in name order."""
    found: list[str] = []
    for path in map(Path, paths):
        found += sorted(map(str, path.glob("*.parquet"))) if path.is_dir() else [str(path)]
    return found


def main(paths: list[str], suite_path: str) -> None:
    with open(suite_path, encoding="utf-8") as handle:
        suite = json.load(handle)
    graded = 0
    for path in event_files(paths):
        for events in runs(path):
            graded += len(grade_reference(events, [suite]).summaries)
    print(graded)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[2:], sys.argv[1])
