"""Audit a host: recompute every eval run and compare with what the host recorded (CONTRACT §8).

The grade is a pure function of the suite and the log (RFC 0244 "Recomputable by design"), so a
host's own record can be checked against it: each `eval.scored` (score and passed per task and
trial), the `eval.completed` aggregate, and any EvalSummary the host served. Numbers agree within
RFC 0244 §B's tolerance, `|host - recomputed| <= 1e-9 * max(1, |recomputed|)`. The event stream
is also checked against the rules RFC 0244 §B and §E set for it (contiguous, unique `trialIndex`,
`trialCount`, `scoreLabel`, `evaluatorType`), and a served summary must be content-free.

Every finding is content-free: ids, field names, numbers, booleans and rule ids. A host value
that is text where a number belongs is shown as its JSON type (`<string>`), never as its text.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import duckdb
import polars as pl

from evalbatch.errors import EXIT_FAILED, EXIT_OK, EXIT_SKIPPED, EXIT_UNUSABLE, InputError
from evalbatch.extract import sql_files, trial_tables
from evalbatch.grade import trial_grading
from evalbatch.inputs import event_files, in_memory, suites
from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.grading import Paths, as_paths, suites_keyword
from evalbatch.pipeline.local import MergedBatches, grade_shards_locally
from evalbatch.problems import EVALUATOR_TYPES, SCORE_LABEL
from evalbatch.reduce import stats
from evalbatch.reduce.run_summaries import RunOutcome, RunPlan

#: RFC 0244 §B: |host - recomputed| <= TOLERANCE * max(1, |recomputed|)
TOLERANCE = 1e-9

#: exit codes: all agree; some host value disagrees; unusable input; some run not recomputable


#: id-like text a finding may show (suite ids, versions, task ids, enum values)
_SHOWABLE = re.compile(r"[A-Za-z0-9._~:/@-]{1,128}", re.ASCII)

#: RFC 0081 summary fields the log cannot supply: accepted in a host summary, not compared (§4)
_RFC0081_TOP = {"pinnedNodeIds"}
_RFC0081_TASK = {"schemaValid", "safetyFindings"}
_REGRESSION_KEYS = {
    "baselineRunId",
    "scoreDelta",
    "diffRef",
    "verdict",
    "method",
    "alpha",
    "pairedTaskCount",
}
_SEVERITIES = {"low", "medium", "high", "critical"}

Verdict = Literal["agrees", "disagrees", "not-verified"]


class _Missing:
    """A field the document does not carry (as opposed to an explicit null)."""

    def __repr__(self) -> str:
        return "<absent>"


MISSING: Any = _Missing()
ABSENT_TEXT, PRESENT_TEXT = "<absent>", "<present>"
VALID_TEXT, INVALID_TEXT = "<valid>", "<invalid>"
_TAGS = frozenset({ABSENT_TEXT, PRESENT_TEXT, VALID_TEXT, INVALID_TEXT})


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


# --------------------------------------------------------------------------------------------
# Comparing values


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(host: Any, recomputed: Any, abs_tol: float = 0.0) -> bool:
    """Equal as the contract compares: booleans are not numbers; numbers within RFC 0244 §B
    (E-28)."""
    if recomputed is MISSING or host is MISSING:
        return host is recomputed
    if isinstance(recomputed, bool):
        return isinstance(host, bool) and host == recomputed
    if _is_number(recomputed):
        if not _is_number(host) or not math.isfinite(host):
            return False
        bound = max(TOLERANCE * max(1.0, abs(recomputed)), abs_tol)
        return abs(host - recomputed) <= bound
    return type(host) is type(recomputed) and host == recomputed


def _shown(value: Any, text: bool = False) -> Any:
    """A value as a finding may show it: numbers, booleans and null as they are; text only for
    id and enum fields and only when id-like; anything else as its JSON type."""
    if value is MISSING:
        return ABSENT_TEXT
    if value is None or isinstance(value, bool):
        return value
    if _is_number(value):
        return value if math.isfinite(value) else "<number>"
    if isinstance(value, str):
        shown = text and (value in _TAGS or _SHOWABLE.fullmatch(value) is not None)
        return value if shown else "<string>"
    if isinstance(value, list):
        return "<array>"
    return "<object>"


def _exact(value: float) -> Fraction:
    """The decimal a double was read from (its shortest text), as an exact rational (D-17)."""
    return Fraction(Decimal(repr(float(value))))


Cause = tuple[str, str | None]


class _Checker:
    """Collects one run's comparisons: a tally per host field and a finding per disagreement."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.findings: list[Finding] = []
        self.compared: Counter[str] = Counter()

    def check(
        self,
        field_name: str,
        host: Any,
        recomputed: Any,
        cause: Cause | Callable[[], Cause],
        *,
        task: str | None = None,
        trial: int | None = None,
        sequence: int | None = None,
        abs_tol: float = 0.0,
        also_accept: Iterable[Any] = (),
        text: bool = False,
    ) -> bool:
        """Compare one host value; record a finding (with its rule) when it disagrees."""
        self.compared[field_name] += 1
        if _same(host, recomputed, abs_tol) or any(_same(host, ok) for ok in also_accept):
            return True
        rule, reason = cause() if callable(cause) else cause
        self.findings.append(
            Finding(
                run_id=self.run_id,
                field=field_name,
                host=_shown(host, text),
                recomputed=_shown(recomputed, text=True),
                rule=rule,
                task_id=None if task is None else _shown(task, text=True),
                trial_index=trial,
                sequence=sequence,
                reason=reason,
            )
        )
        return False

    def present(
        self, field_name: str, host_has: bool, recomputed_has: bool, rule: str, **where: Any
    ) -> bool:
        """Whether an optional block is present on both sides or on neither."""
        return self.check(
            field_name,
            PRESENT_TEXT if host_has else ABSENT_TEXT,
            PRESENT_TEXT if recomputed_has else ABSENT_TEXT,
            (rule, None),
            text=True,
            **where,
        )


