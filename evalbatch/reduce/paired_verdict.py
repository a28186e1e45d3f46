"""The paired regression verdict (CONTRACT §5, D-16, D-19; RFC 0244 §F).

The unit is the task: each side's trials are first reduced to one number per task (the mean gating
score, D-19), then tasks present on both sides are paired by taskId and the per-task differences
(candidate − baseline) are tested. Resampling trials as if independent would inflate false alarms.

When one command gates several suites (E-98), each suite's p-value is adjusted for the
family (`family_of`, by `adjust_p_values`: Holm by default, or Benjamini-Hochberg) and the suite
is compared again under its `Family`: `improved`/`regressed` read the adjusted p-value, and the
interval the `unchanged` rule reads is the simultaneous (Bonferroni) one at 1 − alpha/m; a plan
holds such a suite to alpha/m (`plan_alpha`, E-99). A pair whose run was not graded compares
nothing (`Comparison.not_graded`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from evalbatch.options import (
    ALPHA,
    CORRECTIONS,
    EFFECT,
    MARGIN,
    METHODS,
    MIN_DROP,
    MIN_RESAMPLES,
    POWER,
    RESAMPLES,
    SCORES,
    SEED,
    Correction,
    Method,
    Score,
    check_choice,
    check_flag,
)
from evalbatch.reduce import behaviour_changes
from evalbatch.text import errored_note, printable

Verdict = Literal["improved", "regressed", "unchanged", "inconclusive"]
#: what each correction controls, for the output
CORRECTION_NAMES: dict[Correction, str] = {
    "holm": "Holm, family-wise error",
    "bh": "Benjamini-Hochberg, false discovery rate",
    "none": "no correction",
}


@dataclass(frozen=True)
class RegressOptions:
    """How to compare: the method, its level, the equivalence margin and the resampling; how
    several suites gated at once are corrected; and what a plan is asked for (E-98, E-99:
    `plan` asks one for every suite, an `inconclusive` verdict gets one anyway)."""

    method: Method = "paired-bootstrap"
    alpha: float = 0.05
    margin: float = 0.02
    seed: int = 0
    resamples: int = MIN_RESAMPLES
    score: Score = "gating"
    correction: Correction = "holm"
    plan: bool = False
    effect: float = 0.05
    power: float = 0.8
    #: a regressed suite whose mean paired difference drops by less fails no gate (E-137);
    #: 0, the default, keeps D-16's gate: every regressed suite fails it
    min_drop: float = 0.0

    def __post_init__(self) -> None:
        """The ranges `regress` allows, declared once in `evalbatch.options` (E-130)."""
        owner = "RegressOptions"
        check_choice(owner, "method", self.method, METHODS)
        ALPHA.check(owner, "alpha", self.alpha)
        MARGIN.check(owner, "margin", self.margin)
        SEED.check(owner, "seed", self.seed)
        RESAMPLES.check(owner, "resamples", self.resamples)
        check_choice(owner, "score", self.score, SCORES)
        check_choice(owner, "correction", self.correction, CORRECTIONS)
        check_flag(owner, "plan", self.plan)
        EFFECT.check(owner, "effect", self.effect)
        POWER.check(owner, "power", self.power)
        MIN_DROP.check(owner, "min_drop", self.min_drop)


@dataclass(frozen=True)
class Grading:
    """How a run's task scores were made (E-67): against a suite file (which one, by its
    sha256) or from the host record (D-4), and under which grading options (D-9, D-15). Two runs
    are compared only when graded alike; an unknown grading is alike to nothing."""

    has_suite: bool | None = None
    suite_sha256: str | None = None
    default_pass_score: float | None = None
    on_miss_default: str | None = None
    unknown_because: str | None = None  # set when the grading cannot be known

    @classmethod
    def of_run(cls, row: Mapping[str, Any]) -> Grading:
        """The grading a runs-table row records (its provenance columns)."""
        pass_score, on_miss = row.get("default_pass_score"), row.get("on_miss_default")
        if pass_score is None or on_miss is None:
            return cls(unknown_because="no grading options recorded for the run")
        sha256 = row.get("suite_sha256")
        has_suite = row.get("has_suite")
        if has_suite is None:  # a run that was not graded: its suite hash still says
            has_suite = sha256 is not None
        if has_suite and sha256 is None:
            return cls(unknown_because="graded with a suite of unrecorded sha256")
        return cls(bool(has_suite), sha256 if has_suite else None, float(pass_score), on_miss)

    @property
    def known(self) -> bool:
        return self.unknown_because is None

    def alike(self, other: Grading) -> bool:
        return self.known and other.known and self == other

    def describe(self) -> str:
        """One line for a terminal: source and options, or why they are unknown."""
        if not self.known:
            return f"graded unknown ({self.unknown_because})"
        source = f"suite sha256 {str(self.suite_sha256)[:12]}" if self.has_suite else "host record"
        return (
            f"graded from {source}, default pass score {self.default_pass_score:g}, "
            f"on-miss default {self.on_miss_default}"
        )

    def report(self) -> dict[str, object]:
        source = "unknown" if not self.known else "suite" if self.has_suite else "host-record"
        return {
            "source": source,
            "suiteSha256": self.suite_sha256,
            "defaultPassScore": self.default_pass_score,
            "onMissDefault": self.on_miss_default,
            "unknownBecause": self.unknown_because,
        }


@dataclass(frozen=True)
class SideSummary:
    """One side of a suite's comparison as the output shows it: the run, how it was graded and
    its mean scores (the means over all its tasks; `scoreDelta` is the difference of
    `meanScore`), and for a run from an Inspect log the model and task Inspect names (E-146)
    and its errored samples: how many failed, the mean without them, how many were left out
    (E-147)."""

    run_id: str
    grading: Grading
    task_count: int
    mean_score: float | None
    mean_gating_score: float | None
    model: str | None = None
    task_name: str | None = None
    errored_trials: int | None = None
    mean_without_errored: float | None = None
    errored_left_out: int | None = None

    @classmethod
    def of(
        cls,
        rows: pl.DataFrame,
        run_id: str,
        grading: Grading,
        names: Mapping[str, Any] | None = None,
    ) -> SideSummary:
        """`rows`: the run's task rows (none, or one row with null scores, when not graded);
        `names`: its runs-table row's `model`, `task_name` and errored columns, where it has
        them."""
        scored = rows.filter(pl.col("score").is_not_null())
        names = names or {}
        return cls(
            run_id=run_id,
            grading=grading,
            task_count=scored.height,
            mean_score=_mean(scored["score"]),
            mean_gating_score=_mean(scored["gating_score"]),
            model=names.get("model"),
            task_name=names.get("task_name"),
            errored_trials=names.get("errored_trials") or None,
            mean_without_errored=names.get("mean_without_errored"),
            errored_left_out=names.get("errored_left_out"),
        )

    def report(self) -> dict[str, object]:
        """The side in `--json`: `model` and `taskName` only when known (E-146)."""
        shown: dict[str, object] = {
            "runId": self.run_id,
            "grading": self.grading.report(),
            "taskCount": self.task_count,
            "meanScore": self.mean_score,
            "meanGatingScore": self.mean_gating_score,
        }
        if self.model is not None:
            shown["model"] = self.model
        if self.task_name is not None:
            shown["taskName"] = self.task_name
        if self.errored_trials is not None:
            shown["erroredTrials"] = self.errored_trials
            shown["meanScoreWithoutErrored"] = self.mean_without_errored
        if self.errored_left_out is not None:
            shown["erroredLeftOut"] = self.errored_left_out
        return shown

    def errored_text(self) -> str | None:
        """What errored samples did to the side's mean (E-147), None when none errored."""
        return errored_note(self.errored_trials, self.mean_without_errored, self.errored_left_out)

    def names_text(self) -> str | None:
        """`Inspect task T, model M` for a run from an Inspect log, None for any other (E-146)."""
        known = [
            f"{what} {value}"
            for what, value in (("Inspect task", self.task_name), ("model", self.model))
            if value is not None
        ]
        return ", ".join(known) or None


