"""The library surface the CLI and notebooks share: grade event logs, write the outputs.

Flow: event files -> SQL stage (`extract`) -> trial grading (`grade`) -> task and suite
reductions (`summarize`) -> EvalSummary rows and tables (`outputs`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch import extract, inputs, problems, reduce, regress, suites
from evalbatch.errors import InputError
from evalbatch.grade import grade_trials
from evalbatch.options import GradeOptions
from evalbatch.spec import SuiteTables, suite_key
from evalbatch.summarize import RunPlan, build_outcomes

ProblemRow = tuple[str | None, int | None, str, str]  # (run_id, sequence, code, detail)

PROBLEM_SCHEMA = {
    "run_id": pl.String,
    "sequence": pl.Int64,
    "code": pl.String,
    "severity": pl.String,
    "message": pl.String,
}

#: events per batch of whole runs: below this everything is graded in one pass
DEFAULT_BATCH_EVENTS = 2_000_000

#: exit codes of `evalbatch run` (CONTRACT §6 and the issue): all graded, unusable input, skips
EXIT_OK, EXIT_UNUSABLE, EXIT_SKIPPED = 0, 2, 3


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
    frame = pl.DataFrame(records, schema=PROBLEM_SCHEMA)
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
                path=f"<suite {number}>", doc=dict(doc), faults=tuple(suites.validate_suite(doc))
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
    rules: list[tuple[pl.Expr, str | pl.Expr, str, str]] = [
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
    rows_without_run: int = 0
    file_problems: list[inputs.FileProblem] = field(default_factory=list)


def grade_shard(
    con: Any,
    sources: inputs.Sources,
    shard: tuple[int, int],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> _Batch:
    """Extract and grade the runs of one shard `(index, count)`: the unit every engine runs."""
    ext = extract.extract(con, sources, shard)
    part = _grade_batch(ext, choices, options)
    part.rows_without_run = ext.rows_without_run
    part.file_problems = list(sources.problems)
    return part


def grade_shards_locally(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    batch_events: int = DEFAULT_BATCH_EVENTS,
    threads: int | None = None,
    memory_limit: str | None = None,
    spill_dir: str | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> list[_Batch]:
    """The local engine: shards one after another on one DuckDB connection."""
    con = extract.connect(threads, memory_limit, spill_dir)
    parts: list[_Batch] = []
    try:
        sources = inputs.scan(con, paths)
        shards = inputs.batch_count(sources, batch_events)
        for index in range(shards):
            part = grade_shard(con, sources, (index, shards), choices, options)
            parts.append(part)
            if on_batch is not None:
                on_batch(index + 1, shards)
    finally:
        con.close()
    # a damaged file found in a later shard was read in none: report it once, everywhere
    for part in parts:
        part.file_problems = list(sources.problems)
    return parts


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
    on_batch: Callable[[int, int], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
) -> GradeResult:
    """Grade every eval run in the event files at `events` (files, directories, globs).

    Runs are graded in batches of whole runs of about `batch_events` events each, so memory stays
    bounded as logs grow; `memory_limit` and `spill_dir` bound DuckDB within a batch.
    `on_batch(done, total)` is called after each batch (a progress display). With
    `engine="ray"` the same per-shard grading runs on Ray workers (CONTRACT §7); the outputs are
    the local engine's, byte for byte.

    Raises:
        InputError: no event file can be used at all.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    options = options or GradeOptions()
    regress_options = regress_options or regress.RegressOptions()
    choices = load_suites(suite_paths, suite_docs)
    paths = [str(p) for p in events]
    if engine == "ray":
        from evalbatch import ray_engine  # optional: needs the `ray` extra

        parts = ray_engine.grade_shards(paths, choices, options, address=ray_address)
    else:
        parts = grade_shards_locally(
            paths, choices, options, batch_events, threads, memory_limit, spill_dir, on_batch
        )
    file_problems = {(p.path, p.code): p for part in parts for p in part.file_problems}
    problem_rows: list[ProblemRow] = [
        (None, None, p.code, p.message) for _, p in sorted(file_problems.items())
    ]
    rows_without_run = sum(part.rows_without_run for part in parts)
    if rows_without_run:
        problem_rows.append((None, None, "row-invalid", f"{rows_without_run} row(s)"))
    eval_runs = pl.concat([part.eval_runs for part in parts])
    plans = {run: plan for part in parts for run, plan in part.plans.items()}
    outcomes = dict(sorted((run, o) for part in parts for run, o in part.outcomes.items()))
    fatal_runs = set().union(*(part.fatal_runs for part in parts))
    for part in parts:
        problem_rows += part.problem_rows

    baselines = {
        r["run_id"]: (r["baseline_run_id"], r["start_seq"])
        for r in eval_runs.iter_rows(named=True)
        if r["baseline_run_id"] is not None and r["run_id"] in outcomes
    }
    all_runs = set(eval_runs["run_id"].to_list())
    for run_id, (baseline, sequence) in sorted(baselines.items()):
        if baseline not in all_runs:
            continue  # §3.6: a block only when the baseline is in the input
        block, why = _regression_block(outcomes, run_id, baseline, regress_options)
        if block is None:
            problem_rows.append((run_id, sequence, "regression-unavailable", why))
            continue
        summary = outcomes[run_id].summary
        tasks = summary.pop("tasks")
        summary["regression"] = block
        summary["tasks"] = tasks

    summaries: dict[str, dict[str, Any]] = {}
    run_rows, task_rows = [], []
    for run_id, outcome in outcomes.items():
        faults = [f for f in suites.validate_summary(outcome.summary) if f.severity == "error"]
        if faults:
            detail = "; ".join(f"{f.path}: {f.message}" for f in faults[:3])
            problem_rows.append((run_id, None, "summary-invalid", detail))
            fatal_runs.add(run_id)
            continue
        summaries[run_id] = outcome.summary
        task_rows += outcome.task_rows
        run_rows.append(_run_row(run_id, outcome.summary, plans[run_id]))
    for run_id in sorted(fatal_runs):
        run = eval_runs.filter(pl.col("run_id") == run_id).row(0, named=True)
        run_rows.append(
            {
                "run_id": run_id,
                "suite_id": run["suite_id"],
                "suite_version": run["suite_version"],
                "graded": False,
            }
        )
    return GradeResult(
        summaries=summaries,
        runs=pl.DataFrame(run_rows, schema=RUN_SCHEMA).sort("run_id"),
        tasks=pl.DataFrame(task_rows, schema=TASK_SCHEMA).sort("run_id", "task_pos"),
        trials=_trial_table(pl.concat([part.trials for part in parts], how="diagonal_relaxed")),
        problems=_problem_frame(problem_rows),
        skipped=sorted(fatal_runs),
    )


