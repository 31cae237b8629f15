"""Graph speed (issue 9 "Speed"): ``drf-dp`` end to end on the bundled graphs against the goals, the other
methods and ``metrics.evaluate`` for context, and the ratio against a dense count-summary implementation
(the paper's C matrix) at |V| ≤ 10^4.

Run: ``python bench/graph_bench.py`` (full, about 100 s on 2 cores) or ``--quick`` (< 1 min: karate,
netscience, hep-th in part 1, karate, netscience, power in part 4, one run each). Prints its parts, all
measured in this run (``--part 3``: the edge-list reader against pyarrow's parse of the same bytes); there are
no timing assertions in the unit tests. ε = 1 everywhere.

1. ``drf-dp`` end to end, ``dpviz.graph.release.release(graph, Noise.laplace(1.0), method="drf-dp", rng=...)``, on the bundled
   graphs (``dpviz.graph.samples.load_graph_sample``), with the simulation path (``rng =
   np.random.default_rng(0)``: continuous Laplace) and the release path (``rng=None``: discrete Laplace and
   exponential-mechanism draws from the OS CSPRNG). Wall time is the best of 3 runs (full mode; 1 in
   ``--quick``); the release path's ratio to the simulation path is printed beside it. Each graph runs in
   its own fresh subprocess (``--worker``); loading the graph and importing the method's module are not
   timed (one warm-up call on karate first). Peak memory is the worker's **VmHWM** (the kernel's
   high-water mark of its resident set, read from ``/proc/self/status``): for ``drf-dp`` (simulation) it
   is the first thing the fresh process runs, so the figure is imports + graph + the run; the high-water
   mark is then reset (``echo 5 > /proc/self/clear_refs``) before every later case, whose peak is
   therefore "resident set at its start + its own growth" (an upper bound of its own need). The numpy part
   alone is measured once more with ``tracemalloc`` (numpy reports its buffers to it), untimed.
   Goals (issue 9): hep-th ≤ 2 s, email-Enron ≤ 15 s, peak ≤ 2 GB (checked on every graph); the time
   checked is the slower of the two paths. Printed pass/FAIL per goal.
2. The other methods (``drf`` as published, ``kdh``, ``quadtree``, ``random``, ``degree``; seeded) on the
   same graphs in the same worker, with their ratio to that worker's ``drf-dp`` time (the reference run).
3. ``dpviz.graph.metrics.evaluate(true, released, n, rng)`` on the ``drf-dp`` output: cold (the first call
   in the process, including the cached Louvain partition of the true graph) and warm (best of 3).
4. Sparse versus dense count summary at |V| ≤ 10^4 (karate, netscience, polblogs, power, hep-th; each
   graph and variant in its own subprocess). The paper (§3, Def. 5) reads every region count from the
   count summary matrix C, C[i, j] = Σ_{m≤i, l≤j} A_ml, a dense |V|×|V| array, as C[l,n] − C[l,m−1] −
   C[k−1,n] + C[k−1,m−1]. The dense implementation here builds C of A = the upper triangle in the drf-dp
   order, as int32 (|V|+1)² with a zero border (the smallest exact dtype; int64, numpy's default cumsum
   type, would double it), in place (the ones scattered, then a cumsum along each axis), and answers by
   those four lookups. The rectangles are every count the drf-dp decomposition reads, rebuilt from the
   Partition it returned (seed 0): each node's count and, for each split node, every row-split candidate
   part [r0, p) × [c0, c1) and every column-split candidate part of both halves (the [1/4, 3/4] bands,
   thinned as drf-dp thins them: variant "default" = drf-dp's default ``max_candidates``, variant "all" =
   ``max_candidates=None``, every integer of the band; ``--quick`` runs "default" only). These are the
   queries drf-dp answers with ``regions.count_below``: the bench wraps ``dpviz.graph.kdtree.count_below``
   during the run (timing it and recording its answers) and asserts that the rebuilt candidate counts are
   exactly those answers (as multisets), that the dense counts equal ``regions.count_upper``'s on every
   rectangle, and that the leaves' counts sum to |E|. Printed: (a) like for like, the counting step:
   ``count_upper`` (index build + queries) vs dense (C build + lookups), and queries vs lookups alone;
   (b) drf-dp's own counting time (``count_below`` inside the run); (c) the whole drf-dp (relabelling,
   EM, noise, placement included) vs only the dense build + counts — labelled as such: the dense side
   does strictly less work. Times are best of 3; memory is the ``tracemalloc`` peak of one separate
   untimed run of each. email-Enron (36,692 vertices) is not run dense: C alone would be 5.0 GiB.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import ratio, table  # noqa: E402 - bench/ is on sys.path when run as a script

EPSILON = 1.0
SEED = 0
GIB = 2**30
GB = 10**9
GOALS_TIME = {"hep-th": 2.0, "email-enron": 15.0}  # seconds, issue 9
GOAL_MEM = 2 * GB  # "≤ 2 GB"; checked against the peak resident set of the drf-dp worker
PAPER = "paper (Gong et al. 2020, §4): 196 s for 10,876 nodes (their machine and code)"
ALL_GRAPHS = ("karate", "netscience", "polblogs", "power", "hep-th", "email-enron")
DENSE_MAX_NODES = 10**4
OTHER_METHODS = ("drf", "kdh", "quadtree", "random", "degree")


# ============================================================================================ formatting


def fmt_bytes(b: float | None) -> str:
    if b is None or not math.isfinite(b):
        return "—"
    if b >= GIB:
        return f"{b / GIB:.2f} GiB"
    if b >= 2**20:
        return f"{b / 2**20:.0f} MiB"
    return f"{b / 2**10:.0f} KiB"


def fmt_s(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "—"
    if s < 0.01:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3g} s" if s < 100 else f"{s:.0f} s"






# ============================================================================================ process memory


def _status(field: str) -> float:
    """``VmHWM`` / ``VmRSS`` of this process, bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return float(line.split()[1]) * 1024
    return math.nan


