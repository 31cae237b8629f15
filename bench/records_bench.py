"""Records → counts at scale (issue 21): dpviz's group-by counting against DuckDB's and pyarrow's own, same run.

A synthetic person file (``--rows``, default 10^7; the issue's 10^8 is ``--rows 100000000``) is generated as a
Parquet dataset (files of 2·10^6 rows, written one at a time: generation stays well under 1 GB) of 10 columns
(person id, 4 nested geography levels, 5 more attributes) in ``--dir`` (kept and reused by a later run with the
same ``--rows`` and ``--seed``; ``--clean`` deletes it at the end). Then each step runs in a fresh subprocess:

* ``tree``: the tree release from records by region, division, state, county — :func:`dpviz.tree.io.records_tree`
  (:func:`dpviz.core.records.count_records`, in-process, streaming batches) + a GMC release with discrete Laplace
  noise (``tree.release``); ``tree-count``: the count alone; ``tree-count-1-file``: the same count of one file
  (2·10^6 rows: memory must not grow with the rows, only with the groups);
* ``marginals``: all 15 2-way marginals of 6 columns — dpviz counts the 6-way contingency once
  (``count_records``) and sums it down to the 15 pairs;
* references, the same columns: ``duckdb-*`` (``duckdb``: a bench-only extra, ``requirements-bench.txt``):
  ``GROUP BY`` count of the 4 levels; for the marginals its fastest of three forms — 15 ``GROUP BY`` queries,
  one ``GROUP BY GROUPING SETS`` query, and the 6-way ``GROUP BY`` summed down in SQL (dpviz's plan); and
  ``pyarrow-*``: ``dataset.to_table(columns).group_by(...).aggregate(count_all)`` (all rows in memory);
* ``dask``: the same two counts (4 levels; the 6-way contingency and its 15 marginals) on a
  ``distributed.LocalCluster`` of ``--workers`` single-threaded worker processes: the cluster's start, a first
  count (which also warms the workers: their imports) and a warm count, reported apart; the counts must equal the
  in-process ones (SHA-256 of the sorted (key, count) rows).

**Time**: wall clock of the step in its process, imports done before the clock starts (the same for every step);
"CPU": user + system seconds of the step (all threads, and for ``dask`` the reaped worker processes; DuckDB and
pyarrow use both cores). **Memory** (the goal: ≤ 2 GB): the step process's ``VmHWM`` from
``/proc/self/status`` at its end (the kernel's high-water mark of its resident set, imports included; not
``ru_maxrss``, which Linux carries over from the forking parent across exec). For ``dask`` the sum of the
``VmHWM`` of the client process (it also runs the scheduler), each worker and each nanny (``Client.run``), an
upper bound of their joint peak; every step is also polled from this process every 0.1 s (``psutil``: the
resident set of the step's whole process tree), the "polled" column.

Point it at a real cluster with ``--scheduler tcp://HOST:8786`` (this machine and every worker must read ``--dir``
at the same path, e.g. a shared file system); the CLI takes the same flag:
``python -m dpviz tree simulate DIR --levels region,division,state,county --scheduler tcp://HOST:8786
--max-bytes 2000000000 --epsilon 1 --seed 1 --output sim.csv``.

Usage: ``python bench/records_bench.py [--rows N] [--seed S] [--dir PATH] [--workers 2] [--scheduler ADDR]
[--skip-dask] [--clean] [--no-record]``; the README speed table's rows (``records.*``) are recorded at
``--rows 100000000``, or marked as a quick run when ``$DPVIZ_BENCH_RESULTS`` names another results file.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import common
from common import cell_s, cell_verdict, cell_x, record

LEVELS = ["region", "division", "state", "county"]
ATTRS = ["region", "age", "sex", "race", "education", "income"]
PAIRS = list(itertools.combinations(ATTRS, 2))
ROWS_PER_FILE = 2_000_000
GOAL_RATIO, GOAL_MB, README_ROWS = 3.0, 2048.0, 100_000_000
SOURCE = "bench/records_bench.py"
BIG = 1 << 62


def generate(path: Path, rows: int, seed: int) -> None:
    """A synthetic person dataset: files of ``ROWS_PER_FILE`` rows written one at a time (geography nested: a
    county belongs to one state, a state to one division, a division to one region; counties Zipf-skewed)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    county_state = rng.integers(0, 51, 3_143)
    state_division = np.sort(rng.integers(0, 9, 51))
    division_region = np.array([0, 0, 1, 1, 2, 2, 2, 3, 3])
    names = {"region": pa.array(["Northeast", "Midwest", "South", "West"]),
             "division": pa.array([f"D{i}" for i in range(9)]), "state": pa.array([f"S{i:02d}" for i in range(51)]),
             "county": pa.array([f"C{i:04d}" for i in range(3_143)])}

    def dictionary(codes, name: str) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), names[name])

    for k, start in enumerate(range(0, rows, ROWS_PER_FILE)):
        n = min(ROWS_PER_FILE, rows - start)
        county = rng.zipf(1.3, n) % 3_143
        state = county_state[county]
        division = state_division[state]
        table = pa.table({
            "pid": pa.array(rng.integers(0, max(1, rows // 2), n)),
            "region": dictionary(division_region[division], "region"), "division": dictionary(division, "division"),
            "state": dictionary(state, "state"), "county": dictionary(county, "county"),
            **{c: pa.array(rng.integers(0, m, n).astype(np.int8))
               for c, m in (("age", 10), ("sex", 2), ("race", 6), ("education", 8), ("income", 10))},
        })
        pq.write_table(table, path / f"part-{k:04d}.parquet", row_group_size=1 << 20)


# ---- steps (each in its own process) -----------------------------------------------------------------------
def _files(path: Path) -> list[str]:
    return sorted(str(p) for p in path.glob("*.parquet"))


def _hwm_mb() -> float:
    """This process's ``VmHWM`` (peak resident set), MB."""
    with open("/proc/self/status") as f:
        return next(float(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))


def _cpu_s() -> float:
    """User + system CPU seconds of this process (all its threads) and its reaped children."""
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                          resource.RUSAGE_CHILDREN)))


