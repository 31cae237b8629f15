"""Audit targets: a neighbouring pair, a release function and default events for every capability.

Every target is a **simulation**: the release function draws its noise from the seeded
``numpy.random.Generator`` the auditor passes in (the same discrete samplers a release uses, but
reproducible), so an audit is repeatable and never a private release. The inputs are tiny so that
one trial costs well under a millisecond (tree, stream, marginals) or a few (graph).

* **tree** — a 7-node binary hierarchy and the same hierarchy with one more person in one leaf
  (the unit of privacy of :mod:`dpviz.tree`): :func:`dpviz.tree.release.release` with discrete
  Laplace noise and one post-processing method. Events: the released count of that leaf exceeds τ;
  the sum of the noisy counts on the leaf's root path exceeds τ (every count on it moves by 1).
* **stream** — an 8-step count stream and the same stream with one more event at one step (event
  level): :func:`dpviz.stream.private_release.release` with one mechanism. Events: the released
  running total at that step, and at the last step, exceeds τ.
* **marginals** — a 12-record data set on a 2 × 3 domain and the same data plus one record:
  :func:`dpviz.marginals.measure.measure_marginal` of the 2-way marginal with discrete Gaussian noise
  at the ρ that the CKS conversion allows for the claimed (ε, δ) (:func:`dpviz.core.accounting.zcdp_rho`).
  Event: the noisy count of the new record's cell exceeds τ.
* **graph** — a small sparse graph G (40 nodes, 8 edges) and G plus one edge {u, v} (edge-level DP):
  :func:`dpviz.graph.release` with the chosen method. Events: "{u, v} appears in the released edge
  list" (boolean), and "the number of released edges at u or v exceeds τ". On this pair ``drf-dp``
  must come out consistent with its ε and the published ``drf`` (not edge-DP: it places true edges,
  Step 4) violating it.

:func:`run` audits a target with :func:`dpviz.audit.auditor.audit`; :data:`TARGETS` maps the
capability name to its factory (the CLI and the pages use both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpviz.audit.auditor import AUDIT_NOTICE, AuditResult, Event, Progress, audit, boolean_event, threshold_event
from dpviz.core.accounting import positive, probability
from dpviz.errors import InputError

__all__ = ["AuditTarget", "tree_target", "stream_target", "marginals_target", "graph_target", "TARGETS", "run",
           "GRAPH_NODES", "GRAPH_EDGES", "GRAPH_ADDED", "TRIAL_BYTES", "check_audit"]

TRIAL_BYTES = 64
"""Peak memory per trial and event of an audit: the feature of each input (2 × 8 bytes) and the threshold
fit's pooled, sorted and unique copies, rounded up."""


@dataclass(frozen=True)
class AuditTarget:
    """A neighbouring pair (``D0``, ``D1``), the release ``release_fn(D, rng)`` and the events to try,
    with the privacy claim (``epsilon``, ``delta``) of the mechanism as configured."""

    capability: str
    mechanism: str
    neighbours: str
    D0: Any
    D1: Any
    release_fn: Callable[[Any, np.random.Generator], Any]
    events: tuple[Event, ...]
    epsilon: float
    delta: float = 0.0
    notice: str = AUDIT_NOTICE

    @property
    def title(self) -> str:
        claim = f"ε = {self.epsilon:g}" + (f", δ = {self.delta:g}" if self.delta else "")
        return f"audit {self.capability} — {self.mechanism} at {claim}; neighbours: {self.neighbours}"


def run(target: AuditTarget, *, trials: int, rng: np.random.Generator, progress: Progress | None = None,
        alpha: float = 0.05) -> AuditResult:
    """Audit ``target`` with ``trials`` releases on each input (:func:`dpviz.audit.auditor.audit`)."""
    if not isinstance(target, AuditTarget):
        raise InputError(f"target: expected an AuditTarget, got {type(target).__name__}")
    return audit(target.release_fn, target.D0, target.D1, trials=trials, event=target.events, rng=rng,
                 progress=progress, alpha=alpha, epsilon=target.epsilon, delta=target.delta)


def check_audit(target: AuditTarget, trials: object, *, max_seconds: float, raise_with: str = "--max-seconds S",
                calls: int = 3) -> int:
    """``trials`` as an int if an audit of ``target`` with that many releases on each input fits: its memory
    (:data:`TRIAL_BYTES` per trial and event) in what is available, and its time — ``2 × trials`` releases at
    the median time of ``calls`` timed releases (on a generator of their own: the audit's seed is untouched)
    — within ``max_seconds``. InputError (one line) otherwise, before any of the audit runs."""
    from dpviz.core.limits import check_work, seconds_per_call

    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"--trials: expected a positive integer, got {trials!r}")
    n = int(trials)
    what = f"an audit with --trials {n:,} ({2 * n:,} releases)"
    check_work(what, memory=float(n) * len(target.events) * TRIAL_BYTES, cheaper="lower --trials")
    rng = np.random.default_rng(0)
    per = seconds_per_call(lambda: target.release_fn(target.D0, rng), calls=calls)
    check_work(what, seconds=2.0 * n * per, max_seconds=max_seconds, raise_with=raise_with, cheaper="lower --trials")
    return n


