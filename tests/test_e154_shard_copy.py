"""E-154: the rows a worker wrote as shard files, copied by the driver (`OutputWriter.add_written`),
make the same output files, byte for byte, as the same rows handed to `OutputWriter.add`: the
copy streams a few thousand rows at a time, whatever the shards' sizes and however they fall
across the tables' fixed row groups.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evalbatch.outputs import writer
from evalbatch.outputs.output_format import TASK_SCHEMA, TRIAL_SCHEMA, table_file
from evalbatch.pipeline.batch_rows import BatchOutput
from evalbatch.pipeline.shard_files import write_shard


def _rows(schema: pl.Schema, count: int, first_run: int, per_run: int) -> pl.DataFrame:
    """`count` rows of `schema` in output order: runs of `per_run` rows each, numbered from
    `first_run`, every other column a value that varies by row (nulls among them)."""
    row = pl.int_range(0, count)
    columns = []
    for name, dtype in schema.items():
        if name == "run_id":
            value = pl.format("run-{}", (row // per_run + first_run).cast(pl.String).str.zfill(6))
        elif name in ("sequence", "task_pos"):
            value = row
        else:
            if dtype == pl.String:
                value = pl.format(f"{name}-{{}}", row % 7)
            elif dtype == pl.Boolean:
                value = row % 3 == 0
            elif dtype.is_float():
                value = row.cast(pl.Float64) / 1000
            elif isinstance(dtype, pl.List):
                value = pl.concat_list(row.cast(pl.Float64), row.cast(pl.Float64) / 7)
            else:
                value = row % 1000
            value = pl.when(row % 11 == 5).then(None).otherwise(value)
        columns.append(value.cast(dtype).alias(name))
    return pl.select(columns)


def _batches() -> list[tuple[pl.DataFrame, pl.DataFrame, list[tuple[str, str]]]]:
    """Three batches of whole runs, in run-id order: the middle one larger than a row group,
    the others smaller than a copy batch or straddling a row-group boundary."""
    batches = []
    first = 0
    for runs, per_run in ((3, 700), (9, 9_000), (5, 1_300)):
        count = runs * per_run
        trials = _rows(TRIAL_SCHEMA, count, first, per_run)
        tasks = _rows(TASK_SCHEMA, runs * 40, first, 40)
        summaries = [
            (f"run-{n:06d}", f'{{"runId": "run-{n:06d}"}}\n') for n in range(first, first + runs)
        ]
        batches.append((trials, tasks, summaries))
        first += runs
    return batches


def _finish(files: writer.OutputWriter, out: Path) -> dict[str, bytes]:
    files.summaries.close()
    assert files.trials is not None and files.tasks is not None
    files.trials.close()
    files.tasks.close()
    names = ("summaries.partial", table_file("trials"), table_file("tasks"))
    found = {name: (files.work / name).read_bytes() for name in names}
    files.abort()
    return found


def test_e154_copied_shards_write_the_bytes_the_rows_would(tmp_path: Path) -> None:
    direct = writer.OutputWriter(tmp_path / "direct")
    for trials, tasks, summaries in _batches():
        direct.add(summaries, trials, tasks)
    expected = _finish(direct, tmp_path / "direct")

    copied = writer.OutputWriter(tmp_path / "copied")
    shards = tmp_path / "shards"
    for number, (trials, tasks, summaries) in enumerate(_batches()):
        batch = BatchOutput(
            summaries=summaries,
            runs=pl.DataFrame(),
            tasks=tasks,
            trials=trials,
            problem_rows=[],
            baselines={},
            eval_run_ids=[],
        )
        written = write_shard(shards, number, batch).written
        assert written is not None
        copied.add_written(written)
        assert not written.trials.exists()  # each shard's files go once copied
    assert _finish(copied, tmp_path / "copied") == expected


def test_e154_a_copy_holds_a_few_thousand_rows_at_a_time(tmp_path: Path) -> None:
    """The shard is read in record batches of `COPY_BATCH_ROWS`, not whole row groups."""
    trials = _rows(TRIAL_SCHEMA, writer.ROW_GROUP_ROWS + 5, 0, 1_000)
    path = tmp_path / "shard.trials.parquet"
    writer.write_table(path, trials, schema=TRIAL_SCHEMA)
    sizes = [rows.num_rows for rows in writer._arrow_rows(path)]
    assert max(sizes) <= writer.COPY_BATCH_ROWS
    assert sum(sizes) == trials.height
