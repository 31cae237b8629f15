"""Real sample data bundled with dpviz (see ``assets/SOURCES.md`` for provenance and licences).

Loaders live in :mod:`dpviz.data.samples`; they read small CSVs from the repository's ``assets/``
folder and never touch the network.
"""
