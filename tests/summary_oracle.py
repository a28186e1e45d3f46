"""An independent EvalSummary, written field by field as dicts: the checker the columnar summaries
are compared with (E-87, E-131).

`evalbatch/reduce/run_summaries.py` builds every line, row and check from one field table; this is
the hand-written layout that table replaced, kept here so the table is still checked against
the contract's fields one by one (`tests/test_columnar_summaries.py`). A field added to the
table is added here too.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import polars as pl

from evalbatch.reduce import stats
from evalbatch.reduce.run_summaries import RunOutcome, RunPlan


def entry(row: dict[str, Any]) -> dict[str, Any]:
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


def task_row(plan: RunPlan, row: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The tasks-table row of a task, as `_task_table` writes it."""
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


def outcome(
    plan: RunPlan,
    rows: list[dict[str, Any]],
    figure: dict[str, Any],
    model_class: str | None,
) -> RunOutcome:
    """One run's EvalSummary and task rows, field by field as the contract defines them."""
    entries = [entry(row) for row in rows]
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
        task_rows=[task_row(plan, row, e) for row, e in zip(rows, entries, strict=True)],
    )


def outcomes(
    plans: dict[str, RunPlan], tasks: pl.DataFrame, figures: pl.DataFrame, models: dict[str, str]
) -> dict[str, RunOutcome]:
    """Every run's outcome from the reduced task rows and suite figures `build_outcomes` reads."""
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in tasks.iter_rows(named=True):
        by_run[row["run_id"]].append(row)
    suite_rows = {row["run_id"]: row for row in figures.iter_rows(named=True)}
    return {
        run_id: outcome(
            plans[run_id], by_run.get(run_id, []), suite_rows.get(run_id, {}), models.get(run_id)
        )
        for run_id in sorted(plans)
    }
