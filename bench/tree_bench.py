"""Tree benchmark: GMC vs sparse Eq. (8), recursive PrivTrie-style pass and Boosting, plus GMC alone
on the 16.7M-node SynData tree, a 10^7-node random fan-out tree and a 10^6-node path-like tree.

    python bench/tree_bench.py [--quick]

The logic lives in :mod:`dpviz.tree.bench` (also ``python -m dpviz tree bench``).
"""

import sys

from dpviz.tree.bench import main

if __name__ == "__main__":
    raise SystemExit(main(quick="--quick" in sys.argv[1:]))
