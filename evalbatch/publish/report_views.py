"""What the report shows, computed from an `evalbatch run` output directory: data, no HTML.

Each graded run as one view (its summary, tasks, counted trials, failing trials with their reason
codes, grading options and page anchor), the exact pass@k and pass^k curves, and the regression
blocks with the paired differences behind them. The page's sections and charts are made from
these, so the counts a chart draws and a table lists are the same counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import polars as pl

from evalbatch.outputs.outdir import RunOutputs
from evalbatch.reduce import regression, stats


@dataclass(frozen=True)
class FailingTrial:
    """A failed trial of a run, or the trials of a task the log lacks (`trial_index` None,
    `count` of them, D-12), with its reason code (see REASONS)."""

    task_id: str
    trial_index: int | None
    reason: str
    score: float | None = None
    gating_score: float | None = None
    count: int = 1


@dataclass
class RunView:
    """One graded run as the page needs it."""

    run_id: str
    summary: dict[str, Any]
    label: str  # suite id, with the run id when the suite was graded in several runs
    tick: str  # the label on two lines, for an axis
    tasks: list[dict[str, Any]]
    trials: list[dict[str, Any]]
    anchor: str = ""  # the id of its section on the page
    failing: list[FailingTrial] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # runs.parquet's grading options

    @property
    def suite_id(self) -> str:
        return str(self.summary["suiteId"])

    @property
    def suite(self) -> str:
        return f"{self.summary['suiteId']}@{self.summary['suiteVersion']}"

    @property
    def failed_trials(self) -> int:
        return sum(f.count for f in self.failing)


def _fraction_mean(values: Iterable[Fraction]) -> float:
    items = list(values)
    return float(sum(items, Fraction(0)) / len(items)) if items else 0.0


def pass_curves(tasks: Sequence[dict[str, Any]]) -> list[tuple[int, float, float]]:
    """(k, pass@k, pass^k) for k = 1..min n: means over the run's tasks of the exact RFC 0244 §B
    values from each task's n and passed count."""
    counted = [(int(t["n"]), int(t["passed_count"] or 0)) for t in tasks if t.get("n")]
    if not counted:
        return []
    top = min(n for n, _ in counted)
    return [
        (
            k,
            _fraction_mean(stats.pass_at_k(n, c, k) for n, c in counted),
            _fraction_mean(stats.pass_hat_k(n, c, k) for n, c in counted),
        )
        for k in range(1, top + 1)
    ]


#: why a trial failed: reason code -> label, in the order the failure chart stacks them (its
#: colours are `run_charts.REASON_COLOURS`). The trajectory codes are the trials table's (E-58);
#: a trial that failed closed on a fixture miss (D-9) is `failed-closed`, a trial the log lacks
#: (D-12) `trial-missing`, and any other failed trial failed on its output grade (E-47's order).
REASONS: dict[str, str] = {
    "forbidden": "trajectory: forbidden",
    "missing": "trajectory: missing",
    "extra": "trajectory: extra",
    "order": "trajectory: order",
    "no-bracket": "trajectory: no-bracket",
    "delegates-unseen": "trajectory: delegates unseen",
    "trajectory": "trajectory: other",
    "failed-closed": "fixture miss (failed closed)",
    "trial-missing": "trial missing from the log",
    "output": "graded fail on output",
}


def trial_reason(trial: dict[str, Any]) -> str:
    """The reason code of a failed trial row of `trials.parquet`."""
    if trial.get("failed_closed"):
        return "failed-closed"
    if trial.get("trajectory_matched") is False:
        reason = trial.get("trajectory_reason")
        return reason if reason in REASONS else "trajectory"
    return "output"


def failing_trials(
    tasks: Sequence[dict[str, Any]], trials: Sequence[dict[str, Any]]
) -> list[FailingTrial]:
    """A run's failed counted trials in task order, each task's missing trials after them."""
    by_task: dict[str, list[FailingTrial]] = {}
    for trial in trials:
        if not trial["passed"]:
            by_task.setdefault(trial["task_id"], []).append(
                FailingTrial(
                    trial["task_id"],
                    int(trial["trial_index"]),
                    trial_reason(trial),
                    trial["score"],
                    trial["gating_score"],
                )
            )
    found: list[FailingTrial] = []
    for task in tasks:
        found += by_task.get(task["task_id"], [])
        lacking = int(task["n"] or 0) - int(task.get("observed_trials") or 0)
        if lacking > 0:
            found.append(FailingTrial(task["task_id"], None, "trial-missing", count=lacking))
    return found


