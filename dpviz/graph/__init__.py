"""Graph release (edge-level DP): DRF (flattening kd-tree), its private version and baselines."""

from dpviz.graph.release import DEFAULT_METHOD, METHODS, NOT_PRIVATE_LABEL, GraphRelease, Partition, release

__all__ = ["release", "GraphRelease", "Partition", "METHODS", "DEFAULT_METHOD", "NOT_PRIVATE_LABEL"]
