"""E-99 and E-98: how many tasks or trials a verdict needs (`regress --plan`, and the
line under an `inconclusive` verdict), and several suites gated at once (`--correction`)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from scipy import optimize, stats

from evalbatch.cli import cli
from evalbatch.reduce import paired_verdict
from evalbatch.reduce import verdict_plan as planning
from tests.test_regress import BASE, CAND, SUITES, task_rows, write_task_table

#: a slow family (regress plans over generated suites):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

# --- hand computations the tests check against ----------------------------------------------------


def t_power(effect_size: float, tasks: int, alpha: float) -> float:
    """The two-sided paired t test's power, from scipy's noncentral t (not statsmodels)."""
    df = tasks - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = effect_size * math.sqrt(tasks)
    far_tail = np.nan_to_num(stats.nct.cdf(-critical, df, shift))  # NaN where it underflows
    return float(stats.nct.sf(critical, df, shift) + far_tail)


def detectable_size(tasks: int, alpha: float, power: float) -> float:
    """e(n) by root-finding on `t_power`."""
    return float(optimize.brentq(lambda e: t_power(e, tasks, alpha) - power, 1e-6, 3))


def diffs_with(mean: float, sd: float, tasks: int) -> np.ndarray:
    """Paired differences with exactly this mean and sample standard deviation."""
    z = np.resize([1.0, -1.0], tasks)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


def spread(tasks: int, trials: int, variance: float) -> planning.TrialSpread:
    counts = np.full(tasks, float(trials))
    variances = np.full(tasks, variance)
    return planning.TrialSpread(counts, variances, counts, variances)


# --- the plan's formula (E-99) --------------------------------------------------------------------


def upper_limit(sd: float, tasks: int) -> float:
    """The spread's one-sided 80% upper confidence limit: s·√((n − 1) / χ²₀.₂(n − 1))."""
    return sd * math.sqrt((tasks - 1) / stats.chi2.ppf(0.2, tasks - 1))


def test_the_spread_upper_limit_by_hand() -> None:
    """E-99 (Browne 1995): 20 tasks of sd 0.1: χ²₀.₂(19) = 13.7158, so the 80%
    upper limit is 0.1·√(19 / 13.7158) = 0.11770; it falls toward s as the tasks grow."""
    assert stats.chi2.ppf(0.2, 19) == pytest.approx(13.7158, abs=1e-4)
    assert planning.spread_upper_limit(0.1, 20) == pytest.approx(0.117697, abs=1e-6)
    limits = [planning.spread_upper_limit(0.1, n) for n in (3, 10, 100, 10_000)]
    assert all(b < a for a, b in itertools.pairwise(limits))
    assert 0.1 < limits[-1] < 0.101


def test_tasks_needed_matches_the_noncentral_t_at_the_upper_limit_by_hand() -> None:
    """E-99 ("the planned trial count, when used, detects the planned effect with at
    least the planned power"): sd 0.1 over 20 tasks, effect 0.05, alpha 0.05, power 0.8. The plan
    sizes to the 80% upper limit 0.11770 (size 0.05 / 0.11770 = 0.4248), not to s (size 0.5,
    which needed 34 tasks and fell short of its power when used): the smallest n whose paired t
    power at 0.4248 reaches 0.8 is 46 (0.8049; 45 give 0.7959)."""
    result = planning.plan(diffs_with(0.0, 0.1, 20), None, alpha=0.05, power=0.8, effect=0.05)
    assert result.sd_upper_limit == pytest.approx(upper_limit(0.1, 20))
    size = 0.05 / upper_limit(0.1, 20)
    assert size == pytest.approx(0.42482, abs=1e-5)
    assert t_power(size, 46, 0.05) >= 0.8 > t_power(size, 45, 0.05)
    assert result.tasks_needed == 46
    assert t_power(0.5, 34, 0.05) >= 0.8 > t_power(0.5, 33, 0.05)  # what s alone would plan
    assert result.report()["sdUpperLimit"] == result.sd_upper_limit
    assert result.report()["sdUpperLimitConfidence"] == 0.8
    assert "needs 46 tasks at the spread's 80% upper limit" in result.line()


