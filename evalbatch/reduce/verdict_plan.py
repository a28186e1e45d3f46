"""How many tasks or trials a verdict needs (E-99): `regress --plan`, and the line
under an `inconclusive` verdict.

A documented formula, not a simulation: the power of the two-sided paired t test on the mean
paired difference (statsmodels `TTestPower`, the noncentral t), which is the test the
bootstrap's percentile interval approaches from a dozen tasks on; it is exact for `paired-t`, and
for `sign-test` and `mcnemar` it plans the mean score difference instead of their counts. A
formula gives the same answer on every machine, needs no seed, and can be checked by hand.

With n paired tasks whose differences d have sample variance s², the spread of d is split into
what the tasks differ by and what the trials add (the trial variance):

- w, the within-task trial variance: the trial scores' sample variance in each task of each side
  with at least 2 counted trials, pooled (weighted by trials − 1);
- the trials' share of s² now: w · (mean over tasks of 1/k_base + mean of 1/k_cand), k the
  counted trials of a task on a side;
- b = max(0, s² − that share), the between-task variance no number of trials removes.

Then, at the level alpha and power P:

- e(n) is the standardized effect the test detects with n tasks (`solve_power`), and the minimum
  detectable effect now is e(n) · s;
- tasks needed for an effect δ, at the current trials: the smallest n' ≥ 2 whose power at δ / s_U
  reaches P, s_U the spread's one-sided 80% upper confidence limit s·√((n − 1) / χ²₀.₂(n − 1))
  (Browne 1995; new tasks are assumed to spread like the current ones). Planning at s itself
  plans too few tasks whenever a small comparison estimates its spread low, and the power lost
  then outweighs what an estimate too high adds: at s the planned size detected the effect 77%
  of the time for a planned 80%; at s_U the planned power is reached with probability at least
  0.8, and the expected power over the comparison's own sampling is above P
  (bench/calibrate_regress.py). The level is a fixed 80% rather than the one whose expected
  power is exactly P: that one depends on the unknown true spread and needs a numerical
  integral, while 80% keeps the expected power above P for P from 0.5 to 0.95 and 10 to 80
  tasks, at plans 1.4 times larger at 20 tasks;
- trials per task (on each side) needed for δ, with the current n tasks: the smallest t ≥ 1 with
  b + 2w / t ≤ (δ / e(n))²; none when b alone exceeds it (only more tasks help). This one keeps the
  estimate: w is pooled over every task's trials, and t grows ever faster as b nears the
  bound, so an estimate of b too high overshoots by more than one too low falls short; at the
  same upper limit it met the power too but gave no trial count for most small comparisons
  (bench/calibrate_regress.py).

The minimum detectable effect now, e(n) · s, says what this comparison can see; it is not a plan
and keeps the estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

#: the one-sided confidence of the spread's upper limit the sizes are planned against (Browne
#: 1995): a spread estimated low would otherwise plan too few tasks more often than one
#: estimated high plans too many (bench/calibrate_regress.py)
SPREAD_CONFIDENCE = 0.8


def spread_upper_limit(sd: float, tasks: int, confidence: float = SPREAD_CONFIDENCE) -> float:
    """The one-sided upper confidence limit of the differences' standard deviation from `tasks`
    pairs: (n − 1)s²/σ² is chi-square with n − 1 degrees of freedom, so σ ≤
    s·√((n − 1) / χ²₁₋γ(n − 1)) with confidence γ, χ²₁₋γ its lower 1 − γ quantile."""
    from scipy import stats

    return sd * math.sqrt((tasks - 1) / float(stats.chi2.ppf(1 - confidence, tasks - 1)))


@dataclass(frozen=True)
class TrialSpread:
    """The counted trials of each paired task on each side, and their scores' sample variance
    (NaN below 2 trials), in the order of the paired differences."""

    base_trials: np.ndarray
    base_variance: np.ndarray
    cand_trials: np.ndarray
    cand_variance: np.ndarray

    def within_variance(self) -> float | None:
        """The pooled within-task trial variance w, or None when no task has 2 trials."""
        trials = np.concatenate([self.base_trials, self.cand_trials]).astype(float)
        variance = np.concatenate([self.base_variance, self.cand_variance]).astype(float)
        usable = (trials >= 2) & np.isfinite(variance)
        weight = (trials[usable] - 1).sum()
        if weight == 0:
            return None
        return float(((trials[usable] - 1) * variance[usable]).sum() / weight)

    def trial_share(self, within: float) -> float:
        """The trials' share of the paired differences' variance now."""
        return within * float(np.mean(1 / self.base_trials) + np.mean(1 / self.cand_trials))

    def mean_trials(self) -> float:
        """Counted trials per task, averaged over both sides' paired tasks."""
        return float(np.concatenate([self.base_trials, self.cand_trials]).mean())


