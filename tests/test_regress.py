"""The paired regression verdict: CONTRACT §5, D-16, D-19 (RFC 0244 §F)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import click
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.commands.regress import regress_command
from evalbatch.errors import InputError, OptionError
from evalbatch.options import (
    ALPHA,
    CORRECTIONS,
    EFFECT,
    MARGIN,
    MAX_RESAMPLES,
    METHODS,
    MIN_DROP,
    MIN_RESAMPLES,
    POWER,
    RESAMPLES,
    SCORES,
    SEED,
    Bounds,
)
from evalbatch.reduce import paired_verdict
from tests.helpers import bound_probes, cli_accepts, cli_param, run_evalbatch

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"
BASE = SAMPLES / "regress" / "baseline.parquet"
CAND = SAMPLES / "regress" / "candidate.parquet"
SUITES = SAMPLES / "suites"


def task_rows(
    scores: Any,
    *,
    gating: Any = None,
    passed: Any = None,
    ids: list[str] | None = None,
    version: str = "1.0.0",
    run: str = "acme/run",
) -> pl.DataFrame:
    """Task rows in the tasks.parquet shape `paired_verdict.compare` reads."""
    scores = [float(s) for s in scores]
    gating = scores if gating is None else [float(g) for g in gating]
    passed = [s == 1.0 for s in scores] if passed is None else list(passed)
    ids = ids or [f"t-{i}" for i in range(len(scores))]
    return pl.DataFrame(
        {
            "run_id": [run] * len(scores),
            "suite_version": [version] * len(scores),
            "task_id": ids,
            "score": scores,
            "gating_score": gating,
            "passed": passed,
        }
    )


def write_task_table(
    path: Path, tasks: pl.DataFrame, suite_id: str = "acme.team.evals.support", **grading: Any
) -> Path:
    """`tasks` as a tasks.parquet with the runs.parquet `evalbatch run` writes beside it (its
    provenance columns say how each run was graded: by default host record, default options)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if "suite_id" not in tasks.columns:
        tasks = tasks.with_columns(pl.lit(suite_id).alias("suite_id"))
    tasks.write_parquet(path)
    runs = tasks.group_by("run_id", maintain_order=True).agg(
        pl.col("suite_id").first(), pl.col("suite_version").first()
    )
    provenance = {
        "has_suite": False,
        "suite_sha256": None,
        "default_pass_score": 1.0,
        "on_miss_default": "count",
    } | grading
    runs.with_columns(
        pl.lit(True).alias("graded"),
        pl.lit(provenance["has_suite"]).alias("has_suite"),
        pl.lit(provenance["suite_sha256"], dtype=pl.String).alias("suite_sha256"),
        pl.lit(provenance["default_pass_score"], dtype=pl.Float64).alias("default_pass_score"),
        pl.lit(provenance["on_miss_default"], dtype=pl.String).alias("on_miss_default"),
    ).write_parquet(path.with_name("runs.parquet"))
    return path


def verdict(base: pl.DataFrame, cand: pl.DataFrame, **options: Any) -> paired_verdict.Comparison:
    return paired_verdict.compare(
        base,
        cand,
        paired_verdict.RegressOptions(**options),
        suite_id="acme.team.evals.support",
        base_run="acme/base",
        cand_run="acme/cand",
    )


# --- D-16: identical runs, direction, margin -------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_identical_runs_are_unchanged_for_every_method(method: str) -> None:
    """D-16 / RFC 0244 §F: identical runs are always `unchanged` (the witnessable case)."""
    rng = np.random.default_rng(3)
    scores = rng.choice([0.0, 1 / 3, 2 / 3, 1.0], size=25)
    result = verdict(task_rows(scores), task_rows(scores), method=method)
    assert result.verdict == "unchanged"
    assert result.paired_task_count == 25
    assert result.score_delta == 0.0


@pytest.mark.parametrize("method", METHODS)
def test_identical_sample_logs_are_unchanged(method: str) -> None:
    """D-16 end to end: the sample baseline against itself, every method (compared on
    purpose: E-114 refuses it otherwise)."""
    report = api.regress_paths(
        [BASE],
        [BASE],
        [SUITES],
        options=paired_verdict.RegressOptions(method=method),
        allow_same_run=True,
    )
    assert [c.verdict for c in report.comparisons] == ["unchanged"]
    assert report.exit_code == 0


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("direction", [1, -1])
def test_each_method_reports_the_direction(method: str, direction: int) -> None:
    """D-16: a rejected null gives `improved` or `regressed` by the sign of the effect."""
    base = np.zeros(20)
    cand = np.ones(20)
    if direction < 0:
        base, cand = cand, base
    result = verdict(task_rows(base), task_rows(cand), method=method)
    assert result.verdict == ("improved" if direction > 0 else "regressed")
    assert np.sign(result.score_delta) == direction


