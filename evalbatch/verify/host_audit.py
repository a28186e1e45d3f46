"""Audit a host: recompute every eval run and compare with what the host recorded (CONTRACT §8).

The grade is a pure function of the suite and the log (RFC 0244 "Recomputable by design"), so a
host's own record can be checked against it: each `eval.scored` (score and passed per task and
trial), the `eval.completed` aggregate, and any EvalSummary the host served. Numbers agree within
RFC 0244 §B's tolerance, `|host - recomputed| <= 1e-9 * max(1, |recomputed|)`. The event stream
is also checked against the rules RFC 0244 §B and §E set for it (contiguous, unique `trialIndex`,
`trialCount`, `scoreLabel`, `evaluatorType`), and a served summary must be content-free.

This module grades the log, reads the host's record, runs each family of checks on each run
(`RUN_CHECKS`, then the summary's) and assembles the report; the checks, the comparison they
write through and the report are modules of their own. Every finding is content-free: ids,
field names, numbers, booleans and rule ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalbatch.grade import trial_grading
from evalbatch.inputs import event_files, in_memory
from evalbatch.inputs.capabilities import EvalSuiteFacets, read_capabilities
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import SuiteChoice, load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.local import MergedBatches, grade_shards_locally
from evalbatch.verify.audit_report import Finding, RunVerdict, VerifyReport
from evalbatch.verify.capability_checks import check_capabilities
from evalbatch.verify.compare import Checker, shown
from evalbatch.verify.conformance import conformance as conformance_report
from evalbatch.verify.conformance import input_fingerprints
from evalbatch.verify.event_checks import (
    check_completed,
    check_labels,
    check_scored_numbers,
    check_started,
    check_summary_writable,
    check_trials,
)
from evalbatch.verify.host_events import read_host
from evalbatch.verify.host_summaries import HostSummary, assign_summaries, load_summaries
from evalbatch.verify.run_context import RunContext, run_contexts
from evalbatch.verify.summary_checks import check_summary

#: one family of checks: compares part of one run's host record, writing through the checker
RunCheck = Callable[[Checker, RunContext], None]

#: the checks every recomputed run gets, in the order their findings are listed; a host summary,
#: when one was given, is checked after them (`check_summary`)
RUN_CHECKS: tuple[RunCheck, ...] = (
    check_started,
    check_summary_writable,
    check_trials,
    check_labels,
    check_scored_numbers,
    check_completed,
    check_capabilities,
)


def _grade(
    paths: list[str],
    choices: dict[tuple[str, str], SuiteChoice],
    options: GradeOptions,
    engine: Mapping[str, Any],
) -> MergedBatches:
    return MergedBatches.of(grade_shards_locally(paths, choices, options, **engine))


def _check_run(ctx: RunContext, summary: HostSummary | None) -> Checker:
    check = Checker(ctx.run_id)
    for run_check in RUN_CHECKS:
        run_check(check, ctx)
    if summary is not None:
        check_summary(check, ctx, summary.doc)
    return check


def _needs_other_reading(trials: pl.DataFrame) -> set[str]:
    """Runs where an absent onMiss decides a trial (CONTRACT §8: either reading is accepted)."""
    if trials.is_empty():
        return set()
    return set(trials.filter(trial_grading.absent_on_miss_decides())["run_id"].to_list())


def _delegates_unseen(trials: pl.DataFrame) -> set[str]:
    """Runs with a trial whose delegated calls could not be read (E-102: a child run missing,
    damaged, on its own path or of another suite). The run cannot be recomputed from this
    input, so it is not verified (exit 3) rather than found to disagree: the evidence the host
    graded on is not in front of the auditor (E-105)."""
    if trials.is_empty() or "delegates_unseen" not in trials.columns:
        return set()
    return set(trials.filter(pl.col("delegates_unseen"))["run_id"].to_list())


def verify_paths(
    events: Paths,
    suites: Paths = (),
    summary_paths: Paths = (),
    *,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    summaries: Sequence[HostSummary] = (),
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    run_filter: event_files.RunFilter | None = None,
    capabilities: EvalSuiteFacets | str | Path | None = None,
    conformance: bool = False,
) -> VerifyReport:
    """`evalbatch verify`: recompute every eval run in `events` and compare with the host's
    record (CONTRACT §8). With `capabilities` (the host's facets, or a capabilities document's
    path), each run the host graded is also checked against what it advertises (RFC 0244 §G,
    E-103). With `conformance`, the report also holds one row per RFC 0244 requirement
    (`report.conformance`, E-104). `events`, `suites` and `summary_paths` are each one path (a
    `str` or a `Path`) or a list of them.

    Grading uses `options` as `evalbatch run` does; where a task's `fixtures.onMiss` is absent
    and a miss decides a trial, both readings (count only, fail closed) are tried and the one
    the host followed is kept (RFC 0244 §D: hosts SHOULD fail the trial; `options` breaks ties;
    E-30).

    Raises:
        InputError: no usable event file, or a summary that is not JSON or names no eval run.
        CapabilitiesError: `capabilities` names a document that is not one (E-100).
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    paths = as_paths(events)
    suite_files = as_paths(suites)
    summary_files = as_paths(summary_paths)
    options = options or GradeOptions()
    if isinstance(capabilities, str | Path):
        capabilities = read_capabilities(capabilities)
    engine = {"resources": resources, "run_filter": run_filter}
    host_summaries = [*load_summaries(summary_files), *summaries]
    choices = load_suites(suite_files, suite_docs)
    graded = _grade(paths, choices, options, engine)
    assigned = assign_summaries(host_summaries, graded.eval_runs)
    host = read_host(paths, graded.trials, engine)
    contexts = run_contexts(graded, host, options, capabilities)
    other: dict[str, RunContext] = {}
    if needs := _needs_other_reading(graded.trials) & set(contexts):
        other_options = trial_grading.other_on_miss_reading(options)
        other_graded = _grade(paths, choices, other_options, engine)
        other = {
            run: ctx
            for run, ctx in run_contexts(other_graded, host, other_options, capabilities).items()
            if run in needs
        }
    runs: list[RunVerdict] = []
    findings: list[Finding] = []
    compared: Counter[str] = Counter()
    judged: list[RunContext] = []  # the context each recomputed run was judged by
    unseen = _delegates_unseen(graded.trials)
    for row in graded.eval_runs.iter_rows(named=True):
        run_id = row["run_id"]
        # the ids as the host wrote them, shown only when id-like (content-free, RFC 0244 §H)
        suite_id = shown(row["suite_id"], text=True)
        version = shown(row["suite_version"], text=True)
        report = RunVerdict(run_id, suite_id, version, "not-verified", None)
        runs.append(report)
        if run_id not in contexts:
            report.problems = sorted(graded.fatal.get(run_id, []))
            continue
        if run_id in unseen:  # the input lacks evidence the host had: not the host's fault
            report.problems = sorted(graded.delegate_problems.get(run_id, ["delegates-unseen"]))
            continue
        ctx = contexts[run_id]
        check = _check_run(ctx, assigned.get(run_id))
        if run_id in other:
            preferred = check
            alternative = _check_run(other[run_id], assigned.get(run_id))
            if len(alternative.findings) < len(preferred.findings):
                check, ctx = alternative, other[run_id]
            report.on_miss_reading = ctx.options.on_miss_default
        judged.append(ctx)
        report.graded_from = "suite" if ctx.doc is not None else "host-record"
        report.summary_checked = run_id in assigned
        report.findings = len(check.findings)
        report.not_written = dict(check.not_written)
        report.errored_left_out = check.errored_left_out
        report.verdict = "disagrees" if check.findings else "agrees"
        findings += check.findings
        compared.update(check.compared)
    disagreed = Counter(f.field for f in findings)
    verified = VerifyReport(runs, findings, dict(compared), dict(disagreed), graded.skipped_files)
    if conformance:
        inputs = input_fingerprints(paths, suite_files, summary_files, capabilities)
        verified.conformance = conformance_report(verified, judged, inputs)
    return verified


def verify_events(
    events: Iterable[Mapping[str, Any]],
    suite_docs: Sequence[Mapping[str, Any]] = (),
    summaries: Mapping[str, Any] | None = None,
    options: GradeOptions | None = None,
    capabilities: EvalSuiteFacets | str | Path | None = None,
) -> VerifyReport:
    """Verify events held in memory (dicts with runId, sequence, type, payload, timestamp), with
    host summaries given as `{runId: EvalSummary}`: notebooks and tests."""
    given = [HostSummary(run, doc, f"<summary {run}>") for run, doc in (summaries or {}).items()]
    with in_memory.events_file(events) as path:
        return verify_paths(
            [path],
            suite_docs=suite_docs,
            summaries=given,
            options=options,
            capabilities=capabilities,
        )
