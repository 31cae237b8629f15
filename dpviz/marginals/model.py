"""The marginals data type: domains, datasets and marginal workloads (Mullins et al., NeurIPS 2024, §2;
digest §1.1–1.2).

A :class:`Domain` is an ordered list of categorical attributes with sizes n_k ≥ 2. A *clique* (γ or τ)
is a sorted tuple of attribute indices. The γ-marginal μ_γ = M_γ p is flattened row-major with axes in
increasing attribute order (the first attribute varies slowest), the Kronecker order of
M_γ = ⊗_k (I_k if k ∈ γ else 1_kᵀ). Nothing here builds the n = ∏ n_k data vector.

Unit of privacy: one record (add/remove one row): every marginal changes in exactly one cell by 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from typing import Any

import numpy as np

from dpviz.errors import InputError

Clique = tuple[int, ...]

__all__ = ["Clique", "Domain", "Dataset", "subsets", "downward_closure", "supersets_index", "all_kway", "axis_labels",
           "workload_cliques", "clique_label", "cell_labels", "MAX_MARGINAL_CELLS"]

MAX_MARGINAL_CELLS = 50_000_000
"""Largest workload marginal table (cells) accepted: 8 bytes a cell, 400 MB."""


@dataclass(frozen=True)
class Domain:
    """Ordered categorical attributes ``attrs`` with sizes ``sizes`` (each ≥ 2)."""

    attrs: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        attrs, sizes = tuple(str(a) for a in self.attrs), tuple(int(s) for s in self.sizes)
        if len(attrs) != len(sizes) or not attrs:
            raise InputError(f"domain: expected as many sizes as attributes (at least one), got "
                             f"{len(attrs)} attributes and {len(sizes)} sizes")
        if len(set(attrs)) != len(attrs):
            dup = next(a for a in attrs if attrs.count(a) > 1)
            raise InputError(f"domain: attribute {dup!r} appears twice")
        for a, s in zip(attrs, sizes, strict=True):
            if s < 2:
                raise InputError(f"domain: attribute {a!r} has {s} value(s); every attribute needs at least 2 "
                                 "(a column with one value carries no information: drop it)")
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "sizes", sizes)

    @classmethod
    def from_dict(cls, sizes: dict[str, int]) -> Domain:
        return cls(tuple(sizes), tuple(sizes.values()))

    def as_dict(self) -> dict[str, int]:
        return dict(zip(self.attrs, self.sizes, strict=True))

    @property
    def d(self) -> int:
        return len(self.attrs)

    def clique(self, names: Iterable[str | int]) -> Clique:
        """Attribute names (or indices) → sorted clique; InputError naming an unknown attribute."""
        out = set()
        for a in names:
            if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
                if not 0 <= int(a) < self.d:
                    raise InputError(f"workload: attribute index {a} is out of range 0..{self.d - 1}")
                out.add(int(a))
            elif a in self.attrs:
                out.add(self.attrs.index(a))
            else:
                raise InputError(f"workload: unknown attribute {a!r}; the domain has {', '.join(self.attrs)}")
        return tuple(sorted(out))

    def names(self, clique: Clique) -> tuple[str, ...]:
        return tuple(self.attrs[k] for k in clique)

    def shape(self, clique: Clique) -> tuple[int, ...]:
        return tuple(self.sizes[k] for k in clique)

    def size(self, clique: Clique) -> int:
        """n_γ = ∏_{k∈γ} n_k (1 for the empty clique)."""
        return int(np.prod([self.sizes[k] for k in clique], dtype=np.int64)) if clique else 1

    def residual_size(self, clique: Clique) -> int:
        """m_τ = ∏_{k∈τ} (n_k − 1) (1 for the empty clique)."""
        return int(np.prod([self.sizes[k] - 1 for k in clique], dtype=np.int64)) if clique else 1

    def check_cells(self, clique: Clique, limit: int = MAX_MARGINAL_CELLS) -> None:
        """InputError if the γ-marginal table would exceed ``limit`` cells (says how big it would be)."""
        cells = 1
        for k in clique:
            cells *= self.sizes[k]
        if cells > limit:
            raise InputError(f"workload: the marginal {'×'.join(self.names(clique))} has {cells:,} cells "
                             f"({cells * 8 / 1e9:.3g} GB as float64), above the limit of {limit:,} cells; "
                             "pick fewer or coarser attributes")


@dataclass(frozen=True, eq=False)
class Dataset:
    """Records as integer codes: ``codes[j, k]`` ∈ 0..n_k−1 is attribute k of record j.

    ``edges[k]``: the bin edges of attribute k when it is a binned number (else None); ``structure``: where
    the domain came from (a :class:`dpviz.core.structure.StructureSource`: a declaration, or the records
    themselves; None = not recorded, treated as read from the data). Zero records are allowed: a release
    over a declared domain may find none of its records inside it, and must not say so by failing."""

    domain: Domain
    codes: np.ndarray
    categories: tuple[tuple[str, ...], ...] | None = None
    name: str = "dataset"
    edges: tuple[tuple[float, ...] | None, ...] | None = None
    structure: Any = None

    def __post_init__(self) -> None:
        c = np.asarray(self.codes)
        if c.ndim != 2 or c.shape[1] != self.domain.d:
            raise InputError(f"dataset: expected codes of shape (N, {self.domain.d}), got {c.shape}")
        c = c.astype(np.int64, copy=False)
        bad = (c < 0) | (c >= np.asarray(self.domain.sizes))
        if c.size and bad.any():
            j, k = map(int, np.argwhere(bad)[0])
            raise InputError(f"dataset: row {j + 1}, attribute {self.domain.attrs[k]!r}: code {c[j, k]} is outside "
                             f"0..{self.domain.sizes[k] - 1}")
        c.flags.writeable = False
        object.__setattr__(self, "codes", c)

    @property
    def N(self) -> int:  # noqa: N802 - the paper's notation
        return int(self.codes.shape[0])

    def marginal(self, clique: Clique) -> np.ndarray:
        """μ_γ (float64 counts, length n_γ, row-major in attribute order); μ_∅ = [N]."""
        if not clique:
            return np.array([float(self.N)])
        self.domain.check_cells(clique)
        idx = np.ravel_multi_index(tuple(self.codes[:, k] for k in clique), self.domain.shape(clique))
        return np.bincount(idx, minlength=self.domain.size(clique)).astype(float)

    @cached_property
    def _cache(self) -> dict[Clique, np.ndarray]:
        return {}

    def marginals(self, cliques: Iterable[Clique]) -> dict[Clique, np.ndarray]:
        """μ_γ for every clique (computed once per clique per dataset)."""
        out = {}
        for g in cliques:
            if g not in self._cache:
                self._cache[g] = self.marginal(g)
            out[g] = self._cache[g]
        return out


def subsets(clique: Clique) -> list[Clique]:
    """Every τ ⊆ γ (including ∅ and γ), smallest first."""
    return [t for r in range(len(clique) + 1) for t in combinations(clique, r)]


def downward_closure(workload: Iterable[Clique]) -> list[Clique]:
    """𝒲↓ = {τ ⊆ γ : γ ∈ 𝒲}, including ∅, sorted by size then lexicographically."""
    out: set[Clique] = set()
    for g in workload:
        out.update(subsets(tuple(sorted(g))))
    return sorted(out, key=lambda t: (len(t), t))


def supersets_index(workload: Sequence[Clique]) -> dict[Clique, list[Clique]]:
    """For every τ ∈ 𝒲↓, the workload cliques γ ⊇ τ (in workload order)."""
    index: dict[Clique, list[Clique]] = {t: [] for t in downward_closure(workload)}
    for g in workload:
        for t in subsets(g):
            index[t].append(g)
    return index


def all_kway(domain: Domain, k: int) -> list[Clique]:
    """All k-way marginals (k ≤ d) in lexicographic order."""
    if not 0 <= k <= domain.d:
        raise InputError(f"workload: k = {k} must lie in 0..{domain.d} for a domain of {domain.d} attributes")
    return list(combinations(range(domain.d), k))


def workload_cliques(domain: Domain, workload: int | Iterable) -> list[Clique]:
    """The workload as cliques: an integer K (all K-way marginals) or a list of attribute lists (names or
    indices, any order). Duplicates are dropped (order kept); every marginal's size is checked."""
    if isinstance(workload, (int, np.integer)) and not isinstance(workload, bool):
        k = int(workload)
        if k < 1:
            raise InputError(f"--workload: K must be at least 1 (all K-way marginals), got {k}")
        out = all_kway(domain, k)
    else:
        if isinstance(workload, (str, bytes)) or not isinstance(workload, Iterable):
            raise InputError(f"--workload: expected K or a list of attribute lists, got {workload!r}")
        out = []
        for g in workload:
            if isinstance(g, (str, bytes)) or not isinstance(g, Iterable):
                raise InputError(f"--workload: each marginal is a list of attributes, got {g!r}")
            out.append(domain.clique(list(g)))
    out = list(dict.fromkeys(out))
    if not out:
        raise InputError("--workload: no marginals")
    for g in out:
        domain.check_cells(g)
    return out


def clique_label(domain: Domain, clique: Clique) -> str:
    """'Sex × Pclass' (attribute order), 'total' for the empty clique."""
    return " × ".join(domain.names(tuple(clique))) if clique else "total"


def axis_labels(domain: Domain, k: int, categories: Sequence[Sequence[str]] | None = None) -> list[str]:
    """Value labels of attribute ``k``: its categories when known, else the codes 0..n_k−1."""
    n = domain.sizes[k]
    if categories is not None and categories[k] is not None and len(categories[k]) == n:
        return [str(c) for c in categories[k]]
    return [str(i) for i in range(n)]


def cell_labels(domain: Domain, clique: Clique, categories: Sequence[Sequence[str]] | None = None) -> list[str]:
    """One label per cell of the γ-marginal, row-major (the first attribute varies slowest):
    'Sex=male, Pclass=1'; 'all' for the empty clique."""
    if not clique:
        return ["all"]
    parts = [[f"{domain.attrs[k]}={v}" for v in axis_labels(domain, k, categories)] for k in clique]
    out = parts[0]
    for p in parts[1:]:
        out = [f"{a}, {b}" for a in out for b in p]
    return out
