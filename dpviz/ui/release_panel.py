"""The Private release panel every capability page ends with, and the ledger it charges first.

A click charges the privacy ledger (:mod:`dpviz.ledger.session`: the server's ledger, else this browser
session's own) before anything is drawn, then draws fresh discrete noise from the OS CSPRNG through the
page's ``run`` and shows the released table and its downloads; nothing here shows a true value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd
import streamlit as st

from dpviz.core.modes import output_name
from dpviz.core.noise import Noise
from dpviz.core.registry import Capability
from dpviz.core.tables import meta_json, to_csv_text
from dpviz.errors import InputError
from dpviz.ledger import session
from dpviz.ledger.accounts import Charge, Room, Spent
from dpviz.ledger.identity import DatasetId
from dpviz.ledger.store import BudgetExceeded
from dpviz.ui.records import RecordsUpload
from dpviz.ui.sections import Structure, release_heading
from dpviz.ui.sources import UPLOAD_BYTES_KEY

__all__ = ["PREVIEW_ROWS", "SESSION_LEDGER_KEY", "page_ledger", "session_ledger", "private_release_panel"]

PREVIEW_ROWS = 200
MAX_KEPT = 8
"""Dataset identities kept per session (the latest few sources)."""
SESSION_LEDGER_KEY = "dpviz_session_ledger"


def page_ledger() -> session.PageLedger:
    """The ledger this session's page draws charge: the server's (:func:`dpviz.ledger.session.server_ledger`)
    when one is configured, else this browser session's own ledger (made on first use, kept in the
    session state, removed with the session). Never a path typed in the browser."""
    server = session.server_ledger()
    if server is not None:
        return server
    return session_ledger(create=True).ledger


def session_ledger(create: bool = False) -> session.SessionLedger | None:
    """This browser session's own ledger (None if it has none and ``create`` is False)."""
    ss = st.session_state
    if SESSION_LEDGER_KEY not in ss and create:
        ss[SESSION_LEDGER_KEY] = session.SessionLedger()
    return ss.get(SESSION_LEDGER_KEY)


def _page_dataset(cap: Capability, source: tuple, data: Any) -> DatasetId:
    """The ledger identity of the page's data (computed once per source in a session). A marginals upload
    is identified by its bytes (kept by :func:`handle_upload`), like the CLI reading the file; so is an upload
    of records counted on the page (``data`` a :class:`dpviz.ui.records.RecordsUpload`: the records file's
    identity, :func:`dpviz.ledger.session.page_records_dataset`, whichever capability counts it)."""
    ss = st.session_state
    known = ss.setdefault("ui_dataset_ids", {})
    records = isinstance(data, RecordsUpload)
    ident = (cap.name, session.identity_key(source)) + (("records",) if records else ())
    if ident not in known:
        if cap.name == "marginals" and source[0] == "upload":
            kept = ss.get(UPLOAD_BYTES_KEY, {}).get(cap.name)
            data = kept[1] if kept is not None and kept[0] == ident[1] else None
        with st.spinner("Identifying the dataset for the privacy ledger ..."):
            ds = (session.page_records_dataset(source, data.raw) if records else
                  session.page_dataset(cap.name, source, data))
        if len(known) >= MAX_KEPT:
            known.pop(next(iter(known)))
        known[ident] = ds
    return known[ident]


def _fmt(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, ".4g")


def _standing(where: session.PageLedger, ds: DatasetId) -> None:
    """Spent and remaining for the dataset in the ledger the page charges."""
    row = session.standing(where, ds)
    budget = None if row is None else row.budget
    rep = (Spent() if row is None else row.spent).report(budget)
    m1, m2, m3 = st.columns(3)
    m1.metric("Spent ε on this dataset", _fmt(rep["epsilon_spent"]),
              help="Every release charged to this dataset in this ledger (page draws and, for the server's "
                   "ledger, CLI releases), composed as on the Privacy ledger page.")
    m2.metric("Remaining ε", "no budget" if budget is None else _fmt(rep["epsilon_remaining"]))
    m3.metric("Releases charged", f"{rep['releases']:,}")
    if budget is None:
        st.caption(f"Dataset `{ds.name}`: no budget set (every draw is recorded, none is refused).")
    else:
        st.caption(f"Dataset `{ds.name}`: budget {budget.describe}; the next draw may spend "
                   f"{Room(rep['room_epsilon'], rep['room_rho']).describe}.")