@pytest.mark.parametrize("method", ["paired-bootstrap", "paired-t"])
def test_all_equal_nonzero_differences_are_significant(method: str) -> None:
    """§5: paired differences all equal and non-zero are significant (no NaN t statistic)."""
    base = np.full(5, 0.5)
    result = verdict(task_rows(base), task_rows(base - 0.25), method=method)
    assert result.verdict == "regressed"
    assert result.p_value is not None and not np.isnan(result.p_value)


@pytest.mark.parametrize("method", ["paired-bootstrap", "paired-t"])
def test_interval_inside_margin_is_unchanged(method: str) -> None:
    """D-16: not rejected and the (1−alpha) interval inside ±margin → `unchanged`."""
    rng = np.random.default_rng(5)
    base = rng.uniform(0.3, 0.7, size=200)
    noise = rng.choice([-0.01, 0.01], size=200)
    result = verdict(task_rows(base), task_rows(base + noise), method=method)
    assert result.interval is not None
    assert result.interval[0] >= -0.02 and result.interval[1] <= 0.02
    assert result.verdict == "unchanged"
    wide = verdict(task_rows(base), task_rows(base + noise), method=method, margin=0.0)
    assert wide.verdict == "inconclusive"


def test_sign_test_and_mcnemar_cannot_call_small_noisy_changes_unchanged() -> None:
    """D-16: without an interval, only all-zero differences are `unchanged`."""
    base = task_rows([1, 0, 1, 0, 1, 0])
    cand = task_rows([0, 1, 1, 0, 1, 0])
    for method in ("sign-test", "mcnemar"):
        assert verdict(base, cand, method=method).verdict == "inconclusive"


# --- D-19: the compared number -----------------------------------------------------------


def test_broken_tool_path_is_a_regression_under_gating_scores() -> None:
    """D-19: same answers (meanScore) but unmatched trajectories (gating 0) → regressed;
    `--score output` compares meanScore instead and sees no change."""
    scores = np.ones(12)
    base = task_rows(scores)
    cand = task_rows(scores, gating=np.zeros(12), passed=[False] * 12)
    assert verdict(base, cand).verdict == "regressed"
    assert verdict(base, cand, score="output").verdict == "unchanged"


# --- pairing ----------------------------------------------------------------------------


def test_disjoint_task_sets_are_inconclusive() -> None:
    """§5: only tasks on both sides are compared; fewer than 2 paired → inconclusive."""
    base = task_rows([1, 1, 1], ids=["a", "b", "c"])
    cand = task_rows([0, 0, 0], ids=["x", "y", "z"])
    result = verdict(base, cand)
    assert result.paired_task_count == 0
    assert result.verdict == "inconclusive"
    assert result.reason is not None


def test_partial_overlap_pairs_by_task_id() -> None:
    """§5 / RFC 0244 §F: pairedTaskCount = shared taskIds; unshared tasks do not count."""
    base = task_rows([1, 1, 1, 0], ids=["a", "b", "c", "only-base"])
    cand = task_rows([1, 1, 1, 1, 0], ids=["c", "b", "a", "only-cand", "other"])
    result = verdict(base, cand)
    assert result.paired_task_count == 3
    assert result.verdict == "unchanged"  # the three shared tasks did not move
    assert result.score_delta == pytest.approx(0.8 - 0.75)  # aggregate delta, RFC's scoreDelta


def test_one_paired_task_is_inconclusive() -> None:
    result = verdict(task_rows([1], ids=["a"]), task_rows([0], ids=["a"]))
    assert result.paired_task_count == 1
    assert result.verdict == "inconclusive"


def test_different_suite_versions_are_inconclusive() -> None:
    """§5: a different suiteVersion on the two sides gives no verdict but inconclusive."""
    base = task_rows([1, 1, 1], version="1.0.0")
    cand = task_rows([0, 0, 0], version="1.1.0")
    result = verdict(base, cand)
    assert result.verdict == "inconclusive"
    assert "version" in (result.reason or "")


