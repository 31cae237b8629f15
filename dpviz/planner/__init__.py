"""dpviz.planner: accuracy-first budget planning — state the error you need, get the smallest budget.

* :mod:`~dpviz.planner.curves` — :class:`Curve` (analytic: MSE = a/ε² or a/ρ), :class:`MonteCarloCurve`
  (tabulated), :func:`plan_target` (the smallest ε, ρ or (ε, δ) per mechanism), :func:`best_by_epsilon`;
* :mod:`~dpviz.planner.analytic` — the curves of every analytic capability, read off the variances it
  exposes: :func:`tree_curves` (GMC, Theorem 5; node or range queries), :func:`stream_curves`
  (per-step variances: max or mean), :func:`marginals_curves` (ResidualPlanner closed form);
* :mod:`~dpviz.planner.montecarlo` — Monte-Carlo dots from :mod:`dpviz.sweep` and :func:`graph_plan`
  (bisection over ε for any graph metric);
* :mod:`~dpviz.planner.split` — :func:`split_budget` (the split of one total that minimises the weighted
  total error: closed form ε_i ∝ (w_i a_i)^{1/3} or ρ_i ∝ √(w_i a_i), numeric otherwise) and :func:`what_if`;
* :mod:`~dpviz.planner.specs` — settings (CLI, releases JSON, page) → curves;
* :mod:`~dpviz.planner.cli` — ``python -m dpviz plan tree|stream|marginals|graph|split``.

Planning uses only the structure (tree shape, horizon, domain and workload) and the noise, never the
counts: a plan is public. The graph's Monte-Carlo plans simulate releases of the true graph and are for
planning only (like every simulation). Import the submodules (this package imports nothing itself, so
``python -m dpviz --help``, which builds the ``plan`` parser, stays light).
"""
