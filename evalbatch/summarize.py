"""Graded trials reduced to task entries and one EvalSummary per run (§3.5, §3.6, §4).

Sums of floats use `math.fsum` (correctly rounded, so independent of order and thread count) and
the trial statistics use exact rationals, as the RFC's reference does (§B).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import polars as pl

from evalbatch import stats
from evalbatch.options import GradeOptions

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
    task_order: list[str] = field(default_factory=list)  # no-suite: taskIds by first appearance


@dataclass
class RunOutcome:
    """One run's summary plus the rows it adds to the tables and problems."""

    summary: dict[str, Any]
    task_rows: list[dict[str, Any]]
    problems: list[tuple[str | None, int | None, str, str]]  # (run_id, sequence, code, detail)


def _mean(values: list[float], count: int) -> float:
    return math.fsum(values) / count if count else 0.0


def _efficiency(trials: list[dict[str, Any]]) -> dict[str, float]:
    n = len(trials)
    return {
        "toolCallCount": sum(t["tool_call_count"] for t in trials) / n,
        "modelCallCount": sum(t["model_call_count"] for t in trials) / n,
        "inputTokens": sum(t["input_tokens"] for t in trials) / n,
        "outputTokens": sum(t["output_tokens"] for t in trials) / n,
    }


def _trajectory_block(trial: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": trial["mode"],
        "matched": bool(trial["matched"]),
        "expectedCount": int(trial["expected_count"]),
        "observedCount": int(trial["observed_count"]),
        "matchedCount": int(trial["matched_count"]),
        "forbiddenCount": int(trial["forbidden_count"]),
    }


def _latency(trials: list[dict[str, Any]]) -> int | None:
    spans = [t["latency_ms"] for t in trials if t["latency_ms"] is not None]
    if not spans:
        return None
    return math.floor(math.fsum(spans) / len(spans) + 0.5)  # half up, only at the end


def _cost(trials: list[dict[str, Any]], source: str | None) -> Decimal | None:
    if source == "usage":
        return sum((Decimal(t["usage_cost_usd"] or 0) for t in trials), Decimal(0))
    if source == "host":
        return sum((Decimal(t["host_cost_usd"] or 0) for t in trials), Decimal(0))
    return None


