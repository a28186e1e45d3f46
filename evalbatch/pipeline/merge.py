"""Batches into outputs: the batches, laid out as output rows (`batch_rows`), added up, and the
cross-run steps done once all are in (the regression blocks of §5, the problems table).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalbatch import problems
from evalbatch.inputs import event_files
from evalbatch.outputs.output_format import (
    PROBLEM_SCHEMA,
    RUN_SCHEMA,
    TASK_SCHEMA,
)
from evalbatch.pipeline import incremental
from evalbatch.pipeline.batch_rows import BatchOutput, batch_output
from evalbatch.pipeline.local import Pass, Progress
from evalbatch.problems import ProblemRow, problem_message
from evalbatch.reduce import paired_verdict

#: the task rows of the runs named (a sorted list of run ids), from wherever the batches' task
#: rows went: `Merged.tasks`, or a tasks table written batch by batch
TaskRows = Callable[[list[str]], pl.DataFrame]


@dataclass
class Merged:
    """What the batches add up to, kept until the cross-run steps are done. The batches' task
    rows are kept (`tasks`) unless `keep_tasks` is false: a caller that writes them as they come
    (the tasks table is the largest of these at scale) gives them back to `finish` for the
    regression pairs."""

    keep_tasks: bool = True
    runs: list[pl.DataFrame] = field(default_factory=list)
    tasks: list[pl.DataFrame] = field(default_factory=list)
    problem_rows: list[ProblemRow] = field(default_factory=list)
    baselines: dict[str, tuple[str, int]] = field(default_factory=dict)
    eval_run_ids: set[str] = field(default_factory=set)
    #: summaries with a baseline, as dicts: the regression block goes in once all batches are in
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    declared_baselines: dict[str, str] = field(default_factory=dict)
    delegates: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def add(self, batch: BatchOutput) -> None:
        self.runs.append(batch.runs)
        if self.keep_tasks:
            self.tasks.append(batch.tasks)
        self.problem_rows += batch.problem_rows
        self.baselines.update(batch.baselines)
        self.eval_run_ids.update(batch.eval_run_ids)
        self.declared_baselines.update(batch.declared_baselines)
        self.delegates.update(batch.delegates)
        self.pending.update(
            (run_id, json.loads(line)["summary"])
            for run_id, line in batch.summaries
            if run_id in batch.baselines
        )

    def task_table(self) -> pl.DataFrame:
        """The kept task rows of every batch, as the tasks table (batches come in run-id order,
        each sorted)."""
        return pl.concat([pl.DataFrame(schema=TASK_SCHEMA), *self.tasks])

    def _kept_task_rows(self, run_ids: list[str]) -> pl.DataFrame:
        return self.task_table().filter(pl.col("run_id").is_in(run_ids))

    def finish(
        self,
        grading: Pass,
        regress_options: paired_verdict.RegressOptions,
        carried: incremental.Carried | None = None,
        task_rows: TaskRows | None = None,
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Add the regression blocks (§5: the baseline may sit in any batch) to the summaries and
        their verdicts and deltas to the runs table, and return the runs and problems tables,
        with the rows `carried` from the previous outputs. `task_rows` gives the task rows of
        runs when they are not kept here (carried runs' included)."""
        runs = pl.concat([pl.DataFrame(schema=RUN_SCHEMA), *self.runs]).sort("run_id")
        if carried is not None:
            runs = pl.concat([runs, carried.run_rows.cast(RUN_SCHEMA)]).sort("run_id")
            self.eval_run_ids.update(carried.run_rows["run_id"].to_list())
        problem_rows = event_files.problem_rows(
            grading.file_problems.values(), grading.plan.rows_without_run
        )
        problem_rows += self.problem_rows
        problem_rows += _link_regressions(
            self.pending,
            self.baselines,
            self.eval_run_ids,
            runs,
            task_rows or self._kept_task_rows,
            regress_options,
        )
        runs = _with_regressions(runs, self.pending)
        if carried is not None and carried.problem_rows.height:
            frame = pl.concat(
                [problem_frame(problem_rows), carried.problem_rows.cast(PROBLEM_SCHEMA)]
            )
            return runs, sorted_problems(frame)
        return runs, problem_frame(problem_rows)