@dataclass(frozen=True)
class Plan:
    """One suite's plan: what is detectable now, and what detecting `effect` needs."""

    alpha: float
    power: float
    effect: float
    tasks: int
    trials_per_task: float | None
    sd_difference: float
    sd_upper_limit: float | None  # the spread the sizes are planned against (SPREAD_CONFIDENCE)
    within_variance: float | None
    between_variance: float | None
    minimum_detectable_effect: float | None
    tasks_needed: int | None
    trials_per_task_needed: int | None
    reason: str | None = None  # why a number is missing

    def report(self) -> dict[str, object]:
        """The `plan` object of `regress --json` (documented in the README)."""
        return {
            "method": "paired-t-power",
            "alpha": self.alpha,
            "power": self.power,
            "effect": self.effect,
            "tasks": self.tasks,
            "trialsPerTask": self.trials_per_task,
            "sdDifference": self.sd_difference,
            "sdUpperLimit": self.sd_upper_limit,
            "sdUpperLimitConfidence": SPREAD_CONFIDENCE,
            "withinTaskVariance": self.within_variance,
            "betweenTaskVariance": self.between_variance,
            "minimumDetectableEffect": self.minimum_detectable_effect,
            "tasksNeeded": self.tasks_needed,
            "trialsPerTaskNeeded": self.trials_per_task_needed,
            "reason": self.reason,
        }

    def line(self) -> str:
        """`plan (paired t, alpha 0.05, power 0.8): detectable now ±0.4081 with 10 tasks × 3
        trials; a 0.2 change needs 58 tasks at the spread's 80% upper limit (more trials cannot
        reach it with these tasks, only more tasks can)`."""
        head = f"plan (paired t, alpha {self.alpha:.4g}, power {self.power:g}): "
        if self.minimum_detectable_effect is None:
            return head + str(self.reason)
        trials = "" if self.trials_per_task is None else f" × {self.trials_per_task:g} trials"
        text = (
            f"{head}detectable now ±{self.minimum_detectable_effect:.4f} with "
            f"{self.tasks} tasks{trials}; a {self.effect:g} change needs "
            f"{self.tasks_needed} tasks at the spread's {SPREAD_CONFIDENCE:.0%} upper limit"
        )
        if self.trials_per_task_needed is not None:
            text += f", or {self.trials_per_task_needed} trials per task on each side"
        if self.reason:
            text += f" ({self.reason})"
        return text


def _power_solver() -> Any:
    """statsmodels' paired (one-sample) t power, loaded on first use: only a plan needs it."""
    from statsmodels.stats.power import TTestPower

    return TTestPower()


def power_at(effect_size: float, tasks: int, alpha: float) -> float:
    """The two-sided paired t test's power at a standardized effect with `tasks` pairs."""
    return float(
        _power_solver().power(
            effect_size=effect_size, nobs=tasks, alpha=alpha, alternative="two-sided"
        )
    )


def detectable_effect_size(tasks: int, alpha: float, power: float) -> float:
    """e(n): the standardized effect detected with `power` by `tasks` pairs."""
    return float(
        _power_solver().solve_power(
            effect_size=None, nobs=tasks, alpha=alpha, power=power, alternative="two-sided"
        )
    )


def tasks_needed(effect_size: float, alpha: float, power: float) -> int:
    """The smallest number of pairs (at least 2) whose power at `effect_size` reaches `power`:
    statsmodels' root, rounded up, then checked on the integers around it."""
    root = _power_solver().solve_power(
        effect_size=effect_size, nobs=None, alpha=alpha, power=power, alternative="two-sided"
    )
    tasks = max(2, math.ceil(float(root)))
    while tasks > 2 and power_at(effect_size, tasks - 1, alpha) >= power:
        tasks -= 1
    while power_at(effect_size, tasks, alpha) < power:
        tasks += 1
    return tasks


def plan(
    diffs: np.ndarray,
    spread: TrialSpread | None,
    *,
    alpha: float,
    power: float,
    effect: float,
) -> Plan:
    """The plan for one suite from its paired differences and its trials (the module's
    formula). `spread` is None when the trial scores are not at hand."""
    tasks = len(diffs)
    sd = float(diffs.std(ddof=1)) if tasks >= 2 else 0.0
    within = spread.within_variance() if spread is not None else None
    between = None
    if within is not None and spread is not None:
        between = max(0.0, sd**2 - spread.trial_share(within))
    base = Plan(
        alpha=alpha,
        power=power,
        effect=effect,
        tasks=tasks,
        trials_per_task=spread.mean_trials() if spread is not None else None,
        sd_difference=sd,
        sd_upper_limit=None,
        within_variance=within,
        between_variance=between,
        minimum_detectable_effect=None,
        tasks_needed=None,
        trials_per_task_needed=None,
    )
    if tasks < 2:
        return replace(base, reason=f"{tasks} paired task(s); at least 2 are needed")
    if sd == 0.0:
        return replace(base, reason="the paired differences do not vary: the test is exact")
    size_now = detectable_effect_size(tasks, alpha, power)
    needed_sd = effect / size_now
    upper = spread_upper_limit(sd, tasks)
    trials: int | None = None
    reason: str | None = None
    if within is None or between is None:
        reason = "trials per task unknown: no task has 2 counted trials on a side at hand"
    elif needed_sd**2 > between:
        trials = max(1, math.ceil(2 * within / (needed_sd**2 - between)))
    else:
        reason = "more trials cannot reach it with these tasks, only more tasks can"
    return replace(
        base,
        sd_upper_limit=upper,
        minimum_detectable_effect=size_now * sd,
        tasks_needed=tasks_needed(effect / upper, alpha, power),
        trials_per_task_needed=trials,
        reason=reason,
    )
