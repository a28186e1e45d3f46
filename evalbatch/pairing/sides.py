"""`regress`: the two sides of a comparison (event logs graded here, or a tasks table written by
`run`), the runs of each suite paired across them, and one verdict per suite (§5); several suites
gated at once held to the family's level, and the plan of a suite that needs one (E-98,
E-99). The verdict, the family and the plan's level are `reduce.paired_verdict`'s; this module
reads the sides and pairs their runs.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNUSABLE,
    InputError,
)
from evalbatch.inputs import event_files
from evalbatch.inputs.path_forms import Paths, as_paths
from evalbatch.inputs.suites import SuiteChoice, load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.outputs.output_format import RUN_SCHEMA
from evalbatch.pairing import named_runs
from evalbatch.pipeline.collect import GradeResult, grade_loaded
from evalbatch.reduce import behaviour_changes, paired_verdict
from evalbatch.reduce import verdict_plan as planning
from evalbatch.text import printable


@dataclass
class RegressionReport:
    """`regress` results: one comparison per suite on both sides, and what could not be paired."""

    comparisons: list[paired_verdict.Comparison]
    unpaired: list[tuple[str, str]]  # suites found on one side only: (side, suiteId)
    #: the correction applied when several suites were tested at once, and how many
    #: (E-98); None with one tested suite (nothing to correct)
    correction: paired_verdict.Correction | None = None
    family_size: int = 0
    plans: dict[str, planning.Plan] = field(default_factory=dict)  # by suiteId (E-99)

    @property
    def exit_code(self) -> int:
        """2 when some suite compared nothing (a run of its pair not graded, other suite
        versions, no task in common: its input is unusable, §5), else 1 when some suite
        regressed (by at least `min_drop`, E-137), else 0 (`fail_on` widens this in the
        CLI)."""
        if any(c.nothing_compared for c in self.comparisons):
            return EXIT_UNUSABLE
        return EXIT_FAILED if any(c.fails_gate for c in self.comparisons) else EXIT_OK

    @property
    def shown_safe(self) -> bool:
        """Every suite on either side was compared and none is inconclusive: what
        `--fail-on inconclusive` asks for (E-66: a suite on one side only is not shown safe)."""
        return not self.unpaired and all(c.verdict != "inconclusive" for c in self.comparisons)

    def report(self) -> dict[str, object]:
        """The `--json` document (E-68): the comparisons (each with its `plan` when it has one),
        then the suites not compared, then the `correction` when several suites were tested."""
        comparisons = []
        for c in self.comparisons:
            shown = c.report()
            if c.suite_id in self.plans:
                shown["plan"] = self.plans[c.suite_id].report()
            comparisons.append(shown)
        document: dict[str, object] = {
            "comparisons": comparisons,
            "notCompared": [{"side": side, "suiteId": suite} for side, suite in self.unpaired],
        }
        if self.correction is not None:
            document["correction"] = {
                "method": self.correction,
                "suites": self.family_size,
                "alpha": self.comparisons[0].alpha,
            }
        return document


SIDE_NAMES = {"base": "baseline", "cand": "candidate"}


def _describe_side(name: str, label: str) -> str:
    """`the baseline side (PATH)`, for messages."""
    return f"the {SIDE_NAMES[name]} side ({printable(label)})"


@dataclass
class _Side:
    """One side of a comparison: its task rows (a run not graded has one row with null scores),
    how each run was graded, and why runs were not graded."""

    name: str  # "base" or "cand", as in --base-run-id / --cand-run-id
    label: str  # the path as given, for messages
    tasks: pl.DataFrame
    gradings: dict[str, paired_verdict.Grading]
    not_graded: dict[str, str]
    #: counted trials (run_id, task_id, score, gating_score), for a plan; None when not at hand
    trials: pl.DataFrame | None = None
    #: each run's events fingerprint (runs table, E-50), where known: the same events under any
    #: run id or file name have the same one (E-114)
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: the files the side was read from, resolved (a tasks table: that file)
    files: frozenset[Path] = frozenset()
    #: the counted trials' calls (E-136), from event logs graded here; None from a tasks table
    calls: pl.DataFrame | None = None
    #: each run's model and Inspect task (runs table, E-146), for a run from an Inspect log
    names: dict[str, dict[str, Any]] = field(default_factory=dict)

    def runs_of(self, suite_id: str) -> list[str]:
        return self.tasks.filter(pl.col("suite_id") == suite_id)["run_id"].unique().sort().to_list()

    @property
    def suites(self) -> set[str]:
        return set(self.tasks["suite_id"].drop_nulls().to_list())

    def describe(self) -> str:
        return _describe_side(self.name, self.label)


def _is_task_table(path: str | Path) -> bool:
    """A Parquet file `evalbatch run` wrote as tasks.parquet, or one shaped like it (a task_id
    column and no event `type`): it is validated as a tasks table, never graded as events."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return False  # not readable as Parquet here: grading reports it as a bad file
    marked = (schema.metadata or {}).get(b"evalbatch.table") == b"tasks"
    return marked or ("task_id" in schema.names and "type" not in schema.names)


