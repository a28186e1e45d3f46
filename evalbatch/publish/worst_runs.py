"""Which runs the report draws when there are more than a chart holds: the worst, in one order.

A night can hold hundreds of runs; a chart holds a few dozen. Each chart then draws the worst
runs by its own rank (the lowest-scoring, those with the most failed trials, the costliest; the
regression blocks by their drop), ties broken by runId (E-47), and says which it drew. The
tables hold every run. The limits and the ranks live here so every part of the page that shows
only some runs chooses them the same way. The ranks read a run through `RankedRun` (and a
regression block through `RankedBlock`), which `report_views`' views are: this module imports
none of the page's modules, so `report_views` can rank with it and no import goes in a circle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar


class RankedRun(Protocol):
    """What the ranks read of a run (`report_views.RunView` is one)."""

    @property
    def run_id(self) -> str: ...

    @property
    def summary(self) -> dict[str, Any]: ...

    @property
    def failed_trials(self) -> int: ...


class RankedBlock(Protocol):
    """What `regressions_first` reads of a regression block (`report_views.RegressionView`)."""

    @property
    def candidate(self) -> RankedRun: ...

    @property
    def block(self) -> dict[str, Any]: ...


#: a run, and a regression block, of whichever type the caller ranks (its own type comes back)
Run = TypeVar("Run", bound=RankedRun)
Block = TypeVar("Block", bound=RankedBlock)

#: runs drawn in a per-task chart, and in a per-run chart; the tables hold every run
MAX_TASK_RUNS = 12
MAX_RUNS = 30
#: regression charts drawn, the largest drops first; the verdict lists MAX_REGRESSIONS
MAX_REGRESSION_CHARTS = 6
#: regressions listed in the verdict, each with its recomputed interval (E-106: a night of
#: 10,000 candidates recomputes these, not 10,000 comparisons); the rest are in the runs table
MAX_REGRESSIONS = 50
#: runs shown in full (their failing trials and tasks) when none is named: the lowest-scoring;
#: every other run is one row of the runs table (E-106)
DETAIL_RUNS = 50


#: tasks drawn for a run in a per-task chart, and listed for a run in the Tasks table: a suite
#: of 1,000 tasks draws its worst, not 1,000 bars a run (E-106)
MAX_TASKS_DRAWN = 20
MAX_TASKS_LISTED = 100


def by_score(view: RankedRun) -> tuple[Any, ...]:
    """Worst first: failed suites, then the lowest aggregate score."""
    return (bool(view.summary["passed"]), float(view.summary["aggregateScore"]), view.run_id)


def by_failed_trials(view: RankedRun) -> tuple[Any, ...]:
    return (-view.failed_trials, view.run_id)


def by_cost(view: RankedRun) -> tuple[Any, ...]:
    return (-float(view.summary.get("totalCostUsd") or 0.0), view.run_id)


@dataclass(frozen=True)
class Picked(Generic[Run]):
    """The runs to show and, when they are only some, how they were chosen ("the 30
    lowest-scoring of 500 runs"; empty when they are all)."""

    views: list[Run]
    described: str = ""


def pick(
    views: Sequence[Run],
    limit: int,
    rank: Callable[[Run], tuple[Any, ...]],
    which: str,
    of: str = "runs",
) -> Picked[Run]:
    """All `views` in runId order when they fit, else the `limit` worst by `rank`, worst first;
    `which` says how they were chosen ("lowest-scoring": "the 30 lowest-scoring of 500 runs")."""
    if len(views) <= limit:
        return Picked(list(views))
    return Picked(sorted(views, key=rank)[:limit], f"the {limit} {which} of {len(views):,} {of}")


def regressions_first(items: Sequence[Block]) -> list[Block]:
    """Regression blocks worst first: regressed ones, then by score delta, then runId."""
    return sorted(
        items,
        key=lambda i: (
            i.block["verdict"] != "regressed",
            float(i.block["scoreDelta"]),
            i.candidate.run_id,
        ),
    )


def detail_views(
    views: Sequence[Run], limit: int = DETAIL_RUNS, named: Sequence[str] = ()
) -> Picked[Run]:
    """The runs the page shows in full: the runs `named` (`report --run-id`), in runId order,
    else the `limit` lowest-scoring (`by_score`), all of them when they fit."""
    if named:
        wanted = set(named)
        return Picked([v for v in views if v.run_id in wanted], "the runs named")
    return pick(views, limit, by_score, "lowest-scoring")


def task_by_score(task: dict[str, Any]) -> tuple[Any, ...]:
    """Worst first: failed tasks, then the lowest score, then the suite's order."""
    return (bool(task["passed"]), float(task["score"] or 0.0), task["task_pos"])


def task_by_cost(task: dict[str, Any]) -> tuple[Any, ...]:
    return (-float(task.get("cost_usd") or 0.0), task["task_pos"])


@dataclass(frozen=True)
class PickedTasks:
    """A run's tasks to show, in the suite's order, and, when they are only some, which
    ("the 20 lowest-scoring of 1,000 tasks"; empty when they are all)."""

    tasks: list[dict[str, Any]]
    described: str = ""


def pick_tasks(
    tasks: Sequence[dict[str, Any]],
    limit: int,
    rank: Callable[[dict[str, Any]], tuple[Any, ...]],
    which: str,
) -> PickedTasks:
    """All of a run's `tasks` when they fit, else its `limit` worst by `rank`, in the suite's
    order (`task_pos`) so a chart's rows read as the suite does."""
    if len(tasks) <= limit:
        return PickedTasks(list(tasks))
    worst = sorted(tasks, key=rank)[:limit]
    return PickedTasks(
        sorted(worst, key=lambda t: t["task_pos"]),
        f"the {limit} {which} of {len(tasks):,} tasks",
    )
