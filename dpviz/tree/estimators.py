"""Post-processing of a tree measurement as :class:`dpviz.core.protocols.Estimator` objects.

Each estimator is built from the public hierarchy only and sees a
:class:`~dpviz.core.protocols.LinearMeasurement` (noisy node counts ṽ and their scales); ``fit``
returns an :class:`~dpviz.core.protocols.Estimate`: the post-processed node vector (DOH order)
and its analytic per-node variance, computed from the noise variances d_i alone (never from data):

* :class:`GMC` — the optimally consistent release v̄ = ṽ − D M (Mᵀ D M)⁻¹ Mᵀ ṽ by Alg. 2 of Yang et
  al., "Generation Matrix: An Embeddable Matrix Representation for Hierarchical Trees" (Eq. 36, or
  the square-root-free Eq. 39). Variance: :func:`dpviz.tree.gmc.output_variance` (Theorem 5, Eq. 28
  for equal variances — Σ Var(v̄_i) = m σ² — and its weighted form for a non-uniform split).
* :class:`Lee` — the same projection by the closed form of Lee, Wang & Kifer, "Maximum Likelihood
  Postprocessing for Differential Privacy under Consistency Constraints", KDD 2015 (Eq. 8 of the
  GMC paper). Same variance as GMC (it is the same estimator).
* :class:`PrivTrie` — the same projection by the recursive passes of Wang et al., "PrivTrie:
  Effective Frequent Term Discovery under Local Differential Privacy", ICDE 2018 (following Hay et
  al.'s general form). Same variance as GMC.
* :class:`Boosting` — Hay, Rastogi, Miklau & Suciu, "Boosting the Accuracy of Differentially
  Private Histograms Through Consistency", VLDB 2010, Theorem 3, with k = the root's fan-out. It is
  the least-squares estimator only on complete k-ary trees with equal noise; in general it has no
  closed-form variance here: the variance is NaN (the simulation measures its error instead).
* :class:`Processless` — ṽ itself; its variance is the noise variance d_i (Eq. 27).

Every estimator also splits ``fit`` in its two halves: ``values(measurement)`` (the post-processed vector)
and ``variance(d)`` (its analytic variance from the noise variances d alone, known before any noise is
drawn): a release computes each once, the variance beside the noise draw (:func:`dpviz.tree.release.release`).

GMC's stage 1 (:class:`~dpviz.tree.gmc.GMCPlan`) depends on the relative noise variances. A plan
passed in must match the measurement's variances up to one common factor (GLS is scale-free), or
``fit`` raises InputError: a plan built for another split or another tree would give a wrong answer
with no error (it is still "consistent", just not optimal and not what its variance says).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dpviz.core.protocols import Estimate, Estimator, LinearMeasurement
from dpviz.errors import InputError
from dpviz.tree import baselines
from dpviz.tree.gmc import Form, GMCPlan, gmc, plan
from dpviz.tree.model import Tree

__all__ = ["GMC", "Lee", "PrivTrie", "Boosting", "Processless", "METHODS", "METHOD_LABELS", "GLS_METHODS",
           "estimator", "check_plan", "plan_for", "gls_variance", "timed_fit"]

PLAN_RTOL = 1e-9


def _variances(tree: Tree, m: LinearMeasurement) -> np.ndarray:
    values = np.asarray(m.values)
    if values.shape != (tree.n,):
        raise InputError(f"measurement: expected {tree.n} node values for this tree, got shape {values.shape}")
    return _checked(tree, m.variance)


def _checked(tree: Tree, variances: np.ndarray) -> np.ndarray:
    """The per-node noise variances d_i as floats, or InputError (one per node, positive and finite)."""
    d = np.asarray(variances, dtype=float)
    if d.shape != (tree.n,):
        raise InputError(f"noise variances: expected {tree.n} for this tree, got shape {d.shape}")
    if not (np.all(np.isfinite(d)) and np.all(d > 0)):
        raise InputError("measurement: every node needs a positive finite noise variance")
    return d


def _is_uniform(d: np.ndarray) -> bool:
    return bool(np.all(d == d[0]))


def plan_for(tree: Tree, d: np.ndarray) -> GMCPlan:
    """Stage 1 for noise variances ``d``: the paper's unweighted plan when they are all equal."""
    return plan(tree, None if _is_uniform(d) else d)


