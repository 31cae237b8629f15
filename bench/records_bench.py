"""Records → counts at scale (issue 21): dpviz's group-by counting against pyarrow's and DuckDB's own, same run.

A synthetic person file (``--rows``, default 10^7; the issue's 10^8 is ``--rows 100000000``) is generated as a
Parquet dataset of 8 columns (person id, 4 geography levels, 3 more attributes) in ``--dir``. Then, each in a
fresh subprocess (so that its peak memory, ``resource.getrusage(...).ru_maxrss``, is its own):

* ``tree``: the 4-level tree from records, :func:`dpviz.core.records.count_records` by region, division,
  state, county (in-process, streaming batches) → ``records_tree`` + a GMC release (``tree.release``);
* ``tree-count``: the count alone (dpviz), ``pyarrow``: ``dataset.to_table(columns).group_by(...).aggregate``
  of the same columns, ``duckdb``: ``SELECT ..., count(*) ... GROUP BY`` on the Parquet files (if installed:
  ``pip install duckdb``, a bench-only extra, never a dependency of dpviz);
* ``marginals``: all 2-way marginals of 6 columns — dpviz counts the 6-way contingency once
  (``count_records``) and sums it down to the 15 pairs; pyarrow and DuckDB run the 15 group-bys;
* ``dask``: the tree count on a 2-worker ``distributed.LocalCluster`` (``--workers``): the cluster's start, a
  first count (which also warms the workers: their imports) and a warm count, reported apart (peak memory:
  the client process only; the workers' is not measured).

Point it at a real cluster with ``--scheduler tcp://HOST:8786`` (the workers must read ``--dir`` at the same
path, e.g. a shared file system or object store URL mounted there); the CLI takes the same flag:
``python -m dpviz tree release DIR --levels region,division,state,county --scheduler tcp://HOST:8786 ...``.

Usage: ``python bench/records_bench.py [--rows N] [--dir PATH] [--workers 2] [--scheduler ADDR] [--skip-dask]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)

LEVELS = ["region", "division", "state", "county"]
ATTRS = ["region", "age", "sex", "race", "education", "income"]
ROWS_PER_FILE = 2_000_000


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """A synthetic person dataset: files of ``ROWS_PER_FILE`` rows, 8 columns (geography nested: a county
    belongs to one state, a state to one division, a division to one region)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    county_state = rng.integers(0, 51, 3_143)
    state_division = np.sort(rng.integers(0, 9, 51))
    division_region = np.array([0, 0, 1, 1, 2, 2, 2, 3, 3])
    names = {"region": np.array(["Northeast", "Midwest", "South", "West"]),
             "division": np.array([f"D{i}" for i in range(9)]), "state": np.array([f"S{i:02d}" for i in range(51)]),
             "county": np.array([f"C{i:04d}" for i in range(3_143)])}
    done = 0
    for k in itertools.count():
        n = min(ROWS_PER_FILE, rows - done)
        if n <= 0:
            break
        county = rng.zipf(1.3, n) % 3_143
        state = county_state[county]
        division = state_division[state]
        table = pa.table({
            "pid": pa.array(rng.integers(0, max(1, rows // 2), n)),
            "region": pa.DictionaryArray.from_arrays(pa.array(division_region[division].astype(np.int32)),
                                                     pa.array(names["region"])),
            "division": pa.DictionaryArray.from_arrays(pa.array(division.astype(np.int32)), pa.array(names["division"])),
            "state": pa.DictionaryArray.from_arrays(pa.array(state.astype(np.int32)), pa.array(names["state"])),
            "county": pa.DictionaryArray.from_arrays(pa.array(county.astype(np.int32)), pa.array(names["county"])),
            "age": pa.array(rng.integers(0, 10, n).astype(np.int8)),
            "sex": pa.array(rng.integers(0, 2, n).astype(np.int8)),
            "race": pa.array(rng.integers(0, 6, n).astype(np.int8)),
            "education": pa.array(rng.integers(0, 8, n).astype(np.int8)),
            "income": pa.array(rng.integers(0, 10, n).astype(np.int8)),
        })
        pq.write_table(table, path / f"part-{k:04d}.parquet", row_group_size=1 << 20)
        done += n


# ---- phases (each in its own process) ----------------------------------------------------------------------
def _files(path: Path) -> list[str]:
    return sorted(str(p) for p in path.glob("*.parquet"))


def phase(name: str, path: Path, workers: int, scheduler: str | None) -> dict:
    """Run one phase (its imports are done before the clock starts, in :func:`main`)."""
    big = 1 << 62
    if name == "tree":
        from dpviz.core.noise import Noise
        from dpviz.tree.io import records_tree
        from dpviz.tree.release import release

        data = records_tree(path, LEVELS, max_bytes=big)
        rel = release(data, Noise.laplace(1.0, discrete=True), method="gmc")
        return {"nodes": int(rel.tree.n)}
    if name == "tree-count":
        from dpviz.core.records import count_records

        return {"groups": len(count_records(path, LEVELS, max_bytes=big))}
    if name == "dask":
        from dpviz.core.records import count_records

        if scheduler:
            return {"groups": len(count_records(path, LEVELS, max_bytes=big, dask=scheduler))}
        from distributed import LocalCluster

        start = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as c:
            up = time.perf_counter() - start
            times = []
            for _ in range(2):  # the first count also warms the workers (their imports)
                start = time.perf_counter()
                groups = len(count_records(path, LEVELS, max_bytes=big, dask=c.scheduler_address))
                times.append(round(time.perf_counter() - start, 2))
            return {"groups": groups, "cluster_start_s": round(up, 2), "first_count_s": times[0],
                    "warm_count_s": times[1]}
    if name == "pyarrow-tree":
        import pyarrow.dataset as ds

        t = ds.dataset(_files(path), format="parquet").to_table(columns=LEVELS)
        return {"groups": t.group_by(LEVELS).aggregate([([], "count_all")]).num_rows}
    if name == "duckdb-tree":
        import duckdb

        cols = ", ".join(LEVELS)
        q = f"SELECT {cols}, count(*) FROM read_parquet({_files(path)!r}) GROUP BY {cols}"
        return {"groups": len(duckdb.sql(q).fetchall())}
    pairs = list(itertools.combinations(ATTRS, 2))
    if name == "marginals":
        from dpviz.core.records import count_records

        full = count_records(path, ATTRS, max_bytes=big).table().to_pandas()
        cells = sum(len(full.groupby(list(p), observed=True)["__count"].sum()) for p in pairs)
        return {"marginals": len(pairs), "cells": cells}
    if name == "pyarrow-marginals":
        import pyarrow.dataset as ds

        t = ds.dataset(_files(path), format="parquet").to_table(columns=ATTRS)
        return {"cells": sum(t.group_by(list(p)).aggregate([([], "count_all")]).num_rows for p in pairs)}
    if name == "duckdb-marginals":
        import duckdb

        src = f"read_parquet({_files(path)!r})"
        return {"cells": sum(len(duckdb.sql(f"SELECT {a}, {b}, count(*) FROM {src} GROUP BY {a}, {b}").fetchall())
                             for a, b in pairs)}
    raise SystemExit(f"unknown phase {name}")


def run_phase(name: str, path: Path, workers: int, scheduler: str | None) -> dict | None:
    cmd = [sys.executable, __file__, "--phase", name, "--dir", str(path), "--workers", str(workers)]
    if scheduler:
        cmd += ["--scheduler", scheduler]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    if done.returncode != 0:
        print(f"{name}: failed ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--dir", type=Path, default=Path("/tmp/dpviz-records-bench"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--scheduler", default=None)
    p.add_argument("--skip-dask", action="store_true")
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        try:  # imports are not timed: the same for every phase (DuckDB: a bench-only extra, may be absent)
            import duckdb  # noqa: F401
        except ImportError:
            if args.phase.startswith("duckdb"):
                raise SystemExit("duckdb is not installed (pip install -r requirements-bench.txt)") from None
        import pandas  # noqa: F401
        import pyarrow.dataset  # noqa: F401

        import dpviz.core.records  # noqa: F401
        import dpviz.tree.io  # noqa: F401
        import dpviz.tree.release  # noqa: F401
        if args.phase == "dask":
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        start = time.perf_counter()
        out = phase(args.phase, args.dir, args.workers, args.scheduler)
        out["seconds"] = time.perf_counter() - start
        out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out))
        return
    marker = args.dir / f".rows-{args.rows}"
    if not marker.exists():
        start = time.perf_counter()
        for old in args.dir.glob("*.parquet"):
            old.unlink()
        generate(args.dir, args.rows)
        marker.touch()
        print(f"generated {args.rows:,} rows in {time.perf_counter() - start:.1f} s "
              f"({sum(f.stat().st_size for f in args.dir.glob('*.parquet')) / 1e6:.0f} MB Parquet) in {args.dir}")
    names = ["tree", "tree-count", "pyarrow-tree", "duckdb-tree", "marginals", "pyarrow-marginals", "duckdb-marginals"]
    if not args.skip_dask:
        names.append("dask")
    res = {n: run_phase(n, args.dir, args.workers, args.scheduler) for n in names}
    rows = []
    for n, r in res.items():
        if r is None:
            continue
        ref = res.get("duckdb-marginals" if "marginals" in n else "duckdb-tree") or {}
        ratio = f"{r['seconds'] / ref['seconds']:.2f}x" if ref.get("seconds") else "—"
        rows.append([n, f"{r['seconds']:.2f}", f"{r['peak_mb']:.0f}", ratio,
                     ", ".join(f"{k}={v}" for k, v in r.items() if k not in ("seconds", "peak_mb"))])
    print(f"records bench: {args.rows:,} rows, {os.cpu_count()} cores")
    common.table(["phase", "seconds", "peak MB", "vs DuckDB", "result"], rows)


if __name__ == "__main__":
    main()
