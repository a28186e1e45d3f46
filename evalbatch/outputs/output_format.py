"""The output directory's format, in one place: the files `evalbatch run` writes, each table's
columns with their types and what they hold, and the schema version written into every Parquet
file's metadata (`evalbatch.table` and `evalbatch.schema_version`) (§4).

These types are the tables' types wherever they are read: the Parquet files, `GradeResult`'s
frames and `evalbatch.connect` (`conform` gives any frame of a table these columns and types).
Costs are summed as exact decimals and written once as doubles, the very numbers of the
EvalSummary's `costUsd` and `totalCostUsd`, so a table and a summary never disagree.

Bump `SCHEMA_VERSION` whenever a column is added, removed, renamed, retyped or reordered;
`tests/test_tables.py` compares the tables with the snapshot of the last version and fails when
they changed under the same number.
"""

from __future__ import annotations

import polars as pl

#: 2: tasks gained pass_at_k_by_k and pass_hat_k_by_k; 3: runs gained the provenance columns;
#: 4: runs gained the eval's times, target agent, baseline and regression verdict and delta, and
#: the by-k columns became lists of doubles; 5: runs gained model, task_name and log_file, tasks
#: sample_id, trials sample_id and epoch: an Inspect log's names (E-146); 6: runs gained
#: errored_trials, mean_without_errored and errored_left_out, trials errored (E-147)
#: (docs/outputs.md "Schema versions")
SCHEMA_VERSION = 6

# --------------------------------------------------------------------------------------------
# Files

#: one EvalSummary per graded run: `{"runId": ..., "summary": ...}` per line, sorted by runId
SUMMARIES_FILE = "summaries.jsonl"
#: the Parquet tables, in the order they are described below
TABLE_NAMES = ("runs", "tasks", "trials", "problems")
#: what `run --incremental` needs to carry rows over (E-50, E-71); only incremental runs write it
MANIFEST_FILE = "manifest.json"
#: what every run was given: its event and suite paths as given (E-118), for `evalbatch report`
RUN_INPUTS_FILE = "run-inputs.json"
#: 1: events, suites (null when suites were given as documents) and summariesSha256
RUN_INPUTS_FORMAT = 1
#: what `evalbatch report` and `evalbatch export otel|eee` write into OUT_DIR when not told where
REPORT_FILE = "report.html"
OTEL_FILE = "otel-evaluations.jsonl"
EEE_FILE = "eee.jsonl"
#: made from OUT_DIR's graded tables, so stale once `run` replaces them: `run` removes them then
#: (in the same step as it puts the new tables in place; a run that fails leaves them: E-88)
DERIVED_FILES = (REPORT_FILE, OTEL_FILE, EEE_FILE)
#: 2: each output file's size, sha256 and rows are recorded (an older manifest: full regrade)
MANIFEST_FORMAT = 2
#: the lock a writer holds while it writes into the directory (E-49)
LOCK_FILE = ".evalbatch.lock"
#: the private working directories of runs into an output directory
WORK_PREFIX = ".evalbatch-"
#: present while a run puts its files in place (and after a run that died doing it): every
#: reader refuses the directory then, since it may hold two runs' files (E-119)
INCOMPLETE_FILE = "outputs-incomplete"


def table_file(table: str) -> str:
    """The file name of one of `TABLE_NAMES`."""
    return f"{table}.parquet"


#: every file a run writes, the manifest and the record of its inputs aside, in the order they are
#: put in place
OUTPUT_FILES = (SUMMARIES_FILE, *(table_file(name) for name in TABLE_NAMES))

# --------------------------------------------------------------------------------------------
# Tables: column -> (type, what it holds), in file order

Columns = dict[str, tuple[pl.DataType, str]]

#: a point in time: microseconds, UTC (Parquet TIMESTAMP adjusted to UTC; DuckDB TIMESTAMPTZ)
TIMESTAMP = pl.Datetime("us", "UTC")
#: one value per k from 1 to n, element k-1 (Parquet LIST<DOUBLE>; DuckDB DOUBLE[])
BY_K = pl.List(pl.Float64())

