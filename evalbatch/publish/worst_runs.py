"""Which runs the report draws when there are more than a chart holds: the worst, in one order.

A night can hold hundreds of runs; a chart holds a few dozen. Each chart then draws the worst
runs by its own rank (the lowest-scoring, those with the most failed trials, the costliest; the
regression blocks by their drop), ties broken by runId (E-47), and says which it drew. The
tables hold every run. The limits and the ranks live here so every part of the page that shows
only some runs chooses them the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalbatch.publish.report_views import RegressionView, RunView

#: runs drawn in a per-task chart, and in a per-run chart; the tables hold every run
MAX_TASK_RUNS = 12
MAX_RUNS = 30
#: regression charts drawn, the largest drops first; the verdict lists every regression
MAX_REGRESSION_CHARTS = 6


def by_score(view: RunView) -> tuple[Any, ...]:
    """Worst first: failed suites, then the lowest aggregate score."""
    return (bool(view.summary["passed"]), float(view.summary["aggregateScore"]), view.run_id)


def by_failed_trials(view: RunView) -> tuple[Any, ...]:
    return (-view.failed_trials, view.run_id)


def by_cost(view: RunView) -> tuple[Any, ...]:
    return (-float(view.summary.get("totalCostUsd") or 0.0), view.run_id)


@dataclass(frozen=True)
class Picked:
    """The runs to show and, when they are only some, how they were chosen ("the 30
    lowest-scoring of 500 runs"; empty when they are all)."""

    views: list[RunView]
    described: str = ""


def pick(
    views: Sequence[RunView],
    limit: int,
    rank: Callable[[RunView], tuple[Any, ...]],
    which: str,
    of: str = "runs",
) -> Picked:
    """All `views` in runId order when they fit, else the `limit` worst by `rank`, worst first;
    `which` says how they were chosen ("lowest-scoring": "the 30 lowest-scoring of 500 runs")."""
    if len(views) <= limit:
        return Picked(list(views))
    return Picked(sorted(views, key=rank)[:limit], f"the {limit} {which} of {len(views)} {of}")


def regressions_first(items: Sequence[RegressionView]) -> list[RegressionView]:
    """Regression blocks worst first: regressed ones, then by score delta, then runId."""
    return sorted(
        items,
        key=lambda i: (
            i.block["verdict"] != "regressed",
            float(i.block["scoreDelta"]),
            i.candidate.run_id,
        ),
    )
