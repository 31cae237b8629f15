"""The two modes every command, page panel and output file names: simulate and release.

* **simulate** (teaching, what-if): seeded, fast continuous noise, truth and error metrics shown, many
  methods on one draw, an ε slider may rescale one draw. Every output says it is a simulation.
* **release** (to publish): one mechanism, discrete noise on integer data from the OS CSPRNG, no
  seed, fresh noise every run, no truth and no truth-derived number in the output, files written
  atomically and never over the input.

The mode travels with the noise: a release's :class:`~dpviz.core.noise.Noise` is discrete and its ``rng`` None
(the OS CSPRNG); a simulation's noise is continuous with a seeded Generator. Every capability's
``release(data, noise, *, rng=None, ...)`` returns a :class:`dpviz.core.release.Release`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from dpviz.errors import InputError

ModeName = Literal["simulate", "release"]
SIMULATION_NOTICE = "simulation — not a private release"
RELEASE_NOTICE = "private release — discrete noise from the OS CSPRNG, no truth in the output"

__all__ = ["ModeName", "fresh_seed", "SIMULATION_NOTICE", "RELEASE_NOTICE", "output_name", "check_seed"]


def check_seed(seed: int) -> int:
    """A simulation seed: a non-negative integer (numpy's SeedSequence accepts any size)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"--seed: expected a non-negative integer, got {seed!r}")
    return int(seed)


def fresh_seed() -> int:
    """A new simulation seed from OS entropy, short enough to show and type back (< 2³¹)."""
    return int(np.random.SeedSequence().entropy % (2**31 - 1))


def output_name(capability: str, mode: ModeName, stem: str = "", ext: str = "csv") -> str:
    """File name that carries the mode, e.g. ``county.tree-release.csv`` / ``tree-simulation.csv``."""
    tag = "release" if mode == "release" else "simulation"
    return f"{stem + '.' if stem else ''}{capability}-{tag}.{ext}"


SAMPLERS_NOTE = ("discrete Laplace / discrete Gaussian noise on integer answers (Canonne, Kamath & Steinke, "
                 "NeurIPS 2020; dpviz.core.samplers), drawn from the operating system's CSPRNG, fresh for this "
                 "release")
SEEDED_NOTE = "discrete noise from a caller-supplied numpy Generator (testing only: NOT a private release)"


def release_metadata(capability: str, noise, *, seeded: bool, sensitivity: float, **fields) -> dict:
    """Moved to :func:`dpviz.core.release.release_metadata` (the one place a release's description is built)."""
    from dpviz.core.release import release_metadata as build

    return build(capability, noise, seeded=seeded, sensitivity=sensitivity, **fields)
