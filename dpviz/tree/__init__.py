"""Hierarchical tree release: Generation Matrix toolkit and GMC ("Generation Matrix: An Embeddable Matrix
Representation for Hierarchical Trees", Theoretical Computer Science, 2023; arXiv:2201.11297).

Unit of privacy: one person, counted in exactly one leaf; adding or removing them changes the count
of that leaf and of each of its ancestors by exactly 1 (one count per depth level, at most h levels:
L1 sensitivity h, L2 sensitivity √h). The hierarchy (node ids, parents) is public.

Public API (``dpviz.tree.release``, built on :mod:`dpviz.core`):

* ``simulate(data, noise, methods, rng, split=...)`` — teaching/what-if, continuous seeded noise,
  metrics against the truth (a :class:`~dpviz.tree.release.Simulation`, never a release);
* ``release(data, noise, split="uniform", method="gmc", rng=None)`` — discrete noise from the OS
  CSPRNG, one method, no truth; ``release_table(rel)`` gives the published table and its metadata;
* strategy ``TreeLevels(tree, split)`` (:mod:`dpviz.tree.strategy`) and estimators ``GMC``, ``Lee``,
  ``PrivTrie``, ``Boosting``, ``Processless`` (:mod:`dpviz.tree.estimators`).

Modules: ``model`` (tree in Descending Order of Height), ``generation`` (G, H, M), ``propagation``
(Props. 2-3), ``properties`` (Props. 4-11, Thms. 1-4), ``gmc`` (Alg. 1-2), ``baselines``, ``strategy``,
``estimators``, ``release``, ``metrics``, ``io`` (validated readers, ``sample:county``), ``synthetic``,
``cli`` (benchmarks live in ``bench/``).
"""
