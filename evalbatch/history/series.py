"""The series frame: one row, a point, per series, task and night, in time order (E-96,
E-151), built from the graded tables `evalbatch run` wrote into one or more output directories.

A series is a suite's task as run by one target agent on one evaluated model (`SERIES_BY`
chooses coarser keys), so two agents graded on one suite every night are two series, never one
interleaved; a night is an output directory given, a calendar day, or a run (`NIGHTS_BY`), and
the runs of one series in one night are pooled into one point (their trials and passed trials
summed), so a night of a thousand runs adds trials to a point, not a thousand points.

Each directory is checked as `evalbatch.connect` checks it (`outputs.outdir.load_tables`: this
schema version's columns and types, summaries.jsonl holding exactly the graded runs, an
incremental run's manifest), so a directory of another version is refused with one line; only
the columns the series are made of are read, and each directory's rows are summed by night
before the next is read, so thirty nights of ten thousand runs are never all in memory at once.
Nothing is regraded: every number is the tables' own, pooled, except `pass_hat_k` (element n of
`pass_hat_k_by_k`, averaged over a night's runs) and the tokens (summed over the task's counted
trials).

A run found in several directories (a nightly directory and that night's own, say) counts once:
the copy in the first directory given is kept, as a suite file's first copy in path order is
(`History.duplicates` names the others, `History.disagreeing` those whose rows differ).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from evalbatch.errors import InputError
from evalbatch.inputs import event_files, inspect_cache
from evalbatch.inputs.path_forms import Paths
from evalbatch.options import NIGHTS_BY, SERIES_BY, NightsBy, SeriesBy
from evalbatch.outputs import outdir, output_format
from evalbatch.pipeline.write import write_outputs

#: the series frame's columns and types (shared by the trends of `evalbatch.history.trends`):
#: one row, a point, per series, task and night
SERIES_SCHEMA = pl.Schema(
    {
        "suite_id": pl.String(),
        "suite_version": pl.String(),
        "agent_id": pl.String(),
        "model": pl.String(),
        "task_id": pl.String(),
        "night": pl.Int64(),
        "night_label": pl.String(),
        "runs": pl.Int64(),
        "run_id": pl.String(),
        "started_at": output_format.TIMESTAMP,
        "trials": pl.Int64(),
        "passed_trials": pl.Int64(),
        "pass_rate": pl.Float64(),
        "score": pl.Float64(),
        "gating_score": pl.Float64(),
        "pass_hat_k": pl.Float64(),
        "cost_usd": pl.Float64(),
        "input_tokens": pl.Int64(),
        "output_tokens": pl.Int64(),
    }
)

#: what keeps one series apart from another (null where the series are not split by it)
SERIES_KEY = ("suite_id", "agent_id", "model", "task_id")
#: the series' order: by series, then time (`night`)
SERIES_ORDER = (*SERIES_KEY, "night")


@dataclass(frozen=True)
class Duplicate:
    """A run found in more than one directory: the copy kept and the one left out."""

    run_id: str
    kept: Path
    left_out: Path


@dataclass
class History:
    """What `read_history` read: the series, and what it left out and why."""

    series: pl.DataFrame
    #: directories that could not be read whole: (directory, the one-line reason)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: runs found again in a later directory: that copy is left out
    duplicates: list[Duplicate] = field(default_factory=list)
    #: the duplicates whose rows differ from the copy kept (graded otherwise)
    disagreeing: list[Duplicate] = field(default_factory=list)
    #: eval runs that pass the filters but were not graded (no task rows: see problems.parquet)
    not_graded: int = 0
    #: the directories read whole
    read: list[Path] = field(default_factory=list)
    #: what the series are kept apart by and what a night is, as applied (`auto` resolved)
    series_by: SeriesBy = "agent-model"
    nights_by: NightsBy = "dir"


#: one row per (run, task) before nights are pooled (`run_rows`)
_RUN_ROWS = pl.Schema(
    {
        "suite_id": pl.String(),
        "suite_version": pl.String(),
        "agent_id": pl.String(),
        "model": pl.String(),
        "task_id": pl.String(),
        "run_id": pl.String(),
        "started_at": output_format.TIMESTAMP,
        "directory": pl.Int64(),
        "trials": pl.Int64(),
        "passed_trials": pl.Int64(),
        "score": pl.Float64(),
        "gating_score": pl.Float64(),
        "pass_hat_k": pl.Float64(),
        "cost_usd": pl.Float64(),
        "input_tokens": pl.Int64(),
        "output_tokens": pl.Int64(),
    }
)


def run_rows(
    runs: pl.DataFrame, tasks: pl.DataFrame, trials: pl.DataFrame, directory: int = 0
) -> pl.DataFrame:
    """One row per (run, task) of one set of graded tables (`runs`, `tasks`, `trials` as
    `output_format` types them): the run's target agent and evaluated model (an Inspect log's
    model, else the model class, E-146), its start, the task's n and c (D-12: a trial the log
    lacks counts, failed), scores, pass^k at k = n, cost and the tokens of its counted trials
    (null when the log holds none); `directory` numbers the directory it was read from."""
    tokens = (
        trials.filter(pl.col("counted"))
        .group_by("run_id", "task_id")
        .agg(pl.col("input_tokens").sum(), pl.col("output_tokens").sum())
    )
    about = runs.select(
        "run_id",
        agent_id=pl.col("target_agent_id"),
        model=pl.coalesce("model", "evaluated_model_class"),
        started_at=pl.col("eval_started_at"),
    )
    return (
        tasks.join(about, on="run_id", how="left")
        .join(tokens, on=["run_id", "task_id"], how="left")
        .select(
            "suite_id",
            "suite_version",
            "agent_id",
            "model",
            "task_id",
            "run_id",
            "started_at",
            directory=pl.lit(directory, pl.Int64),
            trials=pl.col("n"),
            passed_trials=pl.col("passed_count"),
            score=pl.col("score"),
            gating_score=pl.col("gating_score"),
            pass_hat_k=pl.col("pass_hat_k_by_k").list.get(pl.col("n") - 1, null_on_oob=True),
            cost_usd=pl.col("cost_usd"),
            input_tokens=pl.col("input_tokens"),
            output_tokens=pl.col("output_tokens"),
        )
        .cast(_RUN_ROWS)
    )


#: the night of a run without a start time, where nights are days and there is no directory
UNDATED = "undated"


def with_nights(rows: pl.DataFrame, nights_by: NightsBy, label: str) -> pl.DataFrame:
    """The run rows of one directory (named `label`) with each run's `night_label`: the
    directory (`dir`), the UTC day of the eval's start (`day`; a run without one: the
    directory), or the run (`run`). `auto` is `dir`, unless the directory's runs started
    on more than one UTC day: then it holds several nights, and they are its days (a batch
    that ran past midnight is then two nights, never two nights one)."""
    day = pl.col("started_at").dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d")
    if nights_by == "auto":
        several = rows.select(day.drop_nulls().n_unique()).item() > 1
        nights_by = "day" if several else "dir"
    if nights_by == "dir":
        night = pl.lit(label, pl.String)
    elif nights_by == "day":
        night = pl.coalesce(day, pl.lit(label, pl.String))
    else:
        night = pl.col("run_id")
    return rows.with_columns(night_label=night)


#: what a night's partial sums (`_partial`) are added up by, per series and night
_SUMS = ("trials", "passed_trials", "score", "gating_score", "pass_hat_k", "cost_usd",
         "input_tokens", "output_tokens")  # fmt: skip


def _partial(rows: pl.DataFrame, series_by: SeriesBy) -> pl.DataFrame:
    """Run rows with their nights (`run_rows`, `with_nights`) summed by series key, task and
    night: each sum with its count of known values, the earliest run and start, the runs. Two
    directories' partials of one night add up (`_combined`), so a directory is read, summed and
    let go (the cost of many nights is their columns, not all their rows at once)."""
    keyed = rows.with_columns(
        agent_id=pl.col("agent_id") if series_by != "suite" else pl.lit(None, pl.String),
        model=pl.col("model") if series_by == "agent-model" else pl.lit(None, pl.String),
    ).sort("started_at", "run_id", nulls_last=True)
    return keyed.group_by(*SERIES_KEY, "night_label").agg(
        pl.col("suite_version", "run_id", "started_at").first(),
        pl.col("directory").min(),
        runs=pl.len().cast(pl.Int64),
        **{f"{c}_sum": pl.col(c).sum() for c in _SUMS},
        **{f"{c}_known": pl.col(c).count() for c in _SUMS},
    )


def _combined(partials: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The series frame of `_partial` sums, sorted by `SERIES_ORDER` (E-151): per point the
    trials and passed trials summed, score, gating score and pass^k averaged over the night's
    runs, cost and tokens summed (null when no run knows them), the earliest run's id and start;
    points in time order within a series (the earliest start, none last; then the directory's
    place and the night's label), `night` numbering them from 0."""
    every = pl.concat(partials).sort("started_at", "directory", nulls_last=True)
    summed = every.group_by(*SERIES_KEY, "night_label").agg(
        pl.col("suite_version", "run_id", "started_at").first(),
        pl.col("directory").min(),
        pl.col("runs").sum(),
        *(pl.col(f"{c}_sum").sum() for c in _SUMS),
        *(pl.col(f"{c}_known").sum() for c in _SUMS),
    )

    def mean(column: str) -> pl.Expr:  # null, never NaN, when no run knows it
        known = pl.col(f"{column}_known")
        return pl.when(known > 0).then(pl.col(f"{column}_sum") / known)

    def total(column: str) -> pl.Expr:
        return pl.when(pl.col(f"{column}_known") > 0).then(pl.col(f"{column}_sum"))

    return (
        summed.with_columns(
            trials=pl.col("trials_sum"),
            passed_trials=pl.col("passed_trials_sum"),
            score=mean("score"),
            gating_score=mean("gating_score"),
            pass_hat_k=mean("pass_hat_k"),
            cost_usd=total("cost_usd"),
            input_tokens=total("input_tokens"),
            output_tokens=total("output_tokens"),
        )
        .with_columns(
            pass_rate=pl.when(pl.col("trials") > 0).then(pl.col("passed_trials") / pl.col("trials"))
        )
        .sort(*SERIES_KEY, "started_at", "directory", "night_label", nulls_last=True)
        .with_columns(night=pl.int_range(pl.len(), dtype=pl.Int64).over(SERIES_KEY))
        .select(list(SERIES_SCHEMA))
        .cast(SERIES_SCHEMA)
        .sort(SERIES_ORDER, nulls_last=True)
    )