def _digest(groups) -> str:
    """SHA-256 (first 16 hex digits) of a GroupCounts' sorted (key..., count) rows."""
    rows = [groups.keys[c].to_pylist() for c in groups.by] + [groups.counts.tolist()]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def _marginals(groups) -> int:
    """The 15 2-way marginals summed down from the 6-way counts; their number of cells."""
    full = groups.table().to_pandas()
    return sum(len(full.groupby(list(p), observed=True)["__count"].sum()) for p in PAIRS)


def _dask_step(path: Path, workers: int, scheduler: str | None) -> dict:
    from distributed import Client, LocalCluster

    from dpviz.core.records import count_records

    out: dict = {}
    start = time.perf_counter()
    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    address = scheduler or cluster.scheduler_address
    out["cluster_start_s"] = time.perf_counter() - start
    try:
        for name, by in (("first", LEVELS), ("warm", LEVELS), ("marginals", ATTRS)):
            start = time.perf_counter()
            groups = count_records(path, by, max_bytes=BIG, dask=address)
            cells = _marginals(groups) if by is ATTRS else None
            out[f"{name}_s"] = time.perf_counter() - start
            out[f"{'marginals' if by is ATTRS else 'tree'}_digest"] = _digest(groups)
            out.update({"cells": cells} if cells is not None else {"groups": len(groups)})
        with Client(address) as client:
            out["workers_mb"] = sum(client.run(_hwm_mb).values())
            out["nannies_mb"] = 0.0 if scheduler else sum(client.run(_hwm_mb, nanny=True).values())
    finally:
        if cluster is not None:
            cluster.close()
    out["client_mb"] = _hwm_mb()
    out["total_mb"] = out["client_mb"] + out["workers_mb"] + out["nannies_mb"]
    return out


