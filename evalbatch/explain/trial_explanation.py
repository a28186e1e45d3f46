"""One trial's explanation from its rows: why it was left out, or its grade, bracket, trajectory,
fixture replay and judge calls, and the lines that say how its score and passed came about.

The numbers are the trial's row of the trials table (`pipeline.batch_rows.trial_table`), so they
agree with `evalbatch run` by construction; the lines only say which rule made them (§3.4, D-4,
D-5, D-9..D-13, E-59).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from evalbatch.explain.explanation import (
    Bracket,
    JudgeCalls,
    Problem,
    TrialExplanation,
    TrialGrade,
)
from evalbatch.explain.fixture_replay import explain_fixtures
from evalbatch.explain.trajectory_findings import explain_trajectory
from evalbatch.explain.wording import count_of, yes_no
from evalbatch.grade import trial_grading
from evalbatch.options import GradeOptions

#: D-5 / E-8: why a trial was left out
LEFT_OUT_WHY = {
    "task-unknown": "its taskId is not in the suite (D-13): it counts for nothing",
    "trial-extra": "its trial index is >= trials.count (D-5): it counts for nothing",
    "trial-duplicate": "an earlier eval.scored took its (taskId, trialIndex) (D-5, E-8): "
    "it counts for nothing",
}


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return float(value) if isinstance(value, (Decimal, int, float)) else None


def why_lines(row: dict[str, Any], trial: dict[str, Any], has_suite: bool) -> list[str]:
    """How the trial's score, passed and gating score came about (§3.4, D-4, D-9..D-11,
    E-147)."""
    lines = []
    kind = trial["kind"]
    matched = row["trajectory_matched"]
    if not has_suite:
        lines.append(
            "host record: score = host score; passed = host passed; no trajectory or fixture "
            "checks (D-4)"
        )
    elif row["failed_closed"]:
        lines.append(
            f"failed closed: {count_of(row['fixture_misses'], 'fixture miss')} with onMiss fail "
            "(D-9): score 0, passed false, gating 0"
        )
    elif kind == "trajectory":
        lines.append(
            f"trajectory task: score {1 if matched else 0} and passed {yes_no(bool(matched))} "
            "from the trajectory (§3.4)"
        )
    else:
        rule = "host passed" + (" and trajectory matched" if trial["has_trajectory"] else "")
        lines.append(f"{kind} task: score = host score; passed = {rule} (§3.4)")
    if row.get("errored"):
        lines.append(
            "the Inspect sample errored: score 0, passed false, gating 0, whatever its path "
            "(sample-errored, E-147)"
        )
    elif kind != "trajectory" and not row["failed_closed"]:
        if trial["host_score"] is None:
            lines.append(
                "the host score is missing or not a number in 0..1: score 0, passed false (D-11)"
            )
        if trial["host_passed"] is None:
            lines.append("the host passed is missing or not a boolean: passed false (D-11)")
    if trial["has_trajectory"] and not matched and not row["failed_closed"]:
        lines.append(f"gating 0: the trajectory is unmatched ({row['trajectory_reason']}, D-10)")
    return lines


def explain_trial(
    t: dict[str, Any],
    row: dict[str, Any],
    has_suite: bool,
    trajectories: trial_grading.TrajectoryDetail,
    fixtures: trial_grading.FixtureDetail,
    judge: dict[str, Any] | None,
    bracket_calls: list[dict[str, Any]],
    trial_problems: list[Problem],
    options: GradeOptions,
    has_cost_source: bool,
    first_by_index: dict[tuple[str, int], int],
    delegate_faults: Sequence[Mapping[str, Any]] = (),
) -> TrialExplanation:
    """One trial of the run: `t` is its row of the graded trials, `row` its trials-table row;
    `delegate_faults` the child runs its path cannot read (E-102)."""
    base = {
        "task_id": t["task_id"],
        "trial_index": t["trial_index"],
        "sequence": t["scored_seq"],
        "problems": trial_problems,
        "sample_id": t.get("sample_id"),
        "epoch": t.get("epoch"),
    }
    if not t["counted"]:
        why = LEFT_OUT_WHY.get(t["left_out"], t["left_out"])
        if t["left_out"] == "trial-extra":
            count = "trials.count" if has_suite else "eval.started.trialCount"
            why = (
                f"trial index {t['trial_index']} >= {count} {t['trial_cap']} (D-5): "
                "it counts for nothing"
            )
        elif t["left_out"] == "trial-duplicate":
            first = first_by_index.get((t["task_id"], t["trial_index"]))
            why = (
                f"trial index {t['trial_index']} was already taken by eval.scored event {first} "
                "(D-5, E-8): it counts for nothing"
            )
        return TrialExplanation(
            status="left-out",
            left_out=t["left_out"],
            why=[why],
            grade=None,
            bracket=None,
            trajectory=None,
            fixtures=None,
            judge=None,
            **base,
        )
    latency_source = None
    if t["host_latency_ms"] is not None:
        latency_source = "host"
    elif row["latency_ms"] is not None:
        latency_source = "bracket"
    if has_cost_source:
        cost_source = "usage"
    elif t["host_cost_usd"] is not None:
        cost_source = "host"
    else:
        cost_source = None
    trial_grade = TrialGrade(
        row=row,
        host_score=_number(t["host_score"]),
        host_passed=t["host_passed"],
        host_latency_ms=_number(t["host_latency_ms"]),
        host_cost_usd=_number(t["host_cost_usd"]),
        latency_source=latency_source,
        cost_source=cost_source,
    )
    trajectory = None
    if t["has_trajectory"]:
        trajectory = explain_trajectory(row, t, trajectories, bracket_calls, delegate_faults)
    fixture = None
    if t["has_fixtures"]:
        fixture = explain_fixtures(row, t, fixtures, options)
    judge_calls = JudgeCalls(0, 0, 0, None)
    if judge is not None:
        judge_calls = JudgeCalls(
            int(judge["judge_calls"]),
            int(judge["judge_input_tokens"]),
            int(judge["judge_output_tokens"]),
            _number(judge["judge_cost_usd"]),
        )
    return TrialExplanation(
        status="counted",
        left_out=None,
        why=why_lines(row, t, has_suite),
        grade=trial_grade,
        bracket=Bracket(
            start_sequence=t["bracket_start_seq"],
            end_sequence=t["bracket_end_seq"] if t["has_bracket"] else None,
            closed=bool(t["bracket_closed"]),
            target_agent_id=t["target_agent_id"],
        ),
        trajectory=trajectory,
        fixtures=fixture,
        judge=judge_calls,
        **base,
    )


def missing_trial(task_id: str, trial_index: int, task_has_trials: bool) -> TrialExplanation:
    """A trial the task should have that no eval.scored gave (D-12, D-13)."""
    return TrialExplanation(
        task_id=task_id,
        trial_index=trial_index,
        sequence=None,
        status="missing",
        left_out=None,
        why=[
            "no eval.scored for this trial: it counts as failed, score 0 and gating "
            "0 (D-12)"
            + (", and the task has no trial at all (D-13)" if not task_has_trials else "")
        ],
        grade=None,
        bracket=None,
        trajectory=None,
        fixtures=None,
        judge=None,
        problems=[],
    )
