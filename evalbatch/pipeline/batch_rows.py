"""A batch laid out as output rows (§4): its summaries as the lines of summaries.jsonl, its runs,
tasks and trials as the tables' rows, its problems and baselines. Made wherever the batch was
graded, a Ray worker included (E-154), so it imports nothing of the engines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalbatch.extract import inspect_names
from evalbatch.inputs import event_files
from evalbatch.outputs.output_format import RUN_SCHEMA, TRIAL_SCHEMA, conform
from evalbatch.outputs.writer import WrittenShard, summary_line
from evalbatch.pipeline.shard import Batch
from evalbatch.problems import ProblemRow
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