RUNS: Columns = {
    "run_id": (pl.String(), "the eval run (runId)"),
    "suite_id": (pl.String(), "suiteId its eval.started claims"),
    "suite_version": (pl.String(), "suiteVersion its eval.started claims"),
    "eval_started_at": (
        TIMESTAMP,
        "timestamp of its eval.started (the first by sequence, §2.1), UTC; null when absent",
    ),
    "eval_completed_at": (
        TIMESTAMP,
        "timestamp of the eval.completed that ends its eval span (§2.1), UTC; null when none",
    ),
    "target_agent_id": (
        pl.String(),
        "agentId of the brackets of its counted trials when they all agree (the target agent, "
        "§2.1), else null",
    ),
    "graded": (pl.Boolean(), "whether a summary was written; false: see problems (severity error)"),
    "has_suite": (pl.Boolean(), "graded against a supplied suite (false: from host records, D-4)"),
    "aggregate_score": (pl.Float64(), "EvalSummary aggregateScore"),
    "passed": (pl.Boolean(), "EvalSummary passed"),
    "task_count": (pl.Int64(), "EvalSummary taskCount"),
    "passed_count": (pl.Int64(), "EvalSummary passedCount"),
    "total_cost_usd": (pl.Float64(), "EvalSummary totalCostUsd (null when no cost is known, D-14)"),
    "evaluated_model_class": (pl.String(), "EvalSummary evaluatedModelClass"),
    "k": (pl.Int64(), "trialStats.k (null without repeated trials)"),
    "pass_at_k": (pl.Float64(), "trialStats.passAtK"),
    "pass_hat_k": (pl.Float64(), "trialStats.passHatK"),
    "score_stderr": (pl.Float64(), "trialStats.scoreStderr (clustered by task)"),
    "baseline_run_id": (pl.String(), "baselineRunId its eval.started names (§5); null when none"),
    "regression_verdict": (
        pl.String(),
        "EvalSummary regression.verdict: improved, regressed, unchanged or inconclusive (null "
        "without a regression block: no baseline, or it is not in the input or not comparable)",
    ),
    "regression_score_delta": (
        pl.Float64(),
        "EvalSummary regression.scoreDelta (candidate minus baseline); null without a block",
    ),
    "model": (
        pl.String(),
        "the model an Inspect log evaluated, as Inspect names it (provider/model, E-146); null "
        "for a run from any other log",
    ),
    "task_name": (pl.String(), "the Inspect task it ran, as Inspect names it (E-146); else null"),
    "log_file": (pl.String(), "the file name of the Inspect log it came from (E-146); else null"),
    "errored_trials": (
        pl.Int64(),
        "counted trials whose Inspect sample errored, each failed with score 0 (E-147); 0 for a "
        "run from any other log",
    ),
    "mean_without_errored": (
        pl.Float64(),
        "the aggregate score with those trials left out, as Inspect counts: the mean over the "
        "tasks with another counted trial of their other trials' mean score (E-147); null when "
        "no trial errored",
    ),
    "errored_left_out": (
        pl.Int64(),
        "errored Inspect samples left out of the run when its log was read "
        "(--inspect-errored leave-out, E-147); null when none was",
    ),
    "evalbatch_version": (pl.String(), "the evalbatch version that graded it (E-54)"),
    "suite_sha256": (
        pl.String(),
        "sha256 of the suite file it was graded with (of the first copy in path order; of the "
        "canonical JSON for a suite given in memory); null without a suite",
    ),
    "default_pass_score": (pl.Float64(), "--default-pass-score it was graded with (D-15)"),
    "on_miss_default": (pl.String(), "--on-miss-default it was graded with (D-9)"),
    "events_fingerprint": (
        pl.String(),
        "fingerprint of its events: count, sum and xor of row hashes "
        "(as `run --incremental` compares them)",
    ),
}

TASKS: Columns = {
    "run_id": (pl.String(), "the eval run"),
    "suite_id": (pl.String(), "the run's suiteId"),
    "suite_version": (pl.String(), "the run's suiteVersion"),
    "task_pos": (pl.Int64(), "the task's position in the summary's tasks array (suite order)"),
    "task_id": (pl.String(), "taskId"),
    "score": (pl.Float64(), "task score: mean of its trial scores"),
    "gating_score": (
        pl.Float64(),
        "the score the pass rule gates on (D-10: 0 for a failed trajectory)",
    ),
    "passed": (pl.Boolean(), "the task passed under the suite's passRule"),
    "n": (pl.Int64(), "trials expected (trials.count, or 1)"),
    "observed_trials": (pl.Int64(), "trials found in the log and counted"),
    "passed_count": (pl.Int64(), "trials that passed (c)"),
    "pass_at_k": (pl.Float64(), "unbiased pass@k at the suite's k (null without a trials block)"),
    "pass_hat_k": (pl.Float64(), "pass^k at the suite's k (null without a trials block)"),
    "pass_at_k_by_k": (
        BY_K,
        "pass@k for k = 1..n (element k-1, `list_extract(x, k)` in SQL), exact (E-52); null "
        "without a trials block",
    ),
    "pass_hat_k_by_k": (
        BY_K,
        "pass^k for k = 1..n (element k-1, `list_extract(x, k)` in SQL), exact (E-52); null "
        "without a trials block",
    ),
    "cost_usd": (pl.Float64(), "costUsd of the task entry (all trials, judge calls included)"),
    "latency_ms": (pl.Int64(), "latencyMs of the task entry"),
    "trajectory_matched": (pl.Boolean(), "trajectory.matched of the task entry (last trial)"),
    "fixture_miss_count": (pl.Int64(), "fixtureMissCount of the task entry"),
    "sample_id": (
        pl.String(),
        "the Inspect sample the task is, its id as Inspect has it (an integer as its text; "
        "E-146); null for a task of any other log or without a trial",
    ),
}

