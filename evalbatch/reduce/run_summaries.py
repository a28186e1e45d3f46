"""One EvalSummary per run (§3.6, §4), built from the reduced task rows of `reduce`.

Fields are written in the contract's order and only when §3 defines them. Most runs are built as
columns: each summaries.jsonl line is assembled as text from Polars columns, with numbers
formatted exactly as `json.dumps` formats them, and only when every value is inside the
EvalSummary schema (E-87). The runs the columns cannot express take the dict path, which writes
the same bytes and is validated line by line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from evalbatch.grade.suite_tables import suite_key
from evalbatch.inputs.suites import Fault, validate_summary
from evalbatch.reduce import stats

MODEL_CLASSES = frozenset(
    {"reasoning", "writing", "coding", "research", "classification", "general"}
)


@dataclass(frozen=True)
class RunPlan:
    """What grading needs to know about one run besides its trials."""

    run_id: str
    suite_id: str | None
    suite_version: str | None
    doc: dict[str, Any] | None  # the suite, or None for a no-suite run (D-4)
    trial_count: int | None  # a no-suite run's valid eval.started.trialCount
    has_cost_source: bool  # some provider.usage carries a cost (D-14)

    @property
    def suite_key(self) -> str | None:
        """The key of the run's suite (§1.3), or None for a no-suite run (D-4)."""
        if self.doc is None:
            return None
        # a suite is found only by a run naming both its suiteId and its version
        assert self.suite_id is not None and self.suite_version is not None
        return suite_key(self.suite_id, self.suite_version)


class RunOutcome:
    """One run's summary plus the rows it adds to the tasks table, as dicts (the dict path; what
    explain and verify read)."""

    def __init__(self, summary: dict[str, Any], task_rows: list[dict[str, Any]]) -> None:
        self._summary = summary
        self._task_rows = task_rows

    @property
    def summary(self) -> dict[str, Any]:
        return self._summary

    @property
    def task_rows(self) -> list[dict[str, Any]]:
        return self._task_rows


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    """One task entry in the contract's field order (§4), from a reduced task row."""
    entry: dict[str, Any] = {
        "taskId": row["task_id"],
        "score": row["mean_score"],
        "passed": bool(row["passed"]),
    }
    if row["cost_source"] is not None:
        entry["costUsd"] = float(row["cost"])
    if row["latency_ms"] is not None:
        entry["latencyMs"] = int(row["latency_ms"])
    observed = row["observed"]
    if row["has_trajectory"] and observed:
        entry["trajectory"] = {
            "mode": row["last_mode"],
            "matched": bool(row["last_matched"]),
            "expectedCount": int(row["last_expected_count"]),
            "observedCount": int(row["last_observed_count"]),
            "matchedCount": int(row["last_matched_count"]),
            "forbiddenCount": int(row["last_forbidden_count"]),
        }
    if row["trial_blocks"]:
        entry["trials"] = {
            "n": row["n"],
            "passedCount": row["c"],
            "meanScore": row["mean_score"],
            "passAtK": row["pass_at_k"],
            "passHatK": row["pass_hat_k"],
        }
    if observed:
        entry["efficiency"] = {
            "toolCallCount": row["tool_calls"] / observed,
            "modelCallCount": row["model_calls"] / observed,
            "inputTokens": row["input_tokens"] / observed,
            "outputTokens": row["output_tokens"] / observed,
        }
    if row["has_fixtures"]:
        entry["fixtureMissCount"] = row["misses"]
    return entry


def _task_row(plan: RunPlan, row: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": plan.run_id,
        "suite_id": plan.suite_id,
        "suite_version": plan.suite_version,
        "task_pos": row["task_pos"],
        "task_id": row["task_id"],
        "score": row["mean_score"],
        "gating_score": row["gating_mean"],
        "passed": bool(row["passed"]),
        "n": row["n"],
        "observed_trials": row["observed"],
        "passed_count": row["c"],
        "pass_at_k": row["pass_at_k"] if row["trial_blocks"] else None,
        "pass_hat_k": row["pass_hat_k"] if row["trial_blocks"] else None,
        "pass_at_k_by_k": row["pass_at_k_by_k"] if row["trial_blocks"] else None,
        "pass_hat_k_by_k": row["pass_hat_k_by_k"] if row["trial_blocks"] else None,
        "cost_usd": entry.get("costUsd"),
        "latency_ms": entry.get("latencyMs"),
        "trajectory_matched": entry.get("trajectory", {}).get("matched"),
        "fixture_miss_count": row["misses"] if row["has_fixtures"] else None,
    }