def _filter_tasks(
    tasks: pl.DataFrame, run_filter: event_files.RunFilter | None, label: str
) -> pl.DataFrame:
    """A tasks table narrowed by run-id globs and suites.

    Raises:
        InputError: `--since`/`--until` given: a tasks table holds no eval.started time, so it
            cannot be bounded by one (refused rather than ignored, E-67).
    """
    if run_filter is None or run_filter.empty:
        return tasks
    if run_filter.since is not None or run_filter.until is not None:
        raise InputError(
            f"--since/--until cannot filter {printable(label)}: a tasks table holds no "
            "eval.started time; use --run-id or --suite-id, or give the event logs"
        )
    keep = pl.lit(True)
    if run_filter.run_ids:
        runs = tasks["run_id"].unique().to_list()
        chosen = [r for r in runs if any(fnmatch.fnmatchcase(r, g) for g in run_filter.run_ids)]
        keep &= pl.col("run_id").is_in(chosen)
    if run_filter.suites:
        keep &= pl.col("suite_id").is_in(list(run_filter.suites))
    return tasks.filter(keep)


def _runs_beside(path: Path) -> tuple[pl.DataFrame | None, str]:
    """The runs.parquet `evalbatch run` wrote beside a tasks.parquet, or why there is none
    usable: without it a run's grading is unknown (E-67)."""
    runs_path = path.with_name("runs.parquet")
    if not runs_path.is_file():
        return None, "no runs.parquet beside the tasks table"
    try:
        runs = pl.read_parquet(runs_path)
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException):
        return None, "the runs.parquet beside the tasks table cannot be read"
    if any(runs.schema.get(name) != RUN_SCHEMA[name] for name in _PROVENANCE_COLUMNS):
        return None, "the runs.parquet beside the tasks table records no grading"
    return runs, ""


#: the runs.parquet columns a tasks table's grading is read from (E-67), typed as RUN_SCHEMA
_PROVENANCE_COLUMNS = (
    "run_id",
    "suite_id",
    "suite_version",
    "graded",
    "has_suite",
    "suite_sha256",
    "default_pass_score",
    "on_miss_default",
)


def _task_table_side(name: str, path: Path, run_filter: event_files.RunFilter | None) -> _Side:
    """A `tasks.parquet` side, validated before use (E-69), its grading read from the
    `runs.parquet` beside it (E-67).

    Raises:
        InputError: the file cannot be read, or it is not a usable tasks table (one line per
            fault), or a filter it cannot apply was given.
    """
    try:
        tasks = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:
        raise InputError(
            f"{printable(path)}: not a readable tasks table ({type(exc).__name__})"
        ) from None
    faults = paired_verdict.task_table_faults(tasks)
    if faults:
        listed = "".join(f"\n  {printable(path)}: {fault}" for fault in faults)
        raise InputError(f"{printable(path)} is not a usable tasks table:{listed}")
    tasks = _filter_tasks(tasks, run_filter, str(path))
    runs, why_unknown = _runs_beside(path)
    gradings: dict[str, paired_verdict.Grading] = {}
    not_graded: dict[str, str] = {}
    if runs is not None:
        tasks, gradings, skipped = _with_runs(tasks, _filter_tasks(runs, run_filter, str(path)))
        not_graded = dict.fromkeys(skipped, "see problems.parquet")
    unknown = paired_verdict.Grading(
        unknown_because=why_unknown or "no row in the runs.parquet beside it"
    )
    for run in tasks["run_id"].unique().to_list():
        gradings.setdefault(run, unknown)
    return _Side(
        name,
        str(path),
        tasks,
        gradings,
        not_graded,
        _trials_beside(path),
        _fingerprints(runs),
        frozenset({path.resolve()}),
        names=_names(runs),
    )


