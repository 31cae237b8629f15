"""Exact conversions between pure ε-DP, (ε, δ)-DP and ρ-zCDP.

What this module is for
-----------------------
A release pipeline is usually budgeted in ρ-zCDP (it composes by adding ρ's), while users
state their budget as (ε, δ).  Turning one into the other can be done with very different
amounts of slack, and the slack translates directly into noise variance (for the Gaussian
mechanism σ² ∝ 1/ρ).  This module provides, from tightest to loosest:

* :func:`gaussian_delta` / :func:`gaussian_rho` / :func:`gaussian_epsilon` — the *exact*
  privacy profile δ(ε) of a Gaussian mechanism, and of any composition of Gaussian
  mechanisms, whose total zCDP parameter is ρ (it is μ-GDP with μ = √(2ρ)).  Use these
  when every noise source in the pipeline is continuous Gaussian.
* :func:`zcdp_epsilon` / :func:`zcdp_delta` / :func:`zcdp_rho` — the conversion that is
  valid for an *arbitrary* ρ-zCDP mechanism (mixed pipelines, discrete Gaussian noise, pure
  DP steps converted with :func:`pure_to_zcdp`).
* :func:`bun_steinke_epsilon` / :func:`bun_steinke_rho` — the classical, looser conversion,
  kept only to show how much the two above gain.
* :func:`pure_to_zcdp` — ε-DP implies (ε²/2)-zCDP.

The validators :func:`positive` and :func:`probability` are shared by all functions here
(and importable by other modules); they raise :class:`dpviz.errors.InputError`.

Primary sources
---------------
* M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications, Extensions,
  and Lower Bounds", Theory of Cryptography Conference (TCC), 2016 — Prop. 1.3
  (ρ-zCDP ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP) and Prop. 1.4 (ε-DP ⇒ ε²/2-zCDP); composition of
  zCDP (Lemma 2.3); the Gaussian mechanism with σ² = Δ²/(2ρ) is ρ-zCDP (Prop. 1.6).
* B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential Privacy:
  Analytical Calibration and Optimal Denoising", International Conference on Machine
  Learning (ICML), 2018 — Theorem 8 (exact δ(ε) of the Gaussian mechanism).
* J. Dong, A. Roth and W. J. Su, "Gaussian Differential Privacy", Journal of the Royal
  Statistical Society, Series B, 2022 — Corollary 2.13 (μ-GDP ⇔ the same δ(ε) curve) and
  Corollary 3.3 (composing μᵢ-GDP mechanisms gives √(Σμᵢ²)-GDP).
* C. L. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential
  Privacy", Advances in Neural Information Processing Systems (NeurIPS), 2020 —
  Proposition 12 / Corollary 13 (the ρ-zCDP ⇒ (ε, δ)-DP conversion used here).

Numerics
--------
All functions are scalar, take and return Python floats, and work in log space where
tails are involved.  The Gaussian profile is evaluated through the Mills ratio
R(t) = Φ(−t)/φ(t) = √(π/2)·erfcx(t/√2), which removes the catastrophic cancellation
between Φ(μ/2 − ε/μ) and e^ε Φ(−μ/2 − ε/μ) for large ε: δ values down to ~1e-300 come out
with close to full relative precision.  (The one intrinsically ill-conditioned corner is a
vanishing μ, where δ is a difference of two nearly equal numbers; the relative error there
is at most about 4e-15/μ: ~1e-13 at ρ = 1e-3, ~1e-9 at ρ = 1e-12.)  Inverse functions use
Brent's method on a log-scale variable and then step the answer to the safe side, so that e.g.
``gaussian_delta(gaussian_rho(eps, delta), eps) <= delta`` holds in floating point.
"""

from __future__ import annotations

import functools
import math
import struct
import numbers
from typing import Callable

import numpy as np

from dpviz.errors import InputError

