"""Which rule a finding names (E-27): the rule and reason code that decide a recomputed value,
and the host mistakes verify recognises by name.

A finding cites the specific rule where verify can tell: D-9 for a trial that failed closed on a
fixture miss, D-11 for a host value the grade could not use, §3.2 with the trajectory's reason
code, D-10 (`output-score`) for a pass decided on output scores instead of gating ones, R1
(`counted-trials`) for a `taskCount` that counted trials, §3.5 (`pass-rate-power`) for pass@k or
pass^k worked out from the pass rate; otherwise the rule defining the field. Causes are worked
out only when a value disagrees, so a caller may pass one as a function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evalbatch.grade import trial_grading
from evalbatch.reduce import stats
from evalbatch.verify.compare import Cause, is_number, same
from evalbatch.verify.run_context import RunContext

#: a trial failed closed on a fixture miss (D-9)
FAILED_CLOSED: Cause = (trial_grading.FIXTURE_MISS_RULE, trial_grading.FIXTURE_MISS_REASON)


def trajectory_cause(trial: Mapping[str, Any]) -> Cause:
    """The grader's reason code for an unmatched trajectory, and the rule behind it."""
    reason = trial.get("trajectory_reason")
    return trial_grading.trajectory_rule(reason), reason


def trial_cause(trial: Mapping[str, Any], field_name: str) -> Cause:
    """The rule that decides a trial's recomputed score or passed (§3.4, E-27)."""
    if trial["failed_closed"]:
        return FAILED_CLOSED
    if trial["score_invalid"]:
        return "D-11", "score-invalid"
    if field_name == "passed" and trial["passed_invalid"]:
        return "D-11", "passed-invalid"
    if trial["has_trajectory"] and not trial["matched"]:
        return trajectory_cause(trial)
    return "§3.4", None


def task_count_cause(ctx: RunContext, host: Any) -> Cause:
    """RFC 0244 R1: a consumer counting eval.scored events miscounts tasks once trials exist."""
    if is_number(host) and host == len(ctx.scored_in_span()):
        return "R1", "counted-trials"
    return "§3.6", None


def suite_passed_cause(ctx: RunContext, host_passed: Any) -> Cause:
    """D-10 when the host decided on the output aggregate instead of the gating one."""
    summary = ctx.summary
    on_output = (
        bool(summary["tasks"])
        and stats.at_least(summary["aggregateScore"], ctx.pass_score)
        and _bars_hold(ctx)
    )
    if host_passed is on_output and on_output != summary["passed"]:
        return "D-10", "output-score"
    return "§3.6", None


def _bars_hold(ctx: RunContext) -> bool:
    """The suite's cost and p95 latency bars (§3.6), as the recomputed summary reports them."""
    thresholds = (ctx.doc or {}).get("thresholds", {})
    ok = True
    if "maxCostUsd" in thresholds:
        total = ctx.summary.get("totalCostUsd")
        ok = ok and total is not None and stats.at_most(total, thresholds["maxCostUsd"])
    if "maxP95LatencyMs" in thresholds:
        latencies = [t["latencyMs"] for t in ctx.summary["tasks"] if "latencyMs" in t]
        ok = (
            ok
            and bool(latencies)
            and stats.at_most(stats.p95_nearest_rank(latencies), thresholds["maxP95LatencyMs"])
        )
    return ok


def pass_rate_cause(host: Any, naive: float) -> Callable[[], Cause]:
    """Why a passAtK/passHatK differs, worked out only when it does: `pass-rate-power` when the
    host's value is the naive figure from per-task pass rates (§3.5)."""
    return lambda: ("§3.5", "pass-rate-power" if same(host, naive) else None)


def task_passed_cause(ctx: RunContext, entry: dict[str, Any], host_passed: Any) -> Cause:
    """`passRule: "mean"` reads the gating mean (D-10); `all`/`any` count passed trials (§3.5)."""
    if ctx.pass_rule != "mean":
        return "§3.5", None
    on_output = stats.at_least(entry["score"], ctx.pass_score)
    if host_passed is on_output and on_output != entry["passed"]:
        return "D-10", "output-score"
    return "D-10", None
