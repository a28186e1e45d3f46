"""What checking one eval run reads: its plan, its recomputed outcome, its trials as graded, and
the host's record, with the suite settings the checks ask for (bar, pass rule, trial count).

Every family of checks (`event_checks`, `summary_checks`, ...) is a function of a `Checker` and
a `RunContext`; `run_contexts` builds one per recomputed run from a grading pass, so a run
graded twice (both readings of an absent onMiss, E-30) has two contexts to check.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from evalbatch.inputs.capabilities import EvalSuiteFacets
from evalbatch.options import GradeOptions
from evalbatch.pipeline.local import MergedBatches
from evalbatch.reduce.run_summaries import RunOutcome, RunPlan
from evalbatch.verify.host_events import HostRecord


@dataclass
class RunContext:
    """What checking one run reads: its plan, recomputed outcome, trials and host record."""

    run_id: str
    run: dict[str, Any]  # the eval_runs row
    plan: RunPlan
    outcome: RunOutcome
    trials: list[dict[str, Any]]  # every eval.scored of the run, as graded
    host: HostRecord
    options: GradeOptions
    facets: EvalSuiteFacets | None = None  # the host's capabilities, when given (E-103)
    #: the baseline its eval.started names, when that run is recomputed too (§5)
    baseline: RunContext | None = None
    #: its runs-table columns from outside the summary (an Inspect log's names, E-146, E-147)
    columns: dict[str, Any] = field(default_factory=dict)

    @property
    def from_inspect(self) -> bool:
        """Whether the run is an Inspect log as `ingest` maps it (its vendor event names the
        task, E-146): its host record is Inspect's, which writes fewer fields (E-148)."""
        return self.columns.get("task_name") is not None

    @property
    def doc(self) -> dict[str, Any] | None:
        return self.plan.doc

    @property
    def summary(self) -> dict[str, Any]:
        return self.outcome.summary

    @property
    def pass_score(self) -> float:
        thresholds = (self.doc or {}).get("thresholds", {})
        return float(thresholds.get("passScore", self.options.default_pass_score))

    @property
    def pass_rule(self) -> str:
        return ((self.doc or {}).get("trials") or {}).get("passRule", "all")

    @property
    def trial_count(self) -> int | None:
        """The trials every task must have: the suite's count, or a no-suite run's trialCount."""
        if self.doc is not None:
            return int(((self.doc.get("trials") or {}).get("count")) or 1)
        return self.plan.trial_count

    def counted(self) -> list[dict[str, Any]]:
        return [t for t in self.trials if t["counted"]]

    def task_rows(self) -> dict[str, dict[str, Any]]:
        return {row["task_id"]: row for row in self.outcome.task_rows}

    def scored_in_span(self) -> list[int]:
        start, end = self.run["start_seq"], self.run["end_seq"]
        return [
            s
            for s in self.host.scored.get(self.run_id, [])
            if s > start and (end is None or s < end)
        ]


#: the per-trial columns of the grading stage that checking reads
TRIAL_COLUMNS = (
    "run_id",
    "segment_no",
    "scored_seq",
    "task_id",
    "trial_index",
    "trial_index_invalid",
    "counted",
    "left_out",
    "score",
    "passed",
    "gating_score",
    "failed_closed",
    "score_invalid",
    "passed_invalid",
    "has_trajectory",
    "matched",
    "trajectory_reason",
    "on_miss",
    "misses",
    "errored",
)


def run_contexts(
    graded: MergedBatches,
    host: HostRecord,
    options: GradeOptions,
    facets: EvalSuiteFacets | None = None,
) -> dict[str, RunContext]:
    """A context per run of one grading pass; a run with a fatal problem was not recomputed."""
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    trials = graded.trials.select(TRIAL_COLUMNS) if graded.trials.width else graded.trials
    for trial in trials.sort("run_id", "scored_seq").iter_rows(named=True):
        by_run[trial["run_id"]].append(trial)
    runs = {r["run_id"]: r for r in graded.eval_runs.iter_rows(named=True)}
    contexts = {
        run_id: RunContext(
            run_id,
            runs[run_id],
            plan,
            graded.outcomes[run_id],
            by_run.get(run_id, []),
            host,
            options,
            facets,
        )
        for run_id, plan in graded.plans.items()
        if run_id not in graded.fatal
    }
    for ctx in contexts.values():
        ctx.baseline = contexts.get(ctx.run.get("baseline_run_id") or "")
        ctx.columns = graded.run_columns.get(ctx.run_id, {})
    return contexts
