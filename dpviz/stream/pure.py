"""The k-ary tree mechanism with balanced (negative) digits: the best pure ε-DP counter here (mean variance).

Source: J. D. Andersson, R. Pagh, T. A. Steiner & S. Torkamani, "Count on Your Elders: Laplace vs Gaussian
Noise", FORC 2025 (arXiv:2408.07021; v1 "Improved Counting under Continual Observation with Pure Differential
Privacy"): a generalisation of the binary tree mechanism to a k-ary number system with negative digits, about
4× lower mean squared error than Honaker's estimator asymptotically (k = 19 in their asymptotic bound). The
construction below is derived here from that description and proved below (the paper's text was not at hand):
the statements and the tests stand on their own.

**Strategy Q (what is measured).** k odd, m = (k − 1)/2, h levels with (k^h − 1)/2 ≥ N. A *block* (j, q) is
the aligned range of steps [q k^j + 1, (q + 1) k^j] (level j, index q); Q measures the integer block sums
c_{j,q} = Σ a over the block (steps after N count 0), for the blocks the releases below use and that hold at
least one step ≤ N.

**Estimator R (what is released).** Write t in balanced base k: t = Σ_{j<h} d_j k^j, d_j ∈ {−m, ..., m}
(unique for odd k), and P_j = Σ_{i≥j} d_i k^i (P_j is the multiple of k^j nearest to t, so P_j ≥ 0). Going
down from P_h = 0 to P_0 = t, level j moves from P_{j+1} to P_j by |d_j| level-j blocks: added when d_j > 0,
subtracted when d_j < 0 (then the blocks lie *after* P_j). Hence 1{[1, t]} = Σ_j sign(d_j)·(those |d_j|
blocks) exactly, i.e. R Q = W, and ŝ_t = Σ_j sign(d_j) Σ ỹ_block: Σ_j |d_j| noisy blocks (E|d| = (k² − 1)/(4k)
per level against (k − 1)/2 for ordinary digits: the 2× of the negative digits).

**Causality and privacy.** A subtracted block holds steps after t, not seen at step t. The release is still
ŝ = R(Q a + η): the output of the one-shot mechanism y = Q a + η followed by the public linear map R
(post-processing), so it is exactly as private as y, for every stream given in advance (the streams here:
:func:`dpviz.stream.release.release` measures the whole series at once). The streaming form computes the
same numbers as ŝ_t = S_t + Σ_j sign(d_j) Σ η_block: the exact running total plus block noises drawn when a
block is first needed — it never needs a future count, only future blocks' noise, which is data-independent.
(Privacy against streams chosen adaptively from earlier releases is not claimed.)

**Unit of privacy: one event** (a_t ± 1): it changes by ±1 the one block per level that contains step t, if
that block is measured. So Δ₁ = c and Δ₂ = √c with c = max_t #{measured blocks ∋ t} ≤ h (the *coverage*,
computed exactly: the middle child q ≡ m (mod k) of every parent is never used, and a block is only measured
if some release t ≤ N uses it). Per block: discrete Laplace of scale c/ε (Canonne, Kamath & Steinke 2020:
(1/s)-DP per unit change, basic composition over the ≤ c blocks an event touches: ε) or discrete Gaussian
of scale √c/√(2ρ) (ρ-zCDP, additive composition). Integer answers: discrete noise applies as is.

**Which blocks, and when** (the draw order). Block (j, q), q = p k + r in parent p: if r < m it is added by
the releases with P_{j+1} = p k^{j+1} and d_j > r, the first of them at t = p k^{j+1} + (r + 1) k^j − (k^j − 1)/2;
if r > m it is subtracted by those with P_{j+1} = (p + 1) k^{j+1} and d_j ≤ r − k, the first at
t = (p + 1) k^{j+1} − (k^{j+1} − 1)/2 (the first step that rounds up to that parent end); r = m: never. Blocks
are drawn at their first use, top level first, then by index. Between uses the streaming form keeps, per
level, the blocks of the current parent and of the one before: O(k log_k N) state.

**Choice of k.** The odd k ≤ :data:`MAX_ARITY` minimising (mean Σ_j |d_j| over a grid of 4,096 steps) × h^p
(p = 2 Laplace, 1 Gaussian): the mean-variance objective, charged with the exact coverage afterwards.

**Numbers** (ε = 1, ``python -m dpviz stream variance``). N = 2^16: k = 21, h = 4, coverage 4, mean 614.4 and
worst 1184 against honaker's 2544 / 5088 (4.14× / 4.30× lower), FDA's mean 1574 (2.56×) and smooth-binary's
constant 1050 (1.71× lower mean; smooth-binary keeps the lower worst step, 1.13×). N = 2^20: k = 19, h = 5,
mean 1147.2 and worst 2200 against honaker's 4764 / 9529 (4.15× / 4.33×) and smooth-binary's 1944. Under
zCDP (ρ = 1/2) it is an integer mechanism with mean 65.5 (2^16, k = 11) — below honaker's 74.8, above the
real factorisations'.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from dpviz.core.noise import Family
from dpviz.errors import InputError
from dpviz.stream.estimators import StreamEstimator, StructureEstimator, readonly
from dpviz.stream.strategy import StreamStrategy, as_series, check_family

__all__ = ["MAX_ARITY", "balanced_digits", "kary_parameters", "KaryStructure", "kary_structure", "KaryState",
           "KaryEstimator", "KaryStrategy"]

MAX_ARITY = 63
"""Largest branching factor k considered by :func:`kary_parameters`."""


def _levels(k: int, n: int) -> int:
    """The smallest h with (k^h − 1)/2 ≥ N: every t ≤ N has h balanced digits."""
    h = 1
    while (k**h - 1) // 2 < n:
        h += 1
    return h


def balanced_digits(t: np.ndarray, k: int, levels: int) -> np.ndarray:
    """(levels, len(t)) balanced base-k digits d_j ∈ [−m, m] of each t ≥ 0, lowest level first (k odd)."""
    if k < 3 or k % 2 == 0:
        raise InputError(f"k: expected an odd arity ≥ 3, got {k}")
    m = (k - 1) // 2
    r = np.asarray(t, dtype=np.int64).copy()
    out = np.empty((levels, r.size), dtype=np.int64)
    for j in range(levels):  # loop over the O(log_k N) levels
        d = (r + m) % k - m
        out[j] = d
        r = (r - d) // k
    if np.any(r != 0):
        raise InputError(f"k-ary: {levels} balanced digits do not cover t ≤ {int(np.max(t))}")
    return out


@lru_cache(maxsize=64)
def kary_parameters(horizon: int, family: Family) -> tuple[int, int]:
    """(k, h) for N = ``horizon`` (module docstring, *Choice of k*)."""
    n = int(horizon)
    if n < 1:
        raise InputError(f"horizon: expected a positive integer, got {horizon!r}")
    grid = np.unique(np.linspace(1, n, min(n, 4096)).round().astype(np.int64))
    power = 2 if check_family(family) == "laplace" else 1
    best: tuple[float, int, int] | None = None
    for k in range(3, MAX_ARITY + 1, 2):
        h = _levels(k, n)
        cost = float(np.abs(balanced_digits(grid, k, h)).sum(axis=0).mean()) * h**power
        if best is None or cost < best[0] - 1e-12:
            best = (cost, k, h)
    return best[1], best[2]  # type: ignore[index]


@dataclass(frozen=True, eq=False)
class KaryStructure:
    """The measured blocks for N steps, arity k (odd) and h levels; 0-based steps in arrays."""

    horizon: int
    arity: int
    levels: int

    @cached_property
    def _blocks(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per level j: the indices q of the measured blocks and their first-use steps t (1-based)."""
        n, k, m = self.horizon, self.arity, (self.arity - 1) // 2
        qs, firsts = [], []
        for j in range(self.levels):  # loop over the levels
            size = k**j
            q = np.arange(-(-n // size), dtype=np.int64)  # blocks holding a step ≤ N
            p, r = q // k, q % k
            first = np.where(r < m, p * k * size + (r + 1) * size - (size - 1) // 2,
                             (p + 1) * k * size - (k * size - 1) // 2)
            keep = (r != m) & (first <= n)
            qs.append(q[keep])
            firsts.append(first[keep])
        return qs, firsts

    @cached_property
    def draw_index(self) -> list[np.ndarray]:
        """Per level j: dense array over q of the block's index in the draw order (−1: not measured).

        Draw order: first-use step, then level (top first), then index q."""
        qs, firsts = self._blocks
        t = np.concatenate(firsts)
        lev = np.concatenate([np.full(q.size, j, dtype=np.int64) for j, q in enumerate(qs)])
        q_all = np.concatenate(qs)
        order = np.lexsort((q_all, -lev, t))
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        out, start = [], 0
        for j, q in enumerate(qs):
            dense = np.full((self.horizon + self.arity ** (j + 1)) // self.arity**j + 2, -1, dtype=np.int64)
            dense[q] = rank[start : start + q.size]
            out.append(readonly(dense))
            start += q.size
        return out

    @property
    def size(self) -> int:
        return int(sum(q.size for q in self._blocks[0]))

    @cached_property
    def ranges(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per level j: (lo, hi, sign) over t = 1..N — release t uses the level-j blocks lo ≤ q < hi with sign."""
        k = self.arity
        t = np.arange(1, self.horizon + 1, dtype=np.int64)
        d = balanced_digits(t, k, self.levels)
        out = []
        upper = np.zeros_like(t)  # P_{j+1} / k^{j+1}
        for j in range(self.levels - 1, -1, -1):
            base = upper * k  # P_{j+1} in level-j blocks
            lo, hi = np.minimum(base, base + d[j]), np.maximum(base, base + d[j])
            out.append((lo.astype(np.int32), hi.astype(np.int32), np.sign(d[j]).astype(np.int8)))
            upper = base + d[j]
        return out[::-1]

    @cached_property
    def coverage(self) -> int:
        """c = max over steps of the number of measured blocks holding it (≤ h): Δ₁ = c, Δ₂ = √c."""
        steps = np.arange(self.horizon, dtype=np.int64)
        count = np.zeros(self.horizon, dtype=np.int64)
        for j, dense in enumerate(self.draw_index):
            count += dense[steps // self.arity**j] >= 0
        return int(count.max())

    def answer(self, counts: np.ndarray) -> np.ndarray:
        """Exact block sums in draw order (int64 for integer counts; steps after the series count 0)."""
        a = np.asarray(counts)
        n = self.horizon
        s = np.concatenate([np.zeros(1, dtype=a.dtype), np.cumsum(a), np.zeros(n - a.size, dtype=a.dtype)])
        s[a.size + 1 :] = s[a.size]  # steps after the series count 0
        out = np.zeros(self.size, dtype=a.dtype)
        for j, dense in enumerate(self.draw_index):
            q = np.flatnonzero(dense >= 0)
            size = self.arity**j
            out[dense[q]] = s[np.minimum((q + 1) * size, n)] - s[q * size]
        return out

    def apply(self, values: np.ndarray) -> np.ndarray:
        """ŝ_t = Σ_j sign(d_j) Σ_{lo ≤ q < hi} y_{j,q}: per level, differences of the cumulative sums over q."""
        v = np.asarray(values)
        if v.dtype.kind not in "iu":
            v = v.astype(float, copy=False)
        out = np.zeros(v.shape[:-1] + (self.horizon,), dtype=v.dtype)
        for dense, (lo, hi, sign) in zip(self.draw_index, self.ranges):
            per_q = np.zeros(v.shape[:-1] + (dense.size,), dtype=v.dtype)
            measured = dense >= 0
            per_q[..., measured] = v[..., dense[measured]]
            csum = np.concatenate([np.zeros(v.shape[:-1] + (1,), dtype=v.dtype), np.cumsum(per_q, axis=-1)], axis=-1)
            out += sign * (csum[..., hi] - csum[..., lo])
        return out

    def abs_apply(self, values: np.ndarray) -> np.ndarray:
        """|R| v: Σ over the blocks release t uses of v (the variance for query variances v)."""
        v = np.asarray(values, dtype=float)
        out = np.zeros(self.horizon)
        for dense, (lo, hi, _) in zip(self.draw_index, self.ranges):
            per_q = np.where(dense >= 0, v[np.maximum(dense, 0)], 0.0)
            csum = np.concatenate([[0.0], np.cumsum(per_q)])
            out += csum[hi] - csum[lo]
        return out


@lru_cache(maxsize=8)
def kary_structure(horizon: int, family: Family) -> KaryStructure:
    k, h = kary_parameters(horizon, family)
    return KaryStructure(int(horizon), k, h)


class KaryState:
    """The streaming form: ŝ_t = S_t + Σ_j sign(d_j) Σ η_block, block noises drawn at first use (the batch
    draw order) and kept while their parent (or the next one, for subtracted blocks) is current: O(k log_k N).

    Per level j the signed noise sum of its blocks is kept with its (P_{j+1}, d_j); P_j = the multiple of k^j
    nearest to t, ⌊(t + (k^j − 1)/2)/k^j⌋ k^j. Within one parent d_j only grows, so a step adds (d_j ≥ 0) or
    drops (d_j < 0) the few blocks between the old and the new d_j: O(h) plain-Python work per step, amortised.
    """

    def __init__(self, structure: KaryStructure) -> None:
        self.k, self.h = structure.arity, structure.levels
        self.n = structure.horizon
        self.sizes = [self.k**j for j in range(self.h)]
        self.halves = [(size - 1) // 2 for size in self.sizes]
        self.noise: list[dict[int, float]] = [{} for _ in range(self.h)]
        self.key: list[tuple[int, int]] = [(-1, 0)] * self.h  # (P_{j+1} in level-j blocks, d_j) per level
        self.part = [0.0] * self.h  # the level's signed noise sum
        self.t = 0

    def _blocks(self, j: int, lo: int, hi: int, draw) -> float:  # noqa: ANN001
        """Σ of the noises of level-j blocks lo ≤ q < hi holding a step ≤ N (drawn now if new, q ascending)."""
        cache, size, out = self.noise[j], self.sizes[j], 0.0
        for q in range(lo, hi):
            if q * size < self.n:
                z = cache.get(q)
                if z is None:
                    z = cache[q] = draw()
                out += z
        return out

    def step(self, total: float, draw) -> float:  # noqa: ANN001 - a zero-argument callable
        self.t += 1
        t, k = self.t, self.k
        out, upper = total, 0
        for j in range(self.h - 1, -1, -1):  # top level first: the draw order
            p = (t + self.halves[j]) // self.sizes[j]  # P_j in level-j blocks
            base, d = upper * k, p - upper * k
            old_base, old_d = self.key[j]
            if (old_base, old_d) != (base, d):
                if old_base == base and (d <= 0 or old_d >= 0):  # same parent, d grew: the blocks in between
                    self.part[j] += self._blocks(j, base + old_d, base + d, draw)  # added, or no longer subtracted
                else:
                    if old_base != base:  # a new parent: blocks of parents before the previous one are done
                        cache = self.noise[j]
                        for q in [q for q in cache if q // k < upper - 1]:
                            del cache[q]
                    self.part[j] = (self._blocks(j, base, base + d, draw) if d > 0
                                    else -self._blocks(j, base + d, base, draw))
                self.key[j] = (base, d)
            out += self.part[j]
            upper = p
        return out


@dataclass(frozen=True, eq=False)
class KaryEstimator(StructureEstimator):
    """ŝ = R y with R's rows the signed block sets of the balanced digits; Var(ŝ_t) = Σ of their variances."""

    structure: KaryStructure
    name: str = "kary-balanced-digits"


@dataclass(frozen=True, eq=False)
class KaryStrategy(StreamStrategy):
    """The k-ary balanced-digit mechanism's blocks (module docstring): integer block sums, one noise scale,
    Δ₁ = c and Δ₂ = √c with c the exact coverage."""

    @cached_property
    def structure(self) -> KaryStructure:
        return kary_structure(self.horizon, self.family)

    @cached_property
    def estimator(self) -> StreamEstimator:
        return KaryEstimator(self.structure)

    def sensitivity(self, family: Family | None = None) -> float:
        c = float(self.structure.coverage)
        return c if check_family(family or self.family) == "laplace" else float(np.sqrt(c))

    def answer(self, data: object) -> np.ndarray:
        return self.structure.answer(as_series(data, self.horizon))
