"""Discrete Laplace and discrete Gaussian noise for private releases of integer data.

Why: adding floating-point Laplace or Gaussian noise to integer counts is unsafe, because the
low-order bits of a float sample leak which input it came from (I. Mironov, "On Significance of
the Least Significant Bits for Differential Privacy", ACM Conference on Computer and
Communications Security (CCS), 2012).  Integer releases therefore use integer-valued noise:

* discrete Laplace   ``P(X = k) ∝ exp(-|k| / scale)``,   ``k ∈ ℤ``;
* discrete Gaussian  ``P(X = k) ∝ exp(-k² / (2 σ²))``,   ``k ∈ ℤ``,

as in C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
Advances in Neural Information Processing Systems (NeurIPS) 33, 2020 ("CKS" below).

Public API
----------
``discrete_laplace(scale, size, rng=None)``, ``discrete_gaussian(sigma, size, rng=None)``
    int64 samples of shape ``size``.  ``scale``/``sigma`` is a positive float or an array
    broadcastable to ``size`` (every coordinate may have its own scale; everything is vectorised
    over elements; Python only loops over rejection rounds, over chunks of 2^16 elements and over
    the rare undecided comparisons described below).
``discrete_laplace_variance(scale)``, ``discrete_gaussian_variance(sigma)``
    exact variances (float for a scalar, ndarray for an array).
``csprng_uint64(size)``
    uniform 64-bit words from one ``os.urandom`` call.

Randomness: with ``rng`` a ``numpy.random.Generator`` every random bit comes from it (reproducible
simulations and tests); with ``rng=None`` every random bit comes from ``os.urandom`` (the operating
system's CSPRNG).  Nothing here touches NumPy's global random state or seeds anything.

How the samples are made
------------------------
Discrete Laplace with scale ``t`` (``r = e^{-1/t}``): ``X = 0`` with probability
``p0 = (1-r)/(1+r)``, otherwise ``X = ±(1 + K·Q + R)`` with a fair sign, ``Q`` geometric with ratio
``r^K`` and ``R`` on ``{0..K-1}`` with ``P(R = j) ∝ r^j``.  The block size is ``K = 2^J`` with
``J = max(0, ⌊log2 t⌋ - 3)``, so ``K/t ∈ (1/16, 1/8]`` whenever ``K > 1``.  This is the split of CKS
Alg. 2 (``X = U + t·V``, ``U`` uniform and accepted with probability ``exp(-U/t)``, ``V`` a count
of whole blocks), with a power-of-two block so that ``U`` is a plain bit field, the zero atom
drawn directly instead of rejecting ``(-, 0)``, and the block count drawn by inversion instead of
a loop of ``Bernoulli(exp(-1))`` trials.  One proposal uses two 64-bit words:

* word A: bit 63 is the sign; ``v`` = the low 63 bits gives the zero atom and ``Q`` by inversion:
  "``X ≠ 0`` and ``Q ≥ q``" ⟺ ``v + 1 ≤ 2^63 · (1-p0) · r^{qK}``;
* word B: the low ``J`` bits are ``R0`` (uniform on ``{0..K-1}``), the top 27 bits ``c`` start a
  64-bit uniform ``W = c·2^37 + d`` (``d`` = 37 fresh bits, drawn only in the rare case where ``c``
  alone does not decide); the proposal is accepted iff ``W < 2^64 · exp(-x)`` with
  ``x = R0/t``.  Rejected proposals are redrawn whole; a zero proposal also carries an ``R0``, so
  all outcomes share the acceptance rate ``Σ_j r^j / K ≥ 0.94``.  When ``K = 1`` word B is not
  drawn (nothing to accept), so scales below 16 cost one word per sample.

Discrete Gaussian with parameter ``σ`` (CKS Alg. 3): propose ``Y`` from the discrete Laplace with
``t = ⌊σ⌋ + 1`` and accept with probability ``exp(-(|Y| - σ²/t)² / (2σ²))``.  The Laplace-internal
acceptance and this one are merged into one test, ``x = R0/t + (|Y| - σ²/t)²/(2σ²)``; the product
of the two acceptance probabilities gives the same output distribution with one word fewer.

What is exact and what is approximate
-------------------------------------
Every decision above compares an integer built from random words with a real threshold
(``2^63·(1-p0)·r^{qK}`` or ``2^64·exp(-x)``), and every decision is taken *exactly* for the given
float64 value of ``scale``/``sigma``.  The fast path evaluates thresholds in float64 and keeps a
decision only when it is clear by a margin (``_Q_GUARD = 2^-24`` absolute on the inversion value
``y``, ``_ACC_GUARD = 1/8`` of a unit of ``c`` on the acceptance test).  Assuming correctly rounded
IEEE arithmetic, these margins are more than 10^4 times the worst-case float64 error of the
computation when ``np.exp``/``np.log``/``np.log1p`` have the few-ulp accuracy that NumPy and libm
document, and still more than 80 times it if those were only accurate to a relative 2^-40 (the
only assumption the exactness claim needs).  The few undecided cases (about one per 10^7 samples)
are decided in ``decimal`` arithmetic with the precision raised until the comparison is certain
(it always ends: no threshold can equal the integer, since ``e^{rational ≠ 0}`` is
transcendental).  Float rounding therefore changes no decision.  Also note that outputs are
integers, so Mironov's low-bit attack has nothing to act on; only the distribution error matters.

The only approximation is the finite number of random bits:

1. the zero atom and ``Q`` come from a 63-bit uniform, so each tail probability
   ``P(X ≠ 0, Q ≥ q)`` is rounded down to a multiple of 2^-63, and tails below 2^-63 are cut:
   ``Q ≤ q_max ≤ 63·ln2·t/K`` and ``|X| ≤ K·(q_max + 1) ≤ 43.7·t + K < 44·t + 1``
   (scales are capped at ``MAX_SCALE = 2^40``, so ``|X| < 2^53``: no int64 overflow, exact floats);
2. each acceptance probability is rounded up to a multiple of 2^-64.

By the rejection-sampling lemma (output error ≤ (proposal L1 error + acceptance error) / acceptance
rate) the total-variation distance between one sample and the exact distribution is

    η ≤ ((q_max + 3)·2^-63 + 2^-64) / Z,   q_max ≤ 16·63·ln2 < 699,

with ``Z = Σ_j r^j / K ≥ 0.94`` for the Laplace (``Z = 1`` and no 2^-64 term when ``K = 1``) and
``Z`` = that times CKS Alg. 3's acceptance rate for the Gaussian (≥ 0.445, the minimum, at
``σ ≈ 0.3``, where ``q_max ≤ 43``; ≥ 0.757 for ``σ ≥ 15``).  The maximum of this bound over a
fine grid of scales that includes every power-of-two boundary of ``K``:

    η ≤ 7.9e-17 (discrete Laplace),  η ≤ 1.04e-16 (discrete Gaussian), for every scale in
    (0, 2^40], in particular for all scales up to 10^6; so η < 1.1e-16 = 2^-53 for both.

For a privacy statement: if a mechanism is (ε, δ)-DP with exact noise and it adds ``n``
independent samples, each within total variation η of exact, the implemented mechanism is
(ε, δ + n·η·(1 + e^ε))-DP.  For ``n = 10^7`` coordinates and ε = 1 this adds at most
``10^7 · 1.1e-16 · 3.72 < 4.1e-9`` to δ.

Scales ``t ≤ 1/45`` have ``2^63·P(X ≠ 0) < 1`` and return exactly 0 without drawing anything
(the exact ``P(X ≠ 0) < 2e^{-45} ≈ 5.7e-20``).
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Context, Decimal, DivisionByZero, InvalidOperation, Overflow, getcontext, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpviz.errors import InputError

__all__ = [
    "MAX_SCALE",
    "csprng_uint64",
    "discrete_gaussian",
    "discrete_gaussian_variance",
    "discrete_laplace",
    "discrete_laplace_variance",
]

MAX_SCALE = 2.0**40
"""Largest accepted ``scale``/``sigma`` (≈ 1.1e12): keeps ``|X| < 2^53`` so every magnitude is exact in float64."""

_TINY_SCALE = 1.0 / 45.0  # t <= 1/45: 2^63 * P(X != 0) < 1, the sampler is exactly 0
_CHUNK = 1 << 16  # elements per vectorised block (keeps temporaries in cache)
_SIGN = np.uint64(1 << 63)
_LOW63 = np.uint64((1 << 63) - 1)
_LN2_64 = 64.0 * math.log(2.0)  # 64 ln 2 (float; its rounding is far inside the guards)

# Acceptance word layout: R0 in the low J <= 37 bits of word B, the coarse uniform c in its top
# _ACC_BITS bits.  Module constants so tests can shrink them to exercise the rare paths.
_ACC_BITS = 27
_Q_GUARD = 2.0**-24  # inversion: trust floor(y) only if y is this far from an integer
_ACC_GUARD = 0.125  # acceptance: trust the coarse test only if this far (in units of c)

Draw = Callable[[int], np.ndarray]
Scale = float | np.ndarray  # one value for all elements, or an array broadcastable to ``size``
Size = int | tuple[int, ...]


# --------------------------------------------------------------------------- randomness


def csprng_uint64(size: Size) -> np.ndarray:
    """Uniform 64-bit words from the OS CSPRNG: one ``os.urandom`` call, viewed with ``np.frombuffer``.

    The result is a read-only ``uint64`` array of shape ``size``.
    """
    shape = _shape(size)
    n = math.prod(shape)
    return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).reshape(shape)


def _word_source(rng: Any) -> Draw:
    """``n -> n`` uniform uint64 words, all from ``rng`` or, for ``rng=None``, all from ``os.urandom``."""
    if rng is None:
        return csprng_uint64
    if isinstance(rng, np.random.Generator):
        return lambda n: rng.integers(0, 2**64, size=n, dtype=np.uint64)
    raise InputError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")


# --------------------------------------------------------------------------- argument checks


def _shape(size: Any) -> tuple[int, ...]:
    """``size`` (int, or tuple/list of ints, all >= 0) as a shape tuple; InputError otherwise."""
    items = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    shape = []
    for item in items:
        if isinstance(item, bool):
            raise InputError(f"size must be a non-negative int or a tuple of them, got {size!r}")
        try:
            value = operator.index(item)
        except TypeError:
            raise InputError(f"size must be a non-negative int or a tuple of them, got {size!r}") from None
        if value < 0:
            raise InputError(f"size must be non-negative, got {size!r}")
        shape.append(value)
    return tuple(shape)


def _positive(values: Any, name: str, upper: float = math.inf) -> np.ndarray:
    """``values`` as a float64 array, all finite, > 0 and <= ``upper`` (inf or ``MAX_SCALE``).

    InputError naming ``name``, the first bad value and its index otherwise.
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a positive number or an array of them, got {values!r}") from None
    ok = (arr > 0) & (arr <= upper) & np.isfinite(arr)
    if not ok.all():
        bad = np.argwhere(~ok)[0]
        where = f" at index {tuple(int(i) for i in bad)}" if arr.ndim else ""
        limit = "" if math.isinf(upper) else " and <= MAX_SCALE = 2^40 (about 1.1e12)"
        raise InputError(f"{name} must be finite, > 0{limit}; got {float(arr[tuple(bad)])!r}{where}")
    return arr


