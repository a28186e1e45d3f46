"""The output tables' columns, in one place: what each column holds, and the schema version
written into every Parquet file's metadata (`evalbatch.table` and `evalbatch.schema_version`).

Bump `SCHEMA_VERSION` whenever a column is added, removed, renamed, retyped or reordered;
`tests/test_tables.py` compares the tables with the snapshot of the last version and fails when
they changed under the same number.
"""

from __future__ import annotations

import polars as pl

#: 2: tasks gained pass_at_k_by_k and pass_hat_k_by_k; 3: runs gained the provenance columns
SCHEMA_VERSION = 3

#: table -> column -> what it holds (the column types are in evalbatch.api's *_SCHEMA)
COLUMNS: dict[str, dict[str, str]] = {
    "runs": {
        "run_id": "the eval run (runId)",
        "suite_id": "suiteId its eval.started claims",
        "suite_version": "suiteVersion its eval.started claims",
        "graded": "whether a summary was written; false: see problems (severity error)",
        "has_suite": "graded against a supplied suite (false: from host records, D-4)",
        "aggregate_score": "EvalSummary aggregateScore",
        "passed": "EvalSummary passed",
        "task_count": "EvalSummary taskCount",
        "passed_count": "EvalSummary passedCount",
        "total_cost_usd": "EvalSummary totalCostUsd (null when no cost is known, D-14)",
        "evaluated_model_class": "EvalSummary evaluatedModelClass",
        "k": "trialStats.k (null without repeated trials)",
        "pass_at_k": "trialStats.passAtK",
        "pass_hat_k": "trialStats.passHatK",
        "score_stderr": "trialStats.scoreStderr (clustered by task)",
        "evalbatch_version": "the evalbatch version that graded it (E-54)",
        "suite_sha256": "sha256 of the suite file it was graded with (of the first copy in path "
        "order; of the canonical JSON for a suite given in memory); null without a suite",
        "default_pass_score": "--default-pass-score it was graded with (D-15)",
        "on_miss_default": "--on-miss-default it was graded with (D-9)",
        "events_fingerprint": "fingerprint of its events: count, sum and xor of row hashes "
        "(as `run --incremental` compares them)",
    },
    "tasks": {
        "run_id": "the eval run",
        "suite_id": "the run's suiteId",
        "suite_version": "the run's suiteVersion",
        "task_pos": "the task's position in the summary's tasks array (suite order)",
        "task_id": "taskId",
        "score": "task score: mean of its trial scores",
        "gating_score": "the score the pass rule gates on (D-10: 0 for a failed trajectory)",
        "passed": "the task passed under the suite's passRule",
        "n": "trials expected (trials.count, or 1)",
        "observed_trials": "trials found in the log and counted",
        "passed_count": "trials that passed (c)",
        "pass_at_k": "unbiased pass@k at the suite's k (null without a trials block)",
        "pass_hat_k": "pass^k at the suite's k (null without a trials block)",
        "pass_at_k_by_k": "pass@k for k = 1..n as a JSON array (element k-1), exact (E-52)",
        "pass_hat_k_by_k": "pass^k for k = 1..n as a JSON array (element k-1), exact (E-52)",
        "cost_usd": "costUsd of the task entry (all trials, judge calls included)",
        "latency_ms": "latencyMs of the task entry",
        "trajectory_matched": "trajectory.matched of the task entry (last trial)",
        "fixture_miss_count": "fixtureMissCount of the task entry",
    },
    "trials": {
        "run_id": "the eval run",
        "task_id": "taskId of the eval.scored",
        "trial_index": "the graded trial index (D-5)",
        "sequence": "sequence of the trial's eval.scored (the trial's key within the run)",
        "counted": "whether the trial counts towards the task (D-5)",
        "left_out": "why it does not count (a code), else null",
        "kind": "the task's expected kind (golden, rubric, trajectory)",
        "score": "the trial's score as graded (0 when failed closed)",
        "gating_score": "the score its pass rule gates on (D-10)",
        "passed": "the trial passed",
        "trajectory_matched": "the tool path matched (null without a trajectory)",
        "trajectory_reason": "why it did not: forbidden, missing, extra, order, no-bracket",
        "observed_count": "tool calls observed in the trial's bracket",
        "matched_count": "expected calls matched",
        "forbidden_count": "forbidden tools called",
        "fixture_misses": "fixture misses in the trial",
        "failed_closed": "a fixture miss failed the trial (D-9)",
        "has_bracket": "an agent.invocation-started opened the trial",
        "bracket_closed": "its agent.invocation-completed was found",
        "latency_ms": "latency used for the trial (bracket span or host record)",
        "tool_call_count": "tool calls (efficiency)",
        "model_call_count": "model calls, judge calls excluded (efficiency)",
        "input_tokens": "input tokens, judge calls excluded",
        "output_tokens": "output tokens, judge calls excluded",
        "usage_cost_usd": "provider.usage cost in the trial, judge calls included",
    },
    "problems": {
        "run_id": "the run (null: an input file or row with no run)",
        "sequence": "the event (null: the run or file as a whole)",
        "code": "problem code (evalbatch/problems.py)",
        "severity": "error (run not graded) or warning",
        "message": "content-free message naming the run, the event and the rule",
    },
}