# --------------------------------------------------------------------------------------------
# Grading and reading the host record


def _grade(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    engine: Mapping[str, Any],
) -> MergedBatches:
    return MergedBatches.of(grade_shards_locally(paths, choices, options, **engine))


@dataclass
class _HostRecord:
    """The host's eval events (parsed payloads by (run, sequence)) and judge usage per trial."""

    payloads: dict[tuple[str, int], Any]
    scored: dict[str, list[int]]  # run -> eval.scored sequences, in order
    judge: dict[tuple[str, int], tuple[int, float, float]]  # (run, segment) -> calls, in, out


def _parse_payload(text: str | None) -> Any:
    """A payload as a strict JSON parser reads it (the last of repeated keys wins); a payload
    that is not JSON reads as having no fields (E-6)."""
    if text is None:
        return None

    def reject(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=reject)
    except (ValueError, RecursionError):
        return None


def _read_host(paths: list[str], trials: pl.DataFrame, engine: Mapping[str, Any]) -> _HostRecord:
    """Read the host's eval events and the judge calls of every counted trial (one pass each)."""
    con = trial_tables.connect(engine.get("resources"))
    try:
        sources = event_files.scan(con, paths)
        if engine.get("run_filter") is not None:
            engine["run_filter"].apply(con, sources)
        bounds = trials.filter("counted").select(
            "run_id",
            "segment_no",
            "segment_start_seq",
            "scored_seq",
            "bracket_start_seq",
            "bracket_end_seq",
        )
        try:
            event_files.register(con, sources)
            rows = sql_files.relation(con, "verify_host_events").fetchall()
        except duckdb.Error:
            if not event_files.find_unreadable(con, sources):
                raise
            event_files.register(con, sources)
            rows = sql_files.relation(con, "verify_host_events").fetchall()
        con.register("verify_trials", bounds.to_arrow())
        judge_rows = sql_files.relation(con, "verify_judge_usage").fetchall()
    finally:
        con.close()
    payloads: dict[tuple[str, int], Any] = {}
    scored: dict[str, list[int]] = defaultdict(list)
    for run_id, sequence, type_, payload in sorted(rows, key=lambda r: (r[0], r[1])):
        payloads[(run_id, sequence)] = _parse_payload(payload)
        if type_ == "eval.scored":
            scored[run_id].append(sequence)
    judge = {
        (run_id, segment): (int(calls), float(tokens_in or 0), float(tokens_out or 0))
        for run_id, segment, calls, tokens_in, tokens_out in judge_rows
    }
    return _HostRecord(payloads=payloads, scored=dict(scored), judge=judge)


def _field(payload: Any, name: str) -> Any:
    return payload.get(name, MISSING) if isinstance(payload, dict) else MISSING


# --------------------------------------------------------------------------------------------
# Host summaries (`GET /runs/{id}/eval-summary`)


@dataclass(frozen=True)
class HostSummary:
    """An EvalSummary a host served, with the run it belongs to when the file says so."""

    run_id: str | None
    doc: Any
    origin: str  # file and line or item, for messages


def _strict_json(text: str) -> Any:
    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=reject)