#: the runs-table columns a side shows besides its grades: an Inspect log's task and model
#: (E-146) and its errored samples (E-147)
SIDE_FACTS = ("model", "task_name", "errored_trials", "mean_without_errored", "errored_left_out")


def _names(runs: pl.DataFrame | None) -> dict[str, dict[str, Any]]:
    """Each run's `SIDE_FACTS` from a runs table, for the runs that have one (an older table
    has none of these columns: E-146, E-147)."""
    columns = [c for c in SIDE_FACTS if runs is not None and c in runs.columns]
    if runs is None or not columns:
        return {}
    facts = [pl.col(c) if c != "errored_trials" else pl.col(c).replace(0, None) for c in columns]
    known = runs.select("run_id", *facts).filter(
        pl.any_horizontal(pl.col(c).is_not_null() for c in columns)
    )
    return {row["run_id"]: row for row in known.iter_rows(named=True)}


def _fingerprints(runs: pl.DataFrame | None) -> dict[str, str]:
    """Each run's events fingerprint from a runs table, where it records one."""
    if runs is None or runs.schema.get("events_fingerprint") != pl.String:
        return {}
    known = runs.select("run_id", "events_fingerprint").drop_nulls()
    return dict(known.iter_rows())


#: the trials columns a plan reads, with their types
_TRIAL_COLUMNS = {
    "run_id": pl.String,
    "task_id": pl.String,
    "counted": pl.Boolean,
    "score": pl.Float64,
    "gating_score": pl.Float64,
}


def _counted_trials(trials: pl.DataFrame) -> pl.DataFrame | None:
    """The counted trials with finite scores in 0..1, or None when the table lacks a column a
    plan reads (the plan then says the trials are not at hand; the verdict never reads them).
    The columns behaviour changes read are kept when the table has them all (E-136)."""
    if any(trials.schema.get(name) != dtype for name, dtype in _TRIAL_COLUMNS.items()):
        return None
    in_range = pl.all_horizontal(
        pl.col(c).is_finite() & pl.col(c).is_between(0, 1) for c in paired_verdict.SCORE_COLUMNS
    )
    columns = list(_TRIAL_COLUMNS)
    if _has_behaviour(trials):
        columns += [c for c in behaviour_changes.TRIAL_COLUMNS if c not in _TRIAL_COLUMNS]
    return trials.filter(pl.col("counted").fill_null(False) & in_range).select(columns)


def _has_behaviour(trials: pl.DataFrame | None) -> bool:
    """The trials hold every column behaviour changes read, with its type."""
    return trials is not None and all(
        trials.schema.get(name) == dtype for name, dtype in behaviour_changes.TRIAL_COLUMNS.items()
    )


def _trials_beside(path: Path) -> pl.DataFrame | None:
    """The counted trials of the trials.parquet `evalbatch run` wrote beside a tasks.parquet."""
    trials_path = path.with_name("trials.parquet")
    if not trials_path.is_file():
        return None
    wanted = {**_TRIAL_COLUMNS, **behaviour_changes.TRIAL_COLUMNS}
    try:
        present = pq.read_schema(trials_path).names
        trials = pl.read_parquet(trials_path, columns=[c for c in wanted if c in present])
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException):
        return None
    return _counted_trials(trials)


