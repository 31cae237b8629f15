"""Continual release of running totals: Fenwick matrix mechanism with optimal weights (FDA) and peers.

Two modes (:mod:`dpviz.core.modes`):

* :func:`simulate` — seeded continuous noise, several mechanisms on one draw, truth and errors shown,
  ε rescales one draw: **not a private release**;
* :func:`release` — one mechanism, discrete noise on integer counts from the OS CSPRNG, fresh every
  call, no truth in :func:`release_table` / :func:`release_metadata`: safe to publish.

Mechanisms are core strategies and estimators (:mod:`dpviz.stream.strategies`). Unit of privacy: one
event (one step's count changes by 1); user-level privacy is not covered.
"""

from dpviz.stream.private_release import StreamRelease, release, release_metadata, release_table, simulation_table
from dpviz.stream.simulation import (
    Mechanism,
    SimulatedRelease,
    Simulation,
    make_mechanism,
    simulate,
    simulated_release,
    unit_errors,
)
from dpviz.stream.strategies import (
    LABELS,
    MECHANISM_NAMES,
    RELEASABLE,
    UNIT_OF_PRIVACY,
    StreamEstimator,
    StreamStrategy,
    available,
    strategy,
)
from dpviz.stream.weights import fda_weights

__all__ = ["LABELS", "MECHANISM_NAMES", "RELEASABLE", "UNIT_OF_PRIVACY", "Mechanism", "SimulatedRelease",
           "Simulation", "StreamEstimator", "StreamRelease", "StreamStrategy", "available", "fda_weights",
           "make_mechanism", "release", "release_metadata", "release_table", "simulate", "simulated_release",
           "simulation_table", "strategy", "unit_errors"]