# --- calibration (fixed seeds: deterministic) --------------------------------------------


def _simulate(method: str, worse: bool, sims: int, tasks: int = 40, trials: int = 3) -> float:
    """Share of simulated pairs called improved/regressed (null) or regressed (worse)."""
    rng = np.random.default_rng(2026)
    calls = 0
    for sim in range(sims):
        rates = rng.uniform(0, 1, tasks)
        cand_rates = rates.copy()
        if worse:
            hit = rng.choice(tasks, tasks * 6 // 10, replace=False)
            cand_rates[hit] = np.clip(cand_rates[hit] - 0.4, 0, 1)
        base = rng.binomial(trials, rates) / trials
        cand = rng.binomial(trials, cand_rates) / trials
        result = verdict(task_rows(base), task_rows(cand), method=method, seed=sim)
        if worse:
            calls += result.verdict == "regressed"
        else:
            calls += result.verdict in ("improved", "regressed")
    return calls / sims


@pytest.mark.parametrize("method", ["paired-bootstrap", "paired-t"])
@pytest.mark.slow  # a calibration over many resampled suites
def test_false_alarm_rate_near_alpha_when_nothing_changed(method: str) -> None:
    """Pairs drawn from one agent (same per-task pass rates, 3 trials): the rate of
    improved + regressed at alpha 0.05 stays near 5% (400 simulated pairs, 40 tasks)."""
    assert _simulate(method, worse=False, sims=400) <= 0.075


@pytest.mark.parametrize("method", ["paired-bootstrap", "paired-t"])
def test_clearly_worse_candidate_is_regressed(method: str) -> None:
    """A candidate 0.4 worse on 60% of tasks is called `regressed` nearly always."""
    assert _simulate(method, worse=True, sims=150) >= 0.95


# --- sides, run selection, the run's regression block --------------------------------------


def test_task_tables_give_the_same_verdict_as_logs(tmp_path: Path) -> None:
    """§5: a side may be the tasks.parquet written by `evalbatch run`."""
    runner = CliRunner()
    for name, log in (("base", BASE), ("cand", CAND)):
        result = runner.invoke(
            cli, ["run", str(log), "--suites", str(SUITES), "--out", str(tmp_path / name)]
        )
        assert result.exit_code == 0, result.output
    from_tables = api.regress_paths(
        [tmp_path / "base" / "tasks.parquet"], [tmp_path / "cand" / "tasks.parquet"]
    )
    from_logs = api.regress_paths([BASE], [CAND], [SUITES])
    assert [c.block() for c in from_tables.comparisons] == [
        c.block() for c in from_logs.comparisons
    ]
    assert from_logs.comparisons[0].verdict == "regressed"


def test_several_runs_of_a_suite_on_one_side_are_refused(tmp_path: Path) -> None:
    """§5: a side holding several runs of a suite is refused with the runs listed."""
    with pytest.raises(InputError, match="--base-run-id"):
        api.regress_paths([str(SAMPLES / "regress")], [CAND], [SUITES])
    chosen = api.regress_paths(
        [str(SAMPLES / "regress")], [CAND], [SUITES], base_run="acme/run-regress-baseline-0001"
    )
    assert chosen.comparisons[0].baseline_run_id == "acme/run-regress-baseline-0001"
    assert chosen.comparisons[0].verdict == "regressed"


def test_run_writes_the_regression_block_when_the_baseline_is_in_the_input() -> None:
    """§3.6 / §4: `regression` appears on the candidate when its baseline is in the same input."""
    result = api.grade_paths([SAMPLES / "regress"], [SUITES])
    block = result.summaries["acme/run-regress-candidate-0001"]["regression"]
    assert block == {
        "baselineRunId": "acme/run-regress-baseline-0001",
        "scoreDelta": pytest.approx(-0.4),
        "verdict": "regressed",
        "method": "paired-bootstrap",
        "alpha": 0.05,
        "pairedTaskCount": 10,
    }
    keys = list(result.summaries["acme/run-regress-candidate-0001"])
    assert keys.index("regression") == len(keys) - 2  # just before `tasks` (§4 order)
    assert "regression" not in result.summaries["acme/run-regress-baseline-0001"]


def test_run_without_the_baseline_in_the_input_writes_no_block() -> None:
    result = api.grade_paths([CAND], [SUITES])
    assert "regression" not in result.summaries["acme/run-regress-candidate-0001"]


# --- CLI: output and exit codes --------------------------------------------------------------


def test_cli_regressed_exits_1_and_prints_the_table() -> None:
    """§5 exit codes: 1 when the verdict is regressed."""
    result = CliRunner().invoke(cli, ["regress", str(BASE), str(CAND), "--suites", str(SUITES)])
    assert result.exit_code == 1, result.output
    assert "REGRESSED" in result.output
    assert "paired tasks 10" in result.output
    assert "moved most:" in result.output


def test_cli_json_carries_the_block_and_statistics() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "regress",
            str(BASE),
            str(CAND),
            "--suites",
            str(SUITES),
            "--json",
            "--method",
            "paired-t",
        ],
    )
    report = json.loads(result.output)["comparisons"]  # E-68: an object, not a bare list
    assert report[0]["regression"]["verdict"] == "regressed"
    assert report[0]["regression"]["method"] == "paired-t"
    assert set(report[0]) >= {"meanDifference", "interval", "pValue", "moved"}
    assert report[0]["pValue"] < 0.05