def test_a_smaller_comparison_plans_more_tasks_for_the_same_spread() -> None:
    """E-99: the same sd 0.1 measured on 10 tasks is known less well: its upper
    limit 0.1·√(9 / χ²₀.₂(9)) = 0.12934 (size 0.3866) plans 55 tasks (power 0.8039; 54 give
    0.7965), more than the 46 planned from 20."""
    result = planning.plan(diffs_with(0.0, 0.1, 10), None, alpha=0.05, power=0.8, effect=0.05)
    size = 0.05 / upper_limit(0.1, 10)
    assert t_power(size, 55, 0.05) >= 0.8 > t_power(size, 54, 0.05)
    assert result.tasks_needed == 55


def test_minimum_detectable_effect_by_hand() -> None:
    """E-99: the MDE is e(n)·s, e(n) the size the t test detects with n tasks."""
    diffs = diffs_with(-0.02, 0.15, 12)
    result = planning.plan(diffs, None, alpha=0.05, power=0.8, effect=0.05)
    assert result.minimum_detectable_effect == pytest.approx(
        detectable_size(12, 0.05, 0.8) * 0.15, rel=1e-6
    )
    assert result.sd_difference == pytest.approx(0.15)  # the estimate, not its upper limit


def test_the_minimum_detectable_effect_shrinks_with_more_tasks() -> None:
    """E-99: the same spread over more tasks detects a smaller change."""
    effects = [
        planning.plan(
            diffs_with(0.0, 0.2, n), None, alpha=0.05, power=0.8, effect=0.05
        ).minimum_detectable_effect
        for n in (5, 10, 20, 40, 80)
    ]
    assert all(a is not None and b is not None and b < a for a, b in itertools.pairwise(effects))


def test_trials_needed_split_the_spread_into_tasks_and_trials_by_hand() -> None:
    """E-99: s² = 0.04 over 20 tasks with 3 trials a side and trial variance
    w = 0.03: the trials' share is w·(1/3 + 1/3) = 0.02, the tasks' own b = 0.02; t trials give
    b + 2w/t, and the plan asks the smallest t with that ≤ (δ / e(n))²."""
    diffs = diffs_with(0.0, 0.2, 20)
    result = planning.plan(diffs, spread(20, 3, 0.03), alpha=0.05, power=0.8, effect=0.15)
    assert result.within_variance == pytest.approx(0.03)
    assert result.between_variance == pytest.approx(0.02)
    target = (0.15 / detectable_size(20, 0.05, 0.8)) ** 2
    assert target > 0.02
    assert result.trials_per_task_needed == math.ceil(2 * 0.03 / (target - 0.02))
    assert result.trials_per_task == 3.0


def test_no_number_of_trials_beats_the_tasks_own_spread() -> None:
    """E-99: when the tasks differ among themselves by more than the effect allows,
    more trials cannot help: no trial count, and the reason says to add tasks."""
    diffs = diffs_with(0.0, 0.2, 20)
    result = planning.plan(diffs, spread(20, 3, 0.003), alpha=0.05, power=0.8, effect=0.05)
    assert result.trials_per_task_needed is None
    assert result.tasks_needed is not None and result.tasks_needed > 20
    assert "only more tasks" in str(result.reason)


def test_one_trial_per_task_gives_no_trial_count() -> None:
    """E-99: with one trial per task the trial variance cannot be estimated."""
    result = planning.plan(
        diffs_with(0.0, 0.2, 10), spread(10, 1, np.nan), alpha=0.05, power=0.8, effect=0.05
    )
    assert result.within_variance is None and result.trials_per_task_needed is None
    assert result.tasks_needed is not None
    assert "trials per task unknown" in str(result.reason)


def test_constant_differences_need_no_plan() -> None:
    """E-99: differences that do not vary are decided exactly (§5): no numbers."""
    result = planning.plan(np.full(8, -0.1), None, alpha=0.05, power=0.8, effect=0.05)
    assert result.minimum_detectable_effect is None and result.tasks_needed is None
    assert "do not vary" in result.line()


# --- corrections against hand computations (E-98) -------------------------------------------------


def test_holm_adjustment_by_hand() -> None:
    """E-98: sorted 0.01, 0.03, 0.04, 0.2 → 4·0.01, 3·0.03, max(2·0.04, 0.09), 0.2."""
    adjusted = paired_verdict.adjust_p_values([0.01, 0.04, 0.03, 0.2], "holm")
    assert adjusted == pytest.approx([0.04, 0.09, 0.09, 0.2])


