"""Scalable MWEM (Mullins, Fuentes, Xiao, Kifer, Musco, Sheldon, "Efficient and Private Marginal Reconstruction
with Local Non-Negativity", NeurIPS 2024, App. G, Algorithm 7).

An MWEM-style, data-dependent mechanism that never builds the data vector: instead of a multiplicative-weights
model it keeps the measured marginals and reconstructs every workload marginal by EMP (efficient marginal
pseudoinversion, Alg. 4; :func:`dpviz.marginals.estimators.emp`) after every round.

Algorithm (ρ-zCDP budget ρ, initialisation fraction α — not the residual α —, T rounds):

1. measure the total query: y₀ = N + N(0, σ₀²) with σ₀² = 1/(2αρ)  (ℓ2 sensitivity 1: αρ-zCDP);
2. μ̂ = EMP(𝒲, {∅}, y): every marginal uniform at N̂/n_γ;
3. for t = 1..T:

   * select γ_t ∈ pool ⊆ 𝒲 with the exponential mechanism at zCDP budget ρ_sel = (1−α)ρ/(2T):
     Pr[γ] ∝ exp(ε_EM/(2Δ₁)·score(γ)), ε_EM = √(8ρ_sel), score(γ) = ‖M_γ p − μ̂_γ‖₁ against the **true**
     marginal M_γ p (Δ₁ = 1: adding or removing one record moves one cell of M_γ p by 1, and μ̂ is fixed
     by earlier noisy measurements). The authors' code scores against a noisy copy of the marginals
     instead; that quirk is not copied (digest §4.2);
   * measure y_t = M_{γ_t} p + N(0, σ²I) with σ² = T/((1−α)ρ)  (ℓ2 sensitivity 1: (1−α)ρ/(2T)-zCDP);
   * by default γ_t leaves the pool (no repeats, as in the authors' code; ``repeats=True`` keeps it);
   * μ̂ = EMP(𝒲, 𝒬, y) over every measurement so far.

Accounting (Thm. 7, adaptive composition of zCDP):

    αρ + T·((1−α)ρ/(2T) + (1−α)ρ/(2T)) = ρ.

:func:`mwem_budget` lists every one of these 2T + 1 sub-budgets (:class:`BudgetItem`); they add up to ρ
(tested to 1e-12), and the noise scales are computed from the items, σ = (2ρ_item)^{-1/2}.

Two modes:

* simulation (``rng`` a seeded ``numpy.random.Generator``): continuous Gaussian measurements, selection from
  the same Generator — reproducible, **not a private release**;
* release (``rng=None``): discrete Gaussian measurements on the integer marginals (Canonne, Kamath & Steinke,
  NeurIPS 2020: N_ℤ(0, σ²) on an integer query of ℓ2 sensitivity 1 is exactly 1/(2σ²)-zCDP, so the sub-budgets
  above hold unchanged) and exponential-mechanism selection from the OS CSPRNG.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dpviz.core.accounting import positive
from dpviz.errors import InputError
from dpviz.marginals.model import Clique, Dataset

__all__ = [
    "DEFAULT_INIT_FRACTION",
    "DEFAULT_ROUNDS",
    "BudgetItem",
    "MWEMBudget",
    "MWEMResult",
    "MAX_ROUNDS",
    "MAX_MWEM_SECONDS",
    "MAX_MWEM_BYTES",
    "check_mwem_work",
    "mwem_estimate",
    "check_rounds",
    "default_rounds",
    "mwem_budget",
    "scalable_mwem",
    "scores",
    "select",
]

DEFAULT_ROUNDS = 30
"""Rounds T of the paper's Scalable MWEM experiment (§5.2)."""
DEFAULT_INIT_FRACTION = 0.1
"""Share α of ρ spent on the total query (the authors' code, ``gamma = 0.1``; the paper gives no value)."""


@dataclass(frozen=True)
class BudgetItem:
    """One sub-budget of the composition: what it pays for, its ρ, and (for a measurement) its σ."""

    label: str
    kind: Literal["measure", "select"]
    rho: float
    round: int  # 0 for the initial total query
    sigma: float | None = None

    def as_dict(self) -> dict:
        return {"label": self.label, "kind": self.kind, "round": self.round, "rho": self.rho, "sigma": self.sigma}


