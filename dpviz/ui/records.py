"""Records uploads on the capability pages (issue 21): a file of one row per person, event or edge, counted by
the capability's own records function — the one its CLI calls — never by a copy of counting code here.

A page that takes records (:class:`RecordsSpec`, given to :func:`dpviz.ui.sources.data_source`) lets the reader
say the upload holds *records* (CSV, gzip CSV or Parquet: :data:`RECORDS_TYPES`) instead of the page's counted
form. The file is checked once (:func:`read_records`: the size cap, text or Parquet, a header of named
columns) and kept as a :class:`RecordsUpload`; the page's ``refine`` then draws the column pickers and counts:

* Tree (:func:`tree_refine`): the level columns, top to bottom in the order picked →
  :func:`dpviz.tree.io.records_tree` (``tree simulate|release --levels``); a release joins
  :func:`dpviz.tree.io.records_counts` onto the declared hierarchy (:func:`tree_counts`), as the CLI does.
* Stream (:func:`stream_refine`): the time column, the bucket (day, hour or N seconds) and the declared first
  and last day → :func:`dpviz.stream.io.stream_from_events` (``--time-column --bucket --start --end``).
* Graph (:func:`graph_refine`): the two endpoint columns → :func:`dpviz.graph.io.edges_from_records`.
* Marginals reads records already; its page adds the person bound (:func:`bound_widgets`) and counts with
  :func:`dpviz.marginals.records.dataset_from_records` when one is set (``--person-column``).

An optional person column and bound K (:class:`Bound`: a person's first K records kept, the rest dropped before
counting) multiply the sensitivity by K: :meth:`Counted.noise` is :func:`dpviz.core.records.per_record_noise`
and :meth:`Counted.metadata` :func:`dpviz.core.records.person_metadata`, whose unit of privacy
(:func:`dpviz.core.records.unit_of_privacy`) the page states. A page passes the :class:`RecordsUpload` as the
data its Private release panel charges: the ledger identity is then the records file's
(:func:`dpviz.ledger.session.page_records_dataset`), the one ``ledger set-budget FILE`` and every CLI release
counted from the same file charge, whichever capability counts it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from dpviz.core.records import is_parquet, parquet_names, per_record_noise, person_metadata, unit_of_privacy
from dpviz.errors import InputError

__all__ = ["RECORDS_TYPES", "RecordsUpload", "RecordsSpec", "Bound", "Counted", "read_records", "bound_widgets",
           "counted", "keep", "uploaded", "tree_refine", "tree_counts", "stream_refine", "range_structure", "graph_refine",
           "marginals_counted", "marginals_declared"]

RECORDS_TYPES = ("csv", "gz", "parquet")
"""The file types a records upload may be (a ``.csv.gz`` ends in ``gz``)."""
_NONE = ""
BUCKETS = {"day": "day", "hour": "hour", "seconds": "N seconds"}


@dataclass(frozen=True, eq=False)
class RecordsUpload:
    """A records upload as checked by :func:`read_records`: its bytes, file ``name`` and column names."""

    raw: bytes
    name: str
    columns: tuple[str, ...]
    max_bytes: int

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.raw).hexdigest()


def read_records(raw: bytes, name: str, *, max_bytes: int) -> RecordsUpload:
    """Check an upload as records: Parquet (its schema, the byte cap first) or a CSV / gzip CSV read by the
    capped reader (NUL bytes refused: a binary file is not text), with a header of named columns and at least
    one row. InputError (one line) otherwise."""
    label = repr(name)
    if is_parquet(raw):
        columns = parquet_names(raw, max_bytes=max_bytes, label=label)
    else:
        from dpviz.core.reader import decode, read_capped

        text = decode(read_capped(raw, max_bytes=max_bytes, refuse_nul=True, label=label).data)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if not lines:
            raise InputError(f"{label} is empty: expected a header of column names and one row per record")
        columns = [c.strip() for c in next(csv.reader([lines[0]]))]
        bad = next((c for c in columns if not c or not c.isprintable()), None)
        if bad is not None:
            raise InputError(f"{label}, line 1: a column without a printable name ({bad[:40]!r}); expected a header "
                             "of column names")
        if len(lines) < 2:
            raise InputError(f"{label} has a header and no records; expected one row per record")
    if len(set(columns)) != len(columns):
        raise InputError(f"{label}: a column name appears twice in the header")
    if not columns:
        raise InputError(f"{label}: no columns")
    return RecordsUpload(bytes(raw), name, tuple(columns), max_bytes)


@dataclass(frozen=True)
class RecordsSpec:
    """What a page does with a records upload: ``holds`` (e.g. "one row per person, one column per level"),
    ``refine(key, upload)`` drawing the column pickers and returning ``(key, data)`` (None while the choice is
    incomplete, InputError for a choice that cannot be counted), and the byte cap ``max_bytes``."""

    holds: str
    refine: Callable[[tuple, RecordsUpload], tuple[tuple, Any] | None]
    max_bytes: int

    def parse(self, raw: bytes, name: str) -> RecordsUpload:
        return read_records(raw, name, max_bytes=self.max_bytes)


@dataclass(frozen=True)
class Bound:
    """A contribution bound: the ``person`` column and K (both None: every record is the unit)."""

    person: str | None = None
    k: int | None = None

    @property
    def unit(self) -> str:
        return unit_of_privacy(self.person, self.k)


@dataclass(frozen=True, eq=False)
class Counted:
    """Data a page counted from a :class:`RecordsUpload` by ``by`` (the columns picked, ``options`` any other
    choice such as a bucket) under ``bound``; ``declared`` is the public range the reader declared, if any."""

    upload: RecordsUpload
    by: tuple[str, ...]
    bound: Bound
    options: tuple = ()
    declared: tuple[str, str] | None = None

    def noise(self, noise: Any) -> Any:
        """The record-level noise that meets ``noise``'s budget at sensitivity × K."""
        return per_record_noise(noise, self.bound.k)

    def metadata(self, meta: dict[str, Any], noise: Any) -> dict[str, Any]:
        """A release's metadata stated at the person level (``noise``: the budget charged)."""
        out = person_metadata(meta, noise, person=self.bound.person, max_contributions=self.bound.k,
                              source=self.upload.name)
        if self.declared is not None:  # a stream of events: its declared time range (as the CLI's --start/--end)
            out["time_range"] = {"declared": list(self.declared)}
        return out

    def privacy_note(self) -> None:
        """The Privacy section's line with a bound K > 1: what the budget buys per record (nothing otherwise:
        the Data section said the unit of privacy)."""
        k = self.bound.k or 1
        if k > 1:
            st.caption(f":material/groups: **Sensitivity × K = {k}** (at most {k} records per person, column "
                       f"{self.bound.person!r}): the simulation and the release draw the noise of this budget for a "
                       f"sensitivity {k} times the record-level one; the ledger is charged this budget.")

    def caption(self) -> None:
        """Say what was counted and the unit of privacy."""
        k = self.bound.k or 1
        st.caption(f":material/groups: **Counted from records** ({self.upload.name}, by {', '.join(self.by)}). "
                   f"Unit of privacy: {self.bound.unit}."
                   + (f" Every sensitivity is multiplied by K = {k}: the noise is drawn for the record-level "
                      f"sensitivity × {k} (ε/K per record, ρ/K² for Gaussian), and the ledger is charged the "
                      "budget chosen below." if k > 1 else ""))


