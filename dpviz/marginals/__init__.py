"""Marginal tables of categorical data, built on :mod:`dpviz.core`.

Measurements: ResidualPlanner (Xiao, He, Toksoz, Ding, Zhang, Kifer, "An Optimal and Scalable Matrix
Mechanism for Noisy Marginals under Convex Loss Functions", NeurIPS 2023) and isotropic marginal
measurements. Reconstruction: ReM, GReM-MLE, EMP and GReM-LNN (Mullins, Fuentes, Xiao, Kifer, Musco,
Sheldon, "Efficient and Private Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024).

Layout (the same in every capability, ``docs/ARCHITECTURE.md``):

* :mod:`~dpviz.marginals.model` — ``Domain``, ``Dataset``, cliques and workloads;
* :mod:`~dpviz.marginals.io` / :mod:`~dpviz.marginals.samples` — reading CSVs, workloads, MEAS.json; the
  bundled samples;
* :mod:`~dpviz.marginals.strategy` — what is measured and its sensitivity (``MarginalQueries``, a core
  ``Strategy``; ResidualPlanner's σ_τ; the ρ-zCDP exponential mechanism); all noise through
  :func:`dpviz.core.protocols.measure` and :mod:`dpviz.core.exponential`;
* :mod:`~dpviz.marginals.estimators` — ReM, GReM-MLE, EMP, Trunc(+Rescale) with analytic variance, and the
  MEAS.json ``reconstruct``;
* :mod:`~dpviz.marginals.release` — ``release(data, noise, *, rng=None, workload=..., mechanism=..., **options)
  -> MarginalsRelease`` and ``simulate(data, noise, methods, rng, workload=..., **options) -> Simulation``;
* :mod:`~dpviz.marginals.metrics` (workload errors), :mod:`~dpviz.marginals.cli`,
  :mod:`~dpviz.marginals.hooks` (tool entries);
* paper modules: :mod:`~dpviz.marginals.residuals` (the residual basis), :mod:`~dpviz.marginals.mwem`
  (Scalable MWEM), :mod:`~dpviz.marginals.lnn` (GReM-LNN); :mod:`~dpviz.marginals.declared` (declared public
  domains) and :mod:`~dpviz.marginals.cost` (the page's estimate of a simulation's seconds).

Unit of privacy: one record (add or remove one row).
"""
