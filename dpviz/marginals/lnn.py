"""GReM-LNN: marginal reconstruction with local non-negativity by projected dual ascent.

Primary source: B. Mullins, M. Fuentes, Y. Xiao, D. Kifer, C. Musco, D. Sheldon, "Efficient and Private
Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024 (§4.3, Eq. 2, App. F Eq. 8/9, Alg. 6;
cost App. E Thm. 6). Digest: ``shared/notes/rem-digest.md`` §3.3.

**Pure post-processing.** :func:`grem_lnn` sees only residual measurements (noisy answers) and public
parameters; it never touches data, so it costs no privacy budget.

Problem (Eq. 8/9). Over all residuals of the workload closure α = (α_τ)_{τ∈𝒲↓}, with S the measured
residuals and z_{τ,1..k_τ} the measurements of τ ∈ S::

    minimise   F(α) = ½ Σ_{τ∈S} Σ_i (α_τ − z_{τ,i})ᵀ K_{τ,i}⁻¹ (α_τ − z_{τ,i})  +  η Σ_{ν∈𝒲↓\\S} ‖A_{ν,ν} α_ν‖²
    subject to μ_γ(α) = Σ_{τ⊆γ} A_{γ,τ} α_τ ≥ 0   (every cell, every γ ∈ 𝒲)

with K_{τ,i} = w_τ D_τD_τᵀ, w_τ = ``weight_base``^{|τ|} (the paper's heuristic: 2^{|τ|}; the authors' code
squares it, 4^{|τ|}, i.e. ``weight_base=4``), or ``weights="noise"``: K_{τ,i} = σ²_{τ,i} D_τD_τᵀ, the true
Gaussian covariance.

**Scaling (the factor-of-2 note, digest §3.3 item 3).** This module implements Alg. 6 exactly as derived
in App. F, whose gradients are Σ_i K⁻¹(α − z) (no factor 2) for the data term and 2η A_{ν,ν}ᵀA_{ν,ν} α for
the regulariser. That is the objective F above: ½·(Eq. 8's data term) + η·(regulariser), i.e. ½ × (Eq. 9
with η replaced by 2η). With S = 𝒲↓ (ResidualPlanner) there is no regulariser and the minimiser is that of
Eq. 8 exactly. :attr:`LNNResult.objective` reports F.

Algorithm (corrected Alg. 6). Lagrangian ℒ(α, λ) = F(α) + Σ_γ λ_γᵀ μ_γ(α) with λ ≤ 0; the dual function
g(λ) = min_α ℒ has ∇g = μ(α*(λ)). With b̃_τ = Σ_{γ∈𝒲, γ⊇τ} (∏_{k∈γ\\τ} n_k⁻¹) A⁺_{γ,τ} λ_γ
(= D_τD_τᵀ Σ_γ A_{γ,τ}ᵀ λ_γ, the digest's "key shortcut": no pseudoinverse on the λ side)::

    λ_γ ← λ0 · 1                                                        (λ0 ≤ 0; paper: −1)
    repeat:
        measured τ ∈ S:      α_τ = z̄_τ − c_τ b̃_τ,   c_τ = (Σ_i 1/w_{τ,i})⁻¹,  z̄_τ = c_τ Σ_i z_{τ,i}/w_{τ,i}
                             (heuristic weights: c_τ = w_τ/k_τ and z̄_τ the plain mean)
        unmeasured ν ∉ S:    α_ν = −(1/(2η)) b̃_ν
        μ_γ = Σ_{τ⊆γ} A_{γ,τ} α_τ
        λ_γ ← min(λ_γ + s μ_γ, 0)                                       (projected dual ascent)

The loops run over cliques only — for every γ ∈ 𝒲 and every τ ⊆ γ one A⁺_{γ,τ} and one A_{γ,τ}
application (:mod:`dpviz.marginals.residuals`), each vectorised over the cells — so one round costs
O(Σ_{γ∈𝒲} |γ| n_γ 2^{|γ|}) time (paper Thm. 6e) and O(Σ_γ n_γ + Σ_τ m_τ) memory. Nothing builds the data
vector.

Acceleration (default; ``accelerate=False`` is Alg. 6 as printed). The dual g is concave and smooth with
∇g(λ) = μ(α*(λ)), so the projected step can be taken from an extrapolated point, as in FISTA (A. Beck,
M. Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear Inverse Problems", SIAM J.
Imaging Sci. 2009), with the momentum reset whenever the step opposes the last move (B. O'Donoghue,
E. Candès, "Adaptive Restart for Accelerated Gradient Schemes", Found. Comput. Math. 2015). Same problem,
same fixed points and stopping rules, and the step capped at 0.9/L̂ (L̂ the Lipschitz constant of ∇g by
power iteration, 20 rounds' cost; FISTA needs s ≤ 1/L where plain ascent tolerates s < 2/L); the rate improves from O(1/k) to O(1/k²). On Adult,
all 3-way marginals (ResidualPlanner, ε = 1), the plain ascent still has negative mass −13 after the
paper's 4000 rounds; the accelerated one meets criterion (a) in about 600 (``bench/marginals_bench.py``).

Stopping (configurable; the authors' code style, digest §3.3): every ``check_every`` iterations, with
μ = μ(α*(λ)) the current reconstruction,

* (a) negative mass Σ_γ Σ_cells min(μ_γ, 0) > −``neg_tol`` (default 1 count), once past ``neg_after`` (200);
* (b) complementary slackness |Σ_γ λ_γᵀ μ_γ| < ``cs_tol`` (0.01), once past ``cs_after`` (400);
* ``rounds`` exhausted, ``time_limit`` seconds elapsed (checked every iteration, over all restarts), or
  ``callback(iteration, dual_objective, negative_mass)`` returned True.

Divergence: a non-finite μ (checked every iteration) or dual objective restarts the run from scratch with
s ← s/√10 (the paper; the code divides by 10), at most ``max_restarts`` times, then InputError.

**Feasibility guarantee (no cell below −1e-9).** Dual ascent is only asymptotically feasible, so the
returned point is made feasible by a final step that is itself post-processing: a convex combination with
the uniform reconstruction α_u = (α_∅⁺ on ∅, 0 elsewhere), whose marginals are max(α_∅, 0)/n_γ ≥ 0
(every μ_γ sums to α_∅, since columns of D⁺ sum to 0). Because μ is linear in α,

    α ← (1 − t) α + t α_u,   t = min{ t ∈ [0, 1] : (1 − t) μ_γ + t μ_u,γ ≥ 0 for every cell }

is the smallest move along that segment that makes every workload cell ≥ 0 (t = 0 when μ is already
feasible; t ≈ |most negative cell| / (N̂/n_γ) otherwise). The marginals stay consistent (they still come
from one α), keep their total α_∅, and the floating-point residue left at the binding cells (a few ulp;
checked to be below 1e-9 × the cell scale) is set to 0.0, so every returned cell is ≥ 0 — exactly. t and the most negative cell before the step are reported
(:attr:`LNNResult.feasibility_mix`, :attr:`LNNResult.min_cell_before`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpviz.core.accounting import positive
from dpviz.errors import InputError
from dpviz.marginals.estimators import ResidualMeasurement, check_workload
from dpviz.marginals.model import Clique, Domain, downward_closure
from dpviz.marginals.lnn_problem import Problem as _Problem, quad as _quad

__all__ = [
    "SOLVER_ACCELERATED",
    "SOLVER_PLAIN",
    "ETA",
    "LAM0",
    "ROUNDING_TOL",
    "ROUNDS",
    "STEP",
    "WEIGHT_BASE",
    "DENSE_MAX_CELLS",
    "LNNResult",
    "dense_rounds",
    "grem_lnn",
    "lnn_defaults",
    "lnn_objective",
    "lnn_settings",
]

ROUNDS = 4000
"""Max rounds T of the paper's ResidualPlanner experiment (App. H)."""
STEP = 0.1
"""Step size s of the ResidualPlanner experiment (App. H; the Scalable MWEM experiment used 0.02)."""
LAM0 = -1.0
"""Initial multiplier λ0 (App. H)."""
ETA = 1.0 / 40.0
"""Regulariser weight η for unmeasured residuals (irrelevant when S = 𝒲↓): App. H reports "η = 40" for the
Scalable MWEM experiment, but the authors' code *multiplies* by its reg_param = 40 (α_ν = −0.5·40·b̃_ν,
digest §3.3), which is η = 1/40 in the paper's own Eq. 9 / App. F notation (α_ν = −b̃_ν/(2η)). We follow the
code: on Adult, all 3-way, Scalable MWEM T = 10, ε = 1, η = 1/40 gives average ℓ1 201.7 (EMP 224.4,
Trunc+Rescale 208.9) where η = 40 gives 272.5, worse than EMP (bench/README_marginals.md)."""


