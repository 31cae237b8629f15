"""Hierarchical tree release: Generation Matrix toolkit and GMC ("Generation Matrix: An Embeddable Matrix
Representation for Hierarchical Trees", Theoretical Computer Science, 2023; arXiv:2201.11297).

Unit of privacy: one person, counted in exactly one leaf; adding or removing them changes the count
of that leaf and of each of its ancestors by exactly 1 (one count per depth level, at most h levels:
L1 sensitivity h, L2 sensitivity √h). The hierarchy (node ids, parents) is public.

Public API (``dpviz.tree.release``, built on :mod:`dpviz.core`; the same two entry points as every capability):

* ``simulate(data, noise, methods, rng, *, split="uniform", unit=None, plan=None, q=10_000, ranges=None,
  expected=None)`` — teaching/what-if, continuous seeded noise (one unit draw rescaled across ε),
  metrics against the truth (a :class:`~dpviz.tree.release.Simulation`, never a release);
* ``release(data, noise, *, rng=None, split="uniform", method="gmc", plan=None, csv_text=False)``
  — discrete noise from the OS CSPRNG through :func:`dpviz.core.protocols.measure`, one method, no
  truth, in one pass; the :class:`~dpviz.tree.release.TreeRelease` is a :class:`dpviz.core.release.Release`:
  ``capability`` "tree", ``values`` (the released node counts), ``budget`` (one
  :class:`~dpviz.core.release.BudgetSplit` part per depth level), ``table()`` (pandas) / ``columns()``
  (Arrow, what ``tree release`` writes) and ``metadata()`` (``OUT.meta.json``);
* strategy ``TreeLevels(tree, split)`` (:mod:`dpviz.tree.strategy`: what is measured, its sensitivity and
  per-level scales) and estimators ``GMC``, ``Lee``, ``PrivTrie``, ``Boosting``, ``Processless``
  (:mod:`dpviz.tree.estimators`: ``fit`` = ``values(measurement)`` + analytic ``variance(d)``).

Modules (the capability layout): ``model`` (tree in Descending Order of Height, ``TreeData``, BuildTree
Eq. 25), ``io`` (load, write; the ``load``/``canonical_bytes`` hooks; on ``reading``: capped CSV/JSON
tables, and ``formats``: the three tree formats), ``samples``
(``sample:county``), ``strategy``, ``estimators``, ``release``, ``metrics`` (Sec. 6.2, Theorem 5),
``cli``, ``hooks`` (audit, sweep and planner entries); paper modules ``generation`` (G, H, M),
``propagation`` (Props. 2-3), ``properties`` (Props. 4-11, Thms. 1-4), ``gmc`` (Alg. 1-2),
``baselines`` (Lee, PrivTrie, Boosting); ``hierarchy`` (declared hierarchies), ``synthetic``
(generated trees). Benchmarks live in ``bench/``.
"""
