"""The page sections every capability page shares (:data:`dpviz.core.registry.PAGE_SKELETON`): the noise
caption of the Privacy section, the Simulation heading with its banner and seed, and the public structure a
Private release is drawn on (a shipped, declared or generated structure, or the opt-out).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import streamlit as st

from dpviz.core.modes import RELEASE_NOTICE, fresh_seed, output_name
from dpviz.core.registry import Capability
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE
from dpviz.errors import InputError

__all__ = ["table_height", "TABLE_ROW_PX", "noise_caption", "simulation_section", "next_seed", "simulation_banner",
           "simulation_file_name", "DeclarationSpec", "Structure", "release_heading", "shipped_structure",
           "declared_structure", "with_notice"]


TABLE_ROW_PX = 35
"""Height of one ``st.dataframe`` row and of its header (Streamlit's default row height), in pixels."""


def table_height(rows: int) -> int:
    """The pixel height of an ``st.dataframe`` showing ``rows`` rows and its header, without a scroll bar.

    A table given a fixed slot (``height=table_height(slot_rows)``) keeps its size when a change adds or
    removes a row. Its size matters in the browser: a data grid that changes height is laid out again and
    its canvas resized, and the grid rebuilds its (hidden) accessibility table 0.2 s after its last
    redraw — measured as the last DOM change of a Stream "Noise" flip, ~0.2-0.35 s after every chart had
    drawn (issue 19: a browser timeline of the flip)."""
    return (max(int(rows), 1) + 1) * TABLE_ROW_PX + 3


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
              on_click=lambda: st.session_state.update({key: next_seed(cap, drawn=True)}))
    return seed


def next_seed(cap: Capability, *, drawn: bool = False) -> int:
    """The seed "New noise draw" sets next (session key ``{cap.name}_next_seed``): drawn ahead with
    :func:`~dpviz.core.modes.fresh_seed`, so a page can compute that draw in the background before the click;
    ``drawn=True`` (the click) hands it over and forgets it."""
    seed = int(st.session_state.setdefault(f"{cap.name}_next_seed", fresh_seed()))
    if drawn:
        del st.session_state[f"{cap.name}_next_seed"]
    return seed


def simulation_banner(cap: Capability) -> None:
    """The notice every simulated view carries."""
    st.info(f"**Simulation — not a private release.** Seeded floating-point noise; the true values and the "
            f"errors are shown for teaching and what-if. To publish, use **Private release** below. "
            f"Unit of privacy: {cap.unit_of_privacy}.", icon=":material/science:")


def simulation_file_name(cap: Capability, file_stem: str) -> str:
    """Download name of a simulated table: it says 'simulation'."""
    return output_name(cap.name, "simulate", file_stem)


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
