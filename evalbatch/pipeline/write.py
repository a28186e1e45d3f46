"""Grade event logs into an output directory (§4), batch by batch, whole or not at all (E-49,
E-50, E-70..E-74).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import polars as pl

from evalbatch.errors import (
    EXIT_OK,
    EXIT_SKIPPED,
    InputError,
    ShardFailed,
    write_failed,
)
from evalbatch.inputs import event_files, suites
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.outputs import outdir
from evalbatch.outputs.destinations import Inputs, refuse_overwrite
from evalbatch.outputs.manifest import MANIFEST_FILE, Manifest, RunEntry
from evalbatch.outputs.output_format import (
    DERIVED_FILES,
    INCOMPLETE_FILE,
    LOCK_FILE,
    OUTPUT_FILES,
    PROBLEM_SCHEMA,
    RUN_INPUTS_FILE,
    RUN_SCHEMA,
    TASK_SCHEMA,
    TRIAL_SCHEMA,
    table_file,
)
from evalbatch.outputs.run_inputs import RunInputs
from evalbatch.pipeline import incremental
from evalbatch.pipeline.local import Pass, Progress, chooser, grading_pass
from evalbatch.pipeline.merge import Merged, batch_outputs
from evalbatch.pipeline.shard_files import SHARDS_DIR
from evalbatch.reduce import paired_verdict

#: every file `run` writes, replaces or removes in `--out`: none may be one it reads (E-120)
_RUN_WRITES = (
    *OUTPUT_FILES,
    RUN_INPUTS_FILE,
    MANIFEST_FILE,
    *DERIVED_FILES,
    INCOMPLETE_FILE,
    LOCK_FILE,
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
    #: the output directory held no manifest before (a first incremental run: nothing to carry)
    first_incremental: bool = False
    #: the eval runs an incremental run kept unchanged (E-152: the terminal lists the others)
    kept_run_ids: frozenset[str] = frozenset()
    #: an incremental run's event files, and those of them whose rows it read to fingerprint
    #: runs (new or changed, E-152); None when it could not tell them apart
    event_files: int | None = None
    event_files_read: int | None = None

    @property
    def summary_count(self) -> int:
        return int(self.runs["graded"].sum())

    @property
    def exit_code(self) -> int:
        """0 when every run was graded and every file read; 3 when something was skipped."""
        lost = self.problems.filter(pl.col("severity") == "error").height
        return EXIT_SKIPPED if lost else EXIT_OK


#: what a failed write of `run`'s outputs leaves (E-72)
_UNCHANGED = "the previous outputs are unchanged"


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
        # the files, named: expanded again later, the directory would reach the working
        # directory the outputs are built in (E-154: made before the events are read)
        found = event_files.expand_paths([raw])
        kept = [name for name in found if not _inside(name, root)]
        paths += kept if found else [raw]  # nothing found at all: said as for any path
    if events and not paths:
        raise InputError(
            f"every event file given is inside --out {out}, where evalbatch writes its own "
            "outputs: give the events' directory or another --out"
        )
    return paths


def _not_a_directory(out: Path) -> InputError | None:
    """`--out` names a file, or a path under one: a usage error, said as such before anything
    is locked or written (not the OS's "File exists" from making the directory)."""
    for path in (out, *out.parents):
        if path.is_dir():
            return None
        if path.exists():
            where = "is" if path == out else f"is under {path}, which is"
            return InputError(
                f"--out {out} {where} a file, not a directory: --out names the directory the "
                "outputs are written to (created if missing)"
            )
    return None


def _nothing_to_grade(
    out: Path, run_filter: event_files.RunFilter | None, grading: Pass
) -> InputError:
    """E-70: a run that selected no eval run never replaces the outputs, nor exits 0."""
    filtered = " matches the run filters" if run_filter is not None and not run_filter.empty else ""
    unreadable = len(grading.file_problems)
    left_out = f" ({unreadable} event file(s) left out as unusable)" if unreadable else ""
    if grading.plan.rows_without_run:  # E-3: rows whose runId is null or blank name no run
        left_out += f" ({grading.plan.rows_without_run} row(s) without a runId)"
    return InputError(
        f"nothing to grade: no eval run (no eval.started) in the events{filtered}{left_out}; "
        f"nothing written to {out} (--allow-empty writes empty outputs)"
    )


def write_outputs(
    events: Paths,
    out_dir: str | Path,
    suites: Paths = (),
    *,
    suite_docs: Sequence[Mapping[str, Any]] = (),
    options: GradeOptions | None = None,
    resources: Resources | None = None,
    regress_options: paired_verdict.RegressOptions | None = None,
    on_batch: Callable[[Progress], None] | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    incremental_run: bool = False,
    run_filter: event_files.RunFilter | None = None,
    allow_empty: bool = False,
) -> RunReport:
    """Grade like `grade_paths` and write the outputs (§4) into `out_dir`, batch by batch.

    Summaries and trial rows go to disk as each batch is graded; only the small per-run and
    per-task tables stay in memory. The files are identical to `write_result(grade_paths(...))`
    and appear only when complete. One run writes to a directory at a time (a lock in it, E-49).
    With `incremental_run`, only runs that are new or changed since the last incremental run
    into `out_dir` are graded and the others' rows are carried over (E-50), once every previous
    file is checked against the manifest (E-71); the files are still identical to a full
    regrade's. Files inside `out_dir` are never read as events (E-74). `events` and `suites` are
    one path or a list. Beside the outputs, `run-inputs.json` records the event and suite paths
    as given (E-118).

    Raises:
        InputError: no eval run was selected (E-70; unless `allow_empty`), no event file,
            `out_dir` is a file (or under one), or a file it would write is an event or suite
            file it reads (E-120).
        OutputLocked: another live run is writing to `out_dir`.
        OutputError: the outputs could not be written (a full disk at any point, E-72); the
            previous ones are left as they were, and nothing is left behind.
        ShardFailed: on Ray, a shard failed for good (E-155); the previous outputs are left as
            they were, and nothing is left behind.
    """
    from evalbatch.outputs import writer
    from evalbatch.outputs.lock import OutputLock

    out = Path(out_dir)
    options = options or GradeOptions()
    suite_list = as_paths(suites)
    not_a_directory = _not_a_directory(out)
    if not_a_directory is not None:
        raise not_a_directory
    given = RunInputs(
        events=tuple(as_paths(events)), suites=None if suite_docs else tuple(suite_list)
    )
    event_paths = _without_outputs(as_paths(events), out)
    refuse_overwrite("--out", out, Inputs(events=event_paths, suites=suite_list), _RUN_WRITES)
    with OutputLock(out) as lock:
        writer.clear_dead_runs(out)
        # a directory a run died in (E-119) is no first run: its full regrade is told, even with -q
        first_incremental = (
            incremental_run and not (out / MANIFEST_FILE).exists() and not outdir.incomplete(out)
        )
        choices = load_suites(suite_list, suite_docs)
        selection: incremental.Selection | None = None
        regrade_reason: str | None = None

        def choose_runs(con: Any, sources: event_files.Sources) -> frozenset[str] | None:
            nonlocal selection, regrade_reason
            try:
                selection = incremental.choose(con, sources, out, options, choices, given)
            except event_files.NOT_THE_DATA:
                raise
            except duckdb.Error:
                # a file the fingerprint cannot read: grade everything, as a full run
                regrade_reason = "an event file cannot be read whole to fingerprint its runs"
                return None
            regrade_reason = selection.reason
            if selection.unchanged:
                raise incremental.NothingNew  # no batch to plan: the outputs stay (E-156)
            return selection.dirty

        try:
            files = writer.OutputWriter(out)
        except OSError as exc:
            raise write_failed(out, exc, _UNCHANGED, name_file=True) from exc
        try:
            grading = grading_pass(
                event_paths,
                choices,
                options,
                engine,
                ray_address,
                resources or Resources(),
                chooser(run_filter, choose_runs if incremental_run else None),
                on_progress=on_batch,
                # Ray's workers write their shards' rows themselves (E-154)
                shard_dir=files.work / SHARDS_DIR if engine == "ray" else None,
            )
        except ShardFailed as exc:  # a Ray shard failed for good: said with what it left (E-155)
            files.abort()
            raise ShardFailed(f"{exc}; {_UNCHANGED}", exc.exit_code) from exc
        except incremental.NothingNew:
            files.abort()
            assert selection is not None
            try:
                return _kept(out, selection, choices, options, first_incremental, lock.stale)
            except OSError as exc:
                raise write_failed(out, exc, _UNCHANGED, name_file=True) from exc
        except BaseException:
            files.abort()
            raise
        carried = selection.carried if selection is not None else None
        carried_lines = iter(carried.summary_lines()) if carried is not None else iter(())
        merged = Merged(keep_tasks=False)  # the task rows are written as the batches come
        try:
            if carried is not None:  # the rows before its first change, as they are (E-156)
                carried.copied = files.copy_leading(out, carried.first_change)
            next_line = next(carried_lines, None)
            for batch in batch_outputs(grading, on_batch):
                merged.add(batch)
                if batch.written is not None:
                    files.add_written(batch.written)
                    continue
                trials, tasks = batch.trials, batch.tasks
                lines: list[tuple[str, bytes]] = []
                if carried is not None:
                    low, high = batch.run_range
                    while next_line is not None and (high is None or next_line[0] < high):
                        lines.append(next_line)
                        next_line = next(carried_lines, None)
                    trials = pl.concat([trials, carried.trials(low, high).cast(TRIAL_SCHEMA)])
                    trials = trials.sort("run_id", "sequence")
                    tasks = pl.concat([tasks, carried.tasks(low, high).cast(TASK_SCHEMA)])
                    tasks = tasks.sort("run_id", "task_pos")
                files.add(
                    batch.summaries, trials, tasks, pending=set(batch.baselines), carried=lines
                )
            runs, problem_frame = merged.finish(
                grading,
                regress_options or paired_verdict.RegressOptions(),
                carried,
                task_rows=files.task_rows,
            )
            if runs.height == 0 and not allow_empty:
                raise _nothing_to_grade(out, run_filter, grading)
            manifest = None
            if incremental_run and selection is not None:
                manifest = _manifest(selection, merged, runs, choices, options)
            written = files.finish(merged.pending, runs, problem_frame, manifest, given)
        except OSError as exc:
            files.abort()
            raise write_failed(out, exc, _UNCHANGED, name_file=True) from exc
        except BaseException:
            files.abort()
            raise
        finally:
            grading.close()
    inputs = selection.inputs if selection is not None else None
    # the eval runs kept (the manifest also keeps runs that are not eval runs: child runs)
    kept = (
        frozenset(runs["run_id"].filter(runs["run_id"].is_in(sorted(carried.runs))))
        if carried
        else frozenset()
    )
    return RunReport(
        runs=runs,
        problems=problem_frame,
        written=written,
        carried_runs=len(kept),
        kept_run_ids=kept,
        full_regrade=carried is None,
        stale_lock=lock.stale.describe() if lock.stale is not None else None,
        regrade_reason=regrade_reason if carried is None else None,
        first_incremental=first_incremental,
        event_files=len(inputs.records) if inputs is not None else None,
        event_files_read=len(inputs.read) if inputs is not None else None,
    )


def _kept(
    out: Path,
    selection: incremental.Selection,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
    first_incremental: bool,
    stale: Any,
) -> RunReport:
    """A night with nothing new (E-156): the outputs it would write are the ones there, so they
    are left as they are, and it reports what writing them would have. Only the manifest is
    replaced, when an output file's identity was not the one it records (its sha256 was then
    checked) or it records none: the new one records them as found.

    Raises:
        OSError: the manifest could not be replaced (the old one is left).
    """
    from evalbatch.outputs import writer

    # one chunk, as the frames a night that writes builds: a sum over them is the same sum
    runs = pl.read_parquet(out / table_file("runs")).cast(RUN_SCHEMA).rechunk()
    problems = pl.read_parquet(out / table_file("problems")).cast(PROBLEM_SCHEMA).rechunk()
    manifest = _manifest(selection, Merged(keep_tasks=False), runs, choices, options)
    manifest.files = dict(selection.files or {})
    if (out / MANIFEST_FILE).read_bytes() != manifest.text().encode("utf-8"):
        writer.replace_manifest(out, manifest)
    inputs = selection.inputs
    names = [*OUTPUT_FILES, RUN_INPUTS_FILE, MANIFEST_FILE]
    return RunReport(
        runs=runs,
        problems=problems,
        written={name.split(".")[0]: out / name for name in names},
        carried_runs=runs.height,
        kept_run_ids=frozenset(runs["run_id"]),
        full_regrade=False,
        stale_lock=stale.describe() if stale is not None else None,
        first_incremental=first_incremental,
        event_files=len(inputs.records) if inputs is not None else None,
        event_files_read=len(inputs.read) if inputs is not None else None,
    )


def _manifest(
    selection: incremental.Selection,
    merged: Merged,
    runs: pl.DataFrame,
    choices: dict[tuple[str, str], suites.SuiteChoice],
    options: GradeOptions,
) -> Manifest:
    """The manifest of what is being written: carried runs keep their entries, graded runs get
    new ones from what grading saw (the writer adds each file's record once it is complete)."""
    keys = {
        run_id: (suite_id, version)
        for run_id, suite_id, version in runs.select("run_id", "suite_id", "suite_version")
        .filter(pl.col("suite_id").is_not_null() & pl.col("suite_version").is_not_null())
        .iter_rows()
    }
    previous = selection.previous.runs if selection.previous is not None else {}
    entries: dict[str, RunEntry] = {}
    for run_id, fingerprint in selection.fingerprints.items():
        if selection.dirty is not None and run_id not in selection.dirty:
            entries[run_id] = previous[run_id]
            continue
        key = keys.get(run_id)
        entries[run_id] = RunEntry(
            events=fingerprint,
            suite_key=key,
            suite=incremental.suite_digest(choices.get(key)) if key is not None else None,
            baseline=merged.declared_baselines.get(run_id),
            delegates=merged.delegates.get(run_id),
        )
    inputs = selection.inputs.recorded() if selection.inputs is not None else {}
    return Manifest(incremental.settings(options), entries, inputs=inputs)