def test_cli_unchanged_exits_0_and_fail_on_inconclusive(tmp_path: Path) -> None:
    """§5 exit codes: 0 for unchanged or inconclusive; `--fail-on inconclusive` fails on it."""
    runner = CliRunner()
    same = runner.invoke(
        cli, ["regress", str(BASE), str(BASE), "--suites", str(SUITES), "--allow-same-run"]
    )
    assert same.exit_code == 0, same.output
    base, cand = tmp_path / "base" / "tasks.parquet", tmp_path / "cand" / "tasks.parquet"
    for path, scores, run in (
        (base, [1, 0, 1, 0, 1, 0], "acme/b"),
        (cand, [0, 1, 1, 0, 1, 1], "acme/c"),
    ):
        write_task_table(path, task_rows(scores, run=run))
    loose = runner.invoke(cli, ["regress", str(base), str(cand)])
    assert loose.exit_code == 0, loose.output
    assert "INCONCLUSIVE" in loose.output
    strict = runner.invoke(cli, ["regress", str(base), str(cand), "--fail-on", "inconclusive"])
    assert strict.exit_code == 1


@pytest.mark.slow  # the installed script, in new processes
def test_cli_unusable_input_exits_2() -> None:
    """§5: exit 2 when the input is unusable; no traceback."""
    proc = run_evalbatch("regress", "no/such/file.parquet", CAND)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    refused = run_evalbatch("regress", SAMPLES / "regress", CAND, "--suites", SUITES)
    assert refused.returncode == 2
    assert "acme/run-regress-baseline-0001" in refused.stderr
    assert "--base-run-id" in refused.stderr


# --- E-130: RegressOptions checks itself, with the ranges `regress` has ----------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"alpha": 3.0, "resamples": -1}, "alpha = 3.0"),
        ({"resamples": -1}, "resamples = -1"),
        ({"resamples": MIN_RESAMPLES - 1}, f"resamples = {MIN_RESAMPLES - 1}"),
        ({"resamples": MAX_RESAMPLES + 1}, f"resamples = {MAX_RESAMPLES + 1}"),
        ({"resamples": 10_000.0}, "resamples = 10000.0"),
        ({"method": "wilcoxon"}, "method = 'wilcoxon'"),
        ({"alpha": 0.0}, "alpha = 0.0"),
        ({"alpha": 1}, "alpha = 1"),
        ({"alpha": math.nan}, "alpha = nan"),
        ({"alpha": True}, "alpha = True"),
        ({"margin": 1.0}, "margin = 1.0"),
        ({"margin": -0.01}, "margin = -0.01"),
        ({"seed": -1}, "seed = -1"),
        ({"seed": 1.5}, "seed = 1.5"),
        ({"seed": True}, "seed = True"),
        ({"score": "mean"}, "score = 'mean'"),
        ({"correction": "bonferroni"}, "correction = 'bonferroni'"),
        ({"plan": "yes"}, "plan = 'yes'"),
        ({"effect": 0.0}, "effect = 0.0"),
        ({"effect": 1.5}, "effect = 1.5"),
        ({"effect": math.inf}, "effect = inf"),
        ({"power": 1.0}, "power = 1.0"),
        ({"power": 0}, "power = 0"),
        ({"min_drop": -0.01}, "min_drop = -0.01"),
        ({"min_drop": 1.0}, "min_drop = 1.0"),
    ],
)
def test_e130_regress_options_refuse_what_regress_refuses(
    fields: dict[str, Any], named: str
) -> None:
    """E-130 / D-16 / E-114: a RegressOptions `regress` could not be given is refused when it is
    made, naming the field, the value and what is allowed (a ValueError, and the project's
    OptionError, which a command shows as one line with exit code 2)."""
    with pytest.raises(OptionError, match=re.escape(f"RegressOptions.{named}: must be")) as raised:
        paired_verdict.RegressOptions(**fields)
    assert isinstance(raised.value, ValueError)


