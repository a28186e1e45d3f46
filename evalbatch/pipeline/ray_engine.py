"""The Ray Data engine (CONTRACT §7): the local engine's per-shard grading on Ray workers.

The driver splits the runs into ranges of run ids as the local engine does (every event of a run
in one shard), shards of at most about `--batch-events` events (E-154); each worker scans the
files, extracts and grades its shard exactly as the local engine does. When the outputs are
written, each worker writes its shard's rows into the output directory's private working
directory itself and hands the driver only its runs' rows, problems and baselines; the driver
copies the shards in order into the output files and commits them as the local engine does, so
the outputs are the local engine's byte for byte and the driver's memory does not grow with the
events. Needs the optional extra: `pip install 'evalbatch[ray]'`.

A shard whose worker is lost (killed from outside, crashed, out of memory, its node gone) is run
again by Ray, up to `SHARD_RETRIES` more times, and the outputs are the same; a shard that fails
for good (its worker stops on a fault, or it is lost every time) fails the run with one line
naming the shard, its runs and the fault, and nothing is written (E-155).
"""

from __future__ import annotations

import logging
import os
import pickle
import warnings
from pathlib import Path
from typing import Any

from evalbatch.errors import (
    EXIT_NOT_WRITTEN,
    EXIT_UNUSABLE,
    EvalbatchError,
    InputError,
    ShardFailed,
    name_fault,
)
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files, object_store, suites
from evalbatch.options import DEFAULT_BATCH_EVENTS, Extractor, GradeOptions, Resources
from evalbatch.pipeline.shard import grade_shard