def _per_element(values: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Checked parameter: a 0-d array (one value for all) or a flat array with one value per element.

    An array whose values are all equal (e.g. a tree's per-node scales under the uniform split) becomes
    its one value: the same draws and samples (the per-element constants are the same numbers), without
    building them per element."""
    arr = _positive(values, name, MAX_SCALE)
    if arr.ndim == 0:
        return arr
    try:
        flat = np.broadcast_to(arr, shape).ravel()
    except ValueError:
        raise InputError(f"{name} of shape {arr.shape} cannot be broadcast to size {shape}") from None
    if arr.size and np.all(arr == arr.flat[0]):
        return np.asarray(arr.flat[0])
    return flat


# --------------------------------------------------------------------------- proposal parameters


@dataclass(frozen=True)
class _Params:
    """Per-element (arrays) or shared (0-d arrays) constants of one proposal; see the module docstring."""

    t: np.ndarray  # Laplace scale of the proposal
    k: np.ndarray  # block size K = 2^J (float)
    mask: np.ndarray  # K - 1 (uint64)
    tk: np.ndarray  # t / K
    c0: np.ndarray  # 64 ln2 - 1/t - log1p(exp(-1/t)) = 63 ln2 + ln(1 - p0)
    inv_t: np.ndarray  # 1 / t
    sigma: np.ndarray | None = None  # Gaussian only
    mu: np.ndarray | None = None  # sigma^2 / t

    @property
    def needs_b(self) -> bool:
        """Whether proposals need word B (R0 / acceptance): Gaussian, or some block size K > 1."""
        return self.sigma is not None or bool(np.any(self.mask))

    def part(self, index: np.ndarray) -> _Params:
        """The constants of the elements ``index`` (shared constants stay shared)."""

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return a if a is None or a.ndim == 0 else a[index]

        return _Params(*(pick(getattr(self, f)) for f in self.__dataclass_fields__))

    def scalars(self, i: int) -> tuple[float, int, float | None]:
        """``(t, K, sigma)`` of element ``i`` as Python numbers, for the exact path."""

        def one(a: np.ndarray | None) -> Any:
            return None if a is None else (a.item() if a.ndim == 0 else a[i].item())

        return one(self.t), int(one(self.k)), one(self.sigma)


def _laplace_params(t: np.ndarray) -> _Params:
    """Block size and inversion constants for discrete Laplace proposals with scale ``t`` (> 1/45)."""
    with np.errstate(over="ignore", under="ignore"):
        j = np.maximum(np.frexp(t)[1] - 4, 0)  # floor(log2 t) - 3, at least 0
        k = np.ldexp(1.0, j)
        inv_t = 1.0 / t
        return _Params(
            t=t,
            k=k,
            mask=np.left_shift(np.uint64(1), j.astype(np.uint64)) - np.uint64(1),
            tk=t / k,
            c0=_LN2_64 - inv_t - np.log1p(np.exp(-inv_t)),
            inv_t=inv_t,
        )


def _gaussian_params(sigma: np.ndarray) -> _Params:
    """CKS Alg. 3 proposal: discrete Laplace with ``t = floor(sigma) + 1``, plus ``sigma`` and ``sigma^2/t``."""
    t = np.floor(sigma) + 1.0
    return replace(_laplace_params(t), sigma=sigma, mu=sigma * sigma / t)


# --------------------------------------------------------------------------- fast (float64) path


def _propose(a: np.ndarray, b: np.ndarray | None, p: _Params) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One vectorised proposal per element (module docstring, "How the samples are made").

    Word ``a``: the sign bit and the 63-bit uniform inverted into the zero atom / block count
    ``Q`` (CKS Alg. 2's ``V``); word ``b``: ``R0`` (CKS Alg. 2's ``U``) and the coarse acceptance
    bits.  For the Gaussian the acceptance also carries CKS Alg. 3's factor.  Returns
    ``(values, accept, undecided, y)``: int64 proposals, acceptance, the elements whose float
    decisions are not certain (to be redone exactly) and the inversion value ``y`` (their hint).
    """
    neg = a >= _SIGN
    y = (a & _LOW63).astype(np.float64)
    y += 1.0
    np.log(y, out=y)
    np.subtract(p.c0, y, out=y)
    y *= p.tk  # y = (t/K) ln(2^63 (1 - p0) / (v + 1)); X != 0 and Q >= q  <=>  y >= q
    q = np.floor(y)
    frac = y - q
    frac -= 0.5
    undecided = np.abs(frac, out=frac) > 0.5 - _Q_GUARD
    zero = q < 0
    if b is None:  # K = 1 everywhere and no Gaussian factor: every proposal is accepted
        mag = q + 1.0
        accept = np.ones(len(a), dtype=bool)
    else:
        r0 = (b & p.mask).astype(np.float64)
        mag = q * p.k
        mag += 1.0
        mag += r0
        x = r0 * p.inv_t
        if p.sigma is not None:
            np.copyto(mag, 0.0, where=zero)
            d = mag - p.mu
            d /= p.sigma
            d *= d
            d *= 0.5
            x += d
        np.negative(x, out=x)
        np.exp(x, out=x)
        x *= float(2**_ACC_BITS)
        x -= (b >> np.uint64(64 - _ACC_BITS)).astype(np.float64)  # 2^_ACC_BITS exp(-x) - c
        accept = x > 1.0 + _ACC_GUARD
        if p.sigma is None:
            accept |= r0 == 0.0
        undecided |= ~accept & (x >= -_ACC_GUARD)
    np.copyto(mag, 0.0, where=zero)
    out = mag.astype(np.int64)
    np.negative(out, out=out, where=neg)
    return out, accept, undecided, y


# --------------------------------------------------------------------------- exact (decimal) path


_TRAPS = [InvalidOperation, DivisionByZero, Overflow]


@lru_cache(maxsize=8)
def _ln2(prec: int) -> Decimal:
    return Context(prec=prec).ln(Decimal(2))


def _decide_less(terms: Callable[[], tuple[Decimal, Decimal]]) -> bool:
    """``lhs < rhs`` for two real numbers computed by ``terms()`` in the current-precision decimal context.

    The precision is doubled until the difference exceeds the rounding error bound; this ends
    because the callers only compare numbers that cannot be equal.
    """
    prec = 50
    while prec <= 6400:
        with localcontext(Context(prec=prec, Emin=-(10**9), Emax=10**9, traps=_TRAPS)):
            lhs, rhs = terms()
            tol = (abs(lhs) + abs(rhs) + 1) * Decimal(10) ** (30 - prec)
            diff = rhs - lhs
            if diff > tol:
                return True
            if diff < -tol:
                return False
        prec *= 2
    raise RuntimeError("discrete sampler: exact comparison did not converge")  # pragma: no cover


def _nonzero_and_at_least(v: int, t: float, k: int, q: int) -> bool:
    """Exactly "X != 0 and Q >= q": ``v + 1 <= 2^63 (1 - p0) e^{-qK/t}`` with ``1 - p0 = 2r/(1+r)``."""

    def terms() -> tuple[Decimal, Decimal]:
        inv = 1 / Decimal(t)
        rhs = 64 * _ln2(getcontext().prec) - inv - (1 + (-inv).exp()).ln() - q * k * inv
        return Decimal(v + 1).ln(), rhs

    return _decide_less(terms)


def _below_threshold(n: int, x: Callable[[], Decimal]) -> bool:
    """Exactly ``n < 2^64 e^{-x}`` for an integer ``0 <= n <= 2^64`` and a rational ``x > 0``."""
    if n == 0:
        return True
    return _decide_less(lambda: (Decimal(n).ln() + x(), 64 * _ln2(getcontext().prec)))


def _block_index(v: int, t: float, k: int, hint: float) -> int:
    """``Q`` for the 63-bit word ``v`` (``-1`` for the zero atom), starting the search at ``floor(hint)``."""
    top = int(63 * math.log(2) * t / k) + 2
    h = min(max(int(math.floor(hint)) if math.isfinite(hint) else -1, -1), top)
    while h >= 0 and not _nonzero_and_at_least(v, t, k, h):
        h -= 1
    while _nonzero_and_at_least(v, t, k, h + 1):
        h += 1
    return h


def _propose_exact(a: int, b: int, t: float, k: int, sigma: float | None, hint: float, draw: Draw) -> tuple[int, bool]:
    """The proposal of words ``a``, ``b`` decided in exact arithmetic (same semantics as :func:`_propose`)."""
    q = _block_index(a & ((1 << 63) - 1), t, k, hint)
    r0 = b & (k - 1)
    mag = 0 if q < 0 else 1 + k * q + r0
    value = -mag if a >> 63 else mag

    def x() -> Decimal:
        total = Decimal(r0) / Decimal(t)
        if sigma is not None:
            s = Decimal(sigma)
            total += (mag - s * s / Decimal(t)) ** 2 / (2 * s * s)
        return total

    if r0 == 0 and (sigma is None or Fraction(sigma) ** 2 == mag * Fraction(t)):
        return value, True  # x = 0: every W < 2^64 is accepted
    shift = 64 - _ACC_BITS
    c = b >> shift
    if _below_threshold((c + 1) << shift, x):
        return value, True
    if not _below_threshold(c << shift, x):
        return value, False
    d = int(draw(1)[0]) >> _ACC_BITS  # c alone does not decide: 64 - _ACC_BITS fresh low bits of W
    return value, _below_threshold((c << shift) | d, x)


# --------------------------------------------------------------------------- driver


def _sample_flat(values: np.ndarray, make: Callable[[np.ndarray], _Params], draw: Draw, n: int) -> np.ndarray:
    """``n`` samples for the checked parameter ``values`` (0-d: shared, else one per element).

    Chunks of ``_CHUNK`` elements keep the temporaries in cache; per-element constants are built
    per chunk.
    """
    out = np.empty(n, dtype=np.int64)
    shared = make(values) if values.ndim == 0 else None
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        _sample_chunk(shared if shared is not None else make(values[lo:hi]), out[lo:hi], draw)
    return out


def _sample_chunk(p: _Params, out: np.ndarray, draw: Draw) -> None:
    """Fill ``out`` (one chunk): propose all, then re-propose the rejected until none is left."""
    pending: np.ndarray | None = None  # None: the first round, over every element
    needs_b = p.needs_b
    while pending is None or len(pending):
        cur = p if pending is None or p.t.ndim == 0 else p.part(pending)
        m = len(out) if pending is None else len(pending)
        words = draw(2 * m if needs_b else m)
        a, b = words[:m], (words[m:] if needs_b else None)
        y, accept, undecided, hint = _propose(a, b, cur)
        for i in np.flatnonzero(undecided):  # rare: decide these exactly
            t, k, sigma = cur.scalars(i)
            y[i], accept[i] = _propose_exact(int(a[i]), 0 if b is None else int(b[i]), t, k, sigma, hint[i], draw)
        if pending is None:
            out[:] = y
            pending = np.flatnonzero(~accept)
        else:
            out[pending[accept]] = y[accept]
            pending = pending[~accept]


def _sample(param: Any, size: Any, rng: Any, gaussian: bool, name: str) -> np.ndarray:
    """Check the arguments, then sample every element whose scale is not below ``_TINY_SCALE``."""
    shape = _shape(size)
    values = _per_element(param, name, shape)
    draw = _word_source(rng)
    make = _gaussian_params if gaussian else _laplace_params
    n = math.prod(shape)
    live = np.ones((), dtype=bool) if gaussian else values > _TINY_SCALE  # else exactly 0
    if n == 0 or live.all():
        return _sample_flat(values, make, draw, n).reshape(shape)
    out = np.zeros(n, dtype=np.int64)
    if live.any():
        idx = np.flatnonzero(live)
        out[idx] = _sample_flat(values[idx], make, draw, len(idx))
    return out.reshape(shape)



def discrete_laplace(scale: Scale, size: Size, rng: np.random.Generator | None = None) -> np.ndarray:
    """Discrete Laplace samples, ``P(X = k) ∝ exp(-|k| / scale)`` on the integers, as int64 of shape ``size``.

    ``scale``: positive float, or an array broadcastable to ``size`` (one scale per element),
    at most ``MAX_SCALE``.  ``rng``: a Generator (all bits from it) or None (all bits from
    ``os.urandom``).  Per-sample total-variation error ≤ 7.9e-17 (module docstring).  CKS Alg. 2
    structure (block count plus an accepted uniform remainder), see the module docstring.
    """
    return _sample(scale, size, rng, gaussian=False, name="scale")


def discrete_gaussian(sigma: Scale, size: Size, rng: np.random.Generator | None = None) -> np.ndarray:
    """Discrete Gaussian samples, ``P(X = k) ∝ exp(-k² / (2 sigma²))`` on the integers, as int64 of shape ``size``.

    CKS Alg. 3: discrete Laplace proposals with ``t = floor(sigma) + 1`` accepted with
    probability ``exp(-(|Y| - sigma²/t)² / (2 sigma²))``, vectorised over elements (per-element
    ``sigma`` arrays broadcastable to ``size``), looping only over rejection rounds.
    Per-sample total-variation error ≤ 1.04e-16 (module docstring).
    """
    return _sample(sigma, size, rng, gaussian=True, name="sigma")


# --------------------------------------------------------------------------- exact variances


def _as_result(values: np.ndarray) -> float | np.ndarray:
    return float(values) if values.ndim == 0 else values


def discrete_laplace_variance(scale: Scale) -> float | np.ndarray:
    """Exact variance of the discrete Laplace: with ``r = e^{-1/t}``, ``2r/(1-r)² = 1 / (2 sinh²(1/(2t)))``."""
    t = _positive(scale, "scale")
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return _as_result(0.5 / np.sinh(0.5 / t) ** 2)


def _gaussian_variance_theta(s: np.ndarray) -> np.ndarray:
    """``σ >= 1``: Poisson summation, ``σ² (1 + 2Σ(1 - 2am²)e^{-am²}) / (1 + 2Σe^{-am²})``, ``a = 2π²σ²``."""
    var = s * s
    mid = s < 8.0  # for σ >= 8, e^{-a} < e^{-1263} = 0.0 in float64
    a = 2.0 * math.pi**2 * var[mid]
    num = np.ones_like(a)
    den = np.ones_like(a)
    for m in (1, 2):  # the m = 3 term is below e^{-177}
        e = np.exp(-a * m * m)
        num += 2.0 * (1.0 - 2.0 * a * m * m) * e
        den += 2.0 * e
    var[mid] *= num / den
    return var


def _gaussian_variance_direct(s: np.ndarray) -> np.ndarray:
    """``σ < 1``: ``Σ k² e^{-k²/(2σ²)} / Σ e^{-k²/(2σ²)}`` over ``|k| <= 16`` (the rest is < 1e-50 of it)."""
    num = np.zeros_like(s)
    den = np.ones_like(s)
    with np.errstate(divide="ignore", under="ignore"):
        for k in range(1, 17):
            e = np.exp(-(k * k) / (2.0 * s * s))
            num += 2.0 * k * k * e
            den += 2.0 * e
    return num / den


def discrete_gaussian_variance(sigma: Scale) -> float | np.ndarray:
    """Exact variance ``Σ k² e^{-k²/(2σ²)} / Σ e^{-k²/(2σ²)}`` of the discrete Gaussian, vectorised.

    ``σ >= 1``: Poisson summation (Jacobi theta), which is ``σ²`` to machine precision for
    ``σ ≳ 1.5``; ``σ < 1``: the direct sum, which is far below ``σ²`` for small ``σ``.
    """
    s = _positive(sigma, "sigma")
    flat = np.atleast_1d(s).ravel()
    var = np.empty_like(flat)
    big = flat >= 1.0
    with np.errstate(over="ignore"):
        var[big] = _gaussian_variance_theta(flat[big])
    var[~big] = _gaussian_variance_direct(flat[~big])
    return _as_result(var.reshape(s.shape))