def test_e130_regress_defaults_and_every_cli_edge_still_construct() -> None:
    """E-130: the defaults, and each value at an edge `regress` takes, make the object."""
    assert paired_verdict.RegressOptions().resamples == MIN_RESAMPLES
    for method in METHODS:
        paired_verdict.RegressOptions(method=method)
    for score in SCORES:
        for correction in CORRECTIONS:
            paired_verdict.RegressOptions(score=score, correction=correction, plan=True)
    tiny, near_one = math.nextafter(0, 1), math.nextafter(1, 0)
    paired_verdict.RegressOptions(alpha=tiny, margin=0, seed=0, resamples=MIN_RESAMPLES)
    paired_verdict.RegressOptions(
        alpha=near_one, margin=near_one, seed=2**63, resamples=MAX_RESAMPLES
    )
    paired_verdict.RegressOptions(effect=tiny, power=tiny)
    paired_verdict.RegressOptions(effect=1, power=near_one, alpha=np.float64(0.1), seed=np.int64(7))


#: each number `regress` takes: its option, the RegressOptions field, the command's keyword
REGRESS_NUMBERS = [
    ("--alpha", "alpha", "alpha", ALPHA),
    ("--margin", "margin", "margin", MARGIN),
    ("--seed", "seed", "seed", SEED),
    ("--resamples", "resamples", "resamples", RESAMPLES),
    ("--effect", "effect", "effect", EFFECT),
    ("--power", "power", "power", POWER),
    ("--min-drop", "min_drop", "min_drop", MIN_DROP),
]


@pytest.mark.parametrize(("option", "field", "keyword", "bounds"), REGRESS_NUMBERS)
def test_e130_regress_and_its_options_allow_the_same_numbers(
    option: str, field: str, keyword: str, bounds: Bounds
) -> None:
    """E-130: one range, declared once: at, just inside and just outside each end (and NaN,
    infinities), `regress` takes a value exactly when RegressOptions does."""
    for value in bound_probes(bounds):
        text = str(value) if isinstance(value, int) else repr(value)
        try:
            paired_verdict.RegressOptions(**{field: value})
            made = True
        except OptionError as exc:
            assert f"RegressOptions.{field} = " in str(exc)
            made = False
        assert cli_accepts(regress_command, keyword, text) == made, (option, value)


@pytest.mark.parametrize(
    ("keyword", "choices"),
    [("method", METHODS), ("score_kind", SCORES), ("correction", CORRECTIONS)],
)
def test_e130_regress_choices_are_the_declared_ones(keyword: str, choices: tuple[str, ...]) -> None:
    """E-130: `regress`'s choices are the tuples RegressOptions checks against."""
    param = cli_param(regress_command, keyword)
    assert isinstance(param.type, click.Choice)
    assert tuple(param.type.choices) == choices


@pytest.mark.parametrize(
    "args",
    [
        ["--alpha", "3.0"],
        ["--alpha", "0"],
        ["--margin", "1"],
        ["--seed", "-1"],
        ["--resamples", "-1"],
        ["--effect", "0"],
        ["--power", "1"],
        ["--method", "wilcoxon"],
        ["--score", "mean"],
        ["--correction", "bonferroni"],
    ],
)
def test_e130_regress_still_refuses_with_its_usage_line(args: list[str]) -> None:
    """E-130 / E-82: on the command line the same values are click's usage error: exit 2, the
    usage line, the option named, no traceback."""
    result = CliRunner().invoke(cli, ["regress", str(BASE), str(CAND), *args])
    assert result.exit_code == 2, result.output
    assert "Usage: " in result.output and " regress " in result.output
    assert f"Invalid value for '{args[0]}'" in result.output
    assert "Traceback" not in result.output