def _summaries_in(value: Any, origin: str) -> list[HostSummary]:
    """`{"runId", "summary"}` wrappers (as `evalbatch run` writes them) or bare EvalSummaries,
    alone or in an array."""
    if isinstance(value, list):
        found: list[HostSummary] = []
        for index, item in enumerate(value):
            found += _summaries_in(item, f"{origin} item {index}")
        return found
    if isinstance(value, dict) and "summary" in value and isinstance(value.get("runId"), str):
        return [HostSummary(value["runId"], value["summary"], origin)]
    if isinstance(value, dict):
        return [HostSummary(None, value, origin)]
    raise InputError(f"{origin}: not an EvalSummary object")


def load_summaries(paths: Sequence[str | Path]) -> list[HostSummary]:
    """Read host summaries: a JSON document (one summary, a wrapper, or an array of them) or
    JSON lines (one per line, as `summaries.jsonl`).

    Raises:
        InputError: a file cannot be read or is not JSON.
    """
    found: list[HostSummary] = []
    for given in paths:
        path = Path(given)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot be read as a summary ({exc})") from exc
        try:
            found += _summaries_in(_strict_json(text), str(path))
            continue
        except (ValueError, RecursionError):
            pass
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = _strict_json(line)
            except (ValueError, RecursionError) as exc:
                raise InputError(f"{path}: line {number}: not JSON ({exc})") from exc
            found += _summaries_in(value, f"{path} line {number}")
    return found


def _assign_summaries(
    summaries: Sequence[HostSummary], eval_runs: pl.DataFrame
) -> dict[str, HostSummary]:
    """Which run each summary belongs to: named by its wrapper, else the one eval run of its
    suite id and version (a bare EvalSummary carries no runId)."""
    runs = {r["run_id"]: r for r in eval_runs.iter_rows(named=True)}
    by_suite: dict[tuple[Any, Any], list[str]] = defaultdict(list)
    for run_id, run in runs.items():
        by_suite[(run["suite_id"], run["suite_version"])].append(run_id)
    assigned: dict[str, HostSummary] = {}
    for summary in summaries:
        run_id = summary.run_id
        if run_id is None:
            doc = summary.doc if isinstance(summary.doc, dict) else {}
            candidates = by_suite.get((doc.get("suiteId"), doc.get("suiteVersion")), [])
            if len(candidates) != 1:
                raise InputError(
                    f"{summary.origin}: {len(candidates)} eval runs have this summary's suiteId "
                    'and suiteVersion; name its run with {"runId": ..., "summary": ...}'
                )
            run_id = candidates[0]
        if run_id not in runs:
            raise InputError(f"{summary.origin}: run {run_id} has no eval run in the events")
        if run_id in assigned:
            raise InputError(
                f"{summary.origin}: a second summary for run {run_id} "
                f"(first in {assigned[run_id].origin})"
            )
        assigned[run_id] = summary
    return assigned


def summary_faults(doc: Any) -> list[suites.Fault]:
    """Schema faults of a host summary: the packaged closed EvalSummary schema (§4, RFC 0244 §H),
    with the RFC 0081 fields the log cannot supply accepted (`pinnedNodeIds`, a task's
    `schemaValid` and `safetyFindings`, `regression` with or without the RFC 0244 members)."""
    if not isinstance(doc, dict):
        return suites.validate_summary(doc)
    own: list[suites.Fault] = []
    rest = {k: v for k, v in doc.items() if k not in _RFC0081_TOP and k != "regression"}
    pinned = doc.get("pinnedNodeIds", [])
    if not isinstance(pinned, list) or not all(isinstance(n, str) for n in pinned):
        own.append(suites.Fault("$.pinnedNodeIds", "must be an array of strings", "error"))
    regression = doc.get("regression", {})
    if not isinstance(regression, dict):
        own.append(suites.Fault("$.regression", "must be an object", "error"))
    else:
        for key in regression:
            if key not in _REGRESSION_KEYS:
                path = suites.format_path(("regression", key))
                own.append(suites.Fault(path, "unknown member (closed object)", "error"))
    if isinstance(doc.get("tasks"), list):
        rest["tasks"] = []
        for index, task in enumerate(doc["tasks"]):
            if not isinstance(task, dict):
                rest["tasks"].append(task)
                continue
            rest["tasks"].append({k: v for k, v in task.items() if k not in _RFC0081_TASK})
            own += _rfc0081_task_faults(task, index)
    return sorted(own + suites.validate_summary(rest), key=lambda f: (f.path, f.message))