def check_plan(p: GMCPlan, tree: Tree, d: np.ndarray) -> float:
    """The factor c with d = c · (the plan's variances), or InputError if ``p`` was built for another
    tree or another relative variance profile (e.g. another budget split)."""
    if p.tree is not tree and (p.tree.n != tree.n or not np.array_equal(p.tree.parent, tree.parent)):
        raise InputError(f"GMC plan: built for another tree ({p.tree.n:,} nodes) than this measurement's "
                         f"({tree.n:,} nodes)")
    ref = p.d
    if ref is None:  # uniform plan: the same test as allclose(d, c), without n-sized temporaries
        c = float(d[0])
        if max(float(d.max()) - c, c - float(d.min())) <= PLAN_RTOL * abs(c):
            return c
        ref = np.ones(tree.n)
    c = float(d[0] / ref[0])
    if not np.allclose(d, c * ref, rtol=PLAN_RTOL, atol=0.0):
        worst = int(np.argmax(np.abs(d / (c * ref) - 1.0)))
        raise InputError(
            "GMC plan: its weights do not match the measurement's noise variances (a plan built for "
            f"another budget split or noise?): node {worst} has variance {d[worst]:.6g}, the plan expects "
            f"{c * ref[worst]:.6g}; build the plan with dpviz.tree.estimators.plan_for(tree, variances) "
            "or pass none")
    return c


def gls_variance(tree: Tree, d: np.ndarray, p: GMCPlan | None = None) -> np.ndarray:
    """Per-node variance of the optimally consistent (GLS) release for noise variances ``d``:
    c · output_variance(plan), c the plan's scale factor (Theorem 5 and its weighted form)."""
    p = plan_for(tree, d) if p is None else p
    return check_plan(p, tree, d) * p.variance


@dataclass(frozen=True, eq=False)
class GMC:
    """GMC (Alg. 2): ``form`` 'sqrt' = Eq. 36, 'nosqrt' = Eq. 39. ``plan``: a cached stage 1."""

    tree: Tree
    form: Form = "sqrt"
    plan: GMCPlan | None = None

    @property
    def name(self) -> str:
        return "gmc" if self.form == "sqrt" else "gmc-nosqrt"

    def _plan(self, d: np.ndarray) -> tuple[GMCPlan, float]:
        p = plan_for(self.tree, d) if self.plan is None else self.plan
        return p, check_plan(p, self.tree, d)

    def values(self, measurement: LinearMeasurement) -> np.ndarray:
        """v̄ = ṽ − D M (Mᵀ D M)⁻¹ Mᵀ ṽ (Eq. 36 or 39), without its variance."""
        p, _ = self._plan(_variances(self.tree, measurement))
        return gmc(p, np.asarray(measurement.values, dtype=float), form=self.form)

    def variance(self, d: np.ndarray) -> np.ndarray:
        """Var(v̄_i) for noise variances d: c · output_variance(plan) (Theorem 5, Eq. 28 and its weighted form)."""
        p, c = self._plan(_checked(self.tree, d))
        return c * p.variance

    def fit(self, measurement: LinearMeasurement) -> Estimate:
        d = _variances(self.tree, measurement)
        p, c = self._plan(d)
        values = gmc(p, np.asarray(measurement.values, dtype=float), form=self.form)
        return Estimate(self.name, values, c * p.variance)


@dataclass(frozen=True, eq=False)
class Lee:
    """Lee, Wang & Kifer (KDD 2015) closed form (dense up to ``baselines.DENSE_LIMIT`` nodes, sparse
    direct solve above); weighted by d for a non-uniform split."""

    tree: Tree
    plan: GMCPlan | None = None
    name: str = field(default="lee", init=False)

    def values(self, measurement: LinearMeasurement) -> np.ndarray:
        d = _variances(self.tree, measurement)
        return baselines.lee_closed_form(self.tree, np.asarray(measurement.values, dtype=float),
                                         None if _is_uniform(d) else d)

    def variance(self, d: np.ndarray) -> np.ndarray:
        """The GLS variance (the same estimator as GMC): :func:`gls_variance`."""
        return gls_variance(self.tree, _checked(self.tree, d), self.plan)

    def fit(self, measurement: LinearMeasurement) -> Estimate:
        return Estimate(self.name, self.values(measurement), self.variance(_variances(self.tree, measurement)))