@dataclass(frozen=True)
class MWEMBudget:
    """The accountant of one Scalable MWEM run: every sub-budget, in the order it is spent."""

    rho: float
    rounds: int
    init_fraction: float
    items: tuple[BudgetItem, ...]

    @property
    def total(self) -> float:
        """Σ of the sub-budgets (= ρ up to rounding, Thm. 7)."""
        return math.fsum(i.rho for i in self.items)

    @property
    def rho_init(self) -> float:
        return self.items[0].rho

    @property
    def rho_select(self) -> float:
        """zCDP budget of each exponential-mechanism selection, (1−α)ρ/(2T)."""
        return self.items[1].rho if self.rounds else 0.0

    @property
    def rho_measure(self) -> float:
        """zCDP budget of each marginal measurement, (1−α)ρ/(2T)."""
        return self.items[2].rho if self.rounds else 0.0

    @property
    def sigma0(self) -> float:
        """σ₀ = (2αρ)^{-1/2} of the total query."""
        return float(self.items[0].sigma)

    @property
    def sigma(self) -> float:
        """σ = (T/((1−α)ρ))^{1/2} of every round's marginal measurement."""
        return float(self.items[2].sigma) if self.rounds else math.nan

    @property
    def epsilon_em(self) -> float:
        """ε of each selection: the exponential mechanism is ε²/8-zCDP, so ε = √(8ρ_sel)."""
        return math.sqrt(8.0 * self.rho_select)

    def as_list(self) -> list[dict]:
        return [i.as_dict() for i in self.items]

    def describe(self) -> str:
        a = self.init_fraction
        return (f"ρ = {self.rho:.6g} split as αρ + T·((1−α)ρ/(2T) + (1−α)ρ/(2T)) with α = {a:g}, T = {self.rounds}: "
                f"total query {self.rho_init:.6g} (σ₀ = {self.sigma0:.6g}); per round, selection "
                f"{self.rho_select:.6g} (ε_EM = {self.epsilon_em:.6g}) and measurement {self.rho_measure:.6g} "
                f"(σ = {self.sigma:.6g}); sum {self.total:.6g}")


def check_rounds(rounds: object) -> int:
    """T as an int in 1..:data:`MAX_ROUNDS` (InputError naming ``--rounds`` otherwise)."""
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or int(rounds) < 1:
        raise InputError(f"--rounds: expected a positive integer, got {rounds!r}")
    if int(rounds) > MAX_ROUNDS:
        raise InputError(f"--rounds: {int(rounds):,} rounds, above the limit of {MAX_ROUNDS:,} Scalable MWEM rounds")
    return int(rounds)


def _check_fraction(init_fraction: object) -> float:
    a = positive("init_fraction", init_fraction)
    if not a < 1.0:
        raise InputError(f"init_fraction: expected a share strictly between 0 and 1, got {init_fraction!r}")
    return a


def mwem_budget(rho: float, rounds: int = DEFAULT_ROUNDS, init_fraction: float = DEFAULT_INIT_FRACTION) -> MWEMBudget:
    """Every sub-budget of Scalable MWEM (Alg. 7 / Thm. 7): αρ for the total, then per round
    (1−α)ρ/(2T) for the selection and (1−α)ρ/(2T) for the measurement.

    >>> b = mwem_budget(1.0, 4, 0.1)
    >>> len(b.items), round(b.total, 12), round(b.sigma0 ** 2, 12), round(b.sigma ** 2, 12)
    (9, 1.0, 5.0, 4.444444444444)
    """
    rho = positive("rho", rho)
    rounds = check_rounds(rounds)
    a = _check_fraction(init_fraction)
    rho0 = a * rho
    rho_half = (1.0 - a) * rho / (2.0 * rounds)
    items = [BudgetItem("total query (Gaussian, ℓ2 sensitivity 1)", "measure", rho0, 0, 1.0 / math.sqrt(2.0 * rho0))]
    sigma = 1.0 / math.sqrt(2.0 * rho_half)
    for t in range(1, rounds + 1):
        items.append(BudgetItem(f"round {t}: exponential-mechanism selection (ℓ1 score, sensitivity 1)", "select",
                                rho_half, t))
        items.append(BudgetItem(f"round {t}: marginal measurement (Gaussian, ℓ2 sensitivity 1)", "measure",
                                rho_half, t, sigma))
    return MWEMBudget(rho, rounds, a, tuple(items))


def scores(truth: dict[Clique, np.ndarray], estimate: dict[Clique, np.ndarray], pool: Sequence[Clique]) -> np.ndarray:
    """score(γ) = ‖M_γ p − μ̂_γ‖₁ for every γ in ``pool`` (true marginal minus the current reconstruction)."""
    return np.array([float(np.abs(np.asarray(truth[g], float) - np.asarray(estimate[g], float)).sum())
                     for g in pool])


