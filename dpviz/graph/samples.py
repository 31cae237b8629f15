"""The bundled real graphs (``sample:NAME``): edge lists in ``dpviz/assets/graphs/`` (package data, found by
:func:`dpviz.core.assets.asset`).

Built by ``tools/extract_graphs.py`` from the network collection of Debian's ``python3-graph-tool``
package (read without installing it) and networkx's karate club; provenance, licences, citations and
checksums are in ``dpviz/assets/SOURCES.md``. Each graph is ``NAME.csv.gz`` (header ``u,v``, 0-based ids,
canonical: u < v, sorted, no duplicates or self-loops) with a ``NAME.json`` sidecar whose ``n_nodes``
counts the isolated vertices too: it is the sample's **shipped public declaration** of its vertex set, ids
0..n_nodes-1 (:func:`sample_declaration`), which ``graph release sample:NAME`` uses without flags.
Loaders are cached (the graphs are immutable: their edge arrays are read-only).

=============  ===================================================  ========  =========
name           graph                                                vertices  edges
=============  ===================================================  ========  =========
karate         Zachary's karate club (teaching)                     34        78
netscience     network-science co-authorships (Newman 2006)         1,589     2,742
polblogs       US political blogs 2005 (directed, symmetrised)      1,490     16,715
power          US Western power grid (Watts & Strogatz 1998)        4,941     6,594
hep-th         hep-th co-authorships 1995-99 (Newman 2001)          8,361     15,751
email-enron    Enron e-mail network (SNAP; Leskovec et al. 2009)    36,692    183,831
=============  ===================================================  ========  =========
"""

from __future__ import annotations

import json
from functools import lru_cache

from dpviz.core.assets import asset
from dpviz.errors import InputError
from dpviz.graph.io import read_edges
from dpviz.graph.model import Graph

__all__ = ["SAMPLE_NAMES", "canonical_name", "sample_declaration", "load_graph_sample", "sample_info",
           "load_karate_sample", "load_power_sample", "load_hepth_sample", "load_netscience_sample",
           "load_polblogs_sample", "load_enron_sample"]

GRAPHS_DIR = "graphs"
"""The bundled edge lists' folder inside ``dpviz/assets/`` (files ``asset(f"graphs/{name}.csv.gz")``)."""
SAMPLE_NAMES: tuple[str, ...] = ("karate", "netscience", "polblogs", "power", "hep-th", "email-enron")
"""Bundled graphs, smallest first."""


def canonical_name(name: str) -> str:
    """The bundled graph's name (case-insensitive), or InputError naming the bundled graphs."""
    key = str(name).strip().lower()
    if key not in SAMPLE_NAMES:
        raise InputError(f"graph sample {name!r} is unknown; bundled graphs are {', '.join(SAMPLE_NAMES)}")
    return key


@lru_cache(maxsize=None)
def sample_info(name: str) -> dict:
    """The JSON sidecar of a bundled graph (name, title, n_nodes, n_edges, directed_source, source,
    citation, licence, transformation ...). Do not modify the returned dict (it is cached)."""
    key = canonical_name(name)
    return json.loads(asset(f"{GRAPHS_DIR}/{key}.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _load(key: str) -> Graph:
    info = sample_info(key)
    path = asset(f"{GRAPHS_DIR}/{key}.csv.gz")
    g = read_edges(path, n_nodes=info["n_nodes"], header=True, name=key)
    if g.n_edges != info["n_edges"] or g.notices:
        raise RuntimeError(f"bundled graph {path} does not match {key}.json; rebuild the assets")
    g.edges.flags.writeable = False
    notices = ("directed in the source: symmetrised (one undirected edge wherever there is a link in either "
               "direction; self-loops dropped); see dpviz/assets/SOURCES.md",) if info["directed_source"] else ()
    return Graph(n_nodes=g.n_nodes, edges=g.edges, labels=None, notices=notices, name=key)


def load_graph_sample(name: str) -> Graph:
    """A bundled graph by name (case-insensitive): one of :data:`SAMPLE_NAMES`. Cached; edges read-only."""
    return _load(canonical_name(name))


def sample_declaration(name: str):
    """The public vertex set a bundled graph ships (:meth:`dpviz.graph.structure.VertexSet.sample`): ids
    0..n_nodes-1, ``n_nodes`` from its ``NAME.json`` (isolated vertices included). A release of ``sample:NAME``
    uses it when no other declaration is given."""
    from dpviz.graph.structure import VertexSet

    return VertexSet.sample(name)


def load_karate_sample() -> Graph:
    """``sample:karate``: Zachary's karate club, 34 members, 78 friendships (Zachary 1977; networkx)."""
    return load_graph_sample("karate")


def load_power_sample() -> Graph:
    """``sample:power``: the US Western States power grid, 4,941 vertices, 6,594 edges (Watts & Strogatz 1998)."""
    return load_graph_sample("power")


def load_hepth_sample() -> Graph:
    """``sample:hep-th``: hep-th co-authorships 1995-99, 8,361 vertices (751 isolated), 15,751 edges (Newman 2001)."""
    return load_graph_sample("hep-th")


def load_netscience_sample() -> Graph:
    """``sample:netscience``: network-science co-authorships, 1,589 vertices (128 isolated), 2,742 edges
    (Newman 2006)."""
    return load_graph_sample("netscience")


def load_polblogs_sample() -> Graph:
    """``sample:polblogs``: US political blogs 2005, 1,490 vertices (266 isolated), 16,715 edges: the 19,090
    directed hyperlinks symmetrised (Adamic & Glance 2005)."""
    return load_graph_sample("polblogs")


def load_enron_sample() -> Graph:
    """``sample:email-enron``: the Enron e-mail network, 36,692 vertices, 183,831 edges (SNAP; Leskovec et al.
    2009)."""
    return load_graph_sample("email-enron")
