"""The library surface the CLI and notebooks share: grade event logs, write the outputs.

Flow: event files -> SQL stage (`extract`) -> trial grading (`grade`) -> task and suite
reductions (`summarize`) -> EvalSummary rows and tables (`outputs`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch import (
    extract,
    incremental,
    inputs,
    jsonvalue,
    problems,
    reduce,
    regress,
    sql,
    suites,
)
from evalbatch.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SKIPPED,
    EXIT_UNUSABLE,
    InputError,
    OutputError,
    write_failed,
)
from evalbatch.grade import grade_trials
from evalbatch.options import GradeOptions
from evalbatch.spec import SuiteTables, suite_key
from evalbatch.summarize import RunPlan, build_outcomes
from evalbatch.text import printable
from evalbatch.version import package_version

ProblemRow = tuple[str | None, int | None, str, str]  # (run_id, sequence, code, detail)

PROBLEM_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "sequence": pl.Int64,
        "code": pl.String,
        "severity": pl.String,
        "message": pl.String,
    }
)

#: events per batch of whole runs: below this everything is graded in one pass
DEFAULT_BATCH_EVENTS = 1_000_000

#: exit codes of `evalbatch run` (CONTRACT §6 and the issue): all graded, unusable input, skips


@dataclass
class GradeResult:
    """Everything one grading pass produced."""

    summaries: dict[str, dict[str, Any]]
    runs: pl.DataFrame
    tasks: pl.DataFrame
    trials: pl.DataFrame
    problems: pl.DataFrame
    skipped: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every run was graded and every file read; 3 when something was skipped."""
        lost = self.problems.filter(pl.col("severity") == "error").height
        return EXIT_SKIPPED if lost else EXIT_OK


def problem_message(run_id: str | None, sequence: int | None, code: str, detail: str = "") -> str:
    """A content-free message naming the run, the event and the rule."""
    where = f"run {run_id}" if run_id else "input"
    if sequence is not None:
        where += f", event {sequence}"
    text = f"{where}: {problems.CODES[code][1]} [{code}]"
    return f"{text}: {detail}" if detail else text


def _problem_frame(rows: Iterable[ProblemRow]) -> pl.DataFrame:
    records = [
        {
            "run_id": run_id,
            "sequence": sequence,
            "code": code,
            "severity": problems.severity(code),
            "message": problem_message(run_id, sequence, code, detail),
        }
        for run_id, sequence, code, detail in rows
    ]
    return _sorted_problems(pl.DataFrame(records, schema=PROBLEM_SCHEMA))


def _sorted_problems(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.unique(maintain_order=True).sort(
        "run_id", "sequence", "code", "message", nulls_last=False
    )


def load_suites(
    paths: Sequence[str | Path] = (), docs: Sequence[Mapping[str, Any]] = ()
) -> dict[tuple[str, str], suites.SuiteChoice]:
    """Suites from files and directories, and from documents given in memory (notebooks, tests)."""
    files = suites.load_suite_files(list(paths))
    for number, doc in enumerate(docs):
        files.append(
            suites.SuiteFile(
                path=f"<suite {number}>",
                doc=dict(doc),
                faults=tuple(suites.validate_suite(doc)),
                # no file: the sha256 of the document's canonical JSON text
                sha256=hashlib.sha256(
                    jsonvalue.canonical_text(json.dumps(doc)).encode()
                ).hexdigest(),
            )
        )
    return suites.resolve_suites(files)


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
        (counted & host_kind & pl.col("host_score").is_null(), "scored_seq", "score-invalid", ""),
        (counted & host_kind & pl.col("host_passed").is_null(), "scored_seq", "passed-invalid", ""),
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


@dataclass
class _Batch:
    """What grading one batch (shard) of whole runs produced, before the cross-run steps."""

    eval_runs: pl.DataFrame
    plans: dict[str, RunPlan]
    outcomes: dict[str, Any]
    trials: pl.DataFrame
    problem_rows: list[ProblemRow]
    fatal_runs: set[str]
    file_problems: list[inputs.FileProblem] = field(default_factory=list)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)  # run -> runs columns


@dataclass(frozen=True)
class Progress:
    """How far a grading pass is, reported after each batch (a progress display)."""

    batches_done: int
    batches: int
    runs_done: int
    runs: int
    events_done: int


@dataclass
class _Extracted:
    """One batch after the SQL stage: its trial tables and each run's events fingerprint."""

    ext: extract.Extraction
    fingerprints: dict[str, str]
    file_problems: list[inputs.FileProblem]


def _extract_shard(con: Any, sources: inputs.Sources, runs: inputs.RunRange | None) -> _Extracted:
    """The SQL stage of one batch (a range of run ids): all of it runs in DuckDB."""
    ext = extract.extract(con, sources, runs)
    fingerprints = dict(sql.relation(con, "batch_fingerprints").fetchall())
    return _Extracted(ext, fingerprints, list(sources.problems))