def _slot(cap: str) -> str:
    return f"{cap}_records_counted"


def counted(cap: str, key: tuple) -> Counted | None:
    """What the page's current data was counted from, if ``key`` (its source key) is a records upload's."""
    held = st.session_state.get(_slot(cap))
    return held[1] if held is not None and held[0] == key and _is_records(key) else None


def _is_records(key: tuple) -> bool:
    return bool(key) and key[0] == "upload" and isinstance(key[-1], tuple) and key[-1][:1] == ("records",)


def keep(cap: str, key: tuple, data: Any, done: Counted) -> tuple[tuple, Any]:
    """Hold ``done`` as what the page's data under ``key`` was counted from (:func:`counted`); say it."""
    st.session_state[_slot(cap)] = (key, done)
    done.caption()
    return key, data


def uploaded(cap: str, key: tuple, *, max_bytes: int) -> RecordsUpload | None:
    """The page's current upload (its bytes as uploaded, kept by :func:`dpviz.ui.sources.handle_upload`) as a
    :class:`RecordsUpload`, for a page whose upload is records without a records form (Histogram): its Private
    release is then charged to the records file. None if ``key`` is not that upload's."""
    from dpviz.ui.sources import UPLOAD_BYTES_KEY

    kept = st.session_state.get(UPLOAD_BYTES_KEY, {}).get(cap)
    if not key or key[0] != "upload" or kept is None or kept[0] != tuple(key[:3]):
        return None
    return RecordsUpload(bytes(kept[1]), str(key[1]), (), max_bytes)


