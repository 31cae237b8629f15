"""Discrete releases of real-valued factorisations W = L R (``sqrt`` today) on the lattice 2^−k ℤ.

**Why a lattice.** A release adds *discrete* noise (integers, CKS samplers of
:mod:`dpviz.core.samplers`) because floating-point noise leaks through its low-order bits (Mironov,
CCS 2012). Discrete noise is only private on values that lie on the noise's own lattice: the output
of ``v + G`` with ``G`` on ℤ^N has support ``v + ℤ^N``. For a real strategy R (the square-root
factor L = W^{1/2} has entries binom(2j, j)/4^j) the neighbouring answers ``R x`` and ``R x' =
R x ± R e_i`` differ by a vector that is not on ℤ^N (nor on 2^−k ℤ^N), so the two supports
``R x + ℤ^N`` and ``R x' + ℤ^N`` are *disjoint*: one output tells which stream it came from, an
infinite privacy loss, whatever the noise scale. Putting both answers on one lattice first makes the
supports coincide, and the loss is then the discrete Gaussian's, bounded below.

**The mechanism** (:func:`lattice_measure`), for a lower-triangular Toeplitz strategy R with
coefficients r_0..r_{N−1} (``R e_i`` = the coefficients shifted down to row i) and an integer
count stream x (event level: a neighbour is x ± e_i):

1. k = :func:`choose_bits` (at most :data:`LATTICE_BITS` = 40, a public function of N, ρ and R only);
2. the *strategy* is rounded once, to R̃ with coefficients C_j / 2^k, C_j = round(r_j 2^k) ∈ ℤ;
3. Z = 2^k R̃ x = C ⋆ x (a causal convolution) is computed **exactly** in integer arithmetic
   (:func:`exact_causal_convolution`; float64 ``R x`` has rounding errors far above 2^−40 once the
   totals are large, so rounding a computed ``R x`` would not be the mechanism analysed below);
4. y = 2^−k (Z + G), G ~ N_ℤ(0, (σ 2^k)²)^N from the CKS sampler (OS CSPRNG when ``rng`` is None),
   drawn by :func:`dpviz.core.protocols.measure` on the low 32-bit words of Z (the high words added back
   exactly), σ = Δ/√(2ρ) with Δ the charged sensitivity below;
5. the published running totals are L y (post-processing; float64 is fine from here on).

**Charged sensitivity** Δ = max_i ‖R e_i‖₂ + √N·2^−k. *Proof that it bounds the true one.* For
neighbours x' = x ± e_i, Z(x') − Z(x) = ±2^k R̃ e_i, an integer vector, so both outputs live on
2^−k ℤ^N (same support). Each entry of R̃ − R is a rounding error of magnitude ≤ 2^{−k−1}, and
column i has N − i + 1 ≤ N entries, so by the triangle inequality

    ‖R̃ e_i‖₂ ≤ ‖R e_i‖₂ + ‖(R̃ − R) e_i‖₂ ≤ max_i ‖R e_i‖₂ + √N·2^{−k−1} ≤ Δ.

(The same Δ also covers rounding the two *vectors* instead, as the issue states it: with
a = round(R x), b = round(R x'), a − b = R(x − x') + (u − u') with ‖u − u'‖_∞ ≤ 2^−k, so
‖a − b‖₂ ≤ ‖R e_i‖₂ + √N·2^−k; rounding the matrix only halves the slack.) The code does not rely
on the float value of ‖R e_i‖₂: :func:`charged_lattice` checks Σ_j C_j² ≤ (2^k Δ)² exactly in integer
/ rational arithmetic. By CKS 2020 (Thm. 4 and its multivariate form, Thm. 14), adding
N_ℤ(0, s²)^N to integer vectors that differ by μ is ‖μ‖₂²/(2s²)-zCDP; here s = σ 2^k and
‖μ‖₂ = 2^k ‖R̃ e_i‖₂ ≤ 2^k Δ, so the release is Δ²/(2σ²) = ρ-zCDP per event. Exactly: the
log-ratio of the two output probabilities at a lattice point y is
Σ_t ((y_t − b_t)² − (y_t − a_t)²)/(2σ²) (the normalising constants are equal: an integer shift of
a discrete Gaussian on ℤ has the same normaliser).

**Lattice size.** The sampler accepts scales up to :data:`~dpviz.core.samplers.MAX_SCALE` = 2^40,
so k = 40 when σ ≤ 1 and k = 40 − ⌈log2 σ⌉ (about) otherwise: σ 2^k ≤ 2^40 always. The slack
relative to the noise, √N 2^−k / σ ≤ 2√N·2^−40, is then below 10^−9 for N ≤ 2^20 — the
release's noise is σ to nine digits, and its variance is exact (:class:`LatticeMeasurement`).

**Pure ε-DP (Laplace) is refused** for real factorisations: the same lattice with discrete Laplace
noise would be valid (ℓ₁ sensitivity plus N·2^−k), but the ℓ₁ column norm of the square-root factor
grows as 2√(N/π), so it is never competitive with the integer mechanisms; a Laplace release of
``sqrt`` exits with one line (:data:`LAPLACE_REFUSAL`).

Bias: E[y] = R̃ x, so the released totals have mean L R̃ x = W x + L(R̃ − R) x, off by at most
‖L‖_∞ 2^{−k−1} ‖x‖₁ ≈ 2√(N/π)·2^{−k−1}‖x‖₁ (5·10^−10 ‖x‖₁ at k = 40, N = 2^20): far below the noise.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dpviz.core.noise import Noise
from dpviz.core.protocols import LinearMeasurement, measure, require_integral
from dpviz.core.samplers import MAX_SCALE, discrete_gaussian_variance
from dpviz.errors import InputError
from dpviz.stream.fenwick import MAX_COUNT

__all__ = ["LATTICE_BITS", "LAPLACE_REFUSAL", "Lattice", "LatticeMeasurement", "choose_bits", "charged_lattice",
           "quantised_coefficients", "exact_causal_convolution", "lattice_answer", "lattice_measure"]

LATTICE_BITS = 40
"""k of the finest lattice 2^−k ℤ a real-valued strategy is rounded to (module docstring). A release uses
k = LATTICE_BITS unless σ·2^k would exceed the sampler's MAX_SCALE = 2^40, then the largest k below."""