# --------------------------------------------------------------------------------------------- tree


def tree_target(epsilon: float = 1.0, *, method: str = "gmc", split: str = "uniform", leaf: int = 0) -> AuditTarget:
    """Tree: root → 2 → 4 leaves (x = 3, 1, 4, 2) and the same with one more person in leaf ``leaf``."""
    from dpviz.core.noise import Noise
    from dpviz.tree.io import TreeData
    from dpviz.tree.model import tree_from_parents
    from dpviz.tree.release import METHODS, release
    from dpviz.tree.strategy import check_split

    epsilon = positive("epsilon", epsilon)
    if method not in METHODS:
        raise InputError(f"--method: unknown tree method {method!r}; expected one of {', '.join(METHODS)}")
    split = check_split(split)
    tree = tree_from_parents(np.array([-1, 0, 0, 1, 1, 2, 2]))
    x0 = np.array([3.0, 1.0, 4.0, 2.0])
    if isinstance(leaf, bool) or leaf not in range(tree.m):
        raise InputError(f"leaf: expected 0..{tree.m - 1}, got {leaf!r}")
    x1 = x0.copy()
    x1[leaf] += 1.0
    node = tree.n1 + leaf  # leaves sit after the internal nodes in DOH order (BuildTree, Eq. 25)
    path = [node]
    while tree.parent[path[-1]] >= 0:  # the root path: h nodes (h = 3 here)
        path.append(int(tree.parent[path[-1]]))
    path_idx = np.asarray(path)
    noise = Noise.laplace(epsilon, discrete=True)

    def release_fn(data: Any, rng: np.random.Generator) -> Any:
        return release(data, noise, split=split, method=method, rng=rng)

    return AuditTarget(
        capability="tree", mechanism=f"{method} ({split} split, discrete Laplace)",
        neighbours=f"one more person in leaf {leaf}",
        D0=TreeData(tree, x0, "audit tree"), D1=TreeData(tree, x1, "audit tree + 1"), release_fn=release_fn,
        events=(threshold_event(f"released count of leaf {leaf}", lambda r: r.released[node]),
                threshold_event(f"sum of the noisy counts on leaf {leaf}'s root path",
                                lambda r: float(r.noisy[path_idx].sum()))),
        epsilon=epsilon)


# --------------------------------------------------------------------------------------------- stream


def stream_target(epsilon: float = 1.0, *, mechanism: str = "fenwick-fda", step: int = 2,
                  delta: float = 1e-6) -> AuditTarget:
    """Stream: counts 1 0 2 1 0 3 1 2 and the same with one more event at ``step`` (0-based).
    Discrete Laplace at ε; ``sqrt`` (Gaussian only) runs its lattice release at the ρ of (ε, ``delta``)."""
    from dpviz.core.noise import Noise
    from dpviz.stream.private_release import check_release, release

    epsilon = positive("epsilon", epsilon)
    gaussian = mechanism == "sqrt"  # a real factorisation: discrete Gaussian on 2^-k Z (dpviz.stream.lattice)
    delta = probability("delta", delta) if gaussian else 0.0
    noise = Noise.gaussian_approx(epsilon, delta, discrete=True) if gaussian else Noise.laplace(epsilon, discrete=True)
    check_release(mechanism, noise)
    s0 = np.array([1, 0, 2, 1, 0, 3, 1, 2], dtype=np.int64)
    if isinstance(step, bool) or step not in range(s0.size):
        raise InputError(f"step: expected 0..{s0.size - 1}, got {step!r}")
    s1 = s0.copy()
    s1[step] += 1

    def release_fn(series: Any, rng: np.random.Generator) -> Any:
        return release(series, mechanism, noise, rng=rng)

    return AuditTarget(
        capability="stream", mechanism=f"{mechanism} (discrete {'Gaussian on 2^-k Z' if gaussian else 'Laplace'})",
        neighbours=f"one more event at step {step + 1}", D0=s0, D1=s1, release_fn=release_fn,
        events=(threshold_event(f"released total at step {step + 1}", lambda r: float(r.prefix_sums[step])),
                threshold_event(f"released total at step {s0.size}", lambda r: float(r.prefix_sums[-1]))),
        epsilon=epsilon, delta=delta)


# --------------------------------------------------------------------------------------------- marginals