def _rfc0081_task_faults(task: dict[str, Any], index: int) -> list[suites.Fault]:
    faults = []
    if "schemaValid" in task and not isinstance(task["schemaValid"], bool):
        faults.append(
            suites.Fault(
                suites.format_path(("tasks", index, "schemaValid")), "must be a boolean", "error"
            )
        )
    findings = task.get("safetyFindings", [])
    if not isinstance(findings, list):
        findings = [None]
    for j, item in enumerate(findings):
        where = ("tasks", index, "safetyFindings", j)
        if not isinstance(item, dict):
            faults.append(suites.Fault(suites.format_path(where), "must be an object", "error"))
            continue
        for key in item:
            if key not in ("kind", "severity"):
                path = suites.format_path((*where, key))
                faults.append(suites.Fault(path, "unknown member (closed object)", "error"))
        if not isinstance(item.get("kind"), str) or item.get("severity") not in _SEVERITIES:
            message = "needs a string kind and a severity of low, medium, high, critical"
            faults.append(suites.Fault(suites.format_path(where), message, "error"))
    return faults


# --------------------------------------------------------------------------------------------
# One run


@dataclass
class _RunContext:
    """What checking one run reads: its plan, recomputed outcome, trials and host record."""

    run_id: str
    run: dict[str, Any]  # the eval_runs row
    plan: RunPlan
    outcome: RunOutcome
    trials: list[dict[str, Any]]  # every eval.scored of the run, as graded
    host: _HostRecord
    options: GradeOptions

    @property
    def doc(self) -> dict[str, Any] | None:
        return self.plan.doc

    @property
    def summary(self) -> dict[str, Any]:
        return self.outcome.summary

    @property
    def pass_score(self) -> float:
        thresholds = (self.doc or {}).get("thresholds", {})
        return float(thresholds.get("passScore", self.options.default_pass_score))

    @property
    def pass_rule(self) -> str:
        return ((self.doc or {}).get("trials") or {}).get("passRule", "all")

    @property
    def trial_count(self) -> int | None:
        """The trials every task must have: the suite's count, or a no-suite run's trialCount."""
        if self.doc is not None:
            return int(((self.doc.get("trials") or {}).get("count")) or 1)
        return self.plan.trial_count

    def counted(self) -> list[dict[str, Any]]:
        return [t for t in self.trials if t["counted"]]

    def task_rows(self) -> dict[str, dict[str, Any]]:
        return {row["task_id"]: row for row in self.outcome.task_rows}

    def scored_in_span(self) -> list[int]:
        start, end = self.run["start_seq"], self.run["end_seq"]
        return [
            s
            for s in self.host.scored.get(self.run_id, [])
            if s > start and (end is None or s < end)
        ]


#: a trial failed closed on a fixture miss (D-9)
_FAILED_CLOSED: Cause = (trial_grading.FIXTURE_MISS_RULE, trial_grading.FIXTURE_MISS_REASON)


def _trajectory_cause(trial: Mapping[str, Any]) -> Cause:
    """The grader's reason code for an unmatched trajectory, and the rule behind it."""
    reason = trial.get("trajectory_reason")
    return trial_grading.trajectory_rule(reason), reason


def _trial_cause(trial: Mapping[str, Any], field_name: str) -> Cause:
    """The rule that decides a trial's recomputed score or passed (§3.4, E-27)."""
    if trial["failed_closed"]:
        return _FAILED_CLOSED
    if trial["score_invalid"]:
        return "D-11", "score-invalid"
    if field_name == "passed" and trial["passed_invalid"]:
        return "D-11", "passed-invalid"
    if trial["has_trajectory"] and not trial["matched"]:
        return _trajectory_cause(trial)
    return "§3.4", None


def _check_trials(check: _Checker, ctx: _RunContext) -> None:
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
            check.check(
                f"eval.scored.{name}",
                _field(payload, name),
                trial[name],
                _trial_cause(trial, name),
                **where,
            )
        raw_index = _field(payload, "trialIndex")
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


def _check_labels(check: _Checker, ctx: _RunContext) -> None:
    """RFC 0244 §E: scoreLabel matches its pattern, evaluatorType is in its enum. Neither value is
    ever shown: a label that fails the pattern may be prose."""
    for seq in ctx.scored_in_span():
        payload = ctx.host.payloads.get((ctx.run_id, seq))
        task = _task_id(payload)
        label = _field(payload, "scoreLabel")
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
        kind = _field(payload, "evaluatorType")
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


def _task_id(payload: Any) -> str | None:
    task = _field(payload, "taskId")
    return task if isinstance(task, str) and _SHOWABLE.fullmatch(task) else None


def _check_started(check: _Checker, ctx: _RunContext) -> None:
    """eval.started: taskCount (RFC 0244 R1) and trialCount (RFC 0244 §B)."""
    seq = ctx.run["start_seq"]
    payload = ctx.host.payloads.get((ctx.run_id, seq))
    check.check(
        "eval.started.taskCount",
        _field(payload, "taskCount"),
        ctx.summary["taskCount"],
        lambda: _task_count_cause(ctx, _field(payload, "taskCount")),
        sequence=seq,
    )
    if ctx.doc is None:
        return  # a no-suite run's trialCount is what defines its trials (D-4)
    count = ctx.trial_count or 1
    host = _field(payload, "trialCount")
    if count > 1 or host is not MISSING:
        check.check("eval.started.trialCount", host, count, ("RFC 0244 §B", None), sequence=seq)