def reset_hwm() -> bool:
    """Reset this process's VmHWM to its current resident set (Linux ≥ 4.0); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def numpy_peak(fn) -> float:
    """tracemalloc peak (bytes) of one call of ``fn`` (numpy buffers included), above what was live before."""
    tracemalloc.start()
    try:
        fn()
        return float(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def timed(fn, repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls and the last result."""
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


# ============================================================================================ workers


def worker_methods(job: dict) -> dict:
    """Part 1–3 for one graph, in a fresh process: drf-dp first (clean VmHWM), then the rest."""
    from dpviz.core.noise import Noise
    from dpviz.core.registry import resolve
    from dpviz.graph.release import release
    from dpviz.graph.strategy import METHODS
    from dpviz.graph.samples import load_graph_sample
    from dpviz.graph.metrics import evaluate

    name, repeat, methods = job["graph"], job["repeat"], job["methods"]
    g = load_graph_sample(name)
    karate = load_graph_sample("karate")
    for m in ["drf-dp", *methods]:  # import each module and run it once on a tiny graph: not timed
        resolve(METHODS[m])
        release(karate, Noise.laplace(EPSILON), method=m, rng=np.random.default_rng(1))
    release(karate, Noise.laplace(EPSILON, discrete=True), method="drf-dp", rng=None)
    out: dict = {"graph": name, "n": g.n_nodes, "m": int(g.edges.shape[0]), "can_reset": reset_hwm()}
    out["rss_before"] = _status("VmRSS")

    def run(method: str, rng_seed: int | None):
        return lambda: release(g, Noise.laplace(EPSILON, discrete=rng_seed is None), method=method,
                                 rng=None if rng_seed is None else np.random.default_rng(rng_seed))

    # the reference: drf-dp, simulation path
    t_sim, rel = timed(run("drf-dp", SEED), repeat)
    out["drfdp"] = {"sim": t_sim, "hwm_sim": _status("VmHWM"), "h_max": rel.info["h_max"],
                    "regions": len(rel.partition), "leaves": int(rel.info["n_leaves"]),
                    "edges_out": int(rel.edges.shape[0])}
    reset_hwm()
    t_rel, rel_r = timed(run("drf-dp", None), repeat)
    out["drfdp"].update({"release": t_rel, "hwm_release": _status("VmHWM"),
                         "edges_out_release": int(rel_r.edges.shape[0]),
                         "tracemalloc": numpy_peak(run("drf-dp", SEED))})
    del rel_r
    out["other"] = {}
    for m in methods:
        reset_hwm()
        start = _status("VmRSS")
        t, r = timed(run(m, SEED), repeat)
        out["other"][m] = {"time": t, "hwm": _status("VmHWM"), "rss_start": start, "edges_out": int(r.edges.shape[0])}
        del r
    reset_hwm()
    true = np.asarray(g.edges)
    t0 = time.perf_counter()
    ev = evaluate(true, rel.edges, g.n_nodes, np.random.default_rng(SEED))
    cold = time.perf_counter() - t0
    warm, _ = timed(lambda: evaluate(true, rel.edges, g.n_nodes, np.random.default_rng(SEED)), 3)
    out["evaluate"] = {"cold": cold, "warm": warm, "hwm": _status("VmHWM"), "degree_kl": ev["degree_kl"],
                       "edges_released": ev["n_edges_released"]}
    return out


