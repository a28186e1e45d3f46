"""A conformance report by requirement: what a host's logs and summaries witness of RFC 0244
(E-104).

RFC 0244's falsifiability table gives one row per normative requirement and says how an outside
party can see it kept or broken. `verify` reads exactly that evidence, so each row a log and a
host's summaries can witness gets a verdict from the recomputation and its findings:

- `executed-pass`: some recomputed run exercised the requirement and no finding breaks it;
- `executed-fail`: a finding breaks it (the runs and findings are counted);
- `inapplicable`: no recomputed run exercised it; the row says what would;
- `unwitnessable`: the table's own reason (a host-internal rule, or one seam-gated).

Every finding of `verify` breaks some row (E-112), so `--conformance` passes only what plain
`verify` passes: a finding breaks each row of the RFC's table whose `breaks` claims it, and a
finding no row of the table claims breaks one of the project's own two rows, the wire shape of
the host's eval events (a value of the wrong type, an id that fails its pattern, a repeated
eval.completed) or else the host's record agreeing with the recomputation (`rows_broken`).

A run that could not be recomputed is evidence of nothing: it never counts towards a pass, and
the report names it; an input that exercised nothing is never a pass. Everything here is
content-free: ids, counts, verdicts and rule ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalbatch.errors import EXIT_FAILED, EXIT_OK, EXIT_SKIPPED, EXIT_UNUSABLE
from evalbatch.inputs.capabilities import EvalSuiteFacets
from evalbatch.verify.audit_report import Finding, VerifyReport
from evalbatch.verify.regression_block_checks import identical
from evalbatch.verify.run_context import RunContext
from evalbatch.version import package_version

Verdict = Literal["executed-pass", "executed-fail", "inapplicable", "unwitnessable"]
#: the report's own verdict, over every row
ReportVerdict = Literal["executed-pass", "executed-fail", "incomplete", "not-executed"]

#: the trials table's reasons a trajectory failed (`trial_grading.TRAJECTORY_CHECKS`), but
#: `delegates-unseen`: a run whose child runs are not in the input is not recomputed at all
_PATH_REASONS = frozenset({"no-bracket", "forbidden", "extra", "missing", "order"})


@dataclass(frozen=True)
class Evidence:
    """What the recomputed runs hold of one requirement: the runs and the units exercising it
    (tasks, trials, summaries, pairs: `unit` says which)."""

    runs: tuple[str, ...] = ()
    units: int = 0


@dataclass(frozen=True)
class Requirement:
    """One row of RFC 0244's falsifiability table, and how `verify` witnesses it.

    `id` is the RFC's requirement id, or `evalbatch.0244.<name>` for a row the table marks
    "witnessable, not probed" and names no id for; `unit` is what its evidence counts (singular);
    `evidence` finds what exercises it in the recomputed runs; `breaks` tells a finding that
    breaks it; `would` says what input would exercise it; `unwitnessable` is the table's reason
    when no log can.
    """

    id: str
    section: str
    title: str
    unit: str
    evidence: Callable[[Sequence[RunContext], frozenset[str]], Evidence] | None
    breaks: Callable[[Finding], bool]
    would: str = ""
    unwitnessable: str = ""
    #: False when a log can show the requirement broken but never kept (a refusal leaves no
    #: run): without a finding the row stays inapplicable
    can_pass: bool = True


def _runs(found: dict[str, int]) -> Evidence:
    return Evidence(tuple(sorted(run for run, n in found.items() if n)), sum(found.values()))


def _counted(ctx: RunContext, test: Callable[[dict[str, Any]], bool]) -> int:
    return sum(1 for t in ctx.trials if t["counted"] and test(t))


def _trajectory_trials(runs: Sequence[RunContext], _: frozenset[str]) -> Evidence:
    return _runs(
        {ctx.run_id: _counted(ctx, lambda t: bool(t["has_trajectory"])) for ctx in runs if ctx.doc}
    )


def _trial_tasks(runs: Sequence[RunContext], _: frozenset[str]) -> Evidence:
    return _runs(
        {ctx.run_id: len(ctx.summary["tasks"]) for ctx in runs if (ctx.trial_count or 1) > 1}
    )


def _summaries_with(name: str) -> Callable[[Sequence[RunContext], frozenset[str]], Evidence]:
    """Runs whose host summary was checked and whose recomputed summary holds `name` (a suite
    field, or `tasks.<field>` of some task)."""

    def evidence(runs: Sequence[RunContext], checked: frozenset[str]) -> Evidence:
        found = {}
        for ctx in runs:
            if ctx.run_id not in checked:
                continue
            if name.startswith("tasks."):
                key = name.removeprefix("tasks.")
                found[ctx.run_id] = sum(1 for task in ctx.summary["tasks"] if key in task)
            else:
                found[ctx.run_id] = int(name in ctx.summary)
        return _runs(found)

    return evidence


def _failed_closed(runs: Sequence[RunContext], _: frozenset[str]) -> Evidence:
    return _runs({ctx.run_id: _counted(ctx, lambda t: bool(t["failed_closed"])) for ctx in runs})


def _live_misses(runs: Sequence[RunContext], checked: frozenset[str]) -> Evidence:
    return _runs(
        {
            ctx.run_id: _counted(ctx, lambda t: t["on_miss"] == "live" and (t["misses"] or 0) > 0)
            for ctx in runs
            if ctx.run_id in checked
        }
    )


def _passing_with_efficiency(runs: Sequence[RunContext], _: frozenset[str]) -> Evidence:
    return _runs(
        {
            ctx.run_id: sum(1 for t in ctx.summary["tasks"] if t["passed"] and "efficiency" in t)
            for ctx in runs
        }
    )


def _labelled(runs: Sequence[RunContext], checked: frozenset[str]) -> Evidence:
    """Runs whose host events carry a scoreLabel or evaluatorType, or whose summary was
    checked: what a shape or content check reads."""
    found = {}
    for ctx in runs:
        events = sum(
            1
            for t in ctx.trials
            if isinstance(payload := ctx.host.payloads.get((ctx.run_id, t["scored_seq"])), dict)
            and ("scoreLabel" in payload or "evaluatorType" in payload)
        )
        found[ctx.run_id] = events + int(ctx.run_id in checked)
    return _runs(found)


def _paired(runs: Sequence[RunContext], checked: frozenset[str]) -> Evidence:
    return _runs(
        {ctx.run_id: int(ctx.baseline is not None) for ctx in runs if ctx.run_id in checked}
    )


def _identical_pairs(runs: Sequence[RunContext], checked: frozenset[str]) -> Evidence:
    return _runs({ctx.run_id: int(identical(ctx)) for ctx in runs if ctx.run_id in checked})


def _graded_against_facets(runs: Sequence[RunContext], _: frozenset[str]) -> Evidence:
    return _runs({ctx.run_id: 1 for ctx in runs if ctx.facets is not None})


def _host_records(runs: Sequence[RunContext], checked: frozenset[str]) -> Evidence:
    """Every record the host wrote of a recomputed run: its eval.started, the eval.scored in its
    span, its eval.completed, and its summary when one was checked."""
    return _runs(
        {
            ctx.run_id: 1
            + len(ctx.scored_in_span())
            + int(ctx.run["end_seq"] is not None)
            + int(ctx.run_id in checked)
            for ctx in runs
        }
    )


def _field(*prefixes: str, reasons: frozenset[str] | None = None) -> Callable[[Finding], bool]:
    """A finding on a field starting with one of `prefixes` (and, given, one of `reasons`)."""

    def breaks(finding: Finding) -> bool:
        if not finding.field.startswith(prefixes):
            return False
        return reasons is None or finding.reason in reasons

    return breaks


def _either(*tests: Callable[[Finding], bool]) -> Callable[[Finding], bool]:
    return lambda finding: any(test(finding) for test in tests)


def _host_failed_a_pass(finding: Finding) -> bool:
    """The host failed a task or trial the rule passes (efficiency is the one input left)."""
    return (
        finding.field in ("eval.scored.passed", "summary.tasks.passed")
        and finding.host is False
        and finding.recomputed is True
    )


_NEVER = lambda finding: False  # noqa: E731 - an unwitnessable row has no finding

#: reason codes of a host value of the wrong shape: one the grade cannot use (D-11, D-5, E-77),
#: an id that keeps the summary from being written (§4), an eval.completed written twice (E-113)
_SHAPE_REASONS = frozenset(
    {
        "score-invalid",
        "passed-invalid",
        "trial-index-invalid",
        "summary-invalid",
        "completed-repeated",
        "cost-invalid",
        "latency-invalid",
    }
)
#: what a finding shows for a host value of another JSON type than the field's (`compare.shown`)
_TYPE_TAGS = frozenset({"<string>", "<array>", "<object>", "<number>", "<invalid>"})


def _wrong_shape(finding: Finding) -> bool:
    """The host wrote a value of the wrong type or form, whatever the recomputation holds."""
    return finding.reason in _SHAPE_REASONS or (
        isinstance(finding.host, str) and finding.host in _TYPE_TAGS
    )


#: the project's own rows (E-112): each finding no row of the RFC's table claims breaks one
EVENT_WIRE_SHAPE = Requirement(
    "evalbatch.0244.event-wire-shape",
    "§Conformance",
    "the host's eval events have the shape the grade reads: score a number, passed a boolean, "
    "valid ids, one eval.completed",
    "host record",
    _host_records,
    _wrong_shape,
    would="a recomputed run",
)
HOST_RECORD_AGREES = Requirement(
    "evalbatch.0244.host-record-agrees",
    "§Conformance",
    "the host's eval.started, eval.scored, eval.completed and summaries agree with the "
    "recomputation (1e-9 relative)",
    "host record",
    _host_records,
    lambda finding: not _wrong_shape(finding),
    would="a recomputed run",
)

#: RFC 0244's falsifiability table, in its order: the rows a log and summaries can witness, the
#: rows it marks "witnessable, not probed", and the rows no log can witness
REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(
        "openwop.requirement.0244.trajectory-graded",
        "§A",
        "match modes, argsMatch and forbidden graded as the reference grades them",
        "trial",
        _trajectory_trials,
        _either(
            _field("eval.scored.", "summary.tasks.", reasons=_PATH_REASONS),
            _field("summary.tasks.trajectory"),
        ),
        would="a run of a suite with expected.trajectory, given with --suites",
    ),
    Requirement(
        "openwop.requirement.0244.trials-per-task",
        "§B",
        "count trials per task, trialIndex contiguous and unique, trialCount",
        "task",
        _trial_tasks,
        _field("eval.scored.count", "eval.scored.trialIndex", "eval.started.trialCount"),
        would="a run of a suite with trials.count > 1",
    ),
    Requirement(
        "openwop.requirement.0244.trial-stats-formula",
        "§B",
        "pass@k, pass^k and scoreStderr agree with the formulas (1e-9 relative)",
        "task",
        _summaries_with("tasks.trials"),
        _field("summary.tasks.trials", "summary.trialStats"),
        would="the host's summaries (--summaries) of a run of a suite with a trials block",
    ),
    Requirement(
        "openwop.requirement.0244.fixture-miss-fails",
        "§D",
        "a trial that fails closed on a fixture miss reports score 0 and passed false",
        "trial",
        _failed_closed,
        _either(
            _field("eval.scored.", "summary.tasks.", reasons=frozenset({"fixture-miss"})),
            _field("summary.tasks.fixtureMissCount"),
        ),
        would="a run with a fixture miss under onMiss: fail",
    ),
    Requirement(
        "openwop.requirement.0244.content-free",
        "§H",
        "summaries carry counts and scores only; scoreLabel cannot carry prose",
        "host record",
        _labelled,
        _either(
            lambda f: f.field == "summary.schema" and f.rule == "RFC 0244 §H",
            _field("eval.scored.scoreLabel"),
        ),
        would="eval.scored events with scoreLabel, or the host's summaries (--summaries)",
    ),
    Requirement(
        "openwop.requirement.0244.wire-shape",
        "§E",
        "the new fields have the schema's shape: scoreLabel, evaluatorType, the summary",
        "host record",
        _labelled,
        _field("summary.schema", "eval.scored.scoreLabel", "eval.scored.evaluatorType"),
        would="eval.scored events with scoreLabel or evaluatorType, or --summaries",
    ),
    Requirement(
        "openwop.requirement.0244.unadvertised-feature-refused",
        "§G",
        "a suite using an unadvertised facet is refused, never graded",
        "run",
        _graded_against_facets,
        _field("capabilities."),
        would="the host's capabilities (--capabilities)",
        can_pass=False,
    ),
    Requirement(
        "evalbatch.0244.cost-counts-every-trial",
        "§B",
        "totalCostUsd counts every trial (and judge call) of the suite",
        "summary",
        _summaries_with("totalCostUsd"),
        _field("summary.totalCostUsd", "summary.tasks.costUsd"),
        would="the host's summaries of a run whose usage carries costEstimateUsd",
    ),
    Requirement(
        "evalbatch.0244.efficiency-counts",
        "§C",
        "efficiency counts the events inside the brackets, judge calls excluded",
        "task",
        _summaries_with("tasks.efficiency"),
        _field("summary.tasks.efficiency"),
        would="the host's summaries (--summaries) of a graded run",
    ),
    Requirement(
        "evalbatch.0244.efficiency-never-gates",
        "§C",
        "no task or suite fails on efficiency",
        "task",
        _passing_with_efficiency,
        _host_failed_a_pass,
        would="a run with a task that passes and has tool or model calls",
    ),
    Requirement(
        "evalbatch.0244.live-miss-reported",
        "§D",
        "onMiss: live reports its misses in fixtureMissCount",
        "trial",
        _live_misses,
        _field("summary.tasks.fixtureMissCount"),
        would="the host's summaries of a run with a fixture miss under onMiss: live",
    ),
    Requirement(
        "evalbatch.0244.paired-task-count",
        "§F",
        "pairedTaskCount is the number of tasks in both runs",
        "pair",
        _paired,
        _field("summary.regression.pairedTaskCount", "summary.regression.baselineRunId"),
        would="the candidate's summary with a regression block, and its baseline run's events",
    ),
    Requirement(
        "evalbatch.0244.identical-runs-unchanged",
        "§F",
        "identical runs are never improved or regressed",
        "pair",
        _identical_pairs,
        _field("summary.regression.verdict"),
        would="a candidate whose paired tasks score as its baseline's, with its summary",
    ),
    Requirement(
        "evalbatch.0244.trial-isolation",
        "§B",
        "no memory bleeds between trials",
        "",
        None,
        _NEVER,
        unwitnessable="seam-gated: needs an agent that writes, then reads, memory across trials",
    ),
    Requirement(
        "evalbatch.0244.first-unconsumed-selection",
        "§D",
        "each call is served the first unconsumed matching fixture",
        "",
        None,
        _NEVER,
        unwitnessable="seam-gated: a log does not say which response was served to a call",
    ),
    Requirement(
        "evalbatch.0244.miss-blocks-live-tool",
        "§D",
        "onMiss: fail never reaches a live tool",
        "",
        None,
        _NEVER,
        unwitnessable="seam-gated: needs a tool with an observable effect counter",
    ),
    Requirement(
        "evalbatch.0244.inconclusive-when-indistinguishable",
        "§F",
        "inconclusive rather than improved or regressed when the method cannot tell",
        "",
        None,
        _NEVER,
        unwitnessable="unwitnessable in general: it depends on the host's own method and alpha "
        "(only the identical-runs case is witnessable)",
    ),
    Requirement(
        "evalbatch.0244.fixtures-untrusted",
        "§H",
        "fixtures are handled as untrusted tool output",
        "",
        None,
        _NEVER,
        unwitnessable="unwitnessable from outside: a host-internal handling rule",
    ),
)
#: the project's rows, after the table's
OWN_REQUIREMENTS: tuple[Requirement, ...] = (EVENT_WIRE_SHAPE, HOST_RECORD_AGREES)
#: every row a report holds, in its order
ALL_REQUIREMENTS: tuple[Requirement, ...] = REQUIREMENTS + OWN_REQUIREMENTS


def rows_broken(finding: Finding) -> tuple[Requirement, ...]:
    """The rows one finding breaks (E-112), the one place findings meet rows: every row of the
    RFC's table that claims it, else the project's row for its kind. Never empty, so a report
    with a finding is never a pass."""
    claimed = tuple(r for r in REQUIREMENTS if r.breaks(finding))
    if claimed:
        return claimed
    return (EVENT_WIRE_SHAPE if EVENT_WIRE_SHAPE.breaks(finding) else HOST_RECORD_AGREES,)


@dataclass(frozen=True)
class Row:
    """One requirement's verdict and the evidence behind it (ids and counts only)."""

    requirement: Requirement
    verdict: Verdict
    runs: tuple[str, ...]
    units: int
    findings: int
    note: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.requirement.id,
            "section": f"RFC 0244 {self.requirement.section}",
            "requirement": self.requirement.title,
            "verdict": self.verdict,
            "evidence": {
                "runs": list(self.runs),
                "unit": self.requirement.unit or None,
                "count": self.units,
                "findings": self.findings,
            },
            "note": self.note,
        }


