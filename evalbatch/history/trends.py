"""Flaky tasks and the night a task broke, read from a series frame (E-97, E-151).

A series frame has one row per series, task and night: the `night` (its 0-based position in the
task's series, time order), its counted `trials` n and `passed_trials` c (summed over the night's
runs: `evalbatch.history.series.pooled`). A task's series is its rows of one (suite_id, agent_id,
model, task_id) — the last two null where series are not split by them, or absent — in night
order; a night with no counted trial carries no outcome and is left out of both measures. The
permutation test's draws are over nights, so its cost grows with the nights of a series, not
with the runs pooled into them.

**The night it broke** (`change_points`). For a split before night τ, with C_b passes of N_b
trials before it and C_a of N_a from it on (C of N in all), the likelihood-ratio (G) statistic of
"one pass rate before τ, another from τ on" against "one rate throughout" is

    G(τ) = 2·[ℓ(C_b, N_b) + ℓ(C_a, N_a) − ℓ(C, N)],   ℓ(c, n) = c·ln(c/n) + (n−c)·ln(1 − c/n)

(0·ln 0 = 0). The scan takes S = max over τ of G(τ); its τ is the first night after the change,
and the shift is C_a/N_a − C_b/N_b. S is 0 exactly when every night has the same pass rate, so
identical runs are never flagged (checked on the integer counts, not on rounded floats).

Its p-value is that of a permutation test of the maximum: under the null hypothesis — every trial
of the series passes with one probability p, independently, which is what a stable or a flaky
task is — all arrangements of the C passes among the N trials are equally likely whatever p is,
so each night's count follows the multivariate hypergeometric law. With S_1..S_B the maxima of B
arrangements drawn from it, p = (1 + #{b: S_b ≥ S}) / (B + 1). That p-value is valid for a whole
series at once, at every length, rate and number of trials per night: the maximum over splits is
in the null distribution itself, so no per-split correction is needed (a Bonferroni bound over
the T − 1 overlapping splits would hold too, but is stricter than it need be, the more so the
longer the series), and nothing rests on an asymptotic χ² law that small counts do not follow.
A series is `changed` when p ≤ alpha, so its false-alarm rate is at most alpha
(bench/calibrate_trends.py measures it). The draws are seeded by `seed` and the series' own
counts, so a series gets the same answer wherever it appears. The scan finds the single most
likely change; a task that broke and was fixed later shows its larger step, or none.

**Flaky tasks** (`flaky_tasks`). A task is measured on its runs since its last change (all its
runs when it has none), where it passes with one probability p; the estimate is the pooled rate
p̂ = C/N. Its flakiness is

    flakiness = 2·p·(1 − p) = pass@2 − pass^2

the chance that two trials of one run disagree: for independent trials pass@k = 1 − (1 − p)^k
and pass^k = p^k, and at k = 2 their gap is 2p(1 − p). It is 0 for a task that always or never
passes, and at most 0.5 (at p = 0.5). Its interval is the image under 2p(1 − p) of the Wilson
interval of p at level 1 − alpha (the function rises to 0.5 at p = 0.5 and falls after it, so an
interval of p holding 0.5 gives an upper bound of 0.5). A task is `broken` when its series has a
change, `flaky` otherwise when its outcomes are mixed (0 < C < N, within runs or across them),
`stable` when every trial had one outcome, and `no-trials` when it has no counted trial at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy.special import xlogy
from scipy.stats import binomtest

from evalbatch.errors import InputError
from evalbatch.text import printable

Status = Literal["broken", "flaky", "stable", "no-trials"]

#: what keeps one task's series apart from another's; a frame without the middle two is read
#: as having them null (one series per suite and task)
SERIES_KEY = ("suite_id", "agent_id", "model", "task_id")
#: the optional key columns
_KEY_OPTIONAL = ("agent_id", "model")

#: the series-frame columns the measures read, with their types (what `series` builds)
SERIES_COLUMNS: dict[str, pl.DataType] = {
    "suite_id": pl.String(),
    "task_id": pl.String(),
    "run_id": pl.String(),
    "started_at": pl.Datetime("us", "UTC"),
    "night": pl.Int64(),
    "trials": pl.Int64(),
    "passed_trials": pl.Int64(),
}

#: one row per task series: its likeliest split (named even when not significant, so a near miss
#: shows) and whether it is a change at `alpha`, surest first
CHANGE_SCHEMA: dict[str, pl.DataType] = {
    "suite_id": pl.String(),
    "agent_id": pl.String(),
    "model": pl.String(),
    "task_id": pl.String(),
    "runs": pl.Int64(),  # nights of the series with at least one counted trial
    "changed": pl.Boolean(),  # p_value ≤ alpha
    "night": pl.Int64(),  # the first night after the split (null: no split differs)
    "night_label": pl.String(),  # that night's directory, day or run, when the frame names it
    "run_id": pl.String(),  # the first run after the split (its night's earliest)
    "started_at": pl.Datetime("us", "UTC"),
    "rate_before": pl.Float64(),  # C_b / N_b
    "rate_after": pl.Float64(),  # C_a / N_a
    "shift": pl.Float64(),  # rate_after − rate_before
    "statistic": pl.Float64(),  # S, the largest G over the splits
    "p_value": pl.Float64(),  # the permutation p-value of S (1 when S = 0)
}

#: one row per task series, worst flakiness first
FLAKY_SCHEMA: dict[str, pl.DataType] = {
    "suite_id": pl.String(),
    "agent_id": pl.String(),
    "model": pl.String(),
    "task_id": pl.String(),
    "status": pl.String(),  # broken | flaky | stable | no-trials
    "since_night": pl.Int64(),  # first night measured: 0, or the change's night when broken
    "runs": pl.Int64(),  # nights measured (with at least one counted trial)
    "mixed_runs": pl.Int64(),  # of those, nights whose trials did not all agree (0 < c < n)
    "trials": pl.Int64(),  # N, counted trials measured
    "passed_trials": pl.Int64(),  # C
    "pass_rate": pl.Float64(),  # p̂ = C / N
    "pass_rate_low": pl.Float64(),  # Wilson interval of p at level 1 − alpha
    "pass_rate_high": pl.Float64(),
    "flakiness": pl.Float64(),  # 2·p̂·(1 − p̂)
    "flakiness_low": pl.Float64(),  # the Wilson interval's image under 2p(1 − p)
    "flakiness_high": pl.Float64(),
}


@dataclass(frozen=True)
class _Series:
    """One task's nights that hold counted trials, in night order."""

    key: tuple[str | None, ...]  # SERIES_KEY's values
    nights: list[int]
    labels: list[str | None]
    run_ids: list[str]
    started_at: list[datetime | None]
    trials: np.ndarray  # n per night, all > 0
    passed: np.ndarray  # c per night


