"""The local engine: a grading pass over the event files in batches of whole runs, on one DuckDB
connection, the SQL stage of the next batch overlapping the grading of the current one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalbatch.errors import (
    InputError,
)
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files, suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline.shard import Batch, Extracted, extract_shard, grade_extracted
from evalbatch.problems import severity
from evalbatch.reduce.run_summaries import RunPlan

if TYPE_CHECKING:
    from evalbatch.pipeline.batch_rows import BatchOutput


@dataclass(frozen=True)
class Progress:
    """How far a grading pass is, for a progress display. Reported after each batch; the local
    engine given `on_progress` also reports while it chooses the runs (stage "choosing": the run
    filters, the incremental fingerprint pass) and while a batch's SQL stage runs, from a helper
    thread a few times a second, so a display moves within a batch."""

    batches_done: int
    batches: int
    runs_done: int  # eval runs graded
    runs: int
    events_done: int  # events read: whole batches, plus the running batch's share so far
    events: int = 0  # events of the pass (0 while choosing: not known yet)
    stage: Literal["choosing", "grading"] = "grading"
    #: DuckDB's estimate of how far its running query is, 0..1 (None: no query running)
    query_done: float | None = None


#: how often a running query's progress is read (seconds)
POLL_SECONDS = 0.2


class _Watch:
    """A pass's progress, reported when a stage changes and, from a helper thread, as DuckDB's
    estimate of its running query moves (the only measure inside one batch's SQL stage)."""

    def __init__(self, con: Any, report: Callable[[Progress], None]) -> None:
        self.con = con
        self.report = report
        self.lock = threading.Lock()
        self.stage: Literal["choosing", "grading"] = "choosing"
        self.plan: event_files.BatchPlan | None = None
        self.batches_done = self.runs_done = self.events_read = 0
        self.reading: tuple[int, int] | None = None  # (batch number, its events) being read
        self.query_done = 0.0  # the most DuckDB's estimate reached in this stage or batch
        self.stopped = threading.Event()
        # DuckDB measures a query's progress only with its progress bar on; it prints nothing
        con.execute("SET enable_progress_bar = true")
        con.execute("SET enable_progress_bar_print = false")
        self.thread = threading.Thread(target=self._poll, name="evalbatch-progress", daemon=True)
        self.send()
        self.thread.start()

    def _poll(self) -> None:
        """Read the running query's progress until stopped (a helper thread)."""
        while not self.stopped.wait(POLL_SECONDS):
            try:
                self.poll_once()
            except Exception:  # a closing connection, a display that failed: stop telling
                self.stopped.set()

    def poll_once(self) -> None:
        """Report DuckDB's estimate of the running query, if one runs (it never goes back within
        a stage or a batch, though each of a batch's queries starts from 0)."""
        done = self.con.query_progress()
        if done >= 0:
            with self.lock:
                self.query_done = max(self.query_done, min(done / 100, 1.0))
            self.send(estimate=True)

    def send(self, estimate: bool = False) -> None:
        """Report where the pass is; under the lock, so reports arrive in order."""
        with self.lock:
            if self.stopped.is_set():
                return
            plan = self.plan
            events_done = self.events_read
            if self.reading is not None:
                events_done += int(self.reading[1] * self.query_done)
            self.report(
                Progress(
                    batches_done=self.batches_done,
                    batches=len(plan.ranges) if plan is not None else 0,
                    runs_done=self.runs_done,
                    runs=plan.runs if plan is not None else 0,
                    events_done=events_done,
                    events=sum(plan.events) if plan is not None else 0,
                    stage=self.stage,
                    query_done=self.query_done if estimate else None,
                )
            )

    def planned(self, plan: event_files.BatchPlan) -> None:
        with self.lock:
            self.stage, self.plan, self.query_done = "grading", plan, 0.0
        self.send()

    def reading_batch(self, number: int, events: int) -> None:
        with self.lock:
            self.reading, self.query_done = (number, events), 0.0
        self.send()

    def read(self, number: int, events: int) -> None:
        """Batch `number`'s SQL stage is done (told by the worker thread that ran it)."""
        with self.lock:
            self.events_read += events
            if self.reading is not None and self.reading[0] == number:
                self.reading = None
        self.send()

    def graded(self, runs: int) -> None:
        with self.lock:
            self.batches_done += 1
            self.runs_done += runs
        self.send()

    def stop(self) -> None:
        """No more reports; the helper thread ends before the connection closes."""
        self.stopped.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join()


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
    parts: Iterator[Batch | BatchOutput]  # a worker's written batch (E-154) is a BatchOutput
    watch: _Watch | None = None

    def close(self) -> None:
        """Stop the pass where it is (its worker thread and connection end). Callers close it
        themselves, never leaving it to the garbage collector: that may run in the worker thread,
        which would then wait for its own extraction."""
        if self.watch is not None:
            self.watch.stop()
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
    on_progress: Callable[[Progress], None] | None = None,
    keep_calls: bool = False,
) -> Pass:
    """The local engine: batches one after another on one DuckDB connection. `on_progress` is
    told where the pass is as it moves (see `Progress`); `keep_calls` keeps each batch's calls
    (`Batch.calls`)."""
    con = trial_tables.new_connection(resources)
    watch = None
    try:
        watch = _Watch(con, on_progress) if on_progress is not None else None
        sources = event_files.scan(con, paths)
        if choose_runs is not None:
            picked = choose_runs(con, sources)
            if picked is not None:
                sources.only_runs = picked
        plan = event_files.plan_batches(con, sources, resources.batch_events)
        if watch is not None:
            watch.planned(plan)
    except BaseException:
        if watch is not None:
            watch.stop()
        con.close()
        raise
    found: dict[tuple[str, str], event_files.FileProblem] = {}
    delegate_suites = suites.delegate_suites(choices)

    def parts() -> Iterator[Batch]:
        # DuckDB extracts the next batch on a worker thread (it releases the GIL) while this
        # thread places the current one's trials and grades them in Python and Polars, on a
        # connection of its own: the two stages overlap.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_WORKER)
        placing = con.cursor()

        def extract(number: int) -> Future[Extracted]:
            """Batch `number`'s SQL stage on the worker; the watch hears when it starts and
            ends (before its result is handed over)."""
            if watch is None:
                return pool.submit(
                    extract_shard, con, sources, plan.ranges[number], delegate_suites, True
                )
            events = plan.events[number]
            watch.reading_batch(number, events)

            def read() -> Extracted:
                extracted = extract_shard(
                    con, sources, plan.ranges[number], delegate_suites, place_later=True
                )
                watch.read(number, events)
                return extracted

            return pool.submit(read)

        numbers = iter(range(len(plan.ranges)))
        pending = None
        try:
            first = next(numbers, None)
            if first is not None:
                pending = extract(first)
            while pending is not None:
                extracted = pending.result()
                following = next(numbers, None)
                pending = None if following is None else extract(following)
                part = grade_extracted(extracted, choices, options, placing, keep_calls)
                found.update({(p.path, p.code): p for p in part.file_problems})
                if watch is not None:
                    watch.graded(part.eval_runs.height)
                yield part
        finally:
            if watch is not None:
                watch.stop()
            # closed from the worker itself (only the garbage collector could): waiting for its
            # own extraction would never end, so interrupt it and let it go
            on_worker = threading.current_thread().name.startswith(_WORKER)
            if pending is not None and not pending.cancel():
                con.interrupt()
                if not on_worker:
                    wait([pending])
            pool.shutdown(wait=not on_worker)
            if not on_worker:
                placing.close()
                con.close()

    return Pass(plan, found, parts(), watch)


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
            extracted = extract_shard(con, sources, None, suites.delegate_suites(choices))
            part = grade_extracted(extracted, choices, options)
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
    on_progress: Callable[[Progress], None] | None = None,
    keep_calls: bool = False,
    shard_dir: Path | None = None,
) -> Pass:
    """A grading pass on the chosen engine (the local one batches with `resources` and tells
    `on_progress` how far it is as it moves; Ray's reports come from `batch_outputs`). The
    calls are kept (`keep_calls`) by the local engine only. With `shard_dir`, Ray's workers
    write their batches' rows there themselves and hand back only what is small (E-154)."""
    paths = [str(p) for p in events]
    if engine == "ray":
        if choose_runs is not None:
            raise InputError(
                "--incremental and the run filters need the local engine (leave out --engine ray)"
            )
        from evalbatch.pipeline import ray_engine  # optional: needs the `ray` extra

        plan, parts, file_problems = ray_engine.grade_shards(
            paths,
            choices,
            options,
            address=ray_address,
            extractor=resources.extractor,
            shard_events=resources.batch_events,
            shard_dir=shard_dir,
        )
        found = {(p.path, p.code): p for p in file_problems}
        return Pass(plan, found, iter(parts))
    return local_pass(paths, choices, options, resources, choose_runs, on_progress, keep_calls)


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
        parts = [part for part in grading.parts if isinstance(part, Batch)]  # all of them: local
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
    #: each run with a child run it could not read (E-102) -> those problem codes, as found
    delegate_problems: dict[str, list[str]] = field(default_factory=dict)
    #: each run's runs-table columns from outside its summary (`Batch.run_columns`)
    run_columns: dict[str, dict[str, Any]] = field(default_factory=dict)

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
        delegate_problems: dict[str, list[str]] = {}
        for part in parts:
            for owner, _, code, _ in part.problem_rows:
                if owner is not None and code.startswith("delegate-"):
                    codes = delegate_problems.setdefault(owner, [])
                    if code not in codes:
                        codes.append(code)
        return cls(
            eval_runs=pl.concat([part.eval_runs for part in parts]).sort("run_id"),
            plans={run: plan for part in parts for run, plan in part.plans.items()},
            outcomes={run: o for part in parts for run, o in part.outcomes.items()},
            trials=pl.concat([part.trials for part in parts], how="diagonal_relaxed"),
            fatal=fatal,
            skipped_files=list(parts[0].file_problems) if parts else [],
            delegate_problems=delegate_problems,
            run_columns={run: c for part in parts for run, c in part.run_columns.items()},
        )