def _dict_outcome(
    plan: RunPlan,
    rows: list[dict[str, Any]],
    figure: dict[str, Any],
    model_class: str | None,
) -> RunOutcome:
    """One run's EvalSummary as a dict (the dict path), from its reduced task rows and figures."""
    entries = [_entry(row) for row in rows]
    thresholds = (plan.doc or {}).get("thresholds", {})
    task_count = len(rows)
    cost_known = bool(rows) and rows[0]["cost_source"] is not None
    total_cost = figure["total_cost"] if figure and cost_known else None
    passed = bool(rows) and stats.at_least(figure["gating_aggregate"], rows[0]["pass_score"])
    if "maxCostUsd" in thresholds:
        passed = (
            passed
            and total_cost is not None
            and stats.at_most(float(total_cost), thresholds["maxCostUsd"])
        )
    if "maxP95LatencyMs" in thresholds:
        latencies = figure["latencies"] if figure else []
        passed = (
            passed
            and bool(latencies)
            and stats.at_most(stats.p95_nearest_rank(latencies), thresholds["maxP95LatencyMs"])
        )
    summary: dict[str, Any] = {
        "suiteId": plan.suite_id,
        "suiteVersion": plan.suite_version,
        "aggregateScore": figure["aggregate"] if figure else 0.0,
        "passed": passed,
        "taskCount": task_count,
        "passedCount": figure["passed_count"] if figure else 0,
    }
    if total_cost is not None:
        summary["totalCostUsd"] = float(total_cost)
    if model_class is not None:
        summary["evaluatedModelClass"] = model_class
    if rows and rows[0]["trial_blocks"]:
        trial_stats: dict[str, Any] = {
            "k": rows[0]["k"],
            "passAtK": figure["pass_at_k"],
            "passHatK": figure["pass_hat_k"],
        }
        if task_count >= 2:
            trial_stats["scoreStderr"] = stats.clustered_stderr(figure["means"])
        summary["trialStats"] = trial_stats
    summary["tasks"] = entries
    return RunOutcome(
        summary=summary,
        task_rows=[_task_row(plan, row, e) for row, e in zip(rows, entries, strict=True)],
    )


def summary_faults(summary: dict[str, Any]) -> list[Fault]:
    """What keeps a summary from being written (§4): its errors against the closed schema and
    the count invariants. `run` leaves such a run out (`summary-invalid`); `verify` names each
    as a finding, since only a value the host wrote (an id) can cause one."""
    return [fault for fault in validate_summary(summary) if fault.severity == "error"]


# --- the columnar path (E-87) ---------------------------------------------------------------


def tied_or(op: str, x: pl.Expr, threshold: pl.Expr) -> pl.Expr:
    """x ≥ t (op "ge") or x ≤ t (op "le") with D-17's tie tolerance, as an expression (what
    `stats.at_least` and `stats.at_most` decide for one pair)."""
    tolerance = stats.TIE_TOLERANCE * pl.max_horizontal(pl.lit(1.0), threshold.abs())
    tied = (x - threshold).abs() <= tolerance
    return ((x >= threshold) if op == "ge" else (x <= threshold)) | tied


#: the EvalSummary schema's patterns (evalbatch/schemas/eval-summary.schema.json); a run whose ids
#: do not match takes the dict path, where the schema check names the fault (`summary-invalid`)
SUITE_ID_PATTERN = r"^[a-z0-9.-]+\.evals\.[a-z0-9-]+$"
SUITE_VERSION_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: a runId that JSON must escape (a quote, a backslash, a control character)
NEEDS_ESCAPE = r'["\\\x00-\x1f]'
TRAJECTORY_MODES = ("exact", "in-order", "any-order", "subset")
#: integers a float64 division takes exactly, so `a / b` in Polars equals Python's `a / b`
EXACT_INT = 2**53


