"""The host's eval events against the recomputation: `eval.started`, each `eval.scored` and
`eval.completed`, and the stream rules RFC 0244 §B and §E set for them.

Per counted trial, `score` and `passed` (§3.4); per run, `eval.started.taskCount` (R1) and
`trialCount`, the suite figures on `eval.completed` (§3.6) and that it is written once (E-113),
and that the recomputed summary is one `run` would write (§4, E-112). The stream: each suite
task has `trials.count` counted `eval.scored` (`eval.scored.count`), a left-out `eval.scored`
(`trial-duplicate`, `trial-extra`, `task-unknown`) is a finding, `trialIndex` is present when the
task has more than one trial, `scoreLabel` matches its pattern and `evaluatorType` its enum
(neither value is ever shown) (E-27).
"""

from __future__ import annotations

import math
from typing import Any

from evalbatch.problems import EVALUATOR_TYPES, MAX_COST_USD, MAX_LATENCY_MS, SCORE_LABEL
from evalbatch.reduce.run_summaries import summary_faults
from evalbatch.verify.causes import task_count_cause, trial_cause
from evalbatch.verify.compare import (
    INVALID_TEXT,
    MISSING,
    PRESENT_TEXT,
    SHOWABLE,
    VALID_TEXT,
    Checker,
    field_of,
    is_number,
)
from evalbatch.verify.run_context import RunContext
from evalbatch.verify.suite_figure_checks import check_suite_fields


def check_started(check: Checker, ctx: RunContext) -> None:
    """eval.started: taskCount (RFC 0244 R1) and trialCount (RFC 0244 §B)."""
    seq = ctx.run["start_seq"]
    payload = ctx.host.payloads.get((ctx.run_id, seq))
    check.check(
        "eval.started.taskCount",
        field_of(payload, "taskCount"),
        ctx.summary["taskCount"],
        lambda: task_count_cause(ctx, field_of(payload, "taskCount")),
        sequence=seq,
    )
    if ctx.doc is None:
        return  # a no-suite run's trialCount is what defines its trials (D-4)
    count = ctx.trial_count or 1
    host = field_of(payload, "trialCount")
    if count > 1 or host is not MISSING:
        check.check("eval.started.trialCount", host, count, ("RFC 0244 §B", None), sequence=seq)


def check_trials(check: Checker, ctx: RunContext) -> None:
    """Each eval.scored: score and passed per trial (§3.4), and the trial stream (RFC 0244 §B)."""
    tasks = ctx.task_rows()
    for trial in ctx.trials:
        seq, task, index = trial["scored_seq"], trial["task_id"], trial["trial_index"]
        payload = ctx.host.payloads.get((ctx.run_id, seq))
        where = {"task": task, "trial": index, "sequence": seq}
        if not trial["counted"]:
            reason = trial["left_out"]
            if reason == "task-unknown":
                check.check(
                    "eval.scored.taskId", task, MISSING, ("D-13", reason), text=True, **where
                )
            else:
                check.check(
                    "eval.scored.trialIndex", index, MISSING, ("RFC 0244 §B", reason), **where
                )
            continue
        for name in ("score", "passed"):
            if trial["errored"] and field_of(payload, name) is MISSING:
                # an errored sample has no score in Inspect's record (E-147): not a finding
                check.not_written[f"eval.scored.{name}"] += 1
                continue
            check.check(
                f"eval.scored.{name}",
                field_of(payload, name),
                trial[name],
                trial_cause(trial, name),
                **where,
            )
        raw_index = field_of(payload, "trialIndex")
        if trial["trial_index_invalid"]:
            check.check(
                "eval.scored.trialIndex", raw_index, index, ("D-5", "trial-index-invalid"), **where
            )
        elif raw_index is MISSING and task in tasks and tasks[task]["n"] > 1:
            # RFC 0244 §B: with count = 1 the stream is RFC 0081's and trialIndex MAY be omitted
            check.check(
                "eval.scored.trialIndex", MISSING, index, ("RFC 0244 §B", "absent"), **where
            )
        else:
            check.compared["eval.scored.trialIndex"] += 1
    for task_id, row in tasks.items():
        reason = "task-missing" if row["observed_trials"] == 0 else "trial-missing"
        rule = "D-13" if row["observed_trials"] == 0 else "RFC 0244 §B"
        check.check(
            "eval.scored.count", row["observed_trials"], row["n"], (rule, reason), task=task_id
        )


