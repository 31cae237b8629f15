"""1-D histograms and range queries over a public ordered domain: the fifth capability, plugged in by hooks.

A hierarchical histogram (Hay, Rastogi, Miklau & Suciu, "Boosting the Accuracy of Differentially Private
Histograms Through Consistency", PVLDB 3(1), 2010): the declared bins are the leaves of a b-ary tree, every node
(a dyadic-like range of bins) is counted with noise per level, and the noisy tree is made consistent — here by
GMC, the optimal consistency of the Generation Matrix paper (Yang et al., Theoretical Computer Science, 2023,
arXiv:2201.11297): the tree engine (:mod:`dpviz.tree`) is reused unchanged. The flat baseline is one noisy count
per bin (Dwork, McSherry, Nissim & Smith, "Calibrating Noise to Sensitivity in Private Data Analysis", TCC 2006).

Unit of privacy: one record, counted in exactly one bin. The bins are public: declared (``--bins``), never read
from the records unless the user opts out (``--structure-from-data``); records outside the declared bins are
dropped and how many were is never published.

Layout as every capability: ``model`` (Bins, HistogramData), ``io`` (declaration and counts/records readers, the
``load``/``canonical_bytes`` hooks), ``samples``, ``strategy`` (the b-ary hierarchy over the bins, the flat
identity strategy), ``estimators``, ``release`` (``release``/``simulate``), ``metrics``, ``cli``, ``hooks``.
"""

from importlib import import_module

# Imported on first use (PEP 562): the tools' CLI registrars read dpviz.histogram.hooks without loading NumPy.
__all__ = ["Bins", "HistogramData"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(import_module("dpviz.histogram.model"), name)
    raise AttributeError(f"module 'dpviz.histogram' has no attribute {name!r}")