def _mean(column: pl.Series) -> float | None:
    """The column's mean; None when it holds no number."""
    value = column.mean()
    return float(value) if isinstance(value, (int, float)) else None


#: the columns a tasks table must hold for a comparison, with their types (those of
#: `outputs.output_format.TASK_SCHEMA`)
TASK_COLUMNS: dict[str, type[pl.DataType]] = {
    "run_id": pl.String,
    "suite_id": pl.String,
    "suite_version": pl.String,
    "task_id": pl.String,
    "score": pl.Float64,
    "gating_score": pl.Float64,
    "passed": pl.Boolean,
}
SCORE_COLUMNS = ("score", "gating_score")


def task_table_faults(tasks: pl.DataFrame) -> list[str]:
    """What makes a tasks table unusable for a comparison, one message per fault (E-69):
    a missing or mistyped column, null/NaN/infinite or out-of-0..1 scores, and rows that repeat
    a (run_id, task_id) pair (they would be paired twice). Messages name columns, counts and ids,
    never other content."""
    faults: list[str] = []
    usable: list[str] = []
    for name, dtype in TASK_COLUMNS.items():
        found = tasks.schema.get(name)
        if found is None:
            faults.append(f"column {name}: missing")
        elif found != dtype and not (dtype == pl.Float64 and found.is_float()):
            faults.append(f"column {name}: type {found}, expected {dtype()}")
        else:
            usable.append(name)
    checks = []
    for c in usable:
        checks.append(pl.col(c).is_null().sum().alias(f"{c}:null"))
        if c in SCORE_COLUMNS:
            finite = pl.col(c).is_finite()
            checks += [
                pl.col(c).is_nan().sum().alias(f"{c}:NaN"),
                pl.col(c).is_infinite().sum().alias(f"{c}:infinite"),
                (finite & ((pl.col(c) < 0) | (pl.col(c) > 1))).sum().alias(f"{c}:outside 0..1"),
            ]
    if checks:
        for key, count in tasks.select(checks).row(0, named=True).items():
            if count:
                column, fault = key.split(":")
                faults.append(f"column {column}: {count} row(s) {fault}")
    if {"run_id", "task_id"} <= set(usable):
        repeated = tasks.filter(pl.struct("run_id", "task_id").is_duplicated())
        if repeated.height:
            first = repeated.row(0, named=True)
            faults.append(
                f"columns run_id, task_id: {repeated.height} row(s) repeat a pair "
                f"(first: run {printable(first['run_id'])}, task {printable(first['task_id'])})"
            )
    return faults