def lnn_defaults(mechanism: str) -> dict:
    """GReM-LNN settings of the paper's experiments (App. H): ResidualPlanner T = 4000, s = 0.1, λ0 = −1;
    Scalable MWEM T = 1000, s = 0.02, λ0 = −1 and the regulariser of the unmeasured residuals at the authors'
    code's strength (η = 1/40 in Eq. 9's notation; :data:`ETA` says why)."""
    if mechanism == "mwem":
        return {"rounds": 1000, "step": 0.02, "lam0": -1.0, "eta": ETA}
    return {"rounds": 4000, "step": 0.1, "lam0": -1.0}


def lnn_settings(mechanism: str, options: Mapping | None) -> dict:
    """:func:`lnn_defaults` for ``mechanism``, overridden by the ``options`` that are not None."""
    opts = lnn_defaults(mechanism)
    if options:
        opts.update({k: v for k, v in dict(options).items() if v is not None})
    return opts


WEIGHT_BASE = 2.0
"""K_τ = 2^{|τ|} D_τD_τᵀ (paper §4.3; the authors' code effectively uses 4)."""
ROUNDING_TOL = 1e-9
"""Relative bound (× max(1, cell scale)) on the floating-point residue the feasibility step sets to 0.0."""
SOLVER_PLAIN = "projected dual ascent (Alg. 6)"
SOLVER_ACCELERATED = "accelerated projected dual ascent (FISTA with adaptive restart)"
RESTART_FACTOR = math.sqrt(10.0)
"""On divergence the step is divided by √10 (paper App. H)."""
DENSE_MAX_CELLS = 1500
"""Up to this many workload cells Σ n_γ (and residual rows Σ m_τ), one round is a dense matrix-vector product
(:meth:`dpviz.marginals.lnn_problem.Problem.dense`, M at most 18 MB): below it the lattice passes' Python loops over the closure cost more
than the arithmetic. 300 rounds, this machine: titanic's 3-way marginals (108 cells) 417 → 24 ms; 15 2-way
marginals of 10 values (1,500 cells) 507 → 266 ms; but 10 3-way marginals of 6 values (2,160 cells) 519 →
976 ms, where the Σ n_γ² product outgrows the transforms."""