def _regression_block(
    outcomes: dict[str, Any], run_id: str, baseline: str, options: regress.RegressOptions
) -> tuple[dict[str, Any] | None, str]:
    """The candidate's `regression` block against a baseline graded in the same pass (§5)."""
    if baseline not in outcomes:
        return None, f"baseline {baseline} was not graded"
    base, cand = outcomes[baseline], outcomes[run_id]
    if base.summary["suiteId"] != cand.summary["suiteId"]:
        return None, f"baseline {baseline} is a run of another suite"
    comparison = regress.compare(
        pl.DataFrame(base.task_rows, schema=TASK_SCHEMA),
        pl.DataFrame(cand.task_rows, schema=TASK_SCHEMA),
        options,
        suite_id=cand.summary["suiteId"],
        base_run=baseline,
        cand_run=run_id,
    )
    if comparison.reason is not None:
        return None, comparison.reason
    return comparison.block(), ""


RUN_SCHEMA = {
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
}
TASK_SCHEMA = {
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
    "cost_usd": pl.Float64,
    "latency_ms": pl.Int64,
    "trajectory_matched": pl.Boolean,
    "fixture_miss_count": pl.Int64,
}


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


def _trial_table(trials: pl.DataFrame) -> pl.DataFrame:
    """One row per eval.scored of a graded run: where it sits, whether it counted, how it graded."""
    return trials.select(
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
    ).sort("run_id", "sequence")


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
    unpaired: list[str]  # suites found on one side only, as "side: suite@version (run)"

    @property
    def exit_code(self) -> int:
        """1 when some suite regressed, else 0 (`fail_on` widens this in the CLI)."""
        return 1 if any(c.verdict == "regressed" for c in self.comparisons) else 0