@dataclass
class ConformanceReport:
    """Every requirement's row, the runs that could not be recomputed, and the inputs."""

    rows: list[Row]
    not_recomputed: list[str]
    runs: int  # eval runs in the input, recomputed or not
    inputs: dict[str, Any] = field(default_factory=dict)
    #: event files left out (unreadable, columns missing): their runs are evidence of nothing
    skipped_files: list[dict[str, str]] = field(default_factory=list)

    @property
    def verdict(self) -> ReportVerdict:
        """`executed-pass` only when some row was exercised and passed and none failed, every
        run was recomputed and every file read: an input that exercised nothing is
        `not-executed`, never a pass (E-112)."""
        if self.runs == 0:
            return "not-executed"
        if any(row.verdict == "executed-fail" for row in self.rows):
            return "executed-fail"
        if self.not_recomputed or self.skipped_files:
            return "incomplete"
        if not any(row.verdict == "executed-pass" for row in self.rows):
            return "not-executed"
        return "executed-pass"

    @property
    def exit_code(self) -> int:
        """1 a requirement is broken; 3 some run could not be recomputed (and none broken);
        2 nothing executed (no eval run); 0 otherwise: the exit code plain `verify` gives the
        same input (E-104, E-112)."""
        return {
            "executed-pass": EXIT_OK,
            "executed-fail": EXIT_FAILED,
            "incomplete": EXIT_SKIPPED,
            "not-executed": EXIT_UNUSABLE,
        }[self.verdict]

    def to_json(self) -> dict[str, Any]:
        return {
            "conformanceVersion": 1,
            "standard": "RFC 0244",
            "verdict": self.verdict,
            **self.inputs,
            "evalRuns": self.runs,
            "notRecomputed": self.not_recomputed,
            "skippedFiles": self.skipped_files,
            "requirements": [row.to_json() for row in self.rows],
        }


