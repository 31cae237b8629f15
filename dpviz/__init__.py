"""dpviz: differentially private data release (trees, streams, marginals, graphs).

The package never imports streamlit: pages under ``pages/`` are thin views over it.
"""

__version__ = "0.1.0"
