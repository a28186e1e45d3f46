"""A suite document carrying the expectations `common_calls` proposes (E-145), from event logs.

The logs are graded as `run` grades them, against the suites given or, for runs whose suite is
not given, from the host record (D-4), keeping the counted trials' calls (`keep_calls`); so
"passed" is the trial's `passed` in `trials.parquet`. The runs of one suite are read together:
each task's passing trials are pooled across them.

The document is the given suite's, with `expected.trajectory` set on each task that gets an
expectation and every other member kept (a task without one keeps what it had). With no suite
for the runs, it is made from the log, as a starting suite: the suiteId and version the runs
claim, `modes` `["golden"]`, the bar `--default-pass-score` graded them with, `trials.count`
and the chosen `passRule` (`mean` unless chosen, E-149) when the runs had repeated trials, the
target agent when they share one, and one `golden` task per taskId, so the host's verdict on the
output keeps deciding beside the trajectory (§3.4).
It is written only as `evalbatch validate` accepts it: read back from its scratch file as
validate reads it, before it is renamed into place.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from evalbatch import files, jsonvalue
from evalbatch.errors import EXIT_OK, EXIT_SKIPPED, InputError
from evalbatch.infer.common_calls import UNREADABLE, PassingTrial, Proposal, propose
from evalbatch.inputs import event_files
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import load_suites, read_suite_file, validate_suite
from evalbatch.options import (
    GradeOptions,
    InferOptions,
    MatchMode,
    Resources,
    StartingSuiteOptions,
)
from evalbatch.outputs.destinations import Inputs, refuse_overwrite
from evalbatch.pipeline.collect import GradeResult, grade_loaded
from evalbatch.text import printable

#: the modes of a suite made from the log: its tasks are golden (the host graded the output)
MADE_MODES = ["golden"]


@dataclass
class SuiteProposal:
    """The suite `suite infer` proposes for one suite's runs, and what each task got."""

    suite_id: str
    version: str
    document: dict[str, Any]
    tasks: list[Proposal]
    mode: MatchMode
    #: the suite files the document started from; empty when it was made from the log
    suite_paths: tuple[str, ...]
    #: the runs read (graded), and those of the suite that could not be graded
    run_ids: list[str]
    skipped_runs: list[str] = field(default_factory=list)
    problems: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def with_expectation(self) -> int:
        """How many tasks got an expectation."""
        return sum(task.calls is not None for task in self.tasks)

    @property
    def exit_code(self) -> int:
        """0 when every run and file was read; 3 when some was skipped (the file is still
        written from the rest, as `run` writes its outputs)."""
        if "severity" not in self.problems.columns:
            return EXIT_OK
        errors = self.problems.filter(pl.col("severity") == "error").height
        return EXIT_SKIPPED if errors else EXIT_OK


def infer_paths(
    events: Paths,
    suites: Paths = (),
    *,
    options: InferOptions | None = None,
    grade_options: GradeOptions | None = None,
    resources: Resources | None = None,
    run_filter: event_files.RunFilter | None = None,
    suite_options: StartingSuiteOptions | None = None,
) -> SuiteProposal:
    """Propose a trajectory expectation per task from the trials that passed in the eval runs of
    `events` (one suite's: narrow with `run_filter` when they hold several), as `common_calls`
    decides, written into the suite document `suites` holds for them, or one made from
    the log, as `suite_options` say (E-149).

    Raises:
        InputError: no eval run is selected, the runs claim several suites, none of them could
            be graded, `suite_options` were given for runs whose suite is given (it keeps its
            own passRule), or the document would not validate (ids in the log that no suite
            can carry); nothing is proposed.
        SuiteError: a suite file cannot be matched to any run (§1.3).
    """
    options = options or InferOptions()
    grade_options = grade_options or GradeOptions()
    choices = load_suites(as_paths(suites))
    result = grade_loaded(
        as_paths(events),
        choices,
        options=grade_options,
        resources=resources,
        run_filter=run_filter,
        keep_calls=True,
    )
    suite_id, version = _one_suite(result.runs, run_filter)  # every run selected claims it
    graded = result.runs.filter(pl.col("graded").fill_null(False))
    skipped = result.runs.filter(~pl.col("graded").fill_null(False))["run_id"].to_list()
    if graded.height == 0:
        errors = result.problems.filter(
            pl.col("run_id").is_in(skipped) & (pl.col("severity") == "error")
        )
        why = f" ({errors['message'][0]})" if errors.height else ""
        raise InputError(
            f"no run of suite {suite_id} {version} could be graded{why}; nothing was proposed"
        )
    run_ids = sorted(graded["run_id"].to_list())
    choice = choices.get((suite_id, version))
    base = choice.doc if choice is not None else None
    if base is not None and suite_options is not None:
        raise InputError(
            f"the suite given for {printable(suite_id)} {printable(version)} keeps its own "
            "passRule: the starting suite's options (a pass rule) apply only to a suite made "
            "from the log; nothing was proposed"
        )
    task_ids = _task_ids(base, result.tasks, run_ids)
    proposals = _proposals(result, run_ids, task_ids)
    if base is None:
        made = suite_options or StartingSuiteOptions()
        base = _made_from_log(
            suite_id, version, graded, result.tasks, task_ids, grade_options, made
        )
    document = _with_expectations(base, proposals, options.mode)
    _check_valid(document, suite_id, version)
    return SuiteProposal(
        suite_id=suite_id,
        version=version,
        document=document,
        tasks=[proposals[task_id] for task_id in task_ids],
        mode=options.mode,
        suite_paths=choice.paths if choice is not None and choice.doc is not None else (),
        run_ids=run_ids,
        skipped_runs=sorted(skipped),
        problems=result.problems,
    )


