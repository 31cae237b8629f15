"""Pieces of the Marginals page (pages/3_Marginals.py) that are not figures: which held simulation a new GReM-LNN
iteration cap or time limit can reuse exactly, and the teaching view of the residual basis.

**Reusing a simulation across GReM-LNN's iteration cap and time limit.** A simulation of the page is keyed by its
settings: data, workload, mechanism, MWEM rounds, the LNN cap T, the LNN time limit, the
budget, the seed, and the methods run. Every method but GReM-LNN ignores T and the limit, and GReM-LNN's dual
ascent (:func:`dpviz.marginals.lnn.grem_lnn`, Alg. 6 of Mullins et al., "Efficient and Private Marginal
Reconstruction with Local Non-Negativity", NeurIPS 2024) is deterministic given its measurements: the cap only
bounds its loop, and the limit only stops it when the clock passes it. So a held run answers other settings
exactly when (:func:`lnn_serves`):

* it stopped early (negative mass above −1, or complementary slackness: the run's stop reason) after k
  iterations with no restart — then any cap T' ≥ k gives the same iterates and the same stop (a restart
  could have come after iteration T', so a run with restarts serves its own cap only);
* or it stopped at its own cap T — then only that cap;
* and it did not stop on the time limit, and finished in t seconds (its measured time, the set-up included) —
  then any limit above t, or none, gives the same result. The result is the one the run gives when it is not
  stopped by the clock, i.e. what a run under the new limit gives on a machine at least as fast as the first run
  (a slower rerun could be cut short by the limit: that cut depends on the machine, the reused result does not).

A run stopped on its time limit, or by a callback, answers only its own settings. On the bundled Titanic sample
GReM-LNN stops on its negative mass after 300 iterations, so moving the cap anywhere from 300 to 4,000, or
setting any time limit, redraws the held simulation without computing anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any

import streamlit as st

from dpviz.marginals.model import Domain
from dpviz.ui.charts import chart
from dpviz.viz import marginals as vm

__all__ = ["EARLY_STOPS", "LNN_CAP_AT", "LNN_LIMIT_AT", "TEACHING_OPEN", "lnn_serves", "reusable",
           "teaching_view"]

LNN_CAP_AT, LNN_LIMIT_AT = 4, 5
"""Where the GReM-LNN iteration cap and time limit sit in a simulation key's settings (``key[0]``): the page's
key is ``((data, workload, mechanism, MWEM rounds, cap, limit, budget, seed), methods)``."""
EARLY_STOPS = frozenset({"negative_mass", "complementary_slackness"})
"""GReM-LNN's early stops (:mod:`dpviz.marginals.lnn`, criteria (a) and (b)): reached before the cap."""
TOY_SIZES = [2, 3, 4]


def lnn_serves(info: Mapping[str, Any], seconds: float, held: tuple[int, float | None],
               wanted: tuple[int, float | None]) -> bool:
    """Whether a GReM-LNN run (``info``: its ``stop_reason``, ``iterations`` and ``restarts``; ``seconds``: its
    measured time) made with (cap, time limit) ``held`` is exactly the run (cap, limit) ``wanted`` makes (see
    the module docstring: an early stop serves every cap from its iteration count up, a capped run its own cap,
    and either serves any time limit above its time; a run stopped by the clock serves only itself)."""
    if tuple(held) == tuple(wanted):
        return True
    (cap, _), (new_cap, new_limit) = held, wanted
    reason = info.get("stop_reason")
    if reason in EARLY_STOPS and not info.get("restarts"):
        caps_ok = int(info.get("iterations") or 0) <= int(new_cap)
    elif reason in EARLY_STOPS or reason == "rounds":
        caps_ok = int(new_cap) == int(cap)
    else:  # the time limit, a callback, or unknown: machine- or caller-dependent
        return False
    return caps_ok and (new_limit is None or float(seconds) < float(new_limit))


def _without_lnn(settings: tuple) -> tuple:
    return settings[:LNN_CAP_AT] + settings[LNN_LIMIT_AT + 1:]