def pooled(rows: pl.DataFrame, series_by: SeriesBy = "agent-model") -> pl.DataFrame:
    """The series frame of run rows with their nights (`run_rows`, `with_nights`), sorted by
    `SERIES_ORDER` (E-151): the runs of one series key and task in one night are one point,
    their trials and passed trials summed (so several runs in a night add trials, not nights),
    their scores and pass^k averaged, cost and tokens summed; `runs` counts them, `run_id` and
    `started_at` are the earliest run's; `night` numbers the points of a series in time order."""
    return _combined([_partial(rows, series_by)])


def series_of(
    runs: pl.DataFrame,
    tasks: pl.DataFrame,
    trials: pl.DataFrame,
    series_by: SeriesBy = "agent-model",
) -> pl.DataFrame:
    """The series frame of one set of graded tables, its nights the UTC days of the runs'
    starts (runs without one: the night `undated`), sorted by `SERIES_ORDER`: what
    `evalbatch.connect` holds as `history`, the same from an output directory as from the
    events it was graded from; see `pooled`."""
    rows = with_nights(run_rows(runs, tasks, trials), "day", UNDATED)
    return pooled(rows, series_by)


def _matching(run_ids: Sequence[str], globs: Sequence[str]) -> set[str]:
    """The run ids matching any glob, as the run filters match them (E-63: DuckDB `GLOB`)."""
    if not globs or not run_ids:
        return set(run_ids)
    where = " OR ".join("run_id GLOB ?" for _ in globs)
    query = f"SELECT run_id FROM unnest(?::VARCHAR[]) AS t(run_id) WHERE {where}"
    with duckdb.connect() as con:
        return {run_id for (run_id,) in con.execute(query, [list(run_ids), *globs]).fetchall()}


