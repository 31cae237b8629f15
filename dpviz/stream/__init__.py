"""Continual release of running totals: Fenwick matrix mechanism with optimal weights (FDA) and peers."""

from dpviz.stream.mechanisms import MECHANISM_NAMES, Noise, Release, StreamMechanism, make_mechanism
from dpviz.stream.weights import fda_weights

__all__ = ["MECHANISM_NAMES", "Noise", "Release", "StreamMechanism", "fda_weights", "make_mechanism"]
