"""Flaky tasks and the night a task broke (E-97), on series frames built here
with the columns of the shared series interface (one row per suite, task and run).

Expected values are computed by hand in the docstrings: the G statistic of a split, the exact
permutation p-value by enumeration, Wilson intervals from their closed form, 2p(1 − p).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalbatch.errors import InputError
from evalbatch.history import trends
from evalbatch.history.trends import change_points, flaky_tasks
from tests.helpers import ROOT, run_python

SUITE = "acme.test.evals.basic"
NIGHT0 = datetime(2026, 11, 2, 2, 0, tzinfo=UTC)

#: z of a two-sided 95% interval, for the hand-computed Wilson bounds
Z95 = 1.959963984540054


def series_frame(tasks: Mapping[str, Sequence[tuple[int, int]]]) -> pl.DataFrame:
    """A series frame: each task's nights as (passed, trials), run `run-<night>` one day apart;
    every column of the shared interface, the ones the measures do not read filled plainly."""
    rows = []
    for task_id, nights in tasks.items():
        for night, (passed, trials) in enumerate(nights):
            rate = passed / trials if trials else None
            rows.append(
                {
                    "suite_id": SUITE,
                    "suite_version": "1.0.0",
                    "task_id": task_id,
                    "run_id": f"run-{night}",
                    "started_at": NIGHT0 + timedelta(days=night),
                    "night": night,
                    "trials": trials,
                    "passed_trials": passed,
                    "pass_rate": rate,
                    "score": rate,
                    "gating_score": rate,
                    "pass_hat_k": None,
                    "cost_usd": None,
                    "input_tokens": None,
                    "output_tokens": None,
                }
            )
    schema = {
        "suite_id": pl.String,
        "suite_version": pl.String,
        "task_id": pl.String,
        "run_id": pl.String,
        "started_at": pl.Datetime("us", "UTC"),
        "night": pl.Int64,
        "trials": pl.Int64,
        "passed_trials": pl.Int64,
        "pass_rate": pl.Float64,
        "score": pl.Float64,
        "gating_score": pl.Float64,
        "pass_hat_k": pl.Float64,
        "cost_usd": pl.Float64,
        "input_tokens": pl.Int64,
        "output_tokens": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema)


def generated(rates: Sequence[float], trials: int, seed: int) -> list[tuple[int, int]]:
    """One task's nights drawn with the given pass probability per night (seeded)."""
    rng = np.random.default_rng(seed)
    return [(int(rng.binomial(trials, rate)), trials) for rate in rates]


def one(frame: pl.DataFrame, task_id: str) -> dict[str, Any]:
    rows = frame.filter(pl.col("task_id") == task_id).to_dicts()
    assert len(rows) == 1
    return rows[0]


def wilson(passed: int, trials: int) -> tuple[float, float]:
    """The Wilson 95% interval from its closed form."""
    p = passed / trials
    scale = 1 + Z95**2 / trials
    centre = (p + Z95**2 / (2 * trials)) / scale
    half = Z95 / scale * math.sqrt(p * (1 - p) / trials + Z95**2 / (4 * trials**2))
    return centre - half, centre + half


# --- the split statistic and its p-value (E-97) ---------------------------------------------------

STEP = [(3, 3), (3, 3), (0, 3)]  # 6 of 9 passed; the 3 failures all on the last night


def test_split_statistic_hand_computed() -> None:
    """E-97: G(τ) = 2[ℓ(before) + ℓ(after) − ℓ(all)]. For 3/3, 3/3, 0/3 (6 of 9):
    ℓ(all) = 6 ln(2/3) + 3 ln(1/3); split before night 1: ℓ(3/3) = 0, ℓ(3/6) = 6 ln(1/2);
    split before night 2: both sides pure, ℓ = 0, so G = −2 ℓ(all) = 11.4573."""
    whole = 6 * math.log(2 / 3) + 3 * math.log(1 / 3)
    passed, trials = np.array([3, 3, 0]), np.array([3, 3, 3])
    got = trends.split_statistics(passed, trials)
    assert got == pytest.approx([2 * (6 * math.log(0.5) - whole), -2 * whole], rel=1e-12)
    assert got[1] == pytest.approx(11.457255, abs=1e-6)


def test_split_statistic_is_exactly_zero_where_rates_agree() -> None:
    """E-97: a split with the same rate on both sides (1/10 | 3/30, 7/70) is 0, not
    the 1.4e-14 the logarithms leave, so it can never look like a change."""
    got = trends.split_statistics(np.array([1, 3, 7]), np.array([10, 30, 70]))
    assert got.tolist() == [0.0, 0.0]


