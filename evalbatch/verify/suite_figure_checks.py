"""The suite figures a host records twice, on `eval.completed` and in its EvalSummary:
`aggregateScore`, `passed`, `taskCount` and `passedCount` (§3.5, §3.6).

Both places are checked the same way, so a host that decided the suite on output scores (D-10),
or counted trials as tasks (RFC 0244 R1), is named the same on either; a near tie of the gating
aggregate may be answered either way (D-17).
"""

from __future__ import annotations

from typing import Any

from evalbatch.verify.causes import suite_passed_cause, task_count_cause
from evalbatch.verify.compare import MISSING, Checker, field_of
from evalbatch.verify.near_ties import near_tie_answers
from evalbatch.verify.run_context import RunContext


def check_suite_fields(check: Checker, ctx: RunContext, prefix: str, doc: Any) -> None:
    """aggregateScore, passed, taskCount, passedCount: on eval.completed and on a summary.

    Without the run's suite (D-4) the bar and the pass rule are unknown, so `passed` and
    `passedCount` are not compared (E-29): only what the log decides alone is. An Inspect log's
    eval.completed holds Inspect's own figures (E-148): a field Inspect does not write is not
    compared, and its mean leaves errored samples out, so it is compared with the recomputed
    mean that does too (E-147).
    """
    summary = ctx.summary
    seq = ctx.run["end_seq"] if prefix == "eval.completed" else None
    inspect = prefix == "eval.completed" and ctx.from_inspect

    def unwritten(name: str) -> bool:
        if inspect and field_of(doc, name) is MISSING:
            check.not_written[f"{prefix}.{name}"] += 1
            return True
        return False

    aggregate = summary["aggregateScore"]
    errored = ctx.columns.get("errored_trials") or 0
    if inspect and errored and ctx.columns.get("mean_without_errored") is not None:
        aggregate = ctx.columns["mean_without_errored"]
        check.errored_left_out = errored
    if not unwritten("aggregateScore"):
        check.check(
            f"{prefix}.aggregateScore",
            field_of(doc, "aggregateScore"),
            aggregate,
            ("§3.6", "errored-left-out" if aggregate is not summary["aggregateScore"] else None),
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
    if not unwritten("passed"):
        check.check(
            f"{prefix}.passed",
            host_passed,
            summary["passed"],
            lambda: suite_passed_cause(ctx, host_passed),
            sequence=seq,
            also_accept=near_tie_answers(ctx),
        )
    if not unwritten("passedCount"):
        check.check(
            f"{prefix}.passedCount",
            field_of(doc, "passedCount"),
            summary["passedCount"],
            ("§3.5", None),
            sequence=seq,
        )