def marginals_target(epsilon: float = 1.0, delta: float = 1e-6) -> AuditTarget:
    """Marginals: 12 records on a 2 × 3 domain and the same plus one record (0, 1); the 2-way marginal
    with discrete Gaussian noise, σ = 1/√(2ρ), ρ = CKS ρ for (ε, δ) (L2 sensitivity 1)."""
    from dpviz.core.accounting import zcdp_rho
    from dpviz.marginals.domain import Dataset, Domain
    from dpviz.marginals.measure import measure_marginal

    epsilon = positive("epsilon", epsilon)
    delta = probability("delta", delta)
    sigma = float(1.0 / np.sqrt(2.0 * zcdp_rho(epsilon, delta)))
    domain = Domain(("a", "b"), (2, 3))
    codes = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [0, 0], [1, 1], [1, 2], [0, 2], [1, 0], [1, 2]])
    added = (0, 1)
    cell = added[0] * 3 + added[1]  # row-major in attribute order (Dataset.marginal)
    d0 = Dataset(domain, codes, name="audit records")
    d1 = Dataset(domain, np.vstack([codes, added]), name="audit records + 1")

    def release_fn(data: Any, rng: np.random.Generator) -> Any:
        return measure_marginal(data, (0, 1), sigma, rng, discrete=True)

    return AuditTarget(
        capability="marginals", mechanism=f"a×b marginal, discrete Gaussian σ = {sigma:.3g}",
        neighbours="one more record (a=0, b=1)", D0=d0, D1=d1, release_fn=release_fn,
        events=(threshold_event("noisy count of cell (a=0, b=1)", lambda m: float(m.values[cell])),),
        epsilon=epsilon, delta=delta)


# --------------------------------------------------------------------------------------------- graph

GRAPH_NODES = 40
"""The default audit graph: 40 nodes, 8 edges (a 4-cycle, a path, two single edges), most nodes isolated."""
GRAPH_EDGES = np.array([[0, 1], [1, 2], [2, 3], [0, 3], [4, 5], [5, 6], [8, 9], [10, 11]], dtype=np.int64)
GRAPH_ADDED = (20, 35)
"""The edge that D1 adds: between two isolated nodes, the sparse case where a true edge stands out."""


def graph_target(method: str = "drf-dp", epsilon: float = 1.0, *, edges: np.ndarray | None = None,
                 n_nodes: int | None = None, added: tuple[int, int] | None = None, **options: Any) -> AuditTarget:
    """Graph: G and G + {u, v}, released by ``dpviz.graph.release(edges, n, ε, method=..., rng=...)``.

    Defaults: :data:`GRAPH_EDGES` on :data:`GRAPH_NODES` nodes plus :data:`GRAPH_ADDED`. ``options`` go
    to the method (e.g. a budget split). The claim audited is ε for every method, including the
    published ``drf``, whose paper claims ε-DP (the audit shows it is not edge-DP).
    """
    from dpviz.graph import METHODS, release

    if method not in METHODS:
        raise InputError(f"--method: unknown graph method {method!r}; expected one of {', '.join(METHODS)}")
    epsilon = positive("epsilon", epsilon)
    g_edges = GRAPH_EDGES if edges is None else np.asarray(edges)
    n = GRAPH_NODES if n_nodes is None else n_nodes
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"n_nodes: expected an integer >= 2, got {n!r}")
    u, v = sorted(GRAPH_ADDED if added is None else (int(added[0]), int(added[1])))
    if not (0 <= u < v < n):
        raise InputError(f"added edge: expected two distinct node ids in 0..{n - 1}, got {added!r}")
    if g_edges.ndim != 2 or g_edges.shape[1] != 2:
        raise InputError(f"edges: expected an integer array of shape (m, 2), got shape {g_edges.shape}")
    g_edges = g_edges.astype(np.int64)
    lo, hi = np.minimum(g_edges[:, 0], g_edges[:, 1]), np.maximum(g_edges[:, 0], g_edges[:, 1])
    if np.any((lo == u) & (hi == v)):
        raise InputError(f"added edge: {{{u}, {v}}} is already in G; neighbours must differ in one edge")
    e1 = np.vstack([g_edges, [[u, v]]])

    def release_fn(e: np.ndarray, rng: np.random.Generator) -> Any:
        return release(e, n, epsilon, method=method, rng=rng, **options)

    def has_edge(r: Any) -> bool:
        out = r.edges
        return bool(np.any((out[:, 0] == u) & (out[:, 1] == v)))

    def incident(r: Any) -> float:
        out = r.edges
        return float(np.count_nonzero((out == u).any(axis=1) | (out == v).any(axis=1)))

    return AuditTarget(
        capability="graph", mechanism=method + (" (published; not edge-DP)" if method == "drf" else ""),
        neighbours=f"G ({n} nodes, {len(g_edges)} edges) and G + {{{u}, {v}}}", D0=g_edges, D1=e1,
        release_fn=release_fn,
        events=(boolean_event(f"edge {{{u}, {v}}} appears in the output", has_edge),
                threshold_event(f"released edges at node {u} or {v}", incident)),
        epsilon=epsilon)


TARGETS: dict[str, Callable[..., AuditTarget]] = {
    "tree": tree_target,
    "stream": stream_target,
    "marginals": marginals_target,
    "graph": graph_target,
}
"""Capability name → target factory."""