def test_p_value_is_the_exact_permutation_p_value() -> None:
    """E-97: the p-value is P(max G ≥ observed) over arrangements of the 6 passes
    among the 9 trials. Enumerated here: of the C(9, 3) = 84 placements of the 3 failures, only
    the 2 that put all three on the first or the last night reach G = 11.457 (all on the middle
    night splits 3/3 | 3/6), so p = 2/84. The function's Monte-Carlo estimate (9,999 seeded
    draws) is within 3 standard errors of it."""
    passed_total, trials = 6, np.array([3, 3, 3])
    observed = trends.split_statistics(np.array([3, 3, 0]), trials).max()
    reached = 0
    placements = list(itertools.combinations(range(9), 3))
    for failures in placements:
        counts = np.array([3 - sum(1 for f in failures if f // 3 == night) for night in range(3)])
        assert counts.sum() == passed_total
        reached += trends.split_statistics(counts, trials).max() >= observed - 1e-9
    assert (reached, len(placements)) == (2, 84)
    row = one(change_points(series_frame({"step": STEP}), permutations=9999), "step")
    exact = 2 / 84
    assert abs(row["p_value"] - exact) < 3 * math.sqrt(exact * (1 - exact) / 9999)
    assert row["changed"] is True


def test_change_reports_the_first_run_after_it_and_the_shift() -> None:
    """E-97: 3/3 on nights 0-5 then 1/3 on nights 6-9: the change is found at night 6
    (run-6, its start time), rate 1 → 1/3, shift −2/3, with p ≤ alpha."""
    row = one(change_points(series_frame({"t": [(3, 3)] * 6 + [(1, 3)] * 4})), "t")
    assert row["changed"] is True
    assert (row["night"], row["run_id"]) == (6, "run-6")
    assert row["started_at"] == NIGHT0 + timedelta(days=6)
    assert row["rate_before"] == 1.0
    assert row["rate_after"] == pytest.approx(1 / 3)
    assert row["shift"] == pytest.approx(-2 / 3)
    assert 0 < row["p_value"] <= 0.05


@pytest.mark.parametrize(
    "nights",
    [
        [(3, 3)] * 12,  # always passes
        [(0, 3)] * 12,  # always fails
        [(2, 3)] * 30,  # the same mixed count every night
        [(1, 10), (3, 30), (7, 70), (2, 20)],  # one rate over different trial counts
        [(5, 5), (0, 0), (5, 5)],  # a night without counted trials in between
    ],
    ids=["all-pass", "all-fail", "same-mixed", "same-rate", "gap"],
)
def test_identical_runs_are_never_flagged(nights: list[tuple[int, int]]) -> None:
    """E-97 ("never flagging a series whose runs are identical"): p is exactly 1 and no
    split is named, at any alpha below 1."""
    row = one(change_points(series_frame({"t": nights}), alpha=0.99), "t")
    assert (row["changed"], row["p_value"], row["statistic"]) == (False, 1.0, 0.0)
    assert row["night"] is None and row["shift"] is None


@pytest.mark.parametrize("drop_night", [3, 10, 17])
def test_a_planted_drop_is_found_at_its_night_with_its_size(drop_night: int) -> None:
    """E-97: a drop from 0.9 to 0.3 planted on night N of 20 (5 trials a night,
    seeded) is found at N ± 1, with a shift within 0.15 of −0.6; its task is `broken`."""
    rates = [0.9] * drop_night + [0.3] * (20 - drop_night)
    frame = series_frame({"drop": generated(rates, 5, seed=drop_night)})
    row = one(change_points(frame), "drop")
    assert row["changed"] is True
    assert abs(row["night"] - drop_night) <= 1
    assert row["shift"] == pytest.approx(-0.6, abs=0.15)
    assert row["rate_before"] == pytest.approx(0.9, abs=0.1)
    assert row["rate_after"] == pytest.approx(0.3, abs=0.15)
    flaky = one(flaky_tasks(frame), "drop")
    assert (flaky["status"], flaky["since_night"]) == ("broken", row["night"])


def test_a_flaky_task_is_flaky_not_broken() -> None:
    """E-97: a task passing with probability 0.5 every night (20 nights of 4
    trials, seeded) shows no change and is reported `flaky`, with flakiness near 0.5."""
    frame = series_frame({"coin": generated([0.5] * 20, 4, seed=7)})
    change = one(change_points(frame), "coin")
    assert change["changed"] is False
    row = one(flaky_tasks(frame), "coin")
    assert row["status"] == "flaky"
    assert row["flakiness"] == pytest.approx(0.5, abs=0.02)
    assert row["mixed_runs"] >= 10


def test_mixed_outcomes_across_runs_without_a_change_are_flaky() -> None:
    """E-97: runs that each agree within themselves but differ from night to night
    with no trend (3/3, 0/3 alternating) are flaky, not broken and not stable."""
    row = one(flaky_tasks(series_frame({"t": [(3, 3), (0, 3)] * 4})), "t")
    assert (row["status"], row["mixed_runs"], row["flakiness"]) == ("flaky", 0, 0.5)


def test_the_p_value_depends_on_the_counts_only() -> None:
    """E-97: the draws are seeded by the series' counts, so a series gets the same
    p-value under any task id, next to any other tasks, on every call."""
    alone = one(change_points(series_frame({"a": STEP})), "a")
    together = change_points(series_frame({"z": STEP, "b": [(1, 2)] * 5, "c": STEP[::-1]}))
    assert one(together, "z")["p_value"] == alone["p_value"]
    assert change_points(series_frame({"a": STEP})).equals(change_points(series_frame({"a": STEP})))


def test_changes_are_listed_surest_first() -> None:
    """E-97: one row per task, the smallest p-value first."""
    frame = series_frame({"same": [(2, 2)] * 8, "step": STEP, "big": [(4, 4)] * 4 + [(0, 4)] * 4})
    got = change_points(frame)
    assert got["task_id"].to_list() == ["big", "step", "same"]
    assert got.schema == pl.Schema(trends.CHANGE_SCHEMA)


# --- flakiness (E-97) -----------------------------------------------------------------------------


def test_flakiness_hand_computed() -> None:
    """E-97: 2/4, 1/4, 3/4 pool to p̂ = 6/12 = 0.5, flakiness 2·0.5·0.5 = 0.5; the
    Wilson 95% interval of 6/12 is [0.253782, 0.746218], which holds 0.5, so flakiness lies in
    [2·0.253782·0.746218, 0.5] = [0.378753, 0.5]."""
    row = one(flaky_tasks(series_frame({"t": [(2, 4), (1, 4), (3, 4)]})), "t")
    assert (row["status"], row["runs"], row["mixed_runs"]) == ("flaky", 3, 3)
    assert (row["trials"], row["passed_trials"], row["pass_rate"]) == (12, 6, 0.5)
    assert row["flakiness"] == 0.5
    assert (row["pass_rate_low"], row["pass_rate_high"]) == pytest.approx(wilson(6, 12), abs=1e-9)
    assert row["pass_rate_low"] == pytest.approx(0.253782, abs=1e-6)
    assert (row["flakiness_low"], row["flakiness_high"]) == pytest.approx((0.378753, 0.5), abs=1e-6)


@pytest.mark.parametrize(
    ("passed", "trials", "flakiness", "low", "high"),
    [
        # 3/4: p̂ 0.75, 2·0.75·0.25 = 0.375; Wilson [0.300642, 0.954413] holds 0.5, so the high
        # end is 0.5 and the low end the smaller of 2p(1 − p) at the two ends
        (3, 4, 0.375, 0.087018, 0.5),
        # 19/20: p̂ 0.95, 0.095; Wilson [0.763869, 0.991119] lies above 0.5: 2p(1 − p) falls
        # there, so its ends swap
        (19, 20, 0.095, 0.017605, 0.360747),
        # 20/20: 0; Wilson low end n/(n + z²) = 0.838875, high end 1
        (20, 20, 0.0, 0.0, 0.270328),
    ],
)
def test_flakiness_interval_hand_computed(
    passed: int, trials: int, flakiness: float, low: float, high: float
) -> None:
    """E-97: the interval is the image of p's Wilson interval under 2p(1 − p)."""
    row = one(flaky_tasks(series_frame({"t": [(passed, trials)]})), "t")
    assert row["flakiness"] == pytest.approx(flakiness, abs=1e-12)
    assert (row["flakiness_low"], row["flakiness_high"]) == pytest.approx((low, high), abs=1e-6)
    assert (row["pass_rate_low"], row["pass_rate_high"]) == pytest.approx(
        wilson(passed, trials), abs=1e-9
    )


def test_a_stable_task_is_stable_with_an_interval() -> None:
    """E-97: a task that passed every trial of every night is `stable`
    and never flagged; its flakiness is 0, but 40 trials do not prove it is 0 (upper end > 0)."""
    frame = series_frame({"t": [(4, 4)] * 10})
    row = one(flaky_tasks(frame), "t")
    assert (row["status"], row["flakiness"], row["flakiness_low"]) == ("stable", 0.0, 0.0)
    assert 0 < row["flakiness_high"] < 0.2
    assert one(change_points(frame), "t")["changed"] is False


def test_a_broken_task_is_measured_since_its_change() -> None:
    """E-97: a task that passed 3/3 on nights 0-5 and then 1/3, 2/3, 1/3, 2/3 is
    `broken`, and its flakiness is that of nights 6-9 (6 of 12: 0.5), not of the whole series."""
    row = one(flaky_tasks(series_frame({"t": [(3, 3)] * 6 + [(1, 3), (2, 3)] * 2})), "t")
    assert (row["status"], row["since_night"], row["runs"]) == ("broken", 6, 4)
    assert (row["trials"], row["passed_trials"], row["flakiness"]) == (12, 6, 0.5)


def test_flaky_tasks_are_listed_worst_first() -> None:
    """E-97: by flakiness, highest first; at equal flakiness the surer (higher lower
    end: more trials) first; a task without counted trials last."""
    frame = series_frame(
        {
            "stable": [(3, 3)] * 4,
            "half-few": [(1, 2)],
            "none": [(0, 0)] * 3,
            "half-many": [(2, 4)] * 5,
            "mostly": [(3, 4)] * 5,
        }
    )
    got = flaky_tasks(frame)
    assert got["task_id"].to_list() == ["half-many", "half-few", "mostly", "stable", "none"]
    assert got.schema == pl.Schema(trends.FLAKY_SCHEMA)


def test_a_task_without_counted_trials_is_not_stable() -> None:
    """Fail closed (common rules): a task with no counted trial has no outcome, so it is
    `no-trials` with no measure, never `stable`."""
    row = one(flaky_tasks(series_frame({"t": [(0, 0)] * 3})), "t")
    assert (row["status"], row["trials"], row["flakiness"]) == ("no-trials", 0, None)
    change = one(change_points(series_frame({"t": [(0, 0)] * 3})), "t")
    assert (change["runs"], change["changed"]) == (0, False)


def test_an_empty_series_gives_empty_tables() -> None:
    empty = series_frame({})
    assert change_points(empty).schema == pl.Schema(trends.CHANGE_SCHEMA)
    assert flaky_tasks(empty).height == 0


# --- a faulty frame is refused (fail closed) ------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("passed_trials", 5, "column passed_trials: more than trials in 1 row(s)"),
        ("trials", None, "column trials or passed_trials: null in 1 row(s)"),
        ("passed_trials", -1, "column trials or passed_trials: below 0 in 1 row(s)"),
        ("night", 0, "column night: given twice for one task in 2 row(s)"),
    ],
    ids=["more-passes", "null", "negative", "repeated-night"],
)
def test_a_faulty_frame_is_refused_naming_the_rows(
    column: str, value: int | None, expected: str
) -> None:
    """Fail closed (common rules): a count that cannot be right refuses the whole frame, naming
    the column, the fault, the number of rows and the first row's suite, task and run."""
    frame = series_frame({"t": [(1, 3), (2, 3)]})
    faulty = frame.with_columns(
        pl.when(pl.col("night") == 1)
        .then(pl.lit(value, dtype=pl.Int64))
        .otherwise(pl.col(column))
        .alias(column)
    )
    for measure in (change_points, flaky_tasks):
        with pytest.raises(InputError) as raised:
            measure(faulty)
        assert expected in str(raised.value)
        assert f"suite {SUITE}, task t, run run-" in str(raised.value)


def test_a_frame_without_the_counts_is_refused() -> None:
    frame = series_frame({"t": [(1, 3)]}).drop("passed_trials")
    with pytest.raises(InputError, match="column passed_trials: missing"):
        flaky_tasks(frame)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, math.nan])
def test_alpha_outside_zero_one_is_refused(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        change_points(series_frame({"t": STEP}), alpha=alpha)


def test_the_docs_example_prints_what_it_shows() -> None:
    """docs/history.md "Flaky tasks and change points": the worked example on generated nights
    prints exactly the output shown under it (the drop found on night 8, the coin flip flaky)."""
    page = (ROOT / "docs" / "history.md").read_text(encoding="utf-8")
    section = page[page.index("\n## Flaky tasks and change points\n") :]
    code, shown = re.findall(r"```python\n(.*?)```\n```\n(.*?)```", section, flags=re.S)[0]
    printed = run_python(code)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == shown
