"""Histogram page: counts per declared bin and every range of bins (hierarchy + GMC via the tree engine, flat).

A thin view in the shared page skeleton: Data → Privacy → Strategy and estimator → Simulation → Private release.
It reads the widgets, calls :mod:`dpviz.histogram` (``simulate``, ``release``) and draws :mod:`dpviz.viz.histogram`.
An upload is a CSV or Parquet file of numeric records (the value column picked here) binned on bins typed here (a
declaration: public settings, never read from the records); its release is charged to the records file.
"""

import numpy as np
import streamlit as st

from dpviz import ui
from dpviz.core.noise import Noise
from dpviz.core.records import is_parquet, parquet_csv
from dpviz.core.registry import capability
from dpviz.errors import InputError
from dpviz.histogram.estimators import METHOD_LABELS, METHODS
from dpviz.histogram.io import MAX_BYTES, parse_data
from dpviz.histogram.model import Bins
from dpviz.histogram.release import release, simulate
from dpviz.histogram.strategy import BRANCHINGS
from dpviz.viz import histogram as vh

CAP = capability("histogram")
ui.page_setup(CAP.name)
EPS_OPTIONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
DELTA_OPTIONS = [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4]
SOURCES = {"bundled": "Bundled sample", "upload": "Upload records (CSV)"}
ss = st.session_state

st.title(":material/bar_chart: Histogram release")
st.caption("Counts of records in declared, ordered bins — and of every range of bins — released with noise. The "
           "hierarchical method (Hay, Rastogi, Miklau & Suciu, PVLDB 2010) counts a tree of ranges over the bins and "
           "makes them consistent with GMC (Yang et al., Theoretical Computer Science 2023): long ranges get far "
           "less noise than a sum of flat noisy counts (Dwork et al., TCC 2006).")


def _upload(raw: bytes, name: str):
    if is_parquet(raw):  # a Parquet file: its columns as CSV (core.records.parquet_csv), as the CLI reads one
        raw = parquet_csv(raw, max_bytes=MAX_BYTES, label=repr(name))
    # parsed on the declared bins below (the bins are typed here, not read from the file)
    return raw, name, ui.records.read_records(raw, name, max_bytes=MAX_BYTES).columns


def _refine(key: tuple, held):
    raw, name, columns = held
    column = None
    if len(columns) > 1 and not {"bin", "count"} <= set(columns):  # records: which column holds the value
        column = st.selectbox("Value column (`--column`)", list(columns), key="histogram_column")
    c1, c2, c3 = st.columns(3)
    low = c1.number_input("Bins from (declared)", value=0.0, key="histogram_low")
    high = c2.number_input("to", value=100.0, key="histogram_high")
    width = c3.number_input("bin width", value=10.0, min_value=1e-9, key="histogram_width")
    try:
        bins = Bins.from_range(low, high, width)
        data = parse_data(raw, name, bins, column=column, declared_as="bins typed on this page")
    except InputError as exc:
        ui.clear_results(CAP.name)
        st.error(str(exc), icon=":material/error:")
        return None
    return (*key, column, low, high, width), data


key, data = ui.data_source(CAP, SOURCES, ui.UploadSpec(
    "Records (CSV or Parquet, one number per row in the value column)", ("csv", "parquet"), "histogram_file", _upload,
    caption="Records outside the declared bins are dropped; how many is never shown."), refine=_refine)
st.caption(f"{data.bins.m} bins, {data.total:,} records (the total is private: shown in simulation only).")

st.subheader(":material/shield: Privacy")
choice = ui.privacy_widgets(ui.PrivacyKeys(epsilon="histogram_eps", noise="histogram_noise", delta="histogram_delta"),
                            allow_rho=False, eps_options=EPS_OPTIONS, delta_options=DELTA_OPTIONS)
family, eps, delta = choice.family, choice.epsilon, choice.delta
params = {"epsilon": eps, "delta": delta}

st.subheader(":material/account_tree: Strategy and estimator")
s1, s2, s3 = st.columns(3)
branching = s1.selectbox("Fan-out of the hierarchy (b)", BRANCHINGS, key="histogram_b")
split = s2.radio("Budget over levels", ("uniform", "geometric"), key="histogram_split", horizontal=True)
methods = s3.multiselect("Methods to compare", METHODS, default=["gmc", "flat"], format_func=METHOD_LABELS.get,
                         key="histogram_methods")

seed = ui.simulation_section(CAP)
if methods:
    sim_noise = Noise.from_params(family, **params)
    sim = simulate(data, sim_noise, methods, np.random.default_rng(seed), branching=branching, split=split, q=5000)
    std = {m: np.sqrt(v) for m, v in sim.variance.items()}
    ui.chart(st, vh.bins_figure(data.bins.labels, data.x, sim.released, std=std,
                                   title="True count and released count per bin (±1 analytic std)"),
                    key="histogram_bins_chart")
    ui.chart(st, vh.range_error_figure(sim.table), key="histogram_error_chart")
    by_range = sim.table.sort_values("rmse_ranges").iloc[0]["method"]
    st.caption(f"On this draw, {METHOD_LABELS[by_range]} has the smallest error on random ranges of bins. A hierarchy "
               f"spends its budget over h levels, so each bin gets more noise than a flat count; it pays off on "
               f"long ranges, answered from about 2(b − 1)·log_b m nodes instead of up to m noisy bins — with "
               f"{data.bins.m:,} bins here (try the 1,000-bin bike-hours sample with fan-out 4 to see it win).")
    shown = sim.table.rename(columns={"method": "method", "rmse_bins": "RMSE per bin",
                                      "rmse_ranges": "RMSE on random ranges", "expected_rmse_bins": "expected RMSE per bin",
                                      "negatives": "negative bins"})
    st.dataframe(shown.fillna("no closed form"), hide_index=True, key="histogram_table")
else:
    st.info("Pick at least one method to compare.", icon=":material/info:")

release_method = st.selectbox("Method of the private release", METHODS, format_func=METHOD_LABELS.get,
                              key="histogram_release_method",
                              help="One method per release (post-processing of the same measurements costs no budget).")
release_noise = Noise.from_params(family, **params, discrete=True)
ui.release_heading(CAP, f"{release_noise.describe}, {METHOD_LABELS[release_method]}; columns bin, released, variance, std")
if key[0] == "bundled":
    structure = ui.shipped_structure(data.structure.origin)
else:
    structure = ui.Structure("declared", "bins typed on this page", None, ("typed", *key[-3:]))
    st.caption(":material/verified: **Public structure: declared** — the bins typed above (not read from the records).")


def _run_release():
    rel = release(data, release_noise, method=release_method, branching=branching, split=split,
                  source=str(key[1]))
    return rel.table(), rel.metadata()


held = ss.get("histogram_upload")
is_records = key[0] == "upload" and held is not None and not {"bin", "count"} <= set(held[1][2])
# an upload of records is charged to the records file (the CLI's identity of the same file, any capability)
records = ui.records.uploaded(CAP.name, key, max_bytes=MAX_BYTES) if is_records else None
ui.private_release_panel(
    CAP, settings=(key, float(eps), family, delta, branching, split, release_method), describe="", run=_run_release,
    file_stem=str(key[1]).removesuffix(".csv").removesuffix(".parquet"), source=key, noise=release_noise,
    data=records or data, mechanism=release_method,
    structure=structure, declares=True)