LAPLACE_REFUSAL = ("mechanism 'sqrt': a real-valued factorisation is released with discrete Gaussian noise only "
                   "(ρ-zCDP: give --rho, or --epsilon with --delta); its ℓ₁ sensitivity grows as √N, so pure "
                   "ε-DP (Laplace) is refused")

_DIGIT_CHUNK = 18  # decimal digits per int64 limb when unpacking the exact product


@dataclass(frozen=True)
class Lattice:
    """The lattice 2^−``bits`` ℤ of one release and its accounting (all public: N, ρ and R only).

    ``base_sensitivity`` = max_i ‖R e_i‖₂ (float), ``slack`` = √N·2^−k, ``sigma`` = σ of the noise in
    value units (= noise.scale(sensitivity)); the sampler draws N_ℤ(0, (σ 2^k)²) on ℤ.
    """

    bits: int
    horizon: int
    base_sensitivity: float
    slack: float
    sigma: float

    @property
    def sensitivity(self) -> float:
        """The charged ℓ₂ sensitivity Δ = max_i ‖R e_i‖₂ + √N·2^−k."""
        return self.base_sensitivity + self.slack

    @property
    def spacing(self) -> float:
        return math.ldexp(1.0, -self.bits)

    @property
    def integer_sigma(self) -> float:
        """σ·2^k: the discrete Gaussian's parameter on ℤ."""
        return math.ldexp(self.sigma, self.bits)

    @cached_property
    def value_variance(self) -> float:
        """Exact variance of one coordinate's noise in value units: 2^−2k Var(N_ℤ(0, (σ 2^k)²))."""
        return math.ldexp(float(discrete_gaussian_variance(self.integer_sigma)), -2 * self.bits)

    def as_dict(self) -> dict[str, Any]:
        """The ``lattice`` entry of a release's ``.meta.json``."""
        return {"bits": self.bits, "spacing": f"2^-{self.bits}",
                "rounding": "strategy coefficients rounded to 2^-k Z; R x computed exactly in integers",
                "base_sensitivity_l2": self.base_sensitivity, "rounding_slack": self.slack,
                "slack_formula": "sqrt(N) * 2^-k", "sensitivity_l2": self.sensitivity,
                "sigma": self.sigma, "sigma_on_integers": self.integer_sigma,
                "noise": "discrete Gaussian N_Z(0, (sigma 2^k)^2) on Z, scaled by 2^-k"}


@dataclass(frozen=True, eq=False)
class LatticeMeasurement(LinearMeasurement):
    """A measurement on the lattice 2^−``bits`` ℤ: ``values`` = 2^−k (C ⋆ x + G) as float64 (post-processing
    of the integers), ``scales`` = σ in value units; :attr:`variance` is the exact lattice noise variance."""

    bits: int = 0

    @property
    def variance(self) -> np.ndarray:
        var = np.asarray(discrete_gaussian_variance(np.asarray(self.scales) * 2.0**self.bits), dtype=float)
        return np.broadcast_to(np.ldexp(var, -2 * self.bits), self.values.shape[-1:])


