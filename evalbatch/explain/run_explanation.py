"""`evalbatch explain`: why one eval run's trials graded as they did, call by call.

For the team's own eyes, not a wire artefact: unlike an EvalSummary, an explanation shows tool
names and arguments. It never grades anything itself. The run is extracted and graded by the
grader's own code (`pipeline.shard.grade_shard`: the SQL stage, `trial_grading.grade_trials`, the
reductions), and the per-call detail comes from `trial_grading.trajectory_detail` and
`trial_grading.fixture_detail`, which keep call by call what `grade_trajectories` and
`count_fixture_misses` count, with the same joins and the same `match` functions; which checks of
a trajectory failed, and which is named first, is `trial_grading.TRAJECTORY_CHECKS`' (explain
only says where, call by call). The numbers shown for a trial are its row of the trials table
(`pipeline.merge.trial_table`), so an explanation agrees with `evalbatch run` by construction;
the tests check it for every sample trial.

`to_json` gives a stable shape (`"explainVersion": 1`; keys are only ever added):

    {explainVersion, runId, suiteId, suiteVersion, gradedFrom ("suite" | "host-record"),
     graded, notGraded [problem], options {defaultPassScore, onMissDefault},
     filter {taskId, trialIndex}, problems [problem], notes [str],
     tasks [{taskId, inSuite, kind, trajectoryMode, n, score, passed, trials [trial]}]}

    trial: {taskId, trialIndex, sequence (its eval.scored; null when missing),
      status ("counted" | "left-out" | "missing"), verdict ("pass" | "fail" | "left-out" |
      "missing"), leftOut (code), why [str],
      grade {score, gatingScore, passed, trajectoryMatched, trajectoryReason, observedCount,
             matchedCount, forbiddenCount, fixtureMisses, failedClosed, hasBracket,
             bracketClosed, latencyMs, toolCallCount, modelCallCount, inputTokens,
             outputTokens, usageCostUsd,               <- the trials-table row, same names
             hostScore, hostPassed, hostLatencyMs, hostCostUsd, latencySource, costSource},
      bracket {startSequence, endSequence, closed, targetAgentId},
      trajectory {mode, includeDelegates, matched, reason, expectedCount, observedCount,
                  matchedCount, forbiddenCount,
                  expected [{pos, tool, argsMatch, args, observedPos}],
                  observed [{pos, callPos, sequence, agentId, tool, inputs, expectedPos,
                             forbidden}],
                  others [same shape: calls in the bracket that are not in the path],
                  findings [finding]},
      fixtures {fixtured, note, onMiss, onMissDeclared, misses, failedClosed,
                entries [{pos, tool, argsMatch, args, servedCallPos}],
                calls [{callPos, sequence, tool, inputs, entryPos, miss: finding | null}]},
      judgeCalls {count, inputTokens, outputTokens, costUsd},
      problems [problem]}

    finding: {code, why, message, expectedPos, observedPos, tool,
              diff {path, expected, observed} | null}
    problem: {code, severity, sequence, message}

`args`, `inputs` and a diff's `expected`/`observed` are compact JSON texts, numbers written by
their exact value (`4200` for `4200.0` or `42e2`, which D-7 equates), so no digit is lost; a diff
side is null when the key is absent. Positions
count from 0: `E<pos>` is the suite's expected call, `O<pos>` the observed trajectory's call,
`F<pos>` the fixture entry, and `callPos` the call's place among every call in the bracket.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import polars as pl

from evalbatch import jsonvalue, problems
from evalbatch.errors import InputError
from evalbatch.extract import sql_files, trial_tables
from evalbatch.grade import trial_grading
from evalbatch.grade.suite_tables import SuiteTables
from evalbatch.inputs import event_files
from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.grading import Paths, as_paths, suites_keyword
from evalbatch.pipeline.merge import trial_table
from evalbatch.pipeline.shard import grade_shard
from evalbatch.problems import problem_message

EXPLAIN_VERSION = 1

#: what an observed call's arguments are compared under, in words (§3.1)
ARGS_WORDS = {"ignore": "any args", "exact": "exact", "subset": "subset"}

#: D-5 / E-8: why a trial was left out
LEFT_OUT_WHY = {
    "task-unknown": "its taskId is not in the suite (D-13): it counts for nothing",
    "trial-extra": "its trial index is >= trials.count (D-5): it counts for nothing",
    "trial-duplicate": "an earlier eval.scored took its (taskId, trialIndex) (D-5, E-8): "
    "it counts for nothing",
}


class UnknownRun(InputError):
    """The run asked for is not an eval run of the events."""


class UnknownSelection(InputError):
    """--task or --trial names nothing in the run."""


# --------------------------------------------------------------------------------------------
# The explanation


@dataclass(frozen=True)
class ArgsDiff:
    """Where arguments first differ: a JSONPath and both sides as JSON text (None: absent)."""

    path: str
    expected: str | None
    observed: str | None


@dataclass(frozen=True)
class FailedCheck:
    """One reason a trajectory or a fixture replay failed.

    code: the check that failed: `no-bracket`, `forbidden`, `missing` (an expected call no
        observed call is paired with), `extra` (an observed call the mode does not allow),
        `order`, or `fixture-miss`.
    why: `no-bracket`, `forbidden-tool`, `not-called`, `args-differ`, `taken`, `tool-differs`,
        `out-of-order`, `extra-call`, `unexpected-tool`, `no-entry`, `consumed`.
    """

    code: str
    why: str
    message: str
    expected_pos: int | None = None
    observed_pos: int | None = None
    tool: str | None = None
    diff: ArgsDiff | None = None


@dataclass(frozen=True)
class ExpectedCall:
    pos: int
    tool: str
    args_match: str  # as compared: `ignore` when the call has no args (§3.2)
    args: str | None  # JSON text; None: no args
    args_text: str | None  # the canonical text the grader compares (internal)
    observed_pos: int | None  # its partner in the maximum matching


@dataclass(frozen=True)
class ObservedCall:
    pos: int | None  # in the observed trajectory; None: not in it (another agent's call)
    call_pos: int  # among every call in the bracket
    sequence: int
    agent_id: str | None
    tool: str
    inputs: str | None  # JSON text (the text as written when it is not JSON)
    expected_pos: int | None  # its partner in the maximum matching
    forbidden: bool


@dataclass(frozen=True)
class Trajectory:
    """The §3.2 block of one trial with every call, the pairing and why it failed."""

    mode: str
    include_delegates: bool
    matched: bool
    reason: str | None  # the trials table's trajectory_reason
    expected_count: int
    observed_count: int
    matched_count: int
    forbidden_count: int
    expected: list[ExpectedCall]
    observed: list[ObservedCall]
    others: list[ObservedCall]
    findings: list[FailedCheck]


@dataclass(frozen=True)
class FixtureEntry:
    pos: int
    tool: str
    args_match: str
    args: str | None
    served_call_pos: int | None


@dataclass(frozen=True)
class FixtureCall:
    call_pos: int
    sequence: int
    tool: str
    inputs: str | None  # JSON text, as ObservedCall.inputs
    entry_pos: int | None  # the entry that served it; None: a miss
    miss: FailedCheck | None


@dataclass(frozen=True)
class Fixtures:
    """The §3.3 replay of one trial (or why there is none)."""

    fixtured: bool
    note: str | None
    on_miss: str  # as applied: `fail`, `live` or `count` (absent onMiss, D-9)
    on_miss_declared: str | None
    misses: int
    failed_closed: bool
    entries: list[FixtureEntry]
    calls: list[FixtureCall]


@dataclass(frozen=True)
class JudgeCalls:
    """provider.usage in the segment but outside the bracket (D-6)."""

    count: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


@dataclass(frozen=True)
class Problem:
    code: str
    severity: str
    sequence: int | None
    message: str


@dataclass(frozen=True)
class TrialGrade:
    """The trial's row of the trials table, plus the host record it was graded from."""

    row: dict[str, Any]
    host_score: float | None
    host_passed: bool | None
    host_latency_ms: float | None
    host_cost_usd: float | None
    latency_source: str | None  # `host` (eval.scored.latencyMs), `bracket` or None
    cost_source: str | None  # `usage` (provider.usage), `host` (eval.scored.costUsd) or None


