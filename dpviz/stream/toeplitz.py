"""Optimised real Toeplitz factorisations W = B C as stream strategies: ``banded`` and ``blt``.

The factorisations themselves live in :mod:`dpviz.stream.banded` (b-banded Toeplitz C; McMahan et al.,
NeurIPS 2023; Kalinin & Lampert, NeurIPS 2024) and :mod:`dpviz.stream.blt` (Buffered-Linear-Toeplitz C;
Dvijotham, McMahan, Pillutla, Steinke & Thakurta, FOCS 2024). Both give the strategy's coefficients
c_0..c_{N−1} (``coefficients``, non-negative) and the decoder's b_0..b_{N−1} (``decoder``, B = W C⁻¹ is
Toeplitz too). This module makes them :class:`~dpviz.stream.strategy.StreamStrategy` objects:

* measured queries y = C a + η (Gaussian only: Δ₂ = ‖C e_1‖₂ = ‖c‖₂, column 1 is the longest of a
  lower-triangular Toeplitz matrix);
* estimate ŝ = B y (:class:`ToeplitzEstimator`), Var(ŝ_t) = Σ_{k≤t} b_k² v_{t−k} (equal v: v · cumsum(b²));
* release on the lattice 2^−k ℤ through :attr:`~dpviz.stream.strategy.StreamStrategy.lattice_coefficients`
  (:mod:`dpviz.stream.lattice`: C rounded to the lattice, C̃ a computed exactly, the charged sensitivity
  ‖c‖₂ + √N·2^−k checked in exact arithmetic against the rounded coefficients).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from dpviz.core.noise import Family
from dpviz.errors import InputError
from dpviz.stream.estimators import StreamEstimator, readonly, toeplitz_apply
from dpviz.stream.strategy import StreamStrategy, _padded, check_family

__all__ = ["ToeplitzFactor", "FACTORISATIONS", "ToeplitzEstimator", "ToeplitzStrategy", "factorisation"]


class ToeplitzFactor(Protocol):
    """What a Toeplitz factorisation gives: C's and B's first N coefficients and its two losses."""

    horizon: int

    @property
    def coefficients(self) -> np.ndarray: ...

    @property
    def decoder(self) -> np.ndarray: ...

    @property
    def max_loss(self) -> float: ...

    @property
    def mean_loss(self) -> float: ...


def _blt(horizon: int) -> ToeplitzFactor:
    from dpviz.stream.blt import blt

    return blt(horizon)


def _banded(horizon: int) -> ToeplitzFactor:
    from dpviz.stream.banded import banded

    return banded(horizon)


FACTORISATIONS: dict[str, Callable[[int], ToeplitzFactor]] = {"banded": _banded, "blt": _blt}
"""Mechanism name → the cached factorisation for a horizon N."""


def factorisation(name: str, horizon: int) -> ToeplitzFactor:
    """The optimised factorisation of mechanism ``name`` (``banded`` or ``blt``) at horizon N (cached)."""
    if name not in FACTORISATIONS:
        raise InputError(f"mechanism: expected one of {', '.join(FACTORISATIONS)}, got {name!r}")
    return FACTORISATIONS[name](horizon)


@dataclass(frozen=True, eq=False)
class ToeplitzEstimator(StreamEstimator):
    """ŝ = B y for a Toeplitz decoder with coefficients b: Var(ŝ_t) = Σ_{k≤t} b_k² v_{t−k}."""

    horizon: int
    decoder: np.ndarray
    name: str = "toeplitz-decoder"

    @property
    def size(self) -> int:
        return self.horizon

    @property
    def coefficients(self) -> np.ndarray:
        """b_0..b_{N−1} (what a streamer or a test reads)."""
        return self.decoder

    def apply(self, values: np.ndarray) -> np.ndarray:
        return toeplitz_apply(self.decoder, values)

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        v = np.broadcast_to(query_variance, (self.horizon,))
        b2 = np.square(self.decoder)
        if np.all(v == v[0]):
            return float(v[0]) * np.cumsum(b2)
        return np.maximum(toeplitz_apply(b2, v), 0.0)


@dataclass(frozen=True, eq=False)
class ToeplitzStrategy(StreamStrategy):
    """Q = C, an optimised real lower-triangular Toeplitz strategy (Gaussian only; released on a lattice)."""

    @cached_property
    def factor(self) -> ToeplitzFactor:
        return factorisation(self.name, self.horizon)

    @property
    def discrete_ok(self) -> bool:
        return False

    @property
    def lattice_coefficients(self) -> np.ndarray:
        return self.factor.coefficients

    @cached_property
    def estimator(self) -> StreamEstimator:
        return ToeplitzEstimator(self.horizon, readonly(np.array(self.factor.decoder, dtype=float)),
                                 f"{self.name}-decoder")

    @property
    def size(self) -> int:
        return self.horizon

    @cached_property
    def _l2(self) -> float:
        c = np.asarray(self.factor.coefficients)
        return float(np.sqrt(np.sum(c * c)))

    def sensitivity(self, family: Family | None = None) -> float:
        if check_family(family or self.family) != "gaussian":
            raise InputError(f"mechanism {self.name!r}: a real factorisation needs Gaussian noise (ρ-zCDP)")
        return self._l2

    def answer(self, data: Any) -> np.ndarray:
        return toeplitz_apply(self.factor.coefficients, _padded(data, self.horizon))
