"""The Privacy section every data page shares: the same widgets, labels and places on every page.

Row 1: the noise family ("Noise": Laplace (ε-DP) / Gaussian (zCDP)) and, for Gaussian noise, how its budget
is given ("(ε, δ)" or "ρ"); row 2: the privacy budget ε on a log-scale slider; row 3: the failure
probability δ and the zCDP budget ρ. A page states which families and inputs apply (Graph: Laplace only;
Marginals: Gaussian only); widgets that do not apply to the current choice are shown disabled, not
removed, so nothing jumps when the noise changes. Widget keys stay the page's own (its tests and its
session state use them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from dpviz.core.noise import Noise

__all__ = ["NOISE_KINDS", "BUDGET_AS", "LABELS", "PrivacyKeys", "PrivacyChoice", "privacy_widgets"]

NOISE_KINDS = {"laplace": "Laplace (ε-DP)", "gaussian": "Gaussian (zCDP)"}
BUDGET_AS = {"eps_delta": "(ε, δ)", "rho": "ρ"}
LABELS = {"noise": "Noise", "budget_as": "Gaussian budget given as", "epsilon": "Privacy budget ε (log scale)",
          "delta": "Failure probability δ", "rho": "zCDP budget ρ"}
HELP = {
    "noise": "Laplace noise gives pure ε-differential privacy; Gaussian noise gives zero-concentrated DP (zCDP), "
             "stated as ρ or converted to (ε, δ).",
    "budget_as": "(ε, δ): approximate differential privacy; ρ: zero-concentrated DP (zCDP).",
    "epsilon": "Smaller ε = stronger privacy = more noise. Every view below moves with it.",
    "delta": "The small probability with which the ε guarantee may fail (approximate DP; Gaussian noise only).",
    "rho": "Zero-concentrated DP budget; smaller ρ = more noise (Gaussian noise only).",
}


@dataclass(frozen=True)
class PrivacyKeys:
    """The page's session-state keys of the five widgets."""

    epsilon: str
    noise: str = ""
    budget_as: str = ""
    delta: str = ""
    rho: str = ""


@dataclass(frozen=True)
class PrivacyChoice:
    """What the reader chose: the family and the budget inputs that apply (the others None)."""

    family: str
    epsilon: float | None
    delta: float | None
    rho: float | None

    @property
    def uses_rho(self) -> bool:
        return self.rho is not None

    def params(self) -> dict:
        """Keyword arguments for :meth:`dpviz.core.noise.Noise.from_params`."""
        return {"epsilon": self.epsilon, "delta": self.delta, "rho": self.rho}

    def noise(self, discrete: bool = False) -> Noise:
        """The Noise (InputError for an impossible budget: the page shows it with ``st.error``)."""
        return Noise.from_params(self.family, **self.params(), discrete=discrete)


def _fmt_eps(v: float) -> str:
    return f"{v:g}"


def privacy_widgets(keys: PrivacyKeys, *, families: Sequence[str] = ("laplace", "gaussian"), allow_rho: bool = True,
                    eps_options: Sequence[float], eps_default: float = 1.0,
                    delta_options: Sequence[float] = (), delta_default: float = 1e-6,
                    rho_options: Sequence[float] = (), rho_default: float = 0.5,
                    eps_help: str | None = None) -> PrivacyChoice:
    """Draw the Privacy widgets (in the current container) and return the choice. The section's heading is
    the page's (:func:`dpviz.ui.sections` pages call ``st.subheader`` first)."""
    gaussian_ok = "gaussian" in families
    rho_ok = allow_rho and gaussian_ok
    family = families[0]
    if len(families) > 1 or rho_ok:
        c1, c2 = st.columns(2)
        if len(families) > 1:
            family = c1.radio(LABELS["noise"], list(families), format_func=NOISE_KINDS.get, key=keys.noise,
                              horizontal=True, help=HELP["noise"])
        budget_as = "eps_delta"
        if rho_ok:
            budget_as = c2.radio(LABELS["budget_as"], list(BUDGET_AS), format_func=BUDGET_AS.get, key=keys.budget_as,
                                 horizontal=True, disabled=family != "gaussian", help=HELP["budget_as"])
    else:
        budget_as = "eps_delta"
    use_rho = rho_ok and family == "gaussian" and budget_as == "rho"
    eps = st.select_slider(LABELS["epsilon"], list(eps_options), value=eps_default, key=keys.epsilon,
                           format_func=_fmt_eps, disabled=use_rho, help=eps_help or HELP["epsilon"])
    delta = rho = None
    if gaussian_ok:
        d1, d2 = st.columns(2)
        delta = d1.select_slider(LABELS["delta"], list(delta_options), value=delta_default, key=keys.delta,
                                 format_func=lambda v: f"{v:.0e}", disabled=family != "gaussian" or use_rho,
                                 help=HELP["delta"])
        if rho_ok:
            rho = d2.select_slider(LABELS["rho"], list(rho_options), value=rho_default, key=keys.rho,
                                   format_func=_fmt_eps, disabled=not use_rho, help=HELP["rho"])
    if use_rho:
        return PrivacyChoice("gaussian", None, None, float(rho))
    if family == "gaussian":
        return PrivacyChoice("gaussian", float(eps), float(delta), None)
    return PrivacyChoice(family, float(eps), None, None)
