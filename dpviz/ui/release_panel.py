"""Streamlit pieces shared by every capability page (the page skeleton of :mod:`dpviz.core.registry`).

Kept outside the ``dpviz`` package, which never imports Streamlit. Pages stay thin: they read their
widgets, call ``dpviz`` and hand the results to these helpers.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import streamlit as st

from dpviz.core.modes import RELEASE_NOTICE, fresh_seed, output_name
from dpviz.core.noise import Noise
from dpviz.core.registry import Capability
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE
from dpviz.core.tables import meta_json, to_csv_text
from dpviz.errors import InputError
from dpviz.ledger import session
from dpviz.ledger.accounts import Charge, Room, Spent
from dpviz.ledger.identity import DatasetId
from dpviz.ledger.store import BudgetExceeded

PREVIEW_ROWS = 200
MAX_KEPT = 8
"""Dataset identities kept per session (the latest few sources)."""
SESSION_LEDGER_KEY = "dpviz_session_ledger"
UPLOAD_BYTES_KEY = "ui_upload_bytes"


def page_setup(cap: Capability) -> None:
    """``st.set_page_config`` for a capability page (title and icon from the registry)."""
    st.set_page_config(page_title=f"dpviz · {cap.title}", page_icon=cap.icon, layout="wide")


@st.cache_resource(show_spinner=False, max_entries=8)
def load_bundled(capability: str, name: str) -> Any:
    """A bundled ``sample:NAME`` of a capability, loaded once per server process."""
    from dpviz.core.registry import SAMPLE_PREFIX, load_sample

    return load_sample(capability, name if name.startswith(SAMPLE_PREFIX) else SAMPLE_PREFIX + name)


RESULT_KEYS: dict[str, tuple[str, ...]] = {
    "tree": (),
    "stream": (),
    "marginals": ("marginals_sim",),
    "graph": ("graph_audit", "graph_release_partition"),
}
"""Per capability, the session keys (not widget keys) that hold results computed from the page's data: a
rejected upload drops them (:func:`clear_results`), with the drawn release, its receipt and the upload."""


def _from_upload(held: Any) -> bool:
    """Whether a page's ``{cap}_last`` (its current source, first item the source key) came from an upload."""
    return isinstance(held, tuple) and bool(held) and isinstance(held[0], tuple) and held[0][:1] == ("upload",)


def clear_results(cap: str, extra: tuple[str, ...] = ()) -> list[str]:
    """Drop what a page shows from its last good upload: the page's last source when it was an upload, the
    drawn private release and its receipt (so its table and download buttons go), the capability's
    :data:`RESULT_KEYS` and ``extra``. Returns the keys dropped."""
    ss = st.session_state
    keys = [f"{cap}_private_release", f"{cap}_private_release_receipt", *RESULT_KEYS.get(cap, ()),
            *extra]
    if _from_upload(ss.get(f"{cap}_last")):
        keys.append(f"{cap}_last")
    return [k for k in keys if ss.pop(k, None) is not None]


