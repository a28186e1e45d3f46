"""Task entries and suite figures for all runs at once, as Polars reductions (§3.5, §3.6).

Float sums run over sorted values, so they never depend on row order or thread count; costs are
exact decimals; pass@k and pass^k come from a small table of exact rationals.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from evalbatch.grade.suite_tables import SuiteTables
from evalbatch.options import GradeOptions
from evalbatch.reduce import stats
from evalbatch.reduce.run_summaries import MODEL_CLASSES, RunPlan, tied_or

RUN_INFO_SCHEMA = {
    "run_id": pl.String,
    "suite_key": pl.String,
    "cap": pl.Int64,
    "k": pl.Int64,
    "pass_rule": pl.String,
    "blocks_declared": pl.Boolean,
    "pass_score": pl.Float64,
    "has_cost_source": pl.Boolean,
}


def run_info(plans: dict[str, RunPlan], options: GradeOptions) -> pl.DataFrame:
    """Per run: the trial count, k, pass rule and bar its tasks are reduced with."""
    rows = []
    for run_id, plan in plans.items():
        doc = plan.doc
        if doc is not None:
            trials = doc.get("trials")
            cap: int | None = int(trials["count"]) if trials else 1
            k = int(trials.get("k", cap)) if trials else cap
            rule = trials.get("passRule", "all") if trials else "all"
            pass_score = doc.get("thresholds", {}).get("passScore", options.default_pass_score)
            declared = trials is not None
        else:
            cap = plan.trial_count
            k = plan.trial_count or 1
            rule = "all"
            pass_score = options.default_pass_score
            declared = plan.trial_count is not None
        rows.append(
            {
                "run_id": run_id,
                "suite_key": plan.suite_key,
                "cap": cap,
                "k": k,
                "pass_rule": rule,
                "blocks_declared": declared,
                "pass_score": float(pass_score),
                "has_cost_source": plan.has_cost_source,
            }
        )
    return pl.DataFrame(rows, schema=RUN_INFO_SCHEMA)


def _run_tasks(info: pl.DataFrame, trials: pl.DataFrame, tables: SuiteTables) -> pl.DataFrame:
    """Every task of every run, in suite order (D-4: first appearance without a suite)."""
    suite_tasks = info.filter(pl.col("suite_key").is_not_null()).join(
        tables.tasks.select("suite_key", "task_pos", "task_id", "has_trajectory", "has_fixtures"),
        on="suite_key",
    )
    seen = (
        trials.join(info.filter(pl.col("suite_key").is_null()).select("run_id"), on="run_id")
        .filter(pl.col("task_id").is_not_null())
        .group_by("run_id", "task_id")
        .agg(pl.col("scored_seq").min().alias("first"))
        .with_columns(
            (pl.col("first").rank("ordinal").over("run_id") - 1).cast(pl.Int64).alias("task_pos"),
            pl.lit(False).alias("has_trajectory"),
            pl.lit(False).alias("has_fixtures"),
        )
        .join(info, on="run_id")
        .drop("first")
    )
    return pl.concat([suite_tasks, seen.select(suite_tasks.columns)])


def _pass_table(keys: pl.DataFrame) -> pl.DataFrame:
    """pass@k and pass^k for each distinct (n, c, k), from exact rationals, and both for every
    k from 1 to n (dashboards plot pass^k by k)."""
    rows = []
    for n, c, k in keys.unique().iter_rows():
        at_k, hat_k = stats.pass_by_k(n, c)
        rows.append(
            {
                "n": n,
                "c": c,
                "k": k,
                "pass_at_k": float(stats.pass_at_k(n, c, k)),
                "pass_hat_k": float(stats.pass_hat_k(n, c, k)),
                # element k-1 (E-52): a list a dashboard plots by k without parsing
                "pass_at_k_by_k": at_k,
                "pass_hat_k_by_k": hat_k,
            }
        )
    schema = pl.Schema(
        {
            "n": pl.Int64(),
            "c": pl.Int64(),
            "k": pl.Int64(),
            "pass_at_k": pl.Float64(),
            "pass_hat_k": pl.Float64(),
            "pass_at_k_by_k": pl.List(pl.Float64()),
            "pass_hat_k_by_k": pl.List(pl.Float64()),
        }
    )
    return pl.DataFrame(rows, schema=schema)


def _divide(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """IEEE division, row by row. Polars divides by a constant column as multiplication by its
    reciprocal, which can round differently (2.09 / 3 would come out one ulp low), and whether a
    column is constant depends on which runs share a batch."""

    def divide(s: Sequence[pl.Series]) -> pl.Series:
        with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 is NaN, read as null
            quotient = np.divide(s[0].cast(pl.Float64).to_numpy(), s[1].cast(pl.Float64).to_numpy())
        return pl.Series(quotient, nan_to_null=True)

    return pl.map_batches([numerator, denominator], divide, return_dtype=pl.Float64)


def _ordered_sum(values: pl.Expr) -> pl.Expr:
    """A float sum that depends only on the values: added one by one in sorted order. (A plain
    `sum` may split the additions differently by memory layout, so a shard graded in another
    process could round a mean differently: outputs must not depend on where they were made.)"""
    return values.sort().cum_sum().last().fill_null(0.0)


def reduce_tasks(trials: pl.DataFrame, info: pl.DataFrame, tables: SuiteTables) -> pl.DataFrame:
    """One row per (run, task): the §3.5 entry's figures and whether each optional block shows."""
    counted = trials.filter("counted")
    per_task = counted.group_by("run_id", "task_id").agg(
        pl.len().cast(pl.Int64).alias("observed"),
        pl.col("passed").sum().cast(pl.Int64).alias("c"),
        _ordered_sum(pl.col("score")).alias("score_sum"),
        _ordered_sum(pl.col("gating_score")).alias("gating_sum"),
        pl.col("trial_index").alias("indices"),
        *[
            pl.col(name).sort_by("trial_index").last().alias(f"last_{name}")
            for name in (
                "mode",
                "matched",
                "expected_count",
                "observed_count",
                "matched_count",
                "forbidden_count",
            )
        ],
        pl.col("tool_call_count").sum().alias("tool_calls"),
        pl.col("model_call_count").sum().alias("model_calls"),
        pl.col("input_tokens").sum().alias("input_tokens"),
        pl.col("output_tokens").sum().alias("output_tokens"),
        _ordered_sum(pl.col("latency_ms").drop_nulls()).alias("latency_sum"),
        pl.col("latency_ms").count().alias("latency_count"),
        pl.col("usage_cost_usd").sum().alias("usage_cost"),
        pl.col("host_cost_usd").sum().alias("host_cost"),
        pl.col("misses").fill_null(0).sum().cast(pl.Int64).alias("misses"),
    )
    host_cost_runs = (
        counted.filter(pl.col("host_cost_usd").is_not_null())
        .select("run_id")
        .unique()
        .with_columns(pl.lit(True).alias("has_host_cost"))
    )
    tasks = (
        _run_tasks(info, trials, tables)
        .join(per_task, on=["run_id", "task_id"], how="left")
        .join(host_cost_runs, on="run_id", how="left")
        .with_columns(
            pl.col("observed", "c", "misses").fill_null(0),
            pl.col("score_sum", "gating_sum").fill_null(0.0),
        )
        .with_columns(
            pl.coalesce("cap", pl.max_horizontal("observed", pl.lit(1))).alias("n"),
            pl.when(pl.col("has_cost_source"))
            .then(pl.lit("usage"))
            .when(pl.col("has_host_cost").fill_null(False))
            .then(pl.lit("host"))
            .alias("cost_source"),
            (pl.col("blocks_declared") | (pl.col("observed").max().over("run_id") > 1)).alias(
                "trial_blocks"
            ),
        )
        .with_columns(
            _divide(pl.col("score_sum"), pl.col("n")).alias("mean_score"),
            _divide(pl.col("gating_sum"), pl.col("n")).alias("gating_mean"),
        )
    )
    tasks = tasks.join(
        _pass_table(tasks.select("n", "c", "k")), on=["n", "c", "k"], how="left"
    ).with_columns(
        pl.when(pl.col("pass_rule") == "any")
        .then(pl.col("c") >= 1)
        .when(pl.col("pass_rule") == "mean")
        .then(tied_or("ge", pl.col("gating_mean"), pl.col("pass_score")))
        .otherwise(pl.col("c") == pl.col("n"))
        .alias("passed"),
        pl.when(pl.col("latency_count") > 0)
        .then(
            (_divide(pl.col("latency_sum"), pl.col("latency_count")) + 0.5).floor().cast(pl.Int64)
        )
        .alias("latency_ms"),
        pl.when(pl.col("cost_source") == "usage")
        .then(pl.col("usage_cost").fill_null(0))
        .when(pl.col("cost_source") == "host")
        .then(pl.col("host_cost").fill_null(0))
        .alias("cost"),
    )
    return tasks.sort("run_id", "task_pos")