class _Suites:
    """The suites both sides are graded against, read and checked once, when a side first needs
    them (a tasks table needs none)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._choices: dict[tuple[str, str], SuiteChoice] | None = None

    def choices(self) -> dict[tuple[str, str], SuiteChoice]:
        if self._choices is None:
            self._choices = load_suites(self.paths)
        return self._choices


def _side(
    name: str,
    paths: Sequence[str],
    suites: _Suites,
    options: GradeOptions | None,
    run_filter: event_files.RunFilter | None = None,
    resources: Resources | None = None,
    named: named_runs.NamedRun | None = None,
) -> _Side:
    """One side of a comparison: a `tasks.parquet` written by `evalbatch run`, or event logs
    graded here (§5), whose grading is then known from the grading itself. With its run
    `named`, event logs are read for that run and the runs that may hold another suite
    (E-140); the answer is the whole log's."""
    label = ", ".join(str(p) for p in paths)
    one_parquet = len(paths) == 1 and str(paths[0]).endswith(".parquet")
    if one_parquet and Path(paths[0]).is_file() and _is_task_table(paths[0]):
        return _task_table_side(name, Path(paths[0]), run_filter)

    def graded(choose: named_runs.NamedRun | None) -> GradeResult:
        return grade_loaded(
            paths,
            suites.choices(),
            options=options,
            resources=resources,
            run_filter=run_filter,
            keep_calls=True,
            choose_runs=choose.choose if choose is not None else None,
        )

    result = graded(named)
    tasks, gradings, skipped = _with_runs(result.tasks, result.runs)
    if named is not None and named.narrowed and not named.holds(tasks, _unread(result)):
        # the named run is not on the side as its rows said, or a file failed: what is said of
        # the side then lists every run and every file, so the whole side is read (E-140)
        result = graded(None)
        tasks, gradings, skipped = _with_runs(result.tasks, result.runs)
    errors = result.problems.filter(pl.col("severity") == "error")
    unread = _unread(result)
    if unread.height:
        # a file that could not be read may hold this side's run of any suite: comparing the
        # rest would let a lost run pass as "one side only" (E-65)
        listed = "".join(f"\n  {printable(message)}" for message in unread["message"])
        raise InputError(
            f"{_describe_side(name, label)}: {unread.height} event "
            f"file problem(s); nothing was compared:{listed}"
        )
    not_graded = {run: _why_not_graded(errors.filter(pl.col("run_id") == run)) for run in skipped}
    files = frozenset(Path(p).resolve() for p in event_files.expand_paths(list(paths)))
    return _Side(
        name,
        label,
        tasks,
        gradings,
        not_graded,
        _counted_trials(result.trials),
        _fingerprints(result.runs),
        files,
        result.calls,
        _names(result.runs),
    )


def _unread(result: GradeResult) -> pl.DataFrame:
    """The errors of no run: the event files (or their parts) that could not be read."""
    return result.problems.filter((pl.col("severity") == "error") & pl.col("run_id").is_null())


def _why_not_graded(errors: pl.DataFrame) -> str:
    """A run's errors as the reason it compared nothing: the first message of each code
    (content-free, each naming its code and the file at fault where one is: an invalid
    suite's)."""
    firsts = errors.sort("code").unique("code", keep="first", maintain_order=True)
    return "; ".join(firsts["message"].to_list())


def _with_runs(
    tasks: pl.DataFrame, runs: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, paired_verdict.Grading], list[str]]:
    """A side's task rows plus one row with null scores per run that was not graded (it has no
    task rows, yet its suite must pair), each run's grading from its runs-table row, and the
    runs not graded."""
    skipped = runs.filter(~pl.col("graded").fill_null(False)).select(
        "run_id", "suite_id", "suite_version"
    )
    if skipped.height:
        tasks = pl.concat([tasks, skipped], how="diagonal_relaxed")
    gradings = {row["run_id"]: paired_verdict.Grading.of_run(row) for row in runs.to_dicts()}
    return tasks, gradings, skipped["run_id"].to_list()


def _one_run(side: _Side, suite_id: str, chosen: str | None) -> str:
    runs = side.runs_of(suite_id)
    if chosen is not None and chosen in runs:
        return chosen
    if len(runs) > 1:
        listed = ", ".join(printable(r) for r in runs)
        raise InputError(
            f"{side.describe()} holds {len(runs)} runs of suite {printable(suite_id)} "
            f"({listed}); choose one with --{side.name}-run-id"
        )
    return runs[0]


def _check_named_run(side: _Side, chosen: str | None) -> None:
    """A run named with --base-run-id/--cand-run-id must be on its side (a usage error
    otherwise)."""
    held = sorted(side.tasks["run_id"].unique().to_list())
    if chosen is None or chosen in held:
        return
    listed = ", ".join(printable(r) for r in held[:10]) + (", ..." if len(held) > 10 else "")
    raise InputError(
        f"--{side.name}-run-id {printable(chosen)}: no such run on {side.describe()} "
        f"(it holds {len(held)}: {listed})"
    )


