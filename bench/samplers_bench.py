"""Discrete-noise sampler speed: dpviz.core.samplers vs NumPy's float samplers vs OpenDP.

    python bench/samplers_bench.py [--quick]

One run times (best of 3, all in this process): NumPy ``rng.laplace`` / ``rng.normal`` for 10^7
draws; our ``discrete_laplace`` / ``discrete_gaussian`` for 10^7 draws with a scalar scale and with
10^7 distinct per-element scales, each with ``rng=None`` (OS CSPRNG) and with a seeded Generator;
and OpenDP's integer Laplace / Gaussian measurements (one call per sample), timed over 20,000
calls and extrapolated to 10^7.  Goal: ours ≤ 10× NumPy's ``laplace``.  ``--quick``: 10^6 draws
and 2,000 OpenDP calls.  No timing is asserted in the unit tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpviz.core.samplers import discrete_gaussian, discrete_laplace  # noqa: E402
from common import best_of  # noqa: E402 - bench/ is on sys.path when run as a script

GOAL = 10.0
SCALAR = 100.0  # block size K = 8: the two-word path with an acceptance test




def opendp_per_sample(kind: str, scale: float, calls: int) -> float | None:
    """Seconds per OpenDP sample (best of 3 runs of ``calls`` calls), or None without OpenDP."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
    meas = make(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=scale)

    def run() -> None:
        for _ in range(calls):
            meas(0)

    return best_of(run) / calls


def main(quick: bool = False) -> int:
    n = 10**6 if quick else 10**7
    calls = 2_000 if quick else 20_000
    rng = np.random.default_rng(20240601)
    per_element = rng.uniform(1.0, 1000.0, size=n)  # n distinct scales, like per-node weights
    print(f"n = {n:,} draws per timing, best of 3\n")

    t_lap = best_of(lambda: rng.laplace(size=n))
    t_norm = best_of(lambda: rng.normal(size=n))
    print(f"{'numpy rng.laplace':44s} {t_lap:8.3f} s")
    print(f"{'numpy rng.normal':44s} {t_norm:8.3f} s   ({t_norm / t_lap:.2f}x laplace)\n")

    header = f"{'ours':44s} {'time':>8s}   {'/ np.laplace':>12s}   goal <= {GOAL:.0f}x"
    print(header)
    print("-" * len(header))
    ours: dict[tuple[str, str, str], float] = {}
    samplers = {"laplace": discrete_laplace, "gaussian": discrete_gaussian}
    for kind, sampler in samplers.items():
        for scale_name, scale in (("scalar", SCALAR), ("per-element", per_element)):
            for source, gen in (("CSPRNG", None), ("Generator", np.random.default_rng(1))):
                t = best_of(lambda: sampler(scale, n, gen))
                ours[kind, scale_name, source] = t
                label = f"discrete_{kind:<8s} {scale_name:<11s} {source}"
                verdict = "pass" if t / t_lap <= GOAL else "FAIL"
                print(f"{label:44s} {t:8.3f} s   {t / t_lap:11.2f}x   {verdict}")
    print()

    header = (
        f"{'OpenDP (one call per sample)':34s} {'us/sample':>10s} {f'est. {n:.0e}':>11s}"
        f"   {'/ ours scalar':>13s}   {'/ ours per-elt':>14s}"
    )
    print(header)
    print("-" * len(header))
    for kind in samplers:
        per = opendp_per_sample(kind, SCALAR, calls)
        if per is None:
            print(f"opendp {kind}: not installed")
            continue
        est = per * n
        scalar, elt = ours[kind, "scalar", "CSPRNG"], ours[kind, "per-element", "CSPRNG"]
        label = f"make_{kind} (int, scale {SCALAR:g})"
        print(f"{label:34s} {per * 1e6:10.1f} {est:10.1f}s   {est / scalar:12.0f}x   {est / elt:13.0f}x")
    print(f"\n(OpenDP estimate = {calls:,} timed calls extrapolated to {n:,}; ratios vs ours with rng=None)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(quick="--quick" in sys.argv[1:]))
