"""The smooth binary mechanism: a binary tree whose leaves all have the same Hamming weight.

Source: J. D. Andersson & R. Pagh, "A Smooth Binary Mechanism for Efficient Private Continual
Observation", NeurIPS 2023 (arXiv:2306.09666), Sections 3-4. Notation: tree height h, leaves are the
h-bit strings ℓ, and only the leaves of Hamming weight w carry data (the paper takes h even and
w = h/2; see *Parameters* below). The weight-w numbers in increasing order are ℓ_1 < ℓ_2 < ... and
step t's count a_t sits at leaf ℓ_t, so N steps need C(h, w) ≥ N + 1 leaves.

**Nodes and the released totals.** A node is an aligned dyadic block of leaves. For an h-bit number
e, the prefix [0, e) of leaves is the disjoint union of one node per set bit b of e: the left child
at level b on e's path, covering [⌊e/2^{b+1}⌋ 2^{b+1}, ⌊e/2^{b+1}⌋ 2^{b+1} + 2^b). The release at step t
is the prefix [0, ℓ_{t+1}): it holds exactly the data leaves ℓ_1..ℓ_t (no weight-w leaf lies strictly
between ℓ_t and ℓ_{t+1}), so ŝ_t = Σ_{set bits b of ℓ_{t+1}} ỹ(node b of ℓ_{t+1}), a sum of exactly
**w** noisy nodes at every step: the per-step variance is the constant w·σ_node² (the paper's
"smooth" error, Thm. 1).

**Which nodes are measured, and when** (the draw order). Let d_t be the highest bit where ℓ_t and
ℓ_{t+1} differ (ℓ_t has a 0 there, ℓ_{t+1} a 1). The nodes of ℓ_{t+1} at bits above d_t are those of
ℓ_t (same path prefix): they were measured before. The nodes at its set bits ≤ d_t are new at step t
and drawn then, highest bit first (at t = 1 every node of ℓ_2 is new). Of the new nodes only the one
at bit d_t holds data: it covers [Y_t, Y_t + 2^{d_t}) with Y_t = ℓ_{t+1} with bits ≤ d_t cleared, i.e.
the steps r_t < j ≤ t with r_t = #{j : ℓ_j < Y_t}, and it is complete at step t (its last data leaf
is ℓ_t). The nodes below bit d_t lie strictly between ℓ_t and ℓ_{t+1}, where no data leaf is, so
their exact value is 0 — they carry noise only, the price of a constant variance (a variant that
skips them is not the paper's mechanism and is not offered here).

**Unit of privacy: one event** (a_t ± 1, :mod:`dpviz.stream.strategy`). It changes by ±1 exactly the
data-bearing nodes that contain leaf ℓ_t, each by ±1 (the answers are integer node sums: discrete
noise applies directly). A measured node containing ℓ_t is a left child (bit b of its path is 0) on
ℓ_t's path, so there are at most h − w of them (the zeros of ℓ_t): the ℓ₁ sensitivity is
Δ₁ = c := max_t #{nodes ∋ ℓ_t} ≤ h − w and the ℓ₂ sensitivity Δ₂ = √c (0/1 changes). The code charges
the exact c (:attr:`SmoothBinaryStructure.coverage`, computed from the measured intervals, tested by
brute force), so σ_node = √c/√(2ρ) (ρ-zCDP, CKS 2020 Thm. 4 per node, additive composition) or
b = c/ε (ε-DP, discrete Laplace per node, basic composition), exactly as in the module docstring of
:mod:`dpviz.stream.strategy` with λ = 1.

**Parameters.** The paper's choice is h even, w = h/2: variance (h/2)²/(2ρ) with h the smallest even
height with C(h, h/2) > N. The proof above holds for any weight, so :func:`smooth_parameters`
chooses (h, w) with C(h, w) ≥ N + 1 minimising the per-step variance bound: w(h − w) under zCDP
(ℓ₂: w nodes of variance (h − w)/(2ρ)) and w(h − w)² under ε-DP (ℓ₁: w nodes of variance 2(h − w)²/ε²),
so fewer zeros (a smaller sensitivity) against more ones (more nodes per release) — under ε-DP the
optimum has few zeros. ``paper=True`` gives the paper's (h, h/2).

**Memory.** The streaming form (:class:`SmoothBinaryState`) keeps the exact and noisy value of the
≤ h nodes on the current path and the current leaf (Gosper's next-combination step): O(log N) state,
O(log N) work per step, as in the paper's Algorithm 2. The batch form keeps the (w, N) int32 table of
the nodes each release sums (4w bytes per step; ≈ 0.7 s to build for w = 27 at N = 2^20).

**Numbers** (``python -m dpviz stream variance``; ρ = 1/2, so a node's variance is Δ₂²). N = 2^16:
(h, w) = (19, 8), constant variance 88 (the paper's (20, 10): 90) against binary's worst 272 and mean
136 (ratios 3.09 and 1.55) and honaker's worst 149.7; N = 2^20: (23, 10), 130 against binary's 420 / 210
(3.23 / 1.62). The paper's "about 4×" is the asymptotic worst-step ratio (h ≈ log₂ N: (log₂ N)²/(2ρ) for
binary against (log₂ N)²/(8ρ)); under zCDP honaker and the Toeplitz factorisations keep a lower *mean*.
Pure ε (ε = 1): N = 2^16, (26, 21), coverage 5: 1050 against honaker's mean 2544 and worst 5088 (2.42× and
4.85×) and FDA's mean 1574; N = 2^20, (33, 27): 1944 against honaker's 4764 / 9529 (2.45× / 4.90×).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from dpviz.core.noise import Family
from dpviz.errors import InputError
from dpviz.stream.estimators import StreamEstimator, StructureEstimator
from dpviz.stream.strategy import StreamStrategy, as_series, check_family

__all__ = ["smooth_parameters", "weight_w_leaves", "SmoothBinaryStructure", "smooth_structure", "SmoothBinaryState",
           "SmoothBinaryEstimator", "SmoothBinaryStrategy"]

_MAX_HEIGHT = 62  # leaves are int64


def smooth_parameters(horizon: int, family: Family, *, paper: bool = False) -> tuple[int, int]:
    """(h, w): tree height and leaf weight for N = ``horizon`` steps (module docstring, *Parameters*).

    ``paper``: the paper's smallest even h with C(h, h/2) ≥ N + 1 and w = h/2. Otherwise the (h, w)
    with C(h, w) ≥ N + 1 minimising w(h − w) (Gaussian) or w(h − w)² (Laplace); ties: the smaller h.
    A search over O(log N) heights (Python integers, exact binomials).
    """
    n = int(horizon)
    if n < 1:
        raise InputError(f"horizon: expected a positive integer, got {horizon!r}")
    if paper:
        h = 2
        while math.comb(h, h // 2) < n + 1:
            h += 2
        return h, h // 2
    power = 1 if family == "gaussian" else 2
    best: tuple[int, int, int] | None = None
    for h in range(2, _MAX_HEIGHT):
        for w in range(1, h):
            if math.comb(h, w) >= n + 1:
                cost = w * (h - w) ** power
                if best is None or cost < best[0]:
                    best = (cost, h, w)
        if best is not None and h - 1 > best[0]:  # any later (h, w) has w(h−w)^p ≥ h − 1
            break
    if best is None:  # pragma: no cover - N < 2^61 always fits
        raise InputError(f"horizon: N = {n} is too large for the smooth binary mechanism")
    return best[1], best[2]


def weight_w_leaves(height: int, weight: int, count: int) -> np.ndarray:
    """The ``count`` smallest h-bit numbers of Hamming weight w, increasing (int64).

    Unranking in the combinatorial number system: the r-th (0-based) weight-w number is
    Σ_i 2^{c_i} where r = Σ_{i=1..w} C(c_i, i), c_w > ... > c_1 ≥ 0 (increasing numeric order of
    fixed-weight numbers is the colexicographic order of their bit sets). One vectorised pass per
    one (O(min(w, h − w)) passes of O(count) work: for w > h/2 the complements, of weight h − w, are
    unranked from the top, since complementing reverses the order).
    """
    if not 0 < weight < height <= _MAX_HEIGHT or count > math.comb(height, weight):
        raise InputError(f"smooth binary: {count} leaves of weight {weight} do not fit a tree of height {height}")
    flip = height - weight < weight  # unrank the complements (weight h − w, in decreasing order): fewer passes
    ones = height - weight if flip else weight
    table = np.array([[math.comb(c, i) for i in range(ones + 1)] for c in range(height + 1)], dtype=np.int64)
    rank = np.arange(count, dtype=np.int64)
    if flip:
        rank = math.comb(height, weight) - 1 - rank
    out = np.zeros(count, dtype=np.int64)
    for i in range(ones, 0, -1):  # loop over the ones
        c = np.searchsorted(table[:, i], rank, side="right") - 1
        rank = rank - table[c, i]
        out |= np.int64(1) << c
    return ((np.int64(1) << height) - 1) ^ out if flip else out


def _msb(x: np.ndarray) -> np.ndarray:
    """Index of the highest set bit of each positive int64 (exact: frexp of integers below 2^53)."""
    return (np.frexp(x.astype(float))[1] - 1).astype(np.int64)


@dataclass(frozen=True, eq=False)
class SmoothBinaryStructure:
    """The measured nodes of the smooth binary mechanism for N steps, height h, weight w (module docstring).

    Arrays are 0-based in the step (entry t − 1 is step t). ``leaves[j]`` = ℓ_{j+1} (N + 1 of them).
    """

    horizon: int
    height: int
    weight: int

    @cached_property
    def leaves(self) -> np.ndarray:
        return weight_w_leaves(self.height, self.weight, self.horizon + 1)

    @cached_property
    def split_bit(self) -> np.ndarray:
        """d_t: the highest bit where ℓ_t and ℓ_{t+1} differ."""
        ell = self.leaves
        return _msb(ell[:-1] ^ ell[1:])

    @cached_property
    def new_cut(self) -> np.ndarray:
        """The nodes of ℓ_{t+1} at set bits ≤ new_cut[t] are drawn at step t (all of them at t = 1)."""
        cut = self.split_bit.copy()
        cut[0] = self.height - 1
        return cut

    @cached_property
    def new_counts(self) -> np.ndarray:
        """Number of nodes drawn at each step: popcount(ℓ_{t+1} & (2^{cut+1} − 1))."""
        e = self.leaves[1:]
        return np.bitwise_count(e & ((np.int64(2) << self.new_cut) - 1)).astype(np.int64)

    @cached_property
    def starts(self) -> np.ndarray:
        """Draw index of the first node drawn at each step (length N + 1: the last entry is the size)."""
        return np.concatenate([[0], np.cumsum(self.new_counts)])

    @property
    def size(self) -> int:
        return int(self.starts[-1])

    def __post_init__(self) -> None:
        if (self.horizon + 1) * self.weight >= 2**31:  # bounds the node count: int32 draw indices
            raise InputError(f"horizon: N = {self.horizon} is too large for the smooth binary mechanism's tables")

    @cached_property
    def data_start(self) -> np.ndarray:
        """r_t: the data node drawn at step t covers steps r_t < j ≤ t (r_t = #{ℓ_j < Y_t})."""
        d = self.split_bit
        y = (self.leaves[1:] >> (d + 1)) << (d + 1)
        return np.searchsorted(self.leaves, y, side="left").astype(np.int64)

    @cached_property
    def data_index(self) -> np.ndarray:
        """Draw index of step t's data node: after the new nodes above bit d_t (only at t = 1 are there any)."""
        e, d, cut = self.leaves[1:], self.split_bit, self.new_cut
        above = np.bitwise_count((e >> (d + 1)) & ((np.int64(1) << (cut - d)) - 1)).astype(np.int64)
        return self.starts[:-1] + above

    @cached_property
    def coverage(self) -> int:
        """c = max over steps j of the number of measured nodes holding a_j (≤ h − w): Δ₁ = c, Δ₂ = √c."""
        n = self.horizon
        diff = np.zeros(n + 2, dtype=np.int64)
        np.add.at(diff, self.data_start + 1, 1)  # node covers steps r_t + 1 .. t (1-based)
        np.add.at(diff, np.arange(2, n + 2), -1)
        return int(np.cumsum(diff)[1 : n + 1].max())

    @cached_property
    def gather(self) -> np.ndarray:
        """(w, N) int32: row j holds the draw index of the j-th node (highest bit first) released at each step.

        Step t keeps the k_t = w − (new nodes) highest nodes of step t − 1 in the same rows and puts its
        new nodes, drawn consecutively from starts[t], in rows k_t..w − 1. So row j at step t is the node
        drawn at the last step τ ≤ t with k_τ ≤ j, at index starts[τ] + j − k_τ: one pass per row
        (O(w) passes of O(N) work). Indices increase along each row (cache-friendly gathers).
        """
        n, w = self.horizon, self.weight
        t = np.arange(n, dtype=np.int32)
        kept = (w - self.new_counts).astype(np.int32)
        base = (self.starts[:-1] - kept).astype(np.int32)  # node index = base[τ] + j
        out = np.empty((w, n), dtype=np.int32)  # fewer than 2^31 nodes (__post_init__)
        for j in range(w):  # the w nodes of a release
            last = np.maximum.accumulate(np.where(kept <= j, t, -1))  # kept[0] = 0: every row starts at t = 0
            np.add(base[last], j, out=out[j])
        out.flags.writeable = False
        return out

    def answer(self, counts: np.ndarray) -> np.ndarray:
        """Exact node sums in draw order (int64 for integer counts): S_t − S_{r_t} at step t's data node, 0 elsewhere."""
        a = np.asarray(counts)
        s = np.concatenate([np.zeros(1, dtype=a.dtype), np.cumsum(a)])
        out = np.zeros(self.size, dtype=a.dtype)
        out[self.data_index] = s[1:] - s[self.data_start]
        return out

    def apply(self, values: np.ndarray) -> np.ndarray:
        """ŝ_t = Σ of the w nodes of ℓ_{t+1} along the last axis (integer input stays integer)."""
        v = np.asarray(values)
        if v.dtype.kind not in "iu":
            v = v.astype(float, copy=False)
        rows = self.gather
        out = v[..., rows[0]].copy()
        for j in range(1, self.weight):  # the w nodes, highest bit first (the streaming order)
            out += v[..., rows[j]]
        return out


@lru_cache(maxsize=8)
def smooth_structure(horizon: int, family: Family, paper: bool = False) -> SmoothBinaryStructure:
    """The cached structure for N steps with the (h, w) of :func:`smooth_parameters`."""
    h, w = smooth_parameters(horizon, family, paper=paper)
    return SmoothBinaryStructure(int(horizon), h, w)


class SmoothBinaryState:
    """The streaming form (paper's Alg. 2): O(h) state, O(h) plain-Python work per step.

    :meth:`step` takes the exact running total S_t after step t and a ``draw`` callable giving the
    next noise value of a node (called once per new node, in the batch draw order), and returns ŝ_t.
    ``exact``/``noisy`` map each set bit of the current endpoint ℓ_{t+1} to its node's values.
    """

    def __init__(self, structure: SmoothBinaryStructure) -> None:
        self.h, self.w = structure.height, structure.weight
        self.leaf = (1 << self.w) - 1  # ℓ_1: the current data leaf
        self.exact: dict[int, float] = {}
        self.noisy: dict[int, float] = {}
        self.out = 0.0
        self.first = True

    @staticmethod
    def _next(x: int) -> int:
        """The next larger integer with the same number of ones (Gosper's hack)."""
        c = x & -x
        r = x + c
        return (((r ^ x) >> 2) // c) | r

    def step(self, total: float, draw) -> float:  # noqa: ANN001 - a zero-argument callable
        e = self._next(self.leaf)
        d = (self.leaf ^ e).bit_length() - 1
        cut = self.h - 1 if self.first else d
        kept = 0.0
        for b in list(self.exact):  # O(h): drop the nodes below the split, sum the kept ones
            if b > d and not self.first:
                kept += self.exact[b]
            else:
                self.out -= self.noisy.pop(b)
                del self.exact[b]
        for b in range(cut, -1, -1):  # the new nodes, highest bit first (the batch draw order)
            if e >> b & 1:
                value = total - kept if b == d else 0.0
                self.exact[b] = value
                self.noisy[b] = noisy = value + draw()
                self.out += noisy
        self.leaf, self.first = e, False
        return self.out  # the w noisy nodes of ℓ_{t+1}, kept as a running sum


@dataclass(frozen=True, eq=False)
class SmoothBinaryEstimator(StructureEstimator):
    """ŝ_t = Σ of the w nodes on ℓ_{t+1}'s path (R has w ones per row, in distinct columns), so
    Var(ŝ_t) = Σ of their query variances (= w·v for one noise scale: the paper's constant variance)."""

    structure: SmoothBinaryStructure
    name: str = "smooth-binary-path"


@dataclass(frozen=True, eq=False)
class SmoothBinaryStrategy(StreamStrategy):
    """The smooth binary mechanism's measured nodes (module docstring): integer node sums, one noise
    scale; Δ₁ = c, Δ₂ = √c with c the exact coverage (≤ h − w). ``paper``: the paper's (h, h/2)."""

    paper: bool = False

    @cached_property
    def structure(self) -> SmoothBinaryStructure:
        return smooth_structure(self.horizon, self.family, self.paper)

    @cached_property
    def estimator(self) -> StreamEstimator:
        return SmoothBinaryEstimator(self.structure)

    def sensitivity(self, family: Family | None = None) -> float:
        c = float(self.structure.coverage)
        return c if check_family(family or self.family) == "laplace" else math.sqrt(c)

    def answer(self, data: object) -> np.ndarray:
        a = as_series(data, self.horizon)
        return self.structure.answer(np.concatenate([a, np.zeros(self.horizon - a.size, dtype=a.dtype)]))
