"""Calibration of `regress` across many suites and of its plan (E-98, E-99): a
benchmark of error rates, not of time, and not a unit test.

    .venv/bin/python bench/calibrate_regress.py                    # the defaults below
    .venv/bin/python bench/calibrate_regress.py --nights 200 --pilots 20   # a quick look

1. **Many suites at once.** Each simulated night gates `--suites` suites in which nothing
   changed: every task has its own pass probability (uniform 0.1..0.9), the same on both sides,
   and `--trials` pass/fail trials per task and side; the task score is the trials' mean and the
   paired difference is candidate − baseline. Each suite's paired t p-value (scipy's
   `ttest_1samp`, what `--method paired-t` calls, a zero-variance difference decided as §5
   says) is adjusted with `paired_verdict.adjust_p_values` and a suite is called changed when its
   adjusted p-value is below alpha (what `paired_verdict.compare` does under a `Family`). A night
   is a false alarm when any suite is called changed. The rate over the nights is printed for
   Holm, Benjamini-Hochberg and no correction, with exact (Clopper-Pearson) 95% intervals; the
   first nights are also run through `paired_verdict.compare` itself, which must decide alike.

2. **The plan, used.** A pilot comparison of `--tasks` tasks × `--trials` trials is drawn where
   the candidate really moved: each task's pass probability drops by a task-specific amount
   (mean `--effect`, sd `--task-spread`, clipped to 0..1). Its plan (`reduce.verdict_plan.plan`, at
   alpha and `--power`) gives the tasks needed (at the pilot's trials, sized to the spread's 80%
   upper confidence limit) and the trials per task needed (with the pilot's tasks, at the
   spread's estimate). Then `--power-nights` nights are drawn at each planned size
   (new tasks from the same population for the first; the pilot's tasks, new trials, for the
   second) and the share whose paired t rejects in the right direction is counted, over
   `--pilots` pilots. Planned power is met when that share is at least `--power`.

Prints a Markdown block (command, machine, results) for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalbatch.reduce import paired_verdict  # noqa: E402
from evalbatch.reduce import verdict_plan as planning  # noqa: E402


@dataclass
class Rate:
    """A count of events over trials, with its exact 95% interval."""

    hits: int
    trials: int

    def text(self) -> str:
        interval = stats.binomtest(self.hits, self.trials).proportion_ci(confidence_level=0.95)
        share = self.hits / self.trials
        low, high = interval.low, interval.high
        return f"{share:.4f} ({self.hits}/{self.trials}; 95% CI {low:.4f}–{high:.4f})"


def task_means(rng: np.random.Generator, p: np.ndarray, trials: int) -> np.ndarray:
    """Each task's mean of `trials` pass/fail trials with pass probabilities `p` (any shape)."""
    return rng.binomial(trials, p) / trials


def paired_t_p_values(diffs: np.ndarray) -> np.ndarray:
    """Two-sided paired t p-values along the last axis; zero variance decided exactly (§5)."""
    spread = diffs.std(axis=-1, ddof=1)
    mean = diffs.mean(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats.ttest_1samp(diffs, 0.0, axis=-1).pvalue
    return np.where(spread == 0, np.where(mean == 0, 1.0, 0.0), p)


def _rows(scores: np.ndarray, run: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_id": [run] * len(scores),
            "suite_version": ["1.0.0"] * len(scores),
            "task_id": [f"t-{i}" for i in range(len(scores))],
            "score": scores,
            "gating_score": scores,
            "passed": scores == 1.0,
        }
    )


def family_false_alarms(
    args: argparse.Namespace, rng: np.random.Generator
) -> dict[paired_verdict.Correction, Rate]:
    """Part 1: the share of null nights on which some suite is called changed."""
    alarms: dict[paired_verdict.Correction, int] = {"holm": 0, "bh": 0, "none": 0}
    checked = 0
    for night in range(args.nights):
        p = rng.uniform(0.1, 0.9, size=(args.suites, args.tasks))
        base = task_means(rng, p, args.trials)
        cand = task_means(rng, p, args.trials)
        p_values = paired_t_p_values(cand - base)
        for correction in alarms:
            adjusted = paired_verdict.adjust_p_values(p_values.tolist(), correction)
            called = [q < args.alpha for q in adjusted]
            alarms[correction] += any(called)
            if night < args.check_nights:
                checked += _check_with_compare(args, base, cand, adjusted, correction, called)
    print(
        f"(the first {checked} suite decisions were also made by paired_verdict.compare: alike)\n"
    )
    return {name: Rate(count, args.nights) for name, count in alarms.items()}


def _check_with_compare(
    args: argparse.Namespace,
    base: np.ndarray,
    cand: np.ndarray,
    adjusted: list[float],
    correction: paired_verdict.Correction,
    called: list[bool],
) -> int:
    """The same night's decisions made by `paired_verdict.compare` under its Family."""
    options = paired_verdict.RegressOptions(method="paired-t", alpha=args.alpha, margin=0.0)
    for suite in range(args.suites):
        family = None
        if correction != "none":
            family = paired_verdict.Family(
                correction, args.suites, adjusted[suite], args.alpha / args.suites
            )
        result = paired_verdict.compare(
            _rows(base[suite], "b"),
            _rows(cand[suite], "c"),
            options,
            suite_id=f"s{suite}",
            base_run="b",
            cand_run="c",
            family=family,
        )
        if (result.verdict in ("improved", "regressed")) != called[suite]:
            raise SystemExit(f"paired_verdict.compare disagrees on suite {suite} ({correction})")
    return args.suites