def json_floats(values: pl.Series) -> pl.Series:
    """Each float as `json.dumps` writes it (`float.__repr__`: the shortest text that reads back).

    Polars' cast to text writes the same shortest digits, and the same text as repr for zero and
    for magnitudes of 1e-4 and above; below 1e-4 it writes `0.00001` or `1e-7` where repr writes
    `1e-05` and `1e-07`, so those few are rewritten from the same digits. Non-finite values are
    never written by this path (E-87)."""
    text = values.cast(pl.String)
    small = ((values != 0) & (values.abs() < 1e-4)).fill_null(False)
    if not small.any():
        return text
    tiny = text.filter(small).to_frame("text")
    fixed = pl.col("text").str.extract_groups(r"^(-?)0\.(0*)([1-9])(\d*)$")
    scientific = pl.col("text").str.extract_groups(r"^(-?[0-9.]+)e-(\d+)$")
    rewritten = tiny.select(
        pl.when(scientific.struct[1].is_not_null())
        .then(scientific.struct[0] + "e-" + scientific.struct[1].str.zfill(2))
        .otherwise(
            fixed.struct[0]
            + fixed.struct[2]
            + pl.when(fixed.struct[3] != "").then("." + fixed.struct[3]).otherwise(pl.lit(""))
            + "e-"
            + (fixed.struct[1].str.len_chars() + 1).cast(pl.String).str.zfill(2)
        )
    ).to_series()
    return text.scatter(small.arg_true(), rewritten)


def _number(values: pl.Expr) -> pl.Expr:
    """A float column as JSON number text."""
    return values.map_batches(json_floats, return_dtype=pl.String)


def _integer(values: pl.Expr) -> pl.Expr:
    return values.cast(pl.String)


def _boolean(values: pl.Expr) -> pl.Expr:
    """`bool(value)` as JSON: a null reads false, as in the dict path."""
    return pl.when(values.fill_null(False)).then(pl.lit("true")).otherwise(pl.lit("false"))


def _field(shown: pl.Expr, *parts: pl.Expr | str) -> pl.Expr:
    """Text that appears only when `shown` (an optional field or block of §3)."""
    text = pl.concat_str([pl.lit(p) if isinstance(p, str) else p for p in parts])
    return pl.when(shown).then(text).otherwise(pl.lit(""))


def _text(*parts: pl.Expr | str) -> pl.Expr:
    return pl.concat_str([pl.lit(p) if isinstance(p, str) else p for p in parts])


def _unit(values: pl.Expr) -> pl.Expr:
    """A value the schema bounds to [0, 1] (false for null and NaN)."""
    return values.is_between(0.0, 1.0).fill_null(False)


def _at_least_zero(values: pl.Expr) -> pl.Expr:
    """A finite value ≥ 0 (false for null, NaN and infinity)."""
    return ((values >= 0) & values.cast(pl.Float64).is_finite()).fill_null(False)