def _one_suite(runs: pl.DataFrame, run_filter: event_files.RunFilter | None) -> tuple[str, str]:
    """The one (suiteId, version) the selected runs claim: a suite file describes one."""
    filtered = " matching the run filters" if run_filter is not None else ""
    if runs.height == 0:
        raise InputError(
            f"no eval run (no eval.started) in the events{filtered}; nothing was proposed"
        )
    pairs = runs.select("suite_id", "suite_version").unique().sort(pl.all(), nulls_last=True)
    if pairs.height > 1:
        listed = ", ".join(printable(f"{s} {v}") for s, v in pairs.head(10).iter_rows())
        more = ", ..." if pairs.height > 10 else ""
        raise InputError(
            f"the eval runs{filtered} claim {pairs.height} suites ({listed}{more}): a suite "
            "file describes one; choose it with --suite-id (or its runs with --run-id)"
        )
    suite_id, version = pairs.row(0)
    if suite_id is None or version is None:
        raise InputError(
            "the eval runs name no suiteId or suiteVersion: no suite can describe them; "
            "nothing was proposed"
        )
    return str(suite_id), str(version)


def _task_ids(base: dict[str, Any] | None, tasks: pl.DataFrame, run_ids: list[str]) -> list[str]:
    """The tasks proposed for: the suite's, in its order; without one, the taskIds the runs
    graded (D-4), in order of first appearance (runs by runId)."""
    if base is not None:
        return [task["taskId"] for task in base["tasks"]]
    ordered = (
        tasks.filter(pl.col("run_id").is_in(run_ids))
        .sort("run_id", "task_pos")
        .unique("task_id", keep="first", maintain_order=True)
    )
    return ordered["task_id"].to_list()


def _proposals(result: GradeResult, run_ids: list[str], task_ids: list[str]) -> dict[str, Proposal]:
    """Each task's proposal from its counted trials and the calls of the passing ones."""
    trials = result.trials.filter(pl.col("run_id").is_in(run_ids) & pl.col("counted")).sort(
        "run_id", "sequence"
    )
    passing = trials.filter(pl.col("passed").fill_null(False))
    calls = _calls_by_trial(result.calls, passing)
    counts = dict(trials.group_by("task_id").len().iter_rows())
    chosen: dict[str, list[PassingTrial]] = {task_id: [] for task_id in task_ids}
    for row in passing.iter_rows(named=True):
        if row["task_id"] in chosen:
            key = (row["run_id"], row["sequence"])
            chosen[row["task_id"]].append(
                PassingTrial(tuple(calls.get(key, ())), bool(row["has_bracket"]))
            )
    return {
        task_id: propose(task_id, counts.get(task_id, 0), chosen[task_id]) for task_id in task_ids
    }


def _calls_by_trial(
    calls: pl.DataFrame | None, passing: pl.DataFrame
) -> dict[tuple[str, int], list[tuple[str, Any]]]:
    """(run, trial) -> its calls in order, each (tool name, input as the grader reads it)."""
    found: dict[tuple[str, int], list[tuple[str, Any]]] = {}
    if calls is None or calls.height == 0:
        return found
    keys = passing.select("run_id", pl.col("sequence").alias("trial"))
    rows = calls.join(keys, on=["run_id", "trial"], how="semi").sort("run_id", "trial", "call_pos")
    for run_id, trial, tool, inputs, exact in rows.select(
        "run_id", "trial", "tool_name", "inputs", "exact_payload"
    ).iter_rows():
        found.setdefault((run_id, trial), []).append((tool, _observed(inputs, exact)))
    return found