def bound_widgets(cap: str, columns: tuple[str, ...] | list[str], *, exclude: tuple[str, ...] = ()) -> Bound:
    """The optional person column and K (widgets ``{cap}_records_person``, ``{cap}_records_k``)."""
    options = [_NONE, *(c for c in columns if c not in exclude)]
    if st.session_state.get(f"{cap}_records_person") not in options:
        st.session_state[f"{cap}_records_person"] = _NONE
    p1, p2 = st.columns([2, 1])
    person = p1.selectbox("Person column (optional)", options, key=f"{cap}_records_person",
                          format_func=lambda c: c or "none: each record is the unit of privacy",
                          help="Where one person has several records: the column naming the person. Their first K "
                               "records (file order) are kept, the rest dropped before counting; every sensitivity "
                               "is multiplied by K (`--person-column ID --max-contributions K`).")
    if not person:
        return Bound()
    k = int(p2.number_input("Max contributions K", min_value=1, max_value=10_000, value=1, step=1,
                            key=f"{cap}_records_k", help="Records counted per person (the rest are dropped)."))
    return Bound(person, k)


# ---- tree ---------------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def _tree(digest: str, levels: tuple, person: str | None, k: int | None, max_nodes: int, _upload: RecordsUpload):
    from dpviz.tree.io import records_tree

    data = records_tree(_upload.raw, list(levels), person=person, max_contributions=k,
                        max_nodes=max_nodes, max_bytes=_upload.max_bytes)
    _ = data.v  # built now: a bad count fails here
    return dataclasses.replace(data, name=_upload.name)  # named by the file, not "upload"


@st.cache_resource(show_spinner=False, max_entries=4)
def _tree_counts(digest: str, levels: tuple, person: str | None, k: int | None, max_nodes: int,
                 _upload: RecordsUpload):
    from dpviz.tree.io import records_counts

    return records_counts(_upload.raw, list(levels), person=person, max_contributions=k,
                          max_nodes=max_nodes, max_bytes=_upload.max_bytes)


def tree_refine(cap: str, *, max_nodes: int) -> Callable[[tuple, RecordsUpload], tuple[tuple, Any] | None]:
    """The Tree page's records widgets: the level columns in the order picked (``--levels``), the bound."""

    def refine(key: tuple, upload: RecordsUpload) -> tuple[tuple, Any] | None:
        levels = st.multiselect("Level columns, top to bottom (in the order you pick them)", list(upload.columns),
                                key=f"{cap}_records_levels",
                                help="Each record adds 1 to the leaf its level values name "
                                     "(`python -m dpviz tree simulate|release DATA --levels a,b,c`).")
        bound = bound_widgets(cap, upload.columns, exclude=tuple(levels))
        if not levels:
            st.info("Pick the level columns (top level first) to count the records.", icon=":material/info:")
            return None
        choice = ("records", tuple(levels), bound.person, bound.k)
        with st.spinner("Counting the records ..."):
            data = _tree(upload.digest, tuple(levels), bound.person, bound.k, max_nodes, upload)
        return keep(cap, (*key, choice), data, Counted(upload, tuple(levels), bound, (max_nodes,)))

    return refine


