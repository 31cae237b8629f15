"""Graph release (edge-level DP): DRF (flattening kd-tree), its private version and baselines."""

from dpviz.graph.release import (DEFAULT_METHOD, METHODS, NOT_PRIVATE_LABEL, DeclaredRelease, GraphRelease, Partition,
                                 release, release_graph, release_meta)
from dpviz.graph.structure import VertexSet

__all__ = ["release", "release_graph", "release_meta", "DeclaredRelease", "VertexSet", "GraphRelease", "Partition",
           "METHODS", "DEFAULT_METHOD", "NOT_PRIVATE_LABEL"]
