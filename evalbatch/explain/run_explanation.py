"""`evalbatch explain`: why one eval run's trials graded as they did, call by call.

For the team's own eyes, not a wire artefact: unlike an EvalSummary, an explanation shows tool
names and arguments. It never grades anything itself. The run is extracted and graded by the
grader's own code (`pipeline.shard.grade_shard`: the SQL stage, `trial_grading.grade_trials`, the
reductions), and the per-call detail comes from `trial_grading.trajectory_detail` and
`trial_grading.fixture_detail`, which keep call by call what `grade_trajectories` and
`count_fixture_misses` count, with the same joins and the same `match` functions; which checks of
a trajectory failed, and which is named first, is `trial_grading.TRAJECTORY_CHECKS`' (explain
only says where, call by call). The numbers shown for a trial are its row of the trials table
(`pipeline.batch_rows.trial_table`), so an explanation agrees with `evalbatch run` by construction;
the tests check it for every sample trial.

What an explanation holds is in `explanation`; `text_rendering` and `json_shape` show it. This
module reads the run: it extracts and grades only the one run asked for (E-55), names the eval
runs the events do hold when it is not one of them, keeps the trials of the task and index asked
for, and lists each task's trials, the missing ones too (D-12, D-13), in the suite's order. For
a run ingested from an Inspect log, a task is also found by its sample id and a trial by its
epoch, and the explanation carries the names Inspect gave them (E-146).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from evalbatch import problems
from evalbatch.errors import InputError
from evalbatch.explain.explanation import (
    Explanation,
    Problem,
    TaskExplanation,
    TrialExplanation,
)
from evalbatch.explain.observed_calls import calls_by_segment, read_calls
from evalbatch.explain.sample_text import with_sample_text
from evalbatch.explain.trial_explanation import explain_trial, missing_trial
from evalbatch.extract import inspect_names, sql_files, trial_tables
from evalbatch.extract.delegates import DelegateFrames
from evalbatch.grade import trial_grading
from evalbatch.grade.suite_tables import SuiteTables
from evalbatch.inputs import event_files
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.batch_rows import trial_table
from evalbatch.pipeline.shard import grade_shard
from evalbatch.problems import problem_message


class UnknownRun(InputError):
    """The run asked for is not an eval run of the events."""


class UnknownSelection(InputError):
    """--task or --trial names nothing in the run."""


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
    epoch: int | None = None,
    sample_text: bool = False,
    inspect_log: str | Path | None = None,
    inspect_scorer: str | None = None,
) -> Explanation:
    """Explain how one eval run's trials graded, with the grader's own code (see module doc).

    `events` and `suites` are each one path (a `str` or a `Path`) or a list of them. `run_id`
    is required. `task_id` and `trial_index` keep only the trials of
    that task and/or index. For a run from an Inspect log (E-146), `task_id` may be a sample id
    as Inspect has it, and `epoch` (from 1) keeps the trials of that epoch, whose trial index
    is `epoch - 1` (E-111); give `epoch` or `trial_index`, not both. With `sample_text`, each
    trial of an Inspect sample also shows what the sample said, read from the run's log
    (`inspect_log`, else the log among `events`; `inspect_scorer` the scorer whose answer and
    explanation: `sample_text.with_sample_text`, E-150).

    Raises:
        TypeError: no `run_id`, both `trial_index` and `epoch`, or `inspect_log` or
            `inspect_scorer` without `sample_text`.
        UnknownRun: `run_id` is not an eval run of the events.
        UnknownSelection: no trial of the run has that task or index, `task_id` names two
            tasks (a taskId and another task's sample id), or `epoch` is given for a run that is
            not from an Inspect log.
        InputError: no event file can be used at all.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
        NoSampleText: `sample_text` cannot be read (`with_sample_text`).
    """
    if run_id is None:
        raise TypeError("explain_paths() needs run_id=")
    if trial_index is not None and epoch is not None:
        raise TypeError("explain_paths() takes trial_index= or epoch=, not both")
    if not sample_text and (inspect_log is not None or inspect_scorer is not None):
        raise TypeError("explain_paths() reads inspect_log= and inspect_scorer= with sample_text=")

    def shown(explanation: Explanation) -> Explanation:
        if not sample_text:
            return explanation
        return with_sample_text(explanation, events, inspect_log, inspect_scorer)

    suite_files = as_paths(suites)
    options = options or GradeOptions()
    choices = load_suites(suite_files)
    con = trial_tables.new_connection(resources)
    try:
        sources = event_files.scan(con, as_paths(events))
        sources.only_runs = frozenset({run_id})
        batch = grade_shard(con, sources, None, choices, options)
        known = set(batch.eval_runs["run_id"].to_list())
        if run_id not in known:
            raise _unknown_run(con, sources, run_id)
        calls = read_calls(con)
        judges = sql_files.relation(con, "explain_judge_calls").pl()
        delegates = DelegateFrames(
            calls=con.table("trial_delegate_calls").pl(),
            faults=con.table("trial_delegate_faults").pl(),
        )
    finally:
        con.close()
    notes = [problem_message(None, None, p.code, p.path) for p in batch.file_problems]
    run = batch.eval_runs.filter(pl.col("run_id") == run_id).row(0, named=True)
    columns = batch.run_columns.get(run_id, {})
    names = {n: columns[n] for n in inspect_names.RUN_NAMES if columns.get(n) is not None}
    if epoch is not None:
        if not names:
            raise UnknownSelection(
                f"--epoch: run {run_id} is not from an Inspect log, so its trials have no "
                "epoch; --trial selects one by its index"
            )
        trial_index = epoch - 1  # the trial index an Inspect epoch is given (E-111)
    run_problems = [_problem(r, s, c, d) for r, s, c, d in batch.problem_rows if r == run_id]
    plan = batch.plans.get(run_id)
    if plan is None or run_id in batch.fatal_runs:
        ungraded = Explanation(
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
            names=names,
        )
        return shown(ungraded)
    key = plan.suite_key
    tables = SuiteTables.build({key: plan.doc} if key is not None and plan.doc is not None else {})
    trials = batch.trials.filter(pl.col("run_id") == run_id)
    explanation = _explain_run(
        run_id,
        plan,
        trials,
        calls,
        delegates,
        judges,
        tables,
        batch.outcomes[run_id].summary,
        run_problems,
        options,
        task_id,
        trial_index,
        notes,
    )
    return shown(replace(explanation, names=names))


def _chosen_task(
    run_id: str, asked: str, trials: pl.DataFrame, tasks: Collection[str]
) -> str | None:
    """The taskId `--task-id` names: a taskId of the run, or the task an Inspect sample id is
    (E-146); None when it names neither. One that is a taskId and another task's sample id
    names two: an error naming both by taskId."""
    by_sample = trials.filter(pl.col("sample_id") == asked)["task_id"].unique().to_list()
    found = sorted(({asked} & set(tasks)) | set(by_sample))
    if len(found) > 1:
        raise UnknownSelection(
            f"run {run_id}: --task-id {asked} names {len(found)} tasks, as a taskId and as an "
            f"Inspect sample id; give one of their taskIds: {', '.join(found)}"
        )
    return found[0] if found else None


def _explain_run(
    run_id: str,
    plan: Any,
    trials: pl.DataFrame,
    calls: pl.DataFrame,
    delegates: DelegateFrames,
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
    trajectories = trial_grading.trajectory_detail(trials, calls, tables, delegates.calls)
    fixtures = trial_grading.fixture_detail(trials, calls, tables)
    faults_by_segment: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for fault in delegates.faults.filter(pl.col("run_id") == run_id).iter_rows(named=True):
        faults_by_segment[fault["segment_no"]].append(fault)
    judge_by_segment = {r["segment_no"]: r for r in judges.iter_rows(named=True)}
    bracket_calls = calls_by_segment(calls, run_id)
    entries = {e["taskId"]: e for e in summary["tasks"]}
    if task_id is not None:
        known = set(trials["task_id"].to_list()) | set(entries)
        if has_suite:
            known |= set(tables.tasks["task_id"].to_list())
        task_id = _chosen_task(run_id, task_id, trials, known) or task_id
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
            explain_trial(
                t,
                rows[t["scored_seq"]],
                has_suite,
                trajectories,
                fixtures,
                judge_by_segment.get(t["segment_no"]),
                bracket_calls.get(t["segment_no"], []),
                mine,
                options,
                plan.has_cost_source,
                first_by_index,
                faults_by_segment.get(t["segment_no"], []),
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
            missing_trial(name, i, bool(present))
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