def _agreed(trials: pl.DataFrame, column: str) -> dict[str, str]:
    """Per run, the one value of `column` that every counted trial with a bracket carries (a
    bracket without one breaks agreement); runs without such a value are left out."""
    bracketed = trials.filter(pl.col("counted") & pl.col("has_bracket"))
    agreed = (
        bracketed.group_by("run_id")
        .agg(
            pl.col(column).n_unique().alias("values"),
            pl.col(column).null_count().alias("missing"),
            pl.col(column).first().alias("value"),
        )
        .filter((pl.col("values") == 1) & (pl.col("missing") == 0))
    )
    return dict(agreed.select("run_id", "value").iter_rows())


def model_classes(trials: pl.DataFrame) -> dict[str, str]:
    """E-14: runs whose counted trials with a bracket all carry one model class of the enum."""
    return {
        run: model
        for run, model in _agreed(trials, "model_class").items()
        if model in MODEL_CLASSES
    }


def target_agents(trials: pl.DataFrame) -> dict[str, str]:
    """Runs whose counted trials with a bracket all name one agent: the run's target agent (the
    bracket's agentId, §2.1), by the rule E-14 applies to the model class."""
    return _agreed(trials, "target_agent_id")


#: the runs table's errored columns of a run none of whose trials errored (E-147)
NO_ERRORED: dict[str, int | float | None] = {"errored_trials": 0, "mean_without_errored": None}