def _divide_rows(numerator: pl.Series, denominator: pl.Series) -> pl.Series:
    """IEEE division row by row (a constant denominator column must not become a
    multiplication by its reciprocal: see `task_reductions._divide`)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a task without trials shows none
        return pl.Series(np.divide(numerator.to_numpy(), denominator.to_numpy()))


def _task_columns(tasks: pl.DataFrame) -> pl.DataFrame:
    """Per task row: its entry of the summary's tasks array as JSON text, its tasks-table
    values, and whether every value of the entry is one the schema allows (`entry_ok`)."""
    observed = pl.col("observed") > 0
    cost_shown = pl.col("cost_source").is_not_null()
    trajectory_shown = pl.col("has_trajectory") & observed
    counts = (
        "last_expected_count",
        "last_observed_count",
        "last_matched_count",
        "last_forbidden_count",
    )
    sums = ("tool_calls", "model_calls", "input_tokens", "output_tokens")
    observed_counts = tasks["observed"].cast(pl.Float64)
    means = {
        name: _divide_rows(tasks[name].cast(pl.Float64).fill_null(0.0), observed_counts)
        for name in sums
    }
    frame = tasks.with_columns(
        pl.col("cost").cast(pl.Float64).alias("cost_float"),
        *[pl.Series(f"{name}_mean", values) for name, values in means.items()],
    )
    entry = _text(
        '{"taskId": "',
        pl.col("task_id"),
        '", "score": ',
        _number(pl.col("mean_score")),
        ', "passed": ',
        _boolean(pl.col("passed")),
        _field(cost_shown, ', "costUsd": ', _number(pl.col("cost_float"))),
        _field(
            pl.col("latency_ms").is_not_null(), ', "latencyMs": ', _integer(pl.col("latency_ms"))
        ),
        _field(
            trajectory_shown,
            ', "trajectory": {"mode": "',
            pl.col("last_mode"),
            '", "matched": ',
            _boolean(pl.col("last_matched")),
            ', "expectedCount": ',
            _integer(pl.col("last_expected_count")),
            ', "observedCount": ',
            _integer(pl.col("last_observed_count")),
            ', "matchedCount": ',
            _integer(pl.col("last_matched_count")),
            ', "forbiddenCount": ',
            _integer(pl.col("last_forbidden_count")),
            "}",
        ),
        _field(
            pl.col("trial_blocks"),
            ', "trials": {"n": ',
            _integer(pl.col("n")),
            ', "passedCount": ',
            _integer(pl.col("c")),
            ', "meanScore": ',
            _number(pl.col("mean_score")),
            ', "passAtK": ',
            _number(pl.col("pass_at_k")),
            ', "passHatK": ',
            _number(pl.col("pass_hat_k")),
            "}",
        ),
        _field(
            observed,
            ', "efficiency": {"toolCallCount": ',
            _number(pl.col("tool_calls_mean")),
            ', "modelCallCount": ',
            _number(pl.col("model_calls_mean")),
            ', "inputTokens": ',
            _number(pl.col("input_tokens_mean")),
            ', "outputTokens": ',
            _number(pl.col("output_tokens_mean")),
            "}",
        ),
        _field(pl.col("has_fixtures"), ', "fixtureMissCount": ', _integer(pl.col("misses"))),
        "}",
    )
    entry_ok = (
        pl.col("task_id").str.contains(TASK_ID_PATTERN).fill_null(False)
        & _unit(pl.col("mean_score"))
        & (~cost_shown | _at_least_zero(pl.col("cost_float")))
        & (pl.col("latency_ms").is_null() | (pl.col("latency_ms") >= 0))
        & (
            ~trajectory_shown
            | (
                pl.col("last_mode").is_in(TRAJECTORY_MODES).fill_null(False)
                & pl.all_horizontal([(pl.col(c) >= 0).fill_null(False) for c in counts])
            )
        )
        & (
            ~pl.col("trial_blocks")
            | (
                (pl.col("n") >= 1)
                & pl.col("c").is_between(0, pl.col("n"))
                & _unit(pl.col("pass_at_k"))
                & _unit(pl.col("pass_hat_k"))
            ).fill_null(False)
        )
        & (
            ~observed
            | pl.all_horizontal(
                [pl.col(name).is_between(0, EXACT_INT).fill_null(False) for name in sums]
            )
        )
        & (~pl.col("has_fixtures") | (pl.col("misses") >= 0).fill_null(False))
    )
    return frame.with_columns(
        entry.alias("entry"),
        entry_ok.fill_null(False).alias("entry_ok"),
        pl.when(cost_shown).then(pl.col("cost_float")).alias("cost_usd"),
        pl.when(trajectory_shown)
        .then(pl.col("last_matched").fill_null(False))
        .alias("trajectory_matched"),
    )


def _task_table(tasks: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The tasks-table rows of the columnar runs (the columns `_task_row` writes)."""
    blocks = pl.col("trial_blocks")
    return tasks.join(runs.select("run_id", "suite_id", "suite_version"), on="run_id").select(
        "run_id",
        "suite_id",
        "suite_version",
        "task_pos",
        "task_id",
        pl.col("mean_score").alias("score"),
        pl.col("gating_mean").alias("gating_score"),
        pl.col("passed").fill_null(False),
        "n",
        pl.col("observed").alias("observed_trials"),
        pl.col("c").alias("passed_count"),
        *[
            pl.when(blocks).then(pl.col(name)).alias(name)
            for name in ("pass_at_k", "pass_hat_k", "pass_at_k_by_k", "pass_hat_k_by_k")
        ],
        "cost_usd",
        "latency_ms",
        "trajectory_matched",
        pl.when(pl.col("has_fixtures")).then(pl.col("misses")).alias("fixture_miss_count"),
    )


