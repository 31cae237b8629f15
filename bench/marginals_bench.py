"""Marginals speed (issue 8 "Speed"): ResidualPlanner + GReM-MLE / GReM-LNN on Titanic and Adult, and
Private-PGM (PyPI ``mbi``, a bench extra: ``pip install -r requirements-bench.txt``) on the same measurements.

Run: ``python bench/marginals_bench.py`` (full, < 20 min on 2 cores) or ``--quick`` (< 1 min). Prints
three tables, all measured in this run; there are no timing assertions in the unit tests.

1. ReM speed. ε = 1, δ = 1e-9 (ρ = zcdp_rho), one seeded ResidualPlanner measurement of the workload's
   downward closure; ResidualPlanner measure + GReM-MLE (best of 3) and GReM-LNN run to convergence (the
   paper's ResidualPlanner settings T = 4000, s = 0.1, λ0 = −1 and the library's stopping rule), with the
   measured time per LNN iteration beside the predicted cost Σ_{γ∈𝒲} |γ| n_γ 2^{|γ|} (paper Thm. 6e).
2. Peer on the same measurements. Each method runs in its own subprocess (time, peak resident memory (VmHWM), error):
   * ResidualPlanner measurements (Titanic): Private-PGM receives every residual measurement *exactly*:
     z_τ ~ N(D_τ μ_τ, σ_τ² D_τD_τᵀ) has the same likelihood as the isotropic measurement P_τ y_τ of P_τ μ_τ,
     P_τ = D_τ⁺D_τ = ⊗_{k∈τ}(I − 11ᵀ/n_k) (centring along every axis of τ), and mbi's LinearMeasurement
     takes any linear ``query`` on a clique's factor, so it gets y = A_{τ,τ} z_τ with query "centre".
     On Adult the measured cliques are every ≤3-subset, the junction tree is the full domain (printed,
     not run).
   * Scalable MWEM measurements (Titanic, Adult; the paper's Private-PGM experiment, App. G / Table 2): the
     total plus T adaptively selected 3-way marginals with isotropic Gaussian noise, fed to EMP, GReM-LNN
     (the paper's MWEM settings T = 1000, s = 0.02 and η = 1/40, the authors' code's regulariser; see
     dpviz.marginals.lnn.ETA) and Private-PGM (identity queries).
3. Where Private-PGM's memory line falls on this machine: Adult, the total plus the first K 3-way
   marginals of a seeded random order (isotropic noise, 10 % of ρ on the total, 90 % split evenly), K
   growing until Private-PGM exceeds the memory cap (RSS watchdog, default 16 GiB) or its time cap, while
   EMP (ReM) runs every K.

Private-PGM settings: ``mbi.estimation.MirrorDescent`` (the package's recommended estimator, Armijo step),
mbi's default 1000 iterations, float64 (``jax_enable_x64``, as mbi advises), stopped early by the bench's
time cap (reported). Its workload answers (every 3-way marginal, most of them outside the model's cliques)
are exact inference on the fitted potentials done here in numpy (``np.einsum`` over exp(θ)); mbi's own
``variable_elimination`` gives the same numbers but took ~0.8 s per marginal through JAX (~5 min for
Adult's 364), which would swamp the fit time.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import math
import os
import pickle
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import best_of, ratio, table  # bench/ is on sys.path when run as a script

from dpviz.core.accounting import zcdp_rho
from dpviz.marginals.model import Dataset, all_kway, downward_closure
from dpviz.marginals.strategy import measure_marginal, measure_residuals
from dpviz.marginals.metrics import negative_mass, workload_error
from dpviz.marginals.estimators import MarginalMeasurement, ResidualMeasurement

EPSILON, DELTA, SEED = 1.0, 1e-9, 0
GIB = 2**30
RP_LNN = {"rounds": 4000, "step": 0.1, "lam0": -1.0}               # paper App. H, ResidualPlanner
MWEM_LNN = {"rounds": 1000, "step": 0.02, "lam0": -1.0, "eta": 1 / 40}  # App. H; η as the authors' code (lnn.ETA)
PGM_ITERS = 1000  # mbi's default for Estimator.estimate
PGM_WALL_EXTRA = 150.0  # part 3: a Private-PGM worker is killed at its fit time cap + this (setup, JIT)
LOW_MEMORY = 1.0 * GIB  # the watchdog also stops a worker when the machine has less than this available


# ============================================================================================ helpers


def load(name: str) -> Dataset:
    from dpviz.marginals.samples import load_adult_sample, load_titanic_sample

    return {"titanic": load_titanic_sample, "adult": load_adult_sample}[name]()


def predicted_cost(domain, workload) -> int:
    """Σ_{γ∈𝒲} |γ| n_γ 2^{|γ|}: the cost of one GReM-LNN round (paper Thm. 6e), in element operations."""
    return sum(len(g) * domain.size(g) * 2 ** len(g) for g in workload)


def fmt_bytes(b: float | None) -> str:
    if b is None or not math.isfinite(b):
        return "—"
    if b >= GIB:
        return f"{b / GIB:.2f} GiB"
    return f"{b / 2**20:.0f} MiB"


def fmt_s(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "—"
    return f"{s:.3g} s" if s < 100 else f"{s:.0f} s"






def pgm_status() -> tuple[bool, str]:
    """(usable, description) of the Private-PGM peer, without importing JAX into this process."""
    if importlib.util.find_spec("mbi") is None:
        return False, "Private-PGM: not installed (pip install -r requirements-bench.txt; mbi needs jax)"
    try:
        v = {p: importlib.metadata.version(p) for p in ("mbi", "jax", "jaxlib")}
    except importlib.metadata.PackageNotFoundError as exc:
        return False, f"Private-PGM: not installed ({exc})"
    return True, "Private-PGM: mbi " + v["mbi"] + ", jax " + v["jax"] + ", jaxlib " + v["jaxlib"]


def _mem_available() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    return math.inf


def _rss(pid: int, field: str = "VmRSS") -> float:
    """Resident set (``VmRSS``) or its high-water mark (``VmHWM``) of a process, bytes (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 0.0


def run_worker(job: dict, mem_cap: float, wall_cap: float) -> dict:
    """Run ``job`` in ``python bench/marginals_bench.py --worker IN OUT`` under an RSS watchdog.

    The child is SIGKILLed when its RSS exceeds ``mem_cap`` ("OOM"), when the machine's MemAvailable falls
    under LOW_MEMORY ("machine low"), or after ``wall_cap`` seconds ("killed: wall cap"). Peak memory is the
    child's VmHWM (kernel high-water mark of its resident set; the child reports it at the end, the watchdog
    polls it every 50 ms for a killed child). Not ru_maxrss: Linux carries the parent's high-water mark
    across fork + exec into the child's ru_maxrss. Not RLIMIT_AS: XLA reserves far more virtual address
    space than it touches, so an address-space cap fails JAX for the wrong reason; RSS is what runs out.
    """
    with tempfile.TemporaryDirectory(prefix="marg_bench_") as tmp:
        src, dst, errf = Path(tmp) / "in.pkl", Path(tmp) / "out.pkl", Path(tmp) / "stderr.txt"
        src.write_bytes(pickle.dumps(job))
        env = dict(os.environ, PYTHONWARNINGS="ignore", TF_CPP_MIN_LOG_LEVEL="3")
        started = time.perf_counter()
        with open(errf, "wb") as log:
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(src), str(dst)],
                                    env=env, stdout=subprocess.DEVNULL, stderr=log)
            killed, hwm, status = None, 0.0, None
            try:
                while True:
                    pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        break
                    if killed is None:
                        rss = _rss(proc.pid)
                        hwm = max(hwm, _rss(proc.pid, "VmHWM"), rss)
                        if rss > mem_cap:
                            killed = f"OOM (RSS > {fmt_bytes(mem_cap)} cap)"
                        elif _mem_available() < LOW_MEMORY:
                            killed = f"stopped: machine below {fmt_bytes(LOW_MEMORY)} available (RSS {fmt_bytes(rss)})"
                        elif time.perf_counter() - started > wall_cap:
                            killed = f"killed at wall cap {wall_cap:.0f} s"
                        if killed:
                            os.kill(proc.pid, signal.SIGKILL)
                    time.sleep(0.05)
            finally:
                if status is None:  # interrupted: never leave a worker behind
                    os.kill(proc.pid, signal.SIGKILL)
                    os.waitpid(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        err = errf.read_text(errors="replace")
        out = {"wall": wall, "maxrss": hwm, "status": killed, "log": err}
        if killed is None and proc.returncode == 0 and dst.exists():
            out.update(pickle.loads(dst.read_bytes()))
            out["maxrss"] = max(hwm, out.pop("hwm"))
        elif killed is None:
            tail = err.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            out["status"] = f"failed: {tail[0][:120]}"
        return out


# ============================================================================================ workers


def _self_rss(field: str = "VmRSS") -> float:
    return _rss(os.getpid(), field)


def worker_rem(job: dict) -> dict:
    from dpviz.marginals.model import Domain
    from dpviz.marginals.lnn import grem_lnn
    from dpviz.marginals.estimators import decompose, emp, grem_mle, trunc_rescale

    domain = Domain(tuple(job["attrs"]), tuple(job["sizes"]))
    W = [tuple(g) for g in job["workload"]]
    if job["kind"] == "residual":
        res = [ResidualMeasurement(t, v, s2) for t, v, s2 in job["measurements"]]
    else:
        marg = [MarginalMeasurement(g, v, s) for g, v, s in job["measurements"]]
    base = _self_rss()
    out: dict = {"baseline": base}
    t = time.perf_counter()
    if job["kind"] == "residual":
        rec = grem_mle(domain, W, res)
    else:
        rec = emp(domain, W, marg)
        res = decompose(domain, marg)
    out["mle_time"] = time.perf_counter() - t
    out["mle"] = {g: np.asarray(v) for g, v in rec.marginals.items()}
    out["tr"] = {g: np.asarray(v) for g, v in trunc_rescale(rec).marginals.items()}
    if job.get("lnn") is not None:
        t = time.perf_counter()
        r = grem_lnn(domain, W, res, **job["lnn"])
        out["lnn_time"] = time.perf_counter() - t
        out["lnn"] = {g: np.asarray(v) for g, v in r.marginals.items()}
        out["lnn_info"] = {"iterations": r.iterations, "converged": r.converged, "stop": r.stop_reason,
                           "neg": r.negative_mass, "mix": r.feasibility_mix}
    return out


class CentredQuery:
    """P_τ f = f centred along every axis of its clique (the whitened ResidualPlanner residual query)."""

    def __call__(self, f):
        x = f.values
        for ax in range(x.ndim):
            x = x - x.mean(axis=ax, keepdims=True)
        return x.reshape(-1)

    def op_norm_sq(self) -> float:  # an orthogonal projection: ‖P‖₂ = 1
        return 1.0

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CentredQuery)