def _check_level(alpha: float, permutations: int) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, not {permutations!r}")


def _series_faults(frame: pl.DataFrame) -> list[str]:
    """What makes a series frame unusable, one message per fault naming the column and the
    suite, task and run of the first row at fault (ids only): a missing or mistyped column, a
    null count, a count below 0, more passes than trials, a night given twice."""
    faults: list[str] = []
    for name, dtype in SERIES_COLUMNS.items():
        found = frame.schema.get(name)
        if found is None:
            faults.append(f"column {name}: missing")
        elif name == "started_at" and isinstance(found, pl.Datetime):
            continue  # any time unit or zone orders the same
        elif found != dtype:
            faults.append(f"column {name}: type {found}, expected {dtype}")
    if faults:
        return faults
    key_columns = [c for c in SERIES_KEY if c in frame.columns]
    for name in _KEY_OPTIONAL:
        found = frame.schema.get(name)
        if found is not None and found != pl.String():
            faults.append(f"column {name}: type {found}, expected {pl.String()}")
    if faults:
        return faults
    checks: dict[str, pl.Expr] = {
        "suite_id, task_id, run_id or night: null": pl.any_horizontal(
            pl.col("suite_id", "task_id", "run_id", "night").is_null()
        ),
        "trials or passed_trials: null": pl.any_horizontal(
            pl.col("trials", "passed_trials").is_null()
        ),
        "trials or passed_trials: below 0": (pl.col("trials") < 0) | (pl.col("passed_trials") < 0),
        "passed_trials: more than trials": pl.col("passed_trials") > pl.col("trials"),
        "night: given twice for one task": pl.struct(*key_columns, "night").is_duplicated(),
    }
    for fault, condition in checks.items():
        bad = frame.filter(condition.fill_null(False))
        if bad.height:
            first = bad.row(0, named=True)
            faults.append(
                f"column {fault} in {bad.height} row(s) (first: suite "
                f"{printable(first['suite_id'])}, task {printable(first['task_id'])}, "
                f"run {printable(first['run_id'])})"
            )
    return faults


