"""Hierarchical tree release: Generation Matrix toolkit and GMC (Yang et al., "Generation Matrix").

Modules: ``model`` (tree in Descending Order of Height), ``generation`` (G, H, M), ``propagation``
(Props. 2-3), ``properties`` (Props. 4-11, Thms. 1-4), ``gmc`` (Alg. 1-2), ``baselines``, ``release``
(noise + budget split + metrics table), ``metrics``, ``io`` (validated readers), ``synthetic``, ``cli``.
"""