def check_labels(check: Checker, ctx: RunContext) -> None:
    """RFC 0244 §E: scoreLabel matches its pattern, evaluatorType is in its enum. Neither value is
    ever shown: a label that fails the pattern may be prose."""
    for seq in ctx.scored_in_span():
        payload = ctx.host.payloads.get((ctx.run_id, seq))
        task = _task_id(payload)
        label = field_of(payload, "scoreLabel")
        if label is not MISSING:
            ok = isinstance(label, str) and SCORE_LABEL.fullmatch(label) is not None
            check.check(
                "eval.scored.scoreLabel",
                VALID_TEXT if ok else INVALID_TEXT,
                VALID_TEXT,
                ("RFC 0244 §E", "pattern"),
                text=True,
                task=task,
                sequence=seq,
            )
        kind = field_of(payload, "evaluatorType")
        if kind is not MISSING:
            ok = isinstance(kind, str) and kind in EVALUATOR_TYPES
            check.check(
                "eval.scored.evaluatorType",
                VALID_TEXT if ok else INVALID_TEXT,
                VALID_TEXT,
                ("RFC 0244 §E", "enum"),
                text=True,
                task=task,
                sequence=seq,
            )


#: the optional numbers of an eval.scored and the range a grade uses them in (E-77): what
#: OpenWOP's schema allows a host to write there (latencyMs an integer >= 0, costUsd >= 0)
_SCORED_NUMBERS = (
    ("latencyMs", MAX_LATENCY_MS, "latency-invalid"),
    ("costUsd", MAX_COST_USD, "cost-invalid"),
)


def check_scored_numbers(check: Checker, ctx: RunContext) -> None:
    """Each eval.scored's latencyMs and costUsd, where written, is a number the grade can use
    (E-77, E-112): `run` drops one that is not (a cost with the warning `cost-invalid`, a
    latency for the bracket span, §3.5), so the host's record of it is a finding here."""
    for seq in ctx.scored_in_span():
        payload = ctx.host.payloads.get((ctx.run_id, seq))
        for name, most, reason in _SCORED_NUMBERS:
            value = field_of(payload, name)
            if value is MISSING:
                continue
            usable = is_number(value) and math.isfinite(value) and 0 <= value <= most
            check.check(
                f"eval.scored.{name}",
                value,
                value if usable else VALID_TEXT,
                ("E-77", reason),
                task=_task_id(payload),
                sequence=seq,
            )


def _task_id(payload: Any) -> str | None:
    task = field_of(payload, "taskId")
    return task if isinstance(task, str) and SHOWABLE.fullmatch(task) else None


def check_completed(check: Checker, ctx: RunContext) -> None:
    """The host's eval.completed against the recomputed suite figures (§3.6), and that it wrote
    one (§2.1: a repeated one is a finding, E-113)."""
    seq = ctx.run["end_seq"]
    if seq is None:
        check.check("eval.completed", MISSING, PRESENT_TEXT, ("§2.1", "eval-incomplete"))
        return
    # OpenWOP emits eval.completed once per eval run: a second one is a record the host wrote
    # twice, whatever it says (E-113: the first ends the span and stands)
    repeats = [s for s in ctx.host.completed.get(ctx.run_id, []) if s > seq]
    check.check(
        "eval.completed",
        1 + len(repeats),
        1,
        ("§2.1", "completed-repeated"),
        sequence=repeats[0] if repeats else seq,
    )
    check_suite_fields(check, ctx, "eval.completed", ctx.host.payloads.get((ctx.run_id, seq)))


#: the host field each summary field a host's values can make invalid comes from (§4)
_SUMMARY_SOURCES = {
    "suiteId": "eval.started.suiteId",
    "suiteVersion": "eval.started.suiteVersion",
    "baselineRunId": "eval.started.baselineRunId",
    "taskId": "eval.scored.taskId",
    "evaluatedModelClass": "agent.invocation-started.modelClass",
}


def check_summary_writable(check: Checker, ctx: RunContext) -> None:
    """The recomputed summary is one `run` would write (§4): a run whose host-written ids make
    it fail the EvalSummary schema is left out by `run` (`summary-invalid`), so here it is a
    finding on the host field the value came from, never shown (it failed its pattern)."""
    faults = summary_faults(ctx.summary)
    for field_name in dict.fromkeys(_host_field(fault.path) for fault in faults):
        check.check(
            field_name,
            INVALID_TEXT,
            VALID_TEXT,
            ("§4", "summary-invalid"),
            text=True,
            sequence=ctx.run["start_seq"] if field_name.startswith("eval.started.") else None,
        )


def _host_field(path: str) -> str:
    """`$.tasks[3].taskId` -> `eval.scored.taskId`; a field no host value feeds keeps its
    summary path without indices (`summary.tasks.trials`)."""
    names = [part.split("[")[0] for part in path.removeprefix("$").split(".") if part]
    leaf = names[-1] if names else ""
    return _SUMMARY_SOURCES.get(leaf, ".".join(["summary", *[n for n in names if n]]))