def _task_count_cause(ctx: _RunContext, host: Any) -> Cause:
    """RFC 0244 R1: a consumer counting eval.scored events miscounts tasks once trials exist."""
    if _is_number(host) and host == len(ctx.scored_in_span()):
        return "R1", "counted-trials"
    return "§3.6", None


def _exact_gating(ctx: _RunContext) -> dict[str, Fraction]:
    """Each task's gating mean in exact decimals (D-17): missing trials count 0 (D-12)."""
    sums: dict[str, Fraction] = defaultdict(Fraction)
    for trial in ctx.counted():
        sums[trial["task_id"]] += _exact(trial["gating_score"])
    return {task: sums[task] / row["n"] for task, row in ctx.task_rows().items()}


def _bars_hold(ctx: _RunContext) -> bool:
    """The suite's cost and p95 latency bars (§3.6), as the recomputed summary reports them."""
    thresholds = (ctx.doc or {}).get("thresholds", {})
    ok = True
    if "maxCostUsd" in thresholds:
        total = ctx.summary.get("totalCostUsd")
        ok = ok and total is not None and stats.at_most(total, thresholds["maxCostUsd"])
    if "maxP95LatencyMs" in thresholds:
        latencies = [t["latencyMs"] for t in ctx.summary["tasks"] if "latencyMs" in t]
        ok = (
            ok
            and bool(latencies)
            and stats.at_most(stats.p95_nearest_rank(latencies), thresholds["maxP95LatencyMs"])
        )
    return ok


def _check_suite_fields(check: _Checker, ctx: _RunContext, prefix: str, doc: Any) -> None:
    """aggregateScore, passed, taskCount, passedCount: on eval.completed and on a summary.

    Without the run's suite (D-4) the bar and the pass rule are unknown, so `passed` and
    `passedCount` are not compared (E-29): only what the log decides alone is.
    """
    summary = ctx.summary
    seq = ctx.run["end_seq"] if prefix == "eval.completed" else None
    check.check(
        f"{prefix}.aggregateScore",
        _field(doc, "aggregateScore"),
        summary["aggregateScore"],
        ("§3.6", None),
        sequence=seq,
    )
    host_count = _field(doc, "taskCount")
    check.check(
        f"{prefix}.taskCount",
        host_count,
        summary["taskCount"],
        lambda: _task_count_cause(ctx, host_count),
        sequence=seq,
    )
    if ctx.doc is None:
        return
    host_passed = _field(doc, "passed")
    check.check(
        f"{prefix}.passed",
        host_passed,
        summary["passed"],
        lambda: _suite_passed_cause(ctx, host_passed),
        sequence=seq,
        also_accept=_near_tie_answers(ctx),
    )
    check.check(
        f"{prefix}.passedCount",
        _field(doc, "passedCount"),
        summary["passedCount"],
        ("§3.5", None),
        sequence=seq,
    )


def _near_tie_answers(ctx: _RunContext) -> list[bool]:
    """D-17: a gating aggregate within 1e-9 of the bar that does not equal it (in the exact
    decimals of the log and suite) may be decided either way."""
    exact = _exact_gating(ctx)
    if not ctx.summary["passed"] or not exact:
        return []
    aggregate = sum(exact.values(), Fraction(0)) / len(exact)
    return [False] if aggregate < _exact(ctx.pass_score) else []


def _suite_passed_cause(ctx: _RunContext, host_passed: Any) -> Cause:
    """D-10 when the host decided on the output aggregate instead of the gating one."""
    summary = ctx.summary
    on_output = (
        bool(summary["tasks"])
        and stats.at_least(summary["aggregateScore"], ctx.pass_score)
        and _bars_hold(ctx)
    )
    if host_passed is on_output and on_output != summary["passed"]:
        return "D-10", "output-score"
    return "§3.6", None


def _check_completed(check: _Checker, ctx: _RunContext) -> None:
    """The host's eval.completed against the recomputed suite figures (§3.6)."""
    seq = ctx.run["end_seq"]
    if seq is None:
        check.check("eval.completed", MISSING, PRESENT_TEXT, ("§2.1", "eval-incomplete"))
        return
    check.compared["eval.completed"] += 1
    _check_suite_fields(check, ctx, "eval.completed", ctx.host.payloads.get((ctx.run_id, seq)))


def _power(n: int, c: int, k: int) -> float:
    return (c / n) ** k


def _task_detail(ctx: _RunContext) -> dict[str, dict[str, Any]]:
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