def _nothing_compared(base: _Side, cand: _Side, run_filter: event_files.RunFilter | None) -> str:
    """Why no suite could be compared (E-65: that is exit 2, never a pass)."""
    matching = " matching the run filters" if run_filter is not None else ""
    for side in (base, cand):
        if side.tasks.height == 0:
            return f"{side.describe()} holds no eval run{matching}; nothing was compared"

    def listed(side: _Side) -> str:
        return ", ".join(printable(s) for s in sorted(side.suites))

    return (
        f"no suite is present on both sides ({base.describe()}: {listed(base)}; "
        f"{cand.describe()}: {listed(cand)}); nothing was compared"
    )


def _same_run(suite_id: str, pairs: Sequence[tuple[_Side, str]]) -> str | None:
    """Why the two runs of a suite are one run, when they are (E-114): the same events (their
    fingerprints agree, whatever the run ids and file names), or the same run id read from the
    same files. Compared with itself a run can only be unchanged, so a gate would always pass.
    A run that was not graded compares nothing whatever it is paired with (E-65), which is the
    reason given then."""
    (base, base_id), (cand, cand_id) = pairs
    if base_id in base.not_graded or cand_id in cand.not_graded:
        return None
    fingerprint = base.fingerprints.get(base_id)
    if fingerprint is not None and fingerprint == cand.fingerprints.get(cand_id):
        what = "are one run" if base_id == cand_id else "hold the same events"
    elif base_id == cand_id and base.files and base.files == cand.files:
        what = "are one run, read from the same files"
    else:
        return None
    return (
        f"suite {printable(suite_id)}: baseline {printable(base_id)} and candidate "
        f"{printable(cand_id)} {what}"
    )


def _mixed(suite_id: str, pairs: Sequence[tuple[_Side, str]]) -> str | None:
    """How the two runs of a suite were graded, when not alike (D-4, E-67)."""
    (base, base_id), (cand, cand_id) = pairs
    base_grading, cand_grading = base.gradings[base_id], cand.gradings[cand_id]
    if base_grading.alike(cand_grading):
        return None
    return (
        f"suite {printable(suite_id)}: baseline {printable(base_id)} "
        f"{base_grading.describe()}; candidate {printable(cand_id)} {cand_grading.describe()}"
    )


