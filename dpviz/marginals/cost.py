"""How long a marginals simulation will take, before running it (for the page's live recomputation).

A rough model of :func:`dpviz.marginals.release.simulate` on this project's reference machine (2 cores,
quiet), fitted to timings of the bundled samples; it only decides whether the page recomputes on every
settings change (under :data:`LIVE_SECONDS`) or waits behind a button that says how long it takes. It reads
the structure only (domain sizes, workload, N, settings), never the data.

* Measuring: the true marginals and the residual measurements are bincounts over the N records, one per
  attribute set of the workload's downward closure 𝒲↓ (ResidualPlanner); Scalable MWEM runs T rounds, each
  an EMP reconstruction of the workload and an exponential-mechanism score of every workload marginal.
* GReM-MLE / EMP, Trunc, Trunc+Rescale: linear in the workload cells.
* GReM-LNN (Alg. 6): per iteration Σ_γ |γ| 2^|γ| Python steps (the (γ, τ ⊆ γ) pairs) plus
  Σ_γ |γ| n_γ 2^|γ| cell operations (Thm. 6e), times the iterations: the last run's count for the same
  workload when known, else ``min(rounds, TYPICAL_LNN_ITERATIONS)`` (the early stop on negative mass is
  checked from iteration 200 every 100, so a run on a small workload typically stops at 300). Up to
  :data:`dpviz.marginals.lnn.DENSE_MAX_CELLS` workload cells (:func:`dpviz.marginals.lnn.dense_rounds`) an iteration is instead one dense matrix-vector
  product (n_𝒲² entries, n_𝒲 = Σ_γ n_γ), after building the matrix once (n_𝒲² Σ_τ m_τ multiply-adds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dpviz.marginals.lnn import dense_rounds
from dpviz.marginals.model import Clique, Domain, downward_closure

__all__ = ["LIVE_SECONDS", "TYPICAL_LNN_ITERATIONS", "SimulationCost", "estimate_simulation", "describe_seconds"]

LIVE_SECONDS = 1.0
"""A simulation estimated below this many seconds is recomputed at once when a setting changes."""
TYPICAL_LNN_ITERATIONS = 300
"""GReM-LNN iterations assumed before a run has been timed (the first early-stopping check that can stop)."""

_BASE = 0.02           # fixed overhead of one simulation (seconds)
_PER_RECORD_SET = 3e-8  # one bincount of N records for one attribute set
_PER_CELL = 1.2e-6      # MLE / EMP, per workload cell
_TRUNC_PER_CELL = 3e-7  # Trunc / Trunc+Rescale, per workload cell
_MWEM_PER_MARGINAL = 2e-4  # per round and workload marginal (score + bookkeeping)
_MWEM_PER_CELL = 2e-7   # per round and workload cell (EMP of the measured marginals)
_LNN_FIXED = 2e-4       # per GReM-LNN iteration
_LNN_PER_PAIR = 1.5e-5  # per iteration and Python step Σ_γ |γ| 2^|γ|
_LNN_PER_CELL_OP = 3e-8  # per iteration and cell operation Σ_γ |γ| n_γ 2^|γ|
_LNN_DENSE_FIXED = 4e-5    # dense rounds: per iteration
_LNN_DENSE_ENTRY = 3e-10   # dense rounds: per iteration and matrix entry n_𝒲²
_LNN_DENSE_BUILD = 5e-11   # dense rounds: building the matrix, per n_𝒲² Σ_τ m_τ


@dataclass(frozen=True)
class SimulationCost:
    """Estimated seconds of one simulation: ``measure`` (truth, measurements, MLE/EMP and the truncations)
    and ``lnn`` (GReM-LNN; 0 when not selected), with the GReM-LNN iterations assumed."""

    measure: float
    lnn: float
    lnn_iterations: int

    @property
    def total(self) -> float:
        return self.measure + self.lnn

    def live(self, limit: float = LIVE_SECONDS) -> bool:
        """Whether the whole simulation is cheap enough to recompute at every settings change."""
        return self.total <= limit


def estimate_simulation(domain: Domain, workload: Sequence[Clique], n_records: int, *, mechanism: str,
                        rounds: int | None, methods: Sequence[str], lnn_rounds: int,
                        lnn_iterations: int | None = None) -> SimulationCost:
    """Seconds :func:`dpviz.marginals.release.simulate` is expected to take with these settings (see the
    module docstring). ``lnn_iterations``: the iterations of the last GReM-LNN run on the same workload, if
    known (else ``min(lnn_rounds, TYPICAL_LNN_ITERATIONS)``)."""
    wl = [tuple(g) for g in workload]
    cells = sum(domain.size(g) for g in wl)
    closure = downward_closure(wl)
    sets = len(closure) if mechanism == "rp" else len(wl)
    measure = _BASE + _PER_RECORD_SET * max(n_records, 1) * sets + _PER_CELL * cells
    if mechanism == "mwem":
        t = max(1, int(rounds or 1))
        measure += t * (_MWEM_PER_MARGINAL * len(wl) + _MWEM_PER_CELL * cells)
    measure += _TRUNC_PER_CELL * cells * sum(m in ("trunc", "trunc-rescale") for m in methods)
    lnn, iterations = 0.0, 0
    if "lnn" in methods:
        iterations = int(min(lnn_rounds, lnn_iterations if lnn_iterations else TYPICAL_LNN_ITERATIONS))
        rows = sum(domain.residual_size(t) for t in closure)
        if dense_rounds(cells, rows):  # as grem_lnn decides
            lnn = _LNN_DENSE_BUILD * cells * cells * rows + iterations * (_LNN_DENSE_FIXED
                                                                         + _LNN_DENSE_ENTRY * cells * cells)
        else:
            pairs = sum(len(g) * 2 ** len(g) for g in wl)
            ops = sum(len(g) * domain.size(g) * 2 ** len(g) for g in wl)
            lnn = iterations * (_LNN_FIXED + _LNN_PER_PAIR * pairs + _LNN_PER_CELL_OP * ops)
    return SimulationCost(measure, lnn, iterations)


def describe_seconds(seconds: float) -> str:
    """'about 1 s', 'about 40 s', 'about 3 min' (rounded up; never below 1 s)."""
    if not math.isfinite(seconds):
        return "a long time"
    if seconds < 90:
        return f"about {max(1, math.ceil(seconds))} s"
    return f"about {math.ceil(seconds / 60)} min"
