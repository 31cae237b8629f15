"""Marginals end to end: the one place the page and the CLI call (simulate, release, reconstruct).

Mechanisms (the measurement step; both spend ρ-zCDP, ρ from (ε, δ) by the Canonne–Kamath–Steinke conversion
the paper uses, :func:`dpviz.core.accounting.zcdp_rho`, or ρ given directly):

* ``"rp"`` — ResidualPlanner (Xiao et al., NeurIPS 2023): every residual τ of the workload's downward closure
  𝒲↓ measured once, σ_τ minimising the summed per-cell variance of the workload
  (:func:`dpviz.marginals.measure.rp_sigmas`);
* ``"mwem"`` — Scalable MWEM (Mullins et al., NeurIPS 2024, App. G; :mod:`dpviz.marginals.mwem`): the total,
  then T marginals selected adaptively by the exponential mechanism.

Reconstruction methods (post-processing, no privacy cost; Mullins, Fuentes, Xiao, Kifer, Musco, Sheldon,
"Efficient and Private Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024):

* ``"mle"`` — GReM-MLE on residual measurements, EMP on marginal measurements (= the weighted least-squares /
  pseudoinverse reconstruction); it has an analytic per-cell variance that needs no truth;
* ``"lnn"`` — GReM-LNN: every workload cell ≥ 0 (projected dual ascent, :mod:`dpviz.marginals.lnn`);
* ``"trunc"`` / ``"trunc-rescale"`` — the paper's baselines on top of the MLE (simulation only).

Modes (:mod:`dpviz.core.modes`):

* :func:`simulate` — one seeded draw of *continuous* Gaussian noise, every method on the same measurements,
  errors against the true marginals. Labelled "simulation — not a private release".
* :func:`release` — *discrete* Gaussian noise from the OS CSPRNG (``rng=None``), one method, no truth in the
  result; :func:`release_json` is the OUT.json, :func:`release_meta` the ``.meta.json``.
* :func:`reconstruct` — post-processing of given measurements (a MEAS.json dict); no data involved.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpviz.core.accounting import positive, zcdp_rho
from dpviz.core.modes import SIMULATION_NOTICE, check_seed, fresh_seed, release_metadata
from dpviz.core.noise import Noise
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE, StructureSource
from dpviz.errors import InputError
from dpviz.marginals.domain import Clique, Dataset, Domain, all_kway, downward_closure
from dpviz.marginals.mwem import DEFAULT_INIT_FRACTION, scalable_mwem

if TYPE_CHECKING:
    from dpviz.marginals.declared import DomainDeclaration

__all__ = [
    "LABELS",
    "MECHANISMS",
    "METHODS",
    "NORMS",
    "RELEASE_METHODS",
    "BudgetLine",
    "MarginalsRelease",
    "MethodResult",
    "Simulation",
    "budget_rho",
    "lnn_defaults",
    "noise_explanation",
    "reconstruct",
    "release",
    "release_json",
    "release_meta",
    "simulate",
    "workload_cliques",
]

CAP = "marginals"
MECHANISMS = ("rp", "mwem")
METHODS = ("mle", "lnn", "trunc", "trunc-rescale")
RELEASE_METHODS = ("mle", "lnn")
NORMS = ("cells", "N", "none")
LABELS = {
    "rp": "ResidualPlanner (every residual of the workload's downward closure, measured once)",
    "mwem": "Scalable MWEM (the total, then T marginals picked by the exponential mechanism)",
    "mle": "GReM-MLE / EMP (weighted least squares, unbiased where every residual is measured)",
    "lnn": "GReM-LNN (local non-negativity: every workload cell ≥ 0)",
    "trunc": "Trunc (MLE, negative cells set to 0)",
    "trunc-rescale": "Trunc+Rescale (MLE truncated, rescaled to its own total)",
}
Progress = Callable[..., None]
"""``progress(stage, done, total)``: called per MWEM round and per GReM-LNN check (page progress bars);
GReM-LNN checks also pass ``dual_objective, negative_mass`` (post-processing values, for a live chart)."""


# --------------------------------------------------------------------------------------------- inputs


def budget_rho(epsilon: float | None = None, delta: float | None = None, rho: float | None = None) -> float:
    """ρ-zCDP of the run: ``rho`` as given, or the largest ρ whose guarantee implies (ε, δ)-DP by the CKS
    conversion (the paper's Alg. 7 line 2; valid for the discrete Gaussian and the exponential mechanism)."""
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise InputError("--rho: give either --rho or --epsilon with --delta, not both")
        return positive("rho", rho)
    if epsilon is None or delta is None:
        raise InputError("budget: give --epsilon together with --delta, or --rho")
    return zcdp_rho(epsilon, delta)


def _budget_text(epsilon, delta, rho_given, rho) -> str:
    if rho_given is not None:
        return f"ρ = {rho:.6g} (zCDP)"
    return f"ρ = {rho:.6g} (zCDP; from (ε, δ) = ({epsilon:g}, {delta:.3g}) by the Canonne–Kamath–Steinke conversion)"


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


def _mechanism(name: str) -> str:
    if name not in MECHANISMS:
        raise InputError(f"--mechanism: expected one of {', '.join(MECHANISMS)}, got {name!r}")
    return name


def lnn_defaults(mechanism: str) -> dict:
    """GReM-LNN settings of the paper's experiments (App. H): ResidualPlanner T = 4000, s = 0.1, λ0 = −1;
    Scalable MWEM T = 1000, s = 0.02, λ0 = −1 and the regulariser of the unmeasured residuals at the authors'
    code's strength (η = 1/40 in Eq. 9's notation; :data:`dpviz.marginals.lnn.ETA` says why)."""
    from dpviz.marginals.lnn import ETA

    if mechanism == "mwem":
        return {"rounds": 1000, "step": 0.02, "lam0": -1.0, "eta": ETA}
    return {"rounds": 4000, "step": 0.1, "lam0": -1.0}


def _lnn_options(mechanism: str, options: Mapping | None) -> dict:
    opts = lnn_defaults(mechanism)
    if options:
        opts.update({k: v for k, v in dict(options).items() if v is not None})
    return opts


def _lnn_progress(progress: Progress | None, rounds: int):
    if progress is None:
        return None

    def cb(iteration: int, dual: float, neg: float) -> None:
        progress("GReM-LNN", int(iteration), int(rounds), float(dual), float(neg))

    return cb


def _names(domain: Domain, g: Clique) -> list[str]:
    return list(domain.names(g))


def _label(domain: Domain, g: Clique) -> str:
    return "×".join(domain.names(g)) if g else "(total)"


# --------------------------------------------------------------------------------------------- simulate


@dataclass
class MethodResult:
    """One reconstruction method on the simulated measurements, with its errors against the truth."""

    method: str
    marginals: dict[Clique, np.ndarray]
    l1: float
    l2: float
    negative_cells: int
    negative_mass: float
    seconds: float
    variance: dict[Clique, float] | None = None  # analytic per-cell variance (MLE/EMP only)
    info: dict = field(default_factory=dict)

    @property
    def mean_variance(self) -> float:
        """Mean over the workload cells of the analytic per-cell variance (NaN if none)."""
        if not self.variance:
            return math.nan
        sizes = {g: self.marginals[g].size for g in self.variance}
        return sum(v * sizes[g] for g, v in self.variance.items()) / sum(sizes.values())


@dataclass
class Simulation:
    """A seeded simulation: one draw of continuous noise, every method on it, errors against the truth.

    Not a private release (``notice``): it holds the true marginals and truth-derived errors."""

    domain: Domain
    workload: list[Clique]
    mechanism: str
    rho: float
    budget_text: str
    seed: int
    norm: str
    truth: dict[Clique, np.ndarray]
    results: dict[str, MethodResult]
    measure_seconds: float
    budget: list[dict]
    selected: list[Clique] | None = None
    N: int = 0
    detail: str = ""
    notice: str = SIMULATION_NOTICE

    def table(self) -> pd.DataFrame:
        """One row per method: average ℓ1/ℓ2 workload error, negatives, seconds, analytic per-cell variance."""
        rows = []
        for name, r in self.results.items():
            rows.append({"method": name, "l1": r.l1, "l2": r.l2, "negative_cells": r.negative_cells,
                         "negative_mass": r.negative_mass, "seconds": r.seconds,
                         "analytic_variance": r.mean_variance})
        return pd.DataFrame(rows)


def _methods(methods: str | Sequence[str]) -> list[str]:
    if isinstance(methods, str):
        methods = list(METHODS) if methods == "all" else [methods]
    out = list(dict.fromkeys(methods))
    bad = [m for m in out if m not in METHODS]
    if bad or not out:
        raise InputError(f"--method: expected one of {', '.join(METHODS)} or all, got {', '.join(map(str, bad)) or 'none'}")
    return out


def _check_data(data: object) -> Dataset:
    if not isinstance(data, Dataset):
        raise InputError(f"expected a marginals Dataset, got {type(data).__name__}")
    return data


def _measure(data: Dataset, workload: list[Clique], rho: float, mechanism: str, rng, *, discrete: bool,
             rounds: int, init_fraction: float, repeats: bool, progress: Progress | None):
    """(base reconstruction, residual measurements for LNN, budget lines, selected cliques or None)."""
    from dpviz.marginals.measure import measure_residuals, rp_sigmas
    from dpviz.marginals.reconstruct import decompose, grem_mle

    domain = data.domain
    if mechanism == "rp":
        cost = "marginal" if discrete else "residual"
        res = measure_residuals(data, domain, workload, rho, rng, discrete=discrete)
        sig2 = rp_sigmas(domain, workload, rho, cost=cost)
        lines = [_rp_line(domain, t, s2, cost) for t, s2 in sig2.items()]
        return (lambda: grem_mle(domain, workload, res)), res, lines, None
    from dpviz.marginals.reconstruct import emp

    cb = None if progress is None else (lambda t, T, g: progress("Scalable MWEM", t, T))
    run = scalable_mwem(data, workload, rho, rounds=rounds, init_fraction=init_fraction, repeats=repeats, rng=rng,
                        discrete=discrete, callback=cb)
    lines = run.budget.as_list()
    return ((lambda: emp(domain, workload, run.measurements)), (lambda: decompose(domain, run.measurements)),
            lines, run)


def _detail(domain: Domain, lines: list[dict], run) -> str:
    """One line on how ρ was spent (no data in it)."""
    if run is not None:
        return "Scalable MWEM: " + run.budget.describe()
    sig = [line["sigma"] for line in lines]
    return (f"ResidualPlanner: {len(lines)} residuals (every subset of a workload marginal, ∅ included), "
            f"σ_τ from {min(sig):.4g} to {max(sig):.4g}; Σ_τ ρ_τ = {math.fsum(x['rho'] for x in lines):.6g}")


def _rp_line(domain: Domain, t: Clique, sigma2: float, cost: str) -> dict:
    from dpviz.marginals.measure import residual_p

    w = residual_p(domain, t) if cost == "residual" else 1.0
    return {"label": f"residual τ = {_label(domain, t)}", "kind": "measure", "round": 0,
            "rho": w / (2.0 * sigma2), "sigma": math.sqrt(sigma2)}


def simulate(data: Dataset, workload: int | Iterable, *, epsilon: float | None = None, delta: float | None = None,
             rho: float | None = None, mechanism: str = "rp", rounds: int | None = None,
             methods: str | Sequence[str] = METHODS, seed: int | None = None,
             init_fraction: float = DEFAULT_INIT_FRACTION, repeats: bool = False, lnn_options: Mapping | None = None,
             norm: str = "cells", progress: Progress | None = None) -> Simulation:
    """Measure once with seeded continuous Gaussian noise, run every method on the same measurements, and
    score each against the true marginals: average ℓ1 and ℓ2 workload error (``norm``: per cell — the
    authors' code —, by N, or none), negative cells and mass, seconds, and the analytic per-cell variance of
    the MLE/EMP. **Not a private release.**

    ``seconds`` of trunc/trunc-rescale include the MLE they start from; the measurement (and, for MWEM, its
    per-round EMP) is timed separately as ``measure_seconds``.
    """
    from dpviz.marginals.lnn import grem_lnn
    from dpviz.marginals.metrics import negative_cells, negative_mass, workload_error
    from dpviz.marginals.reconstruct import trunc, trunc_rescale

    data = _check_data(data)
    mechanism = _mechanism(mechanism)
    names = _methods(methods)
    if norm not in NORMS:
        raise InputError(f"--norm: expected one of {', '.join(NORMS)}, got {norm!r}")
    the_rho = budget_rho(epsilon, delta, rho)
    seed = fresh_seed() if seed is None else check_seed(seed)
    domain = data.domain
    wl = workload_cliques(domain, workload)
    truth = data.marginals(wl)
    rng = np.random.default_rng(seed)

    t0 = time.perf_counter()
    base, residuals, lines, run = _measure(data, wl, the_rho, mechanism, rng, discrete=False, rounds=rounds,
                                           init_fraction=init_fraction, repeats=repeats, progress=progress)
    measure_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    mle = base()  # ResidualPlanner: GReM-MLE; MWEM: a fresh EMP of every measurement (= the mechanism's output)
    mle_seconds = time.perf_counter() - t1

    def score(name: str, marg: dict, seconds: float, variance=None, info=None) -> MethodResult:
        return MethodResult(
            name, marg,
            workload_error(truth, marg, norm="l1", scale=norm, N=data.N),
            workload_error(truth, marg, norm="l2", scale=norm, N=data.N),
            negative_cells(marg), negative_mass(marg), seconds, variance, info or {})

    results: dict[str, MethodResult] = {}
    for name in names:
        if name == "mle":
            results[name] = score(name, mle.marginals, mle_seconds, dict(mle.variance))
        elif name in ("trunc", "trunc-rescale"):
            t1 = time.perf_counter()
            rec = trunc(mle) if name == "trunc" else trunc_rescale(mle)
            results[name] = score(name, rec.marginals, mle_seconds + time.perf_counter() - t1)
        else:
            opts = _lnn_options(mechanism, lnn_options)
            t1 = time.perf_counter()
            res = residuals() if callable(residuals) else residuals
            out = grem_lnn(domain, wl, res, callback=_lnn_progress(progress, opts["rounds"]), **opts)
            info = {"iterations": out.iterations, "restarts": out.restarts, "step": out.step,
                    "converged": out.converged, "stop_reason": out.stop_reason,
                    "feasibility_mix": out.feasibility_mix, "history": out.history}
            results[name] = score(name, out.marginals, time.perf_counter() - t1, None, info)
    return Simulation(domain, wl, mechanism, the_rho, _budget_text(epsilon, delta, rho, the_rho), seed, norm, truth,
                      results, measure_seconds, lines, None if run is None else list(run.selected), data.N,
                      _detail(domain, lines, run))


# --------------------------------------------------------------------------------------------- release


BudgetLine = dict
"""One sub-budget of a release: ``label``, ``kind`` (measure/select), ``round``, ``rho``, ``sigma``."""


def noise_explanation(mechanism: str) -> str:
    """Which noise a release uses, and why (written into the ``.meta.json``)."""
    if mechanism == "rp":
        return ("ResidualPlanner measurements with discrete Gaussian noise (Canonne, Kamath & Steinke, NeurIPS 2020), "
                "drawn from the OS CSPRNG: for every residual τ of the workload's downward closure, independent "
                "discrete Gaussian noise N_Z(0, σ_τ²) is added to every cell of the integer τ-marginal μ_τ, and the "
                "residual z_τ = D_τ(μ_τ + ξ_τ) is then computed by differencing. The differencing is "
                "post-processing, so each τ is charged conservatively the full 1/(2σ_τ²) of an integer query of "
                "L2 sensitivity 1 (exact for the discrete Gaussian). That is more noise for the same ρ than "
                "ResidualPlanner's continuous correlated-Gaussian accounting, (1/(2σ_τ²))·∏_{k∈τ}(n_k−1)/n_k, "
                "which is not proven for discrete noise. The σ_τ minimise the summed per-cell variance of the "
                "workload under this charge, and Σ_τ 1/(2σ_τ²) = ρ.")
    return ("Scalable MWEM (Mullins et al., NeurIPS 2024, App. G, Alg. 7) with discrete Gaussian noise (Canonne, "
            "Kamath & Steinke, NeurIPS 2020) drawn from the OS CSPRNG: the integer total gets N_Z(0, σ₀²) with "
            "σ₀² = 1/(2αρ), and each selected integer marginal gets N_Z(0, σ²) in every cell with "
            "σ² = T/((1−α)ρ); a marginal has L2 sensitivity 1, and discrete Gaussian noise on an integer query is "
            "exactly 1/(2σ²)-zCDP. Each round's marginal is selected by the exponential mechanism at "
            "(1−α)ρ/(2T)-zCDP (score: L1 distance between the true marginal and the current reconstruction, "
            "sensitivity 1), its uniform drawn from the OS CSPRNG. Total: αρ + T·((1−α)ρ/(2T) + (1−α)ρ/(2T)) = ρ.")


@dataclass
class MarginalsRelease:
    """A private release of the workload marginals: no truth, no truth-derived number.

    ``variance[γ]`` is the analytic per-cell variance of the GReM-MLE/EMP estimate from these measurements
    (it depends only on the noise scales and, for MWEM, on which marginals were selected — itself a private
    output). For ``method="lnn"`` it describes the unconstrained estimate GReM-LNN starts from; GReM-LNN itself
    has no closed-form variance."""

    domain: Domain
    workload: list[Clique]
    mechanism: str
    method: str
    marginals: dict[Clique, np.ndarray]
    variance: dict[Clique, float]
    rho: float
    noise: Noise
    budget: list[dict]
    budget_text: str
    settings: dict
    categories: tuple[tuple[str, ...], ...] | None = None
    selected: list[Clique] | None = None
    lnn_info: dict | None = None
    seeded: bool = False
    detail: str = ""
    structure: StructureSource | None = None
    edges: tuple[tuple[float, ...] | None, ...] | None = None

    def __post_init__(self) -> None:
        if self.structure is None:  # not recorded: say the worst (read from the data)
            self.structure = StructureSource("data", "the data")

    @property
    def budget_total(self) -> float:
        return math.fsum(line["rho"] for line in self.budget)


def release(data: Dataset, workload: int | Iterable, *, epsilon: float | None = None, delta: float | None = None,
            rho: float | None = None, mechanism: str = "rp", method: str = "mle", rounds: int | None = None,
            init_fraction: float = DEFAULT_INIT_FRACTION, repeats: bool = False, lnn_options: Mapping | None = None,
            rng: np.random.Generator | None = None, progress: Progress | None = None,
            domain: DomainDeclaration | None = None) -> MarginalsRelease:
    """A private release: discrete Gaussian measurements (ResidualPlanner with the conservative per-marginal
    charge, or Scalable MWEM with discrete marginals), one reconstruction method (``"mle"`` or ``"lnn"``).

    The released structure (attributes, categories, bin edges) is ``domain`` when given (a
    :class:`dpviz.marginals.declared.DomainDeclaration`: ``data``'s category labels are recoded onto it, records
    outside dropped, clamped or put in the catch-all as declared — their number is not reported), else
    ``data``'s own (``data.structure``: a bundled sample's shipped declaration, :func:`read_table` with
    ``domain=``, or read from the records — then the result, its JSON and metadata say
    :data:`dpviz.core.structure.STRUCTURE_FROM_DATA_NOTICE`). ``workload`` names attributes of the released
    domain.

    ``rng=None`` (the only choice for a real release) draws every random bit from the OS CSPRNG, fresh at every
    call; a numpy Generator is accepted for tests and is recorded as such in the metadata."""
    from dpviz.marginals.lnn import grem_lnn

    data = _check_data(data)
    if domain is not None:
        from dpviz.marginals.declared import DomainDeclaration, apply

        if not isinstance(domain, DomainDeclaration):
            raise InputError("domain: expected a DomainDeclaration (dpviz.marginals.declared.read_declaration)")
        data = apply(data, domain)
    mechanism = _mechanism(mechanism)
    if method not in RELEASE_METHODS:
        raise InputError(f"--method: a release publishes one of {', '.join(RELEASE_METHODS)}, got {method!r} "
                         "(trunc and trunc-rescale are compared in simulate)")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError("rng: expected None (OS CSPRNG) or a numpy Generator (tests only)")
    the_rho = budget_rho(epsilon, delta, rho)
    noise = Noise.gaussian(the_rho, discrete=True) if rho is not None else \
        Noise.gaussian_approx(epsilon, delta, discrete=True)
    domain = data.domain
    wl = workload_cliques(domain, workload)
    base, residuals, lines, run = _measure(data, wl, the_rho, mechanism, rng, discrete=True, rounds=rounds,
                                           init_fraction=init_fraction, repeats=repeats, progress=progress)
    mle = base()
    lnn_info = None
    if method == "mle":
        marginals = {g: np.asarray(mle.marginals[g], float) for g in wl}
    else:
        opts = _lnn_options(mechanism, lnn_options)
        res = residuals() if callable(residuals) else residuals
        out = grem_lnn(domain, wl, res, callback=_lnn_progress(progress, opts["rounds"]), **opts)
        marginals = {g: np.asarray(out.marginals[g], float) for g in wl}
        lnn_info = {"solver": out.solver, "iterations": out.iterations, "restarts": out.restarts, "step": out.step,
                    "converged": out.converged, "stop_reason": out.stop_reason, "settings": opts}
    settings = {"mechanism": mechanism, "method": method}
    if mechanism == "mwem":
        settings.update(rounds=run.budget.rounds, init_fraction=run.budget.init_fraction, repeats=bool(repeats))
    return MarginalsRelease(domain, wl, mechanism, method, marginals, {g: float(mle.variance[g]) for g in wl},
                            the_rho, noise, lines, _budget_text(epsilon, delta, rho, the_rho), settings,
                            data.categories, None if run is None else list(run.selected), lnn_info,
                            seeded=rng is not None, detail=_detail(domain, lines, run),
                            structure=data.structure, edges=data.edges)


def _floats(a: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=float).ravel()]


