"""The other answer a threshold decision may take at a near tie (D-17, E-28).

A pass decision whose gating value is within 1e-9 of the bar without equalling it, in the exact
decimals of the log and the suite, may be answered either way: a double cannot tell the two
apart. These give the answer a host may give besides the recomputed one, for the suite's
`passed` and for a task's `passed` under `passRule: "mean"`. Exact ties are ties: a float host
failing 0.7/0.8/0.9 against 0.8 disagrees.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from evalbatch.verify.compare import exact
from evalbatch.verify.run_context import RunContext


def _exact_gating(ctx: RunContext) -> dict[str, Fraction]:
    """Each task's gating mean in exact decimals (D-17): missing trials count 0 (D-12)."""
    sums: dict[str, Fraction] = defaultdict(Fraction)
    for trial in ctx.counted():
        sums[trial["task_id"]] += exact(trial["gating_score"])
    return {task: sums[task] / row["n"] for task, row in ctx.task_rows().items()}


def near_tie_answers(ctx: RunContext) -> list[bool]:
    """D-17: a gating aggregate within 1e-9 of the bar that does not equal it (in the exact
    decimals of the log and suite) may be decided either way."""
    gating = _exact_gating(ctx)
    if not ctx.summary["passed"] or not gating:
        return []
    aggregate = sum(gating.values(), Fraction(0)) / len(gating)
    return [False] if aggregate < exact(ctx.pass_score) else []


def task_near_tie_answers(ctx: RunContext, entry: dict[str, Any]) -> list[bool]:
    """D-17 for `passRule: "mean"`: a near tie that is not a tie may be decided either way."""
    if ctx.pass_rule != "mean" or not entry["passed"]:
        return []
    gating = _exact_gating(ctx)[entry["taskId"]]
    return [False] if gating < exact(ctx.pass_score) else []