def _chosen(
    runs: pl.DataFrame,
    suite_ids: Sequence[str],
    since: datetime | None,
    until: datetime | None,
    run_ids: Sequence[str],
) -> pl.DataFrame:
    """The runs the filters choose (E-63: suite, start in [since, until), run-id globs); with a
    time bound, a run without a start time is not chosen."""
    chosen = runs
    if suite_ids:
        chosen = chosen.filter(pl.col("suite_id").is_in(list(suite_ids)))
    if since is not None:
        chosen = chosen.filter(pl.col("eval_started_at") >= since)
    if until is not None:
        chosen = chosen.filter(pl.col("eval_started_at") < until)
    if run_ids:
        chosen = chosen.filter(
            pl.col("run_id").is_in(_matching(chosen["run_id"].to_list(), run_ids))
        )
    return chosen


def _suite_ids(suite_id: str | Sequence[str] | None) -> tuple[str, ...]:
    if suite_id is None:
        return ()
    return (suite_id,) if isinstance(suite_id, str) else tuple(suite_id)


def holds_event_logs(path: Path) -> bool:
    """Whether `path` is event logs rather than an output directory: a Parquet file or an
    Inspect log (E-144), or a directory that is no output directory and holds some."""
    if path.is_file():
        return path.name.endswith(".parquet") or inspect_cache.is_inspect_log(path)
    if not path.is_dir() or outdir.output_dir(path):
        return False
    return bool(event_files.expand_paths([str(path)]))


