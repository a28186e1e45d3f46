"""The series frame: one row per (suite, task, run), in the time order of the runs (E-96),
built from the graded tables `evalbatch run` wrote into one or more output directories.

Each directory is read whole and checked as `evalbatch.connect` reads it
(`outputs.outdir.read_graded`: this schema version's columns and types, summaries.jsonl holding
exactly the graded runs, an incremental run's manifest), so a directory of another version is
refused with one line. Nothing
is regraded: every number is the tables' own, except `pass_hat_k` (element n of
`pass_hat_k_by_k`) and the tokens (summed over the task's counted trials).

A run found in several directories (a nightly directory and that night's own, say) counts once:
the copy in the first directory given is kept, as a suite file's first copy in path order is
(`History.duplicates` names the others, `History.disagreeing` those whose rows differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from evalbatch.errors import InputError
from evalbatch.outputs import outdir, output_format

#: the series frame's columns and types (shared by the trends of `evalbatch.history.trends`)
SERIES_SCHEMA = pl.Schema(
    {
        "suite_id": pl.String(),
        "suite_version": pl.String(),
        "task_id": pl.String(),
        "run_id": pl.String(),
        "started_at": output_format.TIMESTAMP,
        "night": pl.Int64(),
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

#: the series' order: by suite and task, then time (`night`)
SERIES_ORDER = ("suite_id", "suite_version", "task_id", "night")


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


def series_of(runs: pl.DataFrame, tasks: pl.DataFrame, trials: pl.DataFrame) -> pl.DataFrame:
    """The series frame of one set of graded tables (`runs`, `tasks`, `trials` as
    `output_format` types them), sorted by `SERIES_ORDER`.

    `trials`/`passed_trials` are the task's n and c (D-12: a trial the log lacks counts, failed);
    `pass_hat_k` is pass^k at k = n; the tokens are summed over the task's counted trials, null
    when the log holds none of them. A run without a start time comes after those with one, by
    run_id; `night` numbers the runs of each (suite_id, task_id) from 0.
    """
    tokens = (
        trials.filter(pl.col("counted"))
        .group_by("run_id", "task_id")
        .agg(pl.col("input_tokens").sum(), pl.col("output_tokens").sum())
    )
    started = runs.select("run_id", started_at=pl.col("eval_started_at"))
    frame = (
        tasks.join(started, on="run_id", how="left")
        .join(tokens, on=["run_id", "task_id"], how="left")
        .select(
            "suite_id",
            "suite_version",
            "task_id",
            "run_id",
            "started_at",
            trials=pl.col("n"),
            passed_trials=pl.col("passed_count"),
            pass_rate=pl.when(pl.col("n") > 0).then(pl.col("passed_count") / pl.col("n")),
            score=pl.col("score"),
            gating_score=pl.col("gating_score"),
            pass_hat_k=pl.col("pass_hat_k_by_k").list.get(pl.col("n") - 1, null_on_oob=True),
            cost_usd=pl.col("cost_usd"),
            input_tokens=pl.col("input_tokens"),
            output_tokens=pl.col("output_tokens"),
        )
    )
    return numbered(frame)


def numbered(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame`'s rows (the series' columns, `night` aside or not) in time order within each
    (suite_id, task_id), `night` numbered from 0, with the series' columns and types, sorted by
    `SERIES_ORDER`. Time order: the eval's start, runs without one last, then run_id."""
    return (
        frame.sort("suite_id", "task_id", "started_at", "run_id", nulls_last=True)
        .with_columns(night=pl.int_range(pl.len(), dtype=pl.Int64).over("suite_id", "task_id"))
        .select(list(SERIES_SCHEMA))
        .cast(SERIES_SCHEMA)
        .sort(SERIES_ORDER)
    )


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


def read_history(
    out_dirs: str | Path | Sequence[str | Path],
    suite_id: str | Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    run_ids: Sequence[str] = (),
) -> History:
    """The series of the runs graded into `out_dirs` that the filters choose, and what was left
    out: directories that cannot be read whole are skipped (named with their reason), a run in
    several directories counts once (the first directory's copy).

    `suite_id` is one suiteId or several (any of them); `since` (inclusive) and `until`
    (exclusive) bound the eval's start; `run_ids` are globs (any of them), as the run filters'.
    """

    paths = [Path(out_dirs)] if isinstance(out_dirs, str | Path) else list(map(Path, out_dirs))
    # a directory given twice is read once (a shell glob and a path naming the same one)
    first = {path.resolve(): path for path in reversed(paths)}
    given = [first[key] for key in dict.fromkeys(path.resolve() for path in paths)]
    history = History(series=pl.DataFrame(schema=SERIES_SCHEMA))
    kept_in: dict[str, Path] = {}
    parts: list[pl.DataFrame] = []
    for out in given:
        try:
            frames, _ = outdir.read_graded(out)
        except InputError as exc:
            history.skipped.append((out, str(exc)))
            continue
        history.read.append(out)
        runs = _chosen(frames["runs"], _suite_ids(suite_id), since, until, run_ids)
        rows = series_of(
            runs,
            frames["tasks"].filter(pl.col("run_id").is_in(runs["run_id"].implode())),
            frames["trials"],
        )
        fresh: list[str] = []
        for run_id, graded in runs.select("run_id", "graded").iter_rows():
            if run_id in kept_in:
                duplicate = Duplicate(run_id, kept_in[run_id], out)
                history.duplicates.append(duplicate)
                if not _same_rows(parts, run_id, rows):
                    history.disagreeing.append(duplicate)
                continue
            kept_in[run_id] = out
            fresh.append(run_id)
            history.not_graded += not graded
        parts.append(rows.filter(pl.col("run_id").is_in(fresh)))
    history.series = numbered(pl.concat([history.series, *parts]))
    return history


def _same_rows(parts: Sequence[pl.DataFrame], run_id: str, rows: pl.DataFrame) -> bool:
    """Whether a run's rows in `rows` are those kept from an earlier directory (`night`, the
    position among the runs of each directory, aside)."""

    def of(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(pl.col("run_id") == run_id).drop("night").sort("task_id")

    kept = pl.concat([of(part) for part in parts])
    return kept.equals(of(rows))


def series(
    out_dirs: str | Path | Sequence[str | Path],
    suite_id: str | Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    run_ids: Sequence[str] = (),
) -> pl.DataFrame:
    """The series frame of the runs graded into `out_dirs` (one directory or several, one per
    night or one holding many nights) that the filters choose; see `read_history`.

    Raises:
        InputError: a directory cannot be read whole (not an output directory, a file missing
            or of another schema version): nothing is left out silently.
    """
    history = read_history(out_dirs, suite_id, since, until, run_ids=run_ids)
    if history.skipped:
        raise InputError(history.skipped[0][1])
    return history.series
