"""The Data section every capability page starts with: a bundled sample, synthetic data or an upload.

:func:`data_source` draws the whole block (heading, source picker, sample picker, uploader, the fallback
to the bundled data after a rejected file) the same way on every page, and keeps the page's current source
in ``session_state[CAP + "_last"] = (source key, data)``. The source key names the data for the caches and
the privacy ledger: ``("bundled", NAME)``, ``("synthetic", ...)`` or ``("upload", FILE NAME, digest, ...)``
(:func:`dpviz.ledger.session.source_label`). Uploads are parsed once per file (:func:`handle_upload`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from dpviz.core.registry import SAMPLE_PREFIX, Capability
from dpviz.errors import InputError
from dpviz.ui.records import RECORDS_TYPES, RecordsSpec, RecordsUpload

__all__ = ["load_bundled", "UPLOAD_BYTES_KEY", "clear_results", "handle_upload", "UploadSpec",
           "data_source"]

UPLOAD_BYTES_KEY = "ui_upload_bytes"


@st.cache_resource(show_spinner=False, max_entries=8)
def load_bundled(capability: str, name: str) -> Any:
    """A bundled ``sample:NAME`` of a capability, loaded once per server process."""
    from dpviz.core.registry import load_sample

    return load_sample(capability, name if name.startswith(SAMPLE_PREFIX) else SAMPLE_PREFIX + name)


def _from_upload(held: Any) -> bool:
    """Whether a page's ``{cap}_last`` (its current source, first item the source key) came from an upload."""
    return isinstance(held, tuple) and bool(held) and isinstance(held[0], tuple) and held[0][:1] == ("upload",)


def clear_results(cap: str, extra: tuple[str, ...] = ()) -> list[str]:
    """Drop what a page shows from its last good upload: the page's last source when it was an upload, the
    drawn private release and its receipt (so its table and download buttons go), and ``extra`` (the page's
    own result keys: session keys, not widget keys, holding results computed from its data). Returns the keys
    dropped."""
    ss = st.session_state
    keys = [f"{cap}_private_release", f"{cap}_private_release_receipt", *extra]
    if _from_upload(ss.get(f"{cap}_last")):
        keys.append(f"{cap}_last")
    return [k for k in keys if ss.pop(k, None) is not None]


def handle_upload(f, prefix: str, parse: Callable[[bytes, str], Any], *, cap: str | None = None,
                  clears: tuple[str, ...] = (), forget: tuple[str, ...] = (), form: str | None = None) -> None:
    """Parse a newly uploaded file once, then mark it handled (a parser crash is retried, never
    hidden). A good file is kept as ``session_state[prefix + "_upload"] = (source key, parsed)``. A bad one
    shows its InputError (which names the line, column and what was expected) with ``st.error``, and drops
    everything the page showed from an earlier upload: ``session_state[prefix + "_upload"]``, its bytes and, through
    :func:`clear_results` for ``cap`` (default: ``prefix`` up to its first ``_``), its drawn release and the
    release's downloads, plus the page's results in ``clears``; the keys in ``forget`` (e.g. a
    memo that may hold the earlier upload's results) are dropped too, without counting as shown results. The
    page then falls back to its bundled data and says so; nothing of the rejected or the earlier file stays on
    screen. ``form`` names how the file is read (e.g. counted or records): another form parses the file again."""
    ss = st.session_state
    cap = cap or prefix.split("_", 1)[0]
    fid = None if f is None else (f.file_id if form is None else (f.file_id, form))
    if f is not None and ss.get(f"{prefix}_upload_fid") != fid:
        raw = f.getvalue()
        try:
            with st.spinner(f"Reading {f.name} ..."):
                parsed = parse(raw, f.name)
        except InputError as exc:
            ss[f"{prefix}_upload_error"] = f"{f.name} was rejected: {exc}"
            had = ss.pop(f"{prefix}_upload", None) is not None
            ss.get(UPLOAD_BYTES_KEY, {}).pop(prefix, None)
            ss[f"{prefix}_upload_cleared"] = bool(clear_results(cap, clears)) or had
            for key in forget:
                ss.pop(key, None)
        else:
            ss[f"{prefix}_upload_error"] = None
            key = ("upload", f.name, hashlib.sha1(raw).hexdigest())
            ss[f"{prefix}_upload"] = (key, parsed)
            # the latest good upload's bytes, for the ledger's identity (the same object: no copy)
            ss.setdefault(UPLOAD_BYTES_KEY, {})[prefix] = (key, raw)
        ss[f"{prefix}_upload_fid"] = fid
    if f is not None and ss.get(f"{prefix}_upload_fid") == fid and ss.get(f"{prefix}_upload_error"):
        cleared = (" The earlier results, the drawn private release and its downloads were cleared."
                   if ss.get(f"{prefix}_upload_cleared") else "")
        st.error(ss[f"{prefix}_upload_error"] + cleared, icon=":material/error:")


@dataclass(frozen=True)
class UploadSpec:
    """The file a page accepts: the uploader's ``label``, file ``types``, widget ``key``, ``help`` text, an
    optional ``caption`` under it (e.g. the caps), and ``parse(raw, name)`` (an InputError naming the line or
    field on a bad file, under the same caps as the CLI)."""

    label: str
    types: tuple[str, ...]
    key: str
    parse: Callable[[bytes, str], Any]
    help: str = ""
    caption: str | None = None


