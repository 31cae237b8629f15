"""What a marginals release measures and its sensitivity: ResidualPlanner residuals, isotropic marginals, and
the exponential mechanism, all accounted in ρ-zCDP. Every draw on the private data goes through
:func:`dpviz.core.protocols.measure` (the :class:`MarginalQueries` strategy) or the core exponential mechanism
(:func:`dpviz.core.exponential.exponential_mechanism`); nothing here samples noise itself.

Primary sources: Y. Xiao, G. He, D. Toksoz, D. Ding, D. Zhang, D. Kifer, "An Optimal and Scalable Matrix
Mechanism for Noisy Marginals under Convex Loss Functions" (ResidualPlanner), NeurIPS 2023; B. Mullins,
M. Fuentes, Y. Xiao, D. Kifer, C. Musco, D. Sheldon, "Efficient and Private Marginal Reconstruction with
Local Non-Negativity", NeurIPS 2024 (§2, App. B Props. 5–7, digest §1.4–1.5 and §4.2).

Unit of privacy: one record (add/remove one row). Every marginal μ_τ then changes in exactly one cell
by 1 (L2 sensitivity 1).

Residual measurements (ResidualPlanner, S = 𝒲↓): z_τ = D_τ(μ_τ + σ_τ ξ_τ). Two accountings:

* ``cost="residual"`` (continuous Gaussian ξ, the paper's): z_τ = R_τ p + N(0, σ_τ² D_τD_τᵀ) is a
  correlated Gaussian mechanism whose zCDP cost is half the largest diagonal entry of
  R_τᵀ(σ_τ²D_τD_τᵀ)⁻¹R_τ (Prop. 6), i.e. c_τ = p_τ/(2σ_τ²) with p_τ = ∏_{k∈τ}(n_k−1)/n_k.
* ``cost="marginal"`` (conservative, what a *discrete* release pays): the correlated-Gaussian bound is not
  proven for discrete-Gaussian noise, so z_τ is treated as post-processing of the full noisy integer
  marginal μ_τ + ξ_τ, which costs 1/(2σ_τ²) (independent discrete Gaussians on an integer vector of L2
  sensitivity Δ₂ are Δ₂²/(2σ²)-zCDP: C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
  Differential Privacy", NeurIPS 2020).

Noise scales (digest §1.5, the "sum of workload cell variances" loss): with w_τ = p_τ (residual) or 1
(marginal), minimise Σ_τ v_τ σ_τ² subject to Σ_τ w_τ/(2σ_τ²) = ρ, where
v_τ = p_τ Σ_{γ∈𝒲, γ⊇τ} n_γ ∏_{k∈γ\\τ} n_k^{-2} is the coefficient of σ_τ² in the summed cell variances.
Lagrange gives σ_τ² = (Σ_{τ'} √(w_τ' v_τ')) · √(w_τ/v_τ) / (2ρ). v_τ is computed over attribute *indices*
(the reference code's column-name bug, digest §1.5, does not arise).

The query vector (:class:`MarginalQueries`): the integer marginals μ_τ of the measured cliques, concatenated
(each row-major), with per-cell noise scale σ_τ; under add/remove-one-record every μ_τ moves in one cell by 1,
so the vector's Δ₂ is √|S| (Δ₁ = |S|), and independent Gaussians of scale σ_τ cost Σ_τ 1/(2σ_τ²) (the
conservative charge; the residual charge Σ_τ p_τ/(2σ_τ²) holds for continuous noise, Prop. 6). Residuals
z_τ = D_τ(μ_τ + ξ_τ) are computed from the noisy marginals: post-processing.

Randomness: a ``numpy.random.Generator`` for simulation; ``rng=None`` draws every random bit from the OS
CSPRNG (discrete noise and the exponential mechanism only; continuous noise is for simulation).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpviz.core.accounting import positive
from dpviz.core.exponential import exponential_mechanism as em_epsilon
from dpviz.core.noise import Family, Noise
from dpviz.core.protocols import LinearMeasurement, measure
from dpviz.core.samplers import MAX_SCALE
from dpviz.errors import InputError
from dpviz.marginals.estimators import MarginalMeasurement, ResidualMeasurement, check_workload
from dpviz.marginals.model import Clique, Dataset, Domain, supersets_index
from dpviz.marginals.residuals import check_clique, marginal_to_residual

__all__ = [
    "COSTS",
    "MarginalQueries",
    "exponential_mechanism",
    "marginal_rho",
    "measure_marginal",
    "measure_residuals",
    "residual_p",
    "residual_rho",
    "rp_sigmas",
]

COSTS = ("residual", "marginal")


def _cost(cost: str) -> str:
    if cost not in COSTS:
        raise InputError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    return cost


def residual_p(domain: Domain, tau: Clique) -> float:
    """p_τ = ∏_{k∈τ} (n_k − 1)/n_k (1 for τ = ∅)."""
    return math.prod((domain.sizes[k] - 1) / domain.sizes[k] for k in tau)


def _weight(domain: Domain, tau: Clique, cost: str) -> float:
    return residual_p(domain, tau) if cost == "residual" else 1.0


def rp_sigmas(domain: Domain, workload: Iterable[Sequence[int]], rho: float, *,
              cost: str = "residual") -> dict[Clique, float]:
    """σ_τ² (variances, not standard deviations) for every τ ∈ 𝒲↓, minimising the sum of workload cell
    variances at total zCDP cost ρ (module docstring); Σ_τ w_τ/(2σ_τ²) = ρ up to float rounding.

    Loops over 𝒲↓ and the workload cliques (no cell-level work).
    """
    rho = positive("rho", rho)
    cost = _cost(cost)
    W = check_workload(domain, workload)
    sup = supersets_index(W)
    v: dict[Clique, float] = {}
    for t, gammas in sup.items():
        n_t = domain.size(t)
        v[t] = residual_p(domain, t) * sum(n_t / math.prod(domain.sizes[k] for k in g if k not in t) for g in gammas)
    w = {t: _weight(domain, t, cost) for t in v}
    total = math.fsum(math.sqrt(w[t] * v[t]) for t in v)
    return {t: total * math.sqrt(w[t] / v[t]) / (2.0 * rho) for t in v}


def residual_rho(domain: Domain, sigma2: dict[Clique, float], cost: str = "residual") -> float:
    """zCDP spent by residual measurements with these σ_τ²: Σ_τ w_τ/(2σ_τ²), w_τ = p_τ (residual) or 1."""
    cost = _cost(cost)
    terms = []
    for t, s2 in sigma2.items():
        t = check_clique(domain, t, "τ")
        terms.append(_weight(domain, t, cost) / (2.0 * positive(f"σ_τ² for τ = {domain.names(t)}", s2)))
    return math.fsum(terms)


def marginal_rho(sigma: float) -> float:
    """zCDP cost 1/(2σ²) of one isotropic marginal measurement (L2 sensitivity 1)."""
    return 1.0 / (2.0 * positive("sigma", sigma) ** 2)


@dataclass(frozen=True, eq=False)
class MarginalQueries:
    """A :class:`dpviz.core.protocols.Strategy`: the marginals μ_γ of ``cliques`` concatenated (each row-major in
    attribute order), noise of standard deviation ``sigmas[i]`` on every cell of marginal i.

    Under add/remove-one-record each marginal moves in exactly one cell by 1: Δ₂ = √|cliques|, Δ₁ = |cliques|
    for the whole vector; the zCDP cost of independent Gaussians (continuous or discrete, CKS 2020) is
    Σ_i 1/(2σ_i²) (:func:`marginal_rho`)."""

    domain: Domain
    cliques: tuple[Clique, ...]
    sigmas: tuple[float, ...]
    name: str = "marginals"

    def sensitivity(self, family: Family) -> float:
        n = len(self.cliques)
        return float(n) if family == "laplace" else math.sqrt(n)

    @property
    def sizes(self) -> np.ndarray:
        """n_γ of every marginal (int64)."""
        return np.array([self.domain.size(g) for g in self.cliques], dtype=np.int64)

    def scales(self, noise: Noise) -> np.ndarray:
        """σ_γ repeated over the n_γ cells of each marginal; InputError above the discrete sampler's limit."""
        sig = np.asarray(self.sigmas, dtype=float)
        if noise.discrete and sig.size and float(sig.max()) > MAX_SCALE:
            raise InputError(f"σ = {float(sig.max()):.3g} exceeds the discrete sampler's limit {MAX_SCALE:.3g}; "
                             "raise ρ")
        return np.repeat(sig, self.sizes)

    def answer(self, data: Dataset) -> np.ndarray:
        """μ_γ of every clique, concatenated (float64 counts: whole numbers)."""
        parts = [data.marginal(g) for g in self.cliques]
        return np.concatenate(parts) if parts else np.zeros(0)

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """A measured vector back into one array per marginal (float64)."""
        ends = np.cumsum(self.sizes)[:-1]
        return np.split(np.asarray(values, dtype=float), ends)


