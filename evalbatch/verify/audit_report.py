"""What `evalbatch verify` reports (CONTRACT §8): findings, each run's verdict, the whole report.

A finding is one host value that disagrees with the recomputation, or one stream rule the host
broke, with the rule that decides it; a run's verdict is `agrees`, `disagrees` or `not-verified`;
the report adds the per-field tally, its verdict and exit code (E-31) and its JSON document.
Every check family writes `Finding`s, and everything that reads verify's result (the printed
tables, `--json`, the API) reads these three types, so they hold no checking logic.

Every finding is content-free: ids, field names, numbers, booleans and rule ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from evalbatch.errors import EXIT_FAILED, EXIT_OK, EXIT_SKIPPED, EXIT_UNUSABLE
from evalbatch.inputs import event_files

#: RFC 0244 §B: |host - recomputed| <= TOLERANCE * max(1, |recomputed|)
TOLERANCE = 1e-9

Verdict = Literal["agrees", "disagrees", "not-verified"]


@dataclass(frozen=True)
class Finding:
    """One host value that disagrees with the recomputation, or one stream rule it breaks."""

    run_id: str
    field: str  # the host field, e.g. `eval.scored.passed`, `summary.tasks.trials.passHatK`
    host: Any  # a number, boolean, id, null, or a tag: <absent>, <present>, <string>, ...
    recomputed: Any
    rule: str  # the contract or RFC rule that decides it, e.g. `D-10`, `§3.2`, `RFC 0244 §E`
    task_id: str | None = None
    trial_index: int | None = None
    sequence: int | None = None  # the host event carrying the field, when it is on an event
    reason: str | None = None  # a content-free reason code, e.g. `forbidden`, `fixture-miss`

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "taskId": self.task_id,
            "trialIndex": self.trial_index,
            "sequence": self.sequence,
            "field": self.field,
            "host": self.host,
            "recomputed": self.recomputed,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass
class RunVerdict:
    """One eval run's verdict."""

    run_id: str
    suite_id: str | None
    suite_version: str | None
    verdict: Verdict
    graded_from: Literal["suite", "host-record"] | None  # None when not recomputed
    on_miss_reading: Literal["count", "fail"] | None = None  # set when an absent onMiss mattered
    summary_checked: bool = False
    findings: int = 0
    problems: list[str] = field(default_factory=list)  # why a run was not recomputed
    #: host fields not compared because an Inspect log never writes them, with how often
    #: (E-148), and the errored samples its aggregate was compared without (E-147)
    not_written: dict[str, int] = field(default_factory=dict)
    errored_left_out: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "suiteId": self.suite_id,
            "suiteVersion": self.suite_version,
            "verdict": self.verdict,
            "gradedFrom": self.graded_from,
            "onMissReading": self.on_miss_reading,
            "summaryChecked": self.summary_checked,
            "findings": self.findings,
            "problems": self.problems,
            "notWritten": dict(sorted(self.not_written.items())),
            "erroredLeftOut": self.errored_left_out,
        }


@dataclass
class VerifyReport:
    """Every run's verdict, every finding, and per host field how often it was compared."""

    runs: list[RunVerdict]
    findings: list[Finding]
    compared: dict[str, int]
    disagreed: dict[str, int]
    #: event files left out (unreadable, columns missing): their runs were not verified (E-31)
    skipped_files: list[event_files.FileProblem] = field(default_factory=list)
    #: the report by RFC 0244 requirement, when asked for (E-104)
    conformance: Any = None

    @property
    def verdict(self) -> str:
        if not self.runs:
            return "nothing-to-verify"
        if any(r.verdict == "disagrees" for r in self.runs):
            return "disagrees"
        if self.skipped_files or any(r.verdict == "not-verified" for r in self.runs):
            return "not-verified"
        return "agrees"

    @property
    def exit_code(self) -> int:
        """0 all agree; 1 some disagree; 3 some run could not be recomputed; 2 no eval run
        (E-31)."""
        return {
            "agrees": EXIT_OK,
            "disagrees": EXIT_FAILED,
            "not-verified": EXIT_SKIPPED,
            "nothing-to-verify": EXIT_UNUSABLE,
        }[self.verdict]

    def to_json(self) -> dict[str, Any]:
        """A stable document: the verdict, the tolerance, runs, findings, the field tally."""
        return {
            "verdict": self.verdict,
            "tolerance": {"relative": TOLERANCE},
            "runs": [run.to_json() for run in self.runs],
            "skippedFiles": [{"path": f.path, "code": f.code} for f in self.skipped_files],
            "findings": [finding.to_json() for finding in self.findings],
            "fields": {
                name: {"compared": self.compared[name], "disagree": self.disagreed.get(name, 0)}
                for name in sorted(self.compared)
            },
        }