def _session_budget(cap: Capability, where: session.PageLedger, ds: DatasetId) -> None:
    """Optional budget of the dataset in this session's ledger (draws over it are refused)."""
    b1, b2, b3 = st.columns([1, 1, 1], vertical_alignment="bottom")
    eps = b1.number_input("Session budget ε (optional)", min_value=0.0, value=None, step=0.5, format="%g",
                          key=f"{cap.name}_session_budget_epsilon",
                          help="Total ε this dataset may spend in this session; a draw that does not fit is refused.")
    delta = b2.number_input("Session budget δ (Gaussian releases)", min_value=0.0, max_value=1.0, value=None,
                            format="%g", key=f"{cap.name}_session_budget_delta",
                            help="Empty: a pure ε budget, which admits Laplace (pure ε) releases only.")
    if b3.button("Set the session budget", icon=":material/savings:", key=f"{cap.name}_session_budget_set"):
        if eps is None:
            st.error("Session budget: type a budget ε first.", icon=":material/error:")
            return
        try:
            session.set_budget(where, ds, eps, delta or None)
        except InputError as exc:
            st.error(f"Session budget: {exc}", icon=":material/error:")


def _draw(cap: Capability, where: session.PageLedger, ds: DatasetId, noise: Noise, mechanism: str,
          run: Callable[[], tuple[pd.DataFrame, dict[str, Any]]], file_name: str) -> tuple | None:
    """Charge, then draw: (table, meta, receipt line), or None after an st.error (refused: nothing charged;
    failed after the charge: the charge stands and the page says so)."""
    try:
        receipt = session.charge_draw(where, ds, noise, mechanism, output=f"dashboard download {file_name}",
                                      **({"capability": cap.name} if ds.capability != cap.name else {}))
    except BudgetExceeded as exc:
        st.error(f"Refused, nothing drawn: {exc}.", icon=":material/block:")
        return None
    except InputError as exc:
        st.error(f"Not drawn, nothing charged: {exc}", icon=":material/error:")
        return None
    try:
        with st.spinner("Drawing discrete noise from the OS CSPRNG ..."):
            table, meta = run()
    except Exception as exc:
        st.error(f"The draw failed after its charge ({receipt.charge.describe}) was recorded in "
                 f"{where.describe}; the charge stands. {exc if isinstance(exc, InputError) else ''}".rstrip(),
                 icon=":material/error:")
        if isinstance(exc, InputError):
            return None
        raise
    line = (f"Charged {receipt.charge.describe} to `{ds.name}` (release #{receipt.release_id} of "
            f"{'this session' if where.kind == 'session' else 'the server'}'s ledger) before it was drawn.")
    try:
        session.record_output(where, receipt, to_csv_text(table))
    except InputError as exc:
        st.warning(f"The release is charged but its SHA-256 could not be recorded: {exc}", icon=":material/warning:")
    return table, meta, line