def tree_counts(done: Counted):
    """The leaf counts by path id for a release on a declared hierarchy (what ``tree release --levels
    --hierarchy`` joins): :func:`dpviz.tree.io.records_counts`."""
    return _tree_counts(done.upload.digest, done.by, done.bound.person, done.bound.k, done.options[0], done.upload)


# ---- stream -------------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def _events(digest: str, time_column: str, bucket: str, declared: tuple | None, person: str | None, k: int | None,
            max_steps: int, _upload: RecordsUpload):
    from dpviz.stream.io import stream_from_events

    start, end = declared if declared is not None else (None, None)
    return stream_from_events(_upload.raw, time_column, bucket, person=person, max_contributions=k,
                              max_steps=max_steps, max_bytes=_upload.max_bytes, start=start, end=end)


def stream_refine(cap: str, *, max_steps: int) -> Callable[[tuple, RecordsUpload], tuple[tuple, Any] | None]:
    """The Stream page's records widgets: the time column, the bucket, the declared first and last day, the
    bound (``stream ... --time-column T --bucket B --start D --end D``)."""

    def refine(key: tuple, upload: RecordsUpload) -> tuple[tuple, Any] | None:
        t1, t2, t3 = st.columns([2, 2, 1])
        cols = list(upload.columns)
        timely = [c for c in cols if any(w in c.lower() for w in ("time", "date", "ts", "when", "day", "period"))]
        if st.session_state.get(f"{cap}_records_time") not in cols:  # a time-like name first, else the first column
            st.session_state[f"{cap}_records_time"] = (timely or cols)[0]
        time_column = t1.selectbox("Time column", cols, key=f"{cap}_records_time",
                                   help="One row per event; its date/time (ISO text, a date or a timestamp).")
        kind = t2.radio("Bucket", list(BUCKETS), format_func=BUCKETS.get, key=f"{cap}_records_bucket",
                        horizontal=True, help="Each step counts the events of one bucket (epoch-aligned).")
        bucket = kind
        if kind == "seconds":
            bucket = str(int(t3.number_input("Seconds", min_value=1, value=900, step=60,
                                             key=f"{cap}_records_seconds")))
        d1, d2 = st.columns(2)
        start = d1.date_input("Declared first day", value=None, key=f"{cap}_records_start",
                              help="The public time range (`--start`): needed for a private release.")
        end = d2.date_input("Declared last day (inclusive)", value=None, key=f"{cap}_records_end",
                            help="The public time range (`--end`): events outside it are dropped, untold.")
        declared = None
        if start is not None and end is not None:
            declared = (start.isoformat(), f"{end.isoformat()}T23:59:59")
        elif start is not None or end is not None:
            st.warning("Declare both the first and the last day (or neither).", icon=":material/warning:")
            return None
        bound = bound_widgets(cap, upload.columns, exclude=(time_column,))
        choice = ("records", time_column, bucket, declared, bound.person, bound.k)
        with st.spinner("Counting the events per bucket ..."):
            data = _events(upload.digest, time_column, bucket, declared, bound.person, bound.k, max_steps, upload)
        if declared is None:
            st.caption(":material/warning: The time range is **read from the events** (first to last): fine for "
                       "the simulation, not private; a private release needs the declared first and last day.")
        return keep(cap, (*key, choice), data, Counted(upload, (time_column,), bound, (bucket,), declared))

    return refine