@dataclass(frozen=True)
class Bracket:
    start_sequence: int | None
    end_sequence: int | None
    closed: bool
    target_agent_id: str | None


@dataclass(frozen=True)
class TrialExplanation:
    task_id: str
    trial_index: int
    sequence: int | None
    status: str  # counted | left-out | missing
    left_out: str | None
    why: list[str]
    grade: TrialGrade | None
    bracket: Bracket | None
    trajectory: Trajectory | None
    fixtures: Fixtures | None
    judge: JudgeCalls | None
    problems: list[Problem]

    @property
    def verdict(self) -> str:
        if self.status != "counted":
            return self.status
        assert self.grade is not None
        return "pass" if self.grade.row["passed"] else "fail"


@dataclass(frozen=True)
class TaskExplanation:
    task_id: str
    in_suite: bool
    kind: str | None
    trajectory_mode: str | None
    n: int | None  # trials the task should have (None: no count, D-4 without trialCount)
    score: float | None  # the task entry's score (None: not a task of the summary)
    passed: bool | None
    trials: list[TrialExplanation]


@dataclass(frozen=True)
class Explanation:
    run_id: str
    suite_id: str | None
    suite_version: str | None
    graded_from: str | None  # suite | host-record | None (not graded)
    graded: bool
    not_graded: list[Problem]
    options: GradeOptions
    task_filter: str | None
    trial_filter: int | None
    tasks: list[TaskExplanation]
    problems: list[Problem]  # the run's problems no shown trial owns
    notes: list[str] = field(default_factory=list)  # input files left out, ...


# --------------------------------------------------------------------------------------------
# JSON values and where they differ (D-7, D-8)


def _value(text: str | None, exact: str | None = None) -> Any:
    """A parsed JSON value as the grader reads it (`with_args_match`), or the text itself."""
    if exact:
        return jsonvalue.inputs_of_payload(exact)
    return jsonvalue.parse_value(text) if text is not None else None


def _number_text(value: Decimal | int) -> str:
    """A number by value, plainly: 4200 for 42e2 or 4200.0, 0.5 for 0.50 (D-7 equates them)."""
    if isinstance(value, int):
        return str(value)
    if value == value.to_integral_value() and value.adjusted() < 21:
        return str(int(value))
    if -7 < value.adjusted() < 21:
        return format(value, "f").rstrip("0")
    return str(value.normalize())


def display(value: Any) -> str:
    """A parsed JSON value as compact JSON text: keys in their order, numbers by exact value."""
    return jsonvalue.compact(value, _number_text, sort_keys=False)


def _display_text(text: str | None, exact: str | None = None) -> str | None:
    """JSON text (a tool call's inputs, a suite's args) for showing; the text as written when
    it is not JSON."""
    if text is None and not exact:
        return None
    try:
        return display(_value(text, exact))
    except (jsonvalue.NotJson, TypeError):
        return text


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{json.dumps(key)}]"


def _text(value: Any) -> str:
    return display(value)


def _equal_difference(expected: Any, observed: Any, path: str) -> ArgsDiff | None:
    """The first place two values are not JSON-equal (D-7), keys in sorted order."""
    if isinstance(expected, dict) and isinstance(observed, dict):
        for key in sorted(set(expected) | set(observed)):
            where = _member(path, key)
            if key not in observed:
                return ArgsDiff(where, _text(expected[key]), None)
            if key not in expected:
                return ArgsDiff(where, None, _text(observed[key]))
            found = _equal_difference(expected[key], observed[key], where)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(observed, list):
        for index, (a, b) in enumerate(zip(expected, observed, strict=False)):
            found = _equal_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        if len(expected) != len(observed):
            index = min(len(expected), len(observed))
            return ArgsDiff(
                f"{path}[{index}]",
                _text(expected[index]) if index < len(expected) else None,
                _text(observed[index]) if index < len(observed) else None,
            )
        return None
    if jsonvalue.json_equal(expected, observed):
        return None
    return ArgsDiff(path, _text(expected), _text(observed))