def _row(
    requirement: Requirement,
    runs: Sequence[RunContext],
    checked: frozenset[str],
    broken: Sequence[Finding],
) -> Row:
    """One row's verdict from its evidence and the findings that break it (`rows_broken`)."""
    if requirement.evidence is None:
        return Row(requirement, "unwitnessable", (), 0, 0, requirement.unwitnessable)
    evidence = requirement.evidence(runs, checked)
    if broken:
        shown = tuple(sorted({*evidence.runs, *(f.run_id for f in broken)}))
        return Row(requirement, "executed-fail", shown, evidence.units, len(broken), "")
    if evidence.units == 0:
        note = f"no recomputed run exercised it: {requirement.would}"
        return Row(requirement, "inapplicable", (), 0, 0, note)
    if not requirement.can_pass:
        note = (
            "no graded run used an unadvertised feature; a log shows a refusal only by its "
            "absence (the conformance suite probes createRun)"
        )
        return Row(requirement, "inapplicable", evidence.runs, evidence.units, 0, note)
    return Row(requirement, "executed-pass", evidence.runs, evidence.units, 0, "")


def conformance(
    report: VerifyReport, contexts: Sequence[RunContext], inputs: dict[str, Any]
) -> ConformanceReport:
    """The conformance report of a verify pass: `contexts` are its recomputed runs (the reading
    of an absent onMiss each run was judged by), `report` its findings and verdicts."""
    checked = frozenset(run.run_id for run in report.runs if run.summary_checked)
    broken: dict[str, list[Finding]] = {r.id: [] for r in ALL_REQUIREMENTS}
    for finding in report.findings:
        for requirement in rows_broken(finding):
            broken[requirement.id].append(finding)
    rows = [_row(r, contexts, checked, broken[r.id]) for r in ALL_REQUIREMENTS]
    not_recomputed = sorted(run.run_id for run in report.runs if run.graded_from is None)
    skipped = [{"path": f.path, "code": f.code} for f in report.skipped_files]
    return ConformanceReport(rows, not_recomputed, len(report.runs), inputs, skipped)


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def input_fingerprints(
    events: Sequence[str],
    suites: Sequence[str],
    summaries: Sequence[str],
    capabilities: EvalSuiteFacets | None,
) -> dict[str, Any]:
    """What the report was made from, fit to attach to a certification: the evalbatch version,
    the sha256 of every input file (event files as found in directories and globs), and the
    facets the host advertised."""
    from evalbatch.inputs.event_files import expand_paths
    from evalbatch.inputs.suites import expand_suite_paths

    def files(paths: Sequence[Path]) -> list[dict[str, str]]:
        return [{"path": str(p), "sha256": _digest(p)} for p in sorted(set(paths)) if p.is_file()]

    suite_files = [path for given in suites for path in expand_suite_paths(given)]
    caps: dict[str, Any] | None = None
    if capabilities is not None:
        source = Path(capabilities.source)
        caps = {
            "path": capabilities.source,
            "sha256": _digest(source) if source.is_file() else None,
            "advertised": capabilities.advertised(),
        }
    return {
        "evalbatch": package_version(),
        "inputs": {
            "events": files([Path(p) for p in expand_paths(list(events))]),
            "suites": files(suite_files),
            "summaries": files([Path(p) for p in summaries]),
            "capabilities": caps,
        },
    }
