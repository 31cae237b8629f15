"""Conversions between pure ε-DP, (ε, δ)-DP and ρ-zCDP.

References: Bun & Steinke, "Concentrated Differential Privacy" (TCC 2016), Prop. 1.3 (ρ-zCDP ⇒
(ρ + 2 sqrt(ρ ln(1/δ)), δ)-DP) and Prop. 1.4 (ε-DP ⇒ ε²/2-zCDP).
"""

from __future__ import annotations

import math


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: ε = ρ + 2 sqrt(ρ ln(1/δ)) (Prop. 1.3)."""
    _check(rho=rho)
    _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest ρ whose zCDP guarantee implies (ε, δ)-DP through Prop. 1.3.

    Solves ρ + 2 sqrt(ρ L) = ε with L = ln(1/δ): sqrt(ρ) = sqrt(L + ε) - sqrt(L).

    >>> round(approx_dp_to_zcdp(zcdp_to_approx_dp(0.5, 1e-6), 1e-6), 12)
    0.5
    """
    _check(epsilon=epsilon)
    _check_delta(delta)
    big_l = math.log(1.0 / delta)
    return (math.sqrt(big_l + epsilon) - math.sqrt(big_l)) ** 2


def pure_dp_to_zcdp(epsilon: float) -> float:
    """ε-DP implies (ε²/2)-zCDP (Prop. 1.4)."""
    _check(epsilon=epsilon)
    return epsilon * epsilon / 2.0


def _check(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def _check_delta(delta: float) -> None:
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
