"""The unit every engine runs: one batch of whole runs through the SQL stage, trial grading and
the reductions, with each run's facts and provenance (§2, §3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalbatch import problems
from evalbatch.extract import delegates, inspect_names, sql_files, trial_tables
from evalbatch.grade.suite_tables import SuiteTables, suite_key
from evalbatch.grade.trial_grading import grade_trials
from evalbatch.inputs import event_files, suites
from evalbatch.options import GradeOptions
from evalbatch.problems import ProblemRow
from evalbatch.reduce import task_reductions
from evalbatch.reduce.run_summaries import RunPlan, build_outcomes
from evalbatch.version import package_version


@dataclass
class Batch:
    """What grading one batch (shard) of whole runs produced, before the cross-run steps."""

    eval_runs: pl.DataFrame
    plans: dict[str, RunPlan]
    outcomes: dict[str, Any]
    trials: pl.DataFrame
    problem_rows: list[ProblemRow]
    fatal_runs: set[str]
    file_problems: list[event_files.FileProblem] = field(default_factory=list)
    #: run -> its runs-table columns that are not in its summary: when its eval ran, its target
    #: agent and baseline, what an Inspect log calls it (E-146), and its provenance (E-54)
    run_columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: eval run -> each child run its trials read and that child's fingerprint, None for a log
    #: that was missing (E-102; an incremental run regrades the parent when one changes, E-50)
    delegates: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: the target agent's calls of every counted trial (run_id, task_id, trial, call_pos,
    #: tool_name, inputs as JSON text, exact_payload), kept only when asked for (`regress`'s
    #: changes, E-136; `suite infer`'s expectations, E-145)
    calls: pl.DataFrame | None = None


@dataclass
class Extracted:
    """One batch after the SQL stage: its trial tables, each run's events fingerprint and the
    times of its eval.started and eval.completed."""

    #: its trial tables, or for a batch whose trials are placed on the grading thread the
    #: tables read off its events (`trial_tables.read_events`)
    ext: trial_tables.Extraction | trial_tables.EventTables
    fingerprints: dict[str, str]
    file_problems: list[event_files.FileProblem]
    eval_times: pl.DataFrame  # run_id, eval_started_at, eval_completed_at


def extract_shard(
    con: Any,
    sources: event_files.Sources,
    runs: event_files.RunRange | None,
    delegate_suites: frozenset[tuple[str, str]] = frozenset(),
    place_later: bool = False,
) -> Extracted:
    """The SQL stage of one batch (a range of run ids): all of it runs in DuckDB. The eval runs
    of `delegate_suites` also read the child runs their trials name (E-102), and their events
    fingerprints cover those children's (E-50). With `place_later`, a batch without them stops
    once its events are read: `grade_extracted` places its trials."""
    ext: trial_tables.Extraction | trial_tables.EventTables
    if place_later and not delegate_suites:
        ext = trial_tables.read_events(con, sources, runs)
    else:
        ext = trial_tables.extract(con, sources, runs, delegate_suites)
    fingerprints = dict(sql_files.relation(con, "batch_fingerprints").fetchall())
    read = ext.delegates.runs if isinstance(ext, trial_tables.Extraction) else None
    if read is not None and read.height:
        children = read.group_by("run_id", maintain_order=True).agg("child_run_id", "fingerprint")
        for run_id, child_ids, child_prints in children.iter_rows():
            fingerprints[run_id] = delegates.with_delegates(
                fingerprints[run_id], dict(zip(child_ids, child_prints, strict=True))
            )
    eval_times = sql_files.relation(con, "eval_times").pl()
    return Extracted(ext, fingerprints, list(sources.problems), eval_times)


def grade_extracted(
    extracted: Extracted,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    con: Any = None,
    keep_calls: bool = False,
) -> Batch:
    """Grade one extracted batch and attach each run's runs-table columns besides its summary.
    A batch whose trials are still to be placed has them placed on `con` (a connection the
    extraction is not using). With `keep_calls`, the counted trials' calls are kept too."""
    ext = extracted.ext
    if isinstance(ext, trial_tables.EventTables):
        ext = trial_tables.segment_trials(con, ext)
    part = _grade_batch(ext, choices, options)
    part.trials = inspect_names.with_trial_names(part.trials, ext.trial_names)
    if keep_calls:
        part.calls = counted_calls(part.trials, ext.trial_calls)
    part.file_problems = extracted.file_problems
    reading = suites.delegate_suites(choices)
    for run in ext.eval_runs.iter_rows(named=True):
        if (run["suite_id"], run["suite_version"]) in reading:
            part.delegates[run["run_id"]] = {}  # graded reading child runs, even if none
    for run_id, child, fingerprint in ext.delegates.runs.iter_rows():
        part.delegates.setdefault(run_id, {})[child] = fingerprint
    version = package_version()
    times = {row["run_id"]: row for row in extracted.eval_times.iter_rows(named=True)}
    names = {row["run_id"]: row for row in ext.run_names.iter_rows(named=True)}
    agents = task_reductions.target_agents(part.trials)
    errored = task_reductions.errored_figures(part.trials)
    for run in ext.eval_runs.iter_rows(named=True):
        run_id = run["run_id"]
        choice = choices.get((run["suite_id"], run["suite_version"]))
        when = times.get(run_id, {})
        part.run_columns[run_id] = {
            "eval_started_at": when.get("eval_started_at"),
            "eval_completed_at": when.get("eval_completed_at"),
            "target_agent_id": agents.get(run_id),
            "baseline_run_id": run["baseline_run_id"],
            **{name: names.get(run_id, {}).get(name) for name in inspect_names.RUN_NAMES},
            **errored.get(run_id, task_reductions.NO_ERRORED),
            inspect_names.LEFT_OUT: names.get(run_id, {}).get(inspect_names.LEFT_OUT),
            "evalbatch_version": version,
            "suite_sha256": choice.sha256 if choice is not None else None,
            "default_pass_score": options.default_pass_score,
            "on_miss_default": options.on_miss_default,
            "events_fingerprint": extracted.fingerprints.get(run_id),
        }
    return part


