#!/usr/bin/env python3
"""Fuzz every loader with 10⁵ generated inputs each and count what escapes, by exception type (issue 12).

The contract: only :class:`dpviz.errors.InputError` may escape a loader. Loaders, by their public names:

=============  ====================================================================================
tree-csv       ``dpviz.tree.io.load_tree_file(bytes)`` on CSV-shaped input (levels, node/parent, parent array)
tree-json      ``dpviz.tree.io.load_tree_file(bytes)`` on JSON-shaped input (records, columns)
stream-csv     ``dpviz.stream.io.read_stream_csv(bytes)``
marginals-csv  ``dpviz.marginals.io.read_table(bytes)``
workload       ``dpviz.marginals.io.parse_workload(bytes, domain)``
meas-json      ``dpviz.marginals.estimators.reconstruct(dpviz.marginals.io.read_measurements(bytes))``
graph-edges    ``dpviz.graph.io.read_edges(bytes)``
=============  ====================================================================================

Inputs are valid seeds (the bundled samples' first lines and small hand-written files) changed by 1-4 random
mutations: hostile tokens inserted (byte-order marks, NUL bytes, stray quotes and separators, CR line ends,
huge, negative and non-finite numbers, 2³² and 20-digit ids, bracket runs up to 10⁵ deep), slices deleted,
duplicated or swapped, lines spliced from other seeds, truncation, gzip; JSON seeds also get structural
mutations (a leaf replaced by a hostile value); 5 % are random bytes. Each call has a time limit (SIGALRM):
a call that runs past it counts as ``Timeout``. Deterministic for a given ``--seed``.

Usage::

    .venv/bin/python bench/fuzz.py                       # 10^5 inputs per loader (several minutes)
    .venv/bin/python bench/fuzz.py --n 2000 --loaders graph-edges,workload

Prints one row per loader (inputs, loaded, InputError, anything else by type, the slowest call, inputs per
second) and writes ``bench/out/fuzz/summary.json`` plus the first 3 offending inputs of each type
(``bench/out/fuzz/LOADER-TYPE-K.bin``). Exit code 1 if anything but InputError escaped.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpviz.core.assets import asset  # noqa: E402
from dpviz.errors import InputError  # noqa: E402

OUT = ROOT / "bench" / "out" / "fuzz"
BOM = "\ufeff".encode()
TOKENS = [b"\0", BOM, BOM + BOM, b"\xff\xfe", b'"', b'""', b",", b",,", b";", b"\t", b" ", b"\r", b"\n", b"\r\n",
          b"\n\n", b"#", b"%", b"-1", b"0", b"-0", b"1e308", b"1e400", b"-1e400", b"nan", b"NaN", b"inf",
          b"Infinity", b"null", b"true", b"4294967296", b"9223372036854775808", b"99999999999999999999",
          b"9" * 5000, b"0.5", b"1,2,3,4,5", b"[", b"]", b"{", b"}", b"[" * 100, b"[" * 100_000, b"{\"a\":" * 2000,
          b"\\", b"\xc3", b"\xe9", b"\x85", "\u2028".encode(), b"\x1c", b"\xa0", b"a\0", b"\0\0\0\0"]


# ----------------------------------------------------------------------------------------------- seeds


def _head(name: str, lines: int) -> bytes:
    data = asset(name).read_bytes()
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    return b"".join(data.splitlines(keepends=True)[:lines])


def seeds() -> dict[str, list[bytes]]:
    county = _head("us_county_population_2019.csv", 25)
    tree_records = [{"node": "root", "parent": None}, {"node": "a", "parent": "root", "count": 3},
                    {"node": "b", "parent": "root", "count": 4}, {"node": "c", "parent": "a", "count": 1}]
    meas = {"domain": {"a": 2, "b": 3},
            "measurements": [{"attributes": ["a"], "values": [4, 6], "sigma": 1.0},
                             {"attributes": ["a", "b"], "values": [1, 1, 2, 2, 2, 2], "sigma": 2.0},
                             {"attributes": [], "values": [10], "sigma": 0.5}],
            "workload": [["a", "b"], ["b"]]}
    return {
        "tree-csv": [county, b"region,state,count\nA,a1,3\nA,a2,4\nB,b1,5\n",
                     b"node,parent,count\nroot,,\na,root,3\nb,root,4\nc,a,1\n", b"parent,count\n-1,\n0,3\n0,4\n1,2\n",
                     b"node,parent,count\n0,,\n1,0,\n2,0,4\n3,1,1\n4,1,2\n"],  # integer ids: the typed read
        "tree-json": [json.dumps(tree_records).encode(),
                      json.dumps({"region": ["A", "A", "B"], "state": ["a1", "a2", "b1"], "count": [3, 4, 5]}).encode(),
                      json.dumps([{"region": "A", "state": "a1", "count": 3}, {"region": "B", "state": "b", "count": 1}]).encode()],
        "stream-csv": [_head("flights_daily_2001.csv", 25), b"count\n1\n2\n0\n5\n",
                       b"timestamp,count\n2020-01-01 00:00,3\n2020-01-01 01:00,0\n2020-01-01 02:00,7\n"],
        "marginals-csv": [_head("titanic_passengers.csv.gz", 30), b"a,b,c\nx,1,2.5\ny,2,3.5\nx,NA,7\n",
                          b"age;sex\n17;m\n25;f\n70;f\n"],
        "workload": [b"1", b"2", b'[["class", "sex"], ["survived"]]', b"class,sex\n# c\nage_group\n", b"[[0, 1], [2]]"],
        "meas-json": [json.dumps(meas).encode(), json.dumps({**meas, "workload": [["a"]]}).encode()],
        "graph-edges": [_head("graphs/karate.csv.gz", 30), b"u,v\n0,1\n1,2\n2,0\n", b"# c\nalice bob\nbob carol 2.5\n",
                        b"source\ttarget\n1\t2\n2\t3\n"],
    }


# ----------------------------------------------------------------------------------------------- loaders


def loaders() -> dict[str, Callable[[bytes], object]]:
    from dpviz.graph.io import read_edges
    from dpviz.marginals.io import parse_workload, read_measurements, read_table
    from dpviz.marginals.model import Domain
    from dpviz.marginals.estimators import reconstruct
    from dpviz.stream.io import read_stream_csv
    from dpviz.tree.io import load_tree_file

    titanic = Domain(("class", "sex", "age_group", "survived"), (3, 2, 6, 2))
    return {
        "tree-csv": load_tree_file,
        "tree-json": load_tree_file,
        "stream-csv": read_stream_csv,
        "marginals-csv": read_table,
        "workload": lambda raw: parse_workload(raw, titanic),
        "meas-json": lambda raw: reconstruct(read_measurements(raw), "mle"),
        "graph-edges": read_edges,
    }


# ----------------------------------------------------------------------------------------------- mutations

_HOSTILE_JSON = [None, True, -1, 0, 1e308, -1e308, 2**64, "", "\0", "\ufeff", [], {}, [[[[[]]]]], "a" * 1000,
                 float("nan"), float("inf")]


def _json_mutation(rng: random.Random, data: bytes) -> bytes:
    """Replace one leaf (or container) of a JSON seed by a hostile value; re-dump allowing NaN/Infinity."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return data
    parents, stack = [], [obj]
    while stack:
        node = stack.pop()
        for key in (range(len(node)) if isinstance(node, list) else node if isinstance(node, dict) else ()):
            parents.append((node, key))
            stack.append(node[key])
    if parents:
        node, key = rng.choice(parents)
        node[key] = rng.choice(_HOSTILE_JSON)
    return json.dumps(obj, allow_nan=True).encode()


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    n = len(data)
    kind = rng.randrange(11)
    i, j = sorted((rng.randrange(n + 1), rng.randrange(n + 1)))
    if kind <= 2:
        return data[:i] + rng.choice(TOKENS) + data[i:]
    if kind == 3:
        return data[:i] + data[j:]
    if kind == 4:
        return data[:j] + data[i:j] + data[j:]
    if kind == 5 and n:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    if kind == 6:
        return data[:i]
    if kind == 7:
        lines = data.split(b"\n")
        other = rng.choice(pool).split(b"\n")
        lines[rng.randrange(len(lines))] = rng.choice(other)
        if rng.random() < 0.5:
            rng.shuffle(lines)
        return b"\n".join(lines)
    if kind == 8:
        return data.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n", b"\n\r"]))
    if kind == 9:
        return BOM * rng.randrange(1, 4) + data
    return _json_mutation(rng, data)