def _keyed(series: pl.DataFrame) -> pl.DataFrame:
    """The frame with every `SERIES_KEY` column (a missing one null) and `night_label`."""
    missing = [c for c in (*_KEY_OPTIONAL, "night_label") if c not in series.columns]
    return series.with_columns(pl.lit(None, pl.String).alias(c) for c in missing)


def _sort_key(key: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
    return tuple((value is not None, value or "") for value in key)


def _task_series(series: pl.DataFrame) -> list[_Series]:
    """Each task's series, refused as a whole when the frame is faulty (fail closed: a count
    that cannot be right would grade a task stable or broken on nothing)."""
    faults = _series_faults(series)
    if faults:
        raise InputError("series frame unusable: " + "; ".join(faults))
    series = _keyed(series)
    counted = series.filter(pl.col("trials") > 0).sort(*SERIES_KEY, "night", nulls_last=True)
    by_task = counted.partition_by(*SERIES_KEY, as_dict=True)
    empty = counted.clear()
    found: list[_Series] = []
    for key in series.select(SERIES_KEY).unique().iter_rows():
        rows = by_task.get(key, empty)
        found.append(
            _Series(
                key=key,
                nights=rows["night"].to_list(),
                labels=rows["night_label"].to_list(),
                run_ids=rows["run_id"].to_list(),
                started_at=rows["started_at"].to_list(),
                trials=rows["trials"].to_numpy().astype(np.int64),
                passed=rows["passed_trials"].to_numpy().astype(np.int64),
            )
        )
    return sorted(found, key=lambda s: _sort_key(s.key))


def _log_likelihood(passed: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """ℓ(c, n) = c·ln(c/n) + (n−c)·ln(1 − c/n), with 0·ln 0 = 0; n > 0."""
    failed = trials - passed
    return xlogy(passed, passed / trials) + xlogy(failed, failed / trials)


def split_statistics(passed: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """G(τ) for every split τ = 1..T−1 of each row of night counts (shape (…, T)): the
    likelihood-ratio statistic of a change before night τ (module docstring). A split whose two
    sides have the same rate is exactly 0, decided on the integers."""
    passed_before = np.cumsum(passed, axis=-1)[..., :-1]
    trials_before = np.cumsum(trials)[:-1]
    passed_total = passed.sum(axis=-1, keepdims=True)
    trials_total = int(trials.sum())
    passed_after = passed_total - passed_before
    trials_after = trials_total - trials_before
    statistic = 2 * (
        _log_likelihood(passed_before, trials_before)
        + _log_likelihood(passed_after, trials_after)
        - _log_likelihood(passed_total, np.full_like(passed_total, trials_total))
    )
    same_rate = passed_before * trials_after == passed_after * trials_before
    return np.where(same_rate, 0.0, np.maximum(statistic, 0.0))


def _permutation_p_value(task: _Series, statistic: float, permutations: int, seed: int) -> float:
    """(1 + #{b: S_b ≥ S}) / (B + 1) over B arrangements of the series' passes among its trials
    (multivariate hypergeometric: every trial passes with one probability under the null). A
    maximum within a relative 1e-9 of S counts as reaching it, so float noise never lowers p."""
    rng = np.random.default_rng([seed, *task.trials.tolist(), *task.passed.tolist()])
    arranged = rng.multivariate_hypergeometric(
        task.trials, int(task.passed.sum()), size=permutations
    )
    maxima = split_statistics(arranged, task.trials).max(axis=1)
    reached = int(np.count_nonzero(maxima >= statistic * (1 - 1e-9)))
    return (1 + reached) / (permutations + 1)


def _change_row(task: _Series, alpha: float, permutations: int, seed: int) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(CHANGE_SCHEMA)
    row.update(
        zip(SERIES_KEY, task.key, strict=True),
        runs=len(task.nights),
        changed=False,
        statistic=0.0,
        p_value=1.0,
    )
    if len(task.nights) < 2:
        return row
    statistics = split_statistics(task.passed, task.trials)
    split = int(np.argmax(statistics))  # the first of equal maxima
    statistic = float(statistics[split])
    if statistic == 0.0:  # every night has the same rate: no change, whatever the draws
        return row
    after = split + 1
    rate_before = task.passed[:after].sum() / task.trials[:after].sum()
    rate_after = task.passed[after:].sum() / task.trials[after:].sum()
    p_value = _permutation_p_value(task, statistic, permutations, seed)
    row.update(
        changed=p_value <= alpha,
        night=task.nights[after],
        night_label=task.labels[after],
        run_id=task.run_ids[after],
        started_at=task.started_at[after],
        rate_before=float(rate_before),
        rate_after=float(rate_after),
        shift=float(rate_after - rate_before),
        statistic=statistic,
        p_value=p_value,
    )
    return row


def _change_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=CHANGE_SCHEMA, orient="row").sort(
        "p_value", *SERIES_KEY, nulls_last=True
    )


def change_points(
    series: pl.DataFrame, alpha: float = 0.05, *, permutations: int = 999, seed: int = 0
) -> pl.DataFrame:
    """The most likely change in each task's pass rate and whether it is one at `alpha`
    (E-97): one row per (suite_id, task_id), columns `CHANGE_SCHEMA`, surest first.

    The p-value is a seeded permutation test of the largest split statistic (module docstring),
    so a series' false-alarm rate is at most `alpha`; a series whose nights all have the same
    pass rate has p 1 and no split. Raises `InputError` naming the rows of a faulty frame."""
    _check_level(alpha, permutations)
    return _change_frame(
        [_change_row(task, alpha, permutations, seed) for task in _task_series(series)]
    )


def _flakiness_interval(low: float, high: float) -> tuple[float, float]:
    """The image of the interval [low, high] of p under 2p(1 − p), which peaks at p = 0.5."""
    ends = (2 * low * (1 - low), 2 * high * (1 - high))
    return min(ends), (0.5 if low <= 0.5 <= high else max(ends))


def _flaky_row(task: _Series, change: dict[str, Any], alpha: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(FLAKY_SCHEMA)
    row.update(zip(SERIES_KEY, task.key, strict=True))
    if not task.nights:
        return row | {
            "status": "no-trials",
            "runs": 0,
            "mixed_runs": 0,
            "trials": 0,
            "passed_trials": 0,
        }
    first = task.nights.index(change["night"]) if change["changed"] else 0
    trials, passed = task.trials[first:], task.passed[first:]
    total, passes = int(trials.sum()), int(passed.sum())
    status: Status = "broken" if change["changed"] else "flaky" if 0 < passes < total else "stable"
    interval = binomtest(passes, total).proportion_ci(1 - alpha, method="wilson")
    rate_low, rate_high = float(interval.low), float(interval.high)
    rate = passes / total
    flakiness_low, flakiness_high = _flakiness_interval(rate_low, rate_high)
    return row | {
        "status": status,
        "since_night": task.nights[first],
        "runs": len(trials),
        "mixed_runs": int(np.count_nonzero((passed > 0) & (passed < trials))),
        "trials": total,
        "passed_trials": passes,
        "pass_rate": rate,
        "pass_rate_low": rate_low,
        "pass_rate_high": rate_high,
        "flakiness": 2 * rate * (1 - rate),
        "flakiness_low": flakiness_low,
        "flakiness_high": flakiness_high,
    }


def flaky_tasks(
    series: pl.DataFrame, alpha: float = 0.05, *, permutations: int = 999, seed: int = 0
) -> pl.DataFrame:
    """Each task's status (broken, flaky, stable, no-trials) and flakiness with its interval,
    measured since its last change (E-97): one row per (suite_id, task_id), columns
    `FLAKY_SCHEMA`, worst flakiness first (then the surer, by the interval's lower end).

    `alpha` is both the change test's level (`change_points`, same `permutations` and `seed`)
    and one minus the intervals' confidence. Raises `InputError` naming the rows of a faulty
    frame."""
    return trends(series, alpha, permutations=permutations, seed=seed)[0]


def trends(
    series: pl.DataFrame, alpha: float = 0.05, *, permutations: int = 999, seed: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`flaky_tasks(series, ...)` and `change_points(series, ...)` from one change test per task
    (the permutation test is the costly part; both read its result)."""
    _check_level(alpha, permutations)
    tasks = _task_series(series)
    changes = [_change_row(task, alpha, permutations, seed) for task in tasks]
    flaky = pl.DataFrame(
        [_flaky_row(task, change, alpha) for task, change in zip(tasks, changes, strict=True)],
        schema=FLAKY_SCHEMA,
        orient="row",
    ).sort(
        ["flakiness", "flakiness_low", *SERIES_KEY],
        descending=[True, True, False, False, False, False],
        nulls_last=True,
    )
    return flaky, _change_frame(changes)