def _observed(inputs: str | None, exact: str | None) -> Any:
    """A call's input as the grader compares it (D-7), or UNREADABLE."""
    if inputs is None and not exact:
        return UNREADABLE
    try:
        return jsonvalue.observed_inputs(inputs or "", exact)
    except (jsonvalue.NotJson, RecursionError):
        return UNREADABLE


def _with_expectations(
    doc: dict[str, Any], proposals: dict[str, Proposal], mode: MatchMode
) -> dict[str, Any]:
    """A copy of `doc` with `expected.trajectory` set on each task that has a proposal: the
    whole block replaced (its `forbidden` and `includeDelegates` too: the calls proposed are
    the target agent's own, §2.2)."""
    document = copy.deepcopy(doc)
    for task in document["tasks"]:
        proposal = proposals.get(task["taskId"])
        if proposal is not None and proposal.calls is not None:
            task["expected"]["trajectory"] = {"match": mode, "calls": list(proposal.calls)}
    return document


def _made_from_log(
    suite_id: str,
    version: str,
    runs: pl.DataFrame,
    tasks: pl.DataFrame,
    task_ids: list[str],
    options: GradeOptions,
    made: StartingSuiteOptions,
) -> dict[str, Any]:
    """A suite made from the log, without expectations yet: the bar the runs were graded with
    under D-4, written down so a regrade with the suite reads each trial the same, and a golden
    task per taskId (its input is not in the log: `{}`).

    The pass rule is the one chosen, `mean` unless chosen (E-149), in the trials block of runs
    with repeated trials. Runs with one trial per task get no trials block (D-4 showed none),
    and so no rule (`all`: the host's verdict on the one trial), unless a rule is chosen: then
    a block of one trial carries it."""
    doc: dict[str, Any] = {"suiteId": suite_id, "version": version}
    agents = runs["target_agent_id"].drop_nulls().unique().to_list()
    if len(agents) == 1:
        doc["targetAgentId"] = agents[0]
    doc["modes"] = list(MADE_MODES)
    doc["thresholds"] = {"passScore": options.default_pass_score}
    trials: dict[str, Any] = {}
    if runs["k"].drop_nulls().len():  # repeated trials (E-10, E-11): as many as any task had
        count = tasks.filter(pl.col("run_id").is_in(runs["run_id"].to_list()))["n"].max()
        if isinstance(count, int) and count >= 1:
            trials = {"count": count}
    if not trials and made.pass_rule is not None:
        trials = {"count": 1}
    if trials:
        doc["trials"] = {**trials, "passRule": made.rule}
    doc["tasks"] = [
        {"taskId": task_id, "input": {}, "expected": {"kind": "golden"}} for task_id in task_ids
    ]
    return doc


def _check_valid(document: dict[str, Any], suite_id: str, version: str) -> None:
    """A document `validate` would refuse is never proposed: only ids taken from the log (a
    suiteId or taskId outside the schema's patterns) can make one so."""
    errors = [fault for fault in validate_suite(document) if fault.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(
            f"the suite proposed for {suite_id} {version} would not validate: {first.path}: "
            f"{first.message}{more}; the log's ids do not fit the suite schema; nothing was "
            "proposed"
        )


def suite_text(document: dict[str, Any]) -> str:
    """A suite document as its file holds it: JSON indented by 2, text as itself."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def check_destination(
    out: str | Path, *, force: bool = False, events: Paths = (), suites: Paths = ()
) -> None:
    """Stop before anything is graded when `out` may not be written: it is, or would replace,
    a file read (E-120: even with `force`), or it exists and `force` is not given.

    Raises:
        InputError: one line naming the path; nothing is written.
    """
    refuse_overwrite("--out", out, Inputs(events=as_paths(events), suites=as_paths(suites)))
    if Path(out).exists() and not force:
        raise InputError(
            f"--out {printable(out)} exists: nothing was written (--force replaces it)"
        )


def write_proposal(proposal: SuiteProposal, out: str | Path, *, force: bool = False) -> Path:
    """Write the proposed suite to `out` whole (`files.write_aside`), once read back from the
    scratch file as `evalbatch validate` reads it without an error fault.

    Raises:
        InputError: `out` exists and `force` is not given.
        OutputError: the file could not be written; a previous one is unchanged.
    """
    check_destination(out, force=force)
    left = "the previous file is unchanged" if Path(out).exists() else "nothing was written"
    with files.write_aside(out, left) as scratch:
        scratch.write_text(suite_text(proposal.document), encoding="utf-8")
        written = read_suite_file(scratch)
        if written.errors:
            first = written.errors[0]
            raise InputError(
                f"the suite proposed for {proposal.suite_id} {proposal.version} would not "
                f"validate as written: {first.path}: {first.message}; nothing was written"
            )
    return Path(out)
