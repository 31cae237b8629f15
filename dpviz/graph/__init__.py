"""Graph release under edge-level DP: DRF (flattening kd-tree) made private, the published DRF and baselines.

Layout (the same file names in every capability, docs/ARCHITECTURE.md):

* ``model.py`` — :class:`~dpviz.graph.model.Graph` (the data type), canonical edges, the method output;
* ``io.py`` / ``samples.py`` — edge-list parsing and writing, the bundled graphs;
* ``structure.py`` — the declared public vertex set (:class:`~dpviz.graph.structure.VertexSet`);
* ``strategy.py`` — what is measured and its sensitivity (region counts on the upper triangle, the degree
  sequence), the methods, DRF's budget split and the baselines' geometric budgets;
* ``estimators.py`` — post-processing of the noisy counts (DRF Step 3's projection, least squares,
  top-down rounding, degree post-processing);
* ``release.py`` — the one API: ``release(data, noise, *, rng=None, method="drf-dp", **options) ->
  GraphRelease`` and ``simulate(data, noise, methods, rng, **options)``;
* ``metrics.py`` — released vs true graph;
* ``cli.py``, ``hooks.py`` — the command line and the tools' entries;
* paper modules: ``drf.py`` (Gong et al. 2020, Steps 1, 3, 4 and the privacy proof), ``kdtree.py`` (its
  Step 2, the flattening kd-tree), ``regions.py`` (the one region-array type, range counting, uniform
  placement), ``baselines.py`` and ``hierarchy.py`` (Cormode et al. 2012's quadtree and kd-hybrid trees,
  Random, Chung–Lu).
"""

from importlib import import_module

# Imported on first use (PEP 562): importing a light submodule (dpviz.graph.hooks, read by the tools' CLI
# registrars) does not load NumPy and pandas through this package. ``release``/``simulate`` are not among
# them: ``dpviz.graph.release`` is the module (import them with ``from dpviz.graph.release import release``).
_EXPORTS = {"Graph": "model", "GraphOutput": "model", "Partition": "regions", "GraphRelease": "release",
            "GraphSimulation": "release", "DEFAULT_METHOD": "strategy",
            "METHODS": "strategy", "NOT_PRIVATE_LABEL": "strategy", "PRIVATE_METHODS": "strategy",
            "VertexSet": "structure"}

__all__ = ["GraphRelease", "GraphSimulation", "Graph", "GraphOutput", "VertexSet",
           "Partition", "METHODS", "DEFAULT_METHOD", "PRIVATE_METHODS", "NOT_PRIVATE_LABEL"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"dpviz.graph.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'dpviz.graph' has no attribute {name!r}")