@contextmanager
def graded_night(path: Path, suites: Paths = ()) -> Iterator[Path]:
    """An output directory for `path`: itself, or, when it holds event logs (Parquet, Inspect
    logs or an eval set: `holds_event_logs`), those graded as `evalbatch run` grades them
    (`suites`, else each run from its host record, D-4) into a scratch directory removed after
    (E-151). A path that is neither is given back, for `load_tables` to name what is wrong."""
    if not holds_event_logs(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="evalbatch-night-") as scratch:
        out = Path(scratch) / "out"
        write_outputs([str(path)], out, suites, allow_empty=True)
        yield out


def read_history(
    out_dirs: str | Path | Sequence[str | Path],
    suite_id: str | Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    run_ids: Sequence[str] = (),
    series_by: SeriesBy = "agent-model",
    nights_by: NightsBy = "auto",
    suites: Paths = (),
) -> History:
    """The series of the runs graded into `out_dirs` that the filters choose, pooled by night
    (`pooled`, E-151), and what was left out: directories that cannot be read whole are skipped
    (named with their reason), a run in several directories counts once (the first
    directory's copy, and its night).

    `suite_id` is one suiteId or several (any of them); `since` (inclusive) and `until`
    (exclusive) bound the eval's start; `run_ids` are globs (any of them), as the run filters'.
    `series_by` and `nights_by` as `SERIES_BY` and `NIGHTS_BY` say (`auto`: a night per
    directory, or per day in a directory whose runs started on several days: `with_nights`).
    A path that holds event logs instead (Parquet files or Inspect logs: `graded_night`) is a
    night graded here, with `suites` (else from each run's host record).
    """
    if series_by not in SERIES_BY:
        raise ValueError(f"series_by must be one of {', '.join(SERIES_BY)}, not {series_by!r}")
    if nights_by not in NIGHTS_BY:
        raise ValueError(f"nights_by must be one of {', '.join(NIGHTS_BY)}, not {nights_by!r}")
    paths = [Path(out_dirs)] if isinstance(out_dirs, str | Path) else list(map(Path, out_dirs))
    # a directory given twice is read once (a shell glob and a path naming the same one)
    first = {path.resolve(): path for path in reversed(paths)}
    given = [first[key] for key in dict.fromkeys(path.resolve() for path in paths)]
    history = History(series=pl.DataFrame(schema=SERIES_SCHEMA), series_by=series_by)
    history.nights_by = nights_by
    kept: dict[str, tuple[Path, int]] = {}  # run id -> the directory kept, its rows' fingerprint
    partials: list[pl.DataFrame] = []
    for out in given:
        try:
            with graded_night(out, suites) as graded:
                frames = outdir.load_tables(graded, TABLE_COLUMNS)
        except InputError as exc:
            history.skipped.append((out, str(exc)))
            continue
        runs = _chosen(frames["runs"], _suite_ids(suite_id), since, until, run_ids)
        rows = run_rows(
            runs,
            frames["tasks"].filter(pl.col("run_id").is_in(runs["run_id"].implode())),
            frames["trials"],
            directory=len(history.read),
        )
        history.read.append(out)
        prints = dict(_fingerprints(rows).iter_rows())
        fresh: list[str] = []
        for run_id, was_graded in runs.select("run_id", "graded").iter_rows():
            if run_id in kept:
                kept_from, fingerprint = kept[run_id]
                duplicate = Duplicate(run_id, kept_from, out)
                history.duplicates.append(duplicate)
                if prints.get(run_id) != fingerprint:
                    history.disagreeing.append(duplicate)
                continue
            kept[run_id] = (out, prints.get(run_id, 0))
            fresh.append(run_id)
            history.not_graded += not was_graded
        rows = rows.filter(pl.col("run_id").is_in(fresh))
        partials.append(_partial(with_nights(rows, nights_by, str(out)), series_by))
    if partials:
        history.series = _combined(partials)
    return history