def test_benjamini_hochberg_adjustment_by_hand() -> None:
    """E-98: p·m/rank, then the running minimum from the largest: 0.01·4 = 0.04,
    min(0.03·2, 0.04·4/3) = 0.0533, 0.04·4/3 = 0.0533, 0.2."""
    adjusted = paired_verdict.adjust_p_values([0.01, 0.04, 0.03, 0.2], "bh")
    assert adjusted == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])


def test_no_correction_keeps_the_p_values() -> None:
    assert paired_verdict.adjust_p_values([0.01, 0.2], "none") == [0.01, 0.2]


# --- several suites gated at once, end to end (E-98) ----------------------------------------------

#: a suite whose paired t p-value (0.038) is under 0.05 but over 0.05 / 3
SHIFTED = [-0.3, -0.2, -0.2, -0.1, -0.1, -0.1, 0.0, 0.0, 0.05, 0.05]
#: suites that did not move on average (p-value 1)
STILL = [-0.2, 0.2, -0.1, 0.1, 0.0, -0.2, 0.2, -0.1, 0.1, 0.0]


def _suites(tmp_path: Path, moves: dict[str, list[float]], trials: int = 0) -> tuple[Path, Path]:
    """A baseline and a candidate tasks.parquet, one run per suite, the candidate's task scores
    moved by `moves[suite]`; with `trials`, a trials.parquet beside each (that many trials per
    task, spread ±0.1 around the task's score)."""
    sides = []
    for side in ("base", "cand"):
        frames, trial_rows = [], []
        for suite, move in moves.items():
            base = np.full(len(move), 0.5)
            scores = base if side == "base" else base + np.array(move)
            run = f"acme/{side}-{suite}"
            frames.append(task_rows(scores, run=run).with_columns(pl.lit(suite).alias("suite_id")))
            for task, score in enumerate(scores):
                for trial in range(trials):
                    wiggle = 0.1 if trial % 2 else -0.1
                    trial_rows.append((run, f"t-{task}", True, score + wiggle, score + wiggle))
        path = write_task_table(tmp_path / side / "tasks.parquet", pl.concat(frames))
        if trials:
            pl.DataFrame(
                trial_rows,
                schema=["run_id", "task_id", "counted", "score", "gating_score"],
                orient="row",
            ).write_parquet(path.with_name("trials.parquet"))
        sides.append(path)
    return sides[0], sides[1]


def _regress(*args: Any) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["regress", *(str(a) for a in args)])
    return result.exit_code, result.stdout


def test_holm_keeps_a_single_borderline_suite_from_failing_a_family(tmp_path: Path) -> None:
    """E-98: of three suites, one with p 0.038 regresses at alpha 0.05 alone (no
    correction, exit 1) but not once its p-value is adjusted for three (Holm: 0.115, exit 0)."""
    base, cand = _suites(tmp_path, {"acme.a": SHIFTED, "acme.b": STILL, "acme.c": STILL})
    code, out = _regress(base, cand, "--method", "paired-t", "--correction", "none", "--json")
    uncorrected = json.loads(out)
    assert code == 1
    assert uncorrected["comparisons"][0]["regression"]["verdict"] == "regressed"
    assert uncorrected["correction"] == {"method": "none", "suites": 3, "alpha": 0.05}
    raw = [c["pValue"] for c in uncorrected["comparisons"]]
    assert raw[0] == pytest.approx(stats.ttest_1samp(SHIFTED, 0).pvalue)

    code, out = _regress(base, cand, "--method", "paired-t", "--json")
    corrected = json.loads(out)
    assert code == 0
    assert corrected["correction"] == {"method": "holm", "suites": 3, "alpha": 0.05}
    shifted = corrected["comparisons"][0]
    assert shifted["regression"]["verdict"] == "inconclusive"
    assert shifted["regression"]["alpha"] == 0.05  # the RFC block keeps the family's level
    assert shifted["family"]["adjustedPValue"] == pytest.approx(min(1.0, 3 * raw[0]))
    assert shifted["family"]["intervalLevel"] == pytest.approx(1 - 0.05 / 3)
    nominal = uncorrected["comparisons"][0]["interval"]
    assert shifted["interval"][0] < nominal[0] and shifted["interval"][1] > nominal[1]
    assert shifted["pValue"] == raw[0]


