"""Pieces of the Planner page (pages/5_Planner.py) that are not figures: its tables' column settings.

``st.column_config`` entries for the split table (the plans table is a static table that wraps:
:func:`dpviz.viz.planner.plans_view`), :func:`table_config`, which shows
as text every column :func:`dpviz.viz.planner.readable` turned into text (with empty cells, never "None"),
:data:`UPLOADS` (each capability's uploaded-file reader, the capability page's own, with its caps), and
:func:`split_drawn` / :func:`split_stale`, which tell the page's first section (a fragment) when a new noise
seed must redraw the split section too.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["SPLIT_CONFIG", "table_config", "split_drawn", "split_stale", "GRAPH_UPLOAD_CAPS",
           "UPLOADS"]

SPLIT_CONFIG = {
    "name": st.column_config.TextColumn("release", help="The planned release (a ready-made example)."),
    "capability": st.column_config.TextColumn("shape", width="small"),
    "mechanism": st.column_config.TextColumn("mechanism", help="The mechanism with the smallest error for it."),
    "weight": st.column_config.NumberColumn("weight wᵢ", width="small", format="%g"),
    "share": st.column_config.NumberColumn("share", width="small", format="percent", help="Its share of the total."),
    "epsilon": st.column_config.NumberColumn("εᵢ", width="small", format="%.4g"),
    "rho": st.column_config.NumberColumn("ρᵢ", width="small", format="%.4g"),
    "error": st.column_config.NumberColumn("error", width="small", format="%.4g",
                                           help="The error it gets at its share (RMSE, or the graph metric)."),
    "metric": st.column_config.TextColumn("error of", width="medium", help="What the error measures."),
}


def table_config(config: dict, gaps: list[str]) -> dict:
    """``config`` with every column that :func:`dpviz.viz.planner.readable` turned into text shown as text (a number
    column would show its empty cells as "None")."""
    out = dict(config)
    for col in gaps:
        old = config.get(col)
        out[col] = st.column_config.TextColumn(old["label"] if old else col, help=(old or {}).get("help"),
                                               width=(old or {}).get("width"))
    return out


def split_drawn(names: list[str], seed: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """What the split section drew its planned releases ``names`` with: the names and each one's seed
    (:func:`dpviz.planner.specs.preset_seed`: the page's ``seed`` for a Monte-Carlo release, 0 for an analytic one)."""
    from dpviz.planner.specs import preset_seed

    return tuple(names), tuple(preset_seed(n, int(seed)) for n in names)


def split_stale(drawn: tuple | None, seed: int | None) -> bool:
    """Whether the split section, last drawn as ``drawn`` (:func:`split_drawn`), would change with the noise seed
    ``seed``: only when one of its releases is Monte-Carlo (a graph) and the seed moved. An analytic release's curve
    is the same for every seed, so a new noise draw need not redraw the section (Planner: a whole-page rerun)."""
    if drawn is None or seed is None:
        return False
    names, seeds = drawn
    return split_drawn(list(names), int(seed))[1] != tuple(seeds)


GRAPH_UPLOAD_CAPS = (50_000_000, 500_000, 1_000_000)
"""Bytes, edges, vertices: the Graph page's upload caps, for a graph uploaded to the Planner."""


def _stem(name: str) -> str:
    for suffix in (".gz", ".csv", ".tsv", ".txt", ".json", ".edges", ".edgelist", ".el"):
        name = name.removesuffix(suffix)
    return name or "upload"


def _parse_tree(raw: bytes, name: str):
    from dpviz.tree.io import MAX_BYTES, MAX_NODES, load_tree_file

    data = load_tree_file(raw, name=name, max_nodes=MAX_NODES, max_bytes=MAX_BYTES)
    _ = data.v  # a bad count fails here, not later on the page
    return data


def _parse_stream(raw: bytes, name: str):
    from dpviz.stream.io import read_stream_csv

    return read_stream_csv(raw)


def _parse_marginals(raw: bytes, name: str):
    from dpviz.marginals.io import read_table

    return read_table(raw, name=_stem(name), skip_constant=True)


def _parse_graph(raw: bytes, name: str):
    from dpviz.graph.io import read_edges

    max_bytes, max_edges, max_nodes = GRAPH_UPLOAD_CAPS
    return read_edges(raw, name=_stem(name), max_bytes=max_bytes, max_edges=max_edges, max_nodes=max_nodes)


# the capability pages' own readers, from bytes (never a server path)
UPLOADS = {
    "tree": ("Tree file (CSV or JSON: node, parent, count)", ["csv", "json"], _parse_tree),
    "stream": ("Count stream (CSV): its length is the horizon N", ["csv"], _parse_stream),
    "marginals": ("Records (CSV, one row per person; optionally gzip-compressed)", ["csv", "gz"], _parse_marginals),
    "graph": ("Edge list (u, v per line; optionally gzip-compressed)", ["csv", "tsv", "txt", "gz", "edges", "el"],
              _parse_graph),
}
"""Per capability: (uploader label, file types, parser of (bytes, file name)) for the Planner's upload source."""
