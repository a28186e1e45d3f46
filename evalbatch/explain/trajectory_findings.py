"""Which expected call each observed call was paired with, and why a trajectory failed (§3.2).

Which checks of a trajectory failed, and which is named first, is the grader's
(`trial_grading.TRAJECTORY_CHECKS`, `TrajectoryDetail.failures`): this only says where, call by
call, reading the grader's own pairs and pairings (E-55, E-56, E-58). A finding names the expected
and observed calls it is about and, when arguments differ, the path where they first do (E-57).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalbatch.explain.call_args import diff_words, display_text, implied_diff
from evalbatch.explain.explanation import ExpectedCall, FailedCheck, Trajectory
from evalbatch.explain.observed_calls import observed_call, outside_path
from evalbatch.explain.trial_detail import pairing_of, rows_of
from evalbatch.explain.wording import position_names
from evalbatch.grade import trial_grading


@dataclass
class _Call:
    o_idx: int
    call_pos: int | None  # None: a child run's call (E-102)
    sequence: int
    tool: str
    inputs: str
    exact: str | None


def explain_trajectory(
    row: dict[str, Any],
    trial: dict[str, Any],
    detail: trial_grading.TrajectoryDetail,
    bracket_calls: list[dict[str, Any]],
    delegate_faults: Sequence[Mapping[str, Any]] = (),
) -> Trajectory:
    """The trial's expected and observed calls, the grader's pairing and why it failed;
    `delegate_faults` are its rows of `trial_delegate_faults` (E-102)."""
    key = trial["trial_key"]
    mode = trial["mode"]
    expected_rows = rows_of(detail.expected, key)
    observed_rows = rows_of(detail.observed, key)
    pairs = rows_of(detail.pairs, key)
    matching = pairing_of(detail.matching, key, "e_pos", "o_idx")
    walk = pairing_of(detail.in_order, key, "e_pos", "o_idx")
    forbidden = set(detail.forbidden.filter(pl.col("trial_key") == key)["o_idx"].to_list())
    calls = [
        _Call(
            r["o_idx"],
            r["call_pos"],
            r["sequence"],
            r["tool_name"],
            r["inputs"],
            r["exact_payload"],
        )
        for r in observed_rows
    ]
    paired_by_o = {o: e for e, o in matching.items()}
    origins = {c["call_pos"]: c for c in bracket_calls}
    expected = [
        ExpectedCall(
            e["e_pos"],
            e["tool"],
            e["args_mode"],
            display_text(e["args"]),
            e["args"],
            matching.get(e["e_pos"]),
        )
        for e in expected_rows
    ]
    observed = [
        observed_call(
            r,
            origins.get(r["call_pos"]),
            r["o_idx"],
            paired_by_o.get(r["o_idx"]),
            r["o_idx"] in forbidden,
        )
        for r in observed_rows
    ]
    others = outside_path(bracket_calls, {c.call_pos for c in calls if c.call_pos is not None})
    path = _Path(
        mode,
        expected,
        calls,
        {(p["e_pos"], p["o_idx"]) for p in pairs if p["ok"]},
        matching,
        walk,
        forbidden,
        tuple((f["code"], f["child_run_id"], f["sequence"]) for f in delegate_faults),
    )
    failed = detail.failures.filter(pl.col("trial_key") == key)["reason"].to_list()
    findings = [finding for reason in failed for finding in REASON_FINDINGS[reason](reason, path)]
    return Trajectory(
        mode=mode,
        include_delegates=bool(trial["include_delegates"]),
        matched=bool(row["trajectory_matched"]),
        reason=row["trajectory_reason"],
        expected_count=int(trial["expected_count"]),
        observed_count=int(row["observed_count"]),
        matched_count=int(row["matched_count"]),
        forbidden_count=int(row["forbidden_count"]),
        expected=expected,
        observed=observed,
        others=others,
        findings=findings,
    )


@dataclass(frozen=True)
class _Path:
    """One trial's trajectory as its findings read it: the grader's pairs and pairings."""

    mode: str
    expected: list[ExpectedCall]
    calls: list[_Call]
    ok: set[tuple[int, int]]  # (e_pos, o_idx) of every pair whose arguments match
    matching: dict[int, int]  # e_pos -> o_idx of the maximum matching
    walk: dict[int, int | None]  # e_pos -> o_idx of the in-order walk
    forbidden: set[int]  # o_idx of the calls to a forbidden tool
    #: (code, child run or None, bracket event) of each child run the path cannot read (E-102)
    delegate_faults: tuple[tuple[str, str | None, int], ...] = ()


def _missing_call(reason: str, e: ExpectedCall, path: _Path) -> FailedCheck:
    """Why expected call `e` has no partner in the maximum matching."""
    calls, ok, matching = path.calls, path.ok, path.matching
    same_tool = [c for c in calls if c.tool == e.tool]
    name = f"E{e.pos} {e.tool}"
    if not same_tool:
        return FailedCheck(reason, "not-called", f"{name}: never called", e.pos, None, e.tool)
    matching_calls = [c.o_idx for c in calls if (e.pos, c.o_idx) in ok]
    if matching_calls:
        return FailedCheck(
            reason,
            "taken",
            f"{name}: each call that matches it ({position_names(matching_calls)}) is paired with "
            "another expected call (one call serves one expected call)",
            e.pos,
            matching_calls[0],
            e.tool,
        )
    taken = set(matching.values())
    by_place = [c for c in same_tool if path.mode == "exact" and c.o_idx == e.pos]
    unpaired = [c for c in same_tool if c.o_idx not in taken]
    closest = (by_place or unpaired or same_tool)[0]
    return _args_differ(
        reason, e, closest, f"{name}: no call with matching args ({e.args_match}); O{closest.o_idx}"
    )


def _args_differ(
    reason: str, e: ExpectedCall, call: _Call, what: str, after: str = ""
) -> FailedCheck:
    """`e` and an observed call of its tool, and where their arguments first differ."""
    diff = implied_diff(e.args_match, e.args_text, call.inputs, call.exact)
    message = f"{what} differs at {diff_words(diff)}{after}"
    return FailedCheck(reason, "args-differ", message, e.pos, call.o_idx, e.tool, diff)


# Each failed check of `trial_grading.TRAJECTORY_CHECKS`, call by call: which checks failed, and in
# what order they are named, is the grader's (`TrajectoryDetail.failures`); these say where.


def _no_bracket_findings(reason: str, path: _Path) -> list[FailedCheck]:
    return [
        FailedCheck(
            reason,
            "no-bracket",
            "the trial's segment has no agent.invocation-started: its path cannot be "
            "shown, so the trajectory is unmatched (D-18)",
        )
    ]


#: why a child run cannot be read, as a finding says it (E-102)
_UNSEEN_WORDS = {
    "delegate-log-missing": "has no event in the input",
    "delegate-log-invalid": "has a log that cannot be read whole",
    "delegate-cycle": "is already on the path from the trial (a cycle), so it is not followed",
    "delegate-suite-mismatch": "is an eval run of another suite",
}


def _delegates_unseen_findings(reason: str, path: _Path) -> list[FailedCheck]:
    """Each child run the path went through that cannot be read (E-102)."""
    return [
        FailedCheck(
            reason,
            code,
            f"child run {child} (named at event {sequence}) {_UNSEEN_WORDS[code]}: the path "
            "cannot be shown whole, so the trajectory is unmatched (E-102)"
            if child is not None
            else f"event {sequence} names no readable child run: the path cannot be shown "
            "whole, so the trajectory is unmatched (E-102)",
        )
        for code, child, sequence in path.delegate_faults
    ]


def _forbidden_findings(reason: str, path: _Path) -> list[FailedCheck]:
    return [
        FailedCheck(
            reason,
            "forbidden-tool",
            f"O{c.o_idx} {c.tool}: a forbidden tool (unmatched whatever the mode, §3.2)",
            None,
            c.o_idx,
            c.tool,
        )
        for c in path.calls
        if c.o_idx in path.forbidden
    ]


def _extra_findings(reason: str, path: _Path) -> list[FailedCheck]:
    """subset: each observed call no expected call allows; exact: the calls beyond |E|."""
    if path.mode == "subset":
        covered = {o for _, o in path.ok}
        return [_not_allowed(reason, c, path) for c in path.calls if c.o_idx not in covered]
    n_expected, n_observed = len(path.expected), len(path.calls)
    paired = set(path.matching.values())
    return [
        FailedCheck(
            reason,
            "extra-call",
            f"O{c.o_idx} {c.tool}: an extra call (exact needs {n_expected} calls, "
            f"observed {n_observed})",
            None,
            c.o_idx,
            c.tool,
        )
        for c in path.calls
        if c.o_idx not in paired
    ]


def _not_allowed(reason: str, c: _Call, path: _Path) -> FailedCheck:
    same_tool = [e for e in path.expected if e.tool == c.tool]
    if not same_tool:
        return FailedCheck(
            reason,
            "unexpected-tool",
            f"O{c.o_idx} {c.tool}: not an expected tool (subset allows only the expected calls)",
            None,
            c.o_idx,
            c.tool,
        )
    e = same_tool[0]
    return _args_differ(
        reason, e, c, f"O{c.o_idx} {c.tool}: matches no expected call's args; E{e.pos}"
    )


def _missing_findings(reason: str, path: _Path) -> list[FailedCheck]:
    return [_missing_call(reason, e, path) for e in path.expected if e.pos not in path.matching]


def _order_findings(reason: str, path: _Path) -> list[FailedCheck]:
    """The first expected call out of place: exact by position, in-order along the walk."""
    if path.mode == "exact":
        by_pos = {c.o_idx: c for c in path.calls}
        for e in path.expected:
            if (e.pos, e.pos) in path.ok:
                continue
            here = by_pos.get(e.pos)
            elsewhere = path.matching.get(e.pos)
            instead = f" (it matches O{elsewhere} instead)" if elsewhere is not None else ""
            if here is not None and here.tool != e.tool:
                return [
                    FailedCheck(
                        reason,
                        "tool-differs",
                        f"E{e.pos} {e.tool}: O{e.pos} is {here.tool}{instead}",
                        e.pos,
                        e.pos,
                        e.tool,
                    )
                ]
            if here is not None:
                return [_args_differ(reason, e, here, f"E{e.pos} {e.tool}: O{e.pos}", instead)]
            return []
        return []
    if path.mode == "in-order":
        last = -1
        for e in path.expected:
            step = path.walk.get(e.pos)
            if step is not None:
                last = step
                continue
            earlier = [c.o_idx for c in path.calls if (e.pos, c.o_idx) in path.ok]
            after = f"after O{last}" if last >= 0 else "at all"
            return [
                FailedCheck(
                    reason,
                    "out-of-order",
                    f"E{e.pos} {e.tool}: no matching call {after} "
                    f"({position_names(earlier)} matches it but comes before)",
                    e.pos,
                    earlier[0] if earlier else None,
                    e.tool,
                )
            ]
    return []


#: the findings of each reason code of `trial_grading.TRAJECTORY_CHECKS`
REASON_FINDINGS: dict[str, Callable[[str, _Path], list[FailedCheck]]] = {
    "no-bracket": _no_bracket_findings,
    "delegates-unseen": _delegates_unseen_findings,
    "forbidden": _forbidden_findings,
    "extra": _extra_findings,
    "missing": _missing_findings,
    "order": _order_findings,
}
