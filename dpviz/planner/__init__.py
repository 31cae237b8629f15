"""dpviz.planner: accuracy-first budget planning — state the error you need, get the smallest budget.

* :mod:`~dpviz.planner.curves` — :class:`Plan`, :func:`plan_target` (the smallest ε, ρ or (ε, δ) per mechanism),
  :func:`best_by_epsilon`; the curves themselves are :class:`dpviz.core.curves.Curve` (analytic: MSE = a/ε² or a/ρ)
  and :class:`dpviz.core.curves.MonteCarloCurve` (tabulated), built by each capability's ``plan_curves`` hook
  (``dpviz/<cap>/hooks.py``: the capability's own variances, or its own Monte-Carlo);
* :mod:`~dpviz.planner.montecarlo` — Monte-Carlo dots next to the analytic lines (the capability's simulation,
  through its hooks module's ``plan_dots``) and their cost;
* :mod:`~dpviz.planner.split` — :func:`split_budget` (the split of one total that minimises the weighted
  total error: closed form ε_i ∝ (w_i a_i)^{1/3} or ρ_i ∝ √(w_i a_i), numeric otherwise) and :func:`what_if`;
* :mod:`~dpviz.planner.specs` — settings (CLI, releases JSON, page) → curves, through the registry's hooks;
* :mod:`~dpviz.planner.cli` — ``python -m dpviz plan CAPABILITY|split``, one verb per registered capability.

Planning uses only the structure (tree shape, horizon, domain and workload) and the noise, never the
counts: a plan is public. Monte-Carlo plans (a capability with no closed form) simulate releases of the
true data and are for planning only (like every simulation). Import the submodules (this package imports
nothing itself, so ``python -m dpviz --help``, which builds the ``plan`` parser, stays light).
"""
