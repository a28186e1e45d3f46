"""E-137: a drop that matters. D-16 stays the default gate (every regressed suite fails it);
`--min-drop` sets the smallest drop a regressed suite must show to fail it, and the output says
when a significant change lies inside ±margin."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch.cli import cli
from evalbatch.reduce import paired_verdict
from tests.helpers import SAMPLES

REGRESS = [
    "regress",
    str(SAMPLES / "regress" / "baseline.parquet"),
    str(SAMPLES / "regress" / "candidate.parquet"),
    "--suites",
    str(SAMPLES / "suites"),
]


def _runs(tasks: int, seed: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two runs of `tasks` tasks drawn alike, the candidate a hair lower on every task: a
    negligible drop that a thousand paired tasks make significant."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.9, tasks)
    cand = base - 0.005 + rng.normal(0, 0.01, tasks)
    frames = []
    for run, scores in (("acme/base", base), ("acme/cand", np.clip(cand, 0, 1))):
        frames.append(
            pl.DataFrame(
                {
                    "run_id": run,
                    "suite_id": "acme.s",
                    "suite_version": "1",
                    "task_id": [f"t{i:04d}" for i in range(tasks)],
                    "score": scores,
                    "gating_score": scores,
                    "passed": scores >= 0.5,
                }
            )
        )
    return frames[0], frames[1]


def _compare(**options: float) -> paired_verdict.Comparison:
    base, cand = _runs(1000)
    return paired_verdict.compare(
        base,
        cand,
        paired_verdict.RegressOptions(**options),  # type: ignore[arg-type]
        suite_id="acme.s",
        base_run="acme/base",
        cand_run="acme/cand",
    )


def test_e137_a_significant_drop_inside_the_margin_still_fails_the_default_gate() -> None:
    comparison = _compare()
    assert comparison.verdict == "regressed" and comparison.interval is not None
    assert comparison.interval[0] >= -0.02 and comparison.interval[1] < 0
    assert comparison.within_margin and comparison.fails_gate


@pytest.mark.parametrize("side", ["below", "above"])
def test_e137_min_drop_decides_at_the_threshold(side: str) -> None:
    """Just below the drop the gate fails; just above it the suite still says regressed, and
    fails no gate."""
    drop = -_compare().mean_difference  # type: ignore[operator]
    threshold = np.nextafter(drop, 0) if side == "below" else np.nextafter(drop, 1)
    comparison = _compare(min_drop=float(threshold))
    assert comparison.verdict == "regressed"
    assert comparison.fails_gate is (side == "below")


@pytest.mark.slow
@pytest.mark.parametrize(("min_drop", "code"), [("0.39", 1), ("0.41", 0)])
def test_e137_cli_exit_code_follows_min_drop(min_drop: str, code: int) -> None:
    """The samples drop by 0.4: regressed either way, the gate failing only under 0.4."""
    shown = CliRunner().invoke(cli, [*REGRESS, "--min-drop", min_drop])
    assert shown.exit_code == code, shown.output
    assert "REGRESSED" in shown.output
    below = "  a drop of 0.4000 is below --min-drop 0.41: this suite does not fail the gate"
    assert (below in shown.output.splitlines()) is (code == 0)
    document = json.loads(
        CliRunner().invoke(cli, [*REGRESS, "--min-drop", min_drop, "--json"]).output
    )
    assert document["comparisons"][0]["failsGate"] is (code == 1)
    assert document["comparisons"][0]["regression"]["verdict"] == "regressed"


@pytest.mark.slow
def test_e137_the_default_gate_is_d16() -> None:
    """Without --min-drop, a regressed suite fails the gate, as it always did."""
    shown = CliRunner().invoke(cli, REGRESS)
    assert shown.exit_code == 1
    assert "--min-drop" not in shown.output
