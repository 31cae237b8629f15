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

import streamlit as st

from dpviz import ui
from dpviz.errors import InputError
from dpviz.ledger import LEDGER_ENV
from dpviz.ledger.session import PageLedger, server_ledger
from dpviz.ledger.store import check_ledger_path, open_ledger
from dpviz.ledger.views import NOT_DEFINED, cumulative_frame, dataset_lines, epsilon_words, releases_frame, summary_table
from dpviz.viz.ledger import WAYS, spent_figure, undefined_ways

ui.page_setup("ledger")
ss = st.session_state
CHOICES = {"server": "The server's ledger", "session": "This session's ledger"}


def read_ledger(where: PageLedger):
    """(datasets, releases by dataset, export) of a ledger, read in one go, read-only (a FIFO, a device or a
    folder at its path is refused before it is opened)."""
    check_ledger_path(where.path, write=False)
    with open_ledger(where.path, readonly=True) as led:
        datasets = led.datasets()
        return datasets, {d.id: led.releases(d.id) for d in datasets}, led.export()


SUMMARY_CONFIG = {
    "dataset": st.column_config.TextColumn("dataset", width="small",
                                           help="The first 12 hex digits of the SHA-256 of the dataset's canonical "
                                                "content: its identity in the ledger."),
    "capability": st.column_config.TextColumn("shape", width="small", help="tree, stream, marginals or graph"),
    "name": st.column_config.TextColumn("name", help="The file or sample it was first seen as."),
    "budget": st.column_config.TextColumn("budget", help="Set with `python -m dpviz ledger set-budget` or a page's "
                                                         "Session budget; none: every release recorded, none refused."),
    "releases": st.column_config.NumberColumn("releases", width="small", help="Releases charged to it."),
    "spent ε": st.column_config.TextColumn("spent ε", width="small",
                                           help="The smaller of the two valid totals: basic composition and zCDP."),
    "remaining ε": st.column_config.TextColumn("remaining ε", width="small", help="Budget ε minus spent ε."),
    "next release may spend": st.column_config.TextColumn(
        "next release may spend", help="The largest Laplace ε or Gaussian ρ a next release may still spend."),
}
RELEASES_SHOWN = ["#", "time (UTC)", "mechanism", "noise", "charge", "status", "output SHA-256"]
RELEASES_CONFIG = {
    "#": st.column_config.NumberColumn("#", width="small", help="The release's number in the ledger."),
    "time (UTC)": st.column_config.TextColumn("time (UTC)", width="medium"),
    "noise": st.column_config.TextColumn("noise", width="small", help="laplace: pure ε; gaussian: zCDP ρ"),
    "charge": st.column_config.TextColumn("charge", help="What it cost, in the currency its mechanism is proved in: "
                                                         "pure ε (Laplace) or ρ (zCDP, Gaussian)."),
    "status": st.column_config.TextColumn("status", help="written: its output's SHA-256 is recorded; charged, no "
                                                         "output recorded: stopped between the charge and the write."),
    "output SHA-256": st.column_config.TextColumn("output SHA-256", width="medium",
                                                  help="SHA-256 of the file written (empty: none recorded)."),
}


def _fmt(x) -> str:
    return epsilon_words(x, missing="—")


st.title("Privacy ledger")
st.caption("Every `python -m dpviz … release` (tree, stream, marginals, graph) and every **Draw a private release** "
           "on a page charges its dataset here *before* it writes or shows anything; a release that does not fit "
           "the dataset's budget is refused (the CLI exits with code 3) and nothing is drawn. A dataset is "
           "identified by the SHA-256 of its canonical content, so re-saving a file does not reset its budget. "
           "Pure ε releases add up (basic composition), Gaussian ones add up in ρ (zCDP); the spent ε is the "
           "smaller of the two valid totals.")