@dataclass(frozen=True, eq=False)
class PrivTrie:
    """PrivTrie-style recursion (Wang et al., ICDE 2018): exact GLS, weighted by d."""

    tree: Tree
    plan: GMCPlan | None = None
    name: str = field(default="privtrie", init=False)

    def values(self, measurement: LinearMeasurement) -> np.ndarray:
        d = _variances(self.tree, measurement)
        return baselines.privtrie(self.tree, np.asarray(measurement.values, dtype=float), None if _is_uniform(d) else d)

    def variance(self, d: np.ndarray) -> np.ndarray:
        """The GLS variance (the same estimator as GMC): :func:`gls_variance`."""
        return gls_variance(self.tree, _checked(self.tree, d), self.plan)

    def fit(self, measurement: LinearMeasurement) -> Estimate:
        return Estimate(self.name, self.values(measurement), self.variance(_variances(self.tree, measurement)))


@dataclass(frozen=True, eq=False)
class Boosting:
    """Hay et al. (VLDB 2010) Boosting, k = root fan-out; assumes equal noise on all nodes (ignores d).
    No closed-form variance on general trees: ``variance`` is NaN."""

    tree: Tree
    name: str = field(default="boosting", init=False)

    def values(self, measurement: LinearMeasurement) -> np.ndarray:
        _variances(self.tree, measurement)
        return baselines.boosting(self.tree, np.asarray(measurement.values, dtype=float))

    def variance(self, d: np.ndarray) -> np.ndarray:
        """NaN on every node: no closed form on general trees."""
        _checked(self.tree, d)
        return np.full(self.tree.n, np.nan)

    def fit(self, measurement: LinearMeasurement) -> Estimate:
        return Estimate(self.name, self.values(measurement), np.full(self.tree.n, np.nan))


@dataclass(frozen=True, eq=False)
class Processless:
    """No post-processing: the noisy counts, with the noise variances (Eq. 27)."""

    tree: Tree
    name: str = field(default="processless", init=False)

    def values(self, measurement: LinearMeasurement) -> np.ndarray:
        _variances(self.tree, measurement)
        return np.array(measurement.values, dtype=float, copy=True)

    def variance(self, d: np.ndarray) -> np.ndarray:
        """The noise variances themselves (Eq. 27)."""
        return _checked(self.tree, d).copy()

    def fit(self, measurement: LinearMeasurement) -> Estimate:
        d = _variances(self.tree, measurement)
        return Estimate(self.name, np.array(measurement.values, dtype=float, copy=True), d.copy())


METHODS: dict[str, Callable[[Tree, GMCPlan | None], Estimator]] = {
    "gmc": lambda t, p: GMC(t, "sqrt", p),
    "gmc-nosqrt": lambda t, p: GMC(t, "nosqrt", p),
    "boosting": lambda t, p: Boosting(t),
    "privtrie": lambda t, p: PrivTrie(t, p),
    "lee": lambda t, p: Lee(t, p),
    "processless": lambda t, p: Processless(t),
}
METHOD_LABELS = {
    "gmc": "GMC (Alg. 2, Eq. 36)",
    "gmc-nosqrt": "GMC square-root-free (Eq. 39)",
    "boosting": "Boosting (Hay et al. 2010)",
    "privtrie": "PrivTrie-style recursion",
    "lee": "Lee-Wang-Kifer closed form (Eq. 8)",
    "processless": "Processless",
}
GLS_METHODS = ("gmc", "gmc-nosqrt", "lee", "privtrie")


def estimator(method: str, tree: Tree, plan: GMCPlan | None = None) -> Estimator:
    """The estimator called ``method`` for ``tree`` (``plan``: an optional cached GMC stage 1)."""
    if method not in METHODS:
        raise InputError(f"method: unknown {method!r}; choose one of {', '.join(METHODS)}")
    return METHODS[method](tree, plan)


def timed_fit(est: Estimator, measurement: LinearMeasurement) -> tuple[Estimate, float]:
    """``est.fit(measurement)`` and its wall time in seconds."""
    t0 = time.perf_counter()
    out = est.fit(measurement)
    return out, time.perf_counter() - t0
