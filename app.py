"""dpviz dashboard: home page.

Classic Streamlit multipage layout: every file in ``pages/`` is discovered automatically and shows up
in the sidebar. This page stays thin: a short introduction, the two modes, and a link per capability
from the registry (:mod:`dpviz.core.registry`).
"""

from pathlib import Path

import streamlit as st

from dpviz.core.registry import CAPABILITIES

ROOT = Path(__file__).resolve().parent

# Planned capabilities: listed as "coming next" (never linked) until their page and registry entry land.
PLANNED = [
    ("Graph", "Edge-private release of a graph's adjacency structure (DRF)."),
    ("Budget planner", "Split a privacy budget across releases and see the expected error; a privacy ledger."),
]

st.set_page_config(page_title="dpviz", page_icon=":material/lock:", layout="wide")

st.title("dpviz — differentially private data release")

st.markdown(
    """
**Differential privacy (DP)** lets you publish statistics about a data set while bounding how much
the output can reveal about any single person in it: calibrated random noise is added to each
released number, and the privacy loss is controlled by a budget **ε** (smaller ε = more privacy,
more noise).

Every page has two modes:

* **Simulation — not a private release.** Seeded floating-point noise on bundled or uploaded data,
  with the true values and the errors shown, many methods on one noise draw, and an ε slider: for
  teaching and what-if questions.
* **Private release.** One mechanism, discrete noise drawn from the operating system's
  cryptographic random generator, fresh every time, and an output with no true value in it: what you
  may publish.

Every page is a thin view over the `dpviz` Python library, which can also be used directly or
through its command line (`python -m dpviz`).
"""
)

st.header("Capabilities")
for cap in CAPABILITIES:
    if cap.page is not None and (ROOT / cap.page).is_file():
        st.page_link(cap.page, label=cap.title, icon=cap.icon)
        st.caption(f"{cap.description} Unit of privacy: {cap.unit_of_privacy}.")

st.subheader("Coming next")
st.markdown("\n".join(f"- **{label}** — {desc}" for label, desc in PLANNED))