def step(name: str, path: Path, workers: int, scheduler: str | None) -> dict:
    """Run one step (its imports are done before the clock starts, in :func:`main`)."""
    from dpviz.core.records import count_records

    if name == "tree":
        from dpviz.core.noise import Noise
        from dpviz.tree.io import records_tree
        from dpviz.tree.release import release

        rel = release(records_tree(path, LEVELS, max_bytes=BIG), Noise.laplace(1.0, discrete=True), method="gmc")
        return {"nodes": int(rel.tree.n)}
    if name in ("tree-count", "tree-count-1-file"):
        groups = count_records(path if name == "tree-count" else _files(path)[0], LEVELS, max_bytes=BIG)
        return {"groups": len(groups), "tree_digest": _digest(groups)}
    if name == "marginals":
        groups = count_records(path, ATTRS, max_bytes=BIG)
        return {"cells": _marginals(groups), "marginals_digest": _digest(groups)}
    if name == "dask":
        return _dask_step(path, workers, scheduler)
    if name.startswith("pyarrow"):
        import pyarrow.dataset as ds

        table = ds.dataset(_files(path), format="parquet").to_table(columns=LEVELS if "tree" in name else ATTRS)
        sets = [LEVELS] if "tree" in name else [list(p) for p in PAIRS]
        n = [table.group_by(s).aggregate([([], "count_all")]).num_rows for s in sets]
        return {"groups": n[0]} if "tree" in name else {"cells": sum(n)}
    import duckdb

    src = f"read_parquet({_files(path)!r})"
    if name == "duckdb-tree":
        cols = ", ".join(LEVELS)
        return {"groups": len(duckdb.sql(f"SELECT {cols}, count(*) FROM {src} GROUP BY {cols}").fetchall())}
    sets = ", ".join(f"({a}, {b})" for a, b in PAIRS)
    if name == "duckdb-marginals-15":
        return {"cells": sum(len(duckdb.sql(f"SELECT {a}, {b}, count(*) FROM {src} GROUP BY {a}, {b}").fetchall())
                             for a, b in PAIRS)}
    if name == "duckdb-marginals-sets":
        q = f"SELECT {', '.join(ATTRS)}, count(*) FROM {src} GROUP BY GROUPING SETS ({sets})"
        return {"cells": len(duckdb.sql(q).fetchall())}
    if name == "duckdb-marginals-6way":
        cols = ", ".join(ATTRS)
        q = (f"WITH full_ AS (SELECT {cols}, count(*) AS n FROM {src} GROUP BY {cols}) "
             f"SELECT {cols}, sum(n) FROM full_ GROUP BY GROUPING SETS ({sets})")
        return {"cells": len(duckdb.sql(q).fetchall())}
    raise SystemExit(f"unknown step {name}")


def _poll(pid: int, peak: list[float], done: threading.Event) -> None:
    """Peak resident set (MB) of the process ``pid`` and all its descendants, sampled every 0.1 s."""
    import psutil

    try:
        root = psutil.Process(pid)
        while not done.is_set():
            total = 0
            for p in [root, *root.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total / 2**20)
            done.wait(0.1)
    except psutil.Error:
        pass


def run_step(name: str, args: argparse.Namespace) -> dict | None:
    cmd = [sys.executable, __file__, "--step", name, "--dir", str(args.dir), "--workers", str(args.workers),
           "--rows", str(args.rows), "--seed", str(args.seed)]
    cmd += ["--scheduler", args.scheduler] if args.scheduler else []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    peak, done = [0.0], threading.Event()
    watcher = threading.Thread(target=_poll, args=(proc.pid, peak, done), daemon=True)
    watcher.start()
    stdout, stderr = proc.communicate()
    done.set()
    watcher.join()
    if proc.returncode != 0:
        print(f"{name}: failed ({stderr.strip().splitlines()[-1] if stderr.strip() else proc.returncode})")
        return None
    out = json.loads(stdout.strip().splitlines()[-1])
    out["polled_mb"] = peak[0]
    return out


def _prepare_data(args: argparse.Namespace) -> dict | None:
    """Generate the dataset unless the same rows and seed are there already; the generation's time and peak."""
    marker = args.dir / f".rows-{args.rows}-seed-{args.seed}"
    if marker.exists() and _files(args.dir):
        print(f"reusing {args.rows:,} rows (seed {args.seed}) in {args.dir}")
        return None
    if args.dir.exists():
        for old in [*args.dir.glob("*.parquet"), *args.dir.glob(".rows-*")]:
            old.unlink()
    gen = run_step("generate", args) or {}
    marker.touch()
    size = sum(Path(f).stat().st_size for f in _files(args.dir)) / 1e6
    print(f"generated {args.rows:,} rows in {gen.get('seconds', float('nan')):.1f} s, peak {gen.get('peak_mb', 0):.0f} "
          f"MB ({size:.0f} MB Parquet, {len(_files(args.dir))} files) in {args.dir}")
    return gen


