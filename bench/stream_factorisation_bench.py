"""Issue 20's stream goals in one run, printed as ratios: the continual counters at N = 2^20 under ρ-zCDP.

* γ₂ = worst-step std × √(2ρ)/Δ₂ (Δ₂ = 1: one event) of every Gaussian mechanism, against the best explicit
  factorisation's 0.846 + ln N/π (goal: the best releasable within 2%) and the lower bound 0.701 + ln N/π;
* mean per-step variance / Fenwick + FDA's (goal: the best releasable ≤ 0.3);
* the BLT optimisation at N = 2^20 (goal ≤ 10 s; uncached), the banded one (no goal);
* one streaming step of the O(d) BLT and O(b) banded streamers (goal ≤ 2 µs for d ≤ 8), Fenwick + FDA beside;
* one lattice release of ``blt`` at N = 2^20 (discrete Gaussian on 2^-k Z, OS CSPRNG);
* jax_privacy's BLT in the same run when it imports (``pip install --target DIR jax-privacy`` and
  ``--jax-path DIR``: a bench-only extra, never in the project's venv), else a note.

Run: ``python bench/stream_factorisation_bench.py [--horizon N] [--jax-path DIR]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpviz.core.noise import Noise  # noqa: E402
from dpviz.stream import banded as BD  # noqa: E402
from dpviz.stream import blt as BL  # noqa: E402
from dpviz.stream.mechanism import make_mechanism  # noqa: E402
from dpviz.stream.strategy import available, best_releasable, releasable, strategy  # noqa: E402

RHO = 0.5  # σ² = Δ₂²: the worst-step std is γ₂ itself


def per_step(fn, steps: int) -> float:
    """Seconds per call of ``fn(x)`` over ``steps`` counts (after 1,000 warm-up steps)."""
    xs = np.random.default_rng(0).poisson(10, steps + 1000).astype(float).tolist()
    for x in xs[:1000]:
        fn(x)
    start = time.perf_counter()
    for x in xs[1000:]:
        fn(x)
    return (time.perf_counter() - start) / steps


def errors_table(n: int) -> dict[str, tuple[float, float, float]]:
    """name → (γ₂, mean variance, build seconds) for every Gaussian mechanism at N (unit event sensitivity)."""
    noise = Noise.gaussian(RHO)
    out = {}
    for name in available("gaussian"):
        if name == "naive":
            continue
        start = time.perf_counter()
        v = strategy(name, n, "gaussian").per_step_variance(noise)
        out[name] = (math.sqrt(float(v.max())), float(v.mean()), time.perf_counter() - start)
    return out


def jax_toeplitz(n: int, path: str | None, ours: dict) -> str:
    """jax_privacy's optimal Toeplitz strategy for max error (``toeplitz.optimal_max_error_strategy_coefs``: C with
    A = C C, so the decoder is C too and γ₂ = ‖c‖₂²) at N, against dpviz's sqrt and the best releasable mechanism."""
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        import jax  # type: ignore[import-not-found]

        jax.config.update("jax_enable_x64", True)
        from jax_privacy.matrix_factorization import toeplitz as jtz  # type: ignore[import-not-found]
    except Exception as exc:  # ImportError, or jax failing to start
        return f"jax_privacy Toeplitz: not importable ({type(exc).__name__}); no comparison in this run"
    start = time.perf_counter()
    c = np.asarray(jtz.optimal_max_error_strategy_coefs(n), dtype=float)
    sec = time.perf_counter() - start
    theirs = float(np.sum(c * c))  # max column norm of C times max row norm of the decoder C: both ‖c‖₂
    best = min(ours, key=lambda k: ours[k][0])
    return (f"jax_privacy Toeplitz (optimal_max_error_strategy_coefs, {sec:.2f} s): γ₂ {theirs:.4f}; dpviz sqrt "
            f"{ours['sqrt'][0]:.4f} (ratio {ours['sqrt'][0] / theirs:.6f}); dpviz's best, {best}: {ours[best][0]:.4f} "
            f"(ratio {ours[best][0] / theirs:.4f})")


