"""What an explanation of one eval run holds: its tasks, their trials, and per trial the grade,
the bracket, the trajectory's calls and findings, the fixture replay and the judge calls.

Plain frozen values, computed by `run_explanation` and shown by `text_rendering` and `json_shape`.
Positions count from 0: `E<pos>` is the suite's expected call, `O<pos>` the observed trajectory's
call, `F<pos>` the fixture entry, and `call_pos` the call's place among every call in the bracket.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalbatch.explain.call_args import ArgsDiff
from evalbatch.explain.observed_calls import ObservedCall
from evalbatch.options import GradeOptions


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
class Cut:
    """A text read from a log, cut to its first `shown` characters (`sample_text.TEXT_CHARS`):
    `length` is how many it has in all."""

    shown: str
    length: int

    @property
    def cut(self) -> bool:
        return self.length > len(self.shown)


@dataclass(frozen=True)
class SampleText:
    """What a trial's Inspect sample said, read from its log for `explain --sample-text` only
    (E-150; never in a summary or a table, §H), each text cut (`Cut`).

    scorer: the scorer whose answer and explanation these are (None: the log has none).
    answer: that scorer's answer (`answer_from` `score`), else the model's final output
        (`output`); None when the sample has neither.
    target: the sample's target (a list of targets as a JSON array).
    explanation: that scorer's explanation, when it gave one.
    error: the sample's error message, when it errored.
    unread: why the sample was not read (past a cap, not in the log); the rest is then None.
    """

    scorer: str | None
    answer: Cut | None = None
    answer_from: str | None = None
    target: Cut | None = None
    explanation: Cut | None = None
    error: Cut | None = None
    unread: str | None = None


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
    #: the Inspect sample and epoch the trial ran (E-146); None for any other log's trial
    sample_id: str | None = None
    epoch: int | None = None
    #: with `--sample-text` only: what its sample said (E-150)
    sample_text: SampleText | None = None

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
    #: what an Inspect log calls the run (`model`, `task_name`, `log_file`: the names it has,
    #: E-146); empty for a run from any other log
    names: dict[str, str] = field(default_factory=dict)
    #: with `--sample-text` only: the Inspect log the trials' sample text was read from (E-150)
    sample_log: str | None = None