def _check_data(data: Dataset, domain: Domain) -> None:
    if not isinstance(data, Dataset):
        raise InputError(f"expected a Dataset, got {type(data).__name__}")
    if data.domain != domain:
        raise InputError("the dataset's domain differs from the domain passed in "
                         f"({data.domain.as_dict()} vs {domain.as_dict()})")


def _check_rng(rng: object, discrete: bool) -> None:
    if rng is None:
        if not discrete:
            raise InputError("continuous Gaussian noise is for simulation only: pass a numpy Generator, or use "
                             "discrete=True (OS CSPRNG) for a release")
        return
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")


def _measure(data: Dataset, queries: MarginalQueries, rho: float, rng: np.random.Generator | None,
             discrete: bool) -> tuple[list[np.ndarray], list[float], LinearMeasurement]:
    """The noisy marginals of ``queries`` (one core measurement at the total cost ``rho``) and the per-cell noise
    variance of each: σ² itself for continuous noise, the exact discrete-Gaussian variance for discrete noise."""
    noise = Noise.gaussian(rho, discrete=discrete)
    m = measure(queries, data, noise, rng)
    if discrete:
        var = [float(noise.variance_at(s)) for s in queries.sigmas]
    else:
        var = [s * s for s in queries.sigmas]
    return queries.split(m.values), var, m