def private_release_panel(cap: Capability, *, settings: Hashable, describe: str,
                          run: Callable[[], tuple[pd.DataFrame, dict[str, Any]]], file_stem: str,
                          source: tuple, data: Any, noise: Noise, mechanism: str,
                          structure: Structure | None = None, declares: bool = False,
                          blocked: str | None = None) -> None:
    """The Private release panel: a button that charges the ledger, then draws fresh discrete noise from
    the OS CSPRNG (``run`` must not use a seed or the truth in its output), a preview of the released
    table and its download. Nothing here shows a true value. A release made under other settings is dropped.

    Every click is charged *before* anything is drawn or shown (:func:`page_ledger`: the server's ledger,
    else this session's), to the dataset ``source`` names (the page's source key, e.g. ``("bundled",
    NAME)`` or ``("upload", FILE NAME, digest)``) with content ``data`` (what the page loaded; see
    :func:`dpviz.ledger.session.page_dataset`), at the cost of ``noise`` (the release's
    :class:`~dpviz.core.noise.Noise`), recorded as ``mechanism``. A draw over the dataset's budget is
    refused (nothing drawn); showing a drawn release again (a rerun, a download) charges nothing.

    ``declares``: the page released on a declared structure and has already written the heading
    (:func:`release_heading`) and the structure's widgets; ``structure`` None then means nothing may be drawn
    (the button is disabled, nothing is charged), and ``structure.key`` is part of the settings, so a release
    drawn under another declaration is not shown again. ``blocked``: a reason the draw is refused before any
    charge (e.g. the declaration does not fit the data), said by the page already."""
    if not declares:
        release_heading(cap, describe)
    slot = f"{cap.name}_private_release"
    refused = declares and (structure is None or blocked is not None)
    if declares and structure is not None:
        settings = (settings, structure.key)
    try:
        where = page_ledger()
        ds = _page_dataset(cap, source, data)
        cost = Charge.of_noise(noise)
    except InputError as exc:
        st.error(f"Private releases are off: {exc}", icon=":material/error:")
        return
    st.caption(f":material/receipt_long: Every draw is **charged to the privacy ledger before it is shown**: to "
               f"{where.describe}. This draw costs {cost.describe} of dataset `{ds.name}`; showing it again "
               "(a rerun, a download) costs nothing. See the Privacy ledger page.")
    if where.kind == "session":
        _session_budget(cap, where, ds)
    status = st.container()
    file_name = output_name(cap.name, "release", file_stem)
    clicked = st.button("Draw a private release", icon=":material/lock:", key=f"{cap.name}_release_button",
                        disabled=refused)
    if clicked and not refused:
        ss = st.session_state
        ss.pop(slot, None)  # whatever happens below, an older draw is not shown as this one
        drawn = _draw(cap, where, ds, noise, mechanism, run, file_name)
        if drawn is not None:
            ss[slot] = (settings, drawn[0], drawn[1])
            ss[f"{slot}_receipt"] = drawn[2]
    with status:
        try:
            _standing(where, ds)
        except InputError as exc:
            st.error(str(exc), icon=":material/error:")
    if refused:
        st.caption("Nothing can be drawn until a usable public structure is declared (see above); nothing was charged.")
        return
    held = st.session_state.get(slot)
    if held is None or held[0] != settings:
        st.caption("No private release drawn for these settings yet.")
        return
    _, table, meta = held
    st.success(f"Private release ready: {len(table):,} rows, {meta.get('noise_text', '')}.",
               icon=":material/verified_user:")
    if st.session_state.get(f"{slot}_receipt"):
        st.caption(st.session_state[f"{slot}_receipt"])
    st.dataframe(table.head(PREVIEW_ROWS), hide_index=True, key=f"{cap.name}_release_table")
    if len(table) > PREVIEW_ROWS:
        st.caption(f"First {PREVIEW_ROWS} of {len(table):,} rows; the download has them all.")
    c1, c2 = st.columns(2)
    # deferred: the CSV text is built when the button is clicked, not on every rerun (seconds on 10^6 rows)
    c1.download_button("Download the release (CSV)", data=lambda: to_csv_text(table),
                       file_name=file_name, mime="text/csv",
                       key=f"{cap.name}_release_download", icon=":material/download:", on_click="ignore")
    c2.download_button("Download its description (JSON)", data=lambda: meta_json(meta),  # deferred, as the CSV
                       file_name=output_name(cap.name, "release", file_stem, "csv.meta.json"),
                       mime="application/json", key=f"{cap.name}_release_meta", icon=":material/description:",
                       on_click="ignore")