_JUDGE_FIELD = {"modelCallCount": 0, "inputTokens": 1, "outputTokens": 2}


def _check_summary(check: _Checker, ctx: _RunContext, doc: Any) -> None:
    """A host EvalSummary: content-free and schema-valid (§4, RFC 0244 §H), then every field."""
    faults = [f for f in summary_faults(doc) if f.severity == "error"]
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
        check.check(f"summary.{name}", _field(doc, name), summary[name], ("§4", None), text=True)
    _check_suite_fields(check, ctx, "summary", doc)
    for name, rule in (("totalCostUsd", "D-14"), ("evaluatedModelClass", "§3.6")):
        check.check(
            f"summary.{name}",
            _field(doc, name),
            summary.get(name, MISSING),
            (rule, None),
            text=name == "evaluatedModelClass",
        )
    host_stats, stats_ = _field(doc, "trialStats"), summary.get("trialStats")
    if ctx.doc is not None:  # without the suite, k and the trial count are unknown (E-29)
        present = check.present(
            "summary.trialStats", host_stats is not MISSING, stats_ is not None, "§3.6"
        )
        if present and stats_ is not None:
            _check_trial_stats(check, ctx, host_stats, stats_)
    host_tasks = _field(doc, "tasks")
    by_id: dict[str, Any] = {}
    if isinstance(host_tasks, list):
        for task in host_tasks:
            task_id = _field(task, "taskId")
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


def _pass_rate_cause(host: Any, naive: float) -> Callable[[], Cause]:
    """Why a passAtK/passHatK differs, worked out only when it does: `pass-rate-power` when the
    host's value is the naive figure from per-task pass rates (§3.5)."""
    return lambda: ("§3.5", "pass-rate-power" if _same(host, naive) else None)


def _check_trial_stats(
    check: _Checker, ctx: _RunContext, host: Any, recomputed: dict[str, Any]
) -> None:
    rows = list(ctx.task_rows().values())
    k = recomputed["k"]
    check.check("summary.trialStats.k", _field(host, "k"), k, ("§3.5", None))
    naive_hat = sum(_power(r["n"], r["passed_count"], k) for r in rows) / len(rows)
    naive_at = sum(1 - (1 - r["passed_count"] / r["n"]) ** k for r in rows) / len(rows)
    for name, naive in (("passAtK", naive_at), ("passHatK", naive_hat)):
        value = _field(host, name)
        check.check(
            f"summary.trialStats.{name}",
            value,
            recomputed[name],
            _pass_rate_cause(value, naive),
        )
    check.check(
        "summary.trialStats.scoreStderr",
        _field(host, "scoreStderr"),
        recomputed.get("scoreStderr", MISSING),
        ("§3.6", None),
    )


