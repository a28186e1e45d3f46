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
from evalbatch.publish.worst_runs import by_score, regressions_first
from evalbatch.reduce import behaviour_changes, paired_verdict, stats
from evalbatch.text import errored_note

#: the runs-table columns of a run's errored Inspect samples (E-147)
ERRORED_COLUMNS = ("errored_trials", "mean_without_errored", "errored_left_out")


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
    #: the Inspect sample and epoch the trial ran (E-146); None for any other log's
    sample_id: str | None = None
    epoch: int | None = None


class _Details:
    """The task and trial rows of every run, split by run once and read only for the runs the
    page shows in detail or draws: a night of 10,000 runs builds rows for a few dozen."""

    def __init__(self, out: RunOutputs) -> None:
        self._tasks = (
            out.table("tasks").sort("run_id", "task_pos").with_columns(lacking=lacking_trials())
        )
        self._trials = (
            out.table("trials")
            .filter(pl.col("counted"))
            .sort("run_id", "task_id", "trial_index")
            .with_columns(reason=reason_expr())
        )
        self._split: tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]] | None = None

    def rows(self, run_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if self._split is None:
            self._split = (
                {key[0]: frame for key, frame in self._tasks.group_by("run_id")},
                {key[0]: frame for key, frame in self._trials.group_by("run_id")},
            )
        tasks, trials = self._split
        empty = pl.DataFrame()
        return tasks.get(run_id, empty).to_dicts(), trials.get(run_id, empty).to_dicts()

    def with_task_cost(self) -> set[str]:
        """The runs with a cost on at least one task (D-14): the cost chart's candidates."""
        if "cost_usd" not in self._tasks.columns:
            return set()
        costed = self._tasks.filter(pl.col("cost_usd").is_not_null())
        return set(costed["run_id"].unique().to_list())

    def failed_trials(self) -> dict[str, int]:
        """Per run, its failed counted trials and the trials its log lacks (D-12): what
        `failing_trials` lists, counted for every run at once."""
        failed = self._trials.group_by("run_id").agg(n=(~pl.col("passed")).sum())
        lacking = self._tasks.group_by("run_id").agg(n=lacking_trials().sum())
        found: dict[str, int] = {}
        for run_id, n in pl.concat([failed, lacking], how="vertical_relaxed").iter_rows():
            found[run_id] = found.get(run_id, 0) + int(n or 0)
        return found


@dataclass
class RunView:
    """One graded run as the page needs it: its summary and counts for every run, its task and
    trial rows (and failing trials) read when a part of the page shows the run in detail."""

    run_id: str
    summary: dict[str, Any]
    label: str  # suite id, with the run id when the suite was graded in several runs
    tick: str  # the label on two lines, for an axis
    anchor: str = ""  # the id of its section on the page
    options: dict[str, Any] = field(default_factory=dict)  # runs.parquet's grading options
    #: its failed counted trials and the trials its log lacks (D-12)
    failed_trials: int = 0
    #: whether any of its tasks has a cost (D-14)
    task_cost: bool = False
    #: what an Inspect log calls it (runs.parquet's model, task_name, log_file, E-146): only
    #: the names it has, none for a run from any other log
    names: dict[str, str] = field(default_factory=dict)
    #: its errored Inspect samples (runs.parquet's errored_trials, mean_without_errored,
    #: errored_left_out, E-147): only those it has
    errored: dict[str, Any] = field(default_factory=dict)
    details: _Details | None = None
    _rows: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
    _failing: list[FailingTrial] | None = None

    def _read(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if self._rows is None:
            self._rows = self.details.rows(self.run_id) if self.details else ([], [])
        return self._rows

    @property
    def tasks(self) -> list[dict[str, Any]]:
        return self._read()[0]

    @property
    def trials(self) -> list[dict[str, Any]]:
        return self._read()[1]

    @property
    def failing(self) -> list[FailingTrial]:
        if self._failing is None:
            self._failing = failing_trials(self.tasks, self.trials)
        return self._failing

    @property
    def suite_id(self) -> str:
        return str(self.summary["suiteId"])

    @property
    def suite(self) -> str:
        return f"{self.summary['suiteId']}@{self.summary['suiteVersion']}"

    @property
    def names_text(self) -> str | None:
        """`task T · M`: the Inspect task and model a run's row names (E-146); None for a run
        from any other log."""
        parts = [
            f"task {self.names['task_name']}" if "task_name" in self.names else None,
            self.names.get("model"),
        ]
        return " · ".join(p for p in parts if p) or None

    @property
    def errored_text(self) -> str | None:
        """How the run's errored Inspect samples count (E-147); None when none errored."""
        return errored_note(
            self.errored.get("errored_trials"),
            self.errored.get("mean_without_errored"),
            self.errored.get("errored_left_out"),
            digits=3,
        )


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
#: a trial whose Inspect sample errored is `sample-errored` (E-147), one that failed closed on a
#: fixture miss (D-9) `failed-closed`, a trial the log lacks (D-12) `trial-missing`, and any
#: other failed trial failed on its output grade (E-47's order).
REASONS: dict[str, str] = {
    "forbidden": "trajectory: forbidden",
    "missing": "trajectory: missing",
    "extra": "trajectory: extra",
    "order": "trajectory: order",
    "no-bracket": "trajectory: no-bracket",
    "delegates-unseen": "trajectory: delegates unseen",
    "trajectory": "trajectory: other",
    "sample-errored": "Inspect sample errored",
    "failed-closed": "fixture miss (failed closed)",
    "trial-missing": "trial missing from the log",
    "output": "graded fail on output",
}


def trial_reason(trial: dict[str, Any]) -> str:
    """The reason code of a failed trial row of `trials.parquet` (`reason_expr`, over one row)."""
    columns = ("errored", "failed_closed", "trajectory_matched", "trajectory_reason")
    row = pl.DataFrame(
        {name: [trial.get(name)] for name in columns},
        schema={
            "errored": pl.Boolean,
            "failed_closed": pl.Boolean,
            "trajectory_matched": pl.Boolean,
            "trajectory_reason": pl.String,
        },
    )
    return str(row.select(reason_expr()).item())


def lacking_trials() -> pl.Expr:
    """Over the tasks table: the trials each task's log lacks (D-12: n minus those observed)."""
    return (pl.col("n").fill_null(0) - pl.col("observed_trials").fill_null(0)).clip(0)


def failing_trials(
    tasks: Sequence[dict[str, Any]], trials: Sequence[dict[str, Any]]
) -> list[FailingTrial]:
    """A run's failed counted trials in task order, each task's missing trials after them (the
    rows `_Details` reads: trials with their `reason`, tasks with the trials they lack)."""
    by_task: dict[str, list[FailingTrial]] = {}
    for trial in trials:
        if not trial["passed"]:
            by_task.setdefault(trial["task_id"], []).append(
                FailingTrial(
                    trial["task_id"],
                    int(trial["trial_index"]),
                    trial["reason"],
                    trial["score"],
                    trial["gating_score"],
                    sample_id=trial.get("sample_id"),
                    epoch=trial.get("epoch"),
                )
            )
    found: list[FailingTrial] = []
    for task in tasks:
        found += by_task.get(task["task_id"], [])
        lacking = task["lacking"]
        if lacking > 0:
            found.append(FailingTrial(task["task_id"], None, "trial-missing", count=lacking))
    return found


def reason_expr() -> pl.Expr:
    """`trial_reason` over a trials frame: the reason code of each failed trial row."""
    path = pl.col("trajectory_reason")
    return (
        pl.when(pl.col("errored").fill_null(False))
        .then(pl.lit("sample-errored"))
        .when(pl.col("failed_closed").fill_null(False))
        .then(pl.lit("failed-closed"))
        .when(pl.col("trajectory_matched").eq(False).fill_null(False))
        .then(pl.when(path.is_in(list(REASONS))).then(path).otherwise(pl.lit("trajectory")))
        .otherwise(pl.lit("output"))
    )


@dataclass(frozen=True)
class FailingTask:
    """A task that failed in some runs of its suite: those runs, worst first (`by_score`'s
    order), and its failed trials there counted by reason code (trials the log lacks too)."""

    suite: str
    task_id: str
    runs: list[RunView]
    reasons: Counter[str]


def failing_tasks(out: RunOutputs, views: Sequence[RunView]) -> list[FailingTask]:
    """Every (suite, task) that failed in a run, the most runs first, then the most failed
    trials: counted over every run with a few joins, whatever the number of runs."""
    worst_first = sorted(views, key=by_score)
    rank = pl.DataFrame(
        {
            "run_id": [v.run_id for v in worst_first],
            "rank": list(range(len(worst_first))),
            "suite": [v.suite for v in worst_first],
        },
        schema={"run_id": pl.String, "rank": pl.Int64, "suite": pl.String},
    )
    tasks = out.table("tasks")
    failed = (
        tasks.filter(~pl.col("passed").fill_null(False))
        .select("run_id", "task_id")
        .join(rank, on="run_id", how="inner")
    )
    trials = out.table("trials").filter(pl.col("counted") & ~pl.col("passed").fill_null(False))
    counted = (
        trials.select("run_id", "task_id", reason=reason_expr())
        .group_by("run_id", "task_id", "reason")
        .len()
    )
    lacking = tasks.select(
        "run_id",
        "task_id",
        reason=pl.lit("trial-missing"),
        len=lacking_trials().cast(pl.UInt32),
    ).filter(pl.col("len") > 0)
    reasons = (
        pl.concat([counted, lacking], how="vertical_relaxed")
        .join(failed.select("run_id", "task_id", "suite"), on=["run_id", "task_id"])
        .group_by("suite", "task_id", "reason")
        .agg(pl.col("len").sum())
    )
    by_view = {v.run_id: v for v in views}
    counts: dict[tuple[str, str], Counter[str]] = {}
    for suite, task_id, reason, n in reasons.iter_rows():
        counts.setdefault((suite, task_id), Counter())[reason] += int(n)
    found = [
        FailingTask(
            suite, task_id, [by_view[r] for r in run_ids], counts.get((suite, task_id), Counter())
        )
        for suite, task_id, run_ids in failed.sort("rank")
        .group_by("suite", "task_id", maintain_order=True)
        .agg("run_id")
        .iter_rows()
    ]
    return sorted(found, key=lambda f: (-len(f.runs), -sum(f.reasons.values()), f.suite, f.task_id))


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
    """The graded runs in runId order, each with its failed-trial count and page anchor; its
    tasks, counted trials and failing trials are read when shown. A suite graded in several
    runs is labelled with the run id too."""
    details = _Details(out)
    failed = details.failed_trials()
    costed = details.with_task_cost()
    runs = out.tables.get("runs")
    options_of: dict[str, dict[str, Any]] = {}
    names_of: dict[str, dict[str, str]] = {}
    errored_of: dict[str, dict[str, Any]] = {}
    if runs is not None:
        wanted = [c for c in ("default_pass_score", "on_miss_default") if c in runs.columns]
        options_of = {
            row["run_id"]: {c: row[c] for c in wanted}
            for row in runs.select("run_id", *wanted).to_dicts()
        }
        named = [c for c in ("model", "task_name", "log_file") if c in runs.columns]
        names_of = {
            row["run_id"]: {c: row[c] for c in named if row[c] is not None}
            for row in runs.select("run_id", *named).to_dicts()
        }
        counted = [c for c in ERRORED_COLUMNS if c in runs.columns]
        errored_of = {
            row["run_id"]: {c: row[c] for c in counted if row[c]}
            for row in runs.select("run_id", *counted).to_dicts()
        }
    by_suite = Counter(summary["suiteId"] for _, summary in out.summaries)
    taken: set[str] = set()
    views = []
    for run_id, summary in out.summaries:
        label = tick = summary["suiteId"]
        if by_suite[label] > 1:
            label, tick = f"{label} · {run_id}", f"{label}\n{run_id}"
        views.append(
            RunView(
                run_id=run_id,
                summary=summary,
                label=label,
                tick=tick,
                anchor=_anchor(run_id, taken),
                options=options_of.get(run_id, {}),
                names=names_of.get(run_id, {}),
                errored=errored_of.get(run_id, {}),
                failed_trials=failed.get(run_id, 0),
                task_cost=run_id in costed,
                details=details,
            )
        )
    return views


@dataclass
class RegressionView:
    """A candidate run's regression block with the paired differences behind it and, for a
    regression, what changed behind it (E-142)."""

    candidate: RunView
    block: dict[str, Any]
    differences: list[tuple[str, float]]
    comparison: paired_verdict.Comparison | None
    note: str
    changes: behaviour_changes.Changes | None = None


def regression_views(
    views: Sequence[RunView],
    tasks: pl.DataFrame,
    compared: int | None = None,
    trials: pl.DataFrame | None = None,
) -> list[RegressionView]:
    """Each run's regression block; for the first `compared` blocks in regression order (all
    when None: `worst_runs.regressions_first`, the ones the page draws and lists), the block's
    comparison recomputed (the options `run` uses, with the block's method and alpha) for the
    per-task differences and the interval, and, given the `trials` table, a regressed block's
    behaviour changes. A night of 10,000 candidates runs a few dozen comparisons, not 10,000
    (E-106)."""
    items = [
        RegressionView(view, view.summary["regression"], [], None, "")
        for view in views
        if view.summary.get("regression")
    ]
    order = regressions_first(items)
    for item in order if compared is None else order[:compared]:
        _compare(item, tasks, trials)
    return items


def _compare(item: RegressionView, tasks: pl.DataFrame, trials: pl.DataFrame | None) -> None:
    """Recompute one block's comparison from the task rows of both runs, in place; a regressed
    block's changes from the trials table, as `regress` reads a tasks table (E-142)."""
    view, block = item.candidate, item.block
    base = tasks.filter(pl.col("run_id") == block["baselineRunId"])
    cand = tasks.filter(pl.col("run_id") == view.run_id)
    if not (base.height and cand.height):
        item.note = " The baseline's task rows are not in this directory."
        return
    options = paired_verdict.RegressOptions(method=block["method"], alpha=block["alpha"])
    paired = paired_verdict.paired_tasks(base, cand)
    if trials is not None and block["verdict"] == "regressed":
        item.changes = behaviour_changes.table_changes(
            paired,
            paired_verdict.score_column(options),
            trials,
            block["baselineRunId"],
            view.run_id,
        )
    comparison = paired_verdict.compare(
        base,
        cand,
        options,
        suite_id=view.suite_id,
        base_run=block["baselineRunId"],
        cand_run=view.run_id,
    )
    item.differences = [
        (task, float(c) - float(b))
        for task, b, c in paired.select("task_id", "gating_score", "gating_score_cand").iter_rows()
    ]
    if (
        comparison.verdict != block["verdict"]
        or comparison.paired_task_count != block["pairedTaskCount"]
    ):
        item.note = (
            " The comparison was made with other options than `run`'s defaults, so "
            "its interval is not drawn."
        )
        return
    item.comparison = comparison
