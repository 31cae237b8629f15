"""Marginals end to end: ``release`` and ``simulate``, the one API the page, the CLI and the tools call.

Mechanisms (the measurement step, :mod:`dpviz.marginals.strategy`; both spend ρ-zCDP, ρ of the Gaussian
:class:`~dpviz.core.noise.Noise` given — from (ε, δ) by the Canonne–Kamath–Steinke conversion the paper uses,
:func:`dpviz.core.accounting.zcdp_rho`, valid for the discrete Gaussian and the exponential mechanism alike):

* ``"rp"`` — ResidualPlanner (Xiao et al., NeurIPS 2023): every residual τ of the workload's downward closure
  𝒲↓ measured once, σ_τ minimising the summed per-cell variance of the workload
  (:func:`dpviz.marginals.strategy.rp_sigmas`);
* ``"mwem"`` — Scalable MWEM (Mullins et al., NeurIPS 2024, App. G; :mod:`dpviz.marginals.mwem`): the total,
  then T marginals selected adaptively by the exponential mechanism.

Reconstruction methods (post-processing, no privacy cost, :mod:`dpviz.marginals.estimators`; Mullins, Fuentes,
Xiao, Kifer, Musco, Sheldon, "Efficient and Private Marginal Reconstruction with Local Non-Negativity", NeurIPS
2024):

* ``"mle"`` — GReM-MLE on residual measurements, EMP on marginal measurements (= the weighted least-squares /
  pseudoinverse reconstruction); it has an analytic per-cell variance that needs no truth;
* ``"lnn"`` — GReM-LNN: every workload cell ≥ 0 (projected dual ascent, :mod:`dpviz.marginals.lnn`);
* ``"trunc"`` / ``"trunc-rescale"`` — the paper's baselines on top of the MLE (simulation only).

Modes (:mod:`dpviz.core.release`):

* :func:`simulate` ``(data, noise, methods, rng, workload=...)`` — one seeded draw (continuous noise, or
  discrete if ``noise`` is), every method on the same measurements, errors against the true marginals.
  Labelled "simulation — not a private release".
* :func:`release` ``(data, noise, *, rng=None, workload=...)`` — *discrete* Gaussian noise from the OS CSPRNG
  (``rng=None``), one method, no truth in the result: a :class:`MarginalsRelease` (a
  :class:`dpviz.core.release.Release`: ``values``, ``budget``, ``table()``, ``metadata()``; ``as_json()`` is
  the OUT.json).

The MEAS.json post-processing verb is :func:`dpviz.marginals.estimators.reconstruct`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd

from dpviz.core.budget import Budget
from dpviz.core.modes import SIMULATION_NOTICE, check_seed, fresh_seed
from dpviz.core.noise import Noise, check_release_budget
from dpviz.core.release import BudgetSplit, release_metadata
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE, StructureSource
from dpviz.errors import InputError
from dpviz.marginals.estimators import RECONSTRUCT_METHODS
from dpviz.marginals.model import Clique, Dataset, Domain, cell_labels, clique_label, workload_cliques
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
    "noise_explanation",
    "release",
    "simulate",
]

CAP = "marginals"
MECHANISMS = ("rp", "mwem")
METHODS = ("mle", "lnn", "trunc", "trunc-rescale")
RELEASE_METHODS = RECONSTRUCT_METHODS
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
BudgetLine = dict
"""One sub-budget of a run: ``label``, ``kind`` (measure/select), ``round``, ``rho``, ``sigma``."""


# --------------------------------------------------------------------------------------------- inputs


def _rho(noise: object) -> float:
    """ρ-zCDP of the run: the Gaussian noise's ρ, an (ε, δ) budget converted by the CKS bound (the paper's
    Alg. 7 line 2; valid for the discrete Gaussian and the exponential mechanism), whatever the noise's
    discreteness. InputError for anything but Gaussian noise."""
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if noise.family != "gaussian":
        raise InputError("marginals: the measurements add Gaussian noise (ρ-zCDP); give --rho, or --epsilon "
                         f"with --delta (got {noise.describe})")
    return noise.budget.as_rho(gaussian_only=False)


def _budget_text(noise: Noise, rho: float) -> str:
    b = noise.budget
    if b.kind == "zcdp":
        return f"ρ = {rho:.6g} (zCDP)"
    return f"ρ = {rho:.6g} (zCDP; from (ε, δ) = ({b.epsilon:g}, {b.delta:.3g}) by the Canonne–Kamath–Steinke conversion)"


def _budget_split(noise: Noise, rho: float, lines: Sequence[BudgetLine]) -> BudgetSplit:
    """One ρ part per measurement / MWEM selection, composing to the run's ρ (Bun & Steinke 2016, Lemma 2.3)."""
    parts = tuple((line["label"], Budget.zcdp(line["rho"])) for line in lines)
    return BudgetSplit(noise.budget, parts, rho if noise.budget.kind == "approx" else None)


