"""The Ray Data engine (CONTRACT §7): the local engine's per-shard grading on Ray workers.

The driver splits the runs into ranges of run ids as the local engine does (every event of a run
in one shard); each worker scans the files, extracts and grades its shard exactly as the local
engine does, and the driver merges the shards in order, so outputs are the local engine's.
Needs the optional extra: `pip install 'evalbatch[ray]'`.
"""

from __future__ import annotations

import logging
import os
import pickle
from typing import Any

from evalbatch.errors import InputError
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files, suites
from evalbatch.options import Extractor, GradeOptions, Resources
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


def grade_shards(
    paths: list[str],
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    *,
    address: str | None = None,
    shards: int | None = None,
    extractor: Extractor = "auto",
) -> tuple[event_files.BatchPlan, list[Any]]:
    """Grade every shard on Ray (a running cluster at `address`, else a local one), each
    worker parsing payloads with `extractor` (E-108)."""
    ray = _ray()
    _quiet(ray)
    if not ray.is_initialized():
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    paths = [os.path.abspath(p) for p in paths]
    con = trial_tables.new_connection()
    try:
        sources = event_files.scan(con, paths)
        count = shards or max(2, int(ray.cluster_resources().get("CPU", 1)))
        plan = event_files.plan_batches(con, sources, batches=count)
    finally:
        con.close()

    def grade(row: dict[str, Any]) -> dict[str, Any]:
        con = trial_tables.new_connection(Resources(threads=1, extractor=extractor))
        try:
            sources = event_files.scan(con, paths)
            runs = plan.ranges[int(row["shard"])]
            part = grade_shard(con, sources, runs, choices, options)
        finally:
            con.close()
        return {"shard": row["shard"], "part": pickle.dumps(part)}

    dataset = ray.data.from_items([{"shard": index} for index in range(len(plan.ranges))])
    rows = dataset.map(grade).take_all()
    parts = [pickle.loads(row["part"]) for row in sorted(rows, key=lambda row: row["shard"])]
    return plan, parts
