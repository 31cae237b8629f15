"""What the continual-counting mechanisms measure and its sensitivity: core ``Strategy`` objects.

Workload: the running totals s = W a of a count stream a_1..a_N, W the N×N lower-triangular ones
(Eq. 5.4). Every mechanism here is a factorisation W = R Q: a :class:`StreamStrategy` measures
y = Q a + η (:func:`dpviz.core.protocols.measure`, the one place noise is drawn) and its
:class:`~dpviz.stream.estimators.StreamEstimator` (:mod:`dpviz.stream.estimators`) releases ŝ = R y,
together with the exact per-step variance computed from the measurement's per-query variances (never
from the data).

**Unit of privacy: one event.** Neighbouring streams differ by one event, i.e. one step's count
changes by 1 (a_t ± 1). This is *event-level* privacy: a person who contributes many events (many
flights, many bike rentals) is protected only per event, and user-level privacy is **not** offered.
(:data:`UNIT_OF_PRIVACY` is the registry's wording.)

Mechanisms (``name``: strategy Q → estimator R):

* ``naive``: Q = I (every a_t, sensitivity 1) → R = W (cumulative sums).
* ``binary``: Chan, Shi & Song, "Private and Continual Release of Statistics", ACM TISSEC 14(3), 2011.
  Its p-sum released at time t covers (t − lowbit(t), t], i.e. it *is* Fenwick node t, and s_t adds
  the p-sums of t's set bits (the Fenwick chain): the Fenwick strategy with λ = 1.
* ``fenwick``: Fenwick-tree strategy M (Alg. 5.2; node i holds c_i = Σ_{j ∈ (i − lowbit(i), i]} a_j,
  Eq. 5.5) → R = B (Alg. 5.3, s_p = Σ over the chain p, p − lowbit(p), ... of c, Eq. 5.6), λ = 1 (Eq. 5.7).
* ``fenwick-fda``: the weighted Fenwick mechanism B Σ⁻¹ (Σ M a + noise) with the optimal diagonal
  Σ = diag(λ) of problem (5.10) (Eq. 5.8, Thm 5.4; FDA closed form, :mod:`dpviz.stream.weights`).
* ``honaker``: every dyadic node (m 2^k − 2^k, m 2^k] ≤ N (the binary tree) → Honaker's efficient
  estimator (J. Honaker, "Efficient Use of Differentially Private Binary Trees", TPDP 2015).
* ``sqrt``: square-root factorisation W = L·L with L the lower-triangular Toeplitz matrix of the
  coefficients of (1 − x)^{-1/2} (Fichtenberger, Henzinger & Upadhyay, "Constant Matters: Fine-grained
  Error Bound on Differentially Private Continual Observation", ICML 2023; Henzinger, Upadhyay &
  Upadhyay, SODA 2023). Q = L has non-integer entries: its release rounds L to the lattice 2^−k ℤ and
  adds discrete Gaussian noise there (:mod:`dpviz.stream.lattice`); Gaussian (ρ-zCDP) only.
* ``smooth-binary``: Andersson & Pagh, "A Smooth Binary Mechanism for Efficient Private Continual
  Observation", NeurIPS 2023: a binary tree whose data leaves all have weight w, so every release sums
  exactly w integer node sums (constant variance, O(log N) memory); (h, w) tuned to the noise's norm
  (:mod:`dpviz.stream.smooth_binary`).
* ``kary``: a k-ary tree (k odd) released through the balanced (negative) digits of t (Andersson, Pagh,
  Steiner & Torkamani, "Count on Your Elders: Laplace vs Gaussian Noise", FORC 2025): integer block sums,
  O(k log_k N) state; the best pure-ε counter here (mean variance ~4× below honaker's; :mod:`dpviz.stream.pure`).
* ``banded`` and ``blt``: real Toeplitz factorisations optimised for the horizon N (:mod:`dpviz.stream.toeplitz`):
  a b-banded C (McMahan et al., "(Amplified) Banded Matrix Factorization", NeurIPS 2023; Kalinin & Lampert,
  "Banded Square Root Matrix Factorization", NeurIPS 2024; :mod:`dpviz.stream.banded`) and a d-buffer
  Buffered-Linear-Toeplitz C (Dvijotham, McMahan, Pillutla, Steinke & Thakurta, "Efficient and Near-Optimal
  Noise Generation for Streaming Differential Privacy", FOCS 2024; :mod:`dpviz.stream.blt`), decoder
  B = W C⁻¹; O(b) / O(d) state per step. Released like ``sqrt`` on the lattice; Gaussian only.
* ``sqrt-weighted``: the square root with re-weighted rows, W = (L D⁻¹)(D L), D minimising the worst-step
  error (the FDA idea of Eq. 5.8 on the square root; :mod:`dpviz.stream.weighted`): the best worst-step
  error here; released on the lattice with noise σ/d_i per row; Gaussian only. ``blt-weighted``: the same
  weights on the BLT strategy, O(d) streaming state.

**Weighted measurement and discrete noise.** The weighted Fenwick mechanism measures λ_i c_i with
noise of scale b = Δ/ε (Laplace) or σ = Δ₂/√(2ρ) (Gaussian), Δ the largest column norm of ΣM. That
is the same as measuring the *integer* node sum c_i with noise of scale b/λ_i (divide by λ_i), which
is what :meth:`StreamStrategy.scales` returns and what lets discrete noise apply to integer counts.

*Accounting (proof).* One event at step t changes c_i by ±1 exactly for the nodes i ∋ t (i on the
column-t chain of M) and leaves every other node unchanged. With discrete Laplace noise of scale
b/λ_i on c_i (Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020: Lap_Z(s) on a sensitivity-1 integer query is (1/s)-DP), node i spends λ_i/b, so by
basic composition the event costs Σ_{i∋t} λ_i / b ≤ max_j Σ_{i∋j} λ_i / b = Δ₁/b = ε. With discrete
Gaussian noise of scale σ/λ_i (CKS 2020, Thm. 4: N_Z(0, s²) on a sensitivity-1 integer query is
1/(2s²)-zCDP) node i spends λ_i²/(2σ²), and zCDP composes additively:
Σ_{i∋t} λ_i²/(2σ²) ≤ Δ₂²/(2σ²) = ρ. The unweighted strategies are the case λ = 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dpviz.core.noise import FAMILIES, Family, Noise
from dpviz.core.protocols import Estimate, LinearMeasurement
from dpviz.core.registry import capability
from dpviz.errors import InputError
from dpviz.stream.estimators import (
    ChainSum,
    CumulativeSum,
    HonakerEstimator,
    SquareRootEstimator,
    StreamEstimator,
    readonly,
    toeplitz_apply,
)
from dpviz.stream.fenwick import bound_violation, check_horizon, column_chain_sum, lowbit, node_sums, nodes
from dpviz.stream.weights import fda_weights

MECHANISM_NAMES: tuple[str, ...] = ("naive", "binary", "fenwick", "fenwick-fda", "honaker", "sqrt", "smooth-binary",
                                   "kary", "banded", "blt", "sqrt-weighted",
                                   "blt-weighted")
RELEASABLE: tuple[str, ...] = ("naive", "binary", "fenwick", "fenwick-fda", "honaker", "smooth-binary", "kary")
"""Mechanisms releasable with either noise family: the integer strategies (discrete noise on their answers).
:func:`releasable` is the full list for one family: it adds the real factorisations (:data:`LATTICE_RELEASABLE`)
for Gaussian noise (released on the lattice 2^−k ℤ, :mod:`dpviz.stream.lattice`)."""
LATTICE_RELEASABLE: tuple[str, ...] = ("sqrt", "banded", "blt", "sqrt-weighted", "blt-weighted")
"""Real-valued factorisations released on the lattice 2^−k ℤ with discrete Gaussian noise (ρ-zCDP only)."""
LABELS: dict[str, str] = {
    "naive": "Naive (noisy increments)",
    "binary": "Binary tree (Chan-Shi-Song)",
    "fenwick": "Fenwick (λ = 1)",
    "fenwick-fda": "Fenwick + FDA (optimal λ)",
    "honaker": "Honaker estimator (binary tree)",
    "sqrt": "Square-root factorisation (Gaussian)",
    "smooth-binary": "Smooth binary (Andersson-Pagh)",
    "kary": "k-ary tree, balanced digits (pure ε)",
    "banded": "Banded Toeplitz factorisation (Gaussian)",
    "blt": "Buffered-linear-Toeplitz factorisation (Gaussian)",
    "sqrt-weighted": "Square root, re-weighted rows (Gaussian)",
    "blt-weighted": "BLT, re-weighted rows (Gaussian)",
}
UNIT_OF_PRIVACY: str = capability("stream").unit_of_privacy

__all__ = ["MECHANISM_NAMES", "RELEASABLE", "LATTICE_RELEASABLE", "LABELS", "UNIT_OF_PRIVACY", "StreamStrategy",
           "NaiveStrategy", "FenwickStrategy", "DyadicStrategy", "SquareRootStrategy", "strategy", "available",
           "releasable", "best_releasable", "releasable_ranking", "check_family", "as_series"]


# ---------------------------------------------------------------------------------------------
# helpers


def check_family(family: str) -> Family:
    if family not in FAMILIES:
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {family!r}")
    return family  # type: ignore[return-value]


def as_series(series: Any, horizon: int) -> np.ndarray:
    """Validate a stream for horizon N: 1-D, finite, 1..N entries (a shorter stream is a prefix), every
    count within ±:data:`~dpviz.stream.fenwick.MAX_COUNT` and every running total within
    ±:data:`~dpviz.stream.fenwick.MAX_TOTAL` (so float64 totals of integer counts are exact and int64
    sums cannot overflow).

    Integer input stays int64 (exact node sums for a release); anything else becomes float64.
    """
    a = np.asarray(series)
    if a.dtype.kind not in "iub":
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            raise InputError("series: expected numbers (counts per step)") from None
    if a.ndim != 1 or a.size == 0:
        raise InputError(f"series: expected a non-empty 1-D sequence of counts, got shape {a.shape}")
    if a.size > horizon:
        raise InputError(f"series: {a.size} steps exceed the horizon N = {horizon}")
    if a.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise InputError(f"series: step {bad[0] + 1} is not a finite number ({a[bad[0]]!r})")
    bad = bound_violation(a)
    if bad is not None:
        raise InputError(f"series: step {bad[0] + 1}: {bad[1]}")
    return a.astype(np.int64, copy=False) if a.dtype.kind in "iub" else a


def _padded(series: Any, horizon: int) -> np.ndarray:
    """The series zero-padded to N steps (steps after the series are not observed yet)."""
    a = as_series(series, horizon)
    return np.concatenate([a, np.zeros(horizon - a.size, dtype=a.dtype)])


# ---------------------------------------------------------------------------------------------
# strategies


@dataclass(frozen=True, eq=False)
class StreamStrategy:
    """A continual-counting strategy as a core :class:`~dpviz.core.protocols.Strategy`.

    ``family`` is the noise family it was built for (FDA's λ depends on it: L1 or L2 sensitivity);
    ``weights`` λ_i multiply the measured node sums (1 except for FDA). :meth:`answer` returns the
    *unweighted* node sums in draw order (int64 for integer counts), :meth:`scales` the noise scale of
    each, (Δ/ε)/λ_i or (Δ₂/√(2ρ))/λ_i, and :meth:`sensitivity` Δ of the weighted query set ΣQ, so
    that ``‖Λ (answer(a') − answer(a))‖ ≤ sensitivity`` for neighbouring streams (module docstring).
    """

    name: str
    horizon: int
    family: Family

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    @property
    def discrete_ok(self) -> bool:
        """True when the strategy's answers are integers on integer counts (discrete noise applies as is)."""
        return True

    @property
    def lattice_coefficients(self) -> np.ndarray | None:
        """A real lower-triangular Toeplitz Q's coefficients (released on a lattice, :mod:`dpviz.stream.lattice`);
        None for the integer strategies."""
        return None

    @property
    def lattice_weights(self) -> np.ndarray | None:
        """Per-row weights d_i ≥ 1 of a lattice release whose row i has noise σ/d_i (``sqrt-weighted``); None:
        one noise scale for every row."""
        return None

    @cached_property
    def weights(self) -> np.ndarray:
        return readonly(np.ones(self.size))

    @property
    def size(self) -> int:
        return self.estimator.size

    @cached_property
    def estimator(self) -> StreamEstimator:  # pragma: no cover - abstract
        raise NotImplementedError

    def sensitivity(self, family: Family | None = None) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def answer(self, data: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def scales(self, noise: Noise) -> np.ndarray:
        """Per-query noise scale: the base scale noise.scale(Δ) divided by the node weight λ_i."""
        return readonly(noise.scale(self.sensitivity(noise.family)) / self.weights)

    @cached_property
    def unit_profile(self) -> np.ndarray:
        """Per-step variance of ŝ_t for continuous noise of base scale 1 and unit variance per unit
        scale², i.e. diag(R diag(λ⁻²) Rᵀ); cached per strategy (per mechanism, N, family)."""
        return self.estimator.variance(self.weights**-2.0)

    def query_variance(self, noise: Noise) -> np.ndarray:
        """Exact variance of each query's noise (discrete or continuous sampler)."""
        return np.broadcast_to(np.asarray(noise.variance_at(self.scales(noise)), dtype=float), (self.size,))

    def per_step_variance(self, noise: Noise) -> np.ndarray:
        """Var(ŝ_t), t = 1..N, under ``noise`` (read-only), computed once per (mechanism, N, family,
        noise) and then served from a cache (:func:`_step_variance`): a release, a redraw or a page
        rerun at the same noise does no work here.

        Continuous noise: κ b² × :attr:`unit_profile` (κ = 2 Laplace, 1 Gaussian; b the base scale),
        no structural work per ε. Discrete noise: from the exact per-node variances.
        """
        if not isinstance(noise, Noise):
            raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
        return _step_variance(self.name, self.horizon, self.family, noise)

    def _step_variance(self, noise: Noise) -> np.ndarray:
        if noise.discrete:
            return self.estimator.variance(self.query_variance(noise))
        base = noise.variance_at(noise.scale(self.sensitivity(noise.family)))
        return readonly(float(base) * self.unit_profile)

    def estimate(self, measurement: LinearMeasurement) -> Estimate:
        """ŝ = R y for a measurement of this strategy (:func:`dpviz.core.protocols.measure`), with the
        cached :meth:`per_step_variance` of its noise: the estimator's :meth:`~StreamEstimator.fit`
        without recomputing the per-query variances of every release."""
        if measurement.strategy != self.name or np.shape(measurement.values)[-1:] != (self.size,):
            raise InputError(f"{self.name}: the measurement is not one of this strategy (N = {self.horizon})")
        est = self.estimator
        return Estimate(est.name, est.apply(measurement.values), self.per_step_variance(measurement.noise))


@dataclass(frozen=True, eq=False)
class NaiveStrategy(StreamStrategy):
    """Q = I: measure every a_t (one event changes one query by 1: Δ₁ = Δ₂ = 1)."""

    @cached_property
    def estimator(self) -> StreamEstimator:
        return CumulativeSum(self.horizon)

    @property
    def size(self) -> int:
        return self.horizon

    def sensitivity(self, family: Family | None = None) -> float:
        check_family(family or self.family)
        return 1.0

    def answer(self, data: Any) -> np.ndarray:
        return _padded(data, self.horizon)


@dataclass(frozen=True, eq=False)
class FenwickStrategy(StreamStrategy):
    """Fenwick nodes c = M a (Alg. 5.2, Eq. 5.5) with weights λ (λ = 1: Eq. 5.7; FDA: Eq. 5.8).

    Δ = max column norm of ΣM: L1 max_j Σ_{i∋j} λ_i (= floor(log2 N) + 1 for λ = 1, Thm 5.1) or
    L2 √(max_j Σ_{i∋j} λ_i²); the FDA λ is scaled so that this is exactly 1.
    """

    fda: bool = False

    @cached_property
    def estimator(self) -> StreamEstimator:
        return ChainSum(self.horizon)

    @property
    def size(self) -> int:
        return self.horizon

    @cached_property
    def weights(self) -> np.ndarray:
        if self.fda:
            return fda_weights(self.horizon, self.family).lam
        return readonly(np.ones(self.horizon))

    @cached_property
    def _sensitivities(self) -> dict[str, float]:
        lam = np.asarray(self.weights)
        return {"laplace": float(column_chain_sum(lam).max()),
                "gaussian": float(np.sqrt(column_chain_sum(lam**2).max()))}

    def sensitivity(self, family: Family | None = None) -> float:
        return self._sensitivities[check_family(family or self.family)]

    def answer(self, data: Any) -> np.ndarray:
        return node_sums(_padded(data, self.horizon))


@dataclass(frozen=True, eq=False)
class DyadicStrategy(StreamStrategy):
    """Every dyadic node (m 2^k − 2^k, m 2^k] ≤ N, in draw order (time t: levels 0..tz(t)).

    Each step lies in one node per level: Δ₁ = levels = floor(log2 N) + 1, Δ₂ = √levels.
    """

    @cached_property
    def estimator(self) -> StreamEstimator:
        return HonakerEstimator(self.horizon)

    @cached_property
    def _draw_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """(end time t, length 2^k) of every node in draw order."""
        t = nodes(self.horizon)
        per_time = np.log2(lowbit(t)).astype(np.int64) + 1
        ends = np.repeat(t, per_time)
        first = np.cumsum(per_time) - per_time
        k = np.arange(ends.size) - np.repeat(first, per_time)
        return ends, np.int64(1) << k

    def sensitivity(self, family: Family | None = None) -> float:
        levels = check_horizon(self.horizon).bit_length()
        return float(levels) if check_family(family or self.family) == "laplace" else float(np.sqrt(levels))

    def answer(self, data: Any) -> np.ndarray:
        a = _padded(data, self.horizon)
        s = np.concatenate([np.zeros(1, dtype=a.dtype), np.cumsum(a)])
        ends, length = self._draw_nodes
        return s[ends] - s[ends - length]


@dataclass(frozen=True, eq=False)
class SquareRootStrategy(StreamStrategy):
    """Q = L (the square root of W): Δ₂ = ‖L e_1‖₂ = √(Σ_{k<N} c_k²) (column 1 is the longest).

    Gaussian noise only. L a is not an integer vector, and discrete noise added to non-integer values
    is not a private mechanism (it would reveal the fractional parts), so a release rounds L to the
    lattice 2^−k ℤ first (:attr:`lattice_coefficients`, :func:`dpviz.stream.lattice.lattice_measure`).
    """

    @property
    def discrete_ok(self) -> bool:
        return False

    @property
    def lattice_coefficients(self) -> np.ndarray:
        return self.estimator.coefficients

    @cached_property
    def estimator(self) -> StreamEstimator:
        return SquareRootEstimator(self.horizon)

    @property
    def size(self) -> int:
        return self.horizon

    def sensitivity(self, family: Family | None = None) -> float:
        if check_family(family or self.family) != "gaussian":
            raise InputError("mechanism 'sqrt': the square-root factorisation needs Gaussian noise (ρ-zCDP)")
        return float(np.sqrt(np.sum(self.estimator.coefficients**2)))

    def answer(self, data: Any) -> np.ndarray:
        return toeplitz_apply(self.estimator.coefficients, _padded(data, self.horizon))


@lru_cache(maxsize=128)
def _strategy(name: str, horizon: int, family: Family) -> StreamStrategy:
    if name == "naive":
        return NaiveStrategy(name, horizon, family)
    if name in ("binary", "fenwick"):
        return FenwickStrategy(name, horizon, family)
    if name == "fenwick-fda":
        return FenwickStrategy(name, horizon, family, fda=True)
    if name == "honaker":
        return DyadicStrategy(name, horizon, family)
    if name == "sqrt":
        if family != "gaussian":
            raise InputError("mechanism 'sqrt': the square-root factorisation needs Gaussian noise (ρ-zCDP)")
        return SquareRootStrategy(name, horizon, family)
    if name == "smooth-binary":
        from dpviz.stream.smooth_binary import SmoothBinaryStrategy  # here: that module builds on this one

        return SmoothBinaryStrategy(name, horizon, family)
    if name == "kary":
        from dpviz.stream.pure import KaryStrategy  # here: that module builds on this one

        return KaryStrategy(name, horizon, family)
    if name in ("banded", "blt"):
        if family != "gaussian":
            raise InputError(f"mechanism {name!r}: a real factorisation needs Gaussian noise (ρ-zCDP)")
        from dpviz.stream.toeplitz import ToeplitzStrategy  # here: that module builds on this one

        return ToeplitzStrategy(name, horizon, family)
    if name in ("sqrt-weighted", "blt-weighted"):
        if family != "gaussian":
            raise InputError(f"mechanism {name!r}: a real factorisation needs Gaussian noise (ρ-zCDP)")
        from dpviz.stream.weighted import WeightedBLTStrategy, WeightedSqrtStrategy  # here: they build on this module

        return (WeightedSqrtStrategy if name == "sqrt-weighted" else WeightedBLTStrategy)(name, horizon, family)
    raise InputError(f"mechanism: expected one of {', '.join(MECHANISM_NAMES)}, got {name!r}")


@lru_cache(maxsize=32)
def _step_variance(name: str, horizon: int, family: Family, noise: Noise) -> np.ndarray:
    """Per-step variances, once per (mechanism, N, family, noise): :meth:`StreamStrategy.per_step_variance`."""
    return _strategy(name, horizon, family)._step_variance(noise)


def strategy(name: str, horizon: int, family: Family = "laplace") -> StreamStrategy:
    """The strategy ``name`` for horizon N and a noise family; cached per (name, N, family), so λ, the
    sensitivities and the unit variance profile are computed once."""
    return _strategy(str(name), check_horizon(horizon), check_family(family))


def available(family: Family | Noise) -> tuple[str, ...]:
    """Mechanism names valid for a noise family (the real factorisations, :data:`LATTICE_RELEASABLE`, are
    Gaussian only)."""
    fam = family.family if isinstance(family, Noise) else check_family(family)
    return MECHANISM_NAMES if fam == "gaussian" else tuple(m for m in MECHANISM_NAMES if m not in LATTICE_RELEASABLE)


def releasable(family: Family | Noise) -> tuple[str, ...]:
    """Mechanism names a release accepts for a noise family (``sqrt``: discrete Gaussian on a lattice only)."""
    fam = family.family if isinstance(family, Noise) else check_family(family)
    return RELEASABLE + (LATTICE_RELEASABLE if fam == "gaussian" else ())


def best_releasable(target: str, family: Family | Noise, horizon: int) -> str:
    """The releasable mechanism with the least worst-step (``target="max"``: max_t Var ŝ_t) or mean
    (``"mean"``: mean_t Var ŝ_t) analytic variance at horizon N for a noise family (every variance scales
    with the same budget factor, so unit noise decides). Ties go to the earlier name of :func:`releasable`.
    Cached per (target, family, N); the first call at a new N builds every candidate (the optimised
    factorisations included: a few seconds at N = 2^20)."""
    fam = family.family if isinstance(family, Noise) else check_family(family)
    if target not in ("max", "mean"):
        raise InputError(f"target: expected 'max' or 'mean', got {target!r}")
    return _ranking(target, fam, check_horizon(horizon))[0][0]


def releasable_ranking(target: str, family: Family | Noise, horizon: int) -> tuple[tuple[str, float], ...]:
    """Every releasable mechanism with its unit-noise worst-step or mean variance, best first."""
    fam = family.family if isinstance(family, Noise) else check_family(family)
    best_releasable(target, fam, horizon)
    return _ranking(target, fam, check_horizon(horizon))


@lru_cache(maxsize=64)
def _ranking(target: str, family: Family, horizon: int) -> tuple[tuple[str, float], ...]:
    unit = Noise.laplace(1.0) if family == "laplace" else Noise.gaussian(0.5)
    scores = []
    for name in releasable(family):
        v = strategy(name, horizon, family).per_step_variance(unit)
        scores.append((name, float(v.max() if target == "max" else v.mean())))
    return tuple(sorted(scores, key=lambda kv: kv[1]))  # stable: ties keep the releasable order