def args_difference(mode: str, expected: Any, observed: Any, path: str = "$") -> ArgsDiff | None:
    """Where observed inputs first fail to match expected args under `mode` (None: they match).

    `exact` is D-7 equality; `subset` (D-8) checks each expected key, objects recursing as subsets
    and anything else by equality. None exactly when `jsonvalue.args_match` is true.
    """
    if mode == "ignore":
        return None
    if mode == "subset" and isinstance(expected, dict):
        if not isinstance(observed, dict):
            return ArgsDiff(path, _text(expected), _text(observed))
        for key in sorted(expected):
            where = _member(path, key)
            if key not in observed:
                return ArgsDiff(where, _text(expected[key]), None)
            found = args_difference("subset", expected[key], observed[key], where)
            if found is not None:
                return found
        return None
    return _equal_difference(expected, observed, path)


def _diff(mode: str, args: str | None, inputs: str, exact: str | None) -> ArgsDiff:
    """The difference the grader's verdict implies (its fallback: the whole values)."""
    try:
        expected = jsonvalue.parse_value(args) if args is not None else None
        observed = _value(inputs, exact)
    except jsonvalue.NotJson:
        return ArgsDiff("$", args, inputs)
    found = args_difference(mode, expected, observed)
    return found or ArgsDiff("$", _text(expected), _text(observed))


def _diff_words(diff: ArgsDiff) -> str:
    expected = "absent" if diff.expected is None else diff.expected
    observed = "absent" if diff.observed is None else diff.observed
    return f"{diff.path}: expected {expected}, observed {observed}"


# --------------------------------------------------------------------------------------------
# Building an explanation from the grader's tables


@dataclass
class _Call:
    o_idx: int
    call_pos: int
    sequence: int
    tool: str
    inputs: str
    exact: str | None


def _names(positions: Sequence[int], prefix: str = "O") -> str:
    return ", ".join(f"{prefix}{p}" for p in positions)


def _rows_of(frame: pl.DataFrame, key: int) -> list[dict[str, Any]]:
    """One trial's rows of a detail table."""
    return frame.filter(pl.col("trial_key") == key).to_dicts()


def _pairing_of(frame: pl.DataFrame, key: int, source: str, target: str) -> dict[Any, Any]:
    """One trial's pairing from a detail table, as {source: target}."""
    rows = frame.filter(pl.col("trial_key") == key).select(source, target).iter_rows()
    return dict(rows)


def _trajectory(
    row: dict[str, Any],
    trial: dict[str, Any],
    detail: trial_grading.TrajectoryDetail,
    bracket_calls: list[dict[str, Any]],
) -> Trajectory:
    """The trial's expected and observed calls, the grader's pairing and why it failed."""
    key = trial["trial_key"]
    mode = trial["mode"]
    expected_rows = _rows_of(detail.expected, key)
    observed_rows = _rows_of(detail.observed, key)
    pairs = _rows_of(detail.pairs, key)
    matching = _pairing_of(detail.matching, key, "e_pos", "o_idx")
    walk = _pairing_of(detail.in_order, key, "e_pos", "o_idx")
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
    agents = {c["call_pos"]: c["agent_id"] for c in bracket_calls}
    expected = [
        ExpectedCall(
            e["e_pos"],
            e["tool"],
            e["args_mode"],
            _display_text(e["args"]),
            e["args"],
            matching.get(e["e_pos"]),
        )
        for e in expected_rows
    ]
    observed = [
        ObservedCall(
            pos=c.o_idx,
            call_pos=c.call_pos,
            sequence=c.sequence,
            agent_id=agents.get(c.call_pos),
            tool=c.tool,
            inputs=_display_text(c.inputs, c.exact),
            expected_pos=paired_by_o.get(c.o_idx),
            forbidden=c.o_idx in forbidden,
        )
        for c in calls
    ]
    in_path = {c.call_pos for c in calls}
    others = [
        ObservedCall(
            pos=None,
            call_pos=c["call_pos"],
            sequence=c["sequence"],
            agent_id=c["agent_id"],
            tool=c["tool_name"],
            inputs=_display_text(c["inputs"], c["exact_payload"]),
            expected_pos=None,
            forbidden=False,
        )
        for c in bracket_calls
        if c["call_pos"] not in in_path
    ]
    path = _Path(
        mode,
        expected,
        calls,
        {(p["e_pos"], p["o_idx"]) for p in pairs if p["ok"]},
        matching,
        walk,
        forbidden,
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
            f"{name}: each call that matches it ({_names(matching_calls)}) is paired with "
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
    diff = _diff(e.args_match, e.args_text, call.inputs, call.exact)
    message = f"{what} differs at {_diff_words(diff)}{after}"
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
                    f"({_names(earlier)} matches it but comes before)",
                    e.pos,
                    earlier[0] if earlier else None,
                    e.tool,
                )
            ]
    return []


#: the findings of each reason code of `trial_grading.TRAJECTORY_CHECKS`
REASON_FINDINGS: dict[str, Callable[[str, _Path], list[FailedCheck]]] = {
    "no-bracket": _no_bracket_findings,
    "forbidden": _forbidden_findings,
    "extra": _extra_findings,
    "missing": _missing_findings,
    "order": _order_findings,
}


def _fixtures(
    row: dict[str, Any],
    trial: dict[str, Any],
    detail: trial_grading.FixtureDetail,
    options: GradeOptions,
) -> Fixtures:
    declared = trial["on_miss"]
    applied = trial_grading.on_miss_applied(declared, options)
    if trial["live_shadow"]:
        return Fixtures(
            fixtured=False,
            note="not replayed: the run's modes contain live-shadow (§3.3)",
            on_miss=applied,
            on_miss_declared=declared,
            misses=0,
            failed_closed=False,
            entries=[],
            calls=[],
        )
    key = trial["trial_key"]
    entries = _rows_of(detail.entries, key)
    calls = _rows_of(detail.calls, key)
    pairs = _rows_of(detail.pairs, key)
    served = _pairing_of(detail.served, key, "o_idx", "f_pos")
    served_by_entry = {f: o for o, f in served.items()}
    ok = {(p["f_pos"], p["o_idx"]) for p in pairs if p["ok"]}
    out_calls = []
    for c in calls:
        miss = None
        if c["o_idx"] not in served:
            miss = _fixture_miss(c, entries, ok, served_by_entry)
        out_calls.append(
            FixtureCall(
                call_pos=c["o_idx"],
                sequence=c["sequence"],
                tool=c["tool_name"],
                inputs=_display_text(c["inputs"], c["exact_payload"]),
                entry_pos=served.get(c["o_idx"]),
                miss=miss,
            )
        )
    return Fixtures(
        fixtured=True,
        note=None,
        on_miss=applied,
        on_miss_declared=declared,
        misses=int(row["fixture_misses"]),
        failed_closed=bool(row["failed_closed"]),
        entries=[
            FixtureEntry(
                e["f_pos"], e["tool"], e["args_mode"], e["args"], served_by_entry.get(e["f_pos"])
            )
            for e in entries
        ],
        calls=out_calls,
    )