def summarize_run(plan: RunPlan, trials: list[dict[str, Any]], options: GradeOptions) -> RunOutcome:
    """Build one run's EvalSummary from its placed trials (counted or not)."""
    doc = plan.doc or {}
    problems: list[tuple[str | None, int | None, str, str]] = []
    counted = [t for t in trials if t["counted"]]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for trial in sorted(counted, key=lambda t: t["trial_index"]):
        by_task[trial["task_id"]].append(trial)

    suite_trials = doc.get("trials")
    thresholds = doc.get("thresholds", {})
    pass_score = thresholds.get("passScore", options.default_pass_score)
    if plan.doc is not None:
        task_ids = [task["taskId"] for task in doc["tasks"]]
        tasks_by_id = {task["taskId"]: task for task in doc["tasks"]}
        cap = int(suite_trials["count"]) if suite_trials else 1
        k = int(suite_trials.get("k", cap)) if suite_trials else cap
        pass_rule = suite_trials.get("passRule", "all") if suite_trials else "all"
        trial_blocks = suite_trials is not None
    else:
        task_ids = plan.task_order
        tasks_by_id = {}
        cap = plan.trial_count
        k = plan.trial_count or 1
        pass_rule = "all"
        trial_blocks = plan.trial_count is not None or any(len(v) > 1 for v in by_task.values())

    if plan.has_cost_source:
        cost_source: str | None = "usage"
    elif any(t["host_cost_usd"] is not None for t in counted):
        cost_source = "host"
    else:
        cost_source = None

    entries: list[dict[str, Any]] = []
    task_rows: list[dict[str, Any]] = []
    gating_means: list[float] = []
    for task_pos, task_id in enumerate(task_ids):
        task_trials = by_task.get(task_id, [])
        spec = tasks_by_id.get(task_id, {})
        expected = spec.get("expected", {})
        has_fixtures = "toolResponses" in (spec.get("fixtures") or {})
        n = max(cap if cap is not None else len(task_trials), 1)
        missing = n - len(task_trials)
        if not task_trials:
            problems.append((plan.run_id, None, "task-missing", f"task {task_id}"))
        else:
            present = {t["trial_index"] for t in task_trials}
            for index in range(n):
                if index not in present:
                    problems.append(
                        (plan.run_id, None, "trial-missing", f"task {task_id}, trial {index}")
                    )
        scores = [t["score"] for t in task_trials]
        gatings = [t["gating_score"] for t in task_trials]
        c = sum(1 for t in task_trials if t["passed"])
        mean_score = _mean(scores, n)
        gating_mean = _mean(gatings, n)
        gating_means.append(gating_mean)
        if pass_rule == "any":
            task_passed = c >= 1
        elif pass_rule == "mean":
            task_passed = stats.at_least(gating_mean, pass_score)
        else:
            task_passed = c == n and missing == 0
        entry: dict[str, Any] = {"taskId": task_id, "score": mean_score, "passed": task_passed}
        cost = _cost(task_trials, cost_source)
        if cost is not None:
            entry["costUsd"] = float(cost)
        latency = _latency(task_trials)
        if latency is not None:
            entry["latencyMs"] = latency
        if "trajectory" in expected and task_trials:
            entry["trajectory"] = _trajectory_block(task_trials[-1])
        pass_at_k = pass_hat_k = None
        if trial_blocks:
            pass_at_k, pass_hat_k = stats.pass_at_k(n, c, k), stats.pass_hat_k(n, c, k)
            entry["trials"] = {
                "n": n,
                "passedCount": c,
                "meanScore": mean_score,
                "passAtK": float(pass_at_k),
                "passHatK": float(pass_hat_k),
            }
        if task_trials:
            entry["efficiency"] = _efficiency(task_trials)
        misses = sum(int(t["misses"] or 0) for t in task_trials)
        if has_fixtures:
            entry["fixtureMissCount"] = misses
        entries.append(entry)
        task_rows.append(
            {
                "run_id": plan.run_id,
                "suite_id": plan.suite_id,
                "suite_version": plan.suite_version,
                "task_pos": task_pos,
                "task_id": task_id,
                "score": mean_score,
                "gating_score": gating_mean,
                "passed": task_passed,
                "n": n,
                "observed_trials": len(task_trials),
                "passed_count": c,
                "pass_at_k": None if pass_at_k is None else float(pass_at_k),
                "pass_hat_k": None if pass_hat_k is None else float(pass_hat_k),
                "cost_usd": entry.get("costUsd"),
                "latency_ms": entry.get("latencyMs"),
                "trajectory_matched": entry.get("trajectory", {}).get("matched"),
                "fixture_miss_count": misses if has_fixtures else None,
            }
        )

    task_count = len(task_ids)
    aggregate = _mean([e["score"] for e in entries], task_count)
    passed_count = sum(1 for e in entries if e["passed"])
    total_cost = (
        None
        if cost_source is None
        else sum((Decimal(str(e["costUsd"])) for e in entries), Decimal(0))
    )
    # exact task costs again (the float in the entry is only for output)
    if cost_source is not None:
        total_cost = sum(
            (_cost(by_task.get(t, []), cost_source) or Decimal(0) for t in task_ids), Decimal(0)
        )
    suite_passed = task_count > 0 and stats.at_least(_mean(gating_means, task_count), pass_score)
    if "maxCostUsd" in thresholds:
        suite_passed = (
            suite_passed
            and total_cost is not None
            and stats.at_most(float(total_cost), thresholds["maxCostUsd"])
        )
    if "maxP95LatencyMs" in thresholds:
        latencies = [e["latencyMs"] for e in entries if "latencyMs" in e]
        suite_passed = (
            suite_passed
            and bool(latencies)
            and stats.at_most(stats.p95_nearest_rank(latencies), thresholds["maxP95LatencyMs"])
        )

    summary: dict[str, Any] = {
        "suiteId": plan.suite_id,
        "suiteVersion": plan.suite_version,
        "aggregateScore": aggregate,
        "passed": bool(suite_passed),
        "taskCount": task_count,
        "passedCount": passed_count,
    }
    if total_cost is not None:
        summary["totalCostUsd"] = float(total_cost)
    model_class = _model_class(counted)
    if model_class is not None:
        summary["evaluatedModelClass"] = model_class
    if trial_blocks and task_count:
        trial_stats: dict[str, Any] = {
            "k": k,
            "passAtK": _mean([e["trials"]["passAtK"] for e in entries], task_count),
            "passHatK": _mean([e["trials"]["passHatK"] for e in entries], task_count),
        }
        if task_count >= 2:
            trial_stats["scoreStderr"] = stats.clustered_stderr([e["score"] for e in entries])
        summary["trialStats"] = trial_stats
    summary["tasks"] = entries
    return RunOutcome(summary=summary, task_rows=task_rows, problems=problems)


def _model_class(counted: list[dict[str, Any]]) -> str | None:
    """E-14: the one model class every counted trial with a bracket carries, if any."""
    classes = {t["model_class"] for t in counted if t["has_bracket"]}
    if len(classes) == 1:
        (only,) = classes
        if only in MODEL_CLASSES:
            return only
    return None


#: the trial columns the reductions read
TRIAL_COLUMNS = (
    "run_id",
    "task_id",
    "trial_index",
    "counted",
    "score",
    "gating_score",
    "passed",
    "matched",
    "mode",
    "expected_count",
    "observed_count",
    "matched_count",
    "forbidden_count",
    "misses",
    "latency_ms",
    "usage_cost_usd",
    "host_cost_usd",
    "tool_call_count",
    "model_call_count",
    "input_tokens",
    "output_tokens",
    "has_bracket",
    "model_class",
)


def trials_by_run(trials: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """The placed trials as plain rows, grouped by run (small: one row per eval.scored)."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    frame = trials.sort("run_id", "scored_seq").select(TRIAL_COLUMNS)
    names = frame.columns
    for values in frame.iter_rows():
        row = dict(zip(names, values, strict=True))
        grouped[row["run_id"]].append(row)
    return grouped