@dataclass(frozen=True)
class Family:
    """How one suite of several gated at once was held to the family's level (E-98):
    its p-value adjusted for `size` tested suites, and the level of the interval the `unchanged`
    rule reads (Bonferroni, `alpha / size`: every suite's interval holds at once)."""

    correction: Correction
    size: int
    adjusted_p_value: float
    interval_alpha: float

    def report(self) -> dict[str, object]:
        return {
            "correction": self.correction,
            "suites": self.size,
            "adjustedPValue": self.adjusted_p_value,
            "intervalLevel": 1 - self.interval_alpha,
        }


def adjust_p_values(p_values: list[float], correction: Correction) -> list[float]:
    """The p-values adjusted for testing them together: Holm's step-down (family-wise error) or
    Benjamini-Hochberg's step-up (false discovery rate), by statsmodels `multipletests`; a suite
    is rejected at level alpha when its adjusted p-value is below alpha."""
    if correction == "none":
        return list(p_values)
    from statsmodels.stats.multitest import multipletests

    method = {"holm": "holm", "bh": "fdr_bh"}[correction]
    adjusted = multipletests(p_values, method=method)[1]
    return [float(p) for p in adjusted]


@dataclass
class Comparison:
    """One suite's verdict with the statistics behind it."""

    suite_id: str
    suite_version: str
    baseline_run_id: str
    candidate_run_id: str
    paired_task_count: int
    score_delta: float
    verdict: Verdict
    method: Method
    alpha: float
    mean_difference: float | None = None
    interval: tuple[float, float] | None = None
    p_value: float | None = None
    reason: str | None = None  # why the verdict is inconclusive without a test
    #: no task could be compared (a run of the pair not graded, other suite versions, no task in
    #: common): the input is unusable for this suite, never a pass (E-65)
    nothing_compared: bool = False
    moved: list[tuple[str, float]] = field(default_factory=list)  # (taskId, difference)
    baseline: SideSummary | None = None  # how each side was graded, and its mean scores
    candidate: SideSummary | None = None
    family: Family | None = None  # set when the suite was gated with others (E-98)
    #: the score the test compares ("gating": gating scores, D-19; "mean": output scores) and
    #: the mean paired difference of the other one, so the output can say which moved (E-136)
    score: Score = "gating"
    other_difference: float | None = None
    #: what the candidate did differently on the tasks that moved (E-136), or why not known
    changes: behaviour_changes.Changes | None = None
    changes_unknown: str | None = None
    #: E-137: the interval lies inside ±margin though the test rejected "no difference" (a
    #: significant change too small to matter), and the drop a regressed suite needs to fail
    within_margin: bool = False
    #: each paired task's difference on the compared score, in taskId order (the test report)
    task_differences: list[tuple[str, float]] = field(default_factory=list)
    margin: float = 0.0
    min_drop: float = 0.0

    @property
    def fails_gate(self) -> bool:
        """Regressed, by at least `min_drop` (D-16's gate when it is 0, the default)."""
        if self.verdict != "regressed":
            return False
        return self.mean_difference is None or -self.mean_difference >= self.min_drop

    def block(self) -> dict[str, object]:
        """The RFC 0244 `regression` block, in the contract's field order."""
        return {
            "baselineRunId": self.baseline_run_id,
            "scoreDelta": self.score_delta,
            "verdict": self.verdict,
            "method": self.method,
            "alpha": self.alpha,
            "pairedTaskCount": self.paired_task_count,
        }

    def report(self) -> dict[str, object]:
        """The block plus the statistics a reader needs to trust it (`--json`)."""
        report: dict[str, object] = {
            "suiteId": self.suite_id,
            "suiteVersion": self.suite_version,
            "candidateRunId": self.candidate_run_id,
            "regression": self.block(),
            "meanDifference": self.mean_difference,
            "interval": list(self.interval) if self.interval else None,
            "pValue": self.p_value,
            "reason": self.reason,
            "moved": [{"taskId": t, "difference": d} for t, d in self.moved],
            "baseline": self.baseline.report() if self.baseline else None,
            "candidate": self.candidate.report() if self.candidate else None,
        }
        if self.family is not None:
            report["family"] = self.family.report()
        report["compares"] = {
            "score": "gatingScore" if self.score == "gating" else "score",
            "meanDifference": self.mean_difference,
            "otherScore": "score" if self.score == "gating" else "gatingScore",
            "otherMeanDifference": self.other_difference,
        }
        report["changes"] = self.changes.report() if self.changes is not None else None
        report["changesUnknown"] = self.changes_unknown
        report["withinMargin"] = self.within_margin
        report["failsGate"] = self.fails_gate
        return report

    def compares_line(self) -> str | None:
        """Which score the verdict compares and how each moved, in words (E-136)."""
        if self.mean_difference is None:
            return None
        other = "" if self.other_difference is None else f"{self.other_difference:+.4f}"
        if self.score == "gating":
            return (
                f"compares gating scores (D-19): they moved {self.mean_difference:+.4f}; "
                f"output scores moved {other} (paired means)"
            )
        return (
            f"compares output scores: they moved {self.mean_difference:+.4f}; "
            f"gating scores (D-19) moved {other} (paired means)"
        )

    @property
    def interval_alpha(self) -> float:
        """The level the interval was drawn at: alpha, or the family's when gated with others."""
        return self.alpha if self.family is None else self.family.interval_alpha

    @classmethod
    def not_graded(
        cls,
        options: RegressOptions,
        *,
        suite_id: str,
        suite_version: str,
        base_run: str,
        cand_run: str,
        why: str | None,
    ) -> Comparison:
        """The verdict of a pair whose run was not graded (`why`): inconclusive, nothing
        compared, so the input is unusable for this suite, never a pass (E-65)."""
        return cls(
            suite_id=suite_id,
            suite_version=suite_version,
            baseline_run_id=base_run,
            candidate_run_id=cand_run,
            paired_task_count=0,
            score_delta=0.0,
            verdict="inconclusive",
            method=options.method,
            alpha=options.alpha,
            reason=f"a run was not graded ({why})",
            nothing_compared=True,
        )


