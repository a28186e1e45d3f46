"""The suite figures a host records twice, on `eval.completed` and in its EvalSummary:
`aggregateScore`, `passed`, `taskCount` and `passedCount` (§3.5, §3.6).

Both places are checked the same way, so a host that decided the suite on output scores (D-10),
or counted trials as tasks (RFC 0244 R1), is named the same on either; a near tie of the gating
aggregate may be answered either way (D-17). An Inspect log's eval.completed has no
aggregateScore where Inspect reports no mean to hold the recomputed one to: that is not compared
(E-117).
"""

from __future__ import annotations

from typing import Any

from evalbatch.inputs.inspect_logs import is_inspect_suite
from evalbatch.verify.causes import suite_passed_cause, task_count_cause
from evalbatch.verify.compare import MISSING, Checker, field_of
from evalbatch.verify.near_ties import near_tie_answers
from evalbatch.verify.run_context import RunContext


def check_suite_fields(check: Checker, ctx: RunContext, prefix: str, doc: Any) -> None:
    """aggregateScore, passed, taskCount, passedCount: on eval.completed and on a summary.

    Without the run's suite (D-4) the bar and the pass rule are unknown, so `passed` and
    `passedCount` are not compared (E-29): only what the log decides alone is.
    """
    summary = ctx.summary
    seq = ctx.run["end_seq"] if prefix == "eval.completed" else None
    host_score = field_of(doc, "aggregateScore")
    if not (prefix == "eval.completed" and host_score is MISSING and _inspect_record(ctx, doc)):
        check.check(
            f"{prefix}.aggregateScore",
            host_score,
            summary["aggregateScore"],
            ("§3.6", None),
            sequence=seq,
        )
    host_count = field_of(doc, "taskCount")
    check.check(
        f"{prefix}.taskCount",
        host_count,
        summary["taskCount"],
        lambda: task_count_cause(ctx, host_count),
        sequence=seq,
    )
    if ctx.doc is None:
        return
    host_passed = field_of(doc, "passed")
    check.check(
        f"{prefix}.passed",
        host_passed,
        summary["passed"],
        lambda: suite_passed_cause(ctx, host_passed),
        sequence=seq,
        also_accept=near_tie_answers(ctx),
    )
    check.check(
        f"{prefix}.passedCount",
        field_of(doc, "passedCount"),
        summary["passedCount"],
        ("§3.5", None),
        sequence=seq,
    )


def _inspect_record(ctx: RunContext, doc: Any) -> bool:
    """Whether an eval.completed is one `ingest` wrote for an Inspect log (E-111): the run's suite
    is an Inspect task's, and it has neither `passed` nor `passedCount`, which Inspect never
    records (an OpenWOP host must). Its absent aggregateScore means Inspect reported no mean of
    the scorer used (E-117): there is nothing to compare, which is not a disagreement."""
    return (
        is_inspect_suite(ctx.plan.suite_id)
        and field_of(doc, "passed") is MISSING
        and field_of(doc, "passedCount") is MISSING
    )
