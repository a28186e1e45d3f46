"""A batch's rows written by the worker that graded it (E-154): the shard files a Ray worker
leaves in the output directory's private working directory, and what it hands the driver instead
of the rows themselves.

A worker lays its batch out as output rows (`batch_rows.batch_output`), writes the trials, the tasks
and the lines of summaries.jsonl of its runs into `<work>/shards/`, under names no reader looks
at, and returns a `BatchOutput` holding only what is small: the runs-table rows (one per run),
the problems, the baselines and the summaries of the runs that have one (their regression block
is added once every batch is in, §5). The driver copies each shard's files into the output files
in shard order (`OutputWriter.add_written`), a row group at a time, and removes them: its memory
holds one row group and the per-run rows, never a shard's trials.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evalbatch.outputs.output_format import TASK_SCHEMA, TRIAL_SCHEMA
from evalbatch.outputs.writer import WrittenShard, marked_lines, write_table
from evalbatch.pipeline.batch_rows import BatchOutput

#: the directory, inside the output writer's working directory, the workers write into
SHARDS_DIR = "shards"


def write_shard(directory: Path, number: int, batch: BatchOutput) -> BatchOutput:
    """Write `batch`'s trials, tasks and summary lines as shard `number` into `directory`, and
    return the batch without them (`written` names the files; `summaries` keeps the lines of the
    runs with a baseline, which the driver completes)."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"shard-{number:06d}"
    written = WrittenShard(
        trials=stem.with_suffix(".trials.parquet"),
        tasks=stem.with_suffix(".tasks.parquet"),
        summaries=stem.with_suffix(".summaries.jsonl"),
    )
    for path, frame, schema in (
        (written.trials, batch.trials, TRIAL_SCHEMA),
        (written.tasks, batch.tasks, TASK_SCHEMA),
    ):
        write_table(path, frame, schema=schema)
    with written.summaries.open("w", encoding="utf-8") as lines:
        for _, line in marked_lines(batch.summaries, set(batch.baselines)):
            lines.write(line)
    return BatchOutput(
        summaries=[(run_id, line) for run_id, line in batch.summaries if run_id in batch.baselines],
        runs=batch.runs,
        tasks=pl.DataFrame(schema=TASK_SCHEMA),
        trials=pl.DataFrame(schema=TRIAL_SCHEMA),
        problem_rows=batch.problem_rows,
        baselines=batch.baselines,
        eval_run_ids=batch.eval_run_ids,
        declared_baselines=batch.declared_baselines,
        run_range=batch.run_range,
        delegates=batch.delegates,
        written=written,
    )
