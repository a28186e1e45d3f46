"""The Ray Data engine (CONTRACT §7): the local engine's per-shard grading on Ray workers.

The driver splits the runs into ranges of run ids as the local engine does (every event of a run
in one shard), shards of at most about `--batch-events` events (E-154); each worker scans the
files, extracts and grades its shard exactly as the local engine does. When the outputs are
written, each worker writes its shard's rows into the output directory's private working
directory itself and hands the driver only its runs' rows, problems and baselines; the driver
copies the shards in order into the output files and commits them as the local engine does, so
the outputs are the local engine's byte for byte and the driver's memory does not grow with the
events. Needs the optional extra: `pip install 'evalbatch[ray]'`.
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Any

from evalbatch.errors import InputError
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files, object_store, suites
from evalbatch.options import DEFAULT_BATCH_EVENTS, Extractor, GradeOptions, Resources
from evalbatch.pipeline.shard import grade_shard


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:  # the extra is not installed
        raise InputError("--engine ray needs Ray: pip install 'evalbatch[ray]'") from exc
    return ray


def _quiet(ray: Any) -> None:
    """Ray's own lines stay off the terminal: its INFO and WARNING log lines (a local instance
    started, a token set up, a dataset's plan), Ray Data's progress bars and the progress it
    logs when stdout is not a terminal. evalbatch says what it did itself; Ray's errors still
    reach stderr, and its logs are still in its session directory (E-107)."""
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False


def _plan(paths: list[str], shard_events: int, workers: int) -> event_files.BatchPlan:
    """The shards: the input's runs split over the workers, but no shard much over
    `shard_events` events (a run is never split: one larger than that is a shard of its own)."""
    con = trial_tables.new_connection()
    try:
        sources = event_files.scan(con, paths)
        return event_files.plan_batches(con, sources, batch_events=shard_events, batches=workers)
    finally:
        con.close()


def grade_shards(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    *,
    address: str | None = None,
    extractor: Extractor = "auto",
    shard_events: int = DEFAULT_BATCH_EVENTS,
    shard_dir: Path | None = None,
) -> tuple[event_files.BatchPlan, list[Any], list[event_files.FileProblem]]:
    """Grade every shard on Ray (a running cluster at `address`, else a local one), each
    worker parsing payloads with `extractor` (E-108), on shards of whole runs of at most about
    `shard_events` events. With `shard_dir` (a directory every worker can write, E-154), each
    worker writes its shard's rows there (`shard_files.write_shard`) and returns only what is
    small; without, it returns its whole `Batch`. Also returns the files the workers could not
    read."""
    ray = _ray()
    _quiet(ray)
    if not ray.is_initialized():
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    # a local path made absolute for workers started elsewhere; a store's URI as it is (E-153)
    paths = [p if object_store.is_remote(p) else os.path.abspath(p) for p in paths]
    workers = max(2, int(ray.cluster_resources().get("CPU", 1)))
    # planned on a worker too: the driver never reads the events (E-154)
    plan = ray.get(ray.remote(_plan).remote(paths, shard_events, workers))
    target = str(shard_dir) if shard_dir is not None else None

    def grade(row: dict[str, Any]) -> dict[str, Any]:
        con = trial_tables.new_connection(Resources(threads=1, extractor=extractor))
        number = int(row["shard"])
        try:
            sources = event_files.scan(con, paths)
            part = grade_shard(con, sources, plan.ranges[number], choices, options)
        finally:
            con.close()
        problems = list(part.file_problems)
        if target is None:
            return {"shard": number, "part": pickle.dumps(part), "problems": pickle.dumps(problems)}
        from evalbatch.pipeline.batch_rows import batch_output
        from evalbatch.pipeline.shard_files import write_shard

        batch = batch_output(part)
        batch.run_range = plan.ranges[number]
        written = write_shard(Path(target), number, batch)
        return {"shard": number, "part": pickle.dumps(written), "problems": pickle.dumps(problems)}

    dataset = ray.data.from_items([{"shard": index} for index in range(len(plan.ranges))])
    rows = sorted(dataset.map(grade).take_all(), key=lambda row: row["shard"])
    parts = [pickle.loads(row["part"]) for row in rows]
    found = {(p.path, p.code): p for row in rows for p in pickle.loads(row["problems"])}
    return plan, parts, list(found.values())