def _mechanism(name: str) -> str:
    if name not in MECHANISMS:
        raise InputError(f"--mechanism: expected one of {', '.join(MECHANISMS)}, got {name!r}")
    return name


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


def _check_data(data: object) -> Dataset:
    if not isinstance(data, Dataset):
        raise InputError(f"expected a marginals Dataset, got {type(data).__name__}")
    return data


def _measure(data: Dataset, workload: list[Clique], rho: float, mechanism: str, rng, *, discrete: bool,
             rounds: int, init_fraction: float, repeats: bool, progress: Progress | None):
    """(base reconstruction, residual measurements for LNN, budget lines, selected cliques or None)."""
    from dpviz.marginals.estimators import decompose, emp, grem_mle
    from dpviz.marginals.strategy import measure_residuals, rp_sigmas

    domain = data.domain
    if mechanism == "rp":
        cost = "marginal" if discrete else "residual"
        res = measure_residuals(data, domain, workload, rho, rng, discrete=discrete)
        sig2 = rp_sigmas(domain, workload, rho, cost=cost)
        lines = [_rp_line(domain, t, s2, cost) for t, s2 in sig2.items()]
        return (lambda: grem_mle(domain, workload, res)), res, lines, None
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
    from dpviz.marginals.strategy import residual_p

    w = residual_p(domain, t) if cost == "residual" else 1.0
    return {"label": f"residual τ = {_label(domain, t)}", "kind": "measure", "round": 0,
            "rho": w / (2.0 * sigma2), "sigma": math.sqrt(sigma2)}


def _lnn_run(domain: Domain, wl: list[Clique], residuals, mechanism: str, lnn_options: Mapping | None,
             progress: Progress | None):
    """GReM-LNN on the run's residual measurements (post-processing) and the settings it ran with."""
    from dpviz.marginals.lnn import grem_lnn, lnn_settings

    opts = lnn_settings(mechanism, lnn_options)
    res = residuals() if callable(residuals) else residuals
    return grem_lnn(domain, wl, res, callback=_lnn_progress(progress, opts["rounds"]), **opts), opts


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
    """A seeded simulation: one draw of noise, every method on it, errors against the truth.

    Not a private release (``notice``): it holds the true marginals and truth-derived errors. ``budget_lines``
    lists every sub-budget; :attr:`budget` is the same as a :class:`~dpviz.core.release.BudgetSplit`."""

    domain: Domain
    workload: list[Clique]
    mechanism: str
    rho: float
    noise: Noise
    budget_text: str
    seed: int | None
    norm: str
    truth: dict[Clique, np.ndarray]
    results: dict[str, MethodResult]
    measure_seconds: float
    budget_lines: list[dict]
    selected: list[Clique] | None = None
    N: int = 0
    detail: str = ""
    notice: str = SIMULATION_NOTICE

    @property
    def budget(self) -> BudgetSplit:
        return _budget_split(self.noise, self.rho, self.budget_lines)

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