def jax_blt(n: int, path: str | None, ours: BL.BLT, ours_seconds: float) -> str:
    """jax_privacy's BLT optimiser (``buffered_toeplitz.optimize``, max error, single participation) at N, when it
    imports: its time, its buffers and its γ₂ (its own closed form, and ours on its θ, ω); else why not."""
    if path:
        sys.path.insert(0, path)
    try:
        import jax  # type: ignore[import-not-found]

        jax.config.update("jax_enable_x64", True)
        from jax_privacy.matrix_factorization import buffered_toeplitz as jbt  # type: ignore[import-not-found]
    except Exception as exc:  # ImportError, or jax failing to start
        return (f"jax_privacy not importable ({type(exc).__name__}: {str(exc)[:80]}); no comparison in this run "
                "(pip install --target DIR jax-privacy, then --jax-path DIR)")
    start = time.perf_counter()
    blt = jbt.optimize(n=n, error="max")
    sec = time.perf_counter() - start
    theta, omega = np.asarray(blt.buf_decay, dtype=float), np.asarray(blt.output_scale, dtype=float)
    theirs = math.sqrt(float(jbt.max_loss(blt, n)))
    check = BL.BLT(n, tuple(theta.tolist()), tuple(omega.tolist())).max_loss
    return (f"jax_privacy {getattr(sys.modules.get('jax_privacy'), '__version__', '?')} BLT (optimize(n, error='max'), "
            f"CPU, jit compile included): {theta.size} buffers, γ₂ {theirs:.4f} (dpviz's closed form on its θ, ω: "
            f"{check:.4f}) in {sec:.1f} s; dpviz blt d={ours.buffers}: γ₂ {ours.max_loss:.4f} in {ours_seconds:.2f} s "
            f"(γ₂ ratio {ours.max_loss / theirs:.4f}, time ratio {ours_seconds / sec:.4f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=int, default=2**20)
    ap.add_argument("--steps", type=int, default=200_000, help="streaming steps timed")
    ap.add_argument("--jax-path", default=None, help="a --target folder holding jax_privacy (bench-only)")
    ap.add_argument("--no-jax-blt", action="store_true",
                    help="skip jax_privacy's BLT optimisation (about 5 minutes at N = 2^20 on this box)")
    args = ap.parse_args()
    n = args.horizon
    target = 0.846 + math.log(n) / math.pi
    lower = 0.701 + math.log(n) / math.pi
    print(f"N = {n:,} (2^{math.log2(n):.2f}), Gaussian ρ = {RHO} (σ² = Δ₂²), one event: Δ₂ = 1")
    print(f"γ₂ references: best explicit 0.846 + ln N/π = {target:.4f}, lower bound 0.701 + ln N/π = {lower:.4f}, "
          f"square root ~ 1 + ln N/π = {1 + math.log(n) / math.pi:.4f}\n")

    start = time.perf_counter()
    blt8 = BL.optimise_blt.__wrapped__(n, 8, "max")
    t_blt8 = time.perf_counter() - start
    start = time.perf_counter()
    blt4 = BL.optimise_blt.__wrapped__(n, 4, "max")
    t_blt4 = time.perf_counter() - start
    start = time.perf_counter()
    blt_mean = BL.optimise_blt.__wrapped__(n, 8, "mean")
    t_blt_mean = time.perf_counter() - start
    start = time.perf_counter()
    BD.optimise_banded.__wrapped__(n, BD.DEFAULT_BAND, "mean")
    t_band = time.perf_counter() - start

    table = errors_table(n)
    fda_mean = table["fenwick-fda"][1]
    rel = releasable("gaussian")
    print(f"{'mechanism':<15} {'γ₂':>9} {'γ₂/target':>10} {'mean var':>10} {'mean/FDA':>9} {'build s':>8}  release?")
    for name, (g2, mean, sec) in sorted(table.items(), key=lambda kv: kv[1][0]):
        print(f"{name:<15} {g2:9.4f} {g2 / target:10.4f} {mean:10.3f} {mean / fda_mean:9.3f} {sec:8.2f}  "
              f"{'yes' if name in rel else 'no'}")
    for label, f in (("blt d=4 (max)", blt4), ("blt d=8 (mean obj.)", blt_mean)):
        print(f"{label:<15} {f.max_loss:9.4f} {f.max_loss / target:10.4f} {f.mean_loss:10.3f} "
              f"{f.mean_loss / fda_mean:9.3f}        -  (not registered)")
    best_max, best_mean = best_releasable("max", "gaussian", n), best_releasable("mean", "gaussian", n)
    g2_best = table[best_max][0]
    mean_best = table[best_mean][1]
    print(f"\nbest releasable, worst step: {best_max}: γ₂ {g2_best:.4f} = {g2_best / target:.4f}× target "
          f"(goal ≤ 1.02: {'pass' if g2_best <= 1.02 * target else 'MISS'})")
    print(f"best releasable, mean:       {best_mean}: mean variance {mean_best / fda_mean:.4f}× FDA's "
          f"(goal ≤ 0.3: {'pass' if mean_best <= 0.3 * fda_mean else 'MISS'})")
    print(f"BLT optimisation at N (uncached): d=8 max {t_blt8:.2f} s, d=4 max {t_blt4:.2f} s, d=8 mean "
          f"{t_blt_mean:.2f} s (goal ≤ 10 s: {'pass' if max(t_blt8, t_blt4, t_blt_mean) <= 10 else 'MISS'}); "
          f"banded b={BD.DEFAULT_BAND} (mean) {t_band:.2f} s")

    print("\nstreaming, one step (plain Python per step; best of 3 passes; seeded simulation streamers):")
    for name in ("blt", "blt-weighted", "banded", "fenwick-fda", "smooth-binary", "sqrt-weighted"):
        if name not in available("gaussian"):
            continue
        mech = make_mechanism(name, n, Noise.gaussian(RHO))
        steps = min(args.steps if name != "sqrt-weighted" else 20_000, n - 1000)
        t = min(per_step(mech.streamer(np.random.default_rng(r)).step, steps) for r in range(3))  # best of 3
        state = {"blt": f"d = {blt8.buffers} buffers", "blt-weighted": f"d = {blt8.buffers} buffers",
                 "banded": f"b = {BD.DEFAULT_BAND}",
                 "sqrt-weighted": "O(t): the dense square root's history"}.get(name, "O(log N)")
        goal = f" (goal ≤ 2 µs: {'pass' if t <= 2e-6 else 'MISS'})" if name.startswith("blt") else ""
        print(f"  {name:<14} {t * 1e6:6.2f} µs/step, state {state}{goal}")

    counts = np.random.default_rng(5).poisson(3, n)
    from dpviz.stream.release import release

    start = time.perf_counter()
    r = release(counts, Noise.gaussian(RHO, discrete=True), mechanism="blt")
    t_rel = time.perf_counter() - start
    print(f"\nblt lattice release at N: {t_rel:.2f} s (k = {r.lattice.bits}, charged Δ₂ {r.sensitivity:.6f} = "
          f"{r.lattice.base_sensitivity:.6f} + slack {r.lattice.slack:.2e})")

    print("\n" + jax_toeplitz(n, args.jax_path, table))
    if not args.no_jax_blt:
        print(jax_blt(n, args.jax_path, blt8, t_blt8))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
