"""Ledger page: the persistent privacy ledger, per dataset (a read-only view of :mod:`dpviz.ledger`).

Every ``python -m dpviz ... release`` and every page's "Draw a private release" charges a ledger before
it writes or shows anything; this page shows what each dataset has spent (basic composition and zCDP,
:mod:`dpviz.ledger.accounts`), what remains and every release (time, mechanism, budget, output and its
SHA-256). It shows only the ledgers the server names — the server's ledger (``--ledger PATH`` given to
the app, else ``$DPVIZ_LEDGER``, else the default ledger if it exists: :mod:`dpviz.ledger.session`) and
this browser session's own ledger — and never opens a path typed in the browser. Ledgers are opened
read-only and never created here. Budgets are set with ``python -m dpviz ledger set-budget`` (the
server's) or on a page's Private release panel (this session's).
"""

import json
import math

import streamlit as st

import ui
from dpviz.errors import InputError
from dpviz.ledger import LEDGER_ENV, PAGE
from dpviz.ledger.session import PageLedger, server_ledger
from dpviz.ledger.store import check_ledger_path, open_ledger
from dpviz.ledger.views import cumulative_frame, dataset_lines, releases_frame, summary_frame

ui.page_setup(PAGE)
ss = st.session_state
CHOICES = {"server": "The server's ledger", "session": "This session's ledger"}


def read_ledger(where: PageLedger):
    """(datasets, releases by dataset, export) of a ledger, read in one go, read-only (a FIFO, a device or a
    folder at its path is refused before it is opened)."""
    check_ledger_path(where.path, write=False)
    with open_ledger(where.path, readonly=True) as led:
        datasets = led.datasets()
        return datasets, {d.id: led.releases(d.id) for d in datasets}, led.export()


def _fmt(x, spec: str = ".4g") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, spec)


st.title("Privacy ledger")
st.caption("Every `python -m dpviz … release` (tree, stream, marginals, graph) and every **Draw a private release** "
           "on a page charges its dataset here *before* it writes or shows anything; a release that does not fit "
           "the dataset's budget is refused (the CLI exits with code 3) and nothing is drawn. A dataset is "
           "identified by the SHA-256 of its canonical content, so re-saving a file does not reset its budget. "
           "Pure ε releases add up (basic composition), Gaussian ones add up in ρ (zCDP); the spent ε is the "
           "smaller of the two valid totals.")

# Which ledger ----------------------------------------------------------------------------------------
st.subheader(":material/folder_open: Ledger")
available: dict[str, PageLedger] = {}
try:
    server = server_ledger()
except InputError as exc:
    server = None
    st.error(f"The server's ledger: {exc}", icon=":material/error:")
if server is not None:
    available["server"] = server
else:
    st.info("No server ledger is configured: each browser session's page draws are charged to that session's own "
            "ledger. To keep budgets across sessions and with the CLI, start the app with `make run LEDGER=PATH` "
            f"(`streamlit run app.py -- --ledger PATH`) or set ${LEDGER_ENV}; `python -m dpviz ledger init` creates "
            "the default ledger, which the app then uses.", icon=":material/info:")
own = ui.session_ledger()
if own is not None and own.path.exists():
    available["session"] = own.ledger
if not available:
    st.caption("This session has drawn no private release yet, so it has no ledger of its own.")
    st.stop()
choice = next(iter(available))
if len(available) > 1:
    choice = st.radio("Ledger", list(available), format_func=CHOICES.get, key="ledger_choice", horizontal=True)
where = available[choice]
st.caption(f"Showing {where.describe}. Budgets: " + (
    "`python -m dpviz ledger set-budget DATA --epsilon E [--delta D]` on the server." if where.kind == "server"
    else "on each page's Private release panel (Session budget)."))

loaded = None
if not where.path.exists():
    st.info("The server's ledger does not exist yet: the first page draw or CLI release creates it.",
            icon=":material/info:")
else:
    try:
        loaded = read_ledger(where)
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
