"""Declared marginals domains: the public structure a release publishes, from a file, never from the records.

A marginals release publishes its domain: the attributes, every attribute's categories and, for a number,
its bin edges. Read from the records, a category held by one person (or a bin edge at someone's value) is
published as it is, so a release takes them from a **declaration** (``--domain DOMAIN.json``; bundled
samples ship theirs) and maps the records onto it. Records outside the declaration are dropped, clamped or
put in a catch-all category as it says, and **how many were is never published**.

Schema (JSON; one object)::

    {
      "description": "optional free text (also: name, title, documentation, rows - informational only)",
      "attributes": [
        {"name": "sex",    "categories": ["female", "male"]},
        {"name": "race",   "categories": ["A", "B", "other"], "other": "other"},
        {"name": "age",    "edges": [0, 18, 30, 50, 70, 120], "outside": "clamp", "missing": true},
        {"name": "income", "categories": ["<=50K", ">50K", "(missing)"], "outside": "drop"}
      ]
    }

* ``attributes`` (required, in order): the columns tabulated, in this order; each names a column of the CSV.
* ``name`` (required): the column's header name (unique).
* Exactly one of:

  - ``categories``: the attribute's values (≥ 2 distinct, non-empty strings; integers are read as their
    text). A record matches a category by its stripped text, or by number (``2`` and ``2.0``). A missing
    value (empty, ``NA``, ``N/A``, ``NaN``, ``null``) matches the category ``"(missing)"`` if it is listed.
    Every category appears in every released marginal, held by a record or not.
  - ``edges``: numeric bin edges e₀ < e₁ < … < e_k (finite numbers): bins ``[e₀, e₁)`` … ``[e_{k−1}, e_k]``
    (the last one closed), labelled as :func:`dpviz.marginals.io.read_table` labels its bins.
    ``"missing": true`` adds a last bin ``"(missing)"`` for values that are not numbers.

* ``outside`` (optional): what to do with a record whose value is not in the declaration —
  ``"drop"`` (the default: the record is left out of every marginal), ``"clamp"`` (numbers only: a value
  below e₀ goes to the first bin, above e_k to the last), ``"other"`` (categories only: the value goes to
  the category named by ``"other"``; naming ``"other"`` makes it the default). A value that is not a number
  in an ``edges`` attribute goes to ``"(missing)"`` when declared, else the record is dropped.

Validation errors are one line naming the attribute (by number and name) and the field.
:func:`template` writes a declaration from a data set (``marginals describe-structure``) for a curator to
review: it comes from the data and is not private until reviewed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dpviz.core.structure import DESCRIBE_NOTICE, StructureSource
from dpviz.errors import InputError
from dpviz.marginals.binning import MISSING, MISSING_TOKENS
from dpviz.marginals.binning import NUMBER as _NUMBER
from dpviz.marginals.binning import interval_labels as _interval_labels
from dpviz.marginals.io import _name_list as _list
from dpviz.marginals.io import _short as _clip
from dpviz.marginals.model import Dataset, Domain

__all__ = ["AttributeDecl", "DomainDeclaration", "OUTSIDE", "MAX_DECLARATION_BYTES", "MAX_DECLARED_VALUES",
           "parse_declaration", "read_declaration", "sample_declaration", "apply", "code_columns", "template",
           "EXAMPLE"]

OUTSIDE = ("drop", "clamp", "other")
MAX_DECLARATION_BYTES = 20_000_000
"""Size cap of a DOMAIN.json (checked before reading)."""
MAX_DECLARED_VALUES = 1_000_000
"""Most categories (or bins) of one declared attribute."""
MAX_DECLARED_ATTRIBUTES = 1_000
_INFO_KEYS = frozenset({"name", "title", "description", "documentation", "rows"})
_ATTR_KEYS = frozenset({"name", "categories", "edges", "outside", "other", "missing"})
EXAMPLE = {"attributes": [
    {"name": "sex", "categories": ["female", "male"]},
    {"name": "race", "categories": ["A", "B", "other"], "other": "other"},
    {"name": "age", "edges": [0, 18, 30, 50, 70, 120], "outside": "clamp", "missing": True},
    {"name": "income", "categories": ["<=50K", ">50K", "(missing)"], "outside": "drop"},
]}
"""The example of the module docstring (valid: ``parse_declaration(EXAMPLE)``)."""


@dataclass(frozen=True)
class AttributeDecl:
    """One declared attribute: ``categories`` are its labels in code order (for ``edges``, the interval
    labels, then ``"(missing)"`` if ``missing``)."""

    name: str
    categories: tuple[str, ...]
    edges: tuple[float, ...] | None = None
    outside: str = "drop"
    other: str | None = None
    missing: bool = False

    @property
    def numeric(self) -> bool:
        return self.edges is not None

    def codes(self, values: Sequence[str]) -> np.ndarray:
        """The code of each distinct raw (stripped) value, −1 where the record is to be dropped."""
        out = np.full(len(values), -1, dtype=np.int64)
        if self.numeric:
            edges = np.asarray(self.edges, dtype=float)
            nums = np.full(len(values), np.nan)
            for i, v in enumerate(values):
                if _NUMBER.fullmatch(v):
                    nums[i] = float(v)
            finite = np.isfinite(nums)
            k = len(edges) - 1
            labelled = {c: i for i, c in enumerate(self.categories)}  # a label as written, e.g. "[10, 20)"
            known = np.array([labelled.get(v, -1) for v in values], dtype=np.int64)
            which = np.searchsorted(edges, nums[finite], side="right") - 1
            which[nums[finite] == edges[-1]] = k - 1  # the last bin is closed
            if self.outside == "clamp":
                which = np.clip(which, 0, k - 1)
            else:
                which[(which < 0) | (which >= k)] = -1
            out[finite] = which
            if self.missing:
                out[~finite] = k
            return np.where(known >= 0, known, out)
        index = {c: i for i, c in enumerate(self.categories)}
        by_number = {}
        for i, c in enumerate(self.categories):
            if _NUMBER.fullmatch(c):
                by_number.setdefault(float(c), i)
        fallback = index[self.other] if self.outside == "other" else -1
        miss = index.get(MISSING, fallback)
        for i, v in enumerate(values):
            code = index.get(v)
            if code is None:
                if v.lower() in MISSING_TOKENS:
                    code = miss
                elif by_number and _NUMBER.fullmatch(v):
                    code = by_number.get(float(v), fallback)
                else:
                    code = fallback
            out[i] = code
        return out

    def as_json(self) -> dict[str, Any]:
        """This attribute as the schema writes it."""
        out: dict[str, Any] = {"name": self.name}
        if self.numeric:
            out["edges"] = [_number(e) for e in self.edges]
            if self.missing:
                out["missing"] = True
        else:
            out["categories"] = list(self.categories)
            if self.other is not None:
                out["other"] = self.other
        out["outside"] = self.outside
        return out


@dataclass(frozen=True)
class DomainDeclaration:
    """A validated declaration: attributes in order, and where it came from (``origin``, for the metadata)."""

    attributes: tuple[AttributeDecl, ...]
    origin: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def domain(self) -> Domain:
        return Domain(self.names, tuple(len(a.categories) for a in self.attributes))

    @property
    def categories(self) -> tuple[tuple[str, ...], ...]:
        return tuple(a.categories for a in self.attributes)

    @property
    def edges(self) -> tuple[tuple[float, ...] | None, ...]:
        return tuple(a.edges for a in self.attributes)

    @property
    def structure(self) -> StructureSource:
        return StructureSource("declared", self.origin)

    def select(self, names: Sequence[str] | None) -> DomainDeclaration:
        """The declaration restricted to ``names`` (in that order); None keeps every attribute."""
        if names is None:
            return self
        by_name = {a.name: a for a in self.attributes}
        unknown = next((n for n in names if n not in by_name), None)
        if unknown is not None:
            raise InputError(f"--attributes: {_clip(unknown)!r} is not declared in {self.origin}; it declares "
                             + _list(self.names))
        return replace(self, attributes=tuple(by_name[n] for n in dict.fromkeys(names)))

    def as_json(self) -> dict[str, Any]:
        return {"attributes": [a.as_json() for a in self.attributes]}


def _number(x: float) -> int | float:
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _attribute(i: int, obj: object, origin: str) -> AttributeDecl:
    missing_label = MISSING
    where = f"{origin}: attribute {i + 1}"
    if not isinstance(obj, Mapping):
        raise InputError(f'{where}: expected an object {{"name": ..., "categories": [...]}} or {{"name": ..., '
                         f'"edges": [...]}}, got {_clip(repr(obj))}')
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InputError(f'{where}: "name" must be a non-empty column name without surrounding spaces, got '
                         f"{_clip(repr(name))}")
    where = f"{origin}: attribute {i + 1} ({_clip(name, 60)!r})"
    unknown = sorted(set(obj) - _ATTR_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown field {_clip(unknown[0], 40)!r}; expected {', '.join(sorted(_ATTR_KEYS))}")
    if ("categories" in obj) == ("edges" in obj):
        raise InputError(f'{where}: give exactly one of "categories" (a list of values) or "edges" (numeric bin '
                         "edges)")
    outside = obj.get("outside", "other" if "other" in obj else "drop")
    if outside not in OUTSIDE:
        raise InputError(f'{where}: "outside" must be one of {", ".join(OUTSIDE)}, got {_clip(repr(outside))}')
    if "edges" in obj:
        if "other" in obj:
            raise InputError(f'{where}: "other" is for "categories"; numbers outside the edges are dropped or '
                             'clamped ("outside")')
        if outside == "other":
            raise InputError(f'{where}: "outside": "other" is for "categories"; use "drop" or "clamp"')
        missing = obj.get("missing", False)
        if not isinstance(missing, bool):
            raise InputError(f'{where}: "missing" must be true or false, got {_clip(repr(missing))}')
        edges = obj["edges"]
        if not isinstance(edges, list) or len(edges) < 2:
            raise InputError(f'{where}: "edges" must be a list of at least 2 numbers (e₀ < e₁ < …), got '
                             f"{_clip(repr(edges))}")
        if len(edges) > MAX_DECLARED_VALUES + 1:
            raise InputError(f'{where}: "edges" has {len(edges):,} entries, above the limit of '
                             f"{MAX_DECLARED_VALUES + 1:,}")
        bad = next((j for j, e in enumerate(edges) if not _is_number(e) or not math.isfinite(float(e))), None)
        if bad is not None:
            raise InputError(f'{where}: "edges" must hold finite numbers; entry {bad + 1} is '
                             f"{_clip(repr(edges[bad]))}")
        arr = np.asarray(edges, dtype=float)
        if not (np.diff(arr) > 0).all():
            j = int(np.flatnonzero(np.diff(arr) <= 0)[0])
            raise InputError(f'{where}: "edges" must increase strictly; entry {j + 2} ({_clip(edges[j + 1])}) '
                             f"is not above entry {j + 1} ({_clip(edges[j])})")
        labels = _interval_labels(arr) + ([missing_label] if missing else [])
        if len(labels) < 2:
            raise InputError(f'{where}: 2 edges make one bin; give at least 3 edges (or "missing": true)')
        return AttributeDecl(name, tuple(labels), tuple(float(e) for e in arr), outside, None, missing)
    if "missing" in obj:
        raise InputError(f'{where}: "missing" is for "edges"; list the category "{missing_label}" instead')
    if outside == "clamp":
        raise InputError(f'{where}: "outside": "clamp" is for numeric "edges"; use "drop" or "other"')
    cats = obj["categories"]
    if not isinstance(cats, list):
        raise InputError(f'{where}: "categories" must be a list of values, got {_clip(repr(cats))}')
    if len(cats) > MAX_DECLARED_VALUES:
        raise InputError(f'{where}: "categories" has {len(cats):,} values, above the limit of '
                         f"{MAX_DECLARED_VALUES:,}")
    labels = []
    for j, c in enumerate(cats):
        if isinstance(c, int) and not isinstance(c, bool):
            c = str(c)
        if not isinstance(c, str) or not c.strip() or c != c.strip():
            raise InputError(f'{where}: category {j + 1} must be a non-empty text without surrounding spaces '
                             f"(an empty value is \"{missing_label}\"), got {_clip(repr(c))}")
        labels.append(c)
    seen: set[str] = set()
    for c in labels:
        if c in seen:
            raise InputError(f"{where}: category {_clip(c)!r} is listed twice")
        seen.add(c)
    if len(labels) < 2:
        raise InputError(f'{where}: "categories" needs at least 2 values (one value carries no information)')
    other = obj.get("other")
    if outside == "other" and other is None:
        raise InputError(f'{where}: "outside": "other" needs "other": the catch-all category')
    if other is not None and (not isinstance(other, str) or other not in seen):
        raise InputError(f'{where}: "other" must name one of its categories, got {_clip(repr(other))}')
    return AttributeDecl(name, tuple(labels), None, outside, other, False)


def parse_declaration(obj: object, origin: str = "domain") -> DomainDeclaration:
    """A validated :class:`DomainDeclaration` from the JSON object (module docstring); ``origin`` names it in
    messages and in the release metadata. InputError, one line naming the attribute and field."""
    if not isinstance(obj, Mapping):
        raise InputError(f'{origin}: expected a JSON object {{"attributes": [...]}}, got a {type(obj).__name__}')
    unknown = sorted(set(obj) - _INFO_KEYS - {"attributes"})
    if unknown:
        raise InputError(f'{origin}: unknown field {_clip(unknown[0], 40)!r}; expected "attributes" (and, '
                         f"informational only, {', '.join(sorted(_INFO_KEYS))})")
    attrs = obj.get("attributes")
    if not isinstance(attrs, list) or not attrs:
        raise InputError(f'{origin}: "attributes" must be a non-empty list of attribute declarations')
    if len(attrs) > MAX_DECLARED_ATTRIBUTES:
        raise InputError(f'{origin}: {len(attrs):,} attributes, above the limit of {MAX_DECLARED_ATTRIBUTES:,}')
    out = tuple(_attribute(i, a, origin) for i, a in enumerate(attrs))
    seen: set[str] = set()
    for i, a in enumerate(out):
        if a.name in seen:
            raise InputError(f"{origin}: attribute {i + 1} ({_clip(a.name, 60)!r}) is declared twice")
        seen.add(a.name)
    return DomainDeclaration(out, origin)


def read_declaration(source: str | Path | bytes, *, max_bytes: int = MAX_DECLARATION_BYTES,
                     origin: str | None = None) -> DomainDeclaration:
    """A DOMAIN.json (a path — refused at once unless a regular file — or its bytes) as a validated
    declaration."""
    from dpviz.core.inputs import require_regular_file
    from dpviz.core.reader import strict_json as _json
    from dpviz.marginals.io import _decode, _read_bytes

    if isinstance(source, (str, Path)):
        require_regular_file(source, "--domain")
    raw, label, _ = _read_bytes(source, max_bytes, "--domain", ("read_declaration", None))
    label = origin or (str(source) if isinstance(source, (str, Path)) else "the domain upload")
    text = _decode(raw, label)
    if not text.strip():
        raise InputError(f'{label} is empty: expected a JSON object {{"attributes": [...]}}')
    return parse_declaration(_json(text, label, 'a JSON object {"attributes": [...]}'), label)


def sample_declaration(name: str) -> DomainDeclaration:
    """The public declaration a bundled sample ships (``adult`` or ``titanic``; ``sample:`` prefix allowed)."""
    from dpviz.core.assets import asset
    from dpviz.marginals.samples import ADULT_DOMAIN_JSON, TITANIC_DOMAIN_JSON

    files = {"adult": ADULT_DOMAIN_JSON, "titanic": TITANIC_DOMAIN_JSON}
    key = name.removeprefix("sample:")
    if key not in files:
        raise InputError(f"no shipped domain declaration for {name!r}; samples: {', '.join(files)}")
    return read_declaration(asset(files[key]), origin=f"sample:{key} (dpviz/assets/{files[key]})")


def code_columns(columns: Sequence[tuple[Mapping[str, int], Any]], nrows: int, decl: DomainDeclaration,
                 name: str) -> Dataset:
    """Parsed CSV columns — for each declared attribute, (distinct raw value → raw code, raw code of each
    row) — coded by ``decl``: every category declared (held or not); a record outside the declaration
    dropped, clamped or put in the catch-all as it says. How many were is not reported."""
    keep = np.ones(nrows, dtype=bool)
    codes = np.empty((nrows, len(decl.attributes)), dtype=np.int64)
    for k, ((index, raw), attr) in enumerate(zip(columns, decl.attributes, strict=True)):
        raw_codes = np.frombuffer(raw, dtype=np.intc) if len(raw) else np.zeros(0, np.intc)
        mapped = attr.codes(list(index))[raw_codes]
        keep &= mapped >= 0
        codes[:, k] = mapped
    if not keep.all():
        codes = np.ascontiguousarray(codes[keep])
    return Dataset(decl.domain, codes, decl.categories, name, decl.edges, decl.structure)


def apply(data: Any, decl: DomainDeclaration) -> Any:
    """``data`` (a Dataset whose categories are labels, e.g. a bundled sample) recoded by ``decl``: its
    declared attributes in the declared order, every declared category, records outside dropped, clamped or
    put in the catch-all as declared (their number is not reported)."""
    if data.categories is None:
        raise InputError(f"{decl.origin}: the data has no category labels to match the declaration against")
    position = {a: k for k, a in enumerate(data.domain.attrs)}
    missing = next((a for a in decl.names if a not in position), None)
    if missing is not None:
        raise InputError(f"--domain: the declared attribute {_clip(missing)!r} is not an attribute of "
                         f"{getattr(data, 'name', 'the data')}; it has {_list(data.domain.attrs)}")
    codes = np.empty((data.N, len(decl.attributes)), dtype=np.int64)
    keep = np.ones(data.N, dtype=bool)
    for j, attr in enumerate(decl.attributes):
        k = position[attr.name]
        mapped = attr.codes([str(c) for c in data.categories[k]])[np.asarray(data.codes)[:, k]]
        keep &= mapped >= 0
        codes[:, j] = mapped
    return Dataset(decl.domain, codes[keep] if not keep.all() else codes, decl.categories,
                   getattr(data, "name", "dataset"), decl.edges, decl.structure)


def template(data: Any, source: str = "the data") -> dict[str, Any]:
    """A declaration template read from ``data`` (a Dataset from :func:`dpviz.marginals.io.read_table`):
    every category that occurs, and the data-derived bin edges of binned numbers. Not private: a curator
    reviews it (adds every public value, removes what is not public) before a release uses it."""
    missing_label = MISSING
    attrs = []
    edges = data.edges or (None,) * data.domain.d
    for k, name in enumerate(data.domain.attrs):
        cats = list(data.categories[k])
        cut = None if edges[k] is None else sorted(set(edges[k]))  # a last bin [m, m] has a repeated edge
        if cut is not None and (len(cut) >= 3 or (len(cut) == 2 and missing_label in cats)):
            entry: dict[str, Any] = {"name": name, "edges": [_number(e) for e in cut]}
            if missing_label in cats:
                entry["missing"] = True
        else:
            entry = {"name": name, "categories": cats}
        entry["outside"] = "drop"
        attrs.append(entry)
    return {"description": f"{DESCRIBE_NOTICE} (read from {source})", "attributes": attrs}
