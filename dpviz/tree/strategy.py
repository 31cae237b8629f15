"""What a tree release measures: every node count, with noise per depth level (paper Sec. 5, Alg. 2).

Unit of privacy
---------------
One person, counted in exactly one leaf. Adding or removing that person changes the leaf's count
and the count of every ancestor by exactly 1, i.e. one node per depth level it reaches and nothing
else: the node vector v = BuildTree(x) (Eq. 25) moves by a 0/±1 vector with at most one non-zero
per level. Its L1 norm is at most h and its L2 norm at most √h (equality at the deepest leaves), so
the query set "all node counts" has Δ₁ = h and Δ₂ = √h. The hierarchy itself (node ids, parents,
hence n, m and h) is public: it is not protected and is printed in every output.

Budget split over levels
------------------------
:class:`TreeLevels` measures every node once. Depth level ℓ (1 = root .. h) is a release of
disjoint counts (parallel composition inside the level) in which one person changes one count by
1, so it is a unit-sensitivity count release; it spends the share ``share_ℓ`` of the budget and the
levels compose sequentially:

* Laplace (pure ε-DP): ε_ℓ = share_ℓ · ε and scale b_ℓ = 1/ε_ℓ; Σ_ℓ ε_ℓ = ε.
* Gaussian (ρ-zCDP): ρ_ℓ = share_ℓ · ρ and σ_ℓ = 1/√(2ρ_ℓ); Σ_ℓ ρ_ℓ = ρ (zCDP composition,
  Bun & Steinke, TCC 2016, Lemma 2.3). An (ε, δ) budget becomes ρ inside
  :class:`dpviz.core.noise.Noise` (exact Gaussian profile for continuous noise, CKS bound for
  discrete noise); this module never converts budgets itself.

``uniform``: share_ℓ = 1/h, so every node gets b = h/ε or σ = √h/√(2ρ) — exactly the whole-budget
scale for Δ₁ = h / Δ₂ = √h (the paper's Lap(h/ε), Alg. 2 step 3). ``geometric``:
share_ℓ ∝ 2^{ℓ/3}, more budget to the deeper, more numerous levels (Cormode, Procopiuc,
Srivastava, Shen and Yu, "Differentially Private Spatial Decompositions", ICDE 2012, Sec. 4.2).

The discrete samplers (Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020) keep both guarantees for integer counts: a discrete Laplace of scale b is
(Δ₁/b)-DP and a discrete Gaussian of σ is Δ₂²/(2σ²)-zCDP. Their variances differ slightly from
2b² and σ²; :meth:`TreeLevels.variances` returns the exact ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpviz.core.noise import Family, Noise
from dpviz.errors import InputError
from dpviz.tree.model import Tree, TreeData, build_tree

Split = Literal["uniform", "geometric"]
SPLITS: tuple[Split, ...] = ("uniform", "geometric")

__all__ = ["Split", "SPLITS", "check_split", "level_shares", "scales_text", "TreeLevels"]


def check_split(split: str) -> Split:
    """``split`` if it is 'uniform' or 'geometric', else InputError."""
    if split not in SPLITS:
        raise InputError(f"split: expected 'uniform' or 'geometric', got {split!r}")
    return split  # type: ignore[return-value]


def level_shares(h: int, split: Split = "uniform") -> np.ndarray:
    """share_ℓ of the budget for depth levels ℓ = 1 (root) .. h; positive, sums to 1.

    ``uniform``: 1/h each. ``geometric``: ∝ 2^{ℓ/3} (Cormode et al., ICDE 2012, Sec. 4.2).
    """
    check_split(split)
    if not isinstance(h, (int, np.integer)) or h < 1:
        raise InputError(f"height: expected an integer >= 1, got {h!r}")
    if split == "uniform":
        return np.full(int(h), 1.0 / h)
    # 2^{ℓ/3} overflows for h ≳ 3,000: compute relative to the deepest level, 2^{(ℓ−h)/3} ∈ (0, 1]
    w = np.exp2((np.arange(1, h + 1) - float(h)) / 3.0)
    shares = w / w.sum()
    if not shares[0] > 1e-300:
        raise InputError(f"split: the geometric split on a tree of height {h:,} gives the root a budget share of "
                         f"about 2^-{(h - 1) / 3:,.0f} (zero in floating point, i.e. infinite noise); use the "
                         "uniform split for trees this deep")
    return shares


@dataclass(frozen=True, eq=False)
class TreeLevels:
    """The tree strategy (:class:`dpviz.core.protocols.Strategy`): measure every node count v_i,
    node i at depth ℓ getting noise of its level's scale (module docstring)."""

    tree: Tree
    split: Split = "uniform"

    def __post_init__(self) -> None:
        check_split(self.split)

    @property
    def name(self) -> str:
        return f"tree-levels/{self.split}"

    @property
    def shares(self) -> np.ndarray:
        """Budget share of each depth level 1..h."""
        return level_shares(self.tree.h, self.split)

    def sensitivity(self, family: Family) -> float:
        """Δ₁ = h (Laplace) or Δ₂ = √h (Gaussian) of the node vector for one person (any split:
        the split changes the scales, not the queries)."""
        if family == "laplace":
            return float(self.tree.h)
        if family == "gaussian":
            return float(np.sqrt(self.tree.h))
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {family!r}")

    def level_scales(self, noise: Noise) -> np.ndarray:
        """Noise scale of each depth level 1..h: b_ℓ = 1/(share_ℓ ε) or σ_ℓ = 1/√(2 share_ℓ ρ).

        Uniform split: every level gets the whole-budget scale for the query set's sensitivity,
        ``noise.scale(h)`` or ``noise.scale(√h)``, computed that way so it is exact."""
        h = self.tree.h
        if self.split == "uniform":
            return np.full(h, noise.scale(self.sensitivity(noise.family)))
        unit = noise.scale(1.0)  # 1/ε or 1/√(2ρ): a unit-sensitivity release at the whole budget
        shares = self.shares
        return unit / shares if noise.family == "laplace" else unit / np.sqrt(shares)

    def scales(self, noise: Noise) -> np.ndarray:
        """Per-node noise scale (DOH order): the scale of the node's depth level."""
        return self.level_scales(noise)[self.tree.depth - 1]

    def variances(self, noise: Noise) -> np.ndarray:
        """Exact per-node noise variance d_i for this noise (discrete or continuous): one evaluation per
        level, then the node's level (the discrete variances are series: h of them, not n)."""
        per_level = np.asarray(noise.variance_at(self.level_scales(noise)), dtype=float)
        return per_level[self.tree.depth - 1]

    def spent(self, noise: Noise) -> float:
        """The budget these scales spend, recomputed from them by sequential composition over levels:
        Σ_ℓ 1/b_ℓ (= ε, Laplace) or Σ_ℓ 1/(2σ_ℓ²) (= ρ, Gaussian). A check, not a calibration."""
        s = self.level_scales(noise)
        return float(np.sum(1.0 / s)) if noise.family == "laplace" else float(np.sum(0.5 / s**2))

    def answer(self, data: Any) -> np.ndarray:
        """The true node vector v = BuildTree(x) (Eq. 25), from a :class:`TreeData` on this tree or
        from the leaf counts x (leaf order)."""
        if isinstance(data, TreeData):
            if data.tree is not self.tree:
                raise InputError("the data's tree is not the tree this strategy was built for")
            return data.v
        x = np.asarray(data, dtype=float)
        if x.shape != (self.tree.m,):
            raise InputError(f"leaf counts: expected {self.tree.m} values, got shape {x.shape}")
        return build_tree(self.tree, x)


def scales_text(level_scales: np.ndarray, shown: int = 8) -> str:
    """Per-level noise scales for a message, root first: all of them for a short tree, else the first
    and last few (a path-like tree has 500,001 levels: printing them all took a quarter of a second
    per page rerun and a screenful per release).

    >>> scales_text(np.array([2.0, 2.0, 2.0]))
    '2, 2, 2'
    >>> scales_text(np.full(500_001, 5e5))
    '5e+05 on each of the 500,001 levels'
    >>> scales_text(np.arange(1.0, 21.0), shown=4)
    '1, 2, …, 19, 20 (20 levels)'
    """
    s = np.asarray(level_scales, dtype=float)
    if s.size <= shown:
        return ", ".join(f"{v:.4g}" for v in s)
    if np.all(s == s[0]):
        return f"{s[0]:.4g} on each of the {s.size:,} levels"
    k = shown // 2
    return (", ".join(f"{v:.4g}" for v in s[:k]) + ", …, " + ", ".join(f"{v:.4g}" for v in s[-k:])
            + f" ({s.size:,} levels)")
