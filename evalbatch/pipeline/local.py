"""The local engine: a grading pass over the event files in batches of whole runs, on one DuckDB
connection, the SQL stage of the next batch overlapping the grading of the current one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from evalbatch.errors import (
    InputError,
)
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files, suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.shard import Batch, extract_shard, grade_extracted
from evalbatch.problems import severity
from evalbatch.reduce.run_summaries import RunPlan


@dataclass(frozen=True)
class Progress:
    """How far a grading pass is, reported after each batch (a progress display)."""

    batches_done: int
    batches: int
    runs_done: int
    runs: int
    events_done: int


#: picks the runs a pass grades, given the scanned files (None: those `sources` already hold)
ChooseRuns = Callable[[Any, event_files.Sources], frozenset[str] | None]


def chooser(
    run_filter: event_files.RunFilter | None, then: ChooseRuns | None = None
) -> ChooseRuns | None:
    """The run filter first (it narrows the sources), then `then` among the runs it kept."""
    if run_filter is None or run_filter.empty:
        return then

    def choose(con: Any, sources: event_files.Sources) -> frozenset[str] | None:
        run_filter.apply(con, sources)
        return then(con, sources) if then is not None else None

    return choose


@dataclass
class Pass:
    """One grading pass: the files, how their runs are batched, and the batches as they come."""

    plan: event_files.BatchPlan
    file_problems: dict[tuple[str, str], event_files.FileProblem]
    parts: Iterator[Batch]

    def close(self) -> None:
        """Stop the pass where it is (its worker thread and connection end). Callers close it
        themselves, never leaving it to the garbage collector: that may run in the worker thread,
        which would then wait for its own extraction."""
        close = getattr(self.parts, "close", None)
        if close is not None:
            close()


#: the name of the thread that extracts the next batch
_WORKER = "evalbatch-extract"


def local_pass(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    resources: Resources,
    choose_runs: ChooseRuns | None = None,
) -> Pass:
    """The local engine: batches one after another on one DuckDB connection."""
    con = trial_tables.connect(resources)
    try:
        sources = event_files.scan(con, paths)
        if choose_runs is not None:
            picked = choose_runs(con, sources)
            if picked is not None:
                sources.only_runs = picked
        plan = event_files.plan_batches(con, sources, resources.batch_events)
    except BaseException:
        con.close()
        raise
    found: dict[tuple[str, str], event_files.FileProblem] = {}

    def parts() -> Iterator[Batch]:
        # DuckDB extracts the next batch on a worker thread (it releases the GIL) while this
        # thread grades the current one in Python and Polars: the two stages overlap.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_WORKER)
        ranges = iter(plan.ranges)
        pending = None
        try:
            first = next(ranges, None)  # a range is a tuple, never None
            if first is not None:
                pending = pool.submit(extract_shard, con, sources, first)
            while pending is not None:
                extracted = pending.result()
                following = next(ranges, None)
                pending = (
                    None
                    if following is None
                    else pool.submit(extract_shard, con, sources, following)
                )
                part = grade_extracted(extracted, choices, options)
                found.update({(p.path, p.code): p for p in part.file_problems})
                yield part
        finally:
            # closed from the worker itself (only the garbage collector could): waiting for its
            # own extraction would never end, so interrupt it and let it go
            on_worker = threading.current_thread().name.startswith(_WORKER)
            if pending is not None and not pending.cancel():
                con.interrupt()
                if not on_worker:
                    wait([pending])
            pool.shutdown(wait=not on_worker)
            if not on_worker:
                con.close()

    return Pass(plan, found, parts())


def stage_pass(
    con: Any,
    sources: event_files.Sources,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> Pass:
    """Every run in one batch, extracted on the caller's connection, which keeps the stage's
    tables afterwards: the tables a notebook queries are the ones its grades came from."""
    plan = event_files.plan_batches(con, sources, batches=1)
    found: dict[tuple[str, str], event_files.FileProblem] = {}

    def parts() -> Iterator[Batch]:
        if plan.ranges:
            part = grade_extracted(extract_shard(con, sources, None), choices, options)
            found.update({(p.path, p.code): p for p in part.file_problems})
            yield part

    return Pass(plan, found, parts())


def grading_pass(
    events: Sequence[str | Path],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    engine: str,
    ray_address: str | None,
    resources: Resources,
    choose_runs: ChooseRuns | None = None,
) -> Pass:
    """A grading pass on the chosen engine (the local one batches with `resources`)."""
    paths = [str(p) for p in events]
    if engine == "ray":
        if choose_runs is not None:
            raise InputError(
                "--incremental and the run filters need the local engine (leave out --engine ray)"
            )
        from evalbatch.pipeline import ray_engine  # optional: needs the `ray` extra

        plan, parts = ray_engine.grade_shards(paths, choices, options, address=ray_address)
        found = {(p.path, p.code): p for part in parts for p in part.file_problems}
        return Pass(plan, found, iter(parts))
    return local_pass(paths, choices, options, resources, choose_runs)


def grade_shards_locally(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    resources: Resources | None = None,
    run_filter: event_files.RunFilter | None = None,
) -> list[Batch]:
    """Every batch of the local engine, graded but not merged (for tools that need the per-run
    grading detail, such as `verify`)."""
    grading = local_pass(paths, choices, options, resources or Resources(), chooser(run_filter))
    try:
        parts = list(grading.parts)
    finally:
        grading.close()
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
    skipped_files: list[event_files.FileProblem]

    @classmethod
    def of(cls, parts: Sequence[Batch]) -> MergedBatches:
        """Merge the batches of `grade_shards_locally` (each holds whole runs)."""
        fatal: dict[str, list[str]] = {run: [] for part in parts for run in part.fatal_runs}
        errors = [
            (run_id, code)
            for part in parts
            for run_id, _, code, _ in part.problem_rows
            if run_id in fatal and severity(code) == "error"
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