def test_the_table_states_the_correction(tmp_path: Path) -> None:
    """E-98: the text output names the correction, its level and each adjusted p."""
    base, cand = _suites(tmp_path, {"acme.a": SHIFTED, "acme.b": STILL})
    code, out = _regress(base, cand, "--method", "paired-t", "--correction", "bh")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "gated 2 suites at once: Benjamini-Hochberg, false discovery rate at alpha 0.05 "
        "(adjusted p-values; intervals at 97.5%)"
    )
    assert "bh-adjusted p 0.07663" in lines[1]
    assert "[97.5% interval" in out


def test_a_clear_regression_still_fails_the_family(tmp_path: Path) -> None:
    """E-98: the correction does not hide a real drop (p far below alpha/m), with
    the bootstrap too (its E-25 p-value is adjusted)."""
    clear = [-0.4] * 6 + [-0.3] * 4
    base, cand = _suites(tmp_path, {"acme.a": clear, "acme.b": STILL, "acme.c": STILL})
    code, out = _regress(base, cand, "--json")
    assert code == 1
    first = json.loads(out)["comparisons"][0]
    assert first["regression"]["verdict"] == "regressed"
    assert first["family"]["correction"] == "holm"


def test_a_suite_without_a_test_is_not_in_the_family(tmp_path: Path) -> None:
    """E-98: a suite with one paired task has no p-value; the other two make the
    family of two."""
    base, cand = _suites(tmp_path, {"acme.a": SHIFTED, "acme.b": STILL, "acme.c": [-0.5]})
    code, out = _regress(base, cand, "--method", "paired-t", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["correction"]["suites"] == 2
    assert "family" not in document["comparisons"][2]


def test_one_suite_prints_exactly_what_it_printed_before(tmp_path: Path) -> None:
    """E-98: one suite is never adjusted ("with one such suite nothing changes, byte for byte"):
    the sample's output is the uncorrected text and JSON below, whatever --correction says."""
    before = (
        "suite acme.support.evals.regression@1.0.0: REGRESSED (paired-bootstrap, alpha 0.05)\n"
        "  baseline acme/run-regress-baseline-0001 -> candidate acme/run-regress-candidate-0001\n"
        "  baseline:  mean score 0.9333 over 10 task(s), graded from suite sha256 "
        "d6476e2ca227, default pass score 1, on-miss default count\n"
        "  candidate: mean score 0.5333 over 10 task(s), graded from suite sha256 "
        "d6476e2ca227, default pass score 1, on-miss default count\n"
        "  paired tasks 10, score delta -0.4000, mean paired difference -0.4000 [95% interval "
        "-0.6333, -0.1667], p 0.0002\n"
        "  moved most: address-change -1.000, loyalty-points -1.000, order-status -0.667, "
        "shipping-delay -0.667, escalate-complaint -0.333\n"
    )
    # after the verdict, which score moved and what the candidate did differently (E-136)
    why = (
        "  compares gating scores (D-19): they moved -0.4000; output scores moved -0.4000 "
        "(paired means)\n"
        "  changes in the 6 task(s) that dropped:\n"
        "    no longer calls crm:lookup-customer: 6 of 6\n"
        "    fewer tool calls: 6 of 6\n"
        "    higher latency: 6 of 6 (and 4 of 4 that did not move)\n"
    )
    documents = set()
    for correction in ("holm", "bh", "none"):
        code, out = _regress(BASE, CAND, "--suites", SUITES, "--correction", correction)
        assert (code, out) == (1, before + why)
        code, out = _regress(BASE, CAND, "--suites", SUITES, "--correction", correction, "--json")
        documents.add(out)
        document = json.loads(out)
        assert list(document) == ["comparisons", "notCompared"]
        assert "family" not in document["comparisons"][0]
        assert "plan" not in document["comparisons"][0]
    assert len(documents) == 1


# --- plans end to end (E-99) ----------------------------------------------------------------------


def test_an_inconclusive_verdict_shows_its_plan(tmp_path: Path) -> None:
    """E-99: without --plan, an inconclusive suite gets one plan line (and its JSON
    a `plan`); with the trials beside the tasks table it says the trials per task too. By hand:
    s² = var(STILL), w = 0.04/3 (trials ±0.1, ddof 1), b = s² − w·(1/4 + 1/4), and t is the
    smallest with b + 2w/t ≤ (0.15 / e(10))²."""
    base, cand = _suites(tmp_path, {"acme.a": STILL}, trials=4)
    code, out = _regress(base, cand, "--effect", "0.15")
    assert code == 0
    assert "INCONCLUSIVE" in out
    plan_lines = [line for line in out.splitlines() if line.startswith("  plan (paired t")]
    assert len(plan_lines) == 1
    assert plan_lines[0].endswith("or 4 trials per task on each side")
    code, out = _regress(base, cand, "--json", "--effect", "0.15")
    shown = json.loads(out)["comparisons"][0]["plan"]
    variance = float(np.var(STILL, ddof=1))
    within = 0.04 / 3
    between = variance - within * 0.5
    target = (0.15 / detectable_size(10, 0.05, 0.8)) ** 2
    assert shown["method"] == "paired-t-power"
    assert (shown["alpha"], shown["power"], shown["effect"], shown["tasks"]) == (
        0.05,
        0.8,
        0.15,
        10,
    )
    assert shown["trialsPerTask"] == 4.0
    assert shown["withinTaskVariance"] == pytest.approx(within)
    assert shown["betweenTaskVariance"] == pytest.approx(between)
    assert shown["trialsPerTaskNeeded"] == math.ceil(2 * within / (target - between)) == 4
    size = 0.15 / upper_limit(math.sqrt(variance), 10)
    needed = shown["tasksNeeded"]
    assert t_power(size, needed, 0.05) >= 0.8 > t_power(size, needed - 1, 0.05)


def test_a_decided_verdict_shows_a_plan_only_when_asked(tmp_path: Path) -> None:
    """E-99: `--plan` plans every suite; without it a regressed suite has none."""
    code, out = _regress(BASE, CAND, "--suites", SUITES)
    assert "plan (" not in out
    code, out = _regress(BASE, CAND, "--suites", SUITES, "--plan", "--json")
    assert code == 1
    shown = json.loads(out)["comparisons"][0]["plan"]
    assert shown["tasks"] == 10 and shown["trialsPerTask"] == 3.0
    assert shown["minimumDetectableEffect"] == pytest.approx(
        detectable_size(10, 0.05, 0.8) * shown["sdDifference"], rel=1e-6
    )


def test_a_tasks_table_without_its_trials_plans_tasks_only(tmp_path: Path) -> None:
    """E-99: without trials.parquet beside the tasks table, the plan gives the
    tasks needed and says why it gives no trial count."""
    base, cand = _suites(tmp_path, {"acme.a": STILL})
    code, out = _regress(base, cand, "--json")
    assert code == 0
    shown = json.loads(out)["comparisons"][0]["plan"]
    assert shown["trialsPerTask"] is None and shown["trialsPerTaskNeeded"] is None
    assert shown["tasksNeeded"] > 10
    assert "trials per task unknown" in shown["reason"]


def test_a_plan_under_a_correction_is_held_to_alpha_over_m(tmp_path: Path) -> None:
    """E-99 and E-98: a suite of a Holm family of 3 is planned at alpha / 3."""
    base, cand = _suites(tmp_path, {"acme.a": SHIFTED, "acme.b": STILL, "acme.c": STILL})
    code, out = _regress(base, cand, "--method", "paired-t", "--plan", "--json")
    assert code == 0
    plans = [c["plan"] for c in json.loads(out)["comparisons"]]
    assert [p["alpha"] for p in plans] == pytest.approx([0.05 / 3] * 3)
    code, out = _regress(
        base, cand, "--method", "paired-t", "--plan", "--json", "--correction", "none"
    )
    assert code == 1
    assert {c["plan"]["alpha"] for c in json.loads(out)["comparisons"]} == {0.05}


@pytest.mark.parametrize(
    ("option", "value"),
    [("--effect", "0"), ("--effect", "nan"), ("--power", "1"), ("--correction", "sidak")],
)
def test_bad_plan_and_correction_values_are_usage_errors(option: str, value: str) -> None:
    """E-82: a value the option cannot use is a usage error before anything is read."""
    result = CliRunner().invoke(cli, ["regress", str(BASE), str(CAND), option, value])
    assert result.exit_code == 2
    assert option in result.output