def handle_upload(f, prefix: str, parse: Callable[[bytes, str], Any], *, cap: str | None = None,
                  clears: tuple[str, ...] = ()) -> None:
    """Parse a newly uploaded file once, then mark it handled (a parser crash is retried, never
    hidden). A good file is kept as ``session_state[prefix + "_upload"] = (source key, parsed)``. A bad one
    shows its InputError (which names the line, column and what was expected) with ``st.error``, and drops
    everything the page showed from an earlier upload: ``session_state[prefix + "_upload"]``, its bytes and, through
    :func:`clear_results` for ``cap`` (default: ``prefix`` up to its first ``_``), the page's results, its
    drawn release and the release's downloads, plus the keys in ``clears``. The page then falls back to
    its bundled data and says so; nothing of the rejected or the earlier file stays on screen."""
    ss = st.session_state
    cap = cap or prefix.split("_", 1)[0]
    if f is not None and ss.get(f"{prefix}_upload_fid") != f.file_id:
        raw = f.getvalue()
        try:
            with st.spinner(f"Reading {f.name} ..."):
                parsed = parse(raw, f.name)
        except InputError as exc:
            ss[f"{prefix}_upload_error"] = f"{f.name} was rejected: {exc}"
            had = ss.pop(f"{prefix}_upload", None) is not None
            ss.get(UPLOAD_BYTES_KEY, {}).pop(prefix, None)
            ss[f"{prefix}_upload_cleared"] = bool(clear_results(cap, clears)) or had
        else:
            ss[f"{prefix}_upload_error"] = None
            key = ("upload", f.name, hashlib.sha1(raw).hexdigest())
            ss[f"{prefix}_upload"] = (key, parsed)
            # the latest good upload's bytes, for the ledger's identity (the same object: no copy)
            ss.setdefault(UPLOAD_BYTES_KEY, {})[prefix] = (key, raw)
        ss[f"{prefix}_upload_fid"] = f.file_id
    if f is not None and ss.get(f"{prefix}_upload_fid") == f.file_id and ss.get(f"{prefix}_upload_error"):
        cleared = (" The earlier results, the drawn private release and its downloads were cleared."
                   if ss.get(f"{prefix}_upload_cleared") else "")
        st.error(ss[f"{prefix}_upload_error"] + cleared, icon=":material/error:")


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
    is identified by its bytes (kept by :func:`handle_upload`), like the CLI reading the file."""
    ss = st.session_state
    known = ss.setdefault("ui_dataset_ids", {})
    ident = (cap.name, session.identity_key(source))
    if ident not in known:
        if cap.name == "marginals" and source[0] == "upload":
            kept = ss.get(UPLOAD_BYTES_KEY, {}).get(cap.name)
            data = kept[1] if kept is not None and kept[0] == ident[1] else None
        with st.spinner("Identifying the dataset for the privacy ledger ..."):
            ds = session.page_dataset(cap.name, source, data)
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
        receipt = session.charge_draw(where, ds, noise, mechanism, output=f"dashboard download {file_name}")
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


@dataclass(frozen=True)
class DeclarationSpec:
    """What an upload's private release must declare: ``what`` (e.g. "vertex set"), the uploader's
    ``label``, file ``types``, ``parse(raw, name)`` (InputError naming the line/field on a bad file) and the
    CLI ``template`` command that writes a declaration to review."""

    what: str
    label: str
    types: tuple[str, ...]
    parse: Callable[[bytes, str], Any]
    template: str


@dataclass(frozen=True)
class Structure:
    """The public structure of a page release: ``shipped`` (a bundled sample's declaration), ``declared``
    (an uploaded declaration, parsed in ``value``), ``generated`` (synthetic data made from public settings)
    or ``data`` (the opt-out: read from the upload, not private). ``key`` identifies it (a declaration by its
    bytes) and is part of the panel's settings."""

    kind: Literal["shipped", "declared", "generated", "data"]
    origin: str
    value: Any = None
    key: tuple = ()

    @property
    def from_data(self) -> bool:
        return self.kind == "data"


def release_heading(cap: Capability, describe: str) -> None:
    """The Private release section's heading and what it draws (the panel's first lines)."""
    st.subheader(":material/lock: Private release")
    st.caption(f"{RELEASE_NOTICE[0].upper() + RELEASE_NOTICE[1:]}. One mechanism: {describe}. "
               f"Every click draws fresh noise. Unit of privacy: {cap.unit_of_privacy}.")


def shipped_structure(origin: str, kind: Literal["shipped", "generated"] = "shipped") -> Structure:
    """A bundled sample's shipped declaration (or a synthetic data set's public settings), said on the page."""
    said = "declared (shipped with the sample)" if kind == "shipped" else "declared (the synthetic data's settings)"
    st.caption(f":material/verified: **Public structure: {said}** — {origin}. Nothing of it is read from the "
               "records.")
    return Structure(kind, origin, None, (kind, origin))


def declared_structure(cap: Capability, spec: DeclarationSpec) -> Structure | None:
    """For an upload: a second uploader for the public declaration and the opt-out checkbox. Returns the
    structure to release on, or None (nothing may be drawn: no declaration and no opt-out, or a bad
    declaration file, which also clears any drawn release). The declaration bytes are in ``key``."""
    ss = st.session_state
    f = st.file_uploader(f"Public {spec.what}, declared — {spec.label}", type=list(spec.types),
                         key=f"{cap.name}_declaration_file",
                         help=f"The {spec.what} a release publishes, declared by you, not read from the private "
                              f"records. Make a template with `{spec.template}` and review it.")
    opt_out = st.checkbox("Read the structure from the uploaded data (not private)",
                          key=f"{cap.name}_structure_from_data",
                          help=f"The opt-out: the release then publishes the {spec.what} as the records show it "
                               f"({STRUCTURE_FROM_DATA_NOTICE}). An uploaded declaration takes precedence.")
    hint = f"Make a template with `{spec.template}`, review it (add every public value, remove what is not public)."
    if f is not None:
        raw = f.getvalue()
        key = ("declared", f.name, hashlib.sha1(raw).hexdigest())
        held = ss.get(f"{cap.name}_declaration")
        if held is None or held[0] != key:
            try:
                held = (key, spec.parse(raw, f.name), None)
            except InputError as exc:
                held = (key, None, str(exc))
            ss[f"{cap.name}_declaration"] = held
        if held[2] is not None:
            ss.pop(f"{cap.name}_private_release", None)
            st.error(f"Public {spec.what} not usable, nothing can be drawn: {held[2]}", icon=":material/error:")
            return None
        st.caption(f":material/verified: **Public structure: declared** (uploaded file `{f.name}`)"
                   + (": the opt-out box is ignored." if opt_out else "."))
        return Structure("declared", f.name, held[1], key)
    if opt_out:
        st.warning(f"**{STRUCTURE_FROM_DATA_NOTICE[0].upper() + STRUCTURE_FROM_DATA_NOTICE[1:]}.** The release "
                   f"publishes the {spec.what} as the uploaded records show it; the release table and its "
                   "description say so.", icon=":material/warning:")
        return Structure("data", "the uploaded data", None, ("data",))
    st.info(f"**Nothing can be drawn yet:** a private release of an upload needs its public {spec.what}. Upload it "
            f"above ({spec.label}), or tick **Read the structure from the uploaded data (not private)**. {hint}",
            icon=":material/block:")
    return None


def with_notice(table: pd.DataFrame, structure: Structure | None) -> pd.DataFrame:
    """``table`` with a ``structure`` column saying :data:`STRUCTURE_FROM_DATA_NOTICE` when the structure was
    read from the data (the opt-out); unchanged otherwise."""
    if structure is None or not structure.from_data or "structure" in table.columns:
        return table
    return table.assign(structure=STRUCTURE_FROM_DATA_NOTICE)


def simulation_file_name(cap: Capability, file_stem: str) -> str:
    """Download name of a simulated table: it says 'simulation'."""
    return output_name(cap.name, "simulate", file_stem)
