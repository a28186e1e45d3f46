"""Grade event logs in memory: every batch merged into one `GradeResult`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl

from evalbatch.errors import (
    EXIT_OK,
    EXIT_SKIPPED,
)
from evalbatch.inputs import event_files, in_memory
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import SuiteChoice, load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.outputs.output_format import TRIAL_SCHEMA
from evalbatch.outputs.writer import OutputWriter, summary_line
from evalbatch.pipeline.local import ChooseRuns, Pass, Progress, chooser, grading_pass
from evalbatch.pipeline.merge import Merged, batch_outputs
from evalbatch.reduce import paired_verdict


@dataclass
class GradeResult:
    """Everything one grading pass produced."""

    summaries: dict[str, dict[str, Any]]
    runs: pl.DataFrame
    tasks: pl.DataFrame
    trials: pl.DataFrame
    problems: pl.DataFrame
    skipped: list[str] = field(default_factory=list)
    #: the counted trials' calls (`shard.counted_calls`), when the grading kept them (E-136)
    calls: pl.DataFrame | None = None

    @property
    def exit_code(self) -> int:
        """0 when every run was graded and every file read; 3 when something was skipped."""
        lost = self.problems.filter(pl.col("severity") == "error").height
        return EXIT_SKIPPED if lost else EXIT_OK


def grade_paths(
    events: Paths,
    suites: Paths = (),
    *,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    regress_options: paired_verdict.RegressOptions | None = None,
    on_batch: Callable[[Progress], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    run_filter: event_files.RunFilter | None = None,
) -> GradeResult:
    """Grade every eval run in the event files at `events` (files, directories, globs: one path or
    a list) against the suites at `suites` (files or directories: one path or a list), in memory.

    Runs are graded in batches of whole runs of about `resources.batch_events` events each; its
    memory limit and spill directory bound DuckDB within a batch. `on_batch(progress)` is called
    after each batch. With `engine="ray"` the same per-batch grading runs on Ray workers
    (CONTRACT §7); the outputs are the local engine's, byte for byte. `write_outputs` does the
    same but writes each batch as it comes, so memory stays flat however large the input.

    Raises:
        InputError: no event file can be used at all.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    return grade_loaded(
        as_paths(events),
        load_suites(as_paths(suites), suite_docs),
        options=options,
        resources=resources,
        regress_options=regress_options,
        on_batch=on_batch,
        engine=engine,
        ray_address=ray_address,
        run_filter=run_filter,
    )


def grade_loaded(
    events: Sequence[str],
    choices: dict[tuple[str, str], SuiteChoice],
    *,
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    regress_options: paired_verdict.RegressOptions | None = None,
    on_batch: Callable[[Progress], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    run_filter: event_files.RunFilter | None = None,
    keep_calls: bool = False,
    choose_runs: ChooseRuns | None = None,
) -> GradeResult:
    """`grade_paths` with the suites already loaded (`load_suites`): a caller grading several
    inputs against the same suites (`regress`'s two sides) reads and checks them once, may keep
    the counted trials' calls (`keep_calls`) and may narrow the runs the filter kept further
    (`choose_runs`: a side's named run, E-140)."""
    grading = grading_pass(
        list(events),
        choices,
        options or GradeOptions(),
        engine,
        ray_address,
        resources or Resources(),
        chooser(run_filter, choose_runs),
        keep_calls=keep_calls,
    )
    return collect(grading, regress_options or paired_verdict.RegressOptions(), on_batch)


def collect(
    grading: Pass,
    regress_options: paired_verdict.RegressOptions,
    on_batch: Callable[[Progress], None] | None = None,
) -> GradeResult:
    """Merge every batch of a grading pass into one result, in memory (the pass is closed)."""
    merged = Merged()
    summaries: dict[str, dict[str, Any]] = {}
    trials = [pl.DataFrame(schema=TRIAL_SCHEMA)]
    calls: list[pl.DataFrame] = []
    try:
        for batch in batch_outputs(grading, on_batch):
            merged.add(batch)
            summaries.update(
                (run_id, merged.pending.get(run_id) or json.loads(line)["summary"])
                for run_id, line in batch.summaries
            )
            trials.append(batch.trials)
            if batch.calls is not None:
                calls.append(batch.calls)
    finally:
        grading.close()
    runs, problem_frame = merged.finish(
        grading, regress_options
    )  # the pending summaries, shared with `summaries`, now hold their regression blocks
    return GradeResult(
        summaries=summaries,
        runs=runs,
        tasks=merged.task_table(),
        trials=pl.concat(trials),
        problems=problem_frame,
        skipped=runs.filter(~pl.col("graded"))["run_id"].to_list(),
        calls=pl.concat(calls) if calls else None,
    )


def grade_events(
    events: Iterable[Mapping[str, Any]],
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
) -> GradeResult:
    """Grade events held in memory (dicts with runId, sequence, type, payload, timestamp).

    A convenience for notebooks and tests: the events go through the same Parquet path as files.
    """
    with in_memory.events_file(events) as path:
        return grade_paths([path], suite_docs=suite_docs, options=options)


def summaries_jsonl(result: GradeResult) -> str:
    """One line per graded run, sorted by runId: {"runId": ..., "summary": ...}."""
    return "".join(summary_line(run_id, s) for run_id, s in sorted(result.summaries.items()))


def write_result(result: GradeResult, out_dir: str | Path) -> dict[str, Path]:
    """Write an in-memory result into `out_dir` (created if needed); returns what went where."""
    files = OutputWriter(out_dir)
    try:
        lines = [
            (run_id, summary_line(run_id, s)) for run_id, s in sorted(result.summaries.items())
        ]
        files.add(lines, result.trials, result.tasks)
        return files.finish({}, result.runs, result.problems)
    except BaseException:
        files.abort()
        raise