def choose_bits(base_sensitivity: float, horizon: int, noise: Noise, finest: int = LATTICE_BITS) -> Lattice:
    """The finest k ≤ ``finest`` with σ_k 2^k ≤ MAX_SCALE, σ_k = noise.scale(base + √N 2^−k)."""
    if noise.family != "gaussian":
        raise InputError(LAPLACE_REFUSAL)
    root_n = math.sqrt(horizon)
    for k in range(int(finest), -1, -1):
        slack = math.ldexp(root_n, -k)
        sigma = noise.scale(base_sensitivity + slack)
        if math.ldexp(sigma, k) <= MAX_SCALE:
            return Lattice(k, horizon, float(base_sensitivity), slack, float(sigma))
    raise InputError(f"noise: σ = {noise.scale(base_sensitivity):g} is above the sampler's MAX_SCALE = 2^40")


def quantised_coefficients(coefficients: np.ndarray, bits: int) -> np.ndarray:
    """C_j = round(r_j 2^k) as int64 (|r_j| ≤ 2^22 at k = 40, so |C_j| < 2^62 and rint is exact)."""
    r = np.asarray(coefficients, dtype=float)
    if not np.all(np.isfinite(r)) or float(np.abs(r).max(initial=0.0)) * 2.0**bits >= 2.0**62:
        raise InputError("lattice: strategy coefficients must be finite and below 2^(62-k)")
    return np.rint(np.ldexp(r, bits)).astype(np.int64)


def charged_lattice(coefficients: np.ndarray, noise: Noise, finest: int = LATTICE_BITS) -> tuple[Lattice, np.ndarray]:
    """The lattice of a release of the Toeplitz strategy with ``coefficients`` and its quantised C.

    Checks the proof's inequality exactly: Σ_j C_j² ≤ (2^k Δ)² (column 1 of R̃ is its longest), in
    integer and rational arithmetic, so a float error in max_i ‖R e_i‖₂ cannot under-charge.
    """
    r = np.ascontiguousarray(coefficients, dtype=float)
    return _charged_lattice(r.tobytes(), noise, int(finest))


@lru_cache(maxsize=32)
def _charged_lattice(raw: bytes, noise: Noise, finest: int) -> tuple[Lattice, np.ndarray]:
    """:func:`charged_lattice`, once per (coefficients, noise, finest): a release at the same settings reuses it."""
    r = np.frombuffer(raw, dtype=float)
    lat = choose_bits(float(np.sqrt(np.sum(r * r))), int(r.size), noise, finest)
    c = quantised_coefficients(r, lat.bits)
    exact = int(np.square(c.astype(object)).sum())
    if Fraction(exact) > (Fraction(lat.sensitivity) * 2**lat.bits) ** 2:  # pragma: no cover - proof says never
        raise RuntimeError("lattice: the charged sensitivity does not cover the rounded strategy")
    c.flags.writeable = False
    return lat, c


def _digits(values: np.ndarray, width: int) -> str:
    """Non-negative int64 ``values`` as one decimal string, ``width`` digits per value, values[0] last."""
    pattern = f"{{:0{width}d}}"
    return "".join(pattern.format(v) for v in reversed(values.tolist()))


def _from_digits(text: str, n: int, width: int) -> np.ndarray:
    """The ``n`` lowest ``width``-digit slots of the decimal ``text`` as Python ints (object array)."""
    raw = np.frombuffer(text.rjust(n * width, "0")[-n * width:].encode("ascii"), dtype=np.uint8)
    d = (raw.reshape(n, width)[::-1] - ord("0")).astype(np.int64)
    out = np.zeros(n, dtype=object)
    for lo in range(0, width, _DIGIT_CHUNK):  # most significant chunk first
        hi = min(lo + _DIGIT_CHUNK, width)
        chunk = d[:, lo:hi] @ (10 ** np.arange(hi - lo - 1, -1, -1, dtype=np.int64))
        out = out * (10 ** (hi - lo)) + chunk.astype(object)
    return out


