"""Continual release of running totals: Fenwick matrix mechanism with optimal weights (FDA) and peers.

The capability's layout (the same file names in every capability, docs/ARCHITECTURE.md):

* :mod:`~dpviz.stream.model` — :class:`~dpviz.stream.model.StreamData` (counts and optional timestamps);
* :mod:`~dpviz.stream.io` / :mod:`~dpviz.stream.samples` — the CSV reader and the bundled samples;
* :mod:`~dpviz.stream.strategy` — what each mechanism measures (y = Q a) and its sensitivity;
* :mod:`~dpviz.stream.estimators` — the post-processing ŝ = R y with its exact per-step variance;
* :mod:`~dpviz.stream.release` — ``release`` and ``simulate`` (the simulation machinery:
  :mod:`~dpviz.stream.mechanism`);
* :mod:`~dpviz.stream.metrics` — analytic and empirical error metrics;
* :mod:`~dpviz.stream.cli`, :mod:`~dpviz.stream.hooks` — the command line and the tools' entries;
* paper modules :mod:`~dpviz.stream.fenwick` (Alg. 5.2/5.3), :mod:`~dpviz.stream.weights` (FDA, problem
  5.10), :mod:`~dpviz.stream.lattice` (real factorisations on 2^−k ℤ), :mod:`~dpviz.stream.synthetic`.

Two modes (:mod:`dpviz.core.modes`):

* ``simulate`` — seeded continuous noise, several mechanisms on one draw, truth and errors shown, ε rescales
  one draw: **not a private release**;
* ``release`` — one mechanism, discrete noise on integer counts from the OS CSPRNG, fresh every call, no
  truth in its ``table()`` / ``metadata()``: safe to publish.

Unit of privacy: one event (one step's count changes by 1); user-level privacy is not covered.

The package re-exports nothing: ``dpviz.stream.release`` is the module (``from dpviz.stream.release import
release, simulate``), as in every capability, and importing the package stays free (the CLI starts fast).
"""
