"""dpviz dashboard: home page.

Classic Streamlit multipage layout: every file in ``pages/`` is discovered
automatically and shows up in the sidebar.  This page stays thin: a short
introduction and links to the capability pages that exist.
"""

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent

# (page file relative to this script, label, Material icon, one-line description).
# Emoji icons are avoided: Debian's headless Chromium has no emoji font (screenshots show boxes).
# A page is linked only if its file exists; otherwise it is listed as "coming next".
CAPABILITIES = [
    ("pages/1_Tree.py", "Tree release", ":material/account_tree:",
     "Release counts over a hierarchy (e.g. US → state → county) with consistent noisy totals."),
    ("pages/2_Stream.py", "Stream release", ":material/timeline:",
     "Continual release of running counts over time (Fenwick tree with optimal weights, and peers)."),
    ("pages/3_Marginals.py", "Marginals", ":material/table_chart:",
     "Noisy low-dimensional marginal tables of a categorical data set."),
    ("pages/4_Graph.py", "Graph", ":material/hub:",
     "Edge-private statistics of a graph (degrees, edge counts)."),
    ("pages/5_Budget_planner.py", "Budget planner", ":material/savings:",
     "Split a privacy budget ε across releases and see the expected error."),
]

st.set_page_config(page_title="dpviz", page_icon=":material/lock:", layout="wide")

st.title("dpviz — differentially private data release")

st.markdown(
    """
**Differential privacy (DP)** lets you publish statistics about a data set while
bounding how much the output can reveal about any single person in it: calibrated
random noise is added to each released number, and the privacy loss is controlled by
a budget **ε** (smaller ε = more privacy, more noise).

This dashboard lets you **run DP releases on bundled example data (or your own CSV)**,
compare the noisy output with the truth, and see the privacy/accuracy trade-off as
you change ε. Every page is a thin view over the `dpviz` Python library, which can
also be used directly or through its command line (`python -m dpviz`).
"""
)

st.header("Capabilities")

available = [c for c in CAPABILITIES if (ROOT / c[0]).is_file()]
coming = [c for c in CAPABILITIES if not (ROOT / c[0]).is_file()]

if available:
    for path, label, icon, desc in available:
        st.page_link(path, label=label, icon=icon)
        st.caption(desc)
else:
    st.info("No capability page is installed yet.")

if coming:
    st.subheader("Coming next")
    st.markdown("\n".join(f"- **{label}** — {desc}" for _, label, _, desc in coming))