def planned_power(args: argparse.Namespace, rng: np.random.Generator) -> dict[str, object]:
    """Part 2: how often the planned sizes detect the planned effect."""
    detected = {"tasks": 0, "trials": 0}
    nights = {"tasks": 0, "trials": 0}
    sizes: dict[str, list[int]] = {"tasks": [], "trials": []}
    no_trial_plan = 0
    true_effects = []
    for _ in range(args.pilots):
        p_base = rng.uniform(0.3, 0.9, size=args.tasks)
        drop = rng.normal(args.effect, args.task_spread, size=args.tasks)
        p_cand = np.clip(p_base - drop, 0, 1)
        true_effects.append(float((p_base - p_cand).mean()))
        base = rng.binomial(1, np.repeat(p_base[:, None], args.trials, axis=1))
        cand = rng.binomial(1, np.repeat(p_cand[:, None], args.trials, axis=1))
        trials = np.full(args.tasks, float(args.trials))
        spread = planning.TrialSpread(
            trials, base.var(axis=1, ddof=1), trials, cand.var(axis=1, ddof=1)
        )
        diffs = cand.mean(axis=1) - base.mean(axis=1)
        plan = planning.plan(diffs, spread, alpha=args.alpha, power=args.power, effect=args.effect)
        if plan.tasks_needed is not None:
            sizes["tasks"].append(plan.tasks_needed)
            detected["tasks"] += _detections(args, rng, None, plan.tasks_needed, args.trials)
            nights["tasks"] += args.power_nights
        if plan.trials_per_task_needed is None:
            no_trial_plan += 1
        else:
            sizes["trials"].append(plan.trials_per_task_needed)
            detected["trials"] += _detections(
                args, rng, (p_base, p_cand), args.tasks, plan.trials_per_task_needed
            )
            nights["trials"] += args.power_nights
    return {
        "tasks": Rate(detected["tasks"], nights["tasks"]),
        "trials": Rate(detected["trials"], nights["trials"]),
        "sizes": sizes,
        "no_trial_plan": no_trial_plan,
        "true_effect": float(np.mean(true_effects)),
    }


def _detections(
    args: argparse.Namespace,
    rng: np.random.Generator,
    tasks: tuple[np.ndarray, np.ndarray] | None,
    task_count: int,
    trials: int,
) -> int:
    """Nights at the planned size whose paired t calls the drop `regressed`; `tasks` None draws
    new tasks from the population each night, else keeps these (baseline, candidate) tasks."""
    shape = (args.power_nights, task_count)
    if tasks is None:
        p_base = rng.uniform(0.3, 0.9, size=shape)
        p_cand = np.clip(p_base - rng.normal(args.effect, args.task_spread, size=shape), 0, 1)
    else:
        p_base = np.broadcast_to(tasks[0], shape)
        p_cand = np.broadcast_to(tasks[1], shape)
    diffs = task_means(rng, p_cand, trials) - task_means(rng, p_base, trials)
    p_values = paired_t_p_values(diffs)
    return int(((p_values < args.alpha) & (diffs.mean(axis=1) < 0)).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=2000, help="null nights (part 1)")
    parser.add_argument("--suites", type=int, default=40, help="suites gated per night")
    parser.add_argument("--tasks", type=int, default=20, help="tasks per suite / pilot")
    parser.add_argument("--trials", type=int, default=3, help="trials per task and side")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--check-nights", type=int, default=5, help="nights run through compare")
    parser.add_argument("--pilots", type=int, default=200, help="pilot comparisons (part 2)")
    parser.add_argument("--power-nights", type=int, default=200, help="nights per planned size")
    parser.add_argument("--effect", type=float, default=0.1, help="the planned drop")
    parser.add_argument("--task-spread", type=float, default=0.05, help="sd of the drop by task")
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    command = shlex.join([".venv/bin/python", "bench/calibrate_regress.py", *sys.argv[1:]])
    print(f"Command: `{command}`")
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}; seed {args.seed}\n")
    rates = family_false_alarms(args, rng)
    print(
        f"**{args.suites} null suites gated at once** ({args.nights} nights, {args.tasks} tasks "
        f"× {args.trials} pass/fail trials per suite, paired t, alpha {args.alpha}): share of "
        "nights with a false alarm in any suite\n"
    )
    print("| correction | family-wise false-alarm rate | at or below alpha |")
    print("|---|---|---|")
    for name, rate in rates.items():
        met = "yes" if rate.hits / rate.trials <= args.alpha else "no"
        print(f"| {paired_verdict.CORRECTION_NAMES[name]} | {rate.text()} | {met} |")

    power = planned_power(args, rng)
    sizes = power["sizes"]
    assert isinstance(sizes, dict)
    print(
        f"\n**The plan, used** ({args.pilots} pilots of {args.tasks} tasks × {args.trials} "
        f"trials; planned drop {args.effect} (mean true drop after clipping "
        f"{power['true_effect']:.4f}), task sd {args.task_spread}; alpha {args.alpha}, power "
        f"{args.power}; {args.power_nights} nights per planned size)\n"
    )
    print("| planned | sizes planned (median, range) | detected | at least the planned power |")
    print("|---|---|---|---|")
    for key, label in (("tasks", "tasks (at the pilot's trials)"), ("trials", "trials per task")):
        detected = power[key]
        assert isinstance(detected, Rate)
        planned = sizes[key]
        if not planned:
            print(f"| {label} | none | - | - |")
            continue
        met = "yes" if detected.hits / detected.trials >= args.power else "no"
        print(
            f"| {label} | {int(np.median(planned))} ({min(planned)}–{max(planned)}) | "
            f"{detected.text()} | {met} |"
        )
    print(
        f"\nPilots whose plan gave no trial count (tasks' own spread too large): "
        f"{power['no_trial_plan']}"
    )


if __name__ == "__main__":
    main()