def errored_figures(trials: pl.DataFrame) -> dict[str, dict[str, int | float | None]]:
    """Per run with an errored counted trial (E-147): how many, and the aggregate score as
    Inspect counts it, those trials left out: the mean, over the tasks with another counted
    trial, of their other trials' mean score (sums in sorted order, as the aggregate's)."""
    counted = trials.filter("counted")
    runs = counted.filter("errored").group_by("run_id").agg(pl.len().alias("errored_trials"))
    if runs.is_empty():
        return {}
    per_task = (
        counted.filter(~pl.col("errored"))
        .join(runs.select("run_id"), on="run_id")
        .group_by("run_id", "task_id")
        .agg(_ordered_sum(pl.col("score")).alias("total"), pl.len().alias("trials"))
        .with_columns(_divide(pl.col("total"), pl.col("trials")).alias("mean"))
    )
    means = per_task.group_by("run_id").agg(
        _ordered_sum(pl.col("mean")).alias("total"), pl.len().alias("tasks")
    )
    figures = runs.join(means, on="run_id", how="left").with_columns(
        _divide(pl.col("total"), pl.col("tasks")).alias("mean_without_errored")
    )
    return {
        row["run_id"]: {
            "errored_trials": row["errored_trials"],
            "mean_without_errored": row["mean_without_errored"],
        }
        for row in figures.iter_rows(named=True)
    }


def missing_trial_problems(tasks: pl.DataFrame) -> list[tuple[str, None, str, str]]:
    """D-12/D-13: `task-missing` for tasks with no kept trial, `trial-missing` per absent index."""
    problems: list[tuple[str, None, str, str]] = [
        (run, None, "task-missing", f"task {task}")
        for run, task in tasks.filter(pl.col("observed") == 0)
        .select("run_id", "task_id")
        .iter_rows()
    ]
    short = tasks.filter((pl.col("observed") > 0) & (pl.col("observed") < pl.col("n")))
    for run, task, n, indices in short.select("run_id", "task_id", "n", "indices").iter_rows():
        present = set(indices)
        problems += [
            (run, None, "trial-missing", f"task {task}, trial {index}")
            for index in range(n)
            if index not in present
        ]
    return problems


def suite_figures(tasks: pl.DataFrame) -> pl.DataFrame:
    """Per run: aggregate score, passed count, gating aggregate, total cost, p95 latency, trial
    statistics (§3.6)."""
    figures = tasks.group_by("run_id").agg(
        pl.len().alias("task_count"),
        _ordered_sum(pl.col("mean_score")).alias("score_total"),
        pl.col("passed").sum().cast(pl.Int64).alias("passed_count"),
        _ordered_sum(pl.col("gating_mean")).alias("gating_total"),
        pl.col("cost").sum().alias("total_cost"),
        pl.col("latency_ms").drop_nulls().sort().alias("latencies"),
        _ordered_sum(pl.col("pass_at_k")).alias("pass_at_k_total"),
        _ordered_sum(pl.col("pass_hat_k")).alias("pass_hat_k_total"),
        pl.col("mean_score").sort().alias("means"),
    )
    return figures.with_columns(
        _divide(pl.col("score_total"), pl.col("task_count")).alias("aggregate"),
        _divide(pl.col("gating_total"), pl.col("task_count")).alias("gating_aggregate"),
        _divide(pl.col("pass_at_k_total"), pl.col("task_count")).alias("pass_at_k"),
        _divide(pl.col("pass_hat_k_total"), pl.col("task_count")).alias("pass_hat_k"),
    )