def reusable(key: tuple, held: Iterable[tuple | None]) -> tuple | None:
    """The first of ``held`` (entries ``(key, simulation, history)``, or None) that is exactly the simulation of
    ``key``: the same settings and methods but for GReM-LNN's cap and limit, which it serves (:func:`lnn_serves`),
    re-keyed as ``(key, simulation, history)``; None if there is none."""
    settings, methods = key
    for entry in held:
        if entry is None:
            continue
        (old, old_methods), sim, history = entry
        if old_methods != methods or _without_lnn(old) != _without_lnn(settings):
            continue
        lnn = sim.results.get("lnn")
        if lnn is None or lnn_serves(lnn.info, lnn.seconds, (old[LNN_CAP_AT], old[LNN_LIMIT_AT]),
                                     (settings[LNN_CAP_AT], settings[LNN_LIMIT_AT])):
            return key, sim, history
    return None


@st.cache_resource(show_spinner=False, max_entries=16)
def _teaching(sizes: tuple, gamma: tuple, tau: tuple) -> tuple:
    dom = Domain(("a", "b", "c")[: len(sizes)], sizes)
    table = vm.orthogonality_table(dom)
    return vm.teaching_figures(dom, gamma, tau), table, vm.orthogonality_figure(table)


TEACHING_OPEN = "marginals_teaching_open"
"""The teaching view expander's state: its widgets and five charts are built only while it is open."""


def teaching_view() -> None:
    """The expander "Teaching view": the residual basis on a toy domain of three attributes (D, D⁺, R_τ, A_(γ,τ)
    of Prop. 1, and the residuals' orthogonality), with its own widgets (keys ``toy_*``). Built only while open
    (:data:`TEACHING_OPEN`): closed, it sends nothing, so a change elsewhere on the page redraws five charts less."""
    ss = st.session_state
    box = st.expander("Teaching view: the residual basis on a tiny domain", icon=":material/school:",
                      key=TEACHING_OPEN, on_change="rerun")
    with box:
        if not box.open:
            return
        st.caption("Three toy attributes a, b, c. D differences neighbouring values; R_τ = ⊗ (D on τ, 1ᵀ elsewhere) "
                   "is the τ-residual query; A_(γ,τ) = M_γ R_τ⁺ maps it back into the γ-marginal, so "
                   "μ̂_γ = Σ_(τ⊆γ) A_(γ,τ) z_τ (Prop. 1). Residuals of different τ are orthogonal.")
        t1, t2, t3, t4, t5 = st.columns(5)
        sizes = tuple(int(c.select_slider(f"n_{a}", TOY_SIZES, value=v, key=f"toy_{a}"))
                      for c, a, v in zip((t1, t2, t3), "abc", (2, 3, 2), strict=True))
        subsets = [g for r in range(4) for g in combinations(range(3), r)]
        name = {g: "{" + ",".join("abc"[i] for i in g) + "}" if g else "∅" for g in subsets}
        gamma = t4.selectbox("γ (marginal)", [g for g in subsets if g], index=3, key="toy_gamma", format_func=name.get)
        taus = [t for t in subsets if set(t) <= set(gamma)]
        if ss.get("toy_tau") not in taus:
            ss["toy_tau"] = taus[-1]
        tau = t5.selectbox("τ ⊆ γ (residual)", taus, key="toy_tau", format_func=name.get)
        figs, ortho, ortho_fig = _teaching(sizes, tuple(gamma), tuple(tau))
        h1, h2 = st.columns(2)
        chart(h1, figs["D"], key="toy_D", width="stretch")
        chart(h2, figs["D+"], key="toy_Dplus", width="stretch")
        chart(st, figs["R"], key="toy_R", width="stretch")
        h3, h4 = st.columns(2)
        chart(h3, figs["A"], key="toy_A", width="stretch")
        chart(h4, ortho_fig, key="toy_ortho", width="stretch")
        st.caption(f"‖R_τ R_τ'ᵀ‖ is zero off the diagonal (blank cells): the {len(subsets)} residual blocks are "
                   f"mutually orthogonal, and their row counts m_τ add up to n = {math.prod(sizes)} "
                   f"(Σ m_τ = {int(ortho['m_τ'].sum())}), so together they are a basis.")