@dataclass(frozen=True)
class ColumnarRuns:
    """The runs of a batch built as columns (E-87): per run its summaries.jsonl line and its runs
    table values (`runs`), and the tasks-table rows they add (`tasks`), both sorted by run."""

    runs: pl.DataFrame
    tasks: pl.DataFrame

    def outcome(self, run_id: str) -> RunOutcome:
        """A run's summary and task rows as dicts, read back from its line and rows."""
        line = self.runs.filter(pl.col("run_id") == run_id)["line"].item()
        return RunOutcome(
            summary=json.loads(line)["summary"],
            task_rows=self.tasks.filter(pl.col("run_id") == run_id).to_dicts(),
        )


class ColumnarOutcome(RunOutcome):
    """A run built as columns: its dicts are made only when read (explain and verify read them;
    writing the outputs never does)."""

    def __init__(self, columns: ColumnarRuns, run_id: str) -> None:
        self._columns = columns
        self._run_id = run_id
        self._read: RunOutcome | None = None

    def _dicts(self) -> RunOutcome:
        if self._read is None:
            self._read = self._columns.outcome(self._run_id)
        return self._read

    @property
    def summary(self) -> dict[str, Any]:
        return self._dicts().summary

    @property
    def task_rows(self) -> list[dict[str, Any]]:
        return self._dicts().task_rows


class Outcomes(dict[str, RunOutcome]):
    """Every run's outcome in a batch, by run id: the columnar runs (`columns`) and the runs that
    took the dict path (`RunOutcome`s holding dicts)."""

    def __init__(self, columns: ColumnarRuns, by_dict: dict[str, RunOutcome]) -> None:
        super().__init__(by_dict)
        self.update((run, ColumnarOutcome(columns, run)) for run in columns.runs["run_id"])
        self.columns = columns

    def by_dict(self) -> dict[str, RunOutcome]:
        """The outcomes that took the dict path."""
        return {run: o for run, o in self.items() if not isinstance(o, ColumnarOutcome)}


def _exact_float(value: Any) -> bool:
    """A threshold a float64 column holds exactly, so comparing it there is comparing it in
    Python (a float, or an integer of at most 2**53)."""
    if isinstance(value, float):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= EXACT_INT


