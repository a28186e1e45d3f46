"""The per-record baseline: the package's reference grader over the same file, run by run.

Rows are streamed from Parquet in batches and handed to `grade_reference` one run at a time
(the file is written in run order), so memory stays bounded by the largest run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
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


def main(path: str, suite_path: str) -> None:
    with open(suite_path, encoding="utf-8") as handle:
        suite = json.load(handle)
    graded = 0
    for events in runs(path):
        graded += len(grade_reference(events, [suite]).summaries)
    print(graded)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