def _verdicts(res: dict[str, dict | None], rows: int) -> tuple[list[list[str]], dict]:
    """The summary rows (goal, dpviz, reference, ratio, peak, verdict) and the values to record."""
    def sec(n: str) -> float | None:
        return (res.get(n) or {}).get("seconds")

    duck_m = min(((sec(n), n) for n in ("duckdb-marginals-15", "duckdb-marginals-sets", "duckdb-marginals-6way")
                  if sec(n)), default=(None, "—"))
    dask = res.get("dask") or {}
    same = {"tree": (res.get("tree-count") or {}).get("tree_digest"),
            "marginals": (res.get("marginals") or {}).get("marginals_digest")}
    checks = {
        "tree": (sec("tree"), sec("duckdb-tree"), "duckdb-tree", (res.get("tree") or {}).get("peak_mb")),
        "marginals": (sec("marginals"), duck_m[0], duck_m[1], (res.get("marginals") or {}).get("peak_mb")),
        "dask tree (warm)": (dask.get("warm_s"), sec("duckdb-tree"), "duckdb-tree", dask.get("total_mb")),
        "dask marginals": (dask.get("marginals_s"), duck_m[0], duck_m[1], dask.get("total_mb")),
    }
    table, values = [], {"rows": rows}
    for what, (t, ref, ref_name, mb) in checks.items():
        if t is None or ref is None or mb is None:
            table.append([what, "—", "—", "—", "—", "not run"])
            continue
        ok = t / ref <= GOAL_RATIO and mb <= GOAL_MB
        equal = ""
        if what.startswith("dask"):
            key = "tree" if "tree" in what else "marginals"
            ok = ok and dask.get(f"{key}_digest") == same[key]
            equal = ", counts = in-process" if dask.get(f"{key}_digest") == same[key] else ", COUNTS DIFFER"
        table.append([what, f"{t:.2f}", f"{ref:.2f} ({ref_name})", f"{t / ref:.2f}x", f"{mb:.0f}",
                      ("pass" if ok else "NOT MET") + equal])
        values[what] = {"s": t, "ref_s": ref, "ref": ref_name, "ratio": t / ref, "peak_mb": mb, "ok": ok}
    every, one = ((res.get(n) or {}).get("peak_mb") for n in ("tree-count", "tree-count-1-file"))
    if every and one:  # memory bounded by the groups: all the rows need no more than one file's 2·10^6
        table.append(["memory: all rows / 1 file", "—", "—", f"{every / one:.2f}x", f"{every:.0f} / {one:.0f}",
                      "pass (≤ 1.25x)" if every <= 1.25 * one else "NOT MET (≤ 1.25x)"])
    return table, values


