"""Stream speed (issue 3 "Speed"; issue 7): FDA vs the generic solvers (SLSQP, sparse barrier), 10^6-step
simulations (continuous noise) and private releases (discrete noise from the OS CSPRNG), square-root noise.

Run: ``python bench/stream_bench.py``. Prints one table of measured times and ratios, all from this
process; there are no timing assertions in the unit tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy.linalg import toeplitz  # noqa: E402

from dpviz.core.noise import Noise  # noqa: E402
from dpviz.stream.private_release import release  # noqa: E402
from dpviz.stream.simulation import make_mechanism  # noqa: E402
from dpviz.stream.strategies import RELEASABLE, available, toeplitz_apply  # noqa: E402
from dpviz.stream.weights import _fda_weights, generic_weights  # noqa: E402
from common import best_of  # noqa: E402 - bench/ is on sys.path when run as a script



def fda_weights(horizon: int, noise: str = "laplace"):
    """FDA without the per-(N, family) cache: the bench times the computation itself."""
    return _fda_weights.__wrapped__(horizon, noise)




def main() -> None:
    rows: list[tuple[str, float, str, str]] = []
    n_big = 2**20
    t_fda_big = best_of(lambda: fda_weights(n_big), 5)
    rows.append(("FDA weights N=2^20", t_fda_big, "<= 50 ms", "pass" if t_fda_big <= 0.05 else "FAIL"))
    t_fda_255 = best_of(lambda: fda_weights(255), 20)
    t_gen_255 = best_of(lambda: generic_weights(255, method="slsqp"), 1)
    rows.append(("FDA weights N=255", t_fda_255, "", ""))
    rows.append(("SLSQP (5.10) N=255", t_gen_255, "", ""))
    same = t_gen_255 / t_fda_255
    rows.append((f"ratio SLSQP(255) / FDA(255) = {same:,.0f}x", float("nan"), ">= 1000x", "pass" if same >= 1000 else "FAIL"))
    rows.append((f"ratio SLSQP(255) / FDA(2^20) = {t_gen_255 / t_fda_big:,.0f}x (info)", float("nan"), "", ""))
    # the sparse barrier solver the test suite uses for the cross-check (certified gap <= 1e-8)
    for noise in ("laplace", "gaussian"):
        for horizon in (255, 1000, 4096):
            t_bar = best_of(lambda horizon=horizon, noise=noise: generic_weights(horizon, noise), 3)
            t_fda = best_of(lambda horizon=horizon, noise=noise: fda_weights(horizon, noise), 20)
            rows.append((f"barrier (5.10) N={horizon} {noise} (= {t_bar / t_fda:,.0f}x FDA)", t_bar, "", ""))

    n = 10**6
    series = np.random.default_rng(0).poisson(10, n).astype(float)
    t_cumsum = best_of(lambda: np.cumsum(series), 5)
    rows.append(("peer: np.cumsum of 10^6 counts", t_cumsum, "", ""))
    for noise in (Noise.laplace(1.0), Noise.gaussian(0.5)):
        for name in available(noise):
            def run(name=name, noise=noise) -> None:
                make_mechanism(name, n, noise).simulate(series, np.random.default_rng(1))
            t = best_of(run, 3)
            rows.append((f"simulate 10^6 {name} ({noise.family})", t, "<= 1 s",
                         ("pass" if t <= 1.0 else "FAIL") + f"  ({t / t_cumsum:,.0f}x cumsum)"))
    counts = series.astype(np.int64)
    for noise in (Noise.laplace(1.0, discrete=True), Noise.gaussian(0.5, discrete=True)):
        for name in RELEASABLE:
            t = best_of(lambda name=name, noise=noise: release(counts, name, noise), 2)
            rows.append((f"private release 10^6 {name} ({noise.describe})", t, "", "(OS CSPRNG, discrete)"))
    sq = make_mechanism("sqrt", n, Noise.gaussian(0.5))
    t_sq = best_of(lambda: sq.errors(np.random.default_rng(2), 1), 3)
    rows.append(("sqrt-factorisation noise 10^6 (FFT)", t_sq, "<= 5 s", "pass" if t_sq <= 5.0 else "FAIL"))
    # dense peer for the Toeplitz product at a size a dense matrix still fits
    m = 4096
    c = make_mechanism("sqrt", m, Noise.gaussian(0.5)).strategy.estimator.coefficients
    dense = toeplitz(c, np.concatenate([[c[0]], np.zeros(m - 1)]))
    z = np.random.default_rng(3).standard_normal(m)
    small = make_mechanism("sqrt", m, Noise.gaussian(0.5))
    assert np.allclose(dense @ z, toeplitz_apply(c, z))
    t_dense = best_of(lambda: dense @ z, 5)
    t_fft = best_of(lambda: small.errors(np.random.default_rng(2), 1), 5)
    rows.append((f"sqrt noise N=4096: dense L·z / FFT = {t_dense / t_fft:.1f}x", float("nan"), "", ""))

    width = max(len(r[0]) for r in rows)
    print(f"{'measurement'.ljust(width)}  {'seconds':>10}  {'target':>9}  result")
    for label, sec, target, result in rows:
        shown = "" if np.isnan(sec) else f"{sec:10.4f}"
        print(f"{label.ljust(width)}  {shown:>10}  {target:>9}  {result}")


if __name__ == "__main__":
    main()