def failure_causes(view: RunView) -> Counter[str]:
    """Failed trials by cause (the labels of REASONS): E-47's order decides each one's cause."""
    found: Counter[str] = Counter()
    for failing in view.failing:
        found[REASONS[failing.reason]] += failing.count
    return found


def _anchor(run_id: str, taken: set[str]) -> str:
    """A page id for a run's section: `run-` and the run id's letters, digits, `_` and `-`
    (other characters become `-`), numbered when two runs would share it. Only run sections
    have ids starting with `run-`."""
    base = "run-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", run_id).strip("-") or "x")
    anchor, number = base, 1
    while anchor in taken:
        number += 1
        anchor = f"{base}-{number}"
    taken.add(anchor)
    return anchor


def run_views(out: RunOutputs) -> list[RunView]:
    """The graded runs in runId order, each with its tasks, counted trials, failing trials and
    page anchor; a suite graded in several runs is labelled with the run id too."""
    tasks = out.table("tasks").sort("run_id", "task_pos")
    trials = out.table("trials").filter(pl.col("counted")).sort("run_id", "task_id", "trial_index")
    tasks_of = {key[0]: frame.to_dicts() for key, frame in tasks.group_by("run_id")}
    trials_of = {key[0]: frame.to_dicts() for key, frame in trials.group_by("run_id")}
    runs = out.tables.get("runs")
    options_of: dict[str, dict[str, Any]] = {}
    if runs is not None:
        wanted = [c for c in ("default_pass_score", "on_miss_default") if c in runs.columns]
        options_of = {
            row["run_id"]: {c: row[c] for c in wanted}
            for row in runs.select("run_id", *wanted).to_dicts()
        }
    by_suite = Counter(summary["suiteId"] for _, summary in out.summaries)
    taken: set[str] = set()
    views = []
    for run_id, summary in out.summaries:
        label = tick = summary["suiteId"]
        if by_suite[label] > 1:
            label, tick = f"{label} · {run_id}", f"{label}\n{run_id}"
        run_tasks = tasks_of.get(run_id, [])
        run_trials = trials_of.get(run_id, [])
        views.append(
            RunView(
                run_id=run_id,
                summary=summary,
                label=label,
                tick=tick,
                tasks=run_tasks,
                trials=run_trials,
                anchor=_anchor(run_id, taken),
                failing=failing_trials(run_tasks, run_trials),
                options=options_of.get(run_id, {}),
            )
        )
    return views


@dataclass
class RegressionView:
    """A candidate run's regression block with the paired differences behind it."""

    candidate: RunView
    block: dict[str, Any]
    differences: list[tuple[str, float]]
    comparison: regression.Comparison | None
    note: str


def regression_views(views: Sequence[RunView], tasks: pl.DataFrame) -> list[RegressionView]:
    """Recompute each regression block's comparison (the options `run` uses, with the block's
    method and alpha) for the per-task differences and the interval."""
    found = []
    for view in views:
        block = view.summary.get("regression")
        if not block:
            continue
        base = tasks.filter(pl.col("run_id") == block["baselineRunId"])
        cand = tasks.filter(pl.col("run_id") == view.run_id)
        comparison = None
        note = ""
        differences: list[tuple[str, float]] = []
        if base.height and cand.height:
            options = regression.RegressOptions(method=block["method"], alpha=block["alpha"])
            comparison = regression.compare(
                base,
                cand,
                options,
                suite_id=view.suite_id,
                base_run=block["baselineRunId"],
                cand_run=view.run_id,
            )
            paired = base.join(cand, on="task_id", suffix="_cand").sort("task_id")
            differences = [
                (task, float(c) - float(b))
                for task, b, c in paired.select(
                    "task_id", "gating_score", "gating_score_cand"
                ).iter_rows()
            ]
            if (
                comparison.verdict != block["verdict"]
                or comparison.paired_task_count != block["pairedTaskCount"]
            ):
                note = (
                    " The comparison was made with other options than `run`'s defaults, so "
                    "its interval is not drawn."
                )
                comparison = None
        else:
            note = " The baseline's task rows are not in this directory."
        found.append(RegressionView(view, block, differences, comparison, note))
    return found