def _record(res: dict[str, dict | None], values: dict, workers: int, load: tuple[float, float]) -> None:
    """The README rows ``records.tree``, ``records.marginals``, ``records.dask`` (wall and CPU seconds: on a
    shared box the CPU seconds compare the work when the wall clock also measures the others' load)."""
    quick = values["rows"] < README_ROWS
    n = f"{values['rows'] / 1e8:g}·10⁸" if values["rows"] >= 1e8 else f"{values['rows']:,}"
    busy = f"load average {load[0]:.1f}→{load[1]:.1f} on {os.cpu_count()} cores"

    def cpu(name: str) -> str:
        return f"CPU {cell_s((res.get(name) or {}).get('cpu_s') or float('nan'))}"

    for key, what in (("records.tree", "tree"), ("records.marginals", "marginals")):
        v, r = values.get(what), res.get(what) or {}
        if not isinstance(v, dict):
            continue
        one = (res.get("tree-count-1-file") or {}).get("peak_mb")
        extra = f"; one 2·10⁶-row file: {one:.0f} MB" if key == "records.tree" and one else ""
        pa_ = res.get("pyarrow-" + what) or {}
        record(key, f"{n} rows: {cell_s(v['s'])} wall, {cpu(what)}, {v['peak_mb']:.0f} MB peak{extra} ({busy})",
               f"DuckDB ({v['ref']}) {cell_s(v['ref_s'])} wall, {cpu(v['ref'])}: **{cell_x(v['ratio'])}**; "
               f"pyarrow {cell_s(pa_.get('seconds') or float('nan'))}, {pa_.get('peak_mb', float('nan')):.0f} MB",
               f"≤ {GOAL_RATIO:g}× DuckDB, ≤ 2 GB: {cell_verdict(v['ok'])}", quick=quick, source=SOURCE,
               values={"seconds": v["s"], "ref_s": v["ref_s"], "ratio": v["ratio"], "peak_mb": v["peak_mb"],
                       "cpu_s": r.get("cpu_s", 0.0), "ref_cpu_s": (res.get(v["ref"]) or {}).get("cpu_s", 0.0),
                       "load": load[1]})
    d, t, m = res.get("dask") or {}, values.get("dask tree (warm)"), values.get("dask marginals")
    if isinstance(t, dict) and isinstance(m, dict):
        record("records.dask", f"{n} rows, {workers} workers: tree count {cell_s(d['first_s'])} first, "
               f"{cell_s(d['warm_s'])} warm, marginals {cell_s(d['marginals_s'])} (cluster start "
               f"{cell_s(d['cluster_start_s'])}); {d['total_mb']:.0f} MB peak (client + workers + nannies; "
               f"workers {d['workers_mb']:.0f} MB); counts = in-process ({busy})",
               f"DuckDB {cell_s(t['ref_s'])} / {cell_s(m['ref_s'])}: **{cell_x(t['ratio'])}** (warm) / "
               f"**{cell_x(m['ratio'])}**", f"≤ {GOAL_RATIO:g}×, ≤ 2 GB, counts = in-process: "
               f"{cell_verdict(t['ok'] and m['ok'])}", quick=quick, source=SOURCE,
               values={"first_s": d["first_s"], "warm_s": d["warm_s"], "marginals_s": d["marginals_s"],
                       "cluster_start_s": d["cluster_start_s"], "peak_mb": d["total_mb"], "load": load[1]})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", type=Path, default=Path("/tmp/dpviz-records-bench"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--scheduler", default=None)
    p.add_argument("--skip-dask", action="store_true")
    p.add_argument("--clean", action="store_true", help="delete the generated dataset at the end")
    p.add_argument("--no-record", action="store_true", help="do not write README rows (bench/out/results.json)")
    p.add_argument("--step", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.step == "generate":
        start = time.perf_counter()
        generate(args.dir, args.rows, args.seed)
        print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": _hwm_mb()}))
        return
    if args.step:
        import pandas  # noqa: F401 - imports are not timed: the same for every step
        import pyarrow.dataset  # noqa: F401

        import dpviz.core.records  # noqa: F401
        import dpviz.tree.io  # noqa: F401
        import dpviz.tree.release  # noqa: F401
        if args.step.startswith("duckdb"):
            import duckdb  # noqa: F401 - a bench-only extra
        if args.step == "dask":
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        start, cpu = time.perf_counter(), _cpu_s()
        out = step(args.step, args.dir, args.workers, args.scheduler)
        out["seconds"], out["cpu_s"] = time.perf_counter() - start, _cpu_s() - cpu
        out["peak_mb"] = _hwm_mb()
        print(json.dumps(out))
        return
    _prepare_data(args)
    names = ["tree", "tree-count", "tree-count-1-file", "marginals", "duckdb-tree", "duckdb-marginals-15",
             "duckdb-marginals-sets", "duckdb-marginals-6way", "pyarrow-tree", "pyarrow-marginals"]
    try:
        import duckdb  # noqa: F401
    except ImportError:
        print("duckdb is not installed (pip install -r requirements-bench.txt): its steps are left out")
        names = [n for n in names if not n.startswith("duckdb")]
    names += [] if args.skip_dask else ["dask"]
    load = os.getloadavg()[0]
    res = {n: run_step(n, args) for n in names}
    loads = (load, os.getloadavg()[0])
    print(f"records bench: {args.rows:,} rows, {os.cpu_count()} cores, load average before {loads[0]:.2f} / after "
          f"{loads[1]:.2f}")
    rows = []
    for n, r in res.items():
        if r is not None:
            rows.append([n, f"{r['seconds']:.2f}", f"{r['cpu_s']:.1f}", f"{r.get('total_mb', r['peak_mb']):.0f}",
                         f"{r['polled_mb']:.0f}", ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                                                            for k, v in r.items() if k not in (
                                                                "seconds", "peak_mb", "cpu_s", "polled_mb"))])
    common.table(["step", "seconds", "CPU s", "peak MB", "polled MB", "result"], rows)
    summary, values = _verdicts(res, args.rows)
    common.table(["goal", "dpviz s", "DuckDB s", "ratio", "peak MB", "verdict (≤ 3×, ≤ 2048 MB)"], summary)
    if not args.no_record and not args.scheduler and (args.rows >= README_ROWS or os.environ.get(common.RESULTS_ENV)):
        _record(res, values, args.workers, loads)
        print(f"recorded records.* in {common.results_path()}")
    if args.clean:
        shutil.rmtree(args.dir, ignore_errors=True)
        print(f"deleted {args.dir}")


if __name__ == "__main__":
    main()