def _generator(rng: np.random.Generator | int | None) -> tuple[np.random.Generator, int | None]:
    """The simulation's Generator and the seed it came from (None when a Generator is passed in)."""
    if isinstance(rng, np.random.Generator):
        return rng, None
    if rng is not None and (isinstance(rng, bool) or not isinstance(rng, (int, np.integer))):
        raise InputError(f"rng: expected a numpy Generator, an integer seed or None, got {type(rng).__name__}")
    seed = fresh_seed() if rng is None else check_seed(int(rng))
    return np.random.default_rng(seed), seed


def simulate(data: Dataset, noise: Noise, methods: str | Sequence[str] = METHODS,
             rng: np.random.Generator | int | None = None, *, workload: int | Iterable, mechanism: str = "rp",
             rounds: int | None = None, init_fraction: float = DEFAULT_INIT_FRACTION, repeats: bool = False,
             lnn_options: Mapping | None = None, norm: str = "cells", progress: Progress | None = None) -> Simulation:
    """Measure once with seeded Gaussian noise (``noise``: continuous — the paper's accounting — or discrete —
    the release's), run every method on the same measurements, and score each against the true marginals:
    average ℓ1 and ℓ2 workload error (``norm``: per cell — the authors' code —, by N, or none), negative cells
    and mass, seconds, and the analytic per-cell variance of the MLE/EMP. **Not a private release.**

    ``rng``: a numpy Generator, an integer seed (``np.random.default_rng(seed)``, recorded as ``seed``), or None
    (a fresh seed, recorded). ``seconds`` of trunc/trunc-rescale include the MLE they start from; the
    measurement (and, for MWEM, its per-round EMP) is timed separately as ``measure_seconds``.
    """
    from dpviz.marginals.estimators import trunc, trunc_rescale
    from dpviz.marginals.metrics import negative_cells, negative_mass, workload_error

    data = _check_data(data)
    mechanism = _mechanism(mechanism)
    names = _methods(methods)
    if norm not in NORMS:
        raise InputError(f"--norm: expected one of {', '.join(NORMS)}, got {norm!r}")
    the_rho = _rho(noise)
    gen, seed = _generator(rng)
    domain = data.domain
    wl = workload_cliques(domain, workload)
    truth = data.marginals(wl)

    t0 = time.perf_counter()
    base, residuals, lines, run = _measure(data, wl, the_rho, mechanism, gen, discrete=noise.discrete, rounds=rounds,
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
            t1 = time.perf_counter()
            out, _ = _lnn_run(domain, wl, residuals, mechanism, lnn_options, progress)
            info = {"iterations": out.iterations, "restarts": out.restarts, "step": out.step,
                    "converged": out.converged, "stop_reason": out.stop_reason,
                    "feasibility_mix": out.feasibility_mix, "history": out.history}
            results[name] = score(name, out.marginals, time.perf_counter() - t1, None, info)
    return Simulation(domain, wl, mechanism, the_rho, noise, _budget_text(noise, the_rho), seed, norm, truth,
                      results, measure_seconds, lines, None if run is None else list(run.selected), data.N,
                      _detail(domain, lines, run))


# --------------------------------------------------------------------------------------------- release


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


def _floats(a: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=float).ravel()]