def decomposition_queries(part, max_candidates: int | None) -> tuple[np.ndarray, ...]:
    """Every rectangle count the drf-dp decomposition reads, rebuilt from its Partition.

    Returns (r0, r1, c0, c1, kind) with kind 0 = a node's own count, 1 = a row-split candidate part
    [r0, p) × [c0, c1), 2 = a column-split candidate part [h0, h1) × [c0, q) of either half. The children
    of a split node are 4 consecutive ids (dpviz.graph.kdtree.decompose): (top, left), (top, right),
    (bottom, left), (bottom, right); so p = r1 of child 0, q_top = c1 of child 0, q_bottom = c1 of child 2.
    Bands as in kdtree._choose_split: every p in [s0 + ⌈s/4⌉, s0 + ⌊3s/4⌋], thinned to ``max_candidates``
    evenly spaced ones when that is not None (drf-dp's default, ``drf.DEFAULT_MAX_CANDIDATES``).
    """
    from dpviz.graph.regions import ragged_arange

    r0, r1, c0, c1, parent = (np.asarray(a, dtype=np.int64) for a in (part.r0, part.r1, part.c0, part.c1, part.parent))
    kids = np.flatnonzero(parent >= 0)
    split, first = np.unique(parent[kids], return_index=True)
    ch0 = kids[first]
    for k in (1, 2, 3):
        assert (parent[ch0 + k] == split).all(), "children are not 4 consecutive ids"
    p, q_top, q_bot = r1[ch0], c1[ch0], c1[ch0 + 2]
    assert (r0[ch0 + 2] == p).all() and (c0[ch0 + 1] == q_top).all() and (c0[ch0 + 3] == q_bot).all()

    def band(start, end):
        s = end - start
        lo = start + (s + 3) // 4
        n_band = start + (3 * s) // 4 - lo + 1
        if max_candidates is None:
            return ragged_arange(lo, n_band)
        n_c = np.minimum(n_band, max_candidates)  # the evenly spaced public grid of kdtree._choose_split
        t, grp = ragged_arange(np.zeros(lo.size, dtype=np.int64), n_c)
        step = (t * np.maximum(n_band - 1, 0)[grp]) // np.maximum(n_c - 1, 1)[grp]
        return lo[grp] + step, grp

    rows = [(r0, r1, c0, c1, np.zeros(r0.size, dtype=np.int64))]
    cand, grp = band(r0[split], r1[split])  # row candidates of every split node
    sp = split[grp]
    rows.append((r0[sp], cand, c0[sp], c1[sp], np.ones(cand.size, dtype=np.int64)))
    for h0, h1 in ((r0[split], p), (p, r1[split])):  # column candidates of each half
        cand, grp = band(c0[split], c1[split])
        sp = split[grp]
        rows.append((h0[grp], h1[grp], c0[sp], cand, np.full(cand.size, 2, dtype=np.int64)))
    return tuple(np.concatenate([r[i] for r in rows]) for i in range(5))


def dense_build(pu: np.ndarray, pv: np.ndarray, n: int) -> np.ndarray:
    """The paper's count summary matrix (Def. 5) of the upper-triangle adjacency A, with a zero border.

    Built in place, the cheapest exact way found (2x faster than a separate uint8 A + cumsum into C): the
    ones of A scattered into an int32 (|V|+1)² array, then one in-place cumulative sum along each axis.
    """
    C = np.zeros((n + 1, n + 1), dtype=np.int32)
    C[pu + 1, pv + 1] = 1
    np.cumsum(C, axis=0, out=C)
    np.cumsum(C, axis=1, out=C)
    return C


