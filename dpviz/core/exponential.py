"""The exponential mechanism in pure ε-DP, one selection or many disjoint selections at once.

Definition (F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy", IEEE FOCS 2007):
given scores q(D, r) over a finite candidate set with sensitivity Δ = max over neighbours D ~ D' and
candidates r of |q(D, r) − q(D', r)|, output r with probability ∝ exp(ε q(D, r) / (2Δ)). It is ε-DP.

Sampling uses the Gumbel-max trick: argmax_r (ε q_r / (2Δ) + G_r) with G_r i.i.d. standard Gumbel has
exactly that distribution (E. J. Gumbel, *Statistical Theory of Extreme Values*, 1954; see also
C. Maddison, D. Tarlow, T. Minka, "A* Sampling", NeurIPS 2014). It vectorises over many candidate
sets: :func:`exponential_mechanism_grouped` makes one independent selection per group (e.g. the split
point of every region of one kd-tree depth), each group with its own ε and Δ.

Randomness: a ``numpy.random.Generator`` (simulation, tests) or ``rng=None``, in which case every
uniform comes from the OS CSPRNG (:func:`dpviz.core.samplers.csprng_uint64`, 53 bits per uniform).
Floating point: the Gumbel variates and the weighted scores are float64, so each selection probability
carries a relative error of order 1e-15 and candidates more than ~700 nats below the best are never
picked; the implemented mechanism is within a negligible total variation of the ideal one (the same
caveat as :func:`dpviz.marginals.strategy.exponential_mechanism`, which is the ρ-zCDP, single-selection
form of this mechanism: ε = √(8ρ)).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpviz.core.accounting import positive
from dpviz.core.samplers import csprng_uint64
from dpviz.errors import InputError

__all__ = ["uniform53", "gumbel", "exponential_mechanism", "exponential_mechanism_grouped"]


def uniform53(size: int, rng: np.random.Generator | None) -> np.ndarray:
    """``size`` uniforms in (0, 1) with 53 random bits each, (k + 1/2)·2^-53: from ``rng`` (simulation) or,
    when ``rng`` is None, from the OS CSPRNG (:func:`dpviz.core.samplers.csprng_uint64`)."""
    if rng is None:
        words = csprng_uint64(int(size))
    else:
        if not isinstance(rng, np.random.Generator):
            raise InputError(f"rng: expected a numpy.random.Generator or None, got {type(rng).__name__}")
        words = rng.integers(0, 2**64, size=int(size), dtype=np.uint64)
    return ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def gumbel(size: int, rng: np.random.Generator | None) -> np.ndarray:
    """``size`` standard Gumbel variates −log(−log U), U = :func:`uniform53` (OS CSPRNG when ``rng`` is None)."""
    return -np.log(-np.log(uniform53(size, rng)))


def _as_scores(scores: object) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise InputError(f"exponential mechanism: scores must be a non-empty 1-D array, got shape {s.shape}")
    if not np.isfinite(s).all():
        raise InputError("exponential mechanism: scores must be finite")
    return s


def exponential_mechanism(scores: np.ndarray | Sequence[float], epsilon: float, sensitivity: float,
                          rng: np.random.Generator | None) -> int:
    """Index r with probability ∝ exp(ε · scores[r] / (2 · sensitivity)) (ε-DP; higher score = likelier)."""
    s = _as_scores(scores)
    epsilon = positive("epsilon", epsilon)
    sensitivity = positive("sensitivity", sensitivity)
    return int(np.argmax(epsilon / (2.0 * sensitivity) * s + gumbel(s.size, rng)))


def exponential_mechanism_grouped(scores: np.ndarray, group: np.ndarray, epsilon: float | np.ndarray,
                                  sensitivity: float | np.ndarray, rng: np.random.Generator | None,
                                  n_groups: int | None = None) -> np.ndarray:
    """One exponential-mechanism selection per group, vectorised.

    ``scores``: float (N,); ``group``: int (N,) in 0..G-1 (any order) naming the candidate set of each
    score; ``epsilon``, ``sensitivity``: scalars or arrays (G,) (per group). Returns int64 (G,): the
    index into ``scores`` chosen in each group, −1 for a group without candidates. Selections in
    different groups are independent; with disjoint groups of records (parallel composition) the whole
    call is max(ε)-DP.
    """
    s = _as_scores(scores)
    g = np.asarray(group, dtype=np.int64)
    if g.shape != s.shape:
        raise InputError(f"exponential mechanism: group must match scores, got {g.shape} and {s.shape}")
    if g.size and int(g.min()) < 0:
        raise InputError("exponential mechanism: group ids must be >= 0")
    n_g = int(n_groups) if n_groups is not None else (int(g.max()) + 1 if g.size else 0)
    eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (n_g,))
    sens = np.broadcast_to(np.asarray(sensitivity, dtype=np.float64), (n_g,))
    if n_g and (not np.all(np.isfinite(eps) & (eps > 0)) or not np.all(np.isfinite(sens) & (sens > 0))):
        raise InputError("exponential mechanism: epsilon and sensitivity must be positive and finite")
    key = eps[g] / (2.0 * sens[g]) * s + gumbel(s.size, rng)
    out = np.full(n_g, -1, dtype=np.int64)
    if s.size == 0:
        return out
    if np.any(g[1:] < g[:-1]):  # bring each group together (stable: keeps the index order inside)
        order = np.argsort(g, kind="stable")
    else:
        order = np.arange(g.size)
    g_sorted = g[order]
    k_sorted = key[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    best = np.maximum.reduceat(k_sorted, starts)  # the largest key of each group
    seg = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, g_sorted.size]))
    hit = np.flatnonzero(k_sorted == best[seg])
    first = hit[np.r_[True, seg[hit][1:] != seg[hit][:-1]]]  # first maximiser of each group
    out[g_sorted[first]] = order[first]
    return out