@dataclass(frozen=True, eq=False)
class MarginalsRelease:
    """A private release of the workload marginals (a :class:`dpviz.core.release.Release`): no truth, no
    truth-derived number.

    ``variance[γ]`` is the analytic per-cell variance of the GReM-MLE/EMP estimate from these measurements
    (it depends only on the noise scales and, for MWEM, on which marginals were selected — itself a private
    output). For ``method="lnn"`` it describes the unconstrained estimate GReM-LNN starts from; GReM-LNN itself
    has no closed-form variance. ``budget_lines`` lists every sub-budget (label, kind, round, ρ, σ);
    :attr:`budget` is the same as a :class:`~dpviz.core.release.BudgetSplit` composing to ρ."""

    capability: ClassVar[str] = CAP

    domain: Domain
    workload: list[Clique]
    mechanism: str
    method: str
    marginals: dict[Clique, np.ndarray]
    variance: dict[Clique, float]
    rho: float
    noise: Noise
    budget_lines: list[dict]
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
            object.__setattr__(self, "structure", StructureSource("data", "the data"))

    @property
    def budget(self) -> BudgetSplit:
        """One ρ part per residual measurement (ResidualPlanner) or per MWEM measurement and selection."""
        return _budget_split(self.noise, self.rho, self.budget_lines)

    @property
    def budget_total(self) -> float:
        return math.fsum(line["rho"] for line in self.budget_lines)

    @property
    def values(self) -> np.ndarray:
        """The released cells of every workload marginal, concatenated in workload order (each row-major)."""
        return np.concatenate([np.asarray(self.marginals[g], dtype=float).ravel() for g in self.workload])

    def table(self) -> pd.DataFrame:
        """The published table: one row per cell, ``marginal`` ('Sex × Pclass'), ``cell`` ('Sex=male,
        Pclass=1'), ``released``, and (method "mle") the analytic per-cell ``variance``."""
        blocks = [pd.DataFrame({"marginal": clique_label(self.domain, g),
                                "cell": cell_labels(self.domain, g, self.categories),
                                "released": np.asarray(self.marginals[g], dtype=float)}) for g in self.workload]
        table = pd.concat(blocks, ignore_index=True)
        if self.method == "mle":
            table["variance"] = np.concatenate([np.full(self.domain.size(g), self.variance[g]) for g in self.workload])
        return table

    def as_json(self) -> dict:
        """The OUT.json: ``{"marginals": [{"attributes": [...], "values": [...]}, ...]}``, one entry per workload
        marginal, attributes in domain order, values row-major (first attribute slowest). With ``method="mle"``
        each entry also carries ``variance``, the analytic per-cell variance of its values. A release whose
        structure was read from the records starts with ``"notice": STRUCTURE_FROM_DATA_NOTICE``."""
        head = {"notice": STRUCTURE_FROM_DATA_NOTICE} if self.structure.kind == "data" else {}
        out = []
        for g in self.workload:
            entry = {"attributes": _names(self.domain, g), "values": _floats(self.marginals[g])}
            if self.method == "mle":
                entry["variance"] = float(self.variance[g])
            out.append(entry)
        return {**head, "marginals": out}

    def metadata(self) -> dict:
        """The ``.meta.json`` (through :func:`dpviz.core.release.release_metadata`): noise and why, every
        sub-budget, settings and structure — nothing computed from the data but the (public) domain and the
        private outputs themselves (for MWEM: which marginals were selected)."""
        d = self.domain
        fields = {
            "mechanism": self.mechanism,
            "mechanism_label": LABELS[self.mechanism],
            "method": self.method,
            "method_label": LABELS[self.method],
            "rho": self.rho,
            "noise_explanation": noise_explanation(self.mechanism),
            "budget_breakdown": self.budget_lines,
            "budget_total_rho": self.budget_total,
            "settings": self.settings,
            "domain": d.as_dict(),
            "structure": self.structure.as_dict(),
            "domain_note": (f"{STRUCTURE_FROM_DATA_NOTICE}: the attributes, their categories and bin edges were read "
                            "from the records; they are not protected by the noise (a category held by one person is "
                            "published as it is)" if self.structure.kind == "data" else
                            "the domain (attributes, categories, bin edges) is the declared public structure "
                            f"({self.structure.origin}); every declared category is released, held by a record or not; "
                            "records outside it were dropped, clamped or put in the catch-all as declared, and how many "
                            "is not published"),
            "workload": [_names(d, g) for g in self.workload],
            "values_layout": "row-major, attributes in domain order (the first attribute varies slowest)",
            "variance": {"per_marginal_cell_variance": [float(self.variance[g]) for g in self.workload],
                         "of": ("the released values (GReM-MLE/EMP)" if self.method == "mle" else
                                "the GReM-MLE/EMP estimate from the same measurements; GReM-LNN has no closed-form "
                                "variance")},
        }
        if self.categories is not None:
            fields["categories"] = {a: list(map(str, c)) for a, c in zip(d.attrs, self.categories, strict=False)}
        if self.edges is not None and any(e is not None for e in self.edges):
            fields["bin_edges"] = {a: list(e) for a, e in zip(d.attrs, self.edges, strict=False) if e is not None}
        if self.selected is not None:
            fields["selected_marginals"] = [_names(d, g) for g in self.selected]
        if self.lnn_info is not None:
            fields["lnn"] = self.lnn_info
        return release_metadata(CAP, self.noise, seeded=self.seeded, sensitivity=1.0, budget_split=self.budget,
                                **fields)