def _fixture_miss(
    call: dict[str, Any],
    entries: list[dict[str, Any]],
    ok: set[tuple[int, int]],
    served_by_entry: dict[int, int],
) -> FailedCheck:
    """Why no toolResponses entry served this call (§3.3)."""
    pos, tool = call["o_idx"], call["tool_name"]
    name = f"call {pos} {tool}"
    same_tool = [e for e in entries if e["tool"] == tool]
    if not same_tool:
        return FailedCheck(
            trial_grading.FIXTURE_MISS_REASON,
            "no-entry",
            f"{name}: no toolResponses entry for this tool",
            None,
            pos,
            tool,
        )
    matching = [e["f_pos"] for e in same_tool if (e["f_pos"], pos) in ok]
    if matching:
        users = [served_by_entry[f] for f in matching if f in served_by_entry]
        return FailedCheck(
            trial_grading.FIXTURE_MISS_REASON,
            "consumed",
            f"{name}: every entry that matches it ({_names(matching, 'F')}) was served to an "
            f"earlier call ({_names(users, 'call ')}); an entry serves one call",
            matching[0],
            pos,
            tool,
        )
    unused = [e for e in same_tool if e["f_pos"] not in served_by_entry]
    entry = (unused or same_tool)[0]
    diff = _diff(entry["args_mode"], entry["args"], call["inputs"], call["exact_payload"])
    return FailedCheck(
        trial_grading.FIXTURE_MISS_REASON,
        "args-differ",
        f"{name}: no entry with matching args; F{entry['f_pos']} ({entry['args_mode']}) differs "
        f"at {_diff_words(diff)}",
        entry["f_pos"],
        pos,
        tool,
        diff,
    )


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return float(value) if isinstance(value, (Decimal, int, float)) else None


def _why(row: dict[str, Any], trial: dict[str, Any], has_suite: bool) -> list[str]:
    """How the trial's score, passed and gating score came about (§3.4, D-4, D-9..D-11)."""
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
            f"failed closed: {_count(row['fixture_misses'], 'fixture miss')} with onMiss fail "
            "(D-9): score 0, passed false, gating 0"
        )
    elif kind == "trajectory":
        lines.append(
            f"trajectory task: score {1 if matched else 0} and passed {_yes(bool(matched))} "
            "from the trajectory (§3.4)"
        )
    else:
        rule = "host passed" + (" and trajectory matched" if trial["has_trajectory"] else "")
        lines.append(f"{kind} task: score = host score; passed = {rule} (§3.4)")
    if kind != "trajectory" and not row["failed_closed"]:
        if trial["host_score"] is None:
            lines.append(
                "the host score is missing or not a number in 0..1: score 0, passed false (D-11)"
            )
        if trial["host_passed"] is None:
            lines.append("the host passed is missing or not a boolean: passed false (D-11)")
    if trial["has_trajectory"] and not matched and not row["failed_closed"]:
        lines.append(f"gating 0: the trajectory is unmatched ({row['trajectory_reason']}, D-10)")
    return lines


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def _fmt(value: Any) -> str:
    """A number for reading: integers plainly, others to 6 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return _yes(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _problem(run_id: str, sequence: int | None, code: str, detail: str) -> Problem:
    return Problem(
        code=code,
        severity=problems.severity(code),
        sequence=sequence,
        message=problem_message(run_id, sequence, code, detail),
    )


def _unknown_run(con: Any, sources: event_files.Sources, run_id: str) -> UnknownRun:
    """A one-line error naming what the events do hold."""
    sources.only_runs = None
    event_files.register(con, sources)
    (present,) = con.execute(
        "SELECT count(*) FROM source_events WHERE run_id = $run", {"run": run_id}
    ).fetchone()
    if present:
        return UnknownRun(f"run {run_id} has no eval.started: it is not an eval run (E-1)")
    runs = [
        r
        for (r,) in con.execute(
            "SELECT DISTINCT run_id FROM source_events WHERE type = 'eval.started' ORDER BY 1"
        ).fetchall()
    ]
    if not runs:
        return UnknownRun(f"no eval run {run_id} in the events (they hold no eval run)")
    listed = ", ".join(runs[:5]) + (f", ... ({len(runs)} in all)" if len(runs) > 5 else "")
    return UnknownRun(f"no eval run {run_id} in the events (eval runs: {listed})")


def explain_paths(
    events: Paths,
    suites: Paths = (),
    run_id: str | None = None,
    task_id: str | None = None,
    trial_index: int | None = None,
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    *,
    suite_paths: Paths | None = None,
) -> Explanation:
    """Explain how one eval run's trials graded, with the grader's own code (see module doc).

    `events` and `suites` are each one path (a `str` or a `Path`) or a list of them; suite files
    are `suites=` (`suite_paths=` still works for one version, with a `DeprecationWarning`)
    (issue 17 item 5). `run_id` is required. `task_id` and `trial_index` keep only the trials of
    that task and/or index.

    Raises:
        TypeError: no `run_id`, or both `suites=` and `suite_paths=`.
        UnknownRun: `run_id` is not an eval run of the events.
        UnknownSelection: no trial of the run has that task or index.
        InputError: no event file can be used at all.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    if run_id is None:
        raise TypeError("explain_paths() needs run_id=")
    suite_files = suites_keyword(suites, suite_paths, "explain_paths")
    options = options or GradeOptions()
    choices = load_suites(suite_files)
    con = trial_tables.connect(resources)
    try:
        sources = event_files.scan(con, as_paths(events))
        sources.only_runs = frozenset({run_id})
        batch = grade_shard(con, sources, None, choices, options)
        known = set(batch.eval_runs["run_id"].to_list())
        if run_id not in known:
            raise _unknown_run(con, sources, run_id)
        calls = sql_files.relation(con, "trial_calls").pl()
        agents = sql_files.relation(con, "explain_calls").pl()
        judges = sql_files.relation(con, "explain_judge_calls").pl()
    finally:
        con.close()
    notes = [problem_message(None, None, p.code, p.path) for p in batch.file_problems]
    run = batch.eval_runs.filter(pl.col("run_id") == run_id).row(0, named=True)
    run_problems = [_problem(r, s, c, d) for r, s, c, d in batch.problem_rows if r == run_id]
    plan = batch.plans.get(run_id)
    if plan is None or run_id in batch.fatal_runs:
        return Explanation(
            run_id=run_id,
            suite_id=run["suite_id"],
            suite_version=run["suite_version"],
            graded_from=None,
            graded=False,
            not_graded=[p for p in run_problems if p.severity == "error"],
            options=options,
            task_filter=task_id,
            trial_filter=trial_index,
            tasks=[],
            problems=[p for p in run_problems if p.severity != "error"],
            notes=notes,
        )
    key = plan.suite_key
    tables = SuiteTables.build({key: plan.doc} if key is not None and plan.doc is not None else {})
    trials = batch.trials.filter(pl.col("run_id") == run_id)
    return _explain_run(
        run_id,
        plan,
        trials,
        calls.join(agents, on=["run_id", "segment_no", "call_pos", "sequence"], how="left"),
        judges,
        tables,
        batch.outcomes[run_id].summary,
        run_problems,
        options,
        task_id,
        trial_index,
        notes,
    )