def _expand(attrs: tuple, arr: np.ndarray, target: tuple) -> np.ndarray:
    """``arr`` over ``attrs`` as a broadcastable array over ``target`` (⊇ attrs)."""
    arr = np.transpose(arr, [attrs.index(a) for a in target if a in attrs])
    return arr.reshape([arr.shape[[a for a in target if a in attrs].index(t)] if t in attrs else 1 for t in target])


def _log_ve(factors: list[tuple[tuple, np.ndarray]], query: tuple, order: list) -> np.ndarray:
    """log Σ_{x∖query} exp(Σ_C θ_C) over ``query`` (each attribute in some factor): variable elimination in
    log space along ``order`` (the attributes outside ``query``), numpy float64."""
    psi = list(factors)
    for z in order:
        hit = [f for f in psi if z in f[0]]
        psi = [f for f in psi if z not in f[0]]
        union = tuple(dict.fromkeys(a for f in hit for a in f[0]))
        acc = sum(_expand(at, ar, union) for at, ar in hit)
        ax = union.index(z)
        m = np.max(acc, axis=ax, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        red = np.log(np.sum(np.exp(acc - m), axis=ax)) + np.squeeze(m, axis=ax)
        psi.append((union[:ax] + union[ax + 1:], red))
    return sum(_expand(at, ar, query) for at, ar in psi) + np.zeros([1] * len(query))


def pgm_answers(model, attrs: tuple[str, ...], workload, sizes) -> tuple[dict, int]:
    """Exact workload marginals of mbi's fitted model, total · Σ_{x∖q} Π_C exp(θ_C) / Z.

    One HUGIN pass (mbi's ``message_passing_hugin``) calibrates the junction tree of the model's cliques; a
    query inside one junction-tree clique is a numpy sum of that clique's marginal, any other query is
    variable elimination over the model's potentials exactly as mbi's ``variable_elimination`` does it (its
    greedy order, log space) but in numpy: the same numbers (checked in part 2), where mbi's JAX version
    took ~0.8 s per query here. Attributes in no
    potential are independent and uniform under the model: they are spread evenly. Returns the answers and
    how many needed variable elimination."""
    from mbi import junction_tree, marginal_oracles

    total = float(model.total)
    factors = [(tuple(f.domain.attributes), np.asarray(f.values, dtype=np.float64))
               for f in model.potentials.tables.values()]
    active = tuple(a for a in attrs if any(a in cl for cl, _ in factors))
    dom = model.potentials.domain.project(active)
    cliques = [cl for cl, _ in factors]
    jt = junction_tree.make_junction_tree(dom, cliques)[0]
    maxc = sorted(junction_tree.maximal_cliques(jt), key=dom.size)
    pots = model.potentials.expand(maxc)
    beliefs = marginal_oracles.message_passing_hugin(pots, total)
    tables = {c: (tuple(beliefs[c].domain.attributes), np.asarray(beliefs[c].values, dtype=np.float64)) for c in maxc}
    out, n_ve = {}, 0
    for g in workload:
        q = tuple(attrs[k] for k in g)
        q_in = tuple(a for a in q if a in active)
        home = next((c for c in maxc if set(q_in) <= set(c)), None)
        if home is not None:
            at, arr = tables[home]
            m = arr.sum(axis=tuple(i for i, a in enumerate(at) if a not in q_in))
            kept = tuple(a for a in at if a in q_in)
            m = np.transpose(m, [kept.index(a) for a in q_in]) if q_in else m
        else:
            n_ve += 1
            elim = [a for a in active if a not in q_in]
            order = junction_tree.greedy_order(dom, cliques + [q_in], elim=elim)[0]
            logm = np.broadcast_to(_log_ve(factors, q_in, order), [sizes[attrs.index(a)] for a in q_in])
            m = np.exp(logm - logm.max())
        m = m / m.sum() * total
        n_out = math.prod(sizes[attrs.index(a)] for a in q if a not in active)
        m = _expand(q_in, np.asarray(m, dtype=np.float64), q) / n_out
        out[tuple(g)] = np.broadcast_to(m, [sizes[attrs.index(a)] for a in q]).reshape(-1).copy()
    return out, n_ve


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def worker_pgm(job: dict) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    import warnings

    warnings.filterwarnings("ignore")
    import jax.numpy as jnp
    import mbi
    from mbi import estimation, junction_tree, marginal_loss

    attrs, sizes = tuple(job["attrs"]), tuple(job["sizes"])
    dom = mbi.Domain(attrs, sizes)
    W = [tuple(g) for g in job["workload"]]
    ms = []
    if job["kind"] == "residual":
        from dpviz.marginals.model import Domain
        from dpviz.marginals.residuals import residual_to_marginal

        domain = Domain(attrs, sizes)
        for t, v, s2 in job["measurements"]:
            names = tuple(attrs[k] for k in t)
            if not t:  # D_∅ = [1]: the noisy total, an identity query
                ms.append(mbi.LinearMeasurement(np.asarray(v, float), names, math.sqrt(s2)))
            else:      # y = A_{τ,τ} z = P_τ (μ_τ + σ_τ ξ): isotropic in the row space of P_τ
                y = residual_to_marginal(domain, t, t, np.asarray(v, float))
                ms.append(mbi.LinearMeasurement(y, names, math.sqrt(s2), query=CentredQuery()))
    else:
        for g, v, s in job["measurements"]:
            ms.append(mbi.LinearMeasurement(np.asarray(v, float), tuple(attrs[k] for k in g), float(s)))
    cliques = [m.clique for m in ms if m.clique]
    base = _self_rss()
    out: dict = {"baseline": base, "model_mb": junction_tree.hypothetical_model_size(dom, cliques)}
    t0 = time.perf_counter()
    est = estimation.MirrorDescent()
    # Estimator.estimate (mbi 2.0.0) unrolled so that a time cap can stop it between 50-step blocks
    total = estimation.minimum_variance_unbiased_total(ms)
    loss_fn = marginal_loss.from_linear_measurements(ms, dom)
    _log(f"pgm: {len(ms)} measurements, model {out['model_mb']:.3g} MB")
    state = est._init(dom, loss_fn, total)
    state = jax.tree.map(jnp.copy, state)
    jax.block_until_ready(state)
    _log("pgm: init done")
    it, status = 0, "done"
    while it < job["iters"]:
        state = est._multi_step(state, loss_fn, total, ())
        jax.block_until_ready(state)
        it += estimation.CALLBACK_EVERY
        _log(f"pgm: {it} its, loss {float(state.loss):.6g}, {time.perf_counter() - t0:.1f} s")
        if time.perf_counter() - t0 > job["time_cap"] and it < job["iters"]:
            status = f"time cap {job['time_cap']:.0f} s"
            break
    model = est._finalize(state, total)
    jax.block_until_ready(model.marginals)
    out["fit_time"] = time.perf_counter() - t0
    out["iters"] = it
    out["loss"] = float(state.loss)
    out["fit_status"] = status
    if status != "done" and not job.get("answer_capped", True):
        out["answer_time"] = math.nan
        return out
    _log("pgm: fit done; answering the workload")
    t1 = time.perf_counter()
    out["pgm"], out["n_ve"] = pgm_answers(model, attrs, W, sizes)
    out["answer_time"] = time.perf_counter() - t1
    _log("pgm: answered")
    if job.get("check"):  # cross-check the numpy inference against mbi's own variable elimination
        errs = []
        for g in dict.fromkeys([W[0], W[len(W) // 2], W[-1]]):
            ref = np.asarray(model.project(tuple(attrs[k] for k in g)).datavector())
            errs.append(float(np.max(np.abs(ref - out["pgm"][g])) / max(1.0, float(np.max(np.abs(ref))))))
        out["check_err"] = max(errs)
    return out


def worker_main(src: str, dst: str) -> None:
    job = pickle.loads(Path(src).read_bytes())
    out = worker_rem(job) if job["method"] == "rem" else worker_pgm(job)
    out["hwm"] = _self_rss("VmHWM")
    Path(dst).write_bytes(pickle.dumps(out))


# ============================================================================================ part 1


def part1(quick: bool, lnn_cap: float) -> None:
    rho = zcdp_rho(EPSILON, DELTA)
    print(f"## 1. ReM speed: ResidualPlanner (S = W-closure) at eps = {EPSILON:g}, delta = {DELTA:g} "
          f"(rho = {rho:.6g}), seed {SEED}")
    print(f"GReM-LNN: rounds {RP_LNN['rounds']}, step {RP_LNN['step']}, lam0 {RP_LNN['lam0']}; converged = the "
          "library's early-stopping rule (negative mass > -1 or |lam'mu| < 0.01); time cap "
          f"{lnn_cap:.0f} s per run.\n")
    header = ["data", "W", "|W|", "cells", "RP measure", "GReM-MLE", "meas+MLE", "<=10 s", "MLE l1", "MLE neg mass",
              "LNN its", "LNN time", "<=5 min", "stop", "LNN neg (dual)", "LNN l1", "ms/it",
              "pred cost/it", "ns per unit", "(g,t) pairs", "us per pair"]
    rows = []
    cases = [("titanic", 2), ("titanic", 3), ("adult", 2), ("adult", 3)]
    for name, k in cases:
        data = load(name)
        d = data.domain
        W = all_kway(d, k)
        true = data.marginals(W)

        def meas(data=data, W=W):
            return measure_residuals(data, data.domain, W, rho, np.random.default_rng(SEED))

        from dpviz.marginals.lnn import grem_lnn
        from dpviz.marginals.estimators import grem_mle

        res = meas()
        t_meas = best_of(meas, 3)
        t_mle = best_of(lambda d=d, W=W, res=res: grem_mle(d, W, res), 3)
        rec = grem_mle(d, W, res)
        pred = predicted_cost(d, W)
        pairs = sum(2 ** len(g) for g in W)  # (γ, τ ⊆ γ) pairs: one A⁺ and one A application each per round
        cap = lnn_cap if not (quick and name == "adult") else min(lnn_cap, 5.0)
        t = time.perf_counter()
        r = grem_lnn(d, W, res, **RP_LNN, time_limit=cap)
        t_lnn = time.perf_counter() - t
        per_it = t_lnn / r.iterations
        total = t_meas + t_mle
        rows.append([name, f"{k}-way", str(len(W)), f"{sum(d.size(g) for g in W):,}", fmt_s(t_meas), fmt_s(t_mle),
                     fmt_s(total), ("pass" if total <= 10 else "FAIL") if (name, k) == ("adult", 3) else "",
                     f"{workload_error(true, rec.marginals):.4g}", f"{negative_mass(rec.marginals):.4g}",
                     str(r.iterations), fmt_s(t_lnn),
                     (("n/a (quick)" if quick else "pass" if r.converged and t_lnn <= 300 else "FAIL")
                      if (name, k) == ("adult", 3) else ""),
                     ("converged: " if r.converged else "NOT converged: ") + r.stop_reason,
                     f"{-r.negative_mass:.3g}", f"{workload_error(true, r.marginals):.4g}",
                     f"{per_it * 1e3:.3g}", f"{pred:,}", f"{per_it / pred * 1e9:.3g}", f"{pairs:,}",
                     f"{per_it / pairs * 1e6:.3g}"])
        print(f"  {name} {k}-way done", file=sys.stderr, flush=True)
    table(header, rows)
    print("MLE/LNN l1 = mean over the workload of ||mu_hat - mu||_1 / n_gamma (the authors' calcErrors). "
          "'LNN neg (dual)' = negative mass of the dual-ascent iterate when it stopped; the returned LNN "
          "marginals have none (final feasibility mix). 'ns per unit' = measured time per iteration / "
          "(sum |g| n_g 2^|g|): constant if the cost is proportional to the prediction. 'us per pair' = "
          "time per iteration / number of (gamma, tau subset of gamma) pairs: constant if a fixed per-call cost "
          "dominates.\n")


# ============================================================================================ part 2 / 3


def rp_job(data: Dataset, W, rho: float) -> dict:
    res = measure_residuals(data, data.domain, W, rho, np.random.default_rng(SEED))
    return {"kind": "residual", "measurements": [(m.tau, np.asarray(m.values), m.sigma2) for m in res]}


def mwem_job(data: Dataset, W, rho: float, rounds: int) -> dict:
    from dpviz.marginals.mwem import scalable_mwem

    r = scalable_mwem(data, W, rho, rounds=rounds, rng=np.random.default_rng(SEED))
    return {"kind": "marginal", "selected": r.selected,
            "measurements": [(m.clique, np.asarray(m.values), m.sigma) for m in r.measurements]}


def random_job(data: Dataset, W, rho: float, order, K: int) -> dict:
    """The total (10 % of ρ) + the first K cliques of ``order`` (90 % of ρ evenly), isotropic Gaussian."""
    rng = np.random.default_rng(SEED + K)
    sig0 = 1.0 / math.sqrt(2 * 0.1 * rho)
    sig = 1.0 / math.sqrt(2 * 0.9 * rho / K)
    ms = [measure_marginal(data, (), sig0, rng)] + [measure_marginal(data, W[i], sig, rng) for i in order[:K]]
    return {"kind": "marginal", "measurements": [(m.clique, np.asarray(m.values), m.sigma) for m in ms]}


def compare(data: Dataset, W, meas: dict, lnn: dict | None, pgm_ok: bool, mem_cap: float, pgm_cap: float,
            lnn_cap: float, check: bool = False, answer_capped: bool = True, wall_extra: float = 300.0) -> dict:
    base = {"attrs": data.domain.attrs, "sizes": data.domain.sizes, "workload": W, **meas}
    true = data.marginals(W)
    lnn_opts = None if lnn is None else {**lnn, "time_limit": lnn_cap}
    rem = run_worker({**base, "method": "rem", "lnn": lnn_opts}, mem_cap, 3 * lnn_cap + 600)
    out = {"rem": rem}
    if rem.get("status") is None:
        rem["mle_err"] = workload_error(true, rem["mle"])
        rem["tr_err"] = workload_error(true, rem["tr"])
        if "lnn" in rem:
            rem["lnn_err"] = workload_error(true, rem["lnn"])
    if pgm_ok:
        pgm = run_worker({**base, "method": "pgm", "iters": PGM_ITERS, "time_cap": pgm_cap, "check": check,
                          "answer_capped": answer_capped}, mem_cap, pgm_cap + wall_extra)
        if pgm.get("status") is None:
            pgm["err"] = workload_error(true, pgm["pgm"]) if "pgm" in pgm else math.nan
        out["pgm"] = pgm
    return out


def _its_done(p: dict) -> int:
    """Mirror-descent iterations a killed Private-PGM worker had logged."""
    return 50 * sum(" its, loss " in line for line in p.get("log", "").splitlines())


def _pgm_cells(p: dict | None) -> list[str]:
    if p is None:
        return ["not run"] + ["—"] * 5
    if p.get("status"):
        return [p["status"], "—", "—", fmt_bytes(p["maxrss"]), "—", fmt_s(p["wall"]) + " wall"]
    st = "ok" if p["fit_status"] == "done" else p["fit_status"]
    err = f"{p['err']:.4g}" if math.isfinite(p["err"]) else "— (not answered: fit capped)"
    return [f"{st}, {p['iters']} its", fmt_s(p["fit_time"]), fmt_s(p["answer_time"]), fmt_bytes(p["maxrss"]),
            err, f"{p['model_mb']:.3g} MB"]


def part2(quick: bool, pgm_ok: bool, pgm_line: str, mem_cap: float, pgm_cap: float, lnn_cap: float) -> None:
    rho = zcdp_rho(EPSILON, DELTA)
    print("## 2. Peer: Private-PGM on the same measurements (each method in its own subprocess)")
    print(pgm_line)
    print(f"Private-PGM: MirrorDescent, {PGM_ITERS} iterations (mbi's default), float64, fit time cap "
          f"{pgm_cap:.0f} s; ReM: GReM-MLE/EMP then GReM-LNN (RP: {RP_LNN}; MWEM: {MWEM_LNN}), LNN time cap "
          f"{lnn_cap:.0f} s; T+R = Trunc+Rescale of the MLE/EMP (the paper's baseline). Memory = peak resident set "
          "of the worker process (imports included; its resident set after imports in brackets). l1 as in part 1."
          "\n")
    header = ["case", "MLE/EMP l1", "T+R l1", "LNN l1", "ReM time (MLE + LNN)", "LNN its", "ReM peak RSS",
              "PGM status", "PGM fit", "PGM answer W", "PGM peak RSS", "PGM l1", "PGM model",
              "time PGM/ReM", "mem PGM/ReM", "l1 PGM/LNN", "l1 PGM/MLE"]
    rows = []
    titanic = load("titanic")
    Wt = all_kway(titanic.domain, 3)
    cases = [("titanic RP 3-way", titanic, Wt, rp_job(titanic, Wt, rho), RP_LNN),
             ("titanic MWEM T=4", titanic, Wt, mwem_job(titanic, Wt, rho, 4), MWEM_LNN)]
    if not quick:
        adult = load("adult")
        Wa = all_kway(adult.domain, 3)
        for T in (10, 30):
            cases.append((f"adult MWEM T={T}", adult, Wa, mwem_job(adult, Wa, rho, T), MWEM_LNN))
    for label, data, W, meas, lnn in cases:
        print(f"  {label} ...", file=sys.stderr, flush=True)
        c = compare(data, W, meas, lnn, pgm_ok, mem_cap, pgm_cap, lnn_cap, check=True)
        rem, pgm = c["rem"], c.get("pgm")
        if rem.get("status"):
            rem_cells = [rem["status"], "—", "—", "—", "—", fmt_bytes(rem["maxrss"])]
            rt = None
        else:
            info = rem.get("lnn_info", {})
            rt = rem["mle_time"] + rem.get("lnn_time", 0.0)
            lnn_note = f"{info.get('iterations', '—')}" + ("" if info.get("converged") else f" ({info.get('stop')})")
            rem_cells = [f"{rem['mle_err']:.4g}", f"{rem['tr_err']:.4g}", f"{rem.get('lnn_err', math.nan):.4g}",
                         f"{fmt_s(rem['mle_time'])} + {fmt_s(rem.get('lnn_time'))}", lnn_note,
                         f"{fmt_bytes(rem['maxrss'])} ({fmt_bytes(rem['baseline'])})"]
        pc = _pgm_cells(pgm)
        if pgm is not None and not pgm.get("status"):
            pc[3] = f"{fmt_bytes(pgm['maxrss'])} ({fmt_bytes(pgm['baseline'])})"
            pt = pgm["fit_time"] + pgm["answer_time"]
            if "check_err" in pgm:
                pc[0] += f" (numpy VE vs mbi VE, rel: {pgm['check_err']:.0e})"
            ratios = [ratio(pt, rt), ratio(pgm["maxrss"], rem.get("maxrss")),
                      ratio(pgm["err"], rem.get("lnn_err")), ratio(pgm["err"], rem.get("mle_err"))]
        else:
            ratios = ["—"] * 4
        rows.append([label, *rem_cells, *pc, *ratios])
    table(header, rows)
    print(adult_rp_model_size() + "\n")


def adult_rp_model_size() -> str:
    """Private-PGM's junction tree for ResidualPlanner on Adult (every ≤3-subset measured) = the full domain."""
    adult = load("adult")
    W = all_kway(adult.domain, 3)
    cl = [t for t in downward_closure(W) if t]
    cells = math.prod(adult.domain.sizes)
    return (f"Adult RP 3-way ({len(cl)} measured cliques, every pair of the 14 attributes together): the "
            f"junction tree is one clique of all 14 attributes, {cells:.3g} cells = {cells * 8 / 1e12:,.0f} TB "
            "in float64: Private-PGM not run (ReM: part 1).")


def part3(quick: bool, pgm_ok: bool, mem_cap: float, pgm_cap: float, ks: list[int] | None = None) -> None:
    rho = zcdp_rho(EPSILON, DELTA)
    adult = load("adult")
    W = all_kway(adult.domain, 3)
    order = np.random.default_rng(12345).permutation(len(W))
    Ks = ks or ((5, 10) if quick else (10, 20, 25, 30, 40, 60, 120, 364))
    print("## 3. Where Private-PGM's memory line falls (Adult, 2 cores, 24 GiB): total + first K 3-way "
          "marginals of a seeded random order")
    print(f"memory cap {fmt_bytes(mem_cap)} (RSS watchdog), Private-PGM fit time cap {pgm_cap:.0f} s; once "
          "Private-PGM has hit the memory cap, larger K are not run for it (its predicted model size is "
          "printed). ReM = EMP on the same measurements (all 364 3-way marginals), every K.\n")
    header = ["K", "PGM model (junction tree, f64)", "PGM status", "PGM fit", "PGM answer W", "PGM peak RSS",
              "PGM l1", "EMP time", "EMP peak RSS", "EMP l1", "mem PGM/EMP", "l1 PGM/EMP"]
    rows = []
    stopped = None
    if pgm_ok:
        import warnings

        warnings.filterwarnings("ignore")
        import mbi
        from mbi import junction_tree

        dom = mbi.Domain(adult.domain.attrs, adult.domain.sizes)
    for K in Ks:
        print(f"  K = {K} ...", file=sys.stderr, flush=True)
        meas = random_job(adult, W, rho, order, K)
        size = "—"
        if pgm_ok:
            cl = [tuple(adult.domain.attrs[k] for k in W[i]) for i in order[:K]]
            mb = junction_tree.hypothetical_model_size(dom, cl)
            size = f"{mb:,.3g} MB"
        c = compare(adult, W, meas, None, pgm_ok and stopped is None, mem_cap, pgm_cap, 0.0, answer_capped=False,
                    wall_extra=PGM_WALL_EXTRA)
        rem, pgm = c["rem"], c.get("pgm")
        pc = _pgm_cells(pgm)[:5] if pgm is not None else [
            ("not run: " + stopped) if stopped else "not run"] + ["—"] * 4
        st = (pgm or {}).get("status") or ""
        if st.startswith("OOM") or "out of memory" in st.lower():
            stopped = f"OOM at K = {K}"
        elif st.startswith("killed at wall cap"):
            pc[0] = f"killed at wall cap {pgm['wall']:.0f} s, {_its_done(pgm)} its done"
        if rem.get("status"):
            rc = [rem["status"], fmt_bytes(rem["maxrss"]), "—"]
        else:
            rc = [fmt_s(rem["mle_time"]), fmt_bytes(rem["maxrss"]), f"{rem['mle_err']:.4g}"]
        ok = pgm is not None and not pgm.get("status") and not rem.get("status")
        rows.append([str(K), size, *pc, *rc,
                     ratio(pgm["maxrss"], rem["maxrss"]) if pgm is not None else "—",
                     ratio(pgm["err"], rem["mle_err"]) if ok else "—"])
    table(header, rows)
    if pgm_ok:
        sizes = []
        for K in range(min(Ks), max(Ks) + 1) if quick else range(21, 41):
            cl = [tuple(adult.domain.attrs[k] for k in W[i]) for i in order[:K]]
            sizes.append(f"{K}: {junction_tree.hypothetical_model_size(dom, cl):,.3g} MB")
        print("Private-PGM model size (mbi.junction_tree.hypothetical_model_size, float64) by K: "
              + ", ".join(sizes) + "\n")


# ============================================================================================ main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a < 1 min smoke run (Titanic, small Adult cases)")
    ap.add_argument("--mem-cap-gib", type=float, default=16.0, help="Private-PGM memory cap (RSS), GiB")
    ap.add_argument("--pgm-cap", type=float, default=None, help="Private-PGM fit time cap, s")
    ap.add_argument("--lnn-cap", type=float, default=None, help="GReM-LNN time cap, s (part 1: 300 = the target)")
    ap.add_argument("--part", type=int, action="append", help="run only these parts (1, 2, 3)")
    ap.add_argument("--ks", type=int, nargs="+", help="part 3: these K only")
    ap.add_argument("--no-pgm", action="store_true", help="skip Private-PGM even if installed")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main(*args.worker)
        return
    quick = args.quick
    mem_cap = args.mem_cap_gib * GIB
    pgm_cap = args.pgm_cap if args.pgm_cap is not None else (8.0 if quick else 60.0)
    lnn_cap = args.lnn_cap if args.lnn_cap is not None else 300.0
    pgm_ok, pgm_line = pgm_status()
    if args.no_pgm:
        pgm_ok, pgm_line = False, "Private-PGM: skipped (--no-pgm)"
    parts = args.part or [1, 2, 3]
    started = time.perf_counter()
    print(f"# marginals bench{' (--quick)' if quick else ''}: python {platform.python_version()}, numpy "
          f"{np.__version__}, {os.cpu_count()} cores, {fmt_bytes(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES'))}"
          f" RAM, load average at start {os.getloadavg()[0]:.2f}")
    print(pgm_line + "\n")
    if 1 in parts:
        part1(quick, lnn_cap)
    if 2 in parts:
        part2(quick, pgm_ok, pgm_line, mem_cap, pgm_cap, 10.0 if quick else 60.0)
    if 3 in parts:
        part3(quick, pgm_ok, mem_cap, pgm_cap, args.ks)
    print(f"total wall time {time.perf_counter() - started:.0f} s; load average at end {os.getloadavg()[0]:.2f} "
          "(other processes share the 2 cores: times are upper bounds)")


if __name__ == "__main__":
    main()