def _data_name(key: tuple, data: Any) -> str:
    return data.name


def _counted(cap: str, held: tuple, records: RecordsSpec, results: tuple[str, ...],
             forget: tuple[str, ...]) -> tuple[tuple, Any] | None:
    """A records upload counted by the page's choice of columns, or None (an incomplete choice, or one that
    cannot be counted: said with st.error, and the page's results from the upload dropped)."""
    ss = st.session_state
    try:
        return records.refine(*held)
    except InputError as exc:
        cleared = bool(clear_results(cap, results))
        for key in forget:
            ss.pop(key, None)
        st.error(f"{held[0][1]}: these columns cannot be counted: {str(exc).rstrip('.')}."
                 + (" The earlier results, the drawn private release and its downloads were cleared." if cleared
                    else ""), icon=":material/error:")
        return None


def data_source(cap: Capability, sources: Mapping[str, str], upload: UploadSpec, *,
                sample_label: str = "Data set", default_sample: str | None = None,
                synthetic: Callable[[], tuple[tuple, Any]] | None = None,
                refine: Callable[[tuple, Any], tuple[tuple, Any] | None] | None = None,
                results: tuple[str, ...] = (), forget: tuple[str, ...] = (),
                still_showing: str = "No valid file loaded yet: still showing {name}.",
                describe: Callable[[tuple, Any], str] = _data_name,
                loading: str = "Loading the data ...", records: RecordsSpec | None = None) -> tuple[tuple, Any]:
    """The Data section's source block, the same on every capability page; returns ``(source key, data)``
    and keeps it as ``session_state[cap.name + "_last"]``.

    ``sources`` maps the kinds offered (``"bundled"``, ``"synthetic"``, ``"upload"``) to their labels (radio
    ``{cap}_source``). Bundled: the registry's samples (a picker ``{cap}_sample`` labelled ``sample_label`` when
    there are several; ``default_sample`` first, else the first sample). Synthetic: ``synthetic()`` draws its
    own widgets and returns ``(key, data)``. Upload: the uploader of ``upload``, parsed once per file
    (:func:`handle_upload`: a rejected file drops the page's ``results`` keys, and ``forget`` as there); ``refine(key, parsed)`` may draw widgets that turn the parsed
    file into the data (``(key, data)``, or None when they do not give usable data yet). Without usable upload
    the page keeps its last source (or the default sample) and says ``still_showing`` with ``{name}`` =
    ``describe(key, data)`` (default: ``data.name``).

    ``records`` (:class:`dpviz.ui.records.RecordsSpec`): the upload may also be records (radio
    ``{cap}_upload_form``: the page's counted form or records, CSV, gzip CSV or Parquet); a records file is
    checked by :func:`dpviz.ui.records.read_records` and counted by ``records.refine``, whose InputError (a
    column choice that cannot be counted) is said with ``st.error`` and drops the page's results as a
    rejected file does."""
    ss = st.session_state
    names = {s.name: s.title for s in cap.samples}
    default = default_sample if default_sample in names else next(iter(names))

    def bundled(name: str) -> tuple[tuple, Any]:
        with st.spinner(loading):
            return ("bundled", name), load_bundled(cap.name, name)

    st.subheader(":material/database: Data")
    kind = st.radio("Data source", list(sources), format_func=sources.get, key=f"{cap.name}_source",
                    horizontal=True)
    current: tuple[tuple, Any] | None = None
    if kind == "bundled":
        sample = default
        if len(names) > 1:
            sample = st.selectbox(sample_label, list(names), index=list(names).index(default),
                                  format_func=lambda s: f"{names[s]} ({SAMPLE_PREFIX}{s})", key=f"{cap.name}_sample")
        current = bundled(sample)
    elif kind == "synthetic" and synthetic is not None:
        current = synthetic()
    else:
        form = "counted"
        types = list(upload.types)
        if records is not None:
            form = st.radio("The file holds", ["counted", "records"], key=f"{cap.name}_upload_form", horizontal=True,
                            format_func={"counted": "Counts (the page's form)",
                                         "records": f"Records ({records.holds})"}.get)
            types += [t for t in RECORDS_TYPES if t not in types]
        label = upload.label if form == "counted" else f"Records (CSV, gzip CSV or Parquet): {records.holds}"
        f = st.file_uploader(label, type=types, key=upload.key,  # the key and types name the widget, not the label
                             help=(upload.help or None) if form == "counted" else None)
        if upload.caption and form == "counted":
            st.caption(upload.caption)
        elif form == "records":
            st.caption(f"Records: a CSV, gzip CSV or Parquet file, {records.holds}; the same byte cap "
                       f"({records.max_bytes / 1e6:,.0f} MB) as the CLI. Pick below which columns are what.")
        handle_upload(f, cap.name, upload.parse if form == "counted" else records.parse, clears=results,
                      forget=forget, form=None if records is None else form)
        held = ss.get(f"{cap.name}_upload")
        if held is not None and (form == "records") != isinstance(held[1], RecordsUpload):
            held = None  # read in the other form (the file since removed): not this form's data
        if held is not None and form == "records":
            current = _counted(cap.name, held, records, results, forget)
        elif held is not None:
            current = held if refine is None else refine(*held)
        if current is None:
            current = ss.get(f"{cap.name}_last") or bundled(default)
            st.info(still_showing.format(name=describe(*current)), icon=":material/info:")
    ss[f"{cap.name}_last"] = current
    return current