with st.expander("What am I looking at?", icon=":material/help:"):
    st.markdown(
        "**Datasets table.** One row per dataset the ledger has seen, identified by the SHA-256 of its canonical "
        "content. *Spent ε* is what all its releases together cost; *remaining ε* is its budget minus that; *next "
        "release may spend* is the largest single Laplace ε or Gaussian ρ that still fits.\n\n"
        "**Spent metrics and the detail block.** The spent ε is computed two ways, both valid, and the smaller is "
        "kept. *Basic composition*: the ε's of pure (Laplace) releases add up (Dwork & Roth 2014, Thm. 3.16), "
        "Gaussian releases as one zCDP block. *zCDP*: every release as ρ (a Laplace release of ε is ε²/2-zCDP, "
        "Bun & Steinke 2016, Prop. 1.4), the ρ's add up (Lemma 2.3) and Σρ becomes an ε at the budget's δ "
        "(Canonne–Kamath–Steinke 2020, Cor. 13). A pure budget (no δ) has no δ to convert at: its zCDP total "
        f"is *{NOT_DEFINED}*, and only the basic total counts.\n\n"
        "**Spent ε chart.** The total after each release, both ways, with the budget as a dashed line: a release "
        "that would cross the line is refused before any noise is drawn.\n\n"
        "**Releases table.** Every release: when, which mechanism and noise, what it was charged and the SHA-256 "
        "of what was written, so a file can be matched to its charge.")

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
        st.dataframe(summary_table(datasets), hide_index=True, key="ledger_summary", column_config=SUMMARY_CONFIG,
                     width="stretch")
        by_id = {d.id: d for d in datasets}
        chosen = st.selectbox("Dataset", list(by_id), key="ledger_dataset",
                              format_func=lambda i: f"{by_id[i].name} ({by_id[i].capability}, {i[:12]})")
        d = by_id[chosen]
        rep = d.report()
        m1, m2, m3, m4 = st.columns(4)
        if d.budget is None:
            m1.metric("Budget", "none", help="No budget set: every release is recorded, none is refused.")
        else:
            m1.metric("Budget ε" + (" (pure)" if d.budget.delta is None else f" at δ = {d.budget.delta:.0e}"),
                      f"{d.budget.epsilon:g}", help=f"The dataset's budget: {d.budget.describe}.")
        m2.metric("Spent ε", _fmt(rep["epsilon_spent"]), help="The smaller of the two valid totals (basic "
                  "composition, zCDP).")
        m3.metric("Remaining ε", _fmt(rep.get("epsilon_remaining")), help="Budget ε minus spent ε.")
        m4.metric("Spent ρ (zCDP)", _fmt(rep["rho"]), help="Every release as ρ-zCDP, added up (a Laplace release of "
                  "ε counts ε²/2).")
        if d.budget is not None:
            st.progress(min(1.0, max(0.0, rep["epsilon_spent"] / d.budget.epsilon)),
                        text=f"{_fmt(rep['epsilon_spent'])} of ε = {d.budget.epsilon:g} spent")
        st.code("\n".join(dataset_lines(d)), language=None, wrap_lines=True)

        # Releases --------------------------------------------------------------------------------
        st.subheader(":material/receipt_long: Releases")
        rows = releases[chosen]
        if not rows:
            st.caption("No release recorded for this dataset yet.")
        else:
            st.dataframe(releases_frame(rows), hide_index=True, key="ledger_releases", column_order=RELEASES_SHOWN,
                         column_config=RELEASES_CONFIG, width="stretch")
            st.caption("Status *charged, no output recorded*: the process stopped between the charge and the "
                       "write (the budget stays spent: conservative).")
            cum = cumulative_frame(d, rows)
            ui.chart(st, spent_figure(cum, None if d.budget is None else d.budget.epsilon), key="ledger_spent",
                            width="stretch")
            missing = undefined_ways(cum)
            if missing:
                names = " and ".join(WAYS[c][0].split(" (")[0] for c in missing)
                st.caption(f"Total by {names}: {NOT_DEFINED} (a pure budget has no δ at which to turn Σρ into an "
                           "ε), so it is not drawn.")
