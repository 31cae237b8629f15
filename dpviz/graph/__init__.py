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

from dpviz.graph.model import Graph, GraphOutput
from dpviz.graph.regions import Partition
from dpviz.graph.release import GraphRelease, GraphSimulation, release, simulate
from dpviz.graph.strategy import DEFAULT_METHOD, METHODS, NOT_PRIVATE_LABEL, PRIVATE_METHODS
from dpviz.graph.structure import VertexSet

__all__ = ["release", "simulate", "GraphRelease", "GraphSimulation", "Graph", "GraphOutput", "VertexSet",
           "Partition", "METHODS", "DEFAULT_METHOD", "PRIVATE_METHODS", "NOT_PRIVATE_LABEL"]