def family_of(
    comparisons: Sequence[Comparison], options: RegressOptions
) -> tuple[int, dict[int, Family]]:
    """Several suites tested at once (E-98): how many were tested (0 with fewer than two: nothing
    to correct) and, by index in `comparisons`, the `Family` each tested suite is compared again
    under, its p-value adjusted with the others' (none under the correction `none`). The family is
    the suites that were tested: a suite without a p-value has no test to correct."""
    tested = [i for i, c in enumerate(comparisons) if c.p_value is not None]
    if len(tested) < 2:
        return 0, {}
    if options.correction == "none":
        return len(tested), {}
    p_values = [float(comparisons[i].p_value or 0.0) for i in tested]
    adjusted = adjust_p_values(p_values, options.correction)
    return len(tested), {
        i: Family(
            correction=options.correction,
            size=len(tested),
            adjusted_p_value=adjusted_p,
            interval_alpha=options.alpha / len(tested),
        )
        for i, adjusted_p in zip(tested, adjusted, strict=True)
    }


def plan_alpha(options: RegressOptions, family_size: int) -> float:
    """The level a plan holds a suite to (E-99): alpha, or alpha / m under a correction for the m
    suites of its family (the strictest level of the family, what a suite must beat when no
    other one moved). `family_size` is `family_of`'s count: 0 when no family was formed."""
    if family_size < 2 or options.correction == "none":
        return options.alpha
    return options.alpha / family_size