def _check_task(
    check: _Checker,
    ctx: _RunContext,
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
            return _FAILED_CLOSED
        if row["observed_trials"] < row["n"]:
            return (
                ("D-13", "task-missing")
                if row["observed_trials"] == 0
                else ("D-12", "trial-missing")
            )
        return "§3.5", None

    check.check("summary.tasks.score", _field(host, "score"), entry["score"], score_cause, **where)
    check.check(
        "summary.tasks.costUsd",
        _field(host, "costUsd"),
        entry.get("costUsd", MISSING),
        ("D-14", None),
        **where,
    )
    check.check(
        "summary.tasks.latencyMs",
        _field(host, "latencyMs"),
        entry.get("latencyMs", MISSING),
        ("§3.5", None),
        abs_tol=1.0,  # E-28: a mean rounded to an integer; hosts may round either way
        **where,
    )
    _check_efficiency(check, host, entry, detail, where)
    if ctx.doc is None:
        return  # E-29: the pass rule, bar, trials, trajectory and fixtures are the suite's
    host_passed = _field(host, "passed")
    check.check(
        "summary.tasks.passed",
        host_passed,
        entry["passed"],
        lambda: _task_passed_cause(ctx, entry, host_passed),
        also_accept=_task_near_tie_answers(ctx, entry),
        **where,
    )
    _check_block(
        check,
        "trajectory",
        host,
        entry,
        "§3.2",
        where,
        cause=lambda: _trajectory_cause(detail["last"]) if detail else ("§3.2", None),
    )
    _check_trials_block(check, ctx, host, entry, score_cause, where)
    check.check(
        "summary.tasks.fixtureMissCount",
        _field(host, "fixtureMissCount"),
        entry.get("fixtureMissCount", MISSING),
        ("§3.3", None),
        **where,
    )


def _task_near_tie_answers(ctx: _RunContext, entry: dict[str, Any]) -> list[bool]:
    """D-17 for `passRule: "mean"`: a near tie that is not a tie may be decided either way."""
    if ctx.pass_rule != "mean" or not entry["passed"]:
        return []
    exact = _exact_gating(ctx)[entry["taskId"]]
    return [False] if exact < _exact(ctx.pass_score) else []


def _task_passed_cause(ctx: _RunContext, entry: dict[str, Any], host_passed: Any) -> Cause:
    """`passRule: "mean"` reads the gating mean (D-10); `all`/`any` count passed trials (§3.5)."""
    if ctx.pass_rule != "mean":
        return "§3.5", None
    on_output = stats.at_least(entry["score"], ctx.pass_score)
    if host_passed is on_output and on_output != entry["passed"]:
        return "D-10", "output-score"
    return "D-10", None


def _check_trials_block(
    check: _Checker,
    ctx: _RunContext,
    host: Any,
    entry: dict[str, Any],
    score_cause: Callable[[], Cause],
    where: dict[str, Any],
) -> None:
    """A task's `trials` block (§3.5, RFC 0244 §B). pass@k and pass^k are exact-rational
    formulas; a host that used the pass rate to the power k is named (`pass-rate-power`)."""
    block, host_block = entry.get("trials"), _field(host, "trials")
    present = check.present(
        "summary.tasks.trials", host_block is not MISSING, block is not None, "§3.5", **where
    )
    if not present or block is None:
        return
    n, c, k = block["n"], block["passedCount"], ctx.summary["trialStats"]["k"]
    naive = {"passAtK": 1 - (1 - c / n) ** k, "passHatK": _power(n, c, k)}
    for name, value in block.items():
        host_value = _field(host_block, name)
        cause: Cause | Callable[[], Cause] = ("§3.5", None)
        if name in naive:
            reason = "pass-rate-power" if _same(host_value, naive[name]) else None
            cause = ("§3.5", reason)
        elif name == "meanScore":
            cause = score_cause
        check.check(f"summary.tasks.trials.{name}", host_value, value, cause, **where)


def _check_efficiency(
    check: _Checker,
    host: Any,
    entry: dict[str, Any],
    detail: dict[str, Any] | None,
    where: dict[str, Any],
) -> None:
    """A task's `efficiency` block (RFC 0244 §C): judge calls are excluded (D-6); a host whose
    figure equals ours plus the judge calls is named (`judge-calls-counted`)."""
    block, host_block = entry.get("efficiency"), _field(host, "efficiency")
    present = check.present(
        "summary.tasks.efficiency", host_block is not MISSING, block is not None, "§3.5", **where
    )
    if not present or block is None:
        return
    for name, value in block.items():
        host_value = _field(host_block, name)
        slot = _JUDGE_FIELD.get(name)
        cause: Cause = ("§3.5", None)
        if slot is not None and detail and detail["judge"][0]:
            with_judge = value + detail["judge"][slot] / detail["observed"]
            if _same(host_value, with_judge):
                cause = ("D-6", "judge-calls-counted")
        check.check(f"summary.tasks.efficiency.{name}", host_value, value, cause, **where)


def _check_block(
    check: _Checker,
    name: str,
    host: Any,
    entry: dict[str, Any],
    rule: str,
    where: dict[str, Any],
    cause: Callable[[], Cause],
) -> None:
    block, host_block = entry.get(name), _field(host, name)
    if not check.present(
        f"summary.tasks.{name}", host_block is not MISSING, block is not None, rule, **where
    ):
        return
    for key, value in (block or {}).items():
        check.check(
            f"summary.tasks.{name}.{key}",
            _field(host_block, key),
            value,
            cause if key == "matched" else (rule, None),
            text=key == "mode",
            **where,
        )


def _check_run(ctx: _RunContext, summary: HostSummary | None) -> _Checker:
    check = _Checker(ctx.run_id)
    _check_started(check, ctx)
    _check_trials(check, ctx)
    _check_labels(check, ctx)
    _check_completed(check, ctx)
    if summary is not None:
        _check_summary(check, ctx, summary.doc)
    return check


# --------------------------------------------------------------------------------------------
# The entry points


def _needs_other_reading(trials: pl.DataFrame) -> set[str]:
    """Runs where an absent onMiss decides a trial (CONTRACT §8: either reading is accepted)."""
    if trials.is_empty():
        return set()
    return set(trials.filter(trial_grading.absent_on_miss_decides())["run_id"].to_list())


#: the per-trial columns of the grading stage that checking reads
_TRIAL_COLUMNS = (
    "run_id",
    "segment_no",
    "scored_seq",
    "task_id",
    "trial_index",
    "trial_index_invalid",
    "counted",
    "left_out",
    "score",
    "passed",
    "gating_score",
    "failed_closed",
    "score_invalid",
    "passed_invalid",
    "has_trajectory",
    "matched",
    "trajectory_reason",
)


def _contexts(
    graded: MergedBatches, host: _HostRecord, options: GradeOptions
) -> dict[str, _RunContext]:
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    trials = graded.trials.select(_TRIAL_COLUMNS) if graded.trials.width else graded.trials
    for trial in trials.sort("run_id", "scored_seq").iter_rows(named=True):
        by_run[trial["run_id"]].append(trial)
    runs = {r["run_id"]: r for r in graded.eval_runs.iter_rows(named=True)}
    return {
        run_id: _RunContext(
            run_id,
            runs[run_id],
            plan,
            graded.outcomes[run_id],
            by_run.get(run_id, []),
            host,
            options,
        )
        for run_id, plan in graded.plans.items()
        if run_id not in graded.fatal
    }


def verify_paths(
    events: Paths,
    suites: Paths = (),
    summary_paths: Paths = (),
    *,
    suite_paths: Paths | None = None,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    summaries: Sequence[HostSummary] = (),
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    run_filter: event_files.RunFilter | None = None,
) -> VerifyReport:
    """`evalbatch verify`: recompute every eval run in `events` and compare with the host's
    record (CONTRACT §8). `events`, `suites` and `summary_paths` are each one path (a `str` or a
    `Path`) or a list of them; `suite_paths=` is the old spelling of `suites=`, kept for one
    version with a `DeprecationWarning` (issue 17 item 5).

    Grading uses `options` as `evalbatch run` does; where a task's `fixtures.onMiss` is absent
    and a miss decides a trial, both readings (count only, fail closed) are tried and the one
    the host followed is kept (RFC 0244 §D: hosts SHOULD fail the trial; `options` breaks ties;
    E-30).

    Raises:
        InputError: no usable event file, or a summary that is not JSON or names no eval run.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
        TypeError: both `suites=` and `suite_paths=` are given.
    """
    paths = as_paths(events)
    suite_files = suites_keyword(suites, suite_paths, "verify_paths")
    summary_files = as_paths(summary_paths)
    options = options or GradeOptions()
    engine = {"resources": resources, "run_filter": run_filter}
    host_summaries = [*load_summaries(summary_files), *summaries]
    choices = load_suites(suite_files, suite_docs)
    graded = _grade(paths, choices, options, engine)
    assigned = _assign_summaries(host_summaries, graded.eval_runs)
    host = _read_host(paths, graded.trials, engine)
    contexts = _contexts(graded, host, options)
    other: dict[str, _RunContext] = {}
    if needs := _needs_other_reading(graded.trials) & set(contexts):
        other_options = trial_grading.other_on_miss_reading(options)
        other_graded = _grade(paths, choices, other_options, engine)
        other = {
            run: ctx
            for run, ctx in _contexts(other_graded, host, other_options).items()
            if run in needs
        }
    runs: list[RunVerdict] = []
    findings: list[Finding] = []
    compared: Counter[str] = Counter()
    for row in graded.eval_runs.iter_rows(named=True):
        run_id = row["run_id"]
        report = RunVerdict(run_id, row["suite_id"], row["suite_version"], "not-verified", None)
        runs.append(report)
        if run_id not in contexts:
            report.problems = sorted(graded.fatal.get(run_id, []))
            continue
        ctx = contexts[run_id]
        check = _check_run(ctx, assigned.get(run_id))
        if run_id in other:
            preferred = check
            alternative = _check_run(other[run_id], assigned.get(run_id))
            if len(alternative.findings) < len(preferred.findings):
                check, ctx = alternative, other[run_id]
            report.on_miss_reading = ctx.options.on_miss_default
        report.graded_from = "suite" if ctx.doc is not None else "host-record"
        report.summary_checked = run_id in assigned
        report.findings = len(check.findings)
        report.verdict = "disagrees" if check.findings else "agrees"
        findings += check.findings
        compared.update(check.compared)
    disagreed = Counter(f.field for f in findings)
    return VerifyReport(runs, findings, dict(compared), dict(disagreed), graded.skipped_files)


def verify_events(
    events: Iterable[Mapping[str, Any]],
    suite_docs: Sequence[Mapping[str, Any]] = (),
    summaries: Mapping[str, Any] | None = None,
    options: GradeOptions | None = None,
) -> VerifyReport:
    """Verify events held in memory (dicts with runId, sequence, type, payload, timestamp), with
    host summaries given as `{runId: EvalSummary}`: notebooks and tests."""
    given = [HostSummary(run, doc, f"<summary {run}>") for run, doc in (summaries or {}).items()]
    with in_memory.events_file(events) as path:
        return verify_paths([path], suite_docs=suite_docs, summaries=given, options=options)