def counted_calls(trials: pl.DataFrame, calls: pl.DataFrame) -> pl.DataFrame:
    """The target agent's calls in each counted trial's bracket, keyed by the trial (its
    eval.scored sequence), in call order: what a trial did, for the changes behind a verdict
    and the expectations `suite infer` proposes. `exact_payload` is the call's payload text
    where DuckDB may have rounded a number of `inputs` (`jsonvalue.observed_inputs`, D-7)."""
    counted = trials.filter("counted").select(
        "run_id", "segment_no", "task_id", pl.col("scored_seq").alias("trial")
    )
    return (
        calls.filter("by_target")
        .join(counted, on=["run_id", "segment_no"], how="inner")
        .select("run_id", "task_id", "trial", "call_pos", "tool_name", "inputs", "exact_payload")
        .sort("run_id", "trial", "call_pos")
    )


def grade_shard(
    con: Any,
    sources: event_files.Sources,
    runs: event_files.RunRange | None,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> Batch:
    """Extract and grade the runs of one batch (a range of run ids): the unit every engine runs."""
    extracted = extract_shard(con, sources, runs, suites.delegate_suites(choices))
    return grade_extracted(extracted, choices, options)


def _grade_batch(
    ext: trial_tables.Extraction,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> Batch:
    """Grade the runs of one extraction: plan each run, grade its trials, reduce to summaries."""
    problem_rows: list[ProblemRow] = [(r, s, c, "") for r, s, c in ext.event_problems.iter_rows()]
    error_codes = [c for c, (sev, _) in problems.CODES.items() if sev == "error"]
    fatal_runs = set(
        ext.event_problems.filter(pl.col("code").is_in(error_codes))["run_id"].to_list()
    )
    plans: dict[str, RunPlan] = {}
    plan_rows = []
    docs: dict[str, dict[str, Any]] = {}
    target_agents: dict[str, str] = {}
    for run in ext.eval_runs.iter_rows(named=True):
        run_id = run["run_id"]
        if run_id in fatal_runs:
            continue
        key = (run["suite_id"], run["suite_version"])
        choice = choices.get(key) if None not in key else None
        if choice is not None and choice.problem is not None:
            problem_rows.append((run_id, run["start_seq"], choice.problem, choice.message or ""))
            fatal_runs.add(run_id)
            continue
        doc = choice.doc if choice is not None else None
        if doc is None and (run["trial_count"] or 0) > problems.MAX_TRIALS:
            # E-78: trials beyond the limit are not counted, and a count cut to it would grade
            # another run than the host's: fail closed
            problem_rows.append((run_id, run["start_seq"], "trial-count-limit", ""))
            fatal_runs.add(run_id)
            continue
        if doc is None:
            problem_rows.append((run_id, run["start_seq"], "suite-missing", ""))
        else:
            docs[suite_key(*key)] = doc
            if "targetAgentId" in doc:
                target_agents[run_id] = doc["targetAgentId"]
        cap = (doc.get("trials") or {}).get("count", 1) if doc is not None else run["trial_count"]
        plans[run_id] = RunPlan(
            run_id=run_id,
            suite_id=run["suite_id"],
            suite_version=run["suite_version"],
            doc=doc,
            trial_count=run["trial_count"] if doc is None else None,
            has_cost_source=run_id in ext.cost_source_runs,
        )
        plan_rows.append(
            {
                "run_id": run_id,
                "suite_key": suite_key(*key) if doc is not None else None,
                "trial_cap": None if cap is None else int(cap),
                "live_shadow": run["live_shadow"],
            }
        )
    plan_frame = pl.DataFrame(
        plan_rows,
        schema={
            "run_id": pl.String,
            "suite_key": pl.String,
            "trial_cap": pl.Int64,
            "live_shadow": pl.Boolean,
        },
    )
    tables = SuiteTables.build(docs)
    trials = grade_trials(ext, plan_frame, tables, options)
    problem_rows += _trial_problems(trials, target_agents)
    problem_rows += _delegate_problems(trials, ext)
    counted_segments = trials.filter("counted").select("run_id", "segment_no")
    problem_rows += [
        (r, s, c, "")
        for r, s, c in ext.usage_problems.join(counted_segments, on=["run_id", "segment_no"])
        .select("run_id", "sequence", "code")
        .iter_rows()
    ]
    info = task_reductions.run_info(plans, options)
    tasks = task_reductions.reduce_tasks(trials, info, tables)
    problem_rows += task_reductions.missing_trial_problems(tasks)
    outcomes = build_outcomes(
        plans, tasks, task_reductions.suite_figures(tasks), task_reductions.model_classes(trials)
    )
    return Batch(ext.eval_runs, plans, outcomes, trials, problem_rows, fatal_runs)


def _trial_problems(trials: pl.DataFrame, target_agents: dict[str, str]) -> list[ProblemRow]:
    """Problems seen while placing and grading trials (D-5, §2.1, D-11, E-16), found with one
    filter per rule over the trial table."""
    targets = pl.DataFrame(
        {"run_id": list(target_agents), "suite_target": list(target_agents.values())},
        schema={"run_id": pl.String, "suite_target": pl.String},
    )
    frame = trials.join(targets, on="run_id", how="left")
    counted = pl.col("counted")
    host_kind = pl.col("kind") != "trajectory"
    rules: list[tuple[pl.Expr, str, str, str]] = [  # (condition, sequence column, code, detail)
        (pl.col("trial_index_invalid"), "scored_seq", "trial-index-invalid", ""),
        (~counted, "scored_seq", "", ""),  # code: the left-out reason
        (counted & ~pl.col("has_bracket"), "scored_seq", "bracket-missing", ""),
        (
            counted & pl.col("has_bracket") & ~pl.col("bracket_closed"),
            "bracket_start_seq",
            "bracket-unclosed",
            "",
        ),
        (
            counted
            & pl.col("bracket_closed")
            & pl.col("suite_target").is_not_null()
            & pl.col("target_agent_id").ne_missing(pl.col("suite_target")),
            "bracket_start_seq",
            "target-agent-mismatch",
            "",
        ),
        (
            counted & host_kind & pl.col("host_score").is_null() & ~pl.col("errored"),
            "scored_seq",
            "score-invalid",
            "",
        ),
        (
            counted & host_kind & pl.col("host_passed").is_null() & ~pl.col("errored"),
            "scored_seq",
            "passed-invalid",
            "",
        ),
        (counted & pl.col("errored"), "scored_seq", "sample-errored", ""),
        (
            counted & pl.col("host_cost_present") & pl.col("host_cost_usd").is_null(),
            "scored_seq",
            "cost-invalid",
            "eval.scored.costUsd",
        ),
    ]
    found = []
    for condition, sequence, code, detail in rules:
        code_expr = pl.col("left_out") if code == "" else pl.lit(code)
        found.append(
            frame.filter(condition).select(
                "run_id",
                pl.col(sequence).alias("sequence"),
                code_expr.alias("code"),
                pl.lit(detail).alias("detail"),
            )
        )
    return list(pl.concat(found).iter_rows())


def _delegate_problems(trials: pl.DataFrame, ext: trial_tables.Extraction) -> list[ProblemRow]:
    """A problem per child run a counted trial that includes delegates cannot read (E-102), at
    the event of its bracket that named the path to it, naming the child run (an id)."""
    faults = ext.delegates.faults
    if faults.is_empty():
        return []
    wide = trials.filter(pl.col("counted") & pl.col("include_delegates")).select(
        "run_id", "segment_no"
    )
    return [
        (run_id, sequence, code, f"child run {child}" if child is not None else "")
        for run_id, sequence, code, child in faults.join(
            wide, on=["run_id", "segment_no"], how="semi"
        )
        .select("run_id", "sequence", "code", "child_run_id")
        .iter_rows()
    ]