TASK_TABLE_COLUMNS = {"run_id", "suite_id", "suite_version", "task_id", "score", "gating_score"}


def _side(
    paths: Sequence[str | Path],
    suite_paths: Sequence[str | Path],
    options: GradeOptions | None,
) -> tuple[pl.DataFrame, dict[str, str]]:
    """One side of a comparison as task rows, plus runs that were not graded (run -> why).

    A side is a `tasks.parquet` written by `evalbatch run`, or event logs graded here (§5).
    """
    if len(paths) == 1 and str(paths[0]).endswith(".parquet") and Path(paths[0]).is_file():
        try:
            names = set(pq.read_schema(paths[0]).names)
        except (OSError, pa.ArrowException):
            names = set()  # not readable as Parquet here: grading reports it as a bad file
        if names >= TASK_TABLE_COLUMNS:
            return pl.read_parquet(paths[0]), {}
    result = grade_paths(paths, suite_paths, options=options)
    errors = result.problems.filter(pl.col("severity") == "error")
    not_graded = {
        run: "; ".join(errors.filter(pl.col("run_id") == run)["code"].unique().sort().to_list())
        for run in result.skipped
    }
    skipped = result.runs.filter(~pl.col("graded")).select("run_id", "suite_id", "suite_version")
    tasks = pl.concat([result.tasks, skipped], how="diagonal") if skipped.height else result.tasks
    return tasks, not_graded


def _one_run(tasks: pl.DataFrame, suite_id: str, chosen: str | None, side: str) -> str:
    runs = tasks.filter(pl.col("suite_id") == suite_id)["run_id"].unique().sort().to_list()
    if chosen is not None and chosen in runs:
        return chosen
    if len(runs) > 1:
        listed = ", ".join(runs)
        raise InputError(
            f"the {side} side holds {len(runs)} runs of suite {suite_id} ({listed}); "
            f"choose one with --{side}-run"
        )
    return runs[0]


def regress_paths(
    base: Sequence[str | Path],
    cand: Sequence[str | Path],
    suite_paths: Sequence[str | Path] = (),
    *,
    options: regress.RegressOptions | None = None,
    grade_options: GradeOptions | None = None,
    base_run: str | None = None,
    cand_run: str | None = None,
) -> RegressionReport:
    """Pair the runs of each suite found on both sides and give a verdict per suite (§5).

    Raises:
        InputError: a side holds several runs of one suite and none was chosen.
    """
    options = options or regress.RegressOptions()
    base_tasks, base_skipped = _side(base, suite_paths, grade_options)
    cand_tasks, cand_skipped = _side(cand, suite_paths, grade_options)
    base_suites = set(base_tasks["suite_id"].drop_nulls().to_list())
    cand_suites = set(cand_tasks["suite_id"].drop_nulls().to_list())
    comparisons: list[regress.Comparison] = []
    for suite_id in sorted(base_suites & cand_suites):
        base_id = _one_run(base_tasks, suite_id, base_run, "base")
        cand_id = _one_run(cand_tasks, suite_id, cand_run, "cand")
        base_rows = base_tasks.filter(pl.col("run_id") == base_id)
        cand_rows = cand_tasks.filter(pl.col("run_id") == cand_id)
        if base_id in base_skipped or cand_id in cand_skipped:
            why = base_skipped.get(base_id) or cand_skipped.get(cand_id)
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
            )
        else:
            comparison = regress.compare(
                base_rows, cand_rows, options, suite_id=suite_id, base_run=base_id, cand_run=cand_id
            )
        comparisons.append(comparison)
    unpaired = [f"base: {s}" for s in sorted(base_suites - cand_suites)] + [
        f"cand: {s}" for s in sorted(cand_suites - base_suites)
    ]
    return RegressionReport(comparisons=comparisons, unpaired=unpaired)