#: the columns of the graded tables the series are made of (`run_rows`, `_chosen`)
TABLE_COLUMNS = {
    "runs": [
        "run_id",
        "graded",
        "suite_id",
        "eval_started_at",
        "target_agent_id",
        "model",
        "evaluated_model_class",
    ],
    "tasks": [
        "run_id",
        "suite_id",
        "suite_version",
        "task_id",
        "n",
        "passed_count",
        "score",
        "gating_score",
        "pass_hat_k_by_k",
        "cost_usd",
    ],
    "trials": ["run_id", "task_id", "counted", "input_tokens", "output_tokens"],
}


def _fingerprints(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run of `rows` (`run_rows`), a fingerprint of its rows (the directory aside): two
    copies of a run graded alike have the same one (its tasks are distinct, so the rows' hashes
    combine in any order)."""
    values = [c for c in rows.columns if c != "directory"]
    return rows.group_by("run_id").agg(pl.struct(values).hash(seed=0).bitwise_xor())


def series(
    out_dirs: str | Path | Sequence[str | Path],
    suite_id: str | Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    run_ids: Sequence[str] = (),
    series_by: SeriesBy = "agent-model",
    nights_by: NightsBy = "auto",
    suites: Paths = (),
) -> pl.DataFrame:
    """The series frame of the runs graded into `out_dirs` (one directory or several, one per
    night or one holding many nights) that the filters choose; see `read_history`.

    Raises:
        InputError: a directory cannot be read whole (not an output directory, a file missing
            or of another schema version): nothing is left out silently.
    """
    history = read_history(
        out_dirs,
        suite_id,
        since,
        until,
        run_ids=run_ids,
        series_by=series_by,
        nights_by=nights_by,
        suites=suites,
    )
    if history.skipped:
        raise InputError(history.skipped[0][1])
    return history.series
