"""Trial statistics and threshold comparisons, pinned to their definitions (§3.5, §3.6, D-17)."""

from __future__ import annotations

import math
from fractions import Fraction

#: D-17: a float within this relative distance of a threshold is treated as equal to it
TIE_TOLERANCE = 1e-9


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Unbiased pass@k, 1 - C(n-c, k)/C(n, k), exactly; 0 when no trial passed (RFC 0244 §B).

    >>> pass_at_k(5, 4, 3)
    Fraction(1, 1)
    """
    if c == 0:
        return Fraction(0)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """pass^k (τ-bench), C(c, k)/C(n, k), exactly; 0 when fewer than k trials passed.

    >>> pass_hat_k(5, 4, 3)
    Fraction(2, 5)
    """
    if c < k:
        return Fraction(0)
    return Fraction(math.comb(c, k), math.comb(n, k))


def pass_by_k(n: int, c: int) -> tuple[list[float], list[float]]:
    """pass@k and pass^k for every k from 1 to n (E-52), each the float nearest the exact value.

    C(n-c, k)/C(n, k) and C(c, k)/C(n, k) are running products of (n-c-i)/(n-i) and (c-i)/(n-i),
    kept as unreduced integer numerators and denominators: one small multiplication per k instead
    of three binomials, and Python's integer division rounds the exact ratio correctly, so every
    value equals `float(pass_at_k(n, c, k))` and `float(pass_hat_k(n, c, k))` (E-78).

    >>> pass_by_k(3, 2)
    ([0.6666666666666666, 1.0, 1.0], [0.6666666666666666, 0.3333333333333333, 0.0])
    """
    at_k: list[float] = []
    hat_k: list[float] = []
    miss_num = hit_num = den = 1
    for k in range(1, n + 1):
        den *= n - k + 1
        miss_num *= max(n - c - k + 1, 0)
        hit_num *= max(c - k + 1, 0)
        at_k.append(0.0 if c == 0 else (den - miss_num) / den)
        hat_k.append(hit_num / den)
    return at_k, hat_k


def clustered_stderr(task_means: list[float]) -> float:
    """Sample standard deviation of the per-task mean scores over √taskCount (§B `scoreStderr`).

    Sums are correctly rounded (`math.fsum`), so the result does not depend on summation order.

    >>> clustered_stderr([1.0, 0.0])
    0.5
    """
    count = len(task_means)
    mean = math.fsum(task_means) / count
    variance = math.fsum((v - mean) ** 2 for v in task_means) / (count - 1)
    return math.sqrt(variance) / math.sqrt(count)


def _tied(x: float, threshold: float) -> bool:
    return abs(x - threshold) <= TIE_TOLERANCE * max(1.0, abs(threshold))


def at_least(x: float, threshold: float) -> bool:
    """x ≥ threshold, with D-17's tie tolerance."""
    return x >= threshold or _tied(x, threshold)


def at_most(x: float, threshold: float) -> bool:
    """x ≤ threshold, with D-17's tie tolerance."""
    return x <= threshold or _tied(x, threshold)


def p95_nearest_rank(values: list[int]) -> int:
    """Nearest-rank 95th percentile: the value at rank ⌈0.95·N⌉ of the ascending list (E-17).

    >>> p95_nearest_rank(list(range(1, 21)))
    19
    """
    ordered = sorted(values)
    rank = math.ceil(Fraction(95, 100) * len(ordered))
    return ordered[rank - 1]