def release_json(rel: MarginalsRelease) -> dict:
    """The OUT.json: ``{"marginals": [{"attributes": [...], "values": [...]}, ...]}``, one entry per workload
    marginal, attributes in domain order, values row-major (first attribute slowest). With ``method="mle"``
    each entry also carries ``variance``, the analytic per-cell variance of its values. A release whose
    structure was read from the records starts with ``"notice": STRUCTURE_FROM_DATA_NOTICE``."""
    head = {"notice": STRUCTURE_FROM_DATA_NOTICE} if rel.structure.kind == "data" else {}
    out = []
    for g in rel.workload:
        entry = {"attributes": _names(rel.domain, g), "values": _floats(rel.marginals[g])}
        if rel.method == "mle":
            entry["variance"] = float(rel.variance[g])
        out.append(entry)
    return {**head, "marginals": out}


def release_meta(rel: MarginalsRelease) -> dict:
    """The ``.meta.json`` of a release (through :func:`dpviz.core.modes.release_metadata`): noise and why,
    every sub-budget, settings and structure — nothing computed from the data but the (public) domain and
    the private outputs themselves (for MWEM: which marginals were selected)."""
    d = rel.domain
    fields = {
        "mechanism": rel.mechanism,
        "mechanism_label": LABELS[rel.mechanism],
        "method": rel.method,
        "method_label": LABELS[rel.method],
        "rho": rel.rho,
        "noise_explanation": noise_explanation(rel.mechanism),
        "budget_breakdown": rel.budget,
        "budget_total_rho": rel.budget_total,
        "settings": rel.settings,
        "domain": d.as_dict(),
        "structure": rel.structure.as_dict(),
        "domain_note": (f"{STRUCTURE_FROM_DATA_NOTICE}: the attributes, their categories and bin edges were read "
                        "from the records; they are not protected by the noise (a category held by one person is "
                        "published as it is)" if rel.structure.kind == "data" else
                        "the domain (attributes, categories, bin edges) is the declared public structure "
                        f"({rel.structure.origin}); every declared category is released, held by a record or not; "
                        "records outside it were dropped, clamped or put in the catch-all as declared, and how many "
                        "is not published"),
        "workload": [_names(d, g) for g in rel.workload],
        "values_layout": "row-major, attributes in domain order (the first attribute varies slowest)",
        "variance": {"per_marginal_cell_variance": [float(rel.variance[g]) for g in rel.workload],
                     "of": ("the released values (GReM-MLE/EMP)" if rel.method == "mle" else
                            "the GReM-MLE/EMP estimate from the same measurements; GReM-LNN has no closed-form "
                            "variance")},
    }
    if rel.categories is not None:
        fields["categories"] = {a: list(map(str, c)) for a, c in zip(d.attrs, rel.categories, strict=False)}
    if rel.edges is not None and any(e is not None for e in rel.edges):
        fields["bin_edges"] = {a: list(e) for a, e in zip(d.attrs, rel.edges, strict=False) if e is not None}
    if rel.selected is not None:
        fields["selected_marginals"] = [_names(d, g) for g in rel.selected]
    if rel.lnn_info is not None:
        fields["lnn"] = rel.lnn_info
    return release_metadata(CAP, rel.noise, seeded=rel.seeded, sensitivity=1.0, **fields)