def regress_paths(
    base: Paths,
    cand: Paths,
    suites: Paths = (),
    *,
    options: paired_verdict.RegressOptions | None = None,
    grade_options: GradeOptions | None = None,
    base_run: str | None = None,
    cand_run: str | None = None,
    run_filter: event_files.RunFilter | None = None,
    allow_mixed: bool = False,
    allow_same_run: bool = False,
    resources: Resources | None = None,
    argument_values: bool = False,
) -> RegressionReport:
    """`evalbatch regress`: pair the runs of each suite found on both sides and give a verdict
    per suite (§5). Each side is one path (a `str` or a `Path`) or a list of them: event logs,
    graded here against `suites` (read and checked once for both sides), or a `tasks.parquet`
    that `evalbatch run` wrote. With `argument_values`, each suite's changes keep the argument
    values behind its changed argument paths (E-141; event logs on both sides only), which the
    Markdown and JUnit files then show; the verdicts are the same either way.

    Fails closed (E-65..E-67, E-114): nothing compared, a named run that is not on its side
    or was not compared, (unless `allow_same_run`) a run paired with itself or with a copy of
    its events, and (unless `allow_mixed`) runs graded differently are errors.

    Raises:
        InputError: a side holds several runs of one suite and none was chosen; a side holds no
            eval run; no suite is on both sides; `base_run`/`cand_run` names no run of its side,
            or one that was not compared; a suite named by the filter was not compared; two
            paired runs were graded differently; the two runs of a suite are one run; a tasks
            table is not usable.
        SuiteError: a suite file is not JSON or names no suiteId/version (§1.3).
    """
    options = options or paired_verdict.RegressOptions()
    shared = _Suites(as_paths(suites))
    read: named_runs.ClaimsRead = {}  # one log named on both sides is looked over once
    base_named = named_runs.NamedRun(base_run, read) if base_run is not None else None
    cand_named = named_runs.NamedRun(cand_run, read) if cand_run is not None else None
    base_side = _side(
        "base", as_paths(base), shared, grade_options, run_filter, resources, base_named
    )
    cand_side = _side(
        "cand", as_paths(cand), shared, grade_options, run_filter, resources, cand_named
    )
    _check_named_run(base_side, base_run)
    _check_named_run(cand_side, cand_run)
    common = sorted(base_side.suites & cand_side.suites)
    if not common:
        raise InputError(_nothing_compared(base_side, cand_side, run_filter))
    chosen = {
        suite_id: (
            (base_side, _one_run(base_side, suite_id, base_run)),
            (cand_side, _one_run(cand_side, suite_id, cand_run)),
        )
        for suite_id in common
    }
    _check_all_compared(base_side, cand_side, chosen, base_run, cand_run, run_filter)
    same = [m for suite_id in common if (m := _same_run(suite_id, chosen[suite_id]))]
    if same and not allow_same_run:
        listed = "".join(f"\n  {line}" for line in same)
        raise InputError(
            "the baseline and the candidate are the same run, so the comparison could only say "
            "unchanged and the gate would always pass (compare anyway with --allow-same-run):"
            f"{listed}"
        )
    mixed = [m for suite_id in common if (m := _mixed(suite_id, chosen[suite_id]))]
    if mixed and not allow_mixed:
        listed = "".join(f"\n  {line}" for line in mixed)
        raise InputError(
            "the sides were graded differently, so their scores are not comparable (compare "
            f"them anyway with --allow-mixed):{listed}"
        )
    comparisons = [
        _compare_suite(suite_id, chosen[suite_id], options, argument_values=argument_values)
        for suite_id in common
    ]
    unpaired = [("base", s) for s in sorted(base_side.suites - cand_side.suites)] + [
        ("cand", s) for s in sorted(cand_side.suites - base_side.suites)
    ]
    report = RegressionReport(comparisons=comparisons, unpaired=unpaired)
    _gate_as_family(report, chosen, options)
    for comparison in report.comparisons:
        if options.plan or (
            comparison.verdict == "inconclusive" and comparison.p_value is not None
        ):
            report.plans[comparison.suite_id] = _plan(
                chosen[comparison.suite_id],
                options,
                paired_verdict.plan_alpha(options, report.family_size),
            )
    return report


def _gate_as_family(
    report: RegressionReport,
    chosen: Mapping[str, Sequence[tuple[_Side, str]]],
    options: paired_verdict.RegressOptions,
) -> None:
    """Several suites tested at once (E-98): each compared again under the `Family`
    `paired_verdict.family_of` gives it; with one tested suite, nothing changes."""
    size, families = paired_verdict.family_of(report.comparisons, options)
    if size:
        report.correction, report.family_size = options.correction, size
    for i, family in families.items():
        alone = report.comparisons[i]
        again = _compare_suite(alone.suite_id, chosen[alone.suite_id], options, family, False)
        # the tasks and their changes are the suite's whatever its family: kept, not redone
        again.changes, again.changes_unknown = alone.changes, alone.changes_unknown
        report.comparisons[i] = again


def _plan(
    pairs: Sequence[tuple[_Side, str]], options: paired_verdict.RegressOptions, alpha: float
) -> planning.Plan:
    """One suite's plan (E-99) from its paired differences and its trials."""
    (base, base_id), (cand, cand_id) = pairs
    column = paired_verdict.score_column(options)
    base_rows = base.tasks.filter(pl.col("run_id") == base_id)
    cand_rows = cand.tasks.filter(pl.col("run_id") == cand_id)
    paired = paired_verdict.paired_tasks(base_rows, cand_rows)
    diffs = paired_verdict.paired_differences(paired, column)
    spread = _trial_spread(paired["task_id"], (base, base_id), (cand, cand_id), column)
    return planning.plan(diffs, spread, alpha=alpha, power=options.power, effect=options.effect)