def dense_rounds(cells: int, rows: int) -> bool:
    """Whether :func:`grem_lnn` runs its rounds on the dense map: ``cells`` workload cells Σ n_γ and ``rows``
    residual rows Σ m_τ of the closure both within :data:`DENSE_MAX_CELLS`."""
    return cells <= DENSE_MAX_CELLS and rows <= DENSE_MAX_CELLS


@dataclass(frozen=True, eq=False)
class LNNResult:
    """Output of :func:`grem_lnn` (all arrays are flattened row-major in clique order).

    ``marginals[γ]`` (γ ∈ 𝒲) = Σ_{τ⊆γ} A_{γ,τ} ``alpha[τ]``, every cell ≥ 0. ``multipliers[γ]`` ≤ 0 is the λ_γ
    that produced α before the feasibility step (α = argmin_α ℒ(α, λ)). ``history`` holds
    (iteration, dual objective g(λ), negative mass Σ min(μ, 0)) every ``check_every`` iterations of the
    final run. ``objective`` is F(α) at the returned α (module docstring for the scaling).
    """

    marginals: dict[Clique, np.ndarray]
    alpha: dict[Clique, np.ndarray]
    multipliers: dict[Clique, np.ndarray]
    iterations: int
    restarts: int
    step: float
    converged: bool
    stop_reason: str
    history: tuple[tuple[int, float, float], ...]
    objective: float
    dual_objective: float
    negative_mass: float
    complementary_slackness: float
    feasibility_mix: float
    min_cell_before: float
    weights: str
    elapsed: float
    solver: str = ""
    method: str = "GReM-LNN"