def _explain_run(
    run_id: str,
    plan: Any,
    trials: pl.DataFrame,
    calls: pl.DataFrame,
    judges: pl.DataFrame,
    tables: SuiteTables,
    summary: dict[str, Any],
    run_problems: list[Problem],
    options: GradeOptions,
    task_id: str | None,
    trial_index: int | None,
    notes: list[str],
) -> Explanation:
    has_suite = plan.doc is not None
    rows = {r["sequence"]: r for r in trial_table(trials).iter_rows(named=True)}
    trajectories = trial_grading.trajectory_detail(trials, calls, tables)
    fixtures = trial_grading.fixture_detail(trials, calls, tables)
    judge_by_segment = {r["segment_no"]: r for r in judges.iter_rows(named=True)}
    calls_by_segment: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for c in calls.filter(pl.col("run_id") == run_id).sort("call_pos").iter_rows(named=True):
        calls_by_segment[c["segment_no"]].append(c)
    entries = {e["taskId"]: e for e in summary["tasks"]}
    first_by_index: dict[tuple[str, int], int] = {}
    for t in trials.filter("counted").iter_rows(named=True):
        first_by_index[(t["task_id"], t["trial_index"])] = t["scored_seq"]

    attached: set[tuple[int | None, str]] = set()
    by_task: dict[str, list[TrialExplanation]] = defaultdict(list)
    task_order: list[str] = []
    segments = []
    for t in trials.sort("scored_seq").iter_rows(named=True):
        segments.append((t["segment_start_seq"], t["scored_seq"]))
        if t["task_id"] not in task_order:
            task_order.append(t["task_id"])
        if task_id is not None and t["task_id"] != task_id:
            continue
        if trial_index is not None and t["trial_index"] != trial_index:
            continue
        mine = [
            p
            for p in run_problems
            if p.sequence is not None and t["segment_start_seq"] < p.sequence <= t["scored_seq"]
        ]
        by_task[t["task_id"]].append(
            _explain_trial(
                t,
                rows[t["scored_seq"]],
                has_suite,
                trajectories,
                fixtures,
                judge_by_segment.get(t["segment_no"]),
                calls_by_segment.get(t["segment_no"], []),
                mine,
                options,
                plan.has_cost_source,
                first_by_index,
            )
        )
    for start, end in segments:
        attached |= {
            (p.sequence, p.code)
            for p in run_problems
            if p.sequence is not None and start < p.sequence <= end
        }

    suite_tasks = tables.tasks.sort("task_pos").to_dicts() if has_suite else []
    task_info = {t["task_id"]: t for t in suite_tasks}
    order = [t["task_id"] for t in suite_tasks] + [t for t in task_order if t not in task_info]
    if not has_suite:
        order = [e["taskId"] for e in summary["tasks"]] + [
            t for t in task_order if t not in entries
        ]
    if task_id is not None and task_id not in order:
        raise UnknownSelection(
            f"run {run_id} has no task {task_id} (tasks: {', '.join(order) or 'none'})"
        )
    out_tasks: list[TaskExplanation] = []
    for name in order:
        if task_id is not None and name != task_id:
            continue
        info = task_info.get(name)
        entry = entries.get(name)
        n = _trial_count(plan, entry, has_suite)
        shown = by_task.get(name, [])
        present = set(trials.filter(pl.col("counted") & (pl.col("task_id") == name))["trial_index"])
        missing = [
            TrialExplanation(
                task_id=name,
                trial_index=i,
                sequence=None,
                status="missing",
                left_out=None,
                why=[
                    "no eval.scored for this trial: it counts as failed, score 0 and gating "
                    "0 (D-12)"
                    + (", and the task has no trial at all (D-13)" if not present else "")
                ],
                grade=None,
                bracket=None,
                trajectory=None,
                fixtures=None,
                judge=None,
                problems=[],
            )
            for i in range(n or 0)
            if i not in present and (trial_index is None or i == trial_index) and entry is not None
        ]
        shown = sorted(
            shown + missing,
            key=lambda x: (x.trial_index, x.sequence if x.sequence is not None else -1),
        )
        if not shown and (trial_index is not None or task_id is None):
            continue
        out_tasks.append(
            TaskExplanation(
                task_id=name,
                in_suite=info is not None or (not has_suite and entry is not None),
                kind=info["kind"] if info else None,
                trajectory_mode=info["mode"] if info else None,
                n=n if entry is not None else None,
                score=entry["score"] if entry else None,
                passed=entry["passed"] if entry else None,
                trials=shown,
            )
        )
    if trial_index is not None and not any(t.trials for t in out_tasks):
        where = f"task {task_id} of run {run_id}" if task_id else f"run {run_id}"
        raise UnknownSelection(f"{where} has no trial {trial_index}")
    return Explanation(
        run_id=run_id,
        suite_id=plan.suite_id,
        suite_version=plan.suite_version,
        graded_from="suite" if has_suite else "host-record",
        graded=True,
        not_graded=[],
        options=options,
        task_filter=task_id,
        trial_filter=trial_index,
        tasks=out_tasks,
        problems=[
            p
            for p in run_problems
            if (p.sequence, p.code) not in attached
            and p.code not in ("trial-missing", "task-missing")
        ],
        notes=notes,
    )


