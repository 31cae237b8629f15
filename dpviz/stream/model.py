"""The stream capability's data type: a count stream a_1..a_N with optional timestamps.

Parsed by :mod:`dpviz.stream.io` (CSV, bundled samples in :mod:`dpviz.stream.samples`), consumed by
:func:`dpviz.stream.release.release` / :func:`dpviz.stream.release.simulate` (which also accept a bare
array of counts). The horizon N (public) and the timestamps are given as they are in the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StreamData"]


@dataclass(frozen=True)
class StreamData:
    """A parsed stream: ``counts`` (float64, >= 0) and optional ``timestamps`` (datetime64)."""

    counts: np.ndarray
    timestamps: np.ndarray | None
    count_column: str
    time_column: str | None

    def __len__(self) -> int:
        return int(self.counts.size)