# --------------------------------------------------------------------------- validation


def _nonpositive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name}: expected a finite number ≤ 0, got {value!r}")
    x = float(value)
    if not (math.isfinite(x) and x <= 0.0):
        raise InputError(f"{name}: expected a finite number ≤ 0 (the multipliers satisfy λ ≤ 0), got {value!r}")
    return x


def _count(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise InputError(f"{name}: expected an integer ≥ {minimum}, got {value!r}")
    return int(value)


def _measurements(domain: Domain, closure: set[Clique], measurements, weights: str,
                  weight_base: float) -> dict[Clique, tuple[np.ndarray, float, float]]:
    """τ → (z̄_τ, c_τ, const_τ) with Σ_i (1/w_i) q(α − z_i) = q(α − z̄)/c + const (q(x) = xᵀ(DDᵀ)⁻¹x)."""
    if isinstance(measurements, (str, bytes)):
        raise InputError("measurements: expected a list of ResidualMeasurement")
    try:
        items = list(measurements)
    except TypeError:
        raise InputError(f"measurements: expected a list of ResidualMeasurement, got {measurements!r}") from None
    if not items:
        raise InputError("measurements: empty; GReM-LNN reconstructs from at least one residual measurement")
    grouped: dict[Clique, list[tuple[np.ndarray, float]]] = {}
    for j, m in enumerate(items):
        if not isinstance(m, ResidualMeasurement):
            raise InputError(f"measurements[{j}]: expected a ResidualMeasurement, got {type(m).__name__} "
                             "(marginal measurements go through reconstruct.decompose() first)")
        m.check(domain)  # τ a clique of the domain, m_τ finite values (validated by the record itself)
        tau, z = m.tau, m.values
        if tau not in closure:
            raise InputError(f"measurements[{j}]: residual τ = {domain.names(tau)} is not in the downward closure "
                             "of the workload (every measured residual must be a subset of some workload marginal)")
        if weights == "noise":
            if not m.sigma2 > 0:
                raise InputError(f"measurements[{j}]: weights='noise' needs σ² > 0, got σ² = {m.sigma2} for "
                                 f"τ = {domain.names(tau)} (use the default heuristic weights for exact residuals)")
            w = m.sigma2
        else:
            w = weight_base ** len(tau)
        grouped.setdefault(tau, []).append((z, w))
    out = {}
    for tau, zs in grouped.items():
        inv = np.array([1.0 / w for _, w in zs])
        c = 1.0 / inv.sum()
        zbar = c * sum(v * z for (z, _), v in zip(zs, inv, strict=True))
        const = sum(v * _quad(domain, tau, z - zbar) for (z, _), v in zip(zs, inv, strict=True))
        out[tau] = (zbar, c, float(const))
    return out


def lnn_objective(domain: Domain, workload: Sequence[Clique], measurements: Sequence[ResidualMeasurement],
                  alpha: dict[Clique, np.ndarray], *, eta: float = ETA, weight_base: float = WEIGHT_BASE,
                  weights: Literal["heuristic", "noise"] = "heuristic") -> float:
    """F(α), the objective :func:`grem_lnn` minimises (module docstring; Eq. 8/9 with the App. F scaling)."""
    eta = positive("eta", eta)
    weight_base = positive("weight_base", weight_base)
    wl = check_workload(domain, workload)
    prob = _Problem(domain, wl, _measurements(domain, set(downward_closure(wl)), measurements, weights, weight_base),
                    eta)
    missing = [t for t in prob.closure if t not in alpha]
    if missing:
        raise InputError(f"alpha: missing residual(s) {', '.join(map(str, missing))} of the workload closure")
    return prob.objective({t: np.asarray(alpha[t], dtype=np.float64) for t in prob.closure})


def _feasible(prob: _Problem, alpha: dict[Clique, np.ndarray], mu: dict[Clique, np.ndarray]
              ) -> tuple[dict[Clique, np.ndarray], dict[Clique, np.ndarray], float, float]:
    """Smallest convex combination with the uniform reconstruction that makes every cell ≥ 0 (module docstring)."""
    d = prob.domain
    total = float(alpha[()][0])
    top = max(total, 0.0)
    uniform = {g: top / d.size(g) for g in prob.workload}
    t = 0.0
    min_cell = math.inf
    for g, m in mu.items():
        lo = float(m.min())
        min_cell = min(min_cell, lo)
        if lo < 0.0:
            neg = m[m < 0.0]
            # (1 − t) x + t u ≥ 0  ⇔  t ≥ −x / (u − x)   (u ≥ 0 > x)
            t = max(t, float(np.max(-neg / (uniform[g] - neg))))
    t = min(t, 1.0)
    if t == 0.0:
        return alpha, {g: m.copy() for g, m in mu.items()}, 0.0, min_cell
    new_alpha = {k: (1.0 - t) * v for k, v in alpha.items()}
    new_alpha[()] = new_alpha[()] + t * top
    out = {}
    for g, m in mu.items():
        x = (1.0 - t) * m + t * uniform[g]
        # ≥ 0 in exact arithmetic; what is left at the binding cells is rounding (a few ulp of the cell scale)
        tol = ROUNDING_TOL * max(1.0, float(np.abs(m).max()) + uniform[g])
        if float(x.min()) < -tol:  # refuse to hide a real violation
            raise AssertionError(f"GReM-LNN feasibility step left {x.min():.3g} in marginal {g}")
        np.maximum(x, 0.0, out=x)
        out[g] = x
    return new_alpha, out, t, min_cell


def grem_lnn(domain: Domain, workload: Sequence[Clique], measurements: Sequence[ResidualMeasurement], *,
             rounds: int = ROUNDS, step: float = STEP, lam0: float = LAM0, eta: float = ETA,
             weight_base: float = WEIGHT_BASE, weights: Literal["heuristic", "noise"] = "heuristic",
             time_limit: float | None = None, early_stopping: bool = True, neg_tol: float = 1.0,
             neg_after: int = 200, cs_tol: float = 0.01, cs_after: int = 400, check_every: int = 100,
             max_restarts: int = 5, callback: Callable[[int, float, float], bool | None] | None = None,
             accelerate: bool = True, rng: np.random.Generator | None = None) -> LNNResult:
    """GReM-LNN (Mullins et al., "Efficient and Private Marginal Reconstruction with Local Non-Negativity",
    NeurIPS 2024, Eq. 8/9, Alg. 6): non-negative, consistent workload marginals from residual measurements.

    Pure post-processing of the noisy ``measurements`` (``ResidualMeasurement``: ``tau``, ``values`` of length
    m_τ, ``sigma2``; several per τ allowed); never sees data. Solves F(α) → min s.t. μ_γ(α) ≥ 0 for γ ∈ 𝒲
    by projected dual ascent (module docstring: objective scaling, updates, stopping, divergence restarts,
    the final feasibility step), then returns every workload marginal with all cells ≥ 0.

    Parameters: ``rounds`` T (max iterations per run), ``step`` s > 0, ``lam0`` ≤ 0 (initial λ), ``eta`` > 0
    (weight of the regulariser on unmeasured residuals 𝒲↓\\S), ``weight_base`` > 0 (K_τ = base^{|τ|} D_τD_τᵀ)
    or ``weights="noise"`` (K_{τ,i} = σ²_{τ,i} D_τD_τᵀ), ``time_limit`` seconds (None: none),
    ``early_stopping`` (criteria (a)/(b) with ``neg_tol``/``neg_after``/``cs_tol``/``cs_after``, checked every
    ``check_every`` iterations), ``max_restarts`` after divergence, ``callback(iteration, dual_objective,
    negative_mass)`` every ``check_every`` iterations (return True to stop), ``accelerate`` (default True:
    the same projected dual step with FISTA momentum and adaptive restart; False: Alg. 6's plain ascent —
    module docstring, "Acceleration"). ``rng`` is accepted for a
    signature shared with the other reconstructions and is unused: the algorithm is deterministic.

    ``converged`` is True when an early-stopping criterion stopped the run, or — whatever stopped it (rounds,
    time limit, callback, ``early_stopping=False``) — both hold at the returned iterate: negative mass
    > −neg_tol and |λᵀμ| < cs_tol.

    Cost per round O(Σ_{γ∈𝒲} |γ| n_γ 2^{|γ|}) (Thm. 6e): Python loops over the (γ, τ ⊆ γ) pairs only, numpy over
    the cells; up to :data:`DENSE_MAX_CELLS` workload cells, one dense matrix-vector product instead. InputError on
    bad arguments, or if the run still diverges after ``max_restarts`` restarts.
    """
    del rng  # deterministic; see docstring
    rounds = _count("rounds", rounds)
    step = positive("step", step)
    lam0 = _nonpositive("lam0", lam0)
    eta = positive("eta", eta)
    weight_base = positive("weight_base", weight_base)
    if weights not in ("heuristic", "noise"):
        raise InputError(f"weights: expected 'heuristic' (K = weight_base^|τ| D_τD_τᵀ) or 'noise' "
                         f"(K = σ² D_τD_τᵀ), got {weights!r}")
    if time_limit is not None:
        time_limit = positive("time_limit", time_limit)
    neg_tol = positive("neg_tol", neg_tol)
    cs_tol = positive("cs_tol", cs_tol)
    neg_after = _count("neg_after", neg_after, 0)
    cs_after = _count("cs_after", cs_after, 0)
    check_every = _count("check_every", check_every)
    max_restarts = _count("max_restarts", max_restarts, 0)
    if callback is not None and not callable(callback):
        raise InputError(f"callback: expected a callable or None, got {callback!r}")

    wl = check_workload(domain, workload)
    closure = downward_closure(wl)
    prob = _Problem(domain, wl, _measurements(domain, set(closure), measurements, weights, weight_base), eta)

    started = time.perf_counter()
    if dense_rounds(prob.total_cells, sum(prob.m.values())):
        prob.dense()
    restarts = 0
    s = step
    if accelerate:
        # FISTA needs s ≤ 1/L (plain ascent only s < 2/L): cap the step at 0.9/L̂ (power iteration, from below)
        lip = _dual_lipschitz(prob)
        if lip > 0.0:
            s = min(s, 0.9 / lip)
    while True:
        run = _run(prob, rounds, s, lam0, started, time_limit, early_stopping, neg_tol, neg_after, cs_tol,
                   cs_after, check_every, callback, bool(accelerate))
        if run is not None:
            break
        restarts += 1
        if restarts > max_restarts:
            raise InputError(f"GReM-LNN diverged {restarts} times (last step {s:.3g}, started at {step:.3g}); "
                             "pass a smaller step")
        s /= RESTART_FACTOR

    alpha, mu, lam, it, reason, history, dual, neg, cs = run
    converged = reason in ("negative_mass", "complementary_slackness") or bool(neg > -neg_tol and abs(cs) < cs_tol)
    alpha, marginals, mix, min_cell = _feasible(prob, alpha, mu)
    for arrays in (alpha, marginals, lam):
        for a in arrays.values():
            a.flags.writeable = False
    return LNNResult(marginals=marginals, alpha=alpha, multipliers=lam, iterations=it, restarts=restarts, step=s,
                     converged=converged, stop_reason=reason, history=tuple(history),
                     objective=prob.objective(alpha), dual_objective=dual, negative_mass=neg,
                     complementary_slackness=cs, feasibility_mix=mix, min_cell_before=min_cell,
                     weights=("noise (σ²_τ D_τD_τᵀ)" if weights == "noise" else f"{weight_base:g}^|τ| D_τD_τᵀ"),
                     elapsed=time.perf_counter() - started,
                     solver=SOLVER_ACCELERATED if accelerate else SOLVER_PLAIN)


def _dual_lipschitz(prob: _Problem, iterations: int = 20) -> float:
    """Estimate L = ‖∇²g‖, the Lipschitz constant of ∇g(λ) = μ(α*(λ)) (power iteration on the linear map
    λ ↦ μ(α*(0)) − μ(α*(λ)); ``iterations`` passes of one round's cost, from a fixed start vector)."""
    mu0 = np.empty(prob.total_cells)
    prob.mu_into(np.zeros(prob.total_cells), mu0)
    x = np.cos(np.arange(prob.total_cells) * 0.7) + 1.5          # deterministic, not orthogonal to the top vector
    x /= np.linalg.norm(x)
    est = 0.0
    y = np.empty(prob.total_cells)
    for _ in range(iterations):
        prob.mu_into(x, y)
        np.subtract(mu0, y, out=y)
        est = float(np.linalg.norm(y))
        if not (math.isfinite(est) and est > 0.0):
            return 0.0
        x = y / est
    return est


def _run(prob: _Problem, rounds: int, s: float, lam0: float, started: float, time_limit: float | None,
         early_stopping: bool, neg_tol: float, neg_after: int, cs_tol: float, cs_after: int, check_every: int,
         callback, accelerate: bool):
    """One dual-ascent run; None if it diverged (non-finite μ or dual objective).

    Plain (Alg. 6): λ ← min(λ + s μ(λ), 0). Accelerated: the same projected step taken from an extrapolated
    point y (FISTA, Beck & Teboulle 2009), y ← λ_new + ((t_k − 1)/t_{k+1})(λ_new − λ), with the momentum reset
    whenever (y − λ_new)ᵀ(λ_new − λ) > 0, i.e. the ascent step at y opposes the last move (O'Donoghue &
    Candès 2015, gradient-mapping restart). The checks, the history and the returned point always use λ.
    """
    lam_flat = np.full(prob.total_cells, lam0)
    y_flat = lam_flat.copy() if accelerate else lam_flat
    new_flat = np.empty(prob.total_cells)
    mu_flat = np.empty(prob.total_cells)
    lam = prob.views(lam_flat)
    t_k = 1.0
    history: list[tuple[int, float, float]] = []
    reason = "rounds"
    with np.errstate(over="ignore", invalid="ignore"):
        for it in range(1, rounds + 1):
            prob.mu_into(y_flat, mu_flat)
            if not math.isfinite(float(mu_flat.sum())):
                return None
            last = it == rounds
            timed_out = time_limit is not None and time.perf_counter() - started >= time_limit
            if it % check_every == 0 or last or timed_out:
                if accelerate:  # the iterate is λ, not the extrapolated y
                    prob.mu_into(lam_flat, mu_at_lam := np.empty(prob.total_cells))
                else:
                    mu_at_lam = mu_flat
                alpha, mu = prob.alpha_of(lam_flat), prob.views(mu_at_lam)
                neg = float(np.minimum(mu_at_lam, 0.0).sum())
                cs = float(lam_flat @ mu_at_lam)
                dual = prob.objective(alpha) + cs
                if not math.isfinite(dual):
                    return None
                if it % check_every == 0:
                    history.append((it, dual, neg))
                    if callback is not None and callback(it, dual, neg) is True:
                        reason = "callback"
                        break
                    if early_stopping and it > neg_after and neg > -neg_tol:
                        reason = "negative_mass"
                        break
                    if early_stopping and it > cs_after and abs(cs) < cs_tol:
                        reason = "complementary_slackness"
                        break
                if timed_out:
                    reason = "time_limit"
                    break
                if last:
                    break
            # projected dual ascent step from y (= λ without acceleration): λ_new = min(y + s μ(y), 0)
            np.multiply(mu_flat, s, out=new_flat)
            new_flat += y_flat
            np.minimum(new_flat, 0.0, out=new_flat)
            if accelerate:
                t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t_k * t_k))
                move = new_flat - lam_flat
                if float((y_flat - new_flat) @ move) > 0.0:   # gradient-mapping restart (ascent form)
                    t_next = 1.0
                    y_flat[:] = new_flat
                else:
                    np.multiply(move, (t_k - 1.0) / t_next, out=y_flat)
                    y_flat += new_flat
                t_k = t_next
            lam_flat[:] = new_flat
    return alpha, mu, lam, it, reason, history, dual, neg, cs