def dense_count(C: np.ndarray, r0, r1, c0, c1) -> np.ndarray:
    """Region counts by the paper's formula C[l,n] − C[l,m−1] − C[k−1,n] + C[k−1,m−1] (half-open here)."""
    return (C[r1, c1].astype(np.int64) - C[r0, c1] - C[r1, c0] + C[r0, c0])


def worker_dense(job: dict) -> dict:
    """Part 4 for one graph: sparse (count_upper, drf-dp) vs dense (C) on the decomposition's rectangles."""
    import dpviz.graph.drf as drf_mod
    import dpviz.graph.kdtree as kdtree_mod
    from dpviz.core.noise import Noise
    from dpviz.graph.release import release
    from dpviz.graph.samples import load_graph_sample
    from dpviz.graph.regions import EdgeIndex, count_upper

    name, repeat = job["graph"], job["repeat"]
    g = load_graph_sample(name)
    n, m = g.n_nodes, int(g.edges.shape[0])
    karate = load_graph_sample("karate")
    release(karate, Noise.laplace(EPSILON), method="drf-dp", rng=np.random.default_rng(1))  # warm-up
    if job["all_candidates"]:
        options, max_cand = {"max_candidates": None}, None
    else:
        options, max_cand = {}, getattr(drf_mod, "DEFAULT_MAX_CANDIDATES", None)

    def drf_run():
        return release(g, Noise.laplace(EPSILON), method="drf-dp", rng=np.random.default_rng(SEED), **options)

    # drf-dp, with its count_below calls timed and their answers recorded (a bench-only wrapper)
    real_count_below = kdtree_mod.count_below
    acc: dict = {"time": 0.0, "answers": []}

    def timed_count_below(*args):
        t = time.perf_counter()
        res = real_count_below(*args)
        acc["time"] += time.perf_counter() - t
        acc["answers"].append(np.asarray(res))
        return res

    kdtree_mod.count_below = timed_count_below
    try:
        t_drf, t_cb = math.inf, math.inf
        for _ in range(repeat):  # seeded: every run is the same computation
            acc.update(time=0.0, answers=[])
            t = time.perf_counter()
            rel = drf_run()
            t_drf, t_cb = min(t_drf, time.perf_counter() - t), min(t_cb, acc["time"])
        answers = np.concatenate(acc["answers"]) if acc["answers"] else np.zeros(0, dtype=np.int64)
    finally:
        kdtree_mod.count_below = real_count_below
    mem_drf = numpy_peak(drf_run)

    position = np.empty(n, dtype=np.int64)
    position[rel.order] = np.arange(n, dtype=np.int64)
    a, b = position[g.edges[:, 0]], position[g.edges[:, 1]]
    pu, pv = np.minimum(a, b), np.maximum(a, b)
    r0, r1, c0, c1, kind = decomposition_queries(rel.partition, max_cand)
    n_cand = int((kind > 0).sum())
    assert n_cand == answers.size, f"rebuilt {n_cand} candidate queries, drf-dp's count_below answered {answers.size}"

    # sparse: count_upper (merge-sort tree build + queries), and the two halves
    t_sp, sparse = timed(lambda: count_upper(pu, pv, r0, r1, c0, c1), repeat)
    t_sp_build, idx = timed(lambda: EdgeIndex.build(pu, pv), repeat)
    t_sp_query, _ = timed(lambda: idx.count(r0, r1, c0, c1), repeat)
    mem_sp = numpy_peak(lambda: count_upper(pu, pv, r0, r1, c0, c1))
    idx = None
    # dense: C, then the four lookups
    t_dn_build, cmat = timed(lambda: dense_build(pu, pv, n), repeat)
    t_dn_query, dense = timed(lambda: dense_count(cmat, r0, r1, c0, c1), repeat)
    cmat = None
    mem_dn = numpy_peak(lambda: dense_count(dense_build(pu, pv, n), r0, r1, c0, c1))

    assert np.array_equal(dense, sparse), "dense and sparse counts differ"
    leaf = np.asarray(rel.partition.leaf, dtype=bool)
    assert int(sparse[: leaf.size][leaf].sum()) == m, "leaf counts do not sum to |E|"
    assert np.array_equal(np.sort(sparse[kind > 0]), np.sort(answers)), \
        "the rebuilt candidate counts are not the ones drf-dp's count_below returned"
    return {"graph": name, "n": n, "m": m, "nodes": int((kind == 0).sum()), "candidates": n_cand,
            "max_candidates": max_cand, "drf": t_drf, "count_below": t_cb, "mem_drf": mem_drf,
            "sp": t_sp, "sp_build": t_sp_build, "sp_query": t_sp_query, "mem_sp": mem_sp,
            "dn_build": t_dn_build, "dn_query": t_dn_query, "mem_dn": mem_dn,
            "c_bytes": (n + 1) ** 2 * 4}


