"""Streamlit pieces shared by every capability page (the page skeleton of :mod:`dpviz.core.registry`).

Kept outside the ``dpviz`` package, which never imports Streamlit. Pages stay thin: they read their
widgets, call ``dpviz`` and hand the results to these helpers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd
import streamlit as st

from dpviz.core.modes import RELEASE_NOTICE, fresh_seed, output_name
from dpviz.core.registry import Capability
from dpviz.core.tables import meta_json, to_csv_text
from dpviz.errors import InputError

PREVIEW_ROWS = 200


def page_setup(cap: Capability) -> None:
    """``st.set_page_config`` for a capability page (title and icon from the registry)."""
    st.set_page_config(page_title=f"dpviz · {cap.title}", page_icon=cap.icon, layout="wide")


@st.cache_resource(show_spinner=False, max_entries=8)
def load_bundled(capability: str, name: str) -> Any:
    """A bundled ``sample:NAME`` of a capability, loaded once per server process."""
    from dpviz.core.registry import SAMPLE_PREFIX, load_sample

    return load_sample(capability, name if name.startswith(SAMPLE_PREFIX) else SAMPLE_PREFIX + name)


def handle_upload(f, prefix: str, parse: Callable[[bytes, str], Any]) -> None:
    """Parse a newly uploaded file once, then mark it handled (a parser crash is retried, never
    hidden). A good file is kept as ``session_state[prefix + "_upload"] = (source key, parsed)``; a bad
    one shows its InputError with ``st.error`` and leaves the last good data in place."""
    ss = st.session_state
    if f is not None and ss.get(f"{prefix}_upload_fid") != f.file_id:
        raw = f.getvalue()
        try:
            with st.spinner(f"Reading {f.name} ..."):
                parsed = parse(raw, f.name)
        except InputError as exc:
            ss[f"{prefix}_upload_error"] = str(exc)
        else:
            ss[f"{prefix}_upload_error"] = None
            ss[f"{prefix}_upload"] = (("upload", f.name, hashlib.sha1(raw).hexdigest()), parsed)
        ss[f"{prefix}_upload_fid"] = f.file_id
    if f is not None and ss.get(f"{prefix}_upload_fid") == f.file_id and ss.get(f"{prefix}_upload_error"):
        st.error(ss[f"{prefix}_upload_error"], icon=":material/error:")


def noise_caption(sim_noise, release_noise) -> None:
    """Say which noise each mode uses: continuous for the simulation, discrete for the release. For
    Gaussian (ε, δ) they differ: the exact Gaussian profile vs the CKS conversion (discrete noise)."""
    extra = ""
    if sim_noise.family == "gaussian" and sim_noise.budget.kind == "approx":
        extra = (" The simulation calibrates (ε, δ) with the exact Gaussian profile; the discrete Gaussian of a "
                 "release uses the Canonne–Kamath–Steinke conversion, which holds for it (a little more noise).")
    st.caption(f"Simulation: {sim_noise.describe}. Private release: {release_noise.describe}.{extra}")


def simulation_section(cap: Capability) -> int:
    """Start the Simulation section: heading, banner, and the simulation seed (session key
    ``{cap.name}_seed``, a fresh seed on first load, a "New noise draw" button). Returns the seed."""
    key = f"{cap.name}_seed"
    st.subheader(":material/science: Simulation")
    simulation_banner(cap)
    if key not in st.session_state:
        st.session_state[key] = fresh_seed()
    s1, _ = st.columns([1, 3])
    seed = int(s1.number_input("Noise seed (simulation)", min_value=0, max_value=2**31 - 1, step=1, key=key))
    s1.button("New noise draw", icon=":material/casino:", key="new_draw",
              on_click=lambda: st.session_state.update({key: fresh_seed()}))
    return seed


def simulation_banner(cap: Capability) -> None:
    """The notice every simulated view carries."""
    st.info(f"**Simulation — not a private release.** Seeded floating-point noise; the true values and the "
            f"errors are shown for teaching and what-if. To publish, use **Private release** below. "
            f"Unit of privacy: {cap.unit_of_privacy}.", icon=":material/science:")


def private_release_panel(cap: Capability, *, settings: Hashable, describe: str,
                          run: Callable[[], tuple[pd.DataFrame, dict[str, Any]]], file_stem: str) -> None:
    """The Private release panel: a button that draws fresh discrete noise from the OS CSPRNG
    (``run`` must not use a seed or the truth in its output), a preview of the released table and its
    download. Nothing here shows a true value. A release made under other settings is dropped."""
    st.subheader(":material/lock: Private release")
    st.caption(f"{RELEASE_NOTICE[0].upper() + RELEASE_NOTICE[1:]}. One mechanism: {describe}. "
               f"Every click draws fresh noise. Unit of privacy: {cap.unit_of_privacy}.")
    st.caption(f":material/receipt_long: A release drawn here is **not charged to the privacy ledger**. To keep a "
               f"dataset's budget across releases, release with `python -m dpviz {cap.name} release ... "
               f"--ledger PATH` (see the Privacy ledger page).")
    slot = f"{cap.name}_private_release"
    if st.button("Draw a private release", icon=":material/lock:", key=f"{cap.name}_release_button"):
        try:
            with st.spinner("Drawing discrete noise from the OS CSPRNG ..."):
                table, meta = run()
        except InputError as exc:
            st.error(str(exc), icon=":material/error:")
        else:
            st.session_state[slot] = (settings, table, meta)
    held = st.session_state.get(slot)
    if held is None or held[0] != settings:
        st.caption("No private release drawn for these settings yet.")
        return
    _, table, meta = held
    st.success(f"Private release ready: {len(table):,} rows, {meta.get('noise_text', '')}.",
               icon=":material/verified_user:")
    st.dataframe(table.head(PREVIEW_ROWS), hide_index=True, key=f"{cap.name}_release_table")
    if len(table) > PREVIEW_ROWS:
        st.caption(f"First {PREVIEW_ROWS} of {len(table):,} rows; the download has them all.")
    c1, c2 = st.columns(2)
    # deferred: the CSV text is built when the button is clicked, not on every rerun (seconds on 10^6 rows)
    c1.download_button("Download the release (CSV)", data=lambda: to_csv_text(table),
                       file_name=output_name(cap.name, "release", file_stem), mime="text/csv",
                       key=f"{cap.name}_release_download", icon=":material/download:", on_click="ignore")
    c2.download_button("Download its description (JSON)", data=lambda: meta_json(meta),  # deferred, as the CSV
                       file_name=output_name(cap.name, "release", file_stem, "csv.meta.json"),
                       mime="application/json", key=f"{cap.name}_release_meta", icon=":material/description:",
                       on_click="ignore")


def simulation_file_name(cap: Capability, file_stem: str) -> str:
    """Download name of a simulated table: it says 'simulation'."""
    return output_name(cap.name, "simulate", file_stem)