def _grade_extracted(
    extracted: _Extracted,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> _Batch:
    """Grade one extracted batch and attach each run's provenance."""
    ext = extracted.ext
    part = _grade_batch(ext, choices, options)
    part.file_problems = extracted.file_problems
    version = package_version()
    for run in ext.eval_runs.iter_rows(named=True):
        choice = choices.get((run["suite_id"], run["suite_version"]))
        part.provenance[run["run_id"]] = {
            "evalbatch_version": version,
            "suite_sha256": choice.sha256 if choice is not None else None,
            "default_pass_score": options.default_pass_score,
            "on_miss_default": options.on_miss_default,
            "events_fingerprint": extracted.fingerprints.get(run["run_id"]),
        }
    return part


def grade_shard(
    con: Any,
    sources: inputs.Sources,
    runs: inputs.RunRange | None,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> _Batch:
    """Extract and grade the runs of one batch (a range of run ids): the unit every engine runs."""
    return _grade_extracted(_extract_shard(con, sources, runs), choices, options)


#: picks the runs a pass grades, given the scanned files (None: those `sources` already hold)
ChooseRuns = Callable[[Any, inputs.Sources], frozenset[str] | None]


def _chooser(
    run_filter: inputs.RunFilter | None, then: ChooseRuns | None = None
) -> ChooseRuns | None:
    """The run filter first (it narrows the sources), then `then` among the runs it kept."""
    if run_filter is None or run_filter.empty:
        return then

    def choose(con: Any, sources: inputs.Sources) -> frozenset[str] | None:
        run_filter.apply(con, sources)
        return then(con, sources) if then is not None else None

    return choose


@dataclass
class _Pass:
    """One grading pass: the files, how their runs are batched, and the batches as they come."""

    plan: inputs.BatchPlan
    file_problems: dict[tuple[str, str], inputs.FileProblem]
    parts: Iterator[_Batch]


@dataclass(frozen=True)
class _Resources:
    """How a local pass batches its runs and what DuckDB may use for each batch."""

    batch_events: int = DEFAULT_BATCH_EVENTS
    threads: int | None = None
    memory_limit: str | None = None
    spill_dir: str | None = None


def _local_pass(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    resources: _Resources,
    choose_runs: ChooseRuns | None = None,
) -> _Pass:
    """The local engine: batches one after another on one DuckDB connection."""
    con = extract.connect(resources.threads, resources.memory_limit, resources.spill_dir)
    try:
        sources = inputs.scan(con, paths)
        if choose_runs is not None:
            picked = choose_runs(con, sources)
            if picked is not None:
                sources.only_runs = picked
        plan = inputs.plan_batches(con, sources, resources.batch_events)
    except BaseException:
        con.close()
        raise
    found: dict[tuple[str, str], inputs.FileProblem] = {}

    def parts() -> Iterator[_Batch]:
        # DuckDB extracts the next batch on a worker thread (it releases the GIL) while this
        # thread grades the current one in Python and Polars: the two stages overlap.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalbatch-extract")
        ranges = iter(plan.ranges)
        pending = None
        try:
            first = next(ranges, None)  # a range is a tuple, never None
            if first is not None:
                pending = pool.submit(_extract_shard, con, sources, first)
            while pending is not None:
                extracted = pending.result()
                following = next(ranges, None)
                pending = (
                    None
                    if following is None
                    else pool.submit(_extract_shard, con, sources, following)
                )
                part = _grade_extracted(extracted, choices, options)
                found.update({(p.path, p.code): p for p in part.file_problems})
                yield part
        finally:
            if pending is not None and not pending.cancel():
                con.interrupt()
                wait([pending])
            pool.shutdown(wait=True)
            con.close()

    return _Pass(plan, found, parts())


def _grading_pass(
    events: Sequence[str | Path],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    engine: str,
    ray_address: str | None,
    resources: _Resources,
    choose_runs: ChooseRuns | None = None,
) -> _Pass:
    """A grading pass on the chosen engine (the local one batches with `resources`)."""
    paths = [str(p) for p in events]
    if engine == "ray":
        if choose_runs is not None:
            raise InputError(
                "--incremental and the run filters need the local engine (leave out --engine ray)"
            )
        from evalbatch import ray_engine  # optional: needs the `ray` extra

        plan, parts = ray_engine.grade_shards(paths, choices, options, address=ray_address)
        found = {(p.path, p.code): p for part in parts for p in part.file_problems}
        return _Pass(plan, found, iter(parts))
    return _local_pass(paths, choices, options, resources, choose_runs)


def grade_shards_locally(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    batch_events: int = DEFAULT_BATCH_EVENTS,
    threads: int | None = None,
    memory_limit: str | None = None,
    spill_dir: str | None = None,
    run_filter: inputs.RunFilter | None = None,
) -> list[_Batch]:
    """Every batch of the local engine, graded but not merged (for tools that need the per-run
    grading detail, such as `verify`)."""
    resources = _Resources(batch_events, threads, memory_limit, spill_dir)
    grading = _local_pass(paths, choices, options, resources, _chooser(run_filter))
    parts = list(grading.parts)
    for part in parts:  # a damaged file found in a later batch was read in none
        part.file_problems = list(grading.file_problems.values())
    return parts


@dataclass
class MergedBatches:
    """The batches of one grading pass as one, with each run's plan, outcome and trials (for
    tools that read the per-run grading detail, such as `verify`)."""

    eval_runs: pl.DataFrame
    plans: dict[str, RunPlan]
    outcomes: dict[str, Any]
    trials: pl.DataFrame
    fatal: dict[str, list[str]]  # each run not graded -> its error problem codes, as found
    skipped_files: list[inputs.FileProblem]

    @classmethod
    def of(cls, parts: Sequence[_Batch]) -> MergedBatches:
        """Merge the batches of `grade_shards_locally` (each holds whole runs)."""
        fatal: dict[str, list[str]] = {run: [] for part in parts for run in part.fatal_runs}
        errors = [
            (run_id, code)
            for part in parts
            for run_id, _, code, _ in part.problem_rows
            if run_id in fatal and problems.severity(code) == "error"
        ]
        for run_id, code in errors:
            if code not in fatal[run_id]:
                fatal[run_id].append(code)
        return cls(
            eval_runs=pl.concat([part.eval_runs for part in parts]).sort("run_id"),
            plans={run: plan for part in parts for run, plan in part.plans.items()},
            outcomes={run: o for part in parts for run, o in part.outcomes.items()},
            trials=pl.concat([part.trials for part in parts], how="diagonal_relaxed"),
            fatal=fatal,
            skipped_files=list(parts[0].file_problems) if parts else [],
        )


def _grade_batch(
    ext: extract.Extraction,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> _Batch:
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
    counted_segments = trials.filter("counted").select("run_id", "segment_no")
    problem_rows += [
        (r, s, c, "")
        for r, s, c in ext.usage_problems.join(counted_segments, on=["run_id", "segment_no"])
        .select("run_id", "sequence", "code")
        .iter_rows()
    ]
    info = reduce.run_info(plans, options)
    tasks = reduce.reduce_tasks(trials, info, tables)
    problem_rows += reduce.missing_trial_problems(tasks)
    outcomes = build_outcomes(
        plans, tasks, reduce.suite_figures(tasks), reduce.model_classes(trials)
    )
    return _Batch(ext.eval_runs, plans, outcomes, trials, problem_rows, fatal_runs)


@dataclass
class BatchOutput:
    """One batch of whole runs in output form: rows sorted by run id, summaries validated."""

    summaries: list[tuple[str, dict[str, Any]]]
    runs: pl.DataFrame
    tasks: pl.DataFrame
    trials: pl.DataFrame
    problem_rows: list[ProblemRow]
    baselines: dict[str, tuple[str, int]]  # graded run -> (baselineRunId, eval.started sequence)
    eval_run_ids: list[str]
    declared_baselines: dict[str, str] = field(default_factory=dict)  # every eval run's
    run_range: inputs.RunRange = (None, None)  # the batch's range of run ids


def _batch_output(part: _Batch) -> BatchOutput:
    """Validate each summary against the closed schema (a breach is a grading fault: the run is
    not written) and lay the batch out as output rows."""
    problem_rows = list(part.problem_rows)
    fatal_runs = set(part.fatal_runs)
    summaries: list[tuple[str, dict[str, Any]]] = []
    run_rows: list[dict[str, Any]] = []
    task_rows: list[dict[str, Any]] = []
    for run_id, outcome in sorted(part.outcomes.items()):
        faults = [f for f in suites.validate_summary(outcome.summary) if f.severity == "error"]
        if faults:
            detail = "; ".join(f"{f.path}: {f.message}" for f in faults[:3])
            problem_rows.append((run_id, None, "summary-invalid", detail))
            fatal_runs.add(run_id)
            continue
        summaries.append((run_id, outcome.summary))
        task_rows += outcome.task_rows
        run_rows.append(
            _run_row(run_id, outcome.summary, part.plans[run_id]) | part.provenance.get(run_id, {})
        )
    eval_runs = {row["run_id"]: row for row in part.eval_runs.iter_rows(named=True)}
    for run_id in sorted(fatal_runs):
        run = eval_runs.get(run_id, {})
        run_rows.append(
            {
                "run_id": run_id,
                "suite_id": run.get("suite_id"),
                "suite_version": run.get("suite_version"),
                "graded": False,
            }
            | part.provenance.get(run_id, {})
        )
    graded = {run_id for run_id, _ in summaries}
    return BatchOutput(
        summaries=summaries,
        runs=pl.DataFrame(run_rows, schema=RUN_SCHEMA).sort("run_id"),
        tasks=pl.DataFrame(task_rows, schema=TASK_SCHEMA).sort("run_id", "task_pos"),
        trials=_trial_table(part.trials),
        problem_rows=problem_rows,
        baselines={
            run_id: (row["baseline_run_id"], row["start_seq"])
            for run_id, row in eval_runs.items()
            if row["baseline_run_id"] is not None and run_id in graded
        },
        eval_run_ids=list(eval_runs),
        declared_baselines={
            run_id: row["baseline_run_id"]
            for run_id, row in eval_runs.items()
            if row["baseline_run_id"] is not None
        },
    )


@dataclass
class _Merged:
    """What the batches add up to, kept until the cross-run steps are done."""

    runs: list[pl.DataFrame] = field(default_factory=list)
    tasks: list[pl.DataFrame] = field(default_factory=list)
    problem_rows: list[ProblemRow] = field(default_factory=list)
    baselines: dict[str, tuple[str, int]] = field(default_factory=dict)
    eval_run_ids: set[str] = field(default_factory=set)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # summaries with a baseline
    declared_baselines: dict[str, str] = field(default_factory=dict)

    def add(self, batch: BatchOutput) -> None:
        self.runs.append(batch.runs)
        self.tasks.append(batch.tasks)
        self.problem_rows += batch.problem_rows
        self.baselines.update(batch.baselines)
        self.eval_run_ids.update(batch.eval_run_ids)
        self.declared_baselines.update(batch.declared_baselines)
        self.pending.update((r, s) for r, s in batch.summaries if r in batch.baselines)

    def finish(
        self,
        grading: _Pass,
        regress_options: regress.RegressOptions,
        carried: incremental.Carried | None = None,
    ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """Add the regression blocks (§5: the baseline may sit in any batch) and return the
        runs, tasks and problems tables, with the rows `carried` from the previous outputs."""
        runs = pl.concat([pl.DataFrame(schema=RUN_SCHEMA), *self.runs]).sort("run_id")
        tasks = pl.concat([pl.DataFrame(schema=TASK_SCHEMA), *self.tasks])
        if carried is not None:
            runs = pl.concat([runs, carried.run_rows.cast(RUN_SCHEMA)]).sort("run_id")
            tasks = pl.concat([tasks, carried.task_rows.cast(TASK_SCHEMA)]).sort(
                "run_id", "task_pos"
            )
            self.eval_run_ids.update(carried.run_rows["run_id"].to_list())
        problem_rows: list[ProblemRow] = [
            (None, None, p.code, p.message) for _, p in sorted(grading.file_problems.items())
        ]
        if grading.plan.rows_without_run:
            problem_rows.append(
                (None, None, "row-invalid", f"{grading.plan.rows_without_run} row(s)")
            )
        problem_rows += self.problem_rows
        problem_rows += _link_regressions(
            self.pending, self.baselines, self.eval_run_ids, runs, tasks, regress_options
        )
        if carried is not None and carried.problem_rows.height:
            problem_frame = pl.concat(
                [_problem_frame(problem_rows), carried.problem_rows.cast(PROBLEM_SCHEMA)]
            )
            return runs, tasks, _sorted_problems(problem_frame)
        return runs, tasks, _problem_frame(problem_rows)


def _link_regressions(
    pending: dict[str, dict[str, Any]],
    baselines: dict[str, tuple[str, int]],
    eval_run_ids: set[str],
    runs: pl.DataFrame,
    tasks: pl.DataFrame,
    options: regress.RegressOptions,
) -> list[ProblemRow]:
    """Put a `regression` block (§5) into each summary whose baseline run is in the input."""
    wanted = {run for run, (base, _) in baselines.items() if base in eval_run_ids}
    wanted |= {baselines[run][0] for run in wanted}
    by_run = tasks.filter(pl.col("run_id").is_in(sorted(wanted))).partition_by(
        "run_id", as_dict=True
    )
    graded = dict(runs.filter("graded").select("run_id", "suite_id").iter_rows())
    found: list[ProblemRow] = []
    for run_id, (baseline, sequence) in sorted(baselines.items()):
        if baseline not in eval_run_ids:
            continue  # §3.6: a block only when the baseline is in the input
        summary = pending[run_id]
        if baseline not in graded:
            found.append(
                (run_id, sequence, "regression-unavailable", f"baseline {baseline} was not graded")
            )
            continue
        if graded[baseline] != summary["suiteId"]:
            found.append(
                (
                    run_id,
                    sequence,
                    "regression-unavailable",
                    f"baseline {baseline} is a run of another suite",
                )
            )
            continue
        empty = pl.DataFrame(schema=TASK_SCHEMA)
        comparison = regress.compare(
            by_run.get((baseline,), empty),
            by_run.get((run_id,), empty),
            options,
            suite_id=summary["suiteId"],
            base_run=baseline,
            cand_run=run_id,
        )
        if comparison.reason is not None:
            found.append((run_id, sequence, "regression-unavailable", comparison.reason))
            continue
        entries = summary.pop("tasks")
        summary["regression"] = comparison.block()
        summary["tasks"] = entries
    return found


def _outputs(grading: _Pass, on_batch: Callable[[Progress], None] | None) -> Iterator[BatchOutput]:
    runs_done = events_done = 0
    for number, part in enumerate(grading.parts, start=1):
        batch = _batch_output(part)
        batch.run_range = grading.plan.ranges[number - 1]
        runs_done += batch.runs.height
        events_done += grading.plan.events[number - 1]
        yield batch
        if on_batch is not None:
            on_batch(
                Progress(
                    number, len(grading.plan.ranges), runs_done, grading.plan.runs, events_done
                )
            )


def grade_paths(
    events: Sequence[str | Path],
    suite_paths: Sequence[str | Path] = (),
    *,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
    threads: int | None = None,
    regress_options: regress.RegressOptions | None = None,
    batch_events: int = DEFAULT_BATCH_EVENTS,
    memory_limit: str | None = None,
    spill_dir: str | None = None,
    on_batch: Callable[[Progress], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    run_filter: inputs.RunFilter | None = None,
) -> GradeResult:
    """Grade every eval run in the event files at `events` (files, directories, globs), in memory.

    Runs are graded in batches of whole runs of about `batch_events` events each;
    `memory_limit` and `spill_dir` bound DuckDB within a batch. `on_batch(progress)` is called
    after each batch. With `engine="ray"` the same per-batch grading runs on Ray workers
    (CONTRACT §7); the outputs are the local engine's, byte for byte. `write_outputs` does the
    same but writes each batch as it comes, so memory stays flat however large the input.

    Raises:
        InputError: no event file can be used at all.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    grading = _grading_pass(
        events,
        load_suites(suite_paths, suite_docs),
        options or GradeOptions(),
        engine,
        ray_address,
        _Resources(batch_events, threads, memory_limit, spill_dir),
        _chooser(run_filter),
    )
    merged = _Merged()
    summaries: dict[str, dict[str, Any]] = {}
    trials = [pl.DataFrame(schema=TRIAL_SCHEMA)]
    for batch in _outputs(grading, on_batch):
        merged.add(batch)
        summaries.update(batch.summaries)
        trials.append(batch.trials)
    runs, tasks, problem_frame = merged.finish(grading, regress_options or regress.RegressOptions())
    return GradeResult(
        summaries=summaries,
        runs=runs,
        tasks=tasks,
        trials=pl.concat(trials),
        problems=problem_frame,
        skipped=runs.filter(~pl.col("graded"))["run_id"].to_list(),
    )


@dataclass
class RunReport:
    """What `write_outputs` wrote: the runs and problems tables and where the files went."""

    runs: pl.DataFrame
    problems: pl.DataFrame
    written: dict[str, Path]
    carried_runs: int = 0  # an incremental run's runs kept from the previous outputs
    full_regrade: bool = True  # False when an incremental run graded only new or changed runs
    stale_lock: str | None = None  # the holder of a lock left by a dead run, taken over
    regrade_reason: str | None = None  # why an incremental run graded everything (content-free)

    @property
    def summary_count(self) -> int:
        return int(self.runs["graded"].sum())

    @property
    def exit_code(self) -> int:
        """0 when every run was graded and every file read; 3 when something was skipped."""
        lost = self.problems.filter(pl.col("severity") == "error").height
        return EXIT_SKIPPED if lost else EXIT_OK


def _write_error(out_dir: Path, exc: OSError) -> OutputError:
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return write_failed(f"{out_dir}{where}", exc, "the previous outputs are unchanged")


def _inside(path: str | Path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root)


def _without_outputs(events: Sequence[str | Path], out: Path) -> list[str]:
    """The event paths, less the files inside the output directory `out` when a directory or
    glob given reaches into it (E-74): `run`'s own tables are not events, and reading them
    would make every later run report them as unusable files."""
    root = out.resolve()
    paths: list[str] = []
    for raw in map(str, events):
        path = Path(raw)
        if path.is_file() or (path.is_dir() and not root.is_relative_to(path.resolve())):
            paths.append(raw)
            continue
        found = inputs.expand_paths([raw])
        kept = [name for name in found if not _inside(name, root)]
        paths += [raw] if len(kept) == len(found) else kept
    if events and not paths:
        raise InputError(
            f"every event file given is inside --out {out}, where evalbatch writes its own "
            "outputs: give the events' directory or another --out"
        )
    return paths


def _nothing_to_grade(out: Path, run_filter: inputs.RunFilter | None, grading: _Pass) -> InputError:
    """E-70: a run that selected no eval run never replaces the outputs, nor exits 0."""
    filtered = " matches the run filters" if run_filter is not None and not run_filter.empty else ""
    unreadable = len(grading.file_problems)
    left_out = f" ({unreadable} event file(s) left out as unusable)" if unreadable else ""
    return InputError(
        f"nothing to grade: no eval run (no eval.started) in the events{filtered}{left_out}; "
        f"nothing written to {out} (--allow-empty writes empty outputs)"
    )


def write_outputs(
    events: Sequence[str | Path],
    out_dir: str | Path,
    suite_paths: Sequence[str | Path] = (),
    *,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
    threads: int | None = None,
    regress_options: regress.RegressOptions | None = None,
    batch_events: int = DEFAULT_BATCH_EVENTS,
    memory_limit: str | None = None,
    spill_dir: str | None = None,
    on_batch: Callable[[Progress], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    incremental_run: bool = False,
    run_filter: inputs.RunFilter | None = None,
    allow_empty: bool = False,
) -> RunReport:
    """Grade like `grade_paths` and write the outputs (§4) into `out_dir`, batch by batch.

    Summaries and trial rows go to disk as each batch is graded; only the small per-run and
    per-task tables stay in memory. The files are identical to `outputs.write(grade_paths(...))`
    and appear only when complete. One run writes to a directory at a time (a lock in it, E-49).
    With `incremental_run`, only runs that are new or changed since the last incremental run
    into `out_dir` are graded and the others' rows are carried over (E-50), once every previous
    file is checked against the manifest (E-71); the files are still identical to a full
    regrade's. Files inside `out_dir` are never read as events (E-74).

    Raises:
        InputError: no eval run was selected (E-70; unless `allow_empty`), or no event file.
        OutputLocked: another live run is writing to `out_dir`.
        OutputError: the outputs could not be written (a full disk at any point, E-72); the
            previous ones are left as they were, and nothing is left behind.
    """
    from evalbatch import outputs
    from evalbatch.lock import OutputLock

    out = Path(out_dir)
    options = options or GradeOptions()
    events = _without_outputs(events, out)
    with OutputLock(out) as lock:
        outputs.clear_stale_work(out)
        choices = load_suites(suite_paths, suite_docs)
        selection: incremental.Selection | None = None
        regrade_reason: str | None = None

        def choose_runs(con: Any, sources: inputs.Sources) -> frozenset[str] | None:
            nonlocal selection, regrade_reason
            try:
                prints = incremental.event_fingerprints(con, sources)
            except inputs.NOT_THE_DATA:
                raise
            except duckdb.Error:
                # a file the fingerprint cannot read: grade everything, as a full run
                regrade_reason = "an event file cannot be read whole to fingerprint its runs"
                return None
            selection = incremental.select(out, options, prints, choices)
            regrade_reason = selection.reason
            return selection.dirty

        grading = _grading_pass(
            events,
            choices,
            options,
            engine,
            ray_address,
            _Resources(batch_events, threads, memory_limit, spill_dir),
            _chooser(run_filter, choose_runs if incremental_run else None),
        )
        carried = selection.carried if selection is not None else None
        carried_lines = iter(carried.summary_lines()) if carried is not None else iter(())
        next_line = next(carried_lines, None)
        merged = _Merged()
        try:
            writer = outputs.OutputWriter(out)
        except OSError as exc:
            raise _write_error(out, exc) from exc
        try:
            for batch in _outputs(grading, on_batch):
                merged.add(batch)
                trials = batch.trials
                lines: list[tuple[str, str]] = []
                if carried is not None:
                    low, high = batch.run_range
                    while next_line is not None and (high is None or next_line[0] < high):
                        lines.append(next_line)
                        next_line = next(carried_lines, None)
                    trials = pl.concat([trials, carried.trials(low, high).cast(TRIAL_SCHEMA)])
                    trials = trials.sort("run_id", "sequence")
                writer.add(batch.summaries, trials, pending=set(batch.baselines), carried=lines)
            runs, tasks, problem_frame = merged.finish(
                grading, regress_options or regress.RegressOptions(), carried
            )
            if runs.height == 0 and not allow_empty:
                raise _nothing_to_grade(out, run_filter, grading)
            manifest = None
            if incremental_run and selection is not None:
                manifest = _manifest(selection, merged, runs, choices, options)
            written = writer.finish(merged.pending, runs, tasks, problem_frame, manifest)
        except OSError as exc:
            writer.abort()
            raise _write_error(out, exc) from exc
        except BaseException:
            writer.abort()
            raise
    return RunReport(
        runs=runs,
        problems=problem_frame,
        written=written,
        carried_runs=len(carried.runs) if carried is not None else 0,
        full_regrade=carried is None,
        stale_lock=lock.stale.describe() if lock.stale is not None else None,
        regrade_reason=regrade_reason if carried is None else None,
    )


def _manifest(
    selection: incremental.Selection,
    merged: _Merged,
    runs: pl.DataFrame,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> incremental.Manifest:
    """The manifest of what is being written: carried runs keep their entries, graded runs get
    new ones from what grading saw (the writer adds each file's record once it is complete)."""
    keys = {
        run_id: (suite_id, version)
        for run_id, suite_id, version in runs.select("run_id", "suite_id", "suite_version")
        .filter(pl.col("suite_id").is_not_null() & pl.col("suite_version").is_not_null())
        .iter_rows()
    }
    previous = selection.previous.runs if selection.previous is not None else {}
    entries: dict[str, incremental.RunEntry] = {}
    for run_id, fingerprint in selection.fingerprints.items():
        if selection.dirty is not None and run_id not in selection.dirty:
            entries[run_id] = previous[run_id]
            continue
        key = keys.get(run_id)
        entries[run_id] = incremental.RunEntry(
            events=fingerprint,
            suite_key=key,
            suite=incremental.suite_digest(choices.get(key)) if key is not None else None,
            baseline=merged.declared_baselines.get(run_id),
        )
    return incremental.Manifest(incremental.settings(options), entries)


RUN_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "suite_id": pl.String,
        "suite_version": pl.String,
        "graded": pl.Boolean,
        "has_suite": pl.Boolean,
        "aggregate_score": pl.Float64,
        "passed": pl.Boolean,
        "task_count": pl.Int64,
        "passed_count": pl.Int64,
        "total_cost_usd": pl.Float64,
        "evaluated_model_class": pl.String,
        "k": pl.Int64,
        "pass_at_k": pl.Float64,
        "pass_hat_k": pl.Float64,
        "score_stderr": pl.Float64,
        "evalbatch_version": pl.String,
        "suite_sha256": pl.String,
        "default_pass_score": pl.Float64,
        "on_miss_default": pl.String,
        "events_fingerprint": pl.String,
    }
)
TASK_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "suite_id": pl.String,
        "suite_version": pl.String,
        "task_pos": pl.Int64,
        "task_id": pl.String,
        "score": pl.Float64,
        "gating_score": pl.Float64,
        "passed": pl.Boolean,
        "n": pl.Int64,
        "observed_trials": pl.Int64,
        "passed_count": pl.Int64,
        "pass_at_k": pl.Float64,
        "pass_hat_k": pl.Float64,
        "pass_at_k_by_k": pl.String,
        "pass_hat_k_by_k": pl.String,
        "cost_usd": pl.Float64,
        "latency_ms": pl.Int64,
        "trajectory_matched": pl.Boolean,
        "fixture_miss_count": pl.Int64,
    }
)


def _run_row(run_id: str, summary: dict[str, Any], plan: RunPlan) -> dict[str, Any]:
    stats = summary.get("trialStats", {})
    return {
        "run_id": run_id,
        "suite_id": summary["suiteId"],
        "suite_version": summary["suiteVersion"],
        "graded": True,
        "has_suite": plan.doc is not None,
        "aggregate_score": summary["aggregateScore"],
        "passed": summary["passed"],
        "task_count": summary["taskCount"],
        "passed_count": summary["passedCount"],
        "total_cost_usd": summary.get("totalCostUsd"),
        "evaluated_model_class": summary.get("evaluatedModelClass"),
        "k": stats.get("k"),
        "pass_at_k": stats.get("passAtK"),
        "pass_hat_k": stats.get("passHatK"),
        "score_stderr": stats.get("scoreStderr"),
    }


TRIAL_SCHEMA = pl.Schema(
    {
        "run_id": pl.String,
        "task_id": pl.String,
        "trial_index": pl.Int64,
        "sequence": pl.Int64,
        "counted": pl.Boolean,
        "left_out": pl.String,
        "kind": pl.String,
        "score": pl.Float64,
        "gating_score": pl.Float64,
        "passed": pl.Boolean,
        "trajectory_matched": pl.Boolean,
        "trajectory_reason": pl.String,
        "observed_count": pl.Int64,
        "matched_count": pl.Int64,
        "forbidden_count": pl.Int64,
        "fixture_misses": pl.Int64,
        "failed_closed": pl.Boolean,
        "has_bracket": pl.Boolean,
        "bracket_closed": pl.Boolean,
        "latency_ms": pl.Float64,
        "tool_call_count": pl.Int64,
        "model_call_count": pl.Int64,
        "input_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "usage_cost_usd": pl.Float64,
    }
)


def _trial_table(trials: pl.DataFrame) -> pl.DataFrame:
    """One row per eval.scored of a graded run: where it sits, whether it counted, how it graded."""
    return (
        trials.select(
            "run_id",
            "task_id",
            "trial_index",
            pl.col("scored_seq").alias("sequence"),
            "counted",
            "left_out",
            "kind",
            "score",
            "gating_score",
            "passed",
            pl.when(pl.col("has_trajectory")).then(pl.col("matched")).alias("trajectory_matched"),
            "trajectory_reason",
            "observed_count",
            "matched_count",
            "forbidden_count",
            pl.col("misses").alias("fixture_misses"),
            "failed_closed",
            "has_bracket",
            "bracket_closed",
            "latency_ms",
            "tool_call_count",
            "model_call_count",
            "input_tokens",
            "output_tokens",
            pl.col("usage_cost_usd").cast(pl.Float64),
        )
        .cast(TRIAL_SCHEMA)
        .sort("run_id", "sequence")
    )


def grade_events(
    events: Iterable[Mapping[str, Any]],
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
) -> GradeResult:
    """Grade events held in memory (dicts with runId, sequence, type, payload, timestamp).

    A convenience for notebooks and tests: the events go through the same Parquet path as files.
    """
    rows = list(events)
    table = pa.table(
        {
            "runId": pa.array([r.get("runId") for r in rows], pa.string()),
            "sequence": pa.array([r.get("sequence") for r in rows], pa.int64()),
            "type": pa.array([r.get("type") for r in rows], pa.string()),
            "payload": pa.array([r.get("payload") for r in rows], pa.string()),
            "timestamp": pa.array([r.get("timestamp") for r in rows], pa.string()),
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.parquet"
        pq.write_table(table, path)
        return grade_paths([path], suite_docs=suite_docs, options=options)


@dataclass
class RegressionReport:
    """`regress` results: one comparison per suite on both sides, and what could not be paired."""

    comparisons: list[regress.Comparison]
    unpaired: list[tuple[str, str]]  # suites found on one side only: (side, suiteId)

    @property
    def exit_code(self) -> int:
        """2 when some suite compared nothing (a run of its pair not graded, other suite
        versions, no task in common: its input is unusable, §5), else 1 when some suite
        regressed, else 0 (`fail_on` widens this in the CLI)."""
        if any(c.nothing_compared for c in self.comparisons):
            return EXIT_UNUSABLE
        return EXIT_FAILED if any(c.verdict == "regressed" for c in self.comparisons) else EXIT_OK

    @property
    def shown_safe(self) -> bool:
        """Every suite on either side was compared and none is inconclusive: what
        `--fail-on inconclusive` asks for (E-66: a suite on one side only is not shown safe)."""
        return not self.unpaired and all(c.verdict != "inconclusive" for c in self.comparisons)

    def report(self) -> dict[str, object]:
        """The `--json` document (E-68): the comparisons, then the suites not compared."""
        return {
            "comparisons": [c.report() for c in self.comparisons],
            "notCompared": [{"side": side, "suiteId": suite} for side, suite in self.unpaired],
        }


SIDE_NAMES = {"base": "baseline", "cand": "candidate"}


def _describe_side(name: str, label: str) -> str:
    """`the baseline side (PATH)`, for messages."""
    return f"the {SIDE_NAMES[name]} side ({printable(label)})"


@dataclass
class _Side:
    """One side of a comparison: its task rows (a run not graded has one row with null scores),
    how each run was graded, and why runs were not graded."""

    name: str  # "base" or "cand", as in --base-run / --cand-run
    label: str  # the path as given, for messages
    tasks: pl.DataFrame
    gradings: dict[str, regress.Grading]
    not_graded: dict[str, str]

    def runs_of(self, suite_id: str) -> list[str]:
        return self.tasks.filter(pl.col("suite_id") == suite_id)["run_id"].unique().sort().to_list()

    @property
    def suites(self) -> set[str]:
        return set(self.tasks["suite_id"].drop_nulls().to_list())

    def describe(self) -> str:
        return _describe_side(self.name, self.label)


def _is_task_table(path: str | Path) -> bool:
    """A Parquet file `evalbatch run` wrote as tasks.parquet, or one shaped like it (a task_id
    column and no event `type`): it is validated as a tasks table, never graded as events."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return False  # not readable as Parquet here: grading reports it as a bad file
    marked = (schema.metadata or {}).get(b"evalbatch.table") == b"tasks"
    return marked or ("task_id" in schema.names and "type" not in schema.names)


def _filter_tasks(
    tasks: pl.DataFrame, run_filter: inputs.RunFilter | None, label: str
) -> pl.DataFrame:
    """A tasks table narrowed by run-id globs and suites.

    Raises:
        InputError: `--since`/`--until` given: a tasks table holds no eval.started time, so it
            cannot be bounded by one (refused rather than ignored, E-67).
    """
    if run_filter is None or run_filter.empty:
        return tasks
    if run_filter.since is not None or run_filter.until is not None:
        raise InputError(
            f"--since/--until cannot filter {printable(label)}: a tasks table holds no "
            "eval.started time; use --run-id or --suite, or give the event logs"
        )
    keep = pl.lit(True)
    if run_filter.run_ids:
        runs = tasks["run_id"].unique().to_list()
        chosen = [r for r in runs if any(fnmatch.fnmatchcase(r, g) for g in run_filter.run_ids)]
        keep &= pl.col("run_id").is_in(chosen)
    if run_filter.suites:
        keep &= pl.col("suite_id").is_in(list(run_filter.suites))
    return tasks.filter(keep)


def _runs_beside(path: Path) -> tuple[pl.DataFrame | None, str]:
    """The runs.parquet `evalbatch run` wrote beside a tasks.parquet, or why there is none
    usable: without it a run's grading is unknown (E-67)."""
    runs_path = path.with_name("runs.parquet")
    if not runs_path.is_file():
        return None, "no runs.parquet beside the tasks table"
    try:
        runs = pl.read_parquet(runs_path)
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException):
        return None, "the runs.parquet beside the tasks table cannot be read"
    if any(runs.schema.get(name) != RUN_SCHEMA[name] for name in _PROVENANCE_COLUMNS):
        return None, "the runs.parquet beside the tasks table records no grading"
    return runs, ""


#: the runs.parquet columns a tasks table's grading is read from (E-67), typed as RUN_SCHEMA
_PROVENANCE_COLUMNS = (
    "run_id",
    "suite_id",
    "suite_version",
    "graded",
    "has_suite",
    "suite_sha256",
    "default_pass_score",
    "on_miss_default",
)


def _task_table_side(name: str, path: Path, run_filter: inputs.RunFilter | None) -> _Side:
    """A `tasks.parquet` side, validated before use (issue 14, E-67).

    Raises:
        InputError: the file cannot be read, or it is not a usable tasks table (one line per
            fault), or a filter it cannot apply was given.
    """
    try:
        tasks = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:
        raise InputError(
            f"{printable(path)}: not a readable tasks table ({type(exc).__name__})"
        ) from None
    faults = regress.task_table_faults(tasks)
    if faults:
        listed = "".join(f"\n  {printable(path)}: {fault}" for fault in faults)
        raise InputError(f"{printable(path)} is not a usable tasks table:{listed}")
    tasks = _filter_tasks(tasks, run_filter, str(path))
    runs, why_unknown = _runs_beside(path)
    gradings: dict[str, regress.Grading] = {}
    not_graded: dict[str, str] = {}
    if runs is not None:
        tasks, gradings, skipped = _with_runs(tasks, _filter_tasks(runs, run_filter, str(path)))
        not_graded = dict.fromkeys(skipped, "see problems.parquet")
    unknown = regress.Grading(unknown_because=why_unknown or "no row in the runs.parquet beside it")
    for run in tasks["run_id"].unique().to_list():
        gradings.setdefault(run, unknown)
    return _Side(name, str(path), tasks, gradings, not_graded)


def _side(
    name: str,
    paths: Sequence[str | Path],
    suite_paths: Sequence[str | Path],
    options: GradeOptions | None,
    run_filter: inputs.RunFilter | None = None,
) -> _Side:
    """One side of a comparison: a `tasks.parquet` written by `evalbatch run`, or event logs
    graded here (§5), whose grading is then known from the grading itself."""
    label = ", ".join(str(p) for p in paths)
    one_parquet = len(paths) == 1 and str(paths[0]).endswith(".parquet")
    if one_parquet and Path(paths[0]).is_file() and _is_task_table(paths[0]):
        return _task_table_side(name, Path(paths[0]), run_filter)
    result = grade_paths(paths, suite_paths, options=options, run_filter=run_filter)
    errors = result.problems.filter(pl.col("severity") == "error")
    unread = errors.filter(pl.col("run_id").is_null())
    if unread.height:
        # a file that could not be read may hold this side's run of any suite: comparing the
        # rest would let a lost run pass as "one side only" (issue 14)
        listed = "".join(f"\n  {printable(message)}" for message in unread["message"])
        raise InputError(
            f"{_describe_side(name, label)}: {unread.height} event "
            f"file problem(s); nothing was compared:{listed}"
        )
    tasks, gradings, skipped = _with_runs(result.tasks, result.runs)
    not_graded = {
        run: "; ".join(errors.filter(pl.col("run_id") == run)["code"].unique().sort().to_list())
        for run in skipped
    }
    return _Side(name, label, tasks, gradings, not_graded)


def _with_runs(
    tasks: pl.DataFrame, runs: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, regress.Grading], list[str]]:
    """A side's task rows plus one row with null scores per run that was not graded (it has no
    task rows, yet its suite must pair), each run's grading from its runs-table row, and the
    runs not graded."""
    skipped = runs.filter(~pl.col("graded").fill_null(False)).select(
        "run_id", "suite_id", "suite_version"
    )
    if skipped.height:
        tasks = pl.concat([tasks, skipped], how="diagonal_relaxed")
    gradings = {row["run_id"]: regress.Grading.of_run(row) for row in runs.to_dicts()}
    return tasks, gradings, skipped["run_id"].to_list()


def _one_run(side: _Side, suite_id: str, chosen: str | None) -> str:
    runs = side.runs_of(suite_id)
    if chosen is not None and chosen in runs:
        return chosen
    if len(runs) > 1:
        listed = ", ".join(printable(r) for r in runs)
        raise InputError(
            f"{side.describe()} holds {len(runs)} runs of suite {printable(suite_id)} "
            f"({listed}); choose one with --{side.name}-run"
        )
    return runs[0]


def _check_named_run(side: _Side, chosen: str | None) -> None:
    """A run named with --base-run/--cand-run must be on its side (a usage error otherwise)."""
    held = sorted(side.tasks["run_id"].unique().to_list())
    if chosen is None or chosen in held:
        return
    listed = ", ".join(printable(r) for r in held[:10]) + (", ..." if len(held) > 10 else "")
    raise InputError(
        f"--{side.name}-run {printable(chosen)}: no such run on {side.describe()} "
        f"(it holds {len(held)}: {listed})"
    )


def _nothing_compared(base: _Side, cand: _Side, run_filter: inputs.RunFilter | None) -> str:
    """Why no suite could be compared (E-65: that is exit 2, never a pass)."""
    matching = " matching the run filters" if run_filter is not None else ""
    for side in (base, cand):
        if side.tasks.height == 0:
            return f"{side.describe()} holds no eval run{matching}; nothing was compared"

    def listed(side: _Side) -> str:
        return ", ".join(printable(s) for s in sorted(side.suites))

    return (
        f"no suite is present on both sides (baseline: {listed(base)}; candidate: "
        f"{listed(cand)}); nothing was compared"
    )


def _mixed(suite_id: str, pairs: Sequence[tuple[_Side, str]]) -> str | None:
    """How the two runs of a suite were graded, when not alike (D-4, issue 14)."""
    (base, base_id), (cand, cand_id) = pairs
    base_grading, cand_grading = base.gradings[base_id], cand.gradings[cand_id]
    if base_grading.alike(cand_grading):
        return None
    return (
        f"suite {printable(suite_id)}: baseline {printable(base_id)} "
        f"{base_grading.describe()}; candidate {printable(cand_id)} {cand_grading.describe()}"
    )


def regress_paths(
    base: Sequence[str | Path],
    cand: Sequence[str | Path],
    suite_paths: Sequence[str | Path] = (),
    *,
    options: regress.RegressOptions | None = None,
    grade_options: GradeOptions | None = None,
    base_run: str | None = None,
    cand_run: str | None = None,
    run_filter: inputs.RunFilter | None = None,
    allow_mixed: bool = False,
) -> RegressionReport:
    """Pair the runs of each suite found on both sides and give a verdict per suite (§5).

    Fails closed (issue 14, E-65..E-67): nothing compared, a named run that is not on its side
    or was not compared, and (unless `allow_mixed`) runs graded differently are errors.

    Raises:
        InputError: a side holds several runs of one suite and none was chosen; a side holds no
            eval run; no suite is on both sides; `base_run`/`cand_run` names no run of its side,
            or one that was not compared; a suite named by the filter was not compared; two
            paired runs were graded differently; a tasks table is not usable.
    """
    options = options or regress.RegressOptions()
    base_side = _side("base", base, suite_paths, grade_options, run_filter)
    cand_side = _side("cand", cand, suite_paths, grade_options, run_filter)
    _check_named_run(base_side, base_run)
    _check_named_run(cand_side, cand_run)
    common = sorted(base_side.suites & cand_side.suites)
    if not common:
        raise InputError(_nothing_compared(base_side, cand_side, run_filter))
    chosen = {
        suite_id: (
            (base_side, _one_run(base_side, suite_id, base_run)),
            (cand_side, _one_run(cand_side, suite_id, cand_run)),
        )
        for suite_id in common
    }
    _check_all_compared(base_side, cand_side, chosen, base_run, cand_run, run_filter)
    mixed = [m for suite_id in common if (m := _mixed(suite_id, chosen[suite_id]))]
    if mixed and not allow_mixed:
        listed = "".join(f"\n  {line}" for line in mixed)
        raise InputError(
            "the sides were graded differently, so their scores are not comparable (compare "
            f"them anyway with --allow-mixed):{listed}"
        )
    comparisons = [_compare_suite(suite_id, chosen[suite_id], options) for suite_id in common]
    unpaired = [("base", s) for s in sorted(base_side.suites - cand_side.suites)] + [
        ("cand", s) for s in sorted(cand_side.suites - base_side.suites)
    ]
    return RegressionReport(comparisons=comparisons, unpaired=unpaired)


def _check_all_compared(
    base: _Side,
    cand: _Side,
    chosen: Mapping[str, Sequence[tuple[_Side, str]]],
    base_run: str | None,
    cand_run: str | None,
    run_filter: inputs.RunFilter | None,
) -> None:
    """What the user named must have been compared: a run chosen with --base-run/--cand-run and
    a suite chosen with --suite (E-65/E-66: naming it makes it required)."""
    compared_runs = {run for pairs in chosen.values() for _, run in pairs}
    for side, named in ((base, base_run), (cand, cand_run)):
        if named is not None and named not in compared_runs:
            suite = side.tasks.filter(pl.col("run_id") == named)["suite_id"].first()
            other = cand if side is base else base
            raise InputError(
                f"--{side.name}-run {printable(named)} (suite {printable(suite)}) was not "
                f"compared: {other.describe()} holds no run of that suite"
            )
    for suite_id in run_filter.suites if run_filter is not None else ():
        if suite_id not in chosen:
            missing = [s.describe() for s in (base, cand) if suite_id not in s.suites]
            raise InputError(
                f"--suite {printable(suite_id)} was not compared: no run of it on "
                f"{' nor on '.join(missing)}"
            )


def _compare_suite(
    suite_id: str, pairs: Sequence[tuple[_Side, str]], options: regress.RegressOptions
) -> regress.Comparison:
    """One suite's verdict, with each side's run, grading and mean scores beside it."""
    (base, base_id), (cand, cand_id) = pairs
    base_rows = base.tasks.filter(pl.col("run_id") == base_id)
    cand_rows = cand.tasks.filter(pl.col("run_id") == cand_id)
    if base_id in base.not_graded or cand_id in cand.not_graded:
        why = base.not_graded.get(base_id) or cand.not_graded.get(cand_id)
        comparison = regress.Comparison(
            suite_id=suite_id,
            suite_version=str(cand_rows["suite_version"][0]),
            baseline_run_id=base_id,
            candidate_run_id=cand_id,
            paired_task_count=0,
            score_delta=0.0,
            verdict="inconclusive",
            method=options.method,
            alpha=options.alpha,
            reason=f"a run was not graded ({why})",
            nothing_compared=True,
        )
    else:
        comparison = regress.compare(
            base_rows, cand_rows, options, suite_id=suite_id, base_run=base_id, cand_run=cand_id
        )
    comparison.baseline = regress.SideSummary.of(base_rows, base_id, base.gradings[base_id])
    comparison.candidate = regress.SideSummary.of(cand_rows, cand_id, cand.gradings[cand_id])
    return comparison
