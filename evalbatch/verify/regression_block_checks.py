"""A host summary's `regression` block against the recomputation of both runs (RFC 0244 §F, §5).

When the baseline a candidate names is in the input, both are recomputed and paired by taskId as
`evalbatch regress` pairs them (`reduce.paired_verdict.paired_tasks`): the host's `pairedTaskCount`
must be the number of tasks present in both runs, and its `scoreDelta` the candidate's
aggregateScore less the baseline's. Which test a host ran, at which alpha, stays its own, so its
verdict is not recomputed; only the degenerate case is witnessable (RFC 0244 UQ 5): when every
paired task has the same gating score on both sides (identical runs, D-19), the verdict must not
be `improved` or `regressed`.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from evalbatch.outputs.output_format import TASK_SCHEMA
from evalbatch.reduce import paired_verdict
from evalbatch.verify.compare import MISSING, Checker, field_of
from evalbatch.verify.run_context import RunContext


def _tasks(ctx: RunContext) -> pl.DataFrame:
    return pl.DataFrame(ctx.outcome.task_rows, schema=TASK_SCHEMA)


def identical(ctx: RunContext) -> bool:
    """Whether a candidate and its recomputed baseline pair at least one task and every paired
    task has the same gating score on both sides (D-19): runs no method may tell apart."""
    if ctx.baseline is None:
        return False
    paired = paired_verdict.paired_tasks(_tasks(ctx.baseline), _tasks(ctx))
    return paired.height > 0 and not paired_verdict.paired_differences(paired, "gating_score").any()


def check_regression(check: Checker, ctx: RunContext, doc: dict[str, Any]) -> None:
    """The host's regression block, when it has one and its baseline is recomputed too."""
    block = field_of(doc, "regression")
    base = ctx.baseline
    if not isinstance(block, dict) or base is None:
        return
    check.check(
        "summary.regression.baselineRunId",
        field_of(block, "baselineRunId"),
        base.run_id,
        ("§5", None),
        text=True,
    )
    paired = paired_verdict.paired_tasks(_tasks(base), _tasks(ctx))
    check.check(
        "summary.regression.pairedTaskCount",
        field_of(block, "pairedTaskCount"),
        paired.height,
        ("RFC 0244 §F", None),
    )
    delta = ctx.summary["aggregateScore"] - base.summary["aggregateScore"]
    check.check(
        "summary.regression.scoreDelta",
        field_of(block, "scoreDelta"),
        max(-1.0, min(1.0, delta)),
        ("§5", None),
        abs_tol=1e-12,
    )
    verdict = field_of(block, "verdict")
    if identical(ctx) and verdict is not MISSING:
        check.check(
            "summary.regression.verdict",
            verdict,
            "unchanged",
            ("RFC 0244 §F", "identical-runs"),
            also_accept=("inconclusive",),
            text=True,
        )