__all__ = [
    "positive",
    "probability",
    "gaussian_delta",
    "gaussian_rho",
    "gaussian_epsilon",
    "zcdp_epsilon",
    "zcdp_delta",
    "zcdp_rho",
    "bun_steinke_epsilon",
    "bun_steinke_rho",
    "pure_to_zcdp",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
_EPS = math.ulp(1.0)  # 2.22e-16


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------

def _shown(value: object) -> str:
    """How a rejected value appears in an error message (``-1``, ``nan``, ``None``, ``'x'``)."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return str(value)
    return repr(value)


def _real(name: str, value: object, expected: str) -> float:
    if (value is None or isinstance(value, (bool, np.bool_))
            or not isinstance(value, numbers.Real)):
        raise InputError(f"{name}: expected {expected}, got {_shown(value)}")
    x = float(value)
    if not math.isfinite(x):
        raise InputError(f"{name}: expected {expected}, got {_shown(value)}")
    return x


def positive(name: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite real number > 0, else raise InputError.

    Booleans and ``None`` are rejected even though ``float(True)`` would work.

    >>> positive("epsilon", 2)
    2.0
    >>> positive("epsilon", -1)
    Traceback (most recent call last):
    ...
    dpviz.errors.InputError: epsilon: expected a positive finite number, got -1
    """
    expected = "a positive finite number"
    x = _real(name, value, expected)
    if not x > 0.0:
        raise InputError(f"{name}: expected {expected}, got {_shown(value)}")
    return x


def probability(name: str, value: object) -> float:
    """Return ``float(value)`` if it lies in the open interval (0, 1), else raise InputError.

    >>> probability("delta", 1e-6)
    1e-06
    >>> probability("delta", 1)
    Traceback (most recent call last):
    ...
    dpviz.errors.InputError: delta: expected a probability strictly between 0 and 1, got 1
    """
    expected = "a probability strictly between 0 and 1"
    x = _real(name, value, expected)
    if not 0.0 < x < 1.0:
        raise InputError(f"{name}: expected {expected}, got {_shown(value)}")
    return x


# --------------------------------------------------------------------------------------
# Small numerical helpers
# --------------------------------------------------------------------------------------

def _mills(t: float) -> float:
    """Mills ratio R(t) = Φ(−t)/φ(t), accurate for t ≥ 0 (and moderate negative t)."""
    from scipy.special import erfcx  # lazy: keeps `import dpviz` and --help light
    return _SQRT_HALF_PI * float(erfcx(t * _SQRT_HALF))


def _softplus(s: float) -> float:
    """log(1 + e^s) without overflow."""
    return float(np.logaddexp(0.0, s))


def _find_bracket(f: Callable[[float], float], lo: float, hi: float,
                  step: float = 2.0, max_steps: int = 200) -> tuple[float, float]:
    """Widen [lo, hi] (by ``step`` on each side) until f(lo) < 0 < f(hi); f is increasing."""
    for _ in range(max_steps):
        if f(lo) < 0.0:
            break
        lo -= step
    else:  # pragma: no cover - would mean a bug in the caller's starting point
        raise ArithmeticError("could not bracket the root from below")
    for _ in range(max_steps):
        if f(hi) > 0.0:
            break
        hi += step
    else:  # pragma: no cover
        raise ArithmeticError("could not bracket the root from above")
    return lo, hi


def _ordered(x: float) -> int:
    """An integer key that orders doubles as the reals: consecutive doubles get consecutive keys."""
    i = struct.unpack("<q", struct.pack("<d", x))[0]
    return i if i >= 0 else -(i & 0x7FFF_FFFF_FFFF_FFFF)


def _from_ordered(k: int) -> float:
    bits = k if k >= 0 else (-k) | 0x8000_0000_0000_0000
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _bisect(f: Callable[[float], float], lo: float, hi: float) -> float:
    """The smallest double x in (lo, hi] with f(x) ≥ 0 for an increasing f with f(lo) < 0 ≤ f(hi):
    bisection on the doubles themselves (≤ 64 halvings of the ordered bit patterns), so the root is exact to
    one unit in the last place, with no SciPy import (``scipy.optimize`` pulls in ``scipy.sparse.linalg``,
    a tenth of a second of every release's ledger line)."""
    klo, khi = _ordered(lo), _ordered(hi)
    while khi - klo > 1:
        mid = (klo + khi) // 2
        if f(_from_ordered(mid)) < 0.0:
            klo = mid
        else:
            khi = mid
    return _from_ordered(khi)


def _root(f: Callable[[float], float], lo: float, hi: float) -> float:
    """Root of an increasing f on a bracket, to machine precision (:func:`_bisect`)."""
    flo, fhi = f(lo), f(hi)
    if flo == 0.0:
        return lo
    if fhi == 0.0:
        return hi
    return _bisect(f, lo, hi)


def _step_down(x: float, ok: Callable[[float], bool]) -> float:
    """Shrink x by factors (1 − u), (1 − 2u), (1 − 4u), … (u = 2⁻⁵²) until ``ok(x)`` holds."""
    u = _EPS
    for _ in range(200):
        if ok(x):
            return x
        x *= 1.0 - u
        u *= 2.0
    raise ArithmeticError("could not step to the safe side")  # pragma: no cover


def _step_up(x: float, ok: Callable[[float], bool]) -> float:
    """Grow x > 0 by factors (1 + u), (1 + 2u), (1 + 4u), … (u = 2⁻⁵²) until ``ok(x)`` holds."""
    u = _EPS
    for _ in range(200):
        if ok(x):
            return x
        x *= 1.0 + u
        u *= 2.0
    raise ArithmeticError("could not step to the safe side")  # pragma: no cover


# --------------------------------------------------------------------------------------
# Exact Gaussian profile (Balle & Wang 2018, Thm. 8; Dong, Roth & Su 2022, Cor. 2.13)
# --------------------------------------------------------------------------------------

def _gaussian_log_delta(mu: float, eps: float) -> float:
    """log δ(ε) of μ-GDP, for μ > 0 and ε ≥ 0 (may be very negative; −inf if δ = 0).

    With x = ε/μ − μ/2 (so −x = μ/2 − ε/μ) and x + μ = ε/μ + μ/2:

        δ = Φ(−x) − e^ε Φ(−x − μ) = φ(x)·[R(x) − R(x + μ)],

    the second form using e^ε φ(x + μ) = φ(x).  It is used for x ≥ 0, where the first form
    cancels; for x < 0, Φ(−x) > 1/2 and the first form is evaluated in log space.
    """
    from scipy.special import log_ndtr  # lazy: keeps `import dpviz` and --help light
    x = eps / mu - 0.5 * mu
    if x >= 0.0:
        diff = _mills(x) - _mills(x + mu)
        if not diff > 0.0:  # only if R(x) and R(x + μ) agree to all digits (μ ≲ 1e-16·x)
            return -math.inf
        return -0.5 * x * x - _LOG_SQRT_2PI + math.log(diff)
    log_p = float(log_ndtr(-x))
    log_q = eps + float(log_ndtr(-x - mu))  # ≤ log_p, no overflow since ε < μ²/2 here
    return log_p + math.log(-math.expm1(log_q - log_p))


def gaussian_delta(rho: float, epsilon: float) -> float:
    """Exact δ(ε) of a Gaussian mechanism (or any composition of them) with total ρ-zCDP.

    Such a mechanism is μ-GDP with μ = √(2ρ) (Dong, Roth & Su 2022, Cor. 3.3 for the
    composition), and its privacy profile is (Balle & Wang 2018, Thm. 8; Dong, Roth & Su
    2022, Cor. 2.13)

        δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).

    This is the smallest δ for which the mechanism is (ε, δ)-DP: no slack at all.  It is
    evaluated through the Mills ratio, so it stays accurate (and positive) for tiny δ.

    >>> round(gaussian_delta(0.5, 1.0), 6)
    0.126937
    >>> 0 < gaussian_delta(0.5, 37.0) < 1e-250
    True
    """
    rho = positive("rho", rho)
    epsilon = positive("epsilon", epsilon)
    return math.exp(_gaussian_log_delta(math.sqrt(2.0 * rho), epsilon))


def gaussian_rho(epsilon: float, delta: float) -> float:
    """Largest ρ such that a Gaussian mechanism with ρ-zCDP is (ε, δ)-DP, exactly.

    Inverts :func:`gaussian_delta` in ρ (δ(ε) increases with μ = √(2ρ)): Brent's method on
    log μ to machine precision, then the result is stepped down until
    ``gaussian_delta(rho, epsilon) <= delta`` holds in floating point.  This is the ρ a
    Gaussian-only pipeline should spend for a user's (ε, δ); it is never smaller than
    :func:`zcdp_rho` or :func:`bun_steinke_rho`.

    >>> rho = gaussian_rho(1.0, 1e-6)
    >>> round(rho, 6)
    0.028014
    >>> gaussian_delta(rho, 1.0) <= 1e-6
    True
    """
    return _gaussian_rho(positive("epsilon", epsilon), probability("delta", delta))


@functools.lru_cache(maxsize=4096)
def _gaussian_rho(epsilon: float, delta: float) -> float:
    """:func:`gaussian_rho` of validated arguments, memoised: a pure function of two floats, and the planner
    evaluates every curve on one ε grid (the same (ε, δ) pairs again and again; ~1 ms per root)."""
    log_delta = math.log(delta)

    def f(log_mu: float) -> float:
        return _gaussian_log_delta(math.exp(log_mu), epsilon) - log_delta

    # Bun–Steinke's ρ is a valid (looser) answer, so its μ is a good lower starting point.
    start = 0.5 * math.log(2.0 * bun_steinke_rho(epsilon, delta))
    lo, hi = _find_bracket(f, start - 0.5, start + 1.0, step=1.0)
    mu = math.exp(_root(f, lo, hi))
    rho = 0.5 * mu * mu
    # Compare in δ space (what callers see), not in log space, so the promise is exact.
    return _step_down(rho, lambda r: math.exp(_gaussian_log_delta(math.sqrt(2.0 * r), epsilon))
                      <= delta)


def gaussian_epsilon(rho: float, delta: float) -> float:
    """Smallest ε ≥ 0 such that a Gaussian mechanism with ρ-zCDP is (ε, δ)-DP, exactly.

    Inverts :func:`gaussian_delta` in ε (δ(ε) decreases in ε).  Returns 0.0 when already
    δ(0) = 2Φ(μ/2) − 1 ≤ δ.  Never larger than :func:`zcdp_epsilon`.

    >>> round(gaussian_epsilon(0.5, 1e-6), 6)
    4.886554
    """
    from scipy.special import ndtri  # lazy: keeps `import dpviz` and --help light
    rho = positive("rho", rho)
    delta = probability("delta", delta)
    mu = math.sqrt(2.0 * rho)
    log_delta = math.log(delta)
    # δ(0) = Φ(μ/2) − Φ(−μ/2), computed without cancellation.
    if math.erf(0.5 * mu * _SQRT_HALF) <= delta:
        return 0.0

    def f(eps: float) -> float:  # increasing in ε
        return log_delta - _gaussian_log_delta(mu, eps)

    # δ(ε) ≤ Φ(μ/2 − ε/μ) ≤ δ as soon as ε ≥ μ²/2 − μ·Φ⁻¹(δ).
    hi = 0.5 * mu * mu + mu * max(0.0, -float(ndtri(delta))) + 1e-12
    lo, hi = _find_bracket(f, 0.0, hi, step=1.0 + hi)
    if lo < 0.0:  # δ(0) via erf and via the log form disagree in the last bit: ε = 0
        return 0.0
    eps = _root(f, lo, hi)
    if eps <= 0.0:
        return 0.0
    return _step_up(eps, lambda e: math.exp(_gaussian_log_delta(mu, e)) <= delta)


# --------------------------------------------------------------------------------------
# General ρ-zCDP → (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Prop. 12 / Cor. 13)
# --------------------------------------------------------------------------------------

def _cks_epsilon_at(t: float, rho: float, log_inv_delta: float) -> float:
    """The objective of :func:`zcdp_epsilon` at α = 1 + t, t > 0."""
    alpha = 1.0 + t
    log_1m_inv_alpha = math.log(t) - math.log1p(t)  # log(1 − 1/α)
    return alpha * rho + (log_inv_delta + t * log_1m_inv_alpha - math.log1p(t)) / t


def _cks_log_delta_at(t: float, rho: float, eps: float) -> float:
    """The log of the objective of :func:`zcdp_delta` at α = 1 + t, t > 0."""
    alpha = 1.0 + t
    return t * (alpha * rho - eps) + t * (math.log(t) - math.log1p(t)) - math.log1p(t)


def _cks_alpha_minus_1(rho: float, log_inv_delta: float) -> float:
    """Minimiser t* = α* − 1 of the :func:`zcdp_epsilon` objective.

    The objective g(α) = αρ + (L + (α−1)log(1−1/α) − log α)/(α−1), L = log(1/δ), has
    g'(α) = ρ − (L − log α)/(α−1)², so with t = α − 1 the stationarity condition is
    h(t) = ρt² + log(1 + t) − L = 0.  h is strictly increasing, h(0) = −L < 0, so g is
    unimodal and t* is the unique root; it lies in [½·min(L, √(L/ρ)), min(√(L/ρ), e^L − 1)].
    """
    L = log_inv_delta

    def h(s: float) -> float:  # s = log t
        t = math.exp(s)
        return rho * t * t + math.log1p(t) - L

    lo = math.log(0.5 * min(L, math.sqrt(L / rho)))
    hi = math.log(min(math.sqrt(L / rho), math.expm1(L)))
    lo, hi = _find_bracket(h, lo, hi, step=1.0)
    return math.exp(_root(h, lo, hi))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε such that every ρ-zCDP mechanism is (ε, δ)-DP (Canonne, Kamath & Steinke 2020).

    Implements Prop. 12 / Cor. 13 of CKS 2020:

        ε = inf_{α>1} [ αρ + (log(1/δ) + (α−1)·log(1 − 1/α) − log α)/(α − 1) ].

    The objective is unimodal with the stationarity condition ρ(α−1)² = log(1/δ) − log α
    (see :func:`_cks_alpha_minus_1`), which is solved to machine precision, so the infimum
    is returned essentially exactly.  The result is clipped at 0 (it can only be negative
    for δ close to 1, where (0, δ)-DP then holds).  Always ≤ :func:`bun_steinke_epsilon`
    and ≥ :func:`gaussian_epsilon`.

    >>> round(zcdp_epsilon(0.5, 1e-6), 6)
    5.221534
    """
    rho = positive("rho", rho)
    delta = probability("delta", delta)
    L = -math.log(delta)
    t = _cks_alpha_minus_1(rho, L)
    return max(0.0, _cks_epsilon_at(t, rho, L))


def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ such that every ρ-zCDP mechanism is (ε, δ)-DP: CKS 2020, Cor. 13 solved for δ.

        δ = inf_{α>1} exp((α−1)(αρ − ε)) / α · (1 − 1/α)^(α−1).

    The log of the objective is convex in α with derivative (2α−1)ρ − ε + log(1 − 1/α);
    its unique zero is found on log(α − 1) and the minimum evaluated in log space.  This is
    the inverse of :func:`zcdp_epsilon` in δ.

    >>> round(zcdp_delta(0.5, zcdp_epsilon(0.5, 1e-6)) / 1e-6, 9)
    1.0
    """
    rho = positive("rho", rho)
    eps = positive("epsilon", epsilon)

    def dk(s: float) -> float:  # derivative of the log-objective at α = 1 + e^s, increasing
        t = math.exp(s)
        return (2.0 * t + 1.0) * rho - eps + s - _softplus(s)

    # Below: for t ≤ 1, dk ≤ 3ρ − ε + log t < 0 once log t < ε − 3ρ.
    lo = min(0.0, eps - 3.0 * rho - 1.0)
    # Above: with t ≥ max(ε/ρ, 1/√ρ), (2t+1)ρ − ε − 1/t > 0 and log(1−1/α) > −1/t.
    hi = math.log(max(eps / rho, 1.0 / math.sqrt(rho))) + 1.0
    lo, hi = _find_bracket(dk, lo, hi, step=1.0)
    t = math.exp(_root(dk, lo, hi))
    return math.exp(_cks_log_delta_at(t, rho, eps))


def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest ρ such that every ρ-zCDP mechanism is (ε, δ)-DP, per CKS 2020, Cor. 13.

    Use this (not :func:`gaussian_rho`) for mixed pipelines or discrete noise, where the
    exact Gaussian profile does not apply.  At the optimum α = 1 + t of
    :func:`zcdp_epsilon`, ρ = (L − log(1+t))/t² and ε = ρ(1 + 2t) + log(t/(1+t)) with
    L = log(1/δ); ε is strictly decreasing in t, so one root-find on log t gives ρ
    exactly.  The result is then stepped down until ``zcdp_epsilon(rho, delta) <= epsilon``.

    >>> round(zcdp_rho(1.0, 1e-6), 6)
    0.024356
    """
    return _zcdp_rho(positive("epsilon", epsilon), probability("delta", delta))


@functools.lru_cache(maxsize=4096)
def _zcdp_rho(eps: float, delta: float) -> float:
    """:func:`zcdp_rho` of validated arguments, memoised like :func:`_gaussian_rho` (a discrete Gaussian
    release given as (ε, δ) converts them on every draw: two root-findings, ~1.5 ms)."""
    L = -math.log(delta)

    def rho_of(s: float) -> float:  # ρ(t) at t = e^s; positive for t < e^L − 1
        return (L - _softplus(s)) * math.exp(-2.0 * s)

    def f(s: float) -> float:  # ε(t) − ε, decreasing in s; returned negated (increasing)
        r = rho_of(s)
        e = r + 2.0 * (L - _softplus(s)) * math.exp(-s) + s - _softplus(s)
        return eps - e

    # At t = e^L − 1 (ρ = 0) the implied ε is log(1 − δ) < 0 < ε.  Stay just inside.
    s_max = L + math.log(-math.expm1(-L))  # log(e^L − 1)
    hi = s_max - 1e-9 * max(1.0, abs(s_max))
    lo = min(0.0, hi - 1.0)
    lo, hi = _find_bracket(f, lo, hi, step=2.0)
    s = _root(f, lo, hi)
    rho = rho_of(s)

    def ok(r: float) -> bool:
        t = _cks_alpha_minus_1(r, L)
        return _cks_epsilon_at(t, r, L) <= eps

    return _step_down(rho, ok)


# --------------------------------------------------------------------------------------
# Classical conversions (Bun & Steinke 2016)
# --------------------------------------------------------------------------------------

def bun_steinke_epsilon(rho: float, delta: float) -> float:
    """ε = ρ + 2√(ρ log(1/δ)): ρ-zCDP ⇒ (ε, δ)-DP (Bun & Steinke 2016, Prop. 1.3).

    Kept only for comparison: it is always ≥ :func:`zcdp_epsilon`.

    >>> round(bun_steinke_epsilon(0.5, 1e-6), 6)
    5.756522
    """
    rho = positive("rho", rho)
    delta = probability("delta", delta)
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def bun_steinke_rho(epsilon: float, delta: float) -> float:
    """ρ = (√(log(1/δ) + ε) − √(log(1/δ)))², the inverse of :func:`bun_steinke_epsilon`.

    Bun & Steinke 2016, Prop. 1.3 solved for ρ; written as ε²/(√(L+ε) + √L)² with
    L = log(1/δ) to avoid cancellation for small ε.  Always ≤ :func:`zcdp_rho`.

    >>> round(bun_steinke_rho(1.0, 1e-6), 6)
    0.017469
    """
    eps = positive("epsilon", epsilon)
    delta = probability("delta", delta)
    L = -math.log(delta)
    return eps * eps / (math.sqrt(L + eps) + math.sqrt(L)) ** 2


def pure_to_zcdp(epsilon: float) -> float:
    """ρ = ε²/2: every ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4).

    >>> pure_to_zcdp(1.0)
    0.5
    """
    eps = positive("epsilon", epsilon)
    return 0.5 * eps * eps
