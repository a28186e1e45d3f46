"""Problem codes: one row per thing that was off in the input (CONTRACT §6, docs/decisions.md).

A problem of severity `error` means the run was not graded; `warning` and `info` runs are graded.
"""

from __future__ import annotations

import re
from typing import Literal

Severity = Literal["error", "warning", "info"]

# The ranges a value must lie in to be used (docs/decisions.md E-76..E-79). They are checked where
# the value enters (the SQL stage reads them as macros of the same names), so no sum, difference or
# pass@k table built from accepted values can overflow or run for hours.

#: E-76: a sequence is an integer 0..2^53-1 (OpenWOP: "integer >= 0"; JSON's exact integers)
MAX_SEQUENCE = 2**53 - 1
#: E-77: a cost (provider.usage.costEstimateUsd, eval.scored.costUsd) is a number 0..1e9 USD
MAX_COST_USD = 1_000_000_000
#: E-77: eval.scored.latencyMs is a number 0..2^53 ms (about 285,000 years)
MAX_LATENCY_MS = 2**53
#: E-77: a provider.usage token count is an integer 0..1e10, so sums over a run never overflow
MAX_TOKENS = 10_000_000_000
#: E-78: trials per task (a suite's trials.count, eval.started.trialCount) are at most 10,000
MAX_TRIALS = 10_000
#: RFC 0244 §E: what an eval.scored's optional scoreLabel and evaluatorType may hold (`verify`
#: checks a host's against them; exports carry only values that hold)
SCORE_LABEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.ASCII)
EVALUATOR_TYPES = frozenset({"deterministic", "llm_judge", "human"})