def metadata(table: str) -> dict[bytes, bytes]:
    """The key-value metadata written into `table`'s Parquet file."""
    return {
        b"evalbatch.table": table.encode(),
        b"evalbatch.schema_version": str(SCHEMA_VERSION).encode(),
    }


PROBLEM_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "sequence": pl.Int64,
        "code": pl.String,
        "severity": pl.String,
        "message": pl.String,
    }
)


RUN_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "suite_id": pl.String,
        "suite_version": pl.String,
        "graded": pl.Boolean,
        "has_suite": pl.Boolean,
        "aggregate_score": pl.Float64,
        "passed": pl.Boolean,
        "task_count": pl.Int64,
        "passed_count": pl.Int64,
        "total_cost_usd": pl.Float64,
        "evaluated_model_class": pl.String,
        "k": pl.Int64,
        "pass_at_k": pl.Float64,
        "pass_hat_k": pl.Float64,
        "score_stderr": pl.Float64,
        "evalbatch_version": pl.String,
        "suite_sha256": pl.String,
        "default_pass_score": pl.Float64,
        "on_miss_default": pl.String,
        "events_fingerprint": pl.String,
    }
)


TASK_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "suite_id": pl.String,
        "suite_version": pl.String,
        "task_pos": pl.Int64,
        "task_id": pl.String,
        "score": pl.Float64,
        "gating_score": pl.Float64,
        "passed": pl.Boolean,
        "n": pl.Int64,
        "observed_trials": pl.Int64,
        "passed_count": pl.Int64,
        "pass_at_k": pl.Float64,
        "pass_hat_k": pl.Float64,
        "pass_at_k_by_k": pl.String,
        "pass_hat_k_by_k": pl.String,
        "cost_usd": pl.Float64,
        "latency_ms": pl.Int64,
        "trajectory_matched": pl.Boolean,
        "fixture_miss_count": pl.Int64,
    }
)


TRIAL_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "task_id": pl.String,
        "trial_index": pl.Int64,
        "sequence": pl.Int64,
        "counted": pl.Boolean,
        "left_out": pl.String,
        "kind": pl.String,
        "score": pl.Float64,
        "gating_score": pl.Float64,
        "passed": pl.Boolean,
        "trajectory_matched": pl.Boolean,
        "trajectory_reason": pl.String,
        "observed_count": pl.Int64,
        "matched_count": pl.Int64,
        "forbidden_count": pl.Int64,
        "fixture_misses": pl.Int64,
        "failed_closed": pl.Boolean,
        "has_bracket": pl.Boolean,
        "bracket_closed": pl.Boolean,
        "latency_ms": pl.Float64,
        "tool_call_count": pl.Int64,
        "model_call_count": pl.Int64,
        "input_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "usage_cost_usd": pl.Float64,
    }
)


def schemas() -> dict[str, dict[str, pl.DataType]]:
    """Each table's columns and types, in file order."""
    return {
        "runs": dict(RUN_SCHEMA),
        "tasks": dict(TASK_SCHEMA),
        "trials": dict(TRIAL_SCHEMA),
        "problems": dict(PROBLEM_SCHEMA),
    }