def _trial_spread(
    task_ids: pl.Series, base: tuple[_Side, str], cand: tuple[_Side, str], column: str
) -> planning.TrialSpread | None:
    """Each paired task's counted trials and their variance on each side, or None when a side's
    trials are not at hand or miss a paired task."""
    stats = []
    for side, run_id in (base, cand):
        if side.trials is None:
            return None
        per_task = (
            side.trials.filter(pl.col("run_id") == run_id)
            .group_by("task_id")
            .agg(pl.len().alias("trials"), pl.col(column).var(ddof=1).alias("variance"))
        )
        joined = pl.DataFrame({"task_id": task_ids}).join(per_task, on="task_id", how="left")
        if joined["trials"].null_count():
            return None
        stats.append(
            (
                joined["trials"].to_numpy().astype(float),
                joined["variance"].fill_null(np.nan).to_numpy().astype(float),
            )
        )
    (base_trials, base_variance), (cand_trials, cand_variance) = stats
    return planning.TrialSpread(base_trials, base_variance, cand_trials, cand_variance)


def _check_all_compared(
    base: _Side,
    cand: _Side,
    chosen: Mapping[str, Sequence[tuple[_Side, str]]],
    base_run: str | None,
    cand_run: str | None,
    run_filter: event_files.RunFilter | None,
) -> None:
    """What the user named must have been compared: a run chosen with --base-run-id/--cand-run-id
    and a suite chosen with --suite-id (E-65/E-66: naming it makes it required)."""
    compared_runs = {run for pairs in chosen.values() for _, run in pairs}
    for side, named in ((base, base_run), (cand, cand_run)):
        if named is not None and named not in compared_runs:
            suite = side.tasks.filter(pl.col("run_id") == named)["suite_id"].first()
            other = cand if side is base else base
            raise InputError(
                f"--{side.name}-run-id {printable(named)} (suite {printable(suite)}) was not "
                f"compared: {other.describe()} holds no run of that suite"
            )
    for suite_id in run_filter.suites if run_filter is not None else ():
        if suite_id not in chosen:
            missing = [s.describe() for s in (base, cand) if suite_id not in s.suites]
            raise InputError(
                f"--suite-id {printable(suite_id)} was not compared: no run of it on "
                f"{' nor on '.join(missing)}"
            )


def _compare_suite(
    suite_id: str,
    pairs: Sequence[tuple[_Side, str]],
    options: paired_verdict.RegressOptions,
    family: paired_verdict.Family | None = None,
    with_changes: bool = True,
    argument_values: bool = False,
) -> paired_verdict.Comparison:
    """One suite's verdict (under its `family` when gated with others), with each side's run,
    grading and mean scores beside it, and the changes behind it (with the argument values
    behind them when asked, E-141)."""
    (base, base_id), (cand, cand_id) = pairs
    base_rows = base.tasks.filter(pl.col("run_id") == base_id)
    cand_rows = cand.tasks.filter(pl.col("run_id") == cand_id)
    if base_id in base.not_graded or cand_id in cand.not_graded:
        comparison = paired_verdict.Comparison.not_graded(
            options,
            suite_id=suite_id,
            suite_version=str(cand_rows["suite_version"][0]),
            base_run=base_id,
            cand_run=cand_id,
            why=base.not_graded.get(base_id) or cand.not_graded.get(cand_id),
        )
    else:
        comparison = paired_verdict.compare(
            base_rows,
            cand_rows,
            options,
            suite_id=suite_id,
            base_run=base_id,
            cand_run=cand_id,
            family=family,
        )
    comparison.baseline = paired_verdict.SideSummary.of(
        base_rows, base_id, base.gradings[base_id], base.names.get(base_id)
    )
    comparison.candidate = paired_verdict.SideSummary.of(
        cand_rows, cand_id, cand.gradings[cand_id], cand.names.get(cand_id)
    )
    if with_changes and comparison.paired_task_count and not comparison.nothing_compared:
        if _has_behaviour(base.trials) and _has_behaviour(cand.trials):
            assert base.trials is not None and cand.trials is not None
            comparison.changes = behaviour_changes.behaviour_changes(
                paired_verdict.paired_tasks(base_rows, cand_rows),
                paired_verdict.score_column(options),
                base.trials,
                base_id,
                cand.trials,
                cand_id,
                None if base.calls is None or cand.calls is None else (base.calls, cand.calls),
                argument_values,
            )
        else:
            missing = [s.describe() for s in (base, cand) if not _has_behaviour(s.trials)]
            comparison.changes_unknown = (
                f"no trials table with every column behaviour changes read on "
                f"{' nor on '.join(missing)}"
            )
    return comparison