def _bootstrap(
    diffs: np.ndarray, options: RegressOptions, alpha: float
) -> tuple[tuple[float, float], float]:
    """Percentile interval (at `alpha`) of the mean paired difference and a two-sided bootstrap
    p-value.

    Tasks are resampled with replacement, all resamples at once (in blocks, to bound memory).
    """
    rng = np.random.default_rng(options.seed)
    count = len(diffs)
    block = max(1, 4_000_000 // count)
    means = []
    for start in range(0, options.resamples, block):
        size = min(block, options.resamples - start)
        means.append(diffs[rng.integers(0, count, size=(size, count))].mean(axis=1))
    sample = np.concatenate(means)
    low, high = np.quantile(sample, [alpha / 2, 1 - alpha / 2])
    p_value = min(1.0, 2 * min(float(np.mean(sample <= 0)), float(np.mean(sample >= 0))))
    return (float(low), float(high)), p_value


def _scipy_stats() -> Any:
    """scipy.stats, loaded on first use: it costs about a second at start-up, and only a
    regression needs it."""
    from scipy import stats

    return stats


def _paired_t(diffs: np.ndarray, alpha: float) -> tuple[tuple[float, float], float]:
    """Student t interval and p-value of the mean difference; zero variance is decided exactly."""
    mean = float(diffs.mean())
    spread = float(diffs.std(ddof=1))
    if spread == 0.0:
        # all differences equal: significant in their direction unless they are all zero
        return (mean, mean), (1.0 if mean == 0.0 else 0.0)
    result = _scipy_stats().ttest_1samp(diffs, 0.0)
    low, high = result.confidence_interval(confidence_level=1 - alpha)
    return (float(low), float(high)), float(result.pvalue)


def _sign_test(diffs: np.ndarray) -> float:
    positive = int((diffs > 0).sum())
    nonzero = int((diffs != 0).sum())
    if nonzero == 0:
        return 1.0
    return float(_scipy_stats().binomtest(positive, nonzero, 0.5).pvalue)


def _mcnemar(base_passed: np.ndarray, cand_passed: np.ndarray) -> tuple[float, int]:
    """Exact McNemar: binomial test on the discordant pairs; returns (p, gained − lost)."""
    gained = int((cand_passed & ~base_passed).sum())
    lost = int((base_passed & ~cand_passed).sum())
    if gained + lost == 0:
        return 1.0, 0
    return float(_scipy_stats().binomtest(gained, gained + lost, 0.5).pvalue), gained - lost


def score_column(options: RegressOptions) -> str:
    """The task column the test compares: the gating score (D-19) or the score."""
    return "gating_score" if options.score == "gating" else "score"


def paired_tasks(base: pl.DataFrame, cand: pl.DataFrame) -> pl.DataFrame:
    """The tasks on both sides, joined by taskId (the candidate's columns end in `_cand`), in
    taskId order: the pairs every test and plan reads (§5)."""
    return base.join(cand, on="task_id", how="inner", suffix="_cand").sort("task_id")


def paired_differences(paired: pl.DataFrame, column: str) -> np.ndarray:
    """Candidate − baseline `column`, one per paired task."""
    return (paired[f"{column}_cand"] - paired[column]).to_numpy().astype(float)


def compare(
    base: pl.DataFrame,
    cand: pl.DataFrame,
    options: RegressOptions,
    *,
    suite_id: str,
    base_run: str,
    cand_run: str,
    family: Family | None = None,
) -> Comparison:
    """Compare one baseline run with one candidate run of the same suite.

    `base` and `cand` are task rows (`tasks.parquet` columns: task_id, score, gating_score, passed,
    suite_version) of one run each. Under a `family` (several suites gated at once), the
    interval is drawn at the family's level and a change is called on the adjusted p-value.
    """
    column = score_column(options)
    paired = paired_tasks(base, cand)
    delta = (_mean(cand["score"]) or 0.0) - (_mean(base["score"]) or 0.0)
    result = Comparison(
        suite_id=suite_id,
        suite_version=str(cand["suite_version"][0]),
        baseline_run_id=base_run,
        candidate_run_id=cand_run,
        paired_task_count=paired.height,
        score_delta=max(-1.0, min(1.0, delta)),
        verdict="inconclusive",
        method=options.method,
        alpha=options.alpha,
        family=family,
    )
    base_version, cand_version = str(base["suite_version"][0]), str(cand["suite_version"][0])
    if base_version != cand_version:
        result.reason = f"suite versions differ: baseline {base_version}, candidate {cand_version}"
        result.nothing_compared = True
        return result
    if paired.height < 2:
        result.nothing_compared = paired.height == 0
        result.reason = f"{paired.height} paired task(s); at least 2 are needed"
        return result

    diffs = paired_differences(paired, column)
    result.mean_difference = float(diffs.mean())
    result.task_differences = list(zip(paired["task_id"].to_list(), diffs.tolist(), strict=True))
    result.score = options.score
    other = "score" if column == "gating_score" else "gating_score"
    result.other_difference = float(paired_differences(paired, other).mean())
    order = np.argsort(-np.abs(diffs), kind="stable")
    result.moved = [
        (paired["task_id"][int(i)], float(diffs[i])) for i in order[:5] if diffs[i] != 0
    ]
    all_zero = bool(np.all(diffs == 0))
    effect = result.mean_difference
    level = result.interval_alpha
    if options.method == "paired-bootstrap":
        result.interval, result.p_value = _bootstrap(diffs, options, level)
        rejected = result.interval[0] > 0 or result.interval[1] < 0
    elif options.method == "paired-t":
        result.interval, result.p_value = _paired_t(diffs, level)
        rejected = result.p_value < options.alpha
    elif options.method == "sign-test":
        result.p_value = _sign_test(diffs)
        rejected = result.p_value < options.alpha
        effect = float(np.sign(diffs).sum())
    else:
        base_passed = paired["passed"].to_numpy().astype(bool)
        cand_passed = paired["passed_cand"].to_numpy().astype(bool)
        result.p_value, net = _mcnemar(base_passed, cand_passed)
        rejected = result.p_value < options.alpha
        effect = float(net)
        all_zero = bool(np.all(base_passed == cand_passed))
    if family is not None:
        rejected = family.adjusted_p_value < options.alpha
    result.min_drop, result.margin = options.min_drop, options.margin
    result.within_margin = bool(
        rejected
        and result.interval is not None
        and result.interval[0] >= -options.margin
        and result.interval[1] <= options.margin
    )

    if rejected and effect != 0 and not all_zero:
        result.verdict = "improved" if effect > 0 else "regressed"
    elif all_zero or (
        result.interval is not None
        and result.interval[0] >= -options.margin
        and result.interval[1] <= options.margin
    ):
        result.verdict = "unchanged"
    return result