def _with_regressions(runs: pl.DataFrame, summaries: dict[str, dict[str, Any]]) -> pl.DataFrame:
    """The runs table with the verdict and delta of each summary's `regression` block (§5), as
    `_link_regressions` put them in; other rows keep theirs (a carried run's, or null)."""
    blocks = [
        (run_id, summary["regression"]["verdict"], summary["regression"]["scoreDelta"])
        for run_id, summary in sorted(summaries.items())
        if "regression" in summary
    ]
    linked = pl.DataFrame(
        blocks,
        schema={
            "run_id": pl.String,
            "verdict": RUN_SCHEMA["regression_verdict"],
            "delta": RUN_SCHEMA["regression_score_delta"],
        },
        orient="row",
    )
    return (
        runs.join(linked, on="run_id", how="left", maintain_order="left")
        .with_columns(
            pl.coalesce("verdict", "regression_verdict").alias("regression_verdict"),
            pl.coalesce("delta", "regression_score_delta").alias("regression_score_delta"),
        )
        .select(list(RUN_SCHEMA))
    )


def _link_regressions(
    pending: dict[str, dict[str, Any]],
    baselines: dict[str, tuple[str, int]],
    eval_run_ids: set[str],
    runs: pl.DataFrame,
    task_rows: TaskRows,
    options: paired_verdict.RegressOptions,
) -> list[ProblemRow]:
    """Put a `regression` block (§5) into each summary whose baseline run is in the input."""
    wanted = {run for run, (base, _) in baselines.items() if base in eval_run_ids}
    wanted |= {baselines[run][0] for run in wanted}
    by_run = task_rows(sorted(wanted)).partition_by("run_id", as_dict=True) if wanted else {}
    graded = dict(runs.filter("graded").select("run_id", "suite_id").iter_rows())
    found: list[ProblemRow] = []
    for run_id, (baseline, sequence) in sorted(baselines.items()):
        if baseline not in eval_run_ids:
            continue  # §3.6: a block only when the baseline is in the input
        summary = pending[run_id]
        if baseline not in graded:
            found.append(
                (run_id, sequence, "regression-unavailable", f"baseline {baseline} was not graded")
            )
            continue
        if graded[baseline] != summary["suiteId"]:
            found.append(
                (
                    run_id,
                    sequence,
                    "regression-unavailable",
                    f"baseline {baseline} is a run of another suite",
                )
            )
            continue
        empty = pl.DataFrame(schema=TASK_SCHEMA)
        comparison = paired_verdict.compare(
            by_run.get((baseline,), empty),
            by_run.get((run_id,), empty),
            options,
            suite_id=summary["suiteId"],
            base_run=baseline,
            cand_run=run_id,
        )
        if comparison.reason is not None:
            found.append((run_id, sequence, "regression-unavailable", comparison.reason))
            continue
        entries = summary.pop("tasks")
        summary["regression"] = comparison.block()
        summary["tasks"] = entries
    return found


def batch_outputs(
    grading: Pass, on_batch: Callable[[Progress], None] | None
) -> Iterator[BatchOutput]:
    """Each batch of the pass in output form; `on_batch` hears how far the pass is after each."""
    plan = grading.plan
    runs_done = events_done = 0
    for number, part in enumerate(grading.parts, start=1):
        batch = part if isinstance(part, BatchOutput) else batch_output(part)
        batch.run_range = plan.ranges[number - 1]
        runs_done += batch.runs.height
        events_done += plan.events[number - 1]
        yield batch
        if on_batch is not None:
            on_batch(
                Progress(
                    number,
                    len(plan.ranges),
                    runs_done,
                    plan.runs,
                    events_done,
                    events=sum(plan.events),
                )
            )


def problem_frame(rows: Iterable[ProblemRow]) -> pl.DataFrame:
    records = [
        {
            "run_id": run_id,
            "sequence": sequence,
            "code": code,
            "severity": problems.severity(code),
            "message": problem_message(run_id, sequence, code, detail),
        }
        for run_id, sequence, code, detail in rows
    ]
    return sorted_problems(pl.DataFrame(records, schema=PROBLEM_SCHEMA))


def sorted_problems(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.unique(maintain_order=True).sort(
        "run_id", "sequence", "code", "message", nulls_last=False
    )
