"""Ledger page: the persistent privacy ledger, per dataset (a read-only view of :mod:`dpviz.ledger`).

Every ``python -m dpviz ... release`` charges the ledger before it writes its output; this page shows
what each dataset has spent (basic composition and zCDP, :mod:`dpviz.ledger.accounts`), what remains
and every release (time, mechanism, budget, output and its SHA-256). The ledger file is chosen here
(default: ``$DPVIZ_LEDGER``, else :func:`dpviz.ledger.default_path`); it is opened read-only and never
created by the page. Budgets are set with ``python -m dpviz ledger set-budget``.
"""

import json
import math
import os
from pathlib import Path

import streamlit as st

import ui
from dpviz.errors import InputError
from dpviz.ledger import LEDGER_ENV, PAGE, default_path, ledger_path
from dpviz.ledger.store import open_ledger
from dpviz.ledger.views import cumulative_frame, dataset_lines, releases_frame, summary_frame

ui.page_setup(PAGE)
ss = st.session_state


def read_ledger(path: Path):
    """(datasets, releases by dataset, export) of the ledger at ``path``, read in one go, read-only."""
    with open_ledger(path, readonly=True) as led:
        datasets = led.datasets()
        return datasets, {d.id: led.releases(d.id) for d in datasets}, led.export()


def _fmt(x, spec: str = ".4g") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, spec)


st.title("Privacy ledger")
st.caption("Every `python -m dpviz … release` (tree, stream, marginals, graph) charges its dataset here *before* "
           "it writes anything; a release that does not fit the dataset's budget exits with code 3 and writes "
           "nothing. A dataset is identified by the SHA-256 of its canonical content, so re-saving a file does not "
           "reset its budget. Pure ε releases add up (basic composition), Gaussian ones add up in ρ (zCDP); the "
           "spent ε is the smaller of the two valid totals.")

# Ledger file ---------------------------------------------------------------------------------------
st.subheader(":material/folder_open: Ledger file")
env = os.environ.get(LEDGER_ENV, "")
st.text_input("Ledger file", value=str(ledger_path().path), key="ledger_path",
              help="An SQLite file written by dpviz; opened read-only, never created here.")
st.caption(f"Default: `{default_path()}`" + (f"; ${LEDGER_ENV} = `{env}`" if env else "")
           + ". Create one with `python -m dpviz ledger init` or `python -m dpviz ledger set-budget DATA --epsilon E "
             "[--delta D]`.")
path = Path(ss["ledger_path"].strip() or str(ledger_path().path)).expanduser()

loaded = None
if not path.exists():
    st.info(f"No ledger at `{path}` yet: releases are not recorded until one exists (or `--ledger PATH` is "
            "given).", icon=":material/info:")
else:
    try:
        loaded = read_ledger(path)
    except InputError as exc:
        st.error(str(exc), icon=":material/error:")

if loaded is not None:
    datasets, releases, export = loaded
    st.warning("The ledger holds SHA-256 fingerprints of private data sets: keep it (and its export) as private as "
               "the data.", icon=":material/shield:")
    c1, c2 = st.columns(2)
    c1.metric("Datasets", f"{len(datasets):,}")
    c2.metric("Releases", f"{sum(len(r) for r in releases.values()):,}")
    st.download_button("Download the ledger (JSON)", data=json.dumps(export, indent=1, ensure_ascii=False),
                       file_name="dpviz-ledger.json", mime="application/json", key="ledger_export",
                       icon=":material/download:", on_click="ignore")

    # Datasets ------------------------------------------------------------------------------------
    st.subheader(":material/dataset: Datasets")
    if not datasets:
        st.info("The ledger is empty: no budget set, no release recorded.", icon=":material/info:")
    else:
        st.dataframe(summary_frame(datasets), hide_index=True, key="ledger_summary")
        by_id = {d.id: d for d in datasets}
        chosen = st.selectbox("Dataset", list(by_id), key="ledger_dataset",
                              format_func=lambda i: f"{by_id[i].name} ({by_id[i].capability}, {i[:12]})")
        d = by_id[chosen]
        rep = d.report()
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Budget", d.budget.describe if d.budget is not None else "none")
        m2.metric("Spent ε", _fmt(rep["epsilon_spent"]))
        m3.metric("Remaining ε", _fmt(rep.get("epsilon_remaining")))
        m4.metric("Spent ρ (zCDP)", _fmt(rep["rho"]))
        if d.budget is not None:
            st.progress(min(1.0, max(0.0, rep["epsilon_spent"] / d.budget.epsilon)),
                        text=f"{_fmt(rep['epsilon_spent'])} of ε = {d.budget.epsilon:g} spent")
        st.code("\n".join(dataset_lines(d)), language=None)

        # Releases --------------------------------------------------------------------------------
        st.subheader(":material/receipt_long: Releases")
        rows = releases[chosen]
        if not rows:
            st.caption("No release recorded for this dataset yet.")
        else:
            st.dataframe(releases_frame(rows), hide_index=True, key="ledger_releases")
            st.caption("Status *charged, no output recorded*: the process stopped between the charge and the "
                       "write (the budget stays spent: conservative).")
            st.line_chart(cumulative_frame(d, rows), x="release", y=["ε (basic)", "ε (zCDP)"],
                          x_label="release #", y_label="spent ε")
