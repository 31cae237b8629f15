"""The ledger as tables: one summary row per dataset, one row per release (CLI ``show``/``export`` and
the page read the same frames)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from dpviz.core.budget import Budget
from dpviz.ledger.accounts import REPORT_DELTA, Charge, Room, Spent
from dpviz.ledger.store import DatasetRow, ReleaseRow

__all__ = ["summary_frame", "summary_table", "releases_frame", "dataset_lines", "cumulative_frame", "charge_of",
           "epsilon_words", "next_release_words", "NOT_DEFINED", "RELEASE_COLUMNS", "SUMMARY_TABLE_COLUMNS"]

RELEASE_COLUMNS = ("#", "time (UTC)", "capability", "mechanism", "noise", "stated budget", "charge", "status",
                   "output", "output SHA-256")


def summary_frame(datasets: Sequence[DatasetRow]) -> pd.DataFrame:
    """One row per dataset: budget, spent both ways, what is left."""
    rows = []
    for d in datasets:
        rep = d.report()
        rows.append({
            "dataset": d.short, "capability": d.capability, "name": d.name, "budget": d.budget_text,
            "releases": rep["releases"], "spent ε": rep["epsilon_spent"], "ε (basic)": rep["epsilon_basic"],
            "ε (zCDP)": rep["epsilon_zcdp"], "ρ (zCDP)": rep["rho"], "at δ": rep["delta"],
            "remaining ε": rep.get("epsilon_remaining"), "next Laplace ε ≤": rep.get("room_epsilon"),
            "next Gaussian ρ ≤": rep.get("room_rho"),
        })
    return pd.DataFrame(rows, columns=["dataset", "capability", "name", "budget", "releases", "spent ε", "ε (basic)",
                                       "ε (zCDP)", "ρ (zCDP)", "at δ", "remaining ε", "next Laplace ε ≤",
                                       "next Gaussian ρ ≤"])


NOT_DEFINED = "not defined for a pure budget"
"""What an ε total reads when it has no finite value: a pure budget (no δ) gives zCDP (and Gaussian releases)
no pure ε guarantee."""
SUMMARY_TABLE_COLUMNS = ("dataset", "capability", "name", "budget", "releases", "spent ε", "remaining ε",
                         "next release may spend")


def epsilon_words(x: float | None, spec: str = ".4g", missing: str = "") -> str:
    """An ε total as a person reads it: the number, :data:`NOT_DEFINED` for an infinite one (no pure guarantee),
    ``missing`` for None."""
    if x is None:
        return missing
    return NOT_DEFINED if math.isinf(x) else format(x, spec)


def next_release_words(rep: dict) -> str:
    """The largest next release of a budgeted dataset in a few words ("" without a budget)."""
    if rep.get("room_epsilon") is None:
        return "any (no budget set)"
    eps, rho = rep["room_epsilon"], rep["room_rho"]
    if eps <= 0 and rho <= 0:
        return "nothing (budget spent)"
    return f"Laplace ε ≤ {eps:.4g}" + (f" or Gaussian ρ ≤ {rho:.4g}" if rho > 0 else " (no Gaussian)")


def summary_table(datasets: Sequence[DatasetRow]) -> pd.DataFrame:
    """The page's summary (:data:`SUMMARY_TABLE_COLUMNS`): one row per dataset in words and numbers a person reads —
    never "inf" or "None" (an ε with no pure guarantee reads :data:`NOT_DEFINED`, no budget "none")."""
    rows = []
    for d in datasets:
        rep = d.report()
        rows.append({"dataset": d.short, "capability": d.capability, "name": d.name, "budget": d.budget_text,
                     "releases": int(rep["releases"]), "spent ε": epsilon_words(rep["epsilon_spent"]),
                     "remaining ε": epsilon_words(rep.get("epsilon_remaining"), missing="no budget"),
                     "next release may spend": next_release_words(rep)})
    return pd.DataFrame(rows, columns=list(SUMMARY_TABLE_COLUMNS))


def releases_frame(releases: Sequence[ReleaseRow]) -> pd.DataFrame:
    """One row per release: when, what, at which budget, and the hash of what was written."""
    rows = [{"#": r.id, "time (UTC)": r.time_utc, "capability": r.capability, "mechanism": r.mechanism,
             "noise": r.family, "stated budget": r.stated_text, "charge": r.charge_text,
             "status": r.status if r.status == "written" else "charged, no output recorded",
             "output": r.output, "output SHA-256": r.output_sha256 or ""} for r in releases]
    return pd.DataFrame(rows, columns=list(RELEASE_COLUMNS))


def dataset_lines(d: DatasetRow) -> list[str]:
    """A dataset's header lines: identity, budget, spent both ways, remaining."""
    rep = d.report()
    delta = "" if rep["delta"] is None else f" at δ = {rep['delta']:.3g}"
    spent = (f"  spent: ε = {epsilon_words(rep['epsilon_spent'], '.6g')}{delta} in {rep['releases']} release(s) — "
             f"basic composition {epsilon_words(rep['epsilon_basic'], '.6g')} (Σε of pure releases "
             f"{rep['pure_epsilon']:.6g} + Gaussian ρ {rep['gauss_rho']:.6g} via zCDP), zCDP "
             f"{epsilon_words(rep['epsilon_zcdp'], '.6g')} (Σρ = {rep['rho']:.6g})")
    lines = [f"dataset {d.id}", f"  {d.capability}: {d.name} (first seen {d.created_utc})",
             f"  canonical form: {d.canonical}", f"  budget: {d.budget_text}", spent]
    if d.budget is not None:
        lines.append(f"  remaining: ε = {epsilon_words(rep['epsilon_remaining'], '.6g')}; next release: "
                     + Room(rep["room_epsilon"], rep["room_rho"]).describe)
    return lines


def charge_of(r: ReleaseRow) -> Charge:
    """The :class:`Charge` a release row records."""
    return Charge(r.accounting, r.charge_epsilon, r.charge_rho, r.family, Budget(r.epsilon, r.delta, r.rho))


def cumulative_frame(d: DatasetRow, releases: Sequence[ReleaseRow]) -> pd.DataFrame:
    """Spent ε after each release of ``d``, both ways, at the budget's δ (or :data:`REPORT_DELTA`)."""
    delta = d.budget.delta if d.budget is not None and d.budget.delta is not None else REPORT_DELTA
    pure_budget = d.budget is not None and d.budget.delta is None
    spent, rows = Spent(), []
    for r in releases:
        spent = spent.plus(charge_of(r))
        rows.append({"release": r.id, "ε (basic)": spent.epsilon_basic(None if pure_budget else delta),
                     "ε (zCDP)": spent.epsilon_zcdp(None if pure_budget else delta)})
    frame = pd.DataFrame(rows, columns=["release", "ε (basic)", "ε (zCDP)"])
    return frame.replace(float("inf"), float("nan"))  # no pure guarantee: nothing to draw