TRIALS: Columns = {
    "run_id": (pl.String(), "the eval run"),
    "task_id": (pl.String(), "taskId of the eval.scored"),
    "trial_index": (pl.Int64(), "the graded trial index (D-5)"),
    "sequence": (
        pl.Int64(),
        "sequence of the trial's eval.scored (the trial's key within the run)",
    ),
    "counted": (pl.Boolean(), "whether the trial counts towards the task (D-5)"),
    "left_out": (pl.String(), "why it does not count (a code), else null"),
    "kind": (pl.String(), "the task's expected kind (golden, rubric, trajectory)"),
    "score": (pl.Float64(), "the trial's score as graded (0 when failed closed)"),
    "gating_score": (pl.Float64(), "the score its pass rule gates on (D-10)"),
    "passed": (pl.Boolean(), "the trial passed"),
    "trajectory_matched": (pl.Boolean(), "the tool path matched (null without a trajectory)"),
    "trajectory_reason": (
        pl.String(),
        "why it did not: forbidden, missing, extra, order, no-bracket, delegates-unseen (E-102)",
    ),
    "observed_count": (pl.Int64(), "tool calls observed in the trial's bracket"),
    "matched_count": (pl.Int64(), "expected calls matched"),
    "forbidden_count": (pl.Int64(), "forbidden tools called"),
    "fixture_misses": (pl.Int64(), "fixture misses in the trial"),
    "failed_closed": (pl.Boolean(), "a fixture miss failed the trial (D-9)"),
    "has_bracket": (pl.Boolean(), "an agent.invocation-started opened the trial"),
    "bracket_closed": (pl.Boolean(), "its agent.invocation-completed was found"),
    "latency_ms": (pl.Float64(), "latency used for the trial (bracket span or host record)"),
    "tool_call_count": (pl.Int64(), "tool calls (efficiency)"),
    "model_call_count": (pl.Int64(), "model calls, judge calls excluded (efficiency)"),
    "input_tokens": (pl.Int64(), "input tokens, judge calls excluded"),
    "output_tokens": (pl.Int64(), "output tokens, judge calls excluded"),
    "usage_cost_usd": (pl.Float64(), "provider.usage cost in the trial, judge calls included"),
    "sample_id": (
        pl.String(),
        "the Inspect sample the trial ran (an integer id as its text; E-146); null for a trial "
        "of any other log",
    ),
    "epoch": (
        pl.Int64(),
        "the Inspect epoch the trial was, from 1 (its trial_index is epoch - 1; E-146); null "
        "for a trial of any other log",
    ),
    "errored": (
        pl.Boolean(),
        "its Inspect sample errored: the trial failed with score 0 (E-147); false for a trial "
        "of any other log",
    ),
}

PROBLEMS: Columns = {
    "run_id": (pl.String(), "the run (null: an input file or row with no run)"),
    "sequence": (pl.Int64(), "the event (null: the run or file as a whole)"),
    "code": (pl.String(), "problem code (evalbatch/problems.py)"),
    "severity": (pl.String(), "error (run not graded) or warning"),
    "message": (pl.String(), "content-free message naming the run, the event and the rule"),
}


_TABLES: dict[str, Columns] = {"runs": RUNS, "tasks": TASKS, "trials": TRIALS, "problems": PROBLEMS}

RUN_SCHEMA = pl.Schema({name: dtype for name, (dtype, _) in RUNS.items()})
TASK_SCHEMA = pl.Schema({name: dtype for name, (dtype, _) in TASKS.items()})
TRIAL_SCHEMA = pl.Schema({name: dtype for name, (dtype, _) in TRIALS.items()})
PROBLEM_SCHEMA = pl.Schema({name: dtype for name, (dtype, _) in PROBLEMS.items()})

#: table -> column -> what it holds
COLUMNS: dict[str, dict[str, str]] = {
    table: {name: text for name, (_, text) in columns.items()} for table, columns in _TABLES.items()
}

#: the columns commands that read a directory back (`export`, `report`) rely on: present since
#: the first schema version, so older directories still read
REQUIRED_COLUMNS: dict[str, frozenset[str]] = {
    "runs": frozenset({"run_id", "suite_id", "suite_version", "graded"}),
    "tasks": frozenset(
        {"run_id", "suite_id", "task_pos", "task_id", "score", "gating_score", "passed", "n"}
    ),
    "trials": frozenset(
        {"run_id", "task_id", "trial_index", "sequence", "counted", "kind", "score", "passed"}
    ),
    "problems": frozenset({"run_id", "code", "severity"}),
}


def metadata(table: str) -> dict[bytes, bytes]:
    """The key-value metadata written into `table`'s Parquet file."""
    return {
        b"evalbatch.table": table.encode(),
        b"evalbatch.schema_version": str(SCHEMA_VERSION).encode(),
    }


def schema(table: str) -> pl.Schema:
    """One table's columns and types, in file order."""
    return pl.Schema({name: dtype for name, (dtype, _) in _TABLES[table].items()})


def conform(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` as `table`'s rows: its columns in file order, each of the file's type."""
    wanted = schema(table)
    return frame.select(list(wanted)).cast(wanted)


def schemas() -> dict[str, dict[str, pl.DataType]]:
    """Each table's columns and types, in file order."""
    return {
        table: {name: dtype for name, (dtype, _) in cols.items()} for table, cols in _TABLES.items()
    }
