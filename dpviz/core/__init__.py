"""dpviz.core: the one privacy vocabulary every capability uses.

* :mod:`~dpviz.core.budget` — :class:`Budget` (ε, (ε, δ), ρ) and :func:`compose`;
* :mod:`~dpviz.core.accounting` — exact conversions: :func:`gaussian_rho`, :func:`gaussian_delta`
  (exact Gaussian privacy profile), :func:`zcdp_epsilon`, :func:`zcdp_rho` (Canonne–Kamath–Steinke);
* :mod:`~dpviz.core.noise` — :class:`Noise` (family, discrete or continuous, budget → scale, variance);
* :mod:`~dpviz.core.samplers` — :func:`discrete_laplace`, :func:`discrete_gaussian` (OS CSPRNG);
* :mod:`~dpviz.core.modes` — simulate vs release (notices, seeds, output names);
* :mod:`~dpviz.core.release` — :class:`Release` (what every capability's ``release`` returns), :class:`BudgetSplit`, the one ``release_metadata``;
* :mod:`~dpviz.core.protocols` — :class:`LinearMeasurement`, :class:`Strategy`, :class:`Estimator`, :func:`measure`;
* :mod:`~dpviz.core.registry` — capabilities: CLI verbs, ``sample:NAME``, page skeleton;
* :mod:`~dpviz.core.tables` — the one atomic table writer.
"""

from importlib import import_module

# Names re-exported from the submodules, imported on first use (PEP 562) so that importing a light module
# such as dpviz.core.registry (the CLI's --help) does not pull in numpy through this package.
_EXPORTS = {
    "gaussian_delta": "accounting", "gaussian_rho": "accounting", "zcdp_delta": "accounting",
    "zcdp_epsilon": "accounting", "zcdp_rho": "accounting", "Budget": "budget", "compose": "budget",
    "Release": "release", "BudgetSplit": "release", "Noise": "noise", "Estimate": "protocols", "Estimator": "protocols",
    "LinearMeasurement": "protocols", "Strategy": "protocols", "measure": "protocols",
    "discrete_gaussian": "samplers", "discrete_laplace": "samplers",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(f"dpviz.core.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpviz.core' has no attribute {name!r}")


__all__ = [
    "Budget", "compose", "Noise", "Release", "BudgetSplit", "LinearMeasurement", "Strategy", "Estimator", "Estimate",
    "measure", "discrete_laplace", "discrete_gaussian", "gaussian_rho", "gaussian_delta", "zcdp_epsilon",
    "zcdp_delta", "zcdp_rho",
]