def run_worker(job: dict, timeout: float) -> dict:
    """Run a job in a fresh ``python bench/graph_bench.py --worker JSON`` and return its JSON result."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    try:
        cp = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)],
                            capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if cp.returncode != 0:
        tail = (cp.stderr.strip().splitlines() or [f"exit code {cp.returncode}"])[-1]
        return {"error": tail[:200]}
    return json.loads(cp.stdout.strip().splitlines()[-1])


def worker_main(arg: str) -> None:
    job = json.loads(arg)
    out = {"methods": worker_methods, "dense": worker_dense}[job["kind"]](job)
    print(json.dumps(out))


# ============================================================================================ parts


def part_methods(graphs: list[str], repeat: int, quick: bool) -> None:
    print(f"## 1. drf-dp end to end (eps = {EPSILON}), each graph in a fresh subprocess; best of {repeat} run(s)")
    print("sim = rng=np.random.default_rng(0) (continuous Laplace); release = rng=None (discrete Laplace + EM "
          "from the OS CSPRNG).\npeak RSS = VmHWM of the worker (imports + graph + the drf-dp runs); numpy peak = "
          "tracemalloc peak of one extra (untimed) simulation run.\n" + PAPER + "\n")
    results = []
    for name in graphs:
        print(f"  {name} ...", file=sys.stderr, flush=True)
        results.append(run_worker({"kind": "methods", "graph": name, "repeat": repeat,
                                   "methods": list(OTHER_METHODS)}, timeout=1800))
    rows, goals = [], []
    for name, r in zip(graphs, results, strict=True):
        if "error" in r:
            rows.append([name, "—", "—", "FAILED: " + r["error"]] + ["—"] * 10)
            continue
        d = r["drfdp"]
        rows.append([name, f"{r['n']:,}", f"{r['m']:,}", str(d["h_max"]), f"{d['regions']:,}", f"{d['leaves']:,}",
                     f"{d['edges_out']:,}", fmt_s(d["sim"]), fmt_s(d["release"]), ratio(d["release"], d["sim"]),
                     fmt_bytes(r["rss_before"]), fmt_bytes(d["hwm_sim"]), fmt_bytes(d["hwm_release"]),
                     fmt_bytes(d["tracemalloc"])])
        slow = max(d["sim"], d["release"])
        if name in GOALS_TIME:
            goals.append([f"{name}: drf-dp <= {GOALS_TIME[name]:g} s", fmt_s(slow),
                          "pass" if slow <= GOALS_TIME[name] else "FAIL"])
        peak = max(d["hwm_sim"], d["hwm_release"])
        goals.append([f"{name}: peak <= 2 GB", f"{fmt_bytes(peak)} ({peak / GB:.3f} GB)",
                      "pass" if peak <= GOAL_MEM else "FAIL"])
    for name in GOALS_TIME:
        if name not in graphs:
            goals.append([f"{name}: drf-dp <= {GOALS_TIME[name]:g} s", "not run" + (" (--quick)" if quick else ""),
                          "—"])
    table(["graph", "|V|", "|E|", "h_max", "regions", "leaves", "edges out", "sim", "release", "release/sim",
           "RSS before", "peak RSS sim", "peak RSS release", "numpy peak"], rows)
    print("Goals (time = the slower of sim and release):")
    table(["goal", "measured", "result"], goals)

    print(f"## 2. Other methods on the same graphs (seeded, best of {repeat}; same worker as part 1)")
    print("ratio = method time / drf-dp sim time in the same process. peak RSS = VmHWM after a reset "
          "(clear_refs) just before the method: resident set at its start + its growth.\n")
    rows = []
    for name, r in zip(graphs, results, strict=True):
        if "error" in r:
            continue
        ref = r["drfdp"]["sim"]
        rows.append([name, "drf-dp (ref)", fmt_s(ref), "1x", fmt_bytes(r["drfdp"]["hwm_sim"]),
                     f"{r['drfdp']['edges_out']:,}"])
        for m, o in r["other"].items():
            rows.append([name, m, fmt_s(o["time"]), ratio(o["time"], ref),
                         fmt_bytes(o["hwm"]) + (f" (start {fmt_bytes(o['rss_start'])})" if r["can_reset"] else " (cumulative)"),
                         f"{o['edges_out']:,}"])
    table(["graph", "method", "time", "ratio", "peak RSS", "edges out"], rows)

    print("## 3. dpviz.graph.metrics.evaluate(true, drf-dp output, n, rng) (all metrics, 100 cut queries per size)")
    print("cold = the first call in the worker (includes Louvain on the true graph, then cached); warm = best "
          "of 3 later calls.\n")
    rows = []
    for name, r in zip(graphs, results, strict=True):
        if "error" in r:
            continue
        e = r["evaluate"]
        rows.append([name, fmt_s(e["cold"]), fmt_s(e["warm"]), ratio(e["cold"], r["drfdp"]["sim"]),
                     ratio(e["warm"], r["drfdp"]["sim"]), fmt_bytes(e["hwm"]), f"{e['degree_kl']:.4g}"])
    table(["graph", "cold", "warm", "cold / drf-dp", "warm / drf-dp", "peak RSS", "degree KL"], rows)


def part_dense(graphs: list[str], repeat: int, variants: tuple[bool, ...]) -> None:
    from dpviz.graph.samples import sample_info

    print(f"## 4. Sparse vs dense count summary (the paper's C matrix, Def. 5), |V| <= {DENSE_MAX_NODES:,}; "
          f"best of {repeat}")
    print("Rectangles = every count the drf-dp decomposition reads (node counts + all split-candidate parts), "
          "rebuilt from its Partition (seed 0);\nasserted: dense counts == count_upper's, the candidate counts == "
          "the ones drf-dp's count_below returned, leaves sum to |E|.\nmemory = tracemalloc peak (numpy buffers) "
          "of one untimed run. Dense: C int32 (|V|+1)^2, built in place.\ncandidates: 'default' = drf-dp's "
          "default thinning (at most DEFAULT_MAX_CANDIDATES evenly spaced per band); 'all' = max_candidates=None "
          "(every integer of the band).\n")
    done = []
    for name in graphs:
        n = int(sample_info(name)["n_nodes"])
        if n > DENSE_MAX_NODES:
            print(f"  {name}: |V| = {n:,} > {DENSE_MAX_NODES:,}: dense not run (C would need "
                  f"{fmt_bytes((n + 1) ** 2 * 4)} as int32)\n")
            continue
        for all_c in variants:
            print(f"  {name} ({'all' if all_c else 'default'} candidates) ...", file=sys.stderr, flush=True)
            r = run_worker({"kind": "dense", "graph": name, "repeat": repeat, "all_candidates": all_c}, timeout=1800)
            r["label"] = f"{name} ({'all' if all_c else 'default'})"
            done.append(r)
    ok = [r for r in done if "error" not in r]
    for r in done:
        if "error" in r:
            print(f"{r['label']}: FAILED: {r['error']}\n")
    if not ok:
        return
    mc = {r["max_candidates"] for r in ok if r["max_candidates"] is not None}
    print(f"(default thinning here: at most {', '.join(map(str, sorted(mc))) or '—'} candidates per band)\n")
    print("(a) Counting step, like for like (same rectangles, same counts):")
    rows = []
    for r in ok:
        dn = r["dn_build"] + r["dn_query"]
        rows.append([r["label"], f"{r['n']:,}", f"{r['nodes']:,}", f"{r['candidates']:,}",
                     fmt_s(r["sp"]), fmt_s(r["sp_build"]), fmt_s(r["sp_query"]),
                     fmt_s(dn), fmt_s(r["dn_build"]), fmt_s(r["dn_query"]),
                     ratio(dn, r["sp"]), ratio(r["dn_query"], r["sp_query"]),
                     fmt_bytes(r["mem_sp"]), fmt_bytes(r["mem_dn"]), ratio(r["mem_dn"], r["mem_sp"])])
    table(["graph (candidates)", "|V|", "node rects", "cand rects", "count_upper", "(index)", "(queries)", "dense",
           "(C build)", "(lookups)", "time dense/sparse", "lookups/queries", "mem sparse", "mem dense",
           "mem dense/sparse"], rows)
    print("(b) drf-dp's own counting (regions.count_below inside the run, same seed) and (c) the whole drf-dp "
          "vs ONLY the dense build + counts\n    (the dense side does no relabelling, EM, noise or placement: "
          "a ratio > 1 means the dense counting alone already costs more than all of drf-dp):")
    rows = []
    for r in ok:
        dn = r["dn_build"] + r["dn_query"]
        rows.append([r["label"], f"{r['n']:,}", fmt_s(r["drf"]), fmt_s(r["count_below"]),
                     f"{100 * r['count_below'] / r['drf']:.0f}%", ratio(dn, r["count_below"]),
                     fmt_s(dn), ratio(dn, r["drf"]), fmt_bytes(r["mem_drf"]), fmt_bytes(r["mem_dn"]),
                     ratio(r["mem_dn"], r["mem_drf"])])
    table(["graph (candidates)", "|V|", "drf-dp whole", "its count_below", "share", "dense/count_below",
           "dense build+counts", "dense / drf-dp whole", "drf-dp numpy peak", "dense numpy peak",
           "mem dense/drf-dp"], rows)


# ============================================================================================ main


def part_reader(repeat: int) -> None:
    """Part 3: the edge-list reader (``dpviz.graph.io.read_edges``) on 200,000 random edges over 50,000
    vertices, integer ids with a header and tab-separated names, against pyarrow's ``read_csv`` of the
    same bytes (best of ``repeat``; the speed formerly asserted in tests/test_graph_io.py)."""
    import io as _io

    import pyarrow.csv as pa_csv

    from dpviz.graph.io import read_edges

    e = np.random.default_rng(3).integers(0, 50_000, size=(200_000, 2))
    ints = ("u,v\n" + "\n".join(f"{a},{b}" for a, b in e.tolist())).encode()
    names = "\n".join(f"n{a}\tn{b}" for a, b in e.tolist()).encode()
    print("Part 3: read_edges on 200,000 edges (best of %d) against pyarrow read_csv of the same bytes" % repeat)
    for what, blob, opts in (("integer ids, header u,v", ints, pa_csv.ParseOptions()),
                             ("names, tab-separated", names, pa_csv.ParseOptions(delimiter="\t"))):
        ours = timed(lambda blob=blob: read_edges(blob), repeat)[0]
        ref = timed(lambda blob=blob, opts=opts: pa_csv.read_csv(
            _io.BytesIO(blob), parse_options=opts,
            read_options=pa_csv.ReadOptions(autogenerate_column_names=b"\t" in blob)), repeat)[0]
        print(f"  {what:<26} read_edges {fmt_s(ours)}  pyarrow {fmt_s(ref)}  ratio {ours / ref:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a < 1 min smoke run (small graphs, one run each)")
    ap.add_argument("--graphs", nargs="+", choices=ALL_GRAPHS, help="only these graphs")
    ap.add_argument("--part", type=int, action="append", choices=(1, 2, 3),
                    help="1 = methods + evaluate (tables 1-3), 2 = sparse vs dense (table 4), 3 = the edge reader")
    ap.add_argument("--repeat", type=int, default=None, help="runs per case (default 3, --quick 1)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker_main(args.worker)
        return
    quick = args.quick
    repeat = args.repeat or (1 if quick else 3)
    g1 = list(args.graphs or (("karate", "netscience", "hep-th") if quick else ALL_GRAPHS))
    g2 = list(args.graphs or (("karate", "netscience", "power") if quick else ALL_GRAPHS))
    parts = args.part or [1, 2, 3]
    started = time.perf_counter()
    print(f"# graph bench{' (--quick)' if quick else ''}: python {platform.python_version()}, numpy "
          f"{np.__version__}, {os.cpu_count()} cores, "
          f"{fmt_bytes(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES'))} RAM, load average at start "
          f"{os.getloadavg()[0]:.2f}\n")
    if 1 in parts:
        part_methods(g1, repeat, quick)
    if 2 in parts:
        part_dense(g2, repeat, (False,) if quick else (False, True))
    if 3 in parts:
        part_reader(repeat)
    print(f"total wall time {time.perf_counter() - started:.0f} s; load average at end {os.getloadavg()[0]:.2f} "
          "(other processes share the 2 cores: times are upper bounds)")


if __name__ == "__main__":
    main()
