"""One trial's rows of the grader's per-call detail tables.

`trial_grading.TrajectoryDetail` and `trial_grading.FixtureDetail` hold the pairs and pairings of
every trial of a run, keyed by `trial_key`; the trajectory findings and the fixture replay each
read one trial out of them.
"""

from __future__ import annotations

from typing import Any

import polars as pl


def rows_of(frame: pl.DataFrame, key: int) -> list[dict[str, Any]]:
    """One trial's rows of a detail table."""
    return frame.filter(pl.col("trial_key") == key).to_dicts()


def pairing_of(frame: pl.DataFrame, key: int, source: str, target: str) -> dict[Any, Any]:
    """One trial's pairing from a detail table, as {source: target}."""
    rows = frame.filter(pl.col("trial_key") == key).select(source, target).iter_rows()
    return dict(rows)