def release(data: Dataset, noise: Noise, *, rng: np.random.Generator | None = None, workload: int | Iterable,
            mechanism: str = "rp", method: str = "mle", rounds: int | None = None,
            init_fraction: float = DEFAULT_INIT_FRACTION, repeats: bool = False, lnn_options: Mapping | None = None,
            progress: Progress | None = None, domain: DomainDeclaration | None = None) -> MarginalsRelease:
    """A private release: discrete Gaussian measurements at ``noise``'s ρ (ResidualPlanner with the conservative
    per-marginal charge, or Scalable MWEM with discrete marginals), one reconstruction method (``"mle"`` or
    ``"lnn"``). ``noise`` is discrete Gaussian (``Noise.from_params("gaussian", ..., discrete=True)``); a budget
    whose noise vanishes is refused before any work.

    The released structure (attributes, categories, bin edges) is ``domain`` when given (a
    :class:`dpviz.marginals.declared.DomainDeclaration`: ``data``'s category labels are recoded onto it, records
    outside dropped, clamped or put in the catch-all as declared — their number is not reported), else
    ``data``'s own (``data.structure``: a bundled sample's shipped declaration, :func:`read_table` with
    ``domain=``, or read from the records — then the result, its JSON and metadata say
    :data:`dpviz.core.structure.STRUCTURE_FROM_DATA_NOTICE`). ``workload`` (K, or attribute lists) names
    attributes of the released domain.

    ``rng=None`` (the only choice for a real release) draws every random bit from the OS CSPRNG, fresh at every
    call; a numpy Generator is accepted for tests and is recorded as such in the metadata."""
    data = _check_data(data)
    the_rho = _rho(noise)
    if not noise.discrete:
        raise InputError("release: needs discrete Gaussian noise (Noise.from_params('gaussian', ..., discrete=True)); "
                         "continuous noise is for simulate")
    check_release_budget(noise)
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
    dom = data.domain
    wl = workload_cliques(dom, workload)
    base, residuals, lines, run = _measure(data, wl, the_rho, mechanism, rng, discrete=True, rounds=rounds,
                                           init_fraction=init_fraction, repeats=repeats, progress=progress)
    mle = base()
    lnn_info = None
    if method == "mle":
        marginals = {g: np.asarray(mle.marginals[g], float) for g in wl}
    else:
        out, opts = _lnn_run(dom, wl, residuals, mechanism, lnn_options, progress)
        marginals = {g: np.asarray(out.marginals[g], float) for g in wl}
        lnn_info = {"solver": out.solver, "iterations": out.iterations, "restarts": out.restarts, "step": out.step,
                    "converged": out.converged, "stop_reason": out.stop_reason, "settings": opts}
    settings = {"mechanism": mechanism, "method": method}
    if mechanism == "mwem":
        settings.update(rounds=run.budget.rounds, init_fraction=run.budget.init_fraction, repeats=bool(repeats))
    return MarginalsRelease(dom, wl, mechanism, method, marginals, {g: float(mle.variance[g]) for g in wl},
                            the_rho, noise, lines, _budget_text(noise, the_rho), settings,
                            data.categories, None if run is None else list(run.selected), lnn_info,
                            seeded=rng is not None, detail=_detail(dom, lines, run),
                            structure=data.structure, edges=data.edges)