def _plan_frame(plans: dict[str, RunPlan], models: dict[str, str]) -> pl.DataFrame:
    """Per run what the summary takes from outside its task rows: ids, the cost and latency
    thresholds (§3.6), the model class (E-14), and whether the thresholds are ones the columns
    compare exactly as Python does."""
    rows = []
    for run_id, plan in plans.items():
        thresholds = (plan.doc or {}).get("thresholds", {})
        max_cost = thresholds.get("maxCostUsd")
        max_p95 = thresholds.get("maxP95LatencyMs")
        rows.append(
            (
                run_id,
                plan.suite_id,
                plan.suite_version,
                plan.doc is not None,
                float(max_cost) if _exact_float(max_cost) else None,
                float(max_p95) if _exact_float(max_p95) else None,
                all(v is None or _exact_float(v) for v in (max_cost, max_p95)),
                models.get(run_id),
            )
        )
    schema = {
        "run_id": pl.String,
        "suite_id": pl.String,
        "suite_version": pl.String,
        "has_suite": pl.Boolean,
        "max_cost": pl.Float64,
        "max_p95": pl.Float64,
        "thresholds_exact": pl.Boolean,
        "evaluated_model_class": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _p95(latencies: pl.Expr) -> pl.Expr:
    """`stats.p95_nearest_rank` of an ascending list: the value at rank ⌈0.95·N⌉ (E-17), null
    for an empty list."""
    count = latencies.list.len().cast(pl.Int64)
    rank = (count * 95 + 99) // 100
    return pl.when(count > 0).then(latencies.list.get(rank - 1, null_on_oob=True))


def _stderrs(task_counts: pl.Series, means: pl.Series) -> pl.Series:
    """trialStats.scoreStderr per run with two tasks or more (correctly rounded sums, §B)."""
    return pl.Series(
        [
            stats.clustered_stderr(values) if count >= 2 else None
            for count, values in zip(task_counts.to_list(), means.to_list(), strict=True)
        ],
        dtype=pl.Float64,
    )


def _columnar_runs(
    plans: dict[str, RunPlan], tasks: pl.DataFrame, figures: pl.DataFrame, models: dict[str, str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every run's summaries.jsonl line and runs-table values as columns, with `line_ok` telling
    whether the run is one the columns express with every value inside the schema (E-87); and
    the task rows with their entries."""
    task_columns = _task_columns(tasks)
    per_run = task_columns.group_by("run_id", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("task_count"),
        pl.col("entry").str.join(", ").alias("entries"),
        pl.col("entry_ok").all().alias("entries_ok"),
        (pl.col("task_id").n_unique() == pl.len()).alias("ids_unique"),
        pl.col("cost_source").first().is_not_null().alias("cost_known"),
        pl.col("trial_blocks").first().alias("trial_blocks"),
        pl.col("k").first().alias("k"),
        pl.col("pass_score").first().alias("pass_score"),
    )
    runs = (
        _plan_frame(plans, models)
        .join(per_run, on="run_id", how="left")
        .join(
            figures.select(
                "run_id",
                "aggregate",
                "gating_aggregate",
                "passed_count",
                "total_cost",
                "latencies",
                pl.col("pass_at_k").alias("run_pass_at_k"),
                pl.col("pass_hat_k").alias("run_pass_hat_k"),
                "means",
            ),
            on="run_id",
            how="left",
        )
        .sort("run_id")
    )
    runs = runs.with_columns(
        _stderrs(runs["task_count"].fill_null(0), runs["means"]).alias("score_stderr")
    )
    blocks = pl.col("trial_blocks").fill_null(False)
    cost_shown = pl.col("cost_known").fill_null(False)
    runs = runs.with_columns(
        pl.when(blocks).then(pl.col("score_stderr")).alias("score_stderr"),
        pl.when(cost_shown).then(pl.col("total_cost").cast(pl.Float64)).alias("total_cost_usd"),
        _p95(pl.col("latencies")).alias("p95"),
    )
    max_cost, max_p95 = pl.col("max_cost"), pl.col("max_p95")
    runs = runs.with_columns(
        (
            tied_or("ge", pl.col("gating_aggregate"), pl.col("pass_score"))
            & (
                max_cost.is_null()
                | (cost_shown & tied_or("le", pl.col("total_cost_usd"), max_cost))
            )
            & (
                max_p95.is_null()
                | (
                    pl.col("p95").is_not_null()
                    & tied_or("le", pl.col("p95").cast(pl.Float64), max_p95)
                )
            )
        )
        .fill_null(False)
        .alias("passed"),
    )
    stderr_shown = blocks & pl.col("score_stderr").is_not_null()
    line = _text(
        '{"runId": "',
        pl.col("run_id"),
        '", "summary": {"suiteId": "',
        pl.col("suite_id"),
        '", "suiteVersion": "',
        pl.col("suite_version"),
        '", "aggregateScore": ',
        _number(pl.col("aggregate")),
        ', "passed": ',
        _boolean(pl.col("passed")),
        ', "taskCount": ',
        _integer(pl.col("task_count")),
        ', "passedCount": ',
        _integer(pl.col("passed_count")),
        _field(cost_shown, ', "totalCostUsd": ', _number(pl.col("total_cost_usd"))),
        _field(
            pl.col("evaluated_model_class").is_not_null(),
            ', "evaluatedModelClass": "',
            pl.col("evaluated_model_class").fill_null(""),
            '"',
        ),
        _field(
            blocks,
            ', "trialStats": {"k": ',
            _integer(pl.col("k")),
            ', "passAtK": ',
            _number(pl.col("run_pass_at_k")),
            ', "passHatK": ',
            _number(pl.col("run_pass_hat_k")),
            _field(stderr_shown, ', "scoreStderr": ', _number(pl.col("score_stderr"))),
            "}",
        ),
        ', "tasks": [',
        pl.col("entries"),
        "]}}\n",
    )
    line_ok = (
        pl.col("thresholds_exact")
        & (pl.col("p95").is_null() | pl.col("p95").is_between(0, EXACT_INT))
        & (pl.col("task_count") > 0)
        & pl.col("entries_ok")
        & pl.col("ids_unique")
        & ~pl.col("run_id").str.contains(NEEDS_ESCAPE)
        & pl.col("suite_id").str.contains(SUITE_ID_PATTERN)
        & pl.col("suite_version").str.contains(SUITE_VERSION_PATTERN)
        & pl.col("evaluated_model_class").is_in(sorted(MODEL_CLASSES)).fill_null(True)
        & _unit(pl.col("aggregate"))
        & pl.col("passed_count").is_between(0, pl.col("task_count"))
        & (~cost_shown | _at_least_zero(pl.col("total_cost_usd")))
        & (
            ~blocks
            | (
                (pl.col("k") >= 1)
                & _unit(pl.col("run_pass_at_k"))
                & _unit(pl.col("run_pass_hat_k"))
                & (pl.col("score_stderr").is_null() | _at_least_zero(pl.col("score_stderr")))
            )
        )
    )
    runs = runs.with_columns(
        line.alias("line"),
        line_ok.fill_null(False).alias("line_ok"),
        pl.when(blocks).then(pl.col("k")).alias("k"),
        pl.when(blocks).then(pl.col("run_pass_at_k")).alias("pass_at_k"),
        pl.when(blocks).then(pl.col("run_pass_hat_k")).alias("pass_hat_k"),
    ).select(
        "run_id",
        "line",
        "line_ok",
        "suite_id",
        "suite_version",
        pl.lit(True).alias("graded"),
        "has_suite",
        pl.col("aggregate").alias("aggregate_score"),
        "passed",
        "task_count",
        "passed_count",
        "total_cost_usd",
        "evaluated_model_class",
        "k",
        "pass_at_k",
        "pass_hat_k",
        "score_stderr",
    )
    return runs, task_columns


def build_outcomes(
    plans: dict[str, RunPlan],
    tasks: pl.DataFrame,
    figures: pl.DataFrame,
    models: dict[str, str],
    *,
    dict_path: Sequence[str] = (),
) -> Outcomes:
    """Every run's EvalSummary from its reduced task rows and suite figures (§3.6, §4): as
    columns where the run's shape and values allow (E-87), else as dicts. `dict_path` names
    runs to build as dicts anyway (tests compare both paths on the same runs)."""
    runs, task_columns = _columnar_runs(plans, tasks, figures, models)
    columnar = runs.filter(pl.col("line_ok") & ~pl.col("run_id").is_in(list(dict_path)))
    by_dict_ids = set(plans) - set(columnar["run_id"])
    chosen = pl.col("run_id").is_in(sorted(by_dict_ids))
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in tasks.filter(chosen).iter_rows(named=True):
        by_run[row["run_id"]].append(row)
    suite_rows = {row["run_id"]: row for row in figures.filter(chosen).iter_rows(named=True)}
    by_dict = {
        run_id: _dict_outcome(
            plans[run_id], by_run.get(run_id, []), suite_rows.get(run_id, {}), models.get(run_id)
        )
        for run_id in sorted(by_dict_ids)
    }
    columns = ColumnarRuns(
        runs=columnar.drop("line_ok"),
        tasks=_task_table(
            task_columns.filter(pl.col("run_id").is_in(columnar["run_id"].implode())), columnar
        ),
    )
    return Outcomes(columns, by_dict)