#: code -> (severity, what it means). Messages add the run, the event's sequence and the rule.
CODES: dict[str, tuple[Severity, str]] = {
    # input files and rows
    "file-unreadable": ("error", "a file is not Parquet, is truncated, or cannot be read"),
    "columns-missing": (
        "error",
        "a file lacks a required column (runId, sequence, type, payload) or holds one in a type "
        "that cannot hold its values (E-125)",
    ),
    "row-invalid": (
        "warning",
        "a row's runId is null, empty or white space: it cannot be placed in any run (E-3)",
    ),
    "sequence-invalid": (
        "error",
        "a row's sequence is null, not an integer, or outside 0..2^53-1 (E-3, E-76)",
    ),
    "type-missing": (
        "error",
        "a row's type is null: it may be an event grading reads, so the run is not graded (E-80)",
    ),
    "event-conflict": ("error", "two rows share (runId, sequence) with different content (D-3)"),
    "payload-invalid": ("error", "a payload graded by the job is not JSON (D-3)"),
    "payload-ignored": ("warning", "a payload of a type grading does not read is not JSON (D-3)"),
    "sequence-gap": ("warning", "the run's sequence numbers skip values (D-3)"),
    # eval span
    "eval-incomplete": ("warning", "eval.started without eval.completed (§2.1)"),
    "eval-restarted": ("error", "a second eval.started in one run (§2.1)"),
    "scored-after-completed": (
        "warning",
        "an eval.scored after eval.completed belongs to no trial",
    ),
    "completed-repeated": (
        "warning",
        "a second eval.completed in one eval run; the first ends the span and stands (E-113)",
    ),
    # suites
    "suite-missing": ("warning", "no suite supplied: graded from the host record (D-4)"),
    "suite-invalid": ("error", "the run's suite fails validation (§1.3)"),
    "suite-conflict": (
        "error",
        "two suite files claim the suite id and version with different content",
    ),
    "target-agent-mismatch": (
        "warning",
        "the bracket's agent differs from the suite's targetAgentId",
    ),
    # trials
    "trial-index-invalid": ("warning", "trialIndex is not an integral number >= 0 (D-5)"),
    "trial-count-invalid": ("warning", "eval.started.trialCount is not an integral number >= 1"),
    "trial-count-limit": (
        "error",
        f"eval.started.trialCount exceeds the limit of {MAX_TRIALS} trials per task (E-78)",
    ),
    "trial-duplicate": (
        "warning",
        "a repeated (taskId, trialIndex); the later one is left out (D-5)",
    ),
    "trial-extra": ("warning", "a trialIndex >= the trial count is left out (D-5)"),
    "trial-missing": ("warning", "a trial the log lacks counts as failed with score 0 (D-12)"),
    "task-missing": ("warning", "a suite task with no trial in the log (D-13)"),
    "task-unknown": ("warning", "an eval.scored for a taskId not in the suite is left out (D-13)"),
    "bracket-unclosed": (
        "warning",
        "the trial's invocation never completes inside its segment (§2.1)",
    ),
    "bracket-missing": (
        "warning",
        "the trial's segment has no agent.invocation-started (§2.1, D-18)",
    ),
    # delegates that ran as child runs (E-102): the trial cannot show its path, so it fails
    "delegate-log-missing": (
        "warning",
        "a child run the trial's bracket names has no event in the input: the trajectory is "
        "unmatched (E-102)",
    ),
    "delegate-log-invalid": (
        "warning",
        "a child run's log cannot be read whole, or an event hides which children ran: the "
        "trajectory is unmatched (E-102)",
    ),
    "delegate-cycle": (
        "warning",
        "a child run is already on the path from the trial (a run naming itself or an "
        "ancestor): not followed, the trajectory is unmatched (E-102)",
    ),
    "delegate-suite-mismatch": (
        "warning",
        "a child run is an eval run of another suite: the trajectory is unmatched (E-102)",
    ),
    # host record and usage
    "score-invalid": ("warning", "eval.scored.score missing, not a number or outside 0..1 (D-11)"),
    "passed-invalid": ("warning", "eval.scored.passed missing or not a boolean (D-11)"),
    "sample-errored": (
        "warning",
        "the Inspect sample of the trial errored: the trial fails with score 0 (E-147)",
    ),
    "usage-tokens-invalid": (
        "warning",
        f"provider.usage token count not an integral number 0..{MAX_TOKENS} (§2.2, E-77)",
    ),
    "cost-invalid": (
        "warning",
        f"a cost that is null, not a number, negative or above {MAX_COST_USD} USD carries no cost"
        " (D-14, E-77)",
    ),
    "non-usd-cost": ("warning", "a provider.usage cost in another currency is left out (D-14)"),
    # regression (§5)
    "regression-unavailable": (
        "warning",
        "the baseline named by eval.started.baselineRunId cannot be compared (§5)",
    ),
    # outputs
    "summary-invalid": (
        "error",
        "the summary fails the EvalSummary schema and is not written (§4)",
    ),
    # ingest (§1.2): `error` means the line, frame, item or file was skipped, not a run
    "input-unreadable": (
        "error",
        "an input file cannot be read, is not JSON, JSON lines or an SSE stream (§1.2), or "
        "is past a limit on input (E-115, E-116)",
    ),
    "line-invalid": (
        "error",
        "a JSON-lines line is not JSON, nests too deep or is too long (E-115, E-116); the other "
        "lines are read (§1.2)",
    ),
    "frame-invalid": (
        "error",
        "an SSE frame's data is not JSON, nests too deep or is too long (E-115, E-116); the "
        "other frames are read",
    ),
    "event-invalid": (
        "error",
        "an item is not a RunEventDoc: no string runId or type, or no integer sequence >= 0",
    ),
    "bundle-truncated": (
        "warning",
        "a v1 debug bundle says it is truncated: only a prefix of the run's events is there",
    ),
    "bundle-count-mismatch": (
        "warning",
        "a v1 debug bundle holds a different number of events than its metrics.eventCount",
    ),
    # Inspect eval logs (E-111)
    "inspect-unavailable": (
        "error",
        "an Inspect eval log, and Inspect's log reader (evalbatch[inspect]) is not installed",
    ),
    "inspect-log-version": ("error", "an Inspect log of a version this reader does not know"),
    "inspect-samples-unreadable": (
        "warning",
        "an Inspect log's samples stop being readable part way: those before are kept",
    ),
    "inspect-sample-unscored": (
        "warning",
        "Inspect samples without a usable score from the scorer used: each fails closed (D-11)",
    ),
    "inspect-sample-left-out": (
        "warning",
        "errored Inspect samples left out of the run, as Inspect leaves them out of its figures "
        "(--inspect-errored leave-out, E-147)",
    ),
    "inspect-eval-unfinished": (
        "warning",
        "an Inspect eval that errored, was cancelled or never finished: its scored samples are "
        "graded, the run has no eval.completed",
    ),
}


def severity(code: str) -> Severity:
    """The severity a problem code always has."""
    return CODES[code][0]


ProblemRow = tuple[str | None, int | None, str, str]  # (run_id, sequence, code, detail)


def problem_message(run_id: str | None, sequence: int | None, code: str, detail: str = "") -> str:
    """A content-free message naming the run, the event and the rule."""
    where = f"run {run_id}" if run_id else "input"
    if sequence is not None:
        where += f", event {sequence}"
    text = f"{where}: {CODES[code][1]} [{code}]"
    return f"{text}: {detail}" if detail else text