# --------------------------------------------------------------------------------------------- reconstruct


def _is_number(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _parse_domain(obj: object) -> Domain:
    if not isinstance(obj, Mapping) or not obj:
        raise InputError('MEAS.json: "domain" must be an object {"attribute": size, ...} with at least one attribute')
    for a, s in obj.items():
        if not (_is_number(s) and float(s) == int(s)):
            raise InputError(f'MEAS.json: domain size of {a!r} must be an integer ≥ 2, got {s!r}')
    return Domain(tuple(str(a) for a in obj), tuple(int(s) for s in obj.values()))


def _parse_names(domain: Domain, names: object, what: str) -> Clique:
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise InputError(f'{what}: "attributes" must be a list of attribute names, got {names!r}')
    for a in names:
        if not isinstance(a, str):
            raise InputError(f'{what}: attribute names must be strings, got {a!r}')
        if a not in domain.attrs:
            raise InputError(f"{what}: unknown attribute {a!r}; the domain has {', '.join(domain.attrs)}")
    if len(set(names)) != len(names):
        raise InputError(f"{what}: an attribute appears twice in {list(names)}")
    return domain.clique(names)


def _parse_measurement(domain: Domain, j: int, m: object):
    from dpviz.marginals.reconstruct import MarginalMeasurement

    what = f"measurements[{j}]"
    if not isinstance(m, Mapping):
        raise InputError(f'{what}: expected an object with "attributes", "values" and "sigma"')
    for key in ("attributes", "values", "sigma"):
        if key not in m:
            raise InputError(f'{what}: missing "{key}"')
    g = _parse_names(domain, m["attributes"], what)
    domain.check_cells(g)
    values = m["values"]
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InputError(f'{what}: "values" must be a list of numbers')
    n = domain.size(g)
    if len(values) != n:
        shape = "×".join(str(s) for s in domain.shape(g)) or "1 (the total)"
        raise InputError(f"{what}: expected {n} values ({_label(domain, g)}: {shape}, row-major in domain order), "
                         f"got {len(values)}")
    for i, v in enumerate(values):
        if not _is_number(v) or not math.isfinite(float(v)):
            raise InputError(f"{what}: values[{i}] must be a finite number, got {v!r}")
    s = m["sigma"]
    if not _is_number(s) or not math.isfinite(float(s)) or not float(s) > 0:
        raise InputError(f"{what}: sigma must be a finite number > 0 (the noise standard deviation of a noisy "
                         f"measurement; an exact count has no privacy), got {str(s)[:40]}")
    return MarginalMeasurement(g, np.asarray(values, dtype=float), float(s))


def reconstruct(meas_json: object, method: str = "mle", *, lnn_options: Mapping | None = None) -> dict:
    """Post-processing only (no data, no privacy cost): workload marginals from noisy marginal measurements.

    Input ``{"domain": {"attr": size, ...}, "measurements": [{"attributes": [...], "values": [...], "sigma": s},
    ...], "workload": [[...], ...]}``: values row-major in the domain's attribute order; ``[]`` is the total;
    a marginal may be measured several times with different σ (each finite and > 0). Output ``{"marginals":
    [{"attributes": [...], "values": [...]}]}``, one per workload marginal, attributes in domain order.

    ``method="mle"``: EMP, the weighted least-squares (pseudoinverse of the σ-scaled measurement matrix)
    reconstruction — each entry also carries its analytic per-cell ``variance``; ``"lnn"``: GReM-LNN on the
    residual decomposition of the measurements (every cell ≥ 0; unmeasured residuals regularised with η = 1/40
    as in the paper's MWEM experiment, unless every residual of the workload closure is measured).
    """
    from dpviz.marginals.lnn import grem_lnn
    from dpviz.marginals.reconstruct import decompose, emp

    if method not in RELEASE_METHODS:
        raise InputError(f"--method: expected one of {', '.join(RELEASE_METHODS)}, got {method!r}")
    if not isinstance(meas_json, Mapping):
        raise InputError('MEAS.json: expected an object with "domain", "measurements" and "workload"')
    for key in ("domain", "measurements", "workload"):
        if key not in meas_json:
            raise InputError(f'MEAS.json: missing "{key}"')
    domain = _parse_domain(meas_json["domain"])
    ms = meas_json["measurements"]
    if isinstance(ms, (str, bytes)) or not isinstance(ms, Sequence) or not ms:
        raise InputError('MEAS.json: "measurements" must be a non-empty list')
    meas = [_parse_measurement(domain, j, m) for j, m in enumerate(ms)]
    wl_obj = meas_json["workload"]
    if isinstance(wl_obj, (str, bytes)) or not isinstance(wl_obj, Sequence) or not wl_obj:
        raise InputError('MEAS.json: "workload" must be a non-empty list of attribute lists')
    wl = list(dict.fromkeys(_parse_names(domain, g, f"workload[{i}]") for i, g in enumerate(wl_obj)))
    for g in wl:
        domain.check_cells(g)
    out = []
    if method == "mle":
        rec = emp(domain, wl, meas)
        for g in wl:
            out.append({"attributes": _names(domain, g), "values": _floats(rec.marginals[g]),
                        "variance": float(rec.variance[g])})
        return {"marginals": out}
    closure = set(downward_closure(wl))
    res = [r for r in decompose(domain, meas) if r.tau in closure]
    if not res:
        raise InputError("MEAS.json: no measurement bears on the workload (no measured attribute set is a subset "
                         "of a workload marginal)")
    complete = closure <= {r.tau for r in res}
    opts = _lnn_options("rp" if complete else "mwem", lnn_options)
    lnn = grem_lnn(domain, wl, res, **opts)
    for g in wl:
        out.append({"attributes": _names(domain, g), "values": _floats(lnn.marginals[g])})
    return {"marginals": out}