def generate(rng: random.Random, pool: list[bytes]) -> bytes:
    if rng.random() < 0.05:
        return rng.randbytes(rng.randrange(1, 300))
    data = rng.choice(pool)
    for _ in range(rng.randrange(1, 5)):
        data = mutate(rng, data, pool)
    if rng.random() < 0.05:
        data = gzip.compress(data, mtime=0)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data) + 1)]
    return data


# ----------------------------------------------------------------------------------------------- run


class Timeout(Exception):
    """A loader call ran past --timeout seconds."""


def _alarm(signum, frame):
    raise Timeout


def fuzz(name: str, load: Callable[[bytes], object], pool: list[bytes], n: int, seed: int, timeout: float) -> dict:
    rng = random.Random(f"{seed}:{name}")
    counts: Counter[str] = Counter()
    saved: Counter[str] = Counter()
    examples: dict[str, str] = {}
    slowest, t_start = 0.0, time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    for _ in range(n):
        data = generate(rng, pool)
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            load(data)
            outcome = "loaded"
        except InputError:
            outcome = "InputError"
        except Timeout:
            outcome = "Timeout"
        except Exception as exc:  # noqa: BLE001 - counting what escapes is the point
            outcome = type(exc).__name__
            examples.setdefault(outcome, f"{exc!s}"[:200])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        slowest = max(slowest, time.perf_counter() - t0)
        counts[outcome] += 1
        if outcome not in ("loaded", "InputError") and saved[outcome] < 3:
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / f"{name}-{outcome}-{saved[outcome]}.bin").write_bytes(data)
            saved[outcome] += 1
    seconds = time.perf_counter() - t_start
    return {"loader": name, "inputs": n, "counts": dict(counts), "examples": examples, "slowest_s": slowest,
            "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="inputs per loader (default 100,000)")
    ap.add_argument("--loaders", default=None, help="comma-separated subset (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per call before it counts as Timeout")
    args = ap.parse_args(argv)
    pools, loads = seeds(), loaders()
    names = args.loaders.split(",") if args.loaders else list(loads)
    unknown = set(names) - set(loads)
    if unknown:
        ap.error(f"unknown loader(s) {', '.join(sorted(unknown))}; choose from {', '.join(loads)}")
    rows = []
    print(f"fuzz: {args.n:,} inputs per loader, seed {args.seed}, {args.timeout:g} s per call; only InputError "
          "may escape")
    print(f"{'loader':<14} {'inputs':>8} {'loaded':>8} {'InputError':>10}  {'other (type: count)':<34} "
          f"{'slowest':>8} {'inputs/s':>9}")
    for name in names:
        r = fuzz(name, loads[name], pools[name], args.n, args.seed, args.timeout)
        rows.append(r)
        other = {k: v for k, v in r["counts"].items() if k not in ("loaded", "InputError")}
        text = ", ".join(f"{k}: {v}" for k, v in sorted(other.items())) or "none"
        print(f"{name:<14} {r['inputs']:>8,} {r['counts'].get('loaded', 0):>8,} {r['counts'].get('InputError', 0):>10,}"
              f"  {text:<34} {r['slowest_s']:>7.3f}s {r['inputs'] / r['seconds']:>9,.0f}", flush=True)
        for k, msg in r["examples"].items():
            print(f"    {k}: {msg}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    bad = sum(v for r in rows for k, v in r["counts"].items() if k not in ("loaded", "InputError"))
    print(f"total: {sum(r['inputs'] for r in rows):,} inputs, {bad:,} escaped as something other than InputError "
          f"(inputs saved in {OUT.relative_to(ROOT)}/)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