def measure_residuals(data: Dataset, domain: Domain, workload: Iterable[Sequence[int]], rho: float,
                      rng: np.random.Generator | None, *, discrete: bool = False) -> list[ResidualMeasurement]:
    """ResidualPlanner: z_τ = D_τ(μ_τ + σ_τ ξ_τ) for every τ ∈ S = 𝒲↓, total cost ρ.

    * continuous (``discrete=False``, simulation, ``rng`` a Generator): ξ_τ ~ N(0, I), σ_τ² from
      ``rp_sigmas(cost="residual")``;
    * discrete (release): ξ_τ ~ N_ℤ(0, σ_τ²) (``rng=None``: OS CSPRNG) added to the integer marginal,
      σ_τ² from ``rp_sigmas(cost="marginal")``.

    The noisy marginals μ_τ + σ_τ ξ_τ are one :func:`dpviz.core.protocols.measure` of :class:`MarginalQueries`
    over 𝒲↓ (smallest τ first); differencing them is post-processing. Each record's ``sigma2`` is the variance
    of the noise actually added per marginal cell (for discrete noise the exact discrete-Gaussian variance, ≤ σ_τ²
    and equal to it within 3e-7 relative for σ_τ ≥ 1), so Cov z_τ = sigma2 · D_τD_τᵀ exactly.
    """
    _check_data(data, domain)
    _check_rng(rng, discrete)
    sig2 = rp_sigmas(domain, workload, rho, cost="marginal" if discrete else "residual")
    taus = tuple(sig2)
    queries = MarginalQueries(domain, taus, tuple(math.sqrt(sig2[t]) for t in taus), "ResidualPlanner marginals")
    noisy, var = _measure(data, queries, rho, rng, discrete)[:2]
    return [ResidualMeasurement(t, marginal_to_residual(domain, t, t, y), sig2[t] if not discrete else v)
            for t, y, v in zip(taus, noisy, var, strict=True)]


def measure_marginal(data: Dataset, clique: Sequence[int], sigma: float, rng: np.random.Generator | None, *,
                     discrete: bool = False) -> MarginalMeasurement:
    """y_γ = μ_γ + σ ξ, isotropic; zCDP cost 1/(2σ²) (:func:`marginal_rho`), exact for discrete ξ too since
    μ_γ is an integer vector with L2 sensitivity 1. ``sigma`` of the result is the noise standard deviation
    actually added (discrete: √ of the exact discrete-Gaussian variance). One :func:`dpviz.core.protocols.measure`
    of :class:`MarginalQueries` ``(γ,)``."""
    if not isinstance(data, Dataset):
        raise InputError(f"expected a Dataset, got {type(data).__name__}")
    g = check_clique(data.domain, clique, "marginal clique")
    sigma = positive("sigma", sigma)
    _check_rng(rng, discrete)
    queries = MarginalQueries(data.domain, (g,), (sigma,), "marginal")
    noisy, var, _ = _measure(data, queries, marginal_rho(sigma), rng, discrete)
    return MarginalMeasurement(g, noisy[0], math.sqrt(var[0]) if discrete else sigma)


def exponential_mechanism(scores: np.ndarray | Sequence[float], rho: float, rng: np.random.Generator | None,
                          sensitivity: float = 1.0) -> int:
    """Index r drawn with Pr[r] ∝ exp(ε/(2Δ) · score_r), ε = √(8ρ): an ε-DP mechanism, hence ε²/8 = ρ-zCDP
    (Cesar & Rogers 2021; Bun & Steinke; paper App. B Prop. 7). Higher score = more likely.

    ``sensitivity`` Δ bounds how much any score changes between neighbours (Δ = 1 for the L1 marginal
    score of Scalable MWEM). ``rng=None`` takes the uniform from the OS CSPRNG.

    The ε-DP sampler itself is :func:`dpviz.core.exponential.exponential_mechanism` (Gumbel-max; its
    docstring states the floating-point caveat); this is its ρ-zCDP form.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise InputError(f"exponential mechanism: scores must be a non-empty 1-D array, got shape {s.shape}")
    if not np.isfinite(s).all():
        raise InputError("exponential mechanism: scores must be finite")
    rho = positive("rho", rho)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
    return em_epsilon(s, math.sqrt(8.0 * rho), sensitivity, rng)
