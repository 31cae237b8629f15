"""Post-processing of a histogram measurement (it never sees the data): the tree engine's estimators on the
hierarchy, or the flat counts as they are.

* ``gmc`` — GMC optimal consistency (Generation Matrix paper, Alg. 1–2): the minimum-variance consistent
  estimate, with its analytic variance (Theorem 5);
* ``boosting`` — Hay et al.'s consistency (PVLDB 2010, Sec. 4) on the b-ary tree (no closed-form variance);
* ``lee``, ``privtrie``, ``processless`` — the tree engine's other estimators (:mod:`dpviz.tree.estimators`);
* ``flat`` — one noisy count per bin (Dwork et al., TCC 2006): the baseline.
"""

from __future__ import annotations

from dpviz.errors import InputError

__all__ = ["METHODS", "TREE_METHODS", "DEFAULT_METHOD", "METHOD_LABELS", "check_methods", "check_method"]

TREE_METHODS = ("gmc", "boosting", "lee", "privtrie", "processless")
METHODS = (*TREE_METHODS, "flat")
DEFAULT_METHOD = "gmc"
METHOD_LABELS = {
    "gmc": "hierarchy + GMC optimal consistency",
    "boosting": "hierarchy + Boosting (Hay et al. 2010)",
    "lee": "hierarchy + Lee et al. least squares",
    "privtrie": "hierarchy + PrivTrie consistency",
    "processless": "hierarchy, leaves as measured",
    "flat": "flat: one noisy count per bin",
}


def check_method(method: object) -> str:
    """One method for a release."""
    if not isinstance(method, str) or method not in METHODS:
        raise InputError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    return method


def check_methods(methods: object) -> tuple[str, ...]:
    """Methods for a simulation: ``"all"``, a comma list or a sequence of names (order kept, no repeats)."""
    if methods == "all":
        return METHODS
    names = methods.split(",") if isinstance(methods, str) else list(methods)  # type: ignore[arg-type]
    if not names:
        raise InputError("methods: expected at least one method")
    return tuple(dict.fromkeys(check_method(str(n).strip()) for n in names))
