"""dpviz.core: the one privacy vocabulary every capability uses.

* :mod:`~dpviz.core.budget` — :class:`Budget` (ε, (ε, δ), ρ) and :func:`compose`;
* :mod:`~dpviz.core.accounting` — exact conversions: :func:`gaussian_rho`, :func:`gaussian_delta`
  (exact Gaussian privacy profile), :func:`zcdp_epsilon`, :func:`zcdp_rho` (Canonne–Kamath–Steinke);
* :mod:`~dpviz.core.noise` — :class:`Noise` (family, discrete or continuous, budget → scale, variance);
* :mod:`~dpviz.core.samplers` — :func:`discrete_laplace`, :func:`discrete_gaussian` (OS CSPRNG);
* :mod:`~dpviz.core.modes` — simulate vs release;
* :mod:`~dpviz.core.protocols` — :class:`LinearMeasurement`, :class:`Strategy`, :class:`Estimator`, :func:`measure`;
* :mod:`~dpviz.core.registry` — capabilities: CLI verbs, ``sample:NAME``, page skeleton;
* :mod:`~dpviz.core.tables` — the one atomic table writer.
"""

from dpviz.core.accounting import gaussian_delta, gaussian_rho, zcdp_delta, zcdp_epsilon, zcdp_rho
from dpviz.core.budget import Budget, compose
from dpviz.core.modes import Release, Simulate
from dpviz.core.noise import Noise
from dpviz.core.protocols import Estimate, Estimator, LinearMeasurement, Strategy, measure
from dpviz.core.samplers import discrete_gaussian, discrete_laplace

__all__ = [
    "Budget", "compose", "Noise", "Simulate", "Release", "LinearMeasurement", "Strategy", "Estimator", "Estimate",
    "measure", "discrete_laplace", "discrete_gaussian", "gaussian_rho", "gaussian_delta", "zcdp_epsilon",
    "zcdp_delta", "zcdp_rho",
]