#: how many more times Ray runs a shard whose worker was lost (killed from outside, crashed, out
#: of memory, its node gone) before the shard fails for good, set on the map: Ray Data's own
#: default for its tasks is to run them again for ever, so a shard that kills every worker it
#: runs on would never end the night (E-155). A fault the worker names itself is not retried.
SHARD_RETRIES = 3


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
    reach stderr, and its logs are still in its session directory (E-107).

    Nor the line Ray's driver prints on stdout when a worker dies (`(raylet) A worker died or
    was killed ...`), which it prints whatever `log_to_driver` says and which would break
    `run --json`'s one document: a shard whose worker died is run again (E-155), and one that
    fails for good is said by evalbatch, as are the shards Ray Data gives up on (its error for
    each, with a traceback, stays in its log file, off the terminal)."""
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    for handler in logging.getLogger("ray.data").handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(
            handler, logging.FileHandler
        ):
            handler.setLevel(logging.CRITICAL)  # the terminal's; its log file keeps the errors
    # Ray's switch for every line its driver prints for a worker (`ray.util.rpdb` uses it)
    ray._private.worker._worker_logs_enabled = False
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
    read.

    Raises:
        ShardFailed: a shard failed for good (E-155): its worker named a fault, or Ray gave up
            on it after `SHARD_RETRIES` more attempts; the other shards are graded first. Or
            the task planning the shards failed so.
        EvalbatchError: the planning task's worker raised one (no usable event file): raised
            as the local engine raises it.
    """
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
    planning = ray.remote(_plan).options(max_retries=SHARD_RETRIES)
    try:
        plan = ray.get(planning.remote(paths, shard_events, workers))
    except ray.exceptions.RayError as exc:
        raise _planning_failed(exc, attempts=SHARD_RETRIES + 1) from None
    target = str(shard_dir) if shard_dir is not None else None

    def grade(row: dict[str, Any]) -> dict[str, Any]:
        number = int(row["shard"])
        try:
            part = grade_one(number)
        except Exception as exc:  # said here, where it happened; the driver fails the run
            reason, code = shard_fault(exc)
            return {"shard": number, "part": b"", "problems": b"", "fault": reason, "exit": code}
        return {"shard": number, **part, "fault": "", "exit": 0}

    def grade_one(number: int) -> dict[str, bytes]:
        con = trial_tables.new_connection(Resources(threads=1, extractor=extractor))
        try:
            sources = event_files.scan(con, paths)
            part = grade_shard(con, sources, plan.ranges[number], choices, options)
        finally:
            con.close()
        problems = pickle.dumps(list(part.file_problems))
        if target is None:
            return {"part": pickle.dumps(part), "problems": problems}
        from evalbatch.pipeline.batch_rows import batch_output
        from evalbatch.pipeline.shard_files import write_shard

        batch = batch_output(part)
        batch.run_range = plan.ranges[number]
        written = write_shard(Path(target), number, batch)
        return {"part": pickle.dumps(written), "problems": problems}

    # one shard a block, so one shard a task: a task Ray gives up on is one shard
    dataset = ray.data.from_items(
        [{"shard": index} for index in range(len(plan.ranges))],
        override_num_blocks=len(plan.ranges),
    )
    # a shard Ray gives up on is left out of the results rather than raised: Ray's exception
    # names no shard, the missing number does (`failed_shards`), and the other shards finish
    dataset.context.max_errored_blocks = -1
    with warnings.catch_warnings():
        # Ray 2.60 deprecates a task option given to `map` by name, but has no parameter for
        # this one yet
        warnings.simplefilter("ignore", DeprecationWarning)
        mapped = dataset.map(grade, max_retries=SHARD_RETRIES)
    rows = sorted(mapped.take_all(), key=lambda row: row["shard"])
    failure = failed_shards(plan, rows, attempts=SHARD_RETRIES + 1)
    if failure is not None:
        raise failure
    parts = [pickle.loads(row["part"]) for row in rows]
    found = {(p.path, p.code): p for row in rows for p in pickle.loads(row["problems"])}
    return plan, parts, list(found.values())


def shard_fault(exc: BaseException) -> tuple[str, int]:
    """Why a worker's shard failed, said as the local engine says the same fault in a batch
    (`errors.name_fault`), and the exit code it gives it; a fault nothing names (a bug) by its
    type alone, as `main()` names an internal error (its text may quote the data, §H)."""
    return name_fault(exc) or (
        f"its worker stopped on an unexpected {type(exc).__name__}",
        EXIT_UNUSABLE,
    )


def _lost(attempts: int) -> str:
    """Why a task Ray gave up on failed: Ray says no more than that its worker was lost."""
    return (
        f"Ray could not run it to the end in {attempts} attempts (its worker was killed, "
        "crashed or ran out of memory, or its node was lost)"
    )


def _planning_failed(exc: BaseException, attempts: int) -> EvalbatchError:
    """The error of the planning task that failed on Ray: the library's error its worker raised
    as it is (no usable event file: the line and exit code of the local engine, which plans
    alike), not Ray's wrapping of it, whose text is the worker's traceback; another fault as
    `shard_fault` says it; a worker lost on every attempt as a shard's is."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, EvalbatchError):
        return cause
    reason, code = shard_fault(cause) if cause is not None else (_lost(attempts), EXIT_NOT_WRITTEN)
    return ShardFailed(f"planning the shards failed on Ray: {reason}", code)


def shard_label(plan: event_files.BatchPlan, number: int) -> str:
    """Shard `number` (from 0) as a user reads it: counted from 1, and its runs by their ids
    (the first and last, and how many), never by anything they hold (§H)."""
    label = f"shard {number + 1} of {len(plan.ranges)}"
    if number >= len(plan.spans):
        return f"{label} (no runs)"
    first, last, runs = plan.spans[number]
    if runs == 1:
        return f"{label} (run {first})"
    return f"{label} (runs {first} .. {last}, {runs} runs)"


def failed_shards(
    plan: event_files.BatchPlan, rows: list[dict[str, Any]], attempts: int
) -> ShardFailed | None:
    """The one error of a pass in which some shard failed for good, or None: `rows` are the
    workers' results, a shard's `fault` set when its worker named one, and a shard with no row
    one Ray gave up on after `attempts` attempts. The first failed shard is named, with its
    fault and exit code; the others are counted."""
    faults = {int(row["shard"]): (str(row["fault"]), int(row["exit"])) for row in rows}
    faults = {number: fault for number, fault in faults.items() if fault[0]}
    returned = {int(row["shard"]) for row in rows}
    for number in range(len(plan.ranges)):
        if number not in returned:
            faults[number] = (_lost(attempts), EXIT_NOT_WRITTEN)
    if not faults:
        return None
    first = min(faults)
    reason, code = faults[first]
    others = len(faults) - 1
    also = f" ({others} more shard{'s' if others > 1 else ''} failed too)" if others else ""
    return ShardFailed(f"{shard_label(plan, first)} failed on Ray: {reason}{also}", code)