def range_structure(done: Counted):
    """The public time range of a release of events: declared (a :class:`dpviz.ui.sections.Structure`), or
    None (nothing may be drawn) after saying why."""
    from dpviz.ui.sections import Structure

    if done.declared is None:
        st.info("**Nothing can be drawn yet:** a private release of events publishes their time range, which must "
                "be declared, not read from the records: pick the declared first and last day in the Data "
                "section (`--start DATE --end DATE`).", icon=":material/block:")
        return None
    origin = f"{done.declared[0]} to {done.declared[1][:10]}"
    st.caption(f":material/verified: **Public structure: declared** — the time range {origin}, bucket "
               f"{done.options[0]}. Nothing of it is read from the records.")
    return Structure("declared", origin, done.declared, ("declared", *done.declared, *done.options))


# ---- graph --------------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def _edges(digest: str, columns: tuple, caps: tuple, name: str, _upload: RecordsUpload):
    from dpviz.graph.io import edges_from_records

    max_edges, max_nodes = caps
    return edges_from_records(_upload.raw, columns=list(columns), max_bytes=_upload.max_bytes, max_edges=max_edges,
                              max_nodes=max_nodes, name=name)


def graph_refine(cap: str, *, max_edges: int, max_nodes: int,
                 stem: Callable[[str], str]) -> Callable[[tuple, RecordsUpload], tuple[tuple, Any] | None]:
    """The Graph page's records widgets: the two endpoint columns of the edge table (edge-level privacy: the
    unit is one edge, a repeated row counts once; no person bound, as on the CLI)."""

    def refine(key: tuple, upload: RecordsUpload) -> tuple[tuple, Any] | None:
        cols = list(upload.columns)
        g1, g2 = st.columns(2)
        u = g1.selectbox("Endpoint column u", cols, index=0, key=f"{cap}_records_u")
        v = g2.selectbox("Endpoint column v", cols, index=min(1, len(cols) - 1), key=f"{cap}_records_v")
        if u == v:
            raise InputError(f"the two endpoint columns are both {u!r}; pick two different columns")
        choice = ("records", u, v)
        with st.spinner("Counting the distinct edge rows ..."):
            data = _edges(upload.digest, (u, v), (max_edges, max_nodes), stem(upload.name), upload)
        return keep(cap, (*key, choice), data, Counted(upload, (u, v), Bound()))

    return refine


# ---- marginals ----------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def _marginals(digest: str, attrs: tuple, bins: int, binning: str, person: str, k: int, declared: tuple, name: str,
               _upload: RecordsUpload, _domain: Any, max_rows: int):
    from dpviz.marginals.records import dataset_from_records

    return dataset_from_records(_upload.raw, list(attrs), bins=bins, binning=binning, domain=_domain, person=person,
                                max_contributions=k, max_bytes=_upload.max_bytes, max_rows=max_rows, name=name)


def marginals_counted(cap: str, key: tuple, raw: bytes, name: str, stem: str, attrs: tuple, bins: int, binning: str,
                      bound: Bound, *, max_bytes: int, max_rows: int) -> tuple[tuple, Any]:
    """The Marginals page's records under a person bound (``marginals ... --person-column ID
    --max-contributions K``): :func:`dpviz.marginals.records.dataset_from_records`; ``key`` gets the bound."""
    upload = RecordsUpload(bytes(raw), name, tuple(attrs), max_bytes)
    data = _marginals(upload.digest, tuple(attrs), int(bins), binning, bound.person, bound.k, (), stem, upload, None,
                      max_rows)
    return keep(cap, (*key, ("records", bound.person, bound.k)), data,
                Counted(upload, tuple(attrs), bound, (stem, max_rows)))


def marginals_declared(done: Counted, declaration_key: tuple, domain: Any) -> Any:
    """The same records under the bound, coded by the declared ``domain`` (for a release)."""
    stem, max_rows = done.options
    return _marginals(done.upload.digest, done.by, 10, "quantile", done.bound.person, done.bound.k, declaration_key,
                      stem, done.upload, domain, max_rows)