def select(score: np.ndarray, rho: float, rng: np.random.Generator | None) -> int:
    """Index chosen by the exponential mechanism at zCDP budget ``rho`` (sensitivity 1):
    Pr[i] ∝ exp(√(8ρ)/2 · score_i). ``rng=None`` draws from the OS CSPRNG (release)."""
    from dpviz.marginals.strategy import exponential_mechanism

    return int(exponential_mechanism(np.asarray(score, dtype=float), rho, rng, sensitivity=1.0))


@dataclass
class MWEMResult:
    """What Scalable MWEM measured and reconstructed.

    ``measurements`` (``MarginalMeasurement``: the total first, then one per round) and ``selected`` are the
    private output of the mechanism; ``reconstruction`` is the EMP of all of them. ``score_history`` holds
    the true-data scores of every round: simulation diagnostics only (empty in a release)."""

    budget: MWEMBudget
    measurements: list
    selected: list[Clique]
    reconstruction: object
    discrete: bool
    repeats: bool
    score_history: list[np.ndarray] = field(default_factory=list)


def _marginals_dict(rec, workload: Sequence[Clique]) -> dict[Clique, np.ndarray]:
    m = rec.marginals
    if isinstance(m, dict):
        return m
    return dict(zip(workload, m, strict=True))


MAX_ROUNDS = 100_000
"""Most Scalable MWEM rounds T (2T + 1 sub-budgets are listed in the metadata)."""
MAX_MWEM_SECONDS = 300.0
"""Cap on the estimated run time of Scalable MWEM (:func:`mwem_estimate`), checked before any work."""
MAX_MWEM_BYTES = 2_000_000_000
"""Cap on the estimated memory of the kept measurements (T marginals of up to max n_γ cells, 8 bytes a cell)."""
_SECONDS_PER_RESIDUAL = 2.5e-4
"""Measured cost of mapping one residual into one workload marginal (Python-level, small tables)."""
_SECONDS_PER_CELL = 2e-8


def mwem_estimate(domain, workload: Sequence[Clique], rounds: int) -> tuple[float, float]:
    """(seconds, bytes) estimated for ``rounds`` rounds: every round scores the pool and rebuilds every
    workload marginal from its 2^|γ| residuals (linear in T: the EMP is kept incrementally,
    :class:`_RunningEMP`); every measured marginal is kept (at most the largest n_γ cells a round)."""
    per_round = sum((2 ** len(g)) * (_SECONDS_PER_RESIDUAL + domain.size(g) * _SECONDS_PER_CELL)
                    for g in workload)
    largest = max(domain.size(g) for g in workload)
    return float(rounds) * per_round, 8.0 * float(rounds) * largest


def check_mwem_work(domain, workload: Sequence[Clique], rounds: int) -> None:
    """InputError before any work when the run's estimated time or memory (:func:`mwem_estimate`) is above
    :data:`MAX_MWEM_SECONDS` / :data:`MAX_MWEM_BYTES` (or the memory this machine has); says how many fit."""
    from dpviz.core.resources import available_memory, format_bytes

    seconds, size = mwem_estimate(domain, workload, rounds)
    one_s, one_b = mwem_estimate(domain, workload, 1)
    avail = available_memory()
    cap = MAX_MWEM_BYTES if avail is None else min(MAX_MWEM_BYTES, avail)
    fit = max(1, int(min(MAX_MWEM_SECONDS / one_s, cap / one_b)))
    what = f"--rounds: {rounds:,} Scalable MWEM rounds over {len(workload):,} marginal(s)"
    if size > cap:
        raise InputError(f"{what} would keep about {format_bytes(size)} of measurements (estimate), above the limit "
                         f"of {format_bytes(cap)}; at most {fit:,} rounds fit")
    if seconds > MAX_MWEM_SECONDS:
        raise InputError(f"{what} would take about {seconds:,.0f} s (estimate), above the limit of "
                         f"{MAX_MWEM_SECONDS:g} s; at most {fit:,} rounds fit")


