"""A host's EvalSummary against the recomputed one (§4, §3.5, §3.6): content-free and valid
under the closed schema (RFC 0244 §H), then every field, task by task and block by block.

A missing or extra optional block (`trialStats`, a task's `trajectory`, `trials`,
`efficiency`) is a finding too. Without the run's suite (D-4) the bar, the pass rule, `k`,
trajectories and fixtures are unknown, so only what the log decides alone is compared (E-29).
Two mistakes are named where the host's figure is the one they produce: pass@k or pass^k from
the pass rate to the power k (`pass-rate-power`, §3.5), and judge calls counted in the
efficiency means (`judge-calls-counted`, D-6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalbatch.verify.audit_report import Finding
from evalbatch.verify.causes import (
    FAILED_CLOSED,
    pass_rate_cause,
    task_passed_cause,
    trajectory_cause,
)
from evalbatch.verify.compare import (
    INVALID_TEXT,
    MISSING,
    VALID_TEXT,
    Cause,
    Checker,
    field_of,
    same,
)
from evalbatch.verify.host_summaries import host_summary_faults
from evalbatch.verify.near_ties import task_near_tie_answers
from evalbatch.verify.regression_block_checks import check_regression
from evalbatch.verify.run_context import RunContext
from evalbatch.verify.suite_figure_checks import check_suite_fields


def check_summary(check: Checker, ctx: RunContext, doc: Any) -> None:
    """A host EvalSummary: content-free and schema-valid (§4, RFC 0244 §H), then every field."""
    faults = [f for f in host_summary_faults(doc) if f.severity == "error"]
    check.compared["summary.schema"] += 1
    for fault in faults:
        rule = "RFC 0244 §H" if "unknown member" in fault.message else "§4"
        check.findings.append(
            Finding(
                run_id=ctx.run_id,
                field="summary.schema",
                host=INVALID_TEXT,
                recomputed=VALID_TEXT,
                rule=rule,
                reason=f"{fault.path}: {fault.message}",
            )
        )
    if not isinstance(doc, dict):
        return
    summary = ctx.summary
    for name in ("suiteId", "suiteVersion"):
        check.check(f"summary.{name}", field_of(doc, name), summary[name], ("§4", None), text=True)
    check_suite_fields(check, ctx, "summary", doc)
    for name, rule in (("totalCostUsd", "D-14"), ("evaluatedModelClass", "§3.6")):
        check.check(
            f"summary.{name}",
            field_of(doc, name),
            summary.get(name, MISSING),
            (rule, None),
            text=name == "evaluatedModelClass",
        )
    check_regression(check, ctx, doc)
    host_stats, stats_ = field_of(doc, "trialStats"), summary.get("trialStats")
    if ctx.doc is not None:  # without the suite, k and the trial count are unknown (E-29)
        present = check.present(
            "summary.trialStats", host_stats is not MISSING, stats_ is not None, "§3.6"
        )
        if present and stats_ is not None:
            _check_trial_stats(check, ctx, host_stats, stats_)
    host_tasks = field_of(doc, "tasks")
    by_id: dict[str, Any] = {}
    if isinstance(host_tasks, list):
        for task in host_tasks:
            task_id = field_of(task, "taskId")
            if isinstance(task_id, str) and task_id not in by_id:
                by_id[task_id] = task
    rows = ctx.task_rows()
    detail = _task_detail(ctx)
    for entry in summary["tasks"]:
        task_id = entry["taskId"]
        host_entry = by_id.pop(task_id, MISSING)
        if check.present("summary.tasks", host_entry is not MISSING, True, "§4", task=task_id):
            _check_task(check, ctx, host_entry, entry, rows[task_id], detail.get(task_id))
    for task_id in by_id:
        check.present("summary.tasks", True, False, "D-13", task=task_id)


def _check_trial_stats(
    check: Checker, ctx: RunContext, host: Any, recomputed: dict[str, Any]
) -> None:
    rows = list(ctx.task_rows().values())
    k = recomputed["k"]
    check.check("summary.trialStats.k", field_of(host, "k"), k, ("§3.5", None))
    naive_hat = sum(_power(r["n"], r["passed_count"], k) for r in rows) / len(rows)
    naive_at = sum(1 - (1 - r["passed_count"] / r["n"]) ** k for r in rows) / len(rows)
    for name, naive in (("passAtK", naive_at), ("passHatK", naive_hat)):
        value = field_of(host, name)
        check.check(
            f"summary.trialStats.{name}",
            value,
            recomputed[name],
            pass_rate_cause(value, naive),
        )
    check.check(
        "summary.trialStats.scoreStderr",
        field_of(host, "scoreStderr"),
        recomputed.get("scoreStderr", MISSING),
        ("§3.6", None),
    )


def _check_task(
    check: Checker,
    ctx: RunContext,
    host: Any,
    entry: dict[str, Any],
    row: dict[str, Any],
    detail: dict[str, Any] | None,
) -> None:
    """One task entry of a host summary against the recomputed one (§3.5, §4)."""
    task_id = entry["taskId"]
    where = {"task": task_id}
    failed_closed = bool(detail and detail["failed_closed"])

    def score_cause() -> Cause:
        if failed_closed:
            return FAILED_CLOSED
        if row["observed_trials"] < row["n"]:
            return (
                ("D-13", "task-missing")
                if row["observed_trials"] == 0
                else ("D-12", "trial-missing")
            )
        return "§3.5", None

    check.check(
        "summary.tasks.score", field_of(host, "score"), entry["score"], score_cause, **where
    )
    check.check(
        "summary.tasks.costUsd",
        field_of(host, "costUsd"),
        entry.get("costUsd", MISSING),
        ("D-14", None),
        **where,
    )
    check.check(
        "summary.tasks.latencyMs",
        field_of(host, "latencyMs"),
        entry.get("latencyMs", MISSING),
        ("§3.5", None),
        abs_tol=1.0,  # E-28: a mean rounded to an integer; hosts may round either way
        **where,
    )
    _check_efficiency(check, host, entry, detail, where)
    if ctx.doc is None:
        return  # E-29: the pass rule, bar, trials, trajectory and fixtures are the suite's
    host_passed = field_of(host, "passed")
    check.check(
        "summary.tasks.passed",
        host_passed,
        entry["passed"],
        lambda: task_passed_cause(ctx, entry, host_passed),
        also_accept=task_near_tie_answers(ctx, entry),
        **where,
    )
    _check_block(
        check,
        "trajectory",
        host,
        entry,
        "§3.2",
        where,
        cause=lambda: trajectory_cause(detail["last"]) if detail else ("§3.2", None),
    )
    _check_trials_block(check, ctx, host, entry, score_cause, where)
    check.check(
        "summary.tasks.fixtureMissCount",
        field_of(host, "fixtureMissCount"),
        entry.get("fixtureMissCount", MISSING),
        ("§3.3", None),
        **where,
    )


def _check_trials_block(
    check: Checker,
    ctx: RunContext,
    host: Any,
    entry: dict[str, Any],
    score_cause: Callable[[], Cause],
    where: dict[str, Any],
) -> None:
    """A task's `trials` block (§3.5, RFC 0244 §B). pass@k and pass^k are exact-rational
    formulas; a host that used the pass rate to the power k is named (`pass-rate-power`)."""
    block, host_block = entry.get("trials"), field_of(host, "trials")
    present = check.present(
        "summary.tasks.trials", host_block is not MISSING, block is not None, "§3.5", **where
    )
    if not present or block is None:
        return
    n, c, k = block["n"], block["passedCount"], ctx.summary["trialStats"]["k"]
    naive = {"passAtK": 1 - (1 - c / n) ** k, "passHatK": _power(n, c, k)}
    for name, value in block.items():
        host_value = field_of(host_block, name)
        cause: Cause | Callable[[], Cause] = ("§3.5", None)
        if name in naive:
            reason = "pass-rate-power" if same(host_value, naive[name]) else None
            cause = ("§3.5", reason)
        elif name == "meanScore":
            cause = score_cause
        check.check(f"summary.tasks.trials.{name}", host_value, value, cause, **where)


_JUDGE_FIELD = {"modelCallCount": 0, "inputTokens": 1, "outputTokens": 2}


def _check_efficiency(
    check: Checker,
    host: Any,
    entry: dict[str, Any],
    detail: dict[str, Any] | None,
    where: dict[str, Any],
) -> None:
    """A task's `efficiency` block (RFC 0244 §C): judge calls are excluded (D-6); a host whose
    figure equals ours plus the judge calls is named (`judge-calls-counted`)."""
    block, host_block = entry.get("efficiency"), field_of(host, "efficiency")
    present = check.present(
        "summary.tasks.efficiency", host_block is not MISSING, block is not None, "§3.5", **where
    )
    if not present or block is None:
        return
    for name, value in block.items():
        host_value = field_of(host_block, name)
        slot = _JUDGE_FIELD.get(name)
        cause: Cause = ("§3.5", None)
        if slot is not None and detail and detail["judge"][0]:
            with_judge = value + detail["judge"][slot] / detail["observed"]
            if same(host_value, with_judge):
                cause = ("D-6", "judge-calls-counted")
        check.check(f"summary.tasks.efficiency.{name}", host_value, value, cause, **where)


def _check_block(
    check: Checker,
    name: str,
    host: Any,
    entry: dict[str, Any],
    rule: str,
    where: dict[str, Any],
    cause: Callable[[], Cause],
) -> None:
    block, host_block = entry.get(name), field_of(host, name)
    if not check.present(
        f"summary.tasks.{name}", host_block is not MISSING, block is not None, rule, **where
    ):
        return
    for key, value in (block or {}).items():
        check.check(
            f"summary.tasks.{name}.{key}",
            field_of(host_block, key),
            value,
            cause if key == "matched" else (rule, None),
            text=key == "mode",
            **where,
        )


def _task_detail(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """Per task: the last counted trial (its trajectory block), fail-closed trials, and the
    efficiency means with judge calls counted in (to recognise D-6 mistakes)."""
    detail: dict[str, dict[str, Any]] = {}
    for trial in sorted(ctx.counted(), key=lambda t: t["trial_index"]):
        entry = detail.setdefault(
            trial["task_id"],
            {"last": trial, "failed_closed": False, "judge": [0, 0.0, 0.0], "observed": 0},
        )
        entry["last"] = trial
        entry["failed_closed"] |= bool(trial["failed_closed"])
        entry["observed"] += 1
        calls, tokens_in, tokens_out = ctx.host.judge.get(
            (ctx.run_id, trial["segment_no"]), (0, 0.0, 0.0)
        )
        entry["judge"][0] += calls
        entry["judge"][1] += tokens_in
        entry["judge"][2] += tokens_out
    return detail


def _power(n: int, c: int, k: int) -> float:
    return (c / n) ** k
