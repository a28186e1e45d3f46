"""Batches into outputs: each batch laid out as output rows, then the batches added up and the
cross-run steps done once all are in (the regression blocks of §5, the problems table).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalbatch import problems
from evalbatch.extract import inspect_names
from evalbatch.inputs import event_files
from evalbatch.outputs.output_format import (
    PROBLEM_SCHEMA,
    RUN_SCHEMA,
    TASK_SCHEMA,
    TRIAL_SCHEMA,
    conform,
)
from evalbatch.outputs.writer import WrittenShard, summary_line
from evalbatch.pipeline import incremental
from evalbatch.pipeline.local import Pass, Progress
from evalbatch.pipeline.shard import Batch
from evalbatch.problems import ProblemRow, problem_message
from evalbatch.reduce import paired_verdict
from evalbatch.reduce.run_summaries import Outcomes, summary_faults


@dataclass
class BatchOutput:
    """One batch of whole runs in output form: rows sorted by run id, summaries as the lines of
    summaries.jsonl (validated, E-87)."""

    summaries: list[tuple[str, str]]  # (runId, line), in runId order
    runs: pl.DataFrame
    tasks: pl.DataFrame
    trials: pl.DataFrame
    problem_rows: list[ProblemRow]
    baselines: dict[str, tuple[str, int]]  # graded run -> (baselineRunId, eval.started sequence)
    eval_run_ids: list[str]
    declared_baselines: dict[str, str] = field(default_factory=dict)  # every eval run's
    run_range: event_files.RunRange = (None, None)  # the batch's range of run ids
    delegates: dict[str, dict[str, str | None]] = field(default_factory=dict)  # Batch.delegates
    calls: pl.DataFrame | None = None  # Batch.calls, when kept
    #: where a worker wrote the batch's trials, tasks and summary lines itself (E-154); then
    #: `trials` and `tasks` are empty and `summaries` holds only the runs with a baseline
    written: WrittenShard | None = None


def batch_output(part: Batch) -> BatchOutput:
    """Lay the batch out as output rows. A summary built as columns is valid by construction
    (E-87); one built as a dict is validated against the closed schema (a breach is a grading
    fault: the run is not written)."""
    outcomes = part.outcomes
    assert isinstance(outcomes, Outcomes)
    problem_rows = list(part.problem_rows)
    fatal_runs = set(part.fatal_runs)
    columns = outcomes.columns
    lines: dict[str, str] = {}
    for run_id, outcome in sorted(outcomes.by_dict().items()):
        faults = summary_faults(outcome.summary)
        if faults:
            detail = "; ".join(f"{f.path}: {f.message}" for f in faults[:3])
            problem_rows.append((run_id, None, "summary-invalid", detail))
            fatal_runs.add(run_id)
            continue
        lines[run_id] = summary_line(run_id, outcome.summary)
    written = columns.runs.filter(pl.col("columnar") | pl.col("run_id").is_in(sorted(lines)))
    summaries: list[tuple[str, str]] = [
        (run_id, line if line is not None else lines[run_id])
        for run_id, line in written.select("run_id", "line").iter_rows()
    ]
    run_rows: list[dict[str, Any]] = []
    eval_runs = {row["run_id"]: row for row in part.eval_runs.iter_rows(named=True)}
    for run_id in sorted(fatal_runs):
        run = eval_runs.get(run_id, {})
        run_rows.append(
            {
                "run_id": run_id,
                "suite_id": run.get("suite_id"),
                "suite_version": run.get("suite_version"),
                "graded": False,
            }
            | part.run_columns.get(run_id, {})
        )
    summaries.sort(key=lambda item: item[0])
    graded = {run_id for run_id, _ in summaries}
    runs = pl.concat(
        [
            _with_run_columns(written.drop("line", "columnar"), part.run_columns),
            pl.DataFrame(run_rows, schema=RUN_SCHEMA),
        ]
    )
    tasks = conform(
        "tasks",
        columns.tasks.filter(pl.col("run_id").is_in(written["run_id"].implode())).join(
            inspect_names.task_sample_ids(part.trials),
            on=["run_id", "task_id"],
            how="left",
            maintain_order="left",
        ),
    )
    return BatchOutput(
        summaries=summaries,
        runs=runs.sort("run_id"),
        tasks=tasks.sort("run_id", "task_pos"),
        trials=trial_table(part.trials),
        calls=part.calls,
        problem_rows=problem_rows,
        baselines={
            run_id: (row["baseline_run_id"], row["start_seq"])
            for run_id, row in eval_runs.items()
            if row["baseline_run_id"] is not None and run_id in graded
        },
        eval_run_ids=list(eval_runs),
        declared_baselines={
            run_id: row["baseline_run_id"]
            for run_id, row in eval_runs.items()
            if row["baseline_run_id"] is not None
        },
        delegates=part.delegates,
    )


def _with_run_columns(runs: pl.DataFrame, run_columns: dict[str, dict[str, Any]]) -> pl.DataFrame:
    """Runs-table rows with each run's columns from outside its summary (`Batch.run_columns`),
    in the table's column order."""
    wanted = [name for name in RUN_SCHEMA if name not in runs.columns]
    kept = run_columns.keys() & set(runs["run_id"])
    found = pl.DataFrame(
        [{"run_id": run_id, **run_columns[run_id]} for run_id in sorted(kept)],
        schema={"run_id": pl.String, **{name: RUN_SCHEMA[name] for name in wanted}},
    )
    return conform("runs", runs.join(found, on="run_id", how="left"))


def trial_table(trials: pl.DataFrame) -> pl.DataFrame:
    """One row per eval.scored of a graded run: where it sits, whether it counted, how it graded."""
    return (
        trials.select(
            "run_id",
            "task_id",
            "trial_index",
            pl.col("scored_seq").alias("sequence"),
            "counted",
            "left_out",
            "kind",
            "score",
            "gating_score",
            "passed",
            pl.when(pl.col("has_trajectory")).then(pl.col("matched")).alias("trajectory_matched"),
            "trajectory_reason",
            "observed_count",
            "matched_count",
            "forbidden_count",
            pl.col("misses").alias("fixture_misses"),
            "failed_closed",
            "has_bracket",
            "bracket_closed",
            "latency_ms",
            "tool_call_count",
            "model_call_count",
            "input_tokens",
            "output_tokens",
            pl.col("usage_cost_usd").cast(pl.Float64),
            *inspect_names.TRIAL_NAMES,
            "errored",
        )
        .cast(TRIAL_SCHEMA)
        .sort("run_id", "sequence")
    )


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
        problem_rows: list[ProblemRow] = [
            (None, None, p.code, p.message) for _, p in sorted(grading.file_problems.items())
        ]
        if grading.plan.rows_without_run:
            problem_rows.append(
                (None, None, "row-invalid", f"{grading.plan.rows_without_run} row(s)")
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
