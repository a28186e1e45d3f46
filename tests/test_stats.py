"""Trial statistics pinned to the RFC 0244 §B formulas and D-17 ties."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from evalbatch.reduce import stats


def test_rfc_worked_example() -> None:
    """RFC 0244 §B example: n 5, c 4, k 3 → passAtK 1, passHatK 0.4."""
    assert stats.pass_at_k(5, 4, 3) == 1
    assert stats.pass_hat_k(5, 4, 3) == Fraction(2, 5)


@pytest.mark.parametrize("n", range(1, 9))
def test_formulas_match_definition_over_table(n: int) -> None:
    """§3.5: pass@k = 1 − C(n−c,k)/C(n,k) (0 when c = 0), pass^k = C(c,k)/C(n,k) (0 when c < k)."""
    for c in range(n + 1):
        for k in range(1, n + 1):
            at_k = 0.0 if c == 0 else 1 - math.comb(n - c, k) / math.comb(n, k)
            hat_k = 0.0 if c < k else math.comb(c, k) / math.comb(n, k)
            assert abs(float(stats.pass_at_k(n, c, k)) - at_k) <= 1e-9 * max(1, abs(at_k))
            assert abs(float(stats.pass_hat_k(n, c, k)) - hat_k) <= 1e-9 * max(1, abs(hat_k))


def test_pass_hat_k_is_not_the_plug_in_estimate() -> None:
    """pass^k is C(c,k)/C(n,k), never (c/n)^k (a peer's bug): 3 of 4 at k 2 is 1/2, not 9/16."""
    assert stats.pass_hat_k(4, 3, 2) == Fraction(1, 2)


def test_clustered_stderr_definition() -> None:
    """§3.6: sample standard deviation of per-task meanScore over √taskCount."""
    values = [1.0, 0.5, 0.0, 0.25]
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert stats.clustered_stderr(values) == pytest.approx(sd / 2, rel=1e-12)


def test_ties_are_ties() -> None:
    """D-17: mean of 0.7, 0.8, 0.9 against 0.8 is a tie, so it passes `≥`."""
    mean = (0.7 + 0.8 + 0.9) / 3
    assert mean != 0.8  # the float mean is off by an ulp or so
    assert stats.at_least(mean, 0.8)
    assert not stats.at_least(0.8 - 1e-6, 0.8)
    assert stats.at_most(0.1 + 0.2, 0.3)


def test_p95_nearest_rank() -> None:
    """E-17: the value at rank ⌈0.95·N⌉ of the ascending list."""
    assert stats.p95_nearest_rank([100]) == 100
    assert stats.p95_nearest_rank([5, 1, 3]) == 5
    assert stats.p95_nearest_rank(list(range(1, 101))) == 95