def exact_causal_convolution(coefficients: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Z_t = Σ_{j ≤ t} C_j x_{t−j}, t < N, exactly, as Python ints (object array of length N).

    Kronecker substitution: both sequences become decimal integers with one fixed-width slot per
    entry and one exact :mod:`decimal` multiplication (libmpdec's number-theoretic transform,
    O(N log N)) gives every coefficient of the product. Counts are shifted by MAX_COUNT to be
    non-negative and the shift is taken off exactly afterwards; the slot width depends on N and C
    only (not on the counts), so the work does too.
    """
    c = np.asarray(coefficients, dtype=np.int64)
    x = np.asarray(counts, dtype=np.int64)
    n = int(c.size)
    if x.size != n or n == 0:
        raise InputError(f"lattice: expected {n} counts, got {x.size}")
    if np.any(c < 0):
        raise InputError("lattice: the exact convolution expects non-negative coefficients")
    if np.any(np.abs(x) > MAX_COUNT):
        raise InputError(f"lattice: counts must be within ±{MAX_COUNT}")
    total = int(c.astype(object).sum())
    width = len(str(total * 2 * MAX_COUNT)) + 1
    ctx = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                          traps=[decimal.Inexact, decimal.Overflow, decimal.InvalidOperation])
    a = ctx.create_decimal(_digits(c, width))
    b = ctx.create_decimal(_digits(x + MAX_COUNT, width))
    product = ctx.multiply(a, b)
    shifted = _from_digits(format(product, "f"), n, width)
    cum = np.cumsum(c.astype(object))
    return shifted - cum * MAX_COUNT


def lattice_answer(coefficients: np.ndarray, counts: Any, bits: int) -> np.ndarray:
    """2^k R̃ x for the Toeplitz strategy with ``coefficients``: the exact integer answers (object array)."""
    c = quantised_coefficients(coefficients, bits)
    x = require_integral(counts, "series", unit="step")
    if x.ndim != 1 or x.size > c.size:
        raise InputError(f"series: expected at most {c.size} counts in one dimension")
    return exact_causal_convolution(c, np.concatenate([x, np.zeros(c.size - x.size, dtype=np.int64)]))


_WORD = 1 << 32
"""Z = 2^k R̃ x can exceed int64; :func:`lattice_measure` adds the noise to its low 32-bit word."""


@dataclass(frozen=True, eq=False)
class _LowWords:
    """The :class:`~dpviz.core.protocols.Strategy` :func:`~dpviz.core.protocols.measure` sees in a lattice
    release: its answers are the low words ``Z mod 2^32`` of the exact integer answers Z = 2^k R̃ x (int64),
    every one with the discrete Gaussian parameter σ·2^k on ℤ. Adding the high words back exactly gives
    Z + G: the very mechanism of the module docstring (the noise is drawn in core, on integers)."""

    name: str
    lattice: Lattice

    def sensitivity(self, family: str) -> float:
        return self.lattice.sensitivity

    def scales(self, noise: Noise) -> np.ndarray:
        return np.full(self.lattice.horizon, self.lattice.integer_sigma)

    def answer(self, data: np.ndarray) -> np.ndarray:
        return data


def lattice_measure(name: str, coefficients: np.ndarray, counts: Any, noise: Noise,
                    rng: np.random.Generator | None = None,
                    finest: int = LATTICE_BITS) -> tuple[LatticeMeasurement, Lattice]:
    """y = 2^−k (2^k R̃ x + G): the lattice release of the Toeplitz strategy ``coefficients`` (module docstring).

    ``noise``: discrete Gaussian (Laplace is refused, :data:`LAPLACE_REFUSAL`); ``rng=None`` draws from
    the OS CSPRNG. Returns the measurement (values in value units, charged sensitivity) and its lattice.
    """
    if noise.family != "gaussian":
        raise InputError(LAPLACE_REFUSAL)
    if not noise.discrete:
        raise InputError("a lattice release needs discrete noise (Noise(..., discrete=True))")
    lat, c = charged_lattice(coefficients, noise, finest)
    x = require_integral(counts, "series", unit="step")
    if x.ndim != 1 or x.size > c.size:
        raise InputError(f"series: expected at most {c.size} counts in one dimension")
    z = exact_causal_convolution(c, np.concatenate([x, np.zeros(c.size - x.size, dtype=np.int64)]))
    high = z // _WORD  # z = high·2^32 + low exactly, 0 <= low < 2^32 (Python ints: floor division)
    low = z - high * _WORD
    noisy_low = measure(_LowWords(name, lat), low.astype(np.int64), noise, rng).values  # low + G, G ~ N_Z(0, (σ2^k)²)
    values = np.ldexp((high * _WORD + noisy_low.astype(object)).astype(np.float64), -lat.bits)
    scales = np.full(c.size, lat.sigma)
    scales.flags.writeable = False
    m = LatticeMeasurement(name, values, scales, noise, lat.sensitivity, bits=lat.bits)
    return m, lat
