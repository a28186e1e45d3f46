"""Calibration of the change-point test and the flaky/broken split (E-97).

    .venv/bin/python bench/calibrate_trends.py                  # RESULTS.md (300 per configuration)
    .venv/bin/python bench/calibrate_trends.py --per-config 40  # quicker, wider intervals

Not a timed test: it measures how often `evalbatch.history.trends` is right on generated series.

- **Null series** (no change): every trial of every night passes with one probability, for each
  combination of series length (5, 10, 30 nights), pass rate (0.1, 0.5, 0.9, 0.97) and trials per
  night (1, 3, 10). The false-alarm rate is the share of series `change_points` flags at alpha;
  it must stay at or below alpha (printed with its 95% Clopper-Pearson interval, overall and per
  combination). The same series go through `flaky_tasks`: a null series with mixed outcomes must
  come out `flaky` (never `stable`), and `broken` exactly when flagged.
- **Planted drops**: the rate falls from 0.9 by 0.1, 0.2, 0.3 or 0.5 on a night N drawn from the
  middle of the series; the detection rate (flagged at alpha), how often the night found is N ± 1
  among those flagged, and the mean absolute error of the estimated shift.

Everything is seeded (`--seed`); the output is a Markdown report, exit 1 when a criterion fails.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import polars as pl
from scipy.stats import binomtest

from evalbatch.history.trends import change_points, flaky_tasks

LENGTHS = (5, 10, 30)
RATES = (0.1, 0.5, 0.9, 0.97)
TRIALS = (1, 3, 10)
DROPS = (0.1, 0.2, 0.3, 0.5)
DROP_LENGTHS = (10, 30)
DROP_TRIALS = (3, 10)
BASE_RATE = 0.9


@dataclass(frozen=True)
class Planted:
    """One generated series: its id, and where its drop is (None for a null series)."""

    task_id: str
    drop_night: int | None
    drop: float


def frame_of(counts: dict[str, tuple[np.ndarray, int]]) -> pl.DataFrame:
    """A series frame (the shared interface's columns the measures read) from each task's
    per-night pass counts and trials per night."""
    task_ids, nights, passed, trials = [], [], [], []
    for task_id, (per_night, n) in counts.items():
        task_ids += [task_id] * len(per_night)
        nights += list(range(len(per_night)))
        passed += per_night.tolist()
        trials += [n] * len(per_night)
    return pl.DataFrame(
        {
            "suite_id": ["bench.calibration"] * len(task_ids),
            "task_id": task_ids,
            "run_id": [f"run-{night}" for night in nights],
            "started_at": [None] * len(task_ids),
            "night": nights,
            "trials": trials,
            "passed_trials": passed,
        },
        schema={
            "suite_id": pl.String,
            "task_id": pl.String,
            "run_id": pl.String,
            "started_at": pl.Datetime("us", "UTC"),
            "night": pl.Int64,
            "trials": pl.Int64,
            "passed_trials": pl.Int64,
        },
    )


def interval(hits: int, total: int) -> str:
    """A rate with its 95% Clopper-Pearson interval."""
    ci = binomtest(hits, total).proportion_ci(0.95, method="exact")
    return f"{hits / total:.4f} [{ci.low:.4f}, {ci.high:.4f}]"


def null_series(per_config: int, rng: np.random.Generator) -> pl.DataFrame:
    """Null series of every configuration, `per_config` each; task ids name the configuration."""
    counts: dict[str, tuple[np.ndarray, int]] = {}
    for length, rate, n in itertools.product(LENGTHS, RATES, TRIALS):
        for i in range(per_config):
            counts[f"null/{length}/{rate}/{n}/{i}"] = (rng.binomial(n, rate, size=length), n)
    return frame_of(counts)


def drop_series(per_config: int, rng: np.random.Generator) -> tuple[pl.DataFrame, list[Planted]]:
    """Series with a drop from BASE_RATE by each size on a night drawn from 2..T−2."""
    counts: dict[str, tuple[np.ndarray, int]] = {}
    planted: list[Planted] = []
    for length, drop, n in itertools.product(DROP_LENGTHS, DROPS, DROP_TRIALS):
        for i in range(per_config):
            night = int(rng.integers(2, length - 1))
            rates = np.where(np.arange(length) < night, BASE_RATE, BASE_RATE - drop)
            task_id = f"drop/{length}/{drop}/{n}/{i}"
            counts[task_id] = (rng.binomial(n, rates), n)
            planted.append(Planted(task_id, night, drop))
    return frame_of(counts), planted


def config_of(task_id: pl.Expr) -> list[pl.Expr]:
    parts = task_id.str.split("/")
    return [
        parts.list.get(1).cast(pl.Int64).alias("length"),
        parts.list.get(2).cast(pl.Float64).alias("rate"),
        parts.list.get(3).cast(pl.Int64).alias("trials_per_night"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-config", type=int, default=300, help="series per configuration")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    alpha: float = args.alpha
    ok = True

    command = f".venv/bin/python {' '.join(sys.argv)}"
    print(f"Command: `{command}` at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}, alpha {alpha}")
    print()

    started = time.perf_counter()
    nulls = null_series(args.per_config, rng)
    changes = change_points(nulls, alpha).with_columns(config_of(pl.col("task_id")))
    flaky = flaky_tasks(nulls, alpha)
    total = changes.height
    alarms = int(changes["changed"].sum())
    within = alarms / total <= alpha
    ok &= within
    print(f"### Null series: {total:,} ({args.per_config} per configuration)")
    print()
    print(
        f"False-alarm rate of `change_points` at alpha {alpha}: **{interval(alarms, total)}** "
        f"(95% Clopper-Pearson) — {'at or below' if within else 'ABOVE'} alpha"
    )
    print()
    print("| by | value | series | false-alarm rate [95% CI] |")
    print("|---|---:|---:|---|")
    for column in ("length", "rate", "trials_per_night"):
        by = changes.group_by(column).agg(pl.len(), pl.col("changed").sum()).sort(column)
        for value, count, hits in by.iter_rows():
            print(f"| {column} | {value} | {count} | {interval(int(hits), int(count))} |")
    per_config = changes.group_by("length", "rate", "trials_per_night").agg(
        pl.len(), pl.col("changed").sum().alias("hits")
    )
    worst = per_config.sort("hits", descending=True).row(0, named=True)
    level = 1 - 0.05 / per_config.height  # Bonferroni over the configurations checked at once
    above = [
        row
        for row in per_config.iter_rows(named=True)
        if binomtest(row["hits"], row["len"]).proportion_ci(level, method="exact").low > alpha
    ]
    ok &= not above
    print()
    print(
        f"Worst of the {per_config.height} configurations: {worst['length']} nights, rate "
        f"{worst['rate']}, {worst['trials_per_night']} trial(s) a night: "
        f"{interval(worst['hits'], worst['len'])}; configurations whose Clopper-Pearson interval "
        f"at {level:.4f} (95% Bonferroni-adjusted over the {per_config.height}) lies wholly above "
        f"alpha: {len(above)}"
    )
    joined = flaky.join(changes.select("task_id", "changed"), on="task_id")
    status = flaky.group_by("status").len().sort("status")
    broken_matches = bool(((joined["status"] == "broken") == joined["changed"]).all())
    stable_pure = bool(
        flaky.filter(pl.col("status") == "stable")
        .select((pl.col("passed_trials") == 0) | (pl.col("passed_trials") == pl.col("trials")))
        .to_series()
        .all()
    )
    ok &= broken_matches and stable_pure
    print()
    print(
        "`flaky_tasks` on the same series: "
        + ", ".join(f"{s} {c}" for s, c in status.iter_rows())
        + f"; `broken` exactly when flagged: {broken_matches}; every `stable` series had one "
        f"outcome throughout: {stable_pure}"
    )
    print()

    drops, planted = drop_series(args.per_config, rng)
    found = (
        change_points(drops, alpha)
        .join(
            pl.DataFrame(
                {
                    "task_id": [p.task_id for p in planted],
                    "drop_night": [p.drop_night for p in planted],
                    "drop": [p.drop for p in planted],
                }
            ),
            on="task_id",
        )
        .with_columns(config_of(pl.col("task_id")))
    )
    print(f"### Planted drops from {BASE_RATE}: {found.height:,} series")
    print()
    print(
        "| drop | nights | trials a night | detected [95% CI] | night found at N ± 1 "
        "(of detected) | mean abs. error of the shift (detected) |"
    )
    print("|---:|---:|---:|---|---|---:|")
    groups = found.group_by("drop", "length", "trials_per_night").agg(
        pl.len(),
        pl.col("changed").sum().alias("hits"),
        (pl.col("changed") & ((pl.col("night") - pl.col("drop_night")).abs() <= 1))
        .sum()
        .alias("near"),
        (pl.col("shift") + pl.col("drop")).abs().filter(pl.col("changed")).mean().alias("error"),
    )
    for row in groups.sort("drop", "length", "trials_per_night").iter_rows(named=True):
        hits = int(row["hits"])
        near = interval(int(row["near"]), hits) if hits else "—"
        error = f"{row['error']:.3f}" if row["error"] is not None else "—"
        print(
            f"| {row['drop']} | {row['length']} | {row['trials_per_night']} | "
            f"{interval(hits, int(row['len']))} | {near} | {error} |"
        )
    print()
    print(f"Wall time: {time.perf_counter() - started:.1f} s; criteria met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
