"""Marginal estimators (post-processing with analytic variance): ReM, GReM-MLE, EMP, Trunc(+Rescale), and the
MEAS.json entry :func:`reconstruct` (EMP or GReM-LNN, :mod:`dpviz.marginals.lnn`).

Primary source: B. Mullins, M. Fuentes, Y. Xiao, D. Kifer, C. Musco, D. Sheldon, "Efficient and Private
Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024 — Prop. 1, Alg. 2 (ReM), Alg. 3
(GReM-MLE), Thm 2 and Alg. 4 (EMP), §5 baselines (Trunc, Trunc+Rescale). Measurements in the residual
basis come from ResidualPlanner (Y. Xiao et al., NeurIPS 2023). Follows the corrected forms of
``shared/notes/rem-digest.md`` §2–3 (per-measurement σ_γ in Thm 2/5; D_τ D_τᵀ covariances).

Everything here is post-processing of noisy answers: it never sees the data and costs no privacy.

Measurement records
-------------------
* :class:`ResidualMeasurement` (τ, z_τ ∈ R^{m_τ}, σ_τ²): z_τ = α_τ + N(0, σ_τ² D_τ D_τᵀ), α_τ = R_τ p.
* :class:`MarginalMeasurement` (γ, y_γ ∈ R^{n_γ}, σ_γ): y_γ = μ_γ + N(0, σ_γ² I).

Reconstruction (Prop. 1 / Alg. 2 step 2): μ̂_γ = Σ_{τ∈S, τ⊆γ} A_{γ,τ} α̂_τ for γ ∈ 𝒲; residuals
τ ⊆ γ that were never measured contribute 0 (the minimum-norm choice of the pseudoinverse), so with only
the total measured every marginal is uniform. Per-cell variance of μ̂_γ (digest §1.5, generalised to
the combined σ̄_τ² of Alg. 3), the same for every cell of γ and needing no truth:

    Var μ̂_γ(t) = Σ_{τ∈S, τ⊆γ} σ̄_τ² · ∏_{k∈τ} (n_k−1)/n_k · ∏_{k∈γ\\τ} n_k^{-2}.

Cost: a Python loop over the cliques of the workload and, inside it, over the 2^{|γ|} subsets τ ⊆ γ;
every operation on values is vectorised (O(|γ| n_γ) per A_{γ,τ}, digest §2.5).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dpviz.errors import InputError
from dpviz.marginals.model import Clique, Domain, downward_closure, subsets
from dpviz.marginals.residuals import (
    check_clique,
    marginal_to_residual,
    residual_to_marginal,
)

__all__ = [
    "RECONSTRUCT_METHODS",
    "Estimator",
    "MarginalMeasurement",
    "Reconstruction",
    "ResidualMeasurement",
    "check_workload",
    "decompose",
    "emp",
    "grem_mle",
    "inverse_variance",
    "reconstruct",
    "reconstruction_variance",
    "rem",
    "trunc",
    "trunc_rescale",
]

RECONSTRUCT_METHODS = ("mle", "lnn")
"""What a release or a MEAS.json reconstruction publishes: GReM-MLE/EMP or GReM-LNN."""


# --------------------------------------------------------------------------- measurement records


def _tuple_clique(clique: object, what: str) -> Clique:
    try:
        items = tuple(clique)  # type: ignore[arg-type]
    except TypeError:
        raise InputError(f"{what}: expected a tuple of attribute indices, got {clique!r}") from None
    if any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in items):
        raise InputError(f"{what}: expected attribute indices (ints), got {items!r}")
    out = tuple(int(a) for a in items)
    if any(a < 0 for a in out) or list(out) != sorted(set(out)):
        raise InputError(f"{what}: attribute indices must be distinct, non-negative and increasing, got {out}")
    return out


def _values(values: object, what: str) -> np.ndarray:
    try:
        v = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what}: values must be numbers, got {type(values).__name__}") from None
    if v.ndim != 1 or v.size == 0:
        raise InputError(f"{what}: values must be a non-empty 1-D array, got shape {v.shape}")
    if not np.isfinite(v).all():
        i = int(np.flatnonzero(~np.isfinite(v))[0])
        raise InputError(f"{what}: values must be finite, got {v[i]} at index {i}")
    v.flags.writeable = False
    return v


def _scale(value: object, name: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{what}: {name} must be a finite number ≥ 0, got {value!r}")
    x = float(value)
    if not math.isfinite(x) or x < 0:
        raise InputError(f"{what}: {name} must be a finite number ≥ 0, got {x}")
    return x


@dataclass(frozen=True, eq=False)
class ResidualMeasurement:
    """z_τ = R_τ p + N(0, σ_τ² · D_τ D_τᵀ): ``values`` has length m_τ = ∏_{k∈τ}(n_k−1), ``sigma2`` = σ_τ².

    σ_τ² = 0 means an exact (noise-free) residual. ``check(domain)`` validates the length.
    """

    tau: Clique
    values: np.ndarray
    sigma2: float

    def __post_init__(self) -> None:
        what = f"residual measurement τ = {self.tau!r}"
        object.__setattr__(self, "tau", _tuple_clique(self.tau, what))
        object.__setattr__(self, "values", _values(self.values, what))
        object.__setattr__(self, "sigma2", _scale(self.sigma2, "sigma2 (σ_τ²)", what))

    def check(self, domain: Domain) -> ResidualMeasurement:
        """InputError if τ is not a clique of ``domain`` or ``values`` is not of length m_τ."""
        check_clique(domain, self.tau, "residual measurement τ")
        m = domain.residual_size(self.tau)
        if self.values.size != m:
            raise InputError(f"residual measurement τ = {domain.names(self.tau)}: expected m_τ = {m} values, "
                             f"got {self.values.size}")
        return self


@dataclass(frozen=True, eq=False)
class MarginalMeasurement:
    """y_γ = μ_γ + N(0, σ_γ² I): ``values`` has length n_γ (row-major in γ order), ``sigma`` = σ_γ (a std)."""

    clique: Clique
    values: np.ndarray
    sigma: float

    def __post_init__(self) -> None:
        what = f"marginal measurement γ = {self.clique!r}"
        object.__setattr__(self, "clique", _tuple_clique(self.clique, what))
        object.__setattr__(self, "values", _values(self.values, what))
        object.__setattr__(self, "sigma", _scale(self.sigma, "sigma (σ_γ)", what))

    def check(self, domain: Domain) -> MarginalMeasurement:
        """InputError if γ is not a clique of ``domain`` or ``values`` is not of length n_γ."""
        check_clique(domain, self.clique, "marginal measurement γ")
        n = domain.size(self.clique)
        if self.values.size != n:
            raise InputError(f"marginal measurement γ = {domain.names(self.clique)}: expected n_γ = {n} values, "
                             f"got {self.values.size}")
        return self


@dataclass(frozen=True, eq=False)
class Reconstruction:
    """Reconstructed workload marginals.

    * ``marginals[γ]``: μ̂_γ (length n_γ) for every γ ∈ 𝒲;
    * ``variance[γ]``: analytic per-cell variance of μ̂_γ (module docstring; NaN when unknown, e.g. for a
      generic ReM estimator that reports no σ̄_τ², or after Trunc, which has no closed form);
    * ``alpha[τ]``: the residual estimates α̂_τ for every measured τ (τ ∈ S);
    * ``method``: "grem-mle", "emp", "rem", "…+trunc", "…+trunc-rescale";
    * ``sigma2[τ]``: the combined σ̄_τ² of α̂_τ (Cov α̂_τ = σ̄_τ² D_τD_τᵀ) where known.
    """

    marginals: dict[Clique, np.ndarray]
    variance: dict[Clique, float]
    alpha: dict[Clique, np.ndarray]
    method: str
    sigma2: dict[Clique, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def check_workload(domain: Domain, workload: Iterable[Sequence[int]]) -> list[Clique]:
    """Validated workload 𝒲 (cliques of ``domain``, duplicates dropped, order kept); InputError if empty."""
    out: list[Clique] = []
    for g in workload:
        c = check_clique(domain, g, "workload clique")
        domain.check_cells(c)
        if c not in out:
            out.append(c)
    if not out:
        raise InputError("workload: no marginals to reconstruct")
    return out


def reconstruction_variance(domain: Domain, gamma: Clique, sigma2: dict[Clique, float]) -> float:
    """Per-cell variance of μ̂_γ = Σ_{τ⊆γ, τ∈S} A_{γ,τ} α̂_τ with Cov α̂_τ = σ̄_τ² D_τD_τᵀ (digest §1.5).

    ``sigma2`` maps each measured τ to σ̄_τ²; τ ⊆ γ missing from it contribute 0 (they are set to 0).
    """
    total = 0.0
    for t in subsets(gamma):
        if t in sigma2:
            p = math.prod((domain.sizes[k] - 1) / domain.sizes[k] for k in t)
            spread = math.prod(domain.sizes[k] ** -2 for k in gamma if k not in t)
            total += sigma2[t] * p * spread
    return total


def _group(domain: Domain, measurements: Iterable[ResidualMeasurement]) -> dict[Clique, list[ResidualMeasurement]]:
    by_tau: dict[Clique, list[ResidualMeasurement]] = {}
    for m in measurements:
        if not isinstance(m, ResidualMeasurement):
            raise InputError(f"expected ResidualMeasurement objects, got {type(m).__name__} "
                             "(marginal measurements go through emp() or decompose())")
        by_tau.setdefault(m.check(domain).tau, []).append(m)
    return by_tau


# --------------------------------------------------------------------------- Thm 2: marginals → residuals


def decompose(domain: Domain, measurements: Iterable[MarginalMeasurement]) -> list[ResidualMeasurement]:
    """Split each y_γ ~ N(μ_γ, σ_γ² I) into independent residual measurements (Thm 2 / Alg. 4 lines 2–6).

    For every τ ⊆ γ: z_τ = A⁺_{γ,τ} y_γ with σ²_{τ,i} = σ_γ² ∏_{k∈γ\\τ} n_k (the per-measurement σ_γ form,
    digest §3.2 / Thm 5). A multiset of measurements (repeats, unequal σ_γ) is fine: every one yields its
    own 2^{|γ|} residual measurements.
    """
    out: list[ResidualMeasurement] = []
    for y in measurements:
        if not isinstance(y, MarginalMeasurement):
            raise InputError(f"decompose: expected MarginalMeasurement objects, got {type(y).__name__}")
        y.check(domain)
        g = y.clique
        for t in subsets(g):
            factor = math.prod(domain.sizes[k] for k in g if k not in t)
            out.append(ResidualMeasurement(t, marginal_to_residual(domain, g, t, y.values), y.sigma ** 2 * factor))
    return out


# --------------------------------------------------------------------------- Alg. 2 / Alg. 3

Estimator = Callable[[Clique, list[ResidualMeasurement]], "np.ndarray | tuple[np.ndarray, float]"]
"""ReM hook: (τ, the measurements of τ) → α̂_τ, or (α̂_τ, σ̄_τ²) when the estimate has Cov σ̄_τ² D_τD_τᵀ."""


def inverse_variance(tau: Clique, ms: list[ResidualMeasurement]) -> tuple[np.ndarray, float]:
    """GReM-MLE estimator (Alg. 3, proportional covariances): α̂_τ = Σ_i σ_{τ,i}^{-2} z_{τ,i} / Σ_i σ_{τ,i}^{-2},
    σ̄_τ² = (Σ_i σ_{τ,i}^{-2})^{-1}. Noise-free measurements (σ² = 0), if any, are averaged and win outright."""
    s2 = np.array([m.sigma2 for m in ms])
    z = np.stack([m.values for m in ms])
    exact = s2 == 0
    if exact.any():
        return z[exact].mean(axis=0), 0.0
    w = 1.0 / s2
    return w @ z / w.sum(), float(1.0 / w.sum())


def rem(domain: Domain, workload: Iterable[Sequence[int]], measurements: Iterable[ResidualMeasurement],
        estimator: Estimator, *, method: str = "rem") -> Reconstruction:
    """ReM (Alg. 2): α̂_τ = estimator(τ, [z_{τ,1..k_τ}]) for every measured τ, then
    μ̂_γ = Σ_{τ∈S, τ⊆γ} A_{γ,τ} α̂_τ (Prop. 1) for every γ ∈ 𝒲; unmeasured τ contribute 0.

    The estimator may return α̂_τ alone (the variance of the result is then NaN) or (α̂_τ, σ̄_τ²).
    Loops over the measured residuals and over the cliques of the workload (and their subsets).
    """
    W = check_workload(domain, workload)
    by_tau = _group(domain, measurements)
    alpha: dict[Clique, np.ndarray] = {}
    sigma2: dict[Clique, float] = {}
    for t, ms in by_tau.items():
        est = estimator(t, ms)
        if isinstance(est, tuple):
            est, s2 = est
            sigma2[t] = _scale(s2, "σ̄_τ²", f"estimator for τ = {domain.names(t)}")
        a = np.asarray(est, dtype=np.float64).reshape(-1)
        if a.size != domain.residual_size(t) or not np.isfinite(a).all():
            raise InputError(f"estimator for τ = {domain.names(t)}: expected {domain.residual_size(t)} finite values, "
                             f"got {a.size}" + ("" if np.isfinite(a).all() else " (some not finite)"))
        a.flags.writeable = False
        alpha[t] = a
    known = len(sigma2) == len(alpha)
    marginals: dict[Clique, np.ndarray] = {}
    variance: dict[Clique, float] = {}
    for g in W:
        mu = np.zeros(domain.size(g))
        for t in subsets(g):
            if t in alpha:
                mu += residual_to_marginal(domain, g, t, alpha[t])
        mu.flags.writeable = False
        marginals[g] = mu
        variance[g] = reconstruction_variance(domain, g, sigma2) if known else math.nan
    return Reconstruction(marginals, variance, alpha, method, sigma2 if known else {})


def grem_mle(domain: Domain, workload: Iterable[Sequence[int]],
             measurements: Iterable[ResidualMeasurement]) -> Reconstruction:
    """GReM-MLE (Alg. 3): ReM with the inverse-variance weighted mean per τ (:func:`inverse_variance`).

    On ResidualPlanner's measurements (one per τ, S = 𝒲↓) this is ResidualPlanner's own reconstruction.
    """
    return rem(domain, workload, measurements, inverse_variance, method="grem-mle")


def emp(domain: Domain, workload: Iterable[Sequence[int]],
        measurements: Iterable[MarginalMeasurement]) -> Reconstruction:
    """EMP (Alg. 4): :func:`decompose` the marginal measurements, then GReM-MLE.

    Equals M_γ V_𝒬⁺ v with V_γ = M_γ/σ_γ, v_γ = y_γ/σ_γ (Thm 3/5): the weighted least-squares
    (Gaussian MLE, minimum-norm) reconstruction, for every γ ∈ 𝒲, measured or not.
    """
    rec = grem_mle(domain, workload, decompose(domain, measurements))
    return Reconstruction(rec.marginals, rec.variance, rec.alpha, "emp", rec.sigma2)


# --------------------------------------------------------------------------- non-negativity baselines


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def trunc(rec: Reconstruction) -> Reconstruction:
    """Trunc (§5 baseline): max(μ̂_γ, 0) cell by cell. The variance has no closed form afterwards (NaN)."""
    marg = {g: _frozen(np.maximum(mu, 0.0)) for g, mu in rec.marginals.items()}
    return Reconstruction(marg, dict.fromkeys(marg, math.nan), rec.alpha, rec.method + "+trunc", rec.sigma2)


def trunc_rescale(rec: Reconstruction) -> Reconstruction:
    """Trunc+Rescale (digest §3.4): truncate, then scale each marginal so its sum equals the sum of the
    *untruncated* μ̂_γ. Guards: if that sum is ≤ 0, or every cell is ≤ 0, the marginal becomes all zeros
    (the only non-negative table with total max(Σμ̂_γ, 0) = 0 — no division by zero)."""
    marg = {}
    for g, mu in rec.marginals.items():
        t = np.maximum(mu, 0.0)
        target, have = float(mu.sum()), float(t.sum())
        marg[g] = _frozen(t * (target / have) if target > 0 and have > 0 else np.zeros_like(t))
    return Reconstruction(marg, dict.fromkeys(marg, math.nan), rec.alpha, rec.method + "+trunc-rescale", rec.sigma2)


# --------------------------------------------------------------------------- MEAS.json (the reconstruct verb)


def _floats(a: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=float).ravel()]


def _names(domain: Domain, g: Clique) -> list[str]:
    return list(domain.names(g))


def _label(domain: Domain, g: Clique) -> str:
    return "×".join(domain.names(g)) if g else "(total)"


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


def _parse_measurement(domain: Domain, j: int, m: object) -> MarginalMeasurement:
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
    from dpviz.marginals.lnn import grem_lnn, lnn_settings

    if method not in RECONSTRUCT_METHODS:
        raise InputError(f"--method: expected one of {', '.join(RECONSTRUCT_METHODS)}, got {method!r}")
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
    opts = lnn_settings("rp" if complete else "mwem", lnn_options)
    lnn = grem_lnn(domain, wl, res, **opts)
    for g in wl:
        out.append({"attributes": _names(domain, g), "values": _floats(lnn.marginals[g])})
    return {"marginals": out}