def _trial_count(plan: Any, entry: dict[str, Any] | None, has_suite: bool) -> int | None:
    """n (§3.5): trials.count (absent: 1), or a no-suite run's trialCount (D-4)."""
    if entry is not None and "trials" in entry:
        return int(entry["trials"]["n"])
    if has_suite:
        return int((plan.doc.get("trials") or {}).get("count", 1))
    return plan.trial_count


def _explain_trial(
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
) -> TrialExplanation:
    base = {
        "task_id": t["task_id"],
        "trial_index": t["trial_index"],
        "sequence": t["scored_seq"],
        "problems": trial_problems,
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
        trajectory = _trajectory(row, t, trajectories, bracket_calls)
    fixture = None
    if t["has_fixtures"]:
        fixture = _fixtures(row, t, fixtures, options)
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
        why=_why(row, t, has_suite),
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


# --------------------------------------------------------------------------------------------
# Text


#: a JSON cell longer than this is cut in the text (the JSON output keeps every character)
CELL_WIDTH = 40

#: findings shown per trial in the text (the JSON output has them all)
FINDINGS_SHOWN = 4


def _cut(text: str, width: int = CELL_WIDTH) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def _table(rows: list[list[str]], right: set[int], indent: str) -> list[str]:
    """Columns padded to their widest cell; columns in `right` are right-aligned."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for cells in rows:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        lines.append((indent + "  ".join(parts)).rstrip())
    return lines


def _args_cell(args_match: str, args: str | None) -> str:
    if args is None or args_match == "ignore":
        return "any args"
    return f"{args_match} {_cut(args, CELL_WIDTH - len(args_match) - 1)}"


def _observed_flags(call: ObservedCall, extra: set[int]) -> str:
    flags = []
    if call.forbidden:
        flags.append("FORBIDDEN")
    if call.pos in extra:
        flags.append("EXTRA")
    if call.pos is None:
        flags.append(f"not in the path (agent {call.agent_id or 'none'})")
    return ", ".join(flags)


def _trajectory_lines(traj: Trajectory) -> list[str]:
    delegates = ", delegates included" if traj.include_delegates else ""
    state = "matched" if traj.matched else f"unmatched ({traj.reason})"
    lines = [
        f"    trajectory {traj.mode}{delegates}: {state}; expected {traj.expected_count}, "
        f"observed {traj.observed_count}, matched {traj.matched_count}, "
        f"forbidden {traj.forbidden_count}"
    ]
    header = ["E", "tool", "args", "", "O", "event", "tool", "inputs", ""]
    rows = [header]
    by_pos = {c.pos: c for c in traj.observed}
    extra = {
        f.observed_pos for f in traj.findings if f.code == "extra" and f.observed_pos is not None
    }

    def right_cells(call: ObservedCall | None) -> list[str]:
        if call is None:
            return ["", "", "", "", ""]
        return [
            "-" if call.pos is None else str(call.pos),
            str(call.sequence),
            call.tool,
            _cut(call.inputs or "null"),
            _observed_flags(call, extra),
        ]

    # beside an unpaired expected call: the call a finding compared it with, marked `x`
    beside: dict[int, int] = {}
    for f in traj.findings:
        if (
            f.code in ("missing", "order")
            and f.why in ("args-differ", "tool-differs")
            and f.expected_pos is not None
            and f.observed_pos is not None
            and by_pos[f.observed_pos].expected_pos is None
            and f.observed_pos not in beside.values()
        ):
            beside.setdefault(f.expected_pos, f.observed_pos)
    for e in traj.expected:
        if e.observed_pos is not None:
            partner, mark = by_pos.get(e.observed_pos), "="
        elif e.pos in beside:
            partner, mark = by_pos[beside[e.pos]], "x"
        else:
            partner, mark = None, ""
        rows.append(
            [str(e.pos), e.tool, _args_cell(e.args_match, e.args), mark, *right_cells(partner)]
        )
    for call in traj.observed:
        if call.expected_pos is None and call.pos not in beside.values():
            rows.append(["", "", "", "", *right_cells(call)])
    for call in traj.others:
        rows.append(["", "", "", "", *right_cells(call)])
    if len(rows) > 1:
        lines += _table(rows, {4, 5}, "      ")
    if beside:
        lines.append("      (= paired in the maximum matching; x the call it was compared with)")
    lines += _finding_lines(traj.findings, "    why: ")
    return lines


def _finding_lines(findings: list[FailedCheck], label: str) -> list[str]:
    lines = []
    pad = " " * len(label)
    for number, finding in enumerate(findings[:FINDINGS_SHOWN]):
        lines.append(f"{label if number == 0 else pad}{finding.message}")
    if len(findings) > FINDINGS_SHOWN:
        lines.append(f"{pad}... and {len(findings) - FINDINGS_SHOWN} more (--json lists all)")
    return lines


def _fixture_lines(fix: Fixtures) -> list[str]:
    declared = fix.on_miss_declared or f"absent, read as {fix.on_miss} (D-9)"
    if not fix.fixtured:
        return [f"    fixtures: {fix.note}"]
    outcome = (
        "failed closed (D-9)"
        if fix.failed_closed
        else ("counted only (D-9)" if fix.misses else "every call served")
    )
    lines = [f"    fixtures (onMiss {declared}): {_count(fix.misses, 'miss')}, {outcome}"]
    rows = [["call", "event", "tool", "inputs", "served by"]]
    for call in fix.calls:
        served = f"F{call.entry_pos}" if call.entry_pos is not None else "MISS"
        inputs = _cut(call.inputs or "null")
        rows.append([str(call.call_pos), str(call.sequence), call.tool, inputs, served])
    if len(rows) > 1:
        lines += _table(rows, {0, 1}, "      ")
    unused = [f"F{e.pos}" for e in fix.entries if e.served_call_pos is None]
    if unused:
        lines.append(f"      entries not used: {', '.join(unused)}")
    lines += _finding_lines([c.miss for c in fix.calls if c.miss is not None], "    miss: ")
    return lines


def _headline(trial: TrialExplanation) -> str:
    where = (
        f"eval.scored event {trial.sequence}" if trial.sequence is not None else "no eval.scored"
    )
    if trial.status == "missing":
        return f"  trial {trial.trial_index}  MISSING  ({where})"
    if trial.status == "left-out":
        return f"  trial {trial.trial_index}  LEFT OUT  {trial.left_out}  ({where})"
    assert trial.grade is not None
    row = trial.grade.row
    tags = []
    if row["trajectory_reason"]:
        tags.append(row["trajectory_reason"])
    if row["failed_closed"]:
        tags.append("failed closed")
    if not tags and not row["passed"]:
        tags.append("output grade")
    bracket = trial.bracket
    if bracket is not None and bracket.start_sequence is not None:
        span = f"{bracket.start_sequence}-{bracket.end_sequence}"
        where += f"; bracket events {span}" + ("" if bracket.closed else " (unclosed)")
    elif bracket is not None:
        where += "; no bracket"
    tag = f"  {', '.join(tags)}" if tags else ""
    return f"  trial {trial.trial_index}  {trial.verdict.upper()}{tag}  ({where})"


def _usage_line(trial: TrialExplanation) -> list[str]:
    assert trial.grade is not None
    g = trial.grade
    row = g.row
    latency = (
        f"latency {_fmt(row['latency_ms'])} ms ("
        + ("host latencyMs" if g.latency_source == "host" else "bracket span")
        + ")"
        if row["latency_ms"] is not None
        else "no latency"
    )
    if g.cost_source == "usage":
        cost = f"cost {_fmt(row['usage_cost_usd'])} USD (provider.usage in the segment)"
    elif g.cost_source == "host":
        cost = f"cost {_fmt(g.host_cost_usd)} USD (host costUsd: no usage cost in the run, D-14)"
    else:
        cost = "no cost"
    lines = [
        f"    usage: {_count(row['tool_call_count'], 'tool call')}, "
        f"{_count(row['model_call_count'], 'model call')}, "
        f"{row['input_tokens']} in / {row['output_tokens']} out tokens (in the bracket)",
        f"    {cost}; {latency}",
    ]
    judge = trial.judge
    if judge is not None and judge.count:
        cost_text = f", {_fmt(judge.cost_usd)} USD" if judge.cost_usd is not None else ""
        lines.append(
            f"    judge: {_count(judge.count, 'model call')} outside the bracket "
            f"({judge.input_tokens} in / {judge.output_tokens} out tokens{cost_text}): "
            "in cost, not in efficiency (D-6)"
        )
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else ('es' if noun.endswith('s') else 's')}"


def _trial_lines(trial: TrialExplanation) -> list[str]:
    lines = [_headline(trial)]
    if trial.grade is not None:
        row = trial.grade.row
        g = trial.grade
        host = f"host score {_fmt(g.host_score)}, host passed {_yes(g.host_passed)}"
        lines.append(
            f"    score {_fmt(row['score'])}, gating {_fmt(row['gating_score'])}, "
            f"passed {_yes(row['passed'])}  ({host})"
        )
    lines += [f"    - {why}" for why in trial.why]
    if trial.trajectory is not None:
        lines += _trajectory_lines(trial.trajectory)
    if trial.fixtures is not None:
        lines += _fixture_lines(trial.fixtures)
    if trial.grade is not None:
        lines += _usage_line(trial)
    if trial.problems:
        listed = ", ".join(
            f"{p.code} (event {p.sequence})" if p.sequence is not None else p.code
            for p in trial.problems
        )
        lines.append(f"    problems: {listed}")
    return lines


def _task_header(task: TaskExplanation, has_suite: bool) -> str:
    if not task.in_suite:
        return f"task {task.task_id}  not in the suite: its trials are left out (D-13)"
    if has_suite:
        kind = task.kind or "?"
        if task.trajectory_mode:
            kind += f", trajectory {task.trajectory_mode}"
    else:
        kind = "host record"
    trials = f"{task.n} trial{'s' if task.n != 1 else ''}" if task.n is not None else "trials"
    return (
        f"task {task.task_id}  {kind}, {trials}: task score {_fmt(task.score)}, "
        f"passed {_yes(task.passed)}"
    )


def render_text(expl: Explanation) -> str:
    """The explanation for a terminal: a header per run and task, a block per trial."""
    suite = f"{expl.suite_id}@{expl.suite_version}"
    if not expl.graded:
        lines = [f"run {expl.run_id}  suite {suite}: NOT GRADED"]
        lines += [f"  {p.code}: {p.message}" for p in expl.not_graded]
    elif expl.graded_from == "suite":
        lines = [f"run {expl.run_id}  suite {suite} (graded from the suite)"]
    else:
        lines = [
            f"run {expl.run_id}  suite {suite} not given: graded from the host record, "
            "no trajectory or fixture checks (D-4)"
        ]
    defaults = GradeOptions()
    if expl.options != defaults:
        lines.append(
            f"options: --default-pass-score {_fmt(expl.options.default_pass_score)} "
            f"--on-miss-default {expl.options.on_miss_default}"
        )
    shown = [p for p in expl.problems if p.code != "suite-missing"]  # the header says so
    if shown:
        listed = ", ".join(
            f"{p.code} (event {p.sequence})" if p.sequence is not None else p.code for p in shown
        )
        lines.append(f"run problems: {listed}")
    lines += [f"note: {note}" for note in expl.notes]
    for task in expl.tasks:
        lines.append("")
        lines.append(_task_header(task, expl.graded_from == "suite"))
        if not task.trials:
            lines.append("  no trial")
        for trial in task.trials:
            lines += _trial_lines(trial)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# JSON


def _diff_json(diff: ArgsDiff | None) -> dict[str, Any] | None:
    if diff is None:
        return None
    return {"path": diff.path, "expected": diff.expected, "observed": diff.observed}


def _finding_json(f: FailedCheck | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "code": f.code,
        "why": f.why,
        "message": f.message,
        "expectedPos": f.expected_pos,
        "observedPos": f.observed_pos,
        "tool": f.tool,
        "diff": _diff_json(f.diff),
    }


def _problem_json(p: Problem) -> dict[str, Any]:
    return {"code": p.code, "severity": p.severity, "sequence": p.sequence, "message": p.message}


def _observed_json(c: ObservedCall) -> dict[str, Any]:
    return {
        "pos": c.pos,
        "callPos": c.call_pos,
        "sequence": c.sequence,
        "agentId": c.agent_id,
        "tool": c.tool,
        "inputs": c.inputs,
        "expectedPos": c.expected_pos,
        "forbidden": c.forbidden,
    }


#: trials-table column -> JSON key of a trial's `grade`
GRADE_KEYS = {
    "score": "score",
    "gating_score": "gatingScore",
    "passed": "passed",
    "trajectory_matched": "trajectoryMatched",
    "trajectory_reason": "trajectoryReason",
    "observed_count": "observedCount",
    "matched_count": "matchedCount",
    "forbidden_count": "forbiddenCount",
    "fixture_misses": "fixtureMisses",
    "failed_closed": "failedClosed",
    "has_bracket": "hasBracket",
    "bracket_closed": "bracketClosed",
    "latency_ms": "latencyMs",
    "tool_call_count": "toolCallCount",
    "model_call_count": "modelCallCount",
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "usage_cost_usd": "usageCostUsd",
}


def _trial_json(t: TrialExplanation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": t.task_id,
        "trialIndex": t.trial_index,
        "sequence": t.sequence,
        "status": t.status,
        "verdict": t.verdict,
        "leftOut": t.left_out,
        "why": list(t.why),
        "grade": None,
        "bracket": None,
        "trajectory": None,
        "fixtures": None,
        "judgeCalls": None,
        "problems": [_problem_json(p) for p in t.problems],
    }
    if t.grade is not None:
        g = t.grade
        grade_json = {key: g.row[column] for column, key in GRADE_KEYS.items()}
        grade_json |= {
            "hostScore": g.host_score,
            "hostPassed": g.host_passed,
            "hostLatencyMs": g.host_latency_ms,
            "hostCostUsd": g.host_cost_usd,
            "latencySource": g.latency_source,
            "costSource": g.cost_source,
        }
        out["grade"] = grade_json
    if t.bracket is not None:
        out["bracket"] = {
            "startSequence": t.bracket.start_sequence,
            "endSequence": t.bracket.end_sequence,
            "closed": t.bracket.closed,
            "targetAgentId": t.bracket.target_agent_id,
        }
    if t.trajectory is not None:
        tr = t.trajectory
        out["trajectory"] = {
            "mode": tr.mode,
            "includeDelegates": tr.include_delegates,
            "matched": tr.matched,
            "reason": tr.reason,
            "expectedCount": tr.expected_count,
            "observedCount": tr.observed_count,
            "matchedCount": tr.matched_count,
            "forbiddenCount": tr.forbidden_count,
            "expected": [
                {
                    "pos": e.pos,
                    "tool": e.tool,
                    "argsMatch": e.args_match,
                    "args": e.args,
                    "observedPos": e.observed_pos,
                }
                for e in tr.expected
            ],
            "observed": [_observed_json(c) for c in tr.observed],
            "others": [_observed_json(c) for c in tr.others],
            "findings": [_finding_json(f) for f in tr.findings],
        }
    if t.fixtures is not None:
        fx = t.fixtures
        out["fixtures"] = {
            "fixtured": fx.fixtured,
            "note": fx.note,
            "onMiss": fx.on_miss,
            "onMissDeclared": fx.on_miss_declared,
            "misses": fx.misses,
            "failedClosed": fx.failed_closed,
            "entries": [
                {
                    "pos": e.pos,
                    "tool": e.tool,
                    "argsMatch": e.args_match,
                    "args": e.args,
                    "servedCallPos": e.served_call_pos,
                }
                for e in fx.entries
            ],
            "calls": [
                {
                    "callPos": c.call_pos,
                    "sequence": c.sequence,
                    "tool": c.tool,
                    "inputs": c.inputs,
                    "entryPos": c.entry_pos,
                    "miss": _finding_json(c.miss),
                }
                for c in fx.calls
            ],
        }
    if t.judge is not None:
        out["judgeCalls"] = {
            "count": t.judge.count,
            "inputTokens": t.judge.input_tokens,
            "outputTokens": t.judge.output_tokens,
            "costUsd": t.judge.cost_usd,
        }
    return out


def to_json(expl: Explanation) -> dict[str, Any]:
    """The explanation as plain JSON values, in the documented shape (module docstring)."""
    return {
        "explainVersion": EXPLAIN_VERSION,
        "runId": expl.run_id,
        "suiteId": expl.suite_id,
        "suiteVersion": expl.suite_version,
        "gradedFrom": expl.graded_from,
        "graded": expl.graded,
        "notGraded": [_problem_json(p) for p in expl.not_graded],
        "options": {
            "defaultPassScore": expl.options.default_pass_score,
            "onMissDefault": expl.options.on_miss_default,
        },
        "filter": {"taskId": expl.task_filter, "trialIndex": expl.trial_filter},
        "problems": [_problem_json(p) for p in expl.problems],
        "notes": list(expl.notes),
        "tasks": [
            {
                "taskId": task.task_id,
                "inSuite": task.in_suite,
                "kind": task.kind,
                "trajectoryMode": task.trajectory_mode,
                "n": task.n,
                "score": task.score,
                "passed": task.passed,
                "trials": [_trial_json(t) for t in task.trials],
            }
            for task in expl.tasks
        ],
    }