class _RunningEMP:
    """EMP (Alg. 4) over a growing list of marginal measurements, one measurement at a time: every residual's
    inverse-variance sums Σ z/σ², Σ 1/σ² are kept, so a round costs one decomposition and one reconstruction
    (not a re-decomposition of every earlier measurement). Equals ``emp(domain, workload, all so far)``."""

    def __init__(self, domain, workload: Sequence[Clique]) -> None:
        self.domain, self.workload = domain, list(workload)
        self.weighted: dict[Clique, np.ndarray] = {}
        self.weight: dict[Clique, float] = {}

    def add(self, y):
        from dpviz.marginals.estimators import Reconstruction, ResidualMeasurement, decompose, grem_mle

        for r in decompose(self.domain, [y]):
            w = 1.0 / r.sigma2
            self.weighted[r.tau] = self.weighted.get(r.tau, 0.0) + w * np.asarray(r.values, float)
            self.weight[r.tau] = self.weight.get(r.tau, 0.0) + w
        combined = [ResidualMeasurement(t, self.weighted[t] / w, 1.0 / w) for t, w in self.weight.items()]
        rec = grem_mle(self.domain, self.workload, combined)
        return Reconstruction(rec.marginals, rec.variance, rec.alpha, "emp", rec.sigma2)


def default_rounds(n_marginals: int, repeats: bool = False) -> int:
    """T when none is given: the paper's 30, capped at the workload size when marginals are not repeated."""
    return DEFAULT_ROUNDS if repeats else max(1, min(DEFAULT_ROUNDS, int(n_marginals)))


def scalable_mwem(data: Dataset, workload: Sequence[Clique], rho: float, *, rounds: int | None = None,
                  init_fraction: float = DEFAULT_INIT_FRACTION, repeats: bool = False,
                  rng: np.random.Generator | None = None, discrete: bool | None = None,
                  callback: Callable[[int, int, Clique], None] | None = None,
                  keep_scores: bool | None = None) -> MWEMResult:
    """Run Scalable MWEM (Alg. 7) at ρ-zCDP on ``data`` for the marginal ``workload``.

    ``rng``: a seeded ``numpy.random.Generator`` for a simulation (continuous noise unless ``discrete=True``),
    or ``None`` for a release (discrete Gaussian noise and selection from the OS CSPRNG). ``repeats=False``
    (default, as in the authors' code) removes a selected marginal from the candidate pool; then ``rounds``
    may not exceed the number of workload marginals; ``rounds=None`` is :func:`default_rounds` (30, capped at
    the number of workload marginals without repeats). ``callback(t, T, γ_t)`` is called after every round
    (γ_t is a private output; no score or other truth-derived number is passed).
    """
    from dpviz.marginals.strategy import measure_marginal

    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError("rng: expected None (OS CSPRNG, a release) or a numpy Generator (simulation)")
    discrete = (rng is None) if discrete is None else bool(discrete)
    if not discrete and rng is None:
        raise InputError("continuous noise is for simulation: pass a seeded numpy Generator "
                         "(a release uses discrete noise from the OS CSPRNG)")
    keep_scores = (rng is not None) if keep_scores is None else bool(keep_scores)
    domain = data.domain
    workload = list(dict.fromkeys(tuple(sorted(g)) for g in workload))
    if not workload:
        raise InputError("workload: expected at least one marginal")
    if rounds is None:
        rounds = default_rounds(len(workload), repeats)
    rounds = check_rounds(rounds)
    if not repeats and rounds > len(workload):
        raise InputError(f"--rounds: {rounds} rounds without repeats need at least {rounds} workload "
                         f"marginals, the workload has {len(workload)}; lower --rounds or pass --repeats")
    check_mwem_work(domain, workload, rounds)  # before the 2T + 1 sub-budgets are listed
    budget = mwem_budget(rho, rounds, init_fraction)
    truth = data.marginals(workload)
    measurements = [measure_marginal(data, (), budget.sigma0, rng, discrete=discrete)]
    running = _RunningEMP(domain, workload)
    rec = running.add(measurements[0])
    pool = list(workload)
    selected: list[Clique] = []
    history: list[np.ndarray] = []
    for t in range(1, budget.rounds + 1):
        s = scores(truth, _marginals_dict(rec, workload), pool)
        if keep_scores:
            history.append(s)
        j = select(s, budget.rho_select, rng)
        gamma = pool[j]
        if not repeats:
            pool.pop(j)
        measurements.append(measure_marginal(data, gamma, budget.sigma, rng, discrete=discrete))
        rec = running.add(measurements[-1])
        selected.append(gamma)
        if callback is not None:
            callback(t, budget.rounds, gamma)
    return MWEMResult(budget, measurements, selected, rec, discrete, bool(repeats), history)
