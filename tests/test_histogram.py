"""The fifth capability: histograms over declared bins (hierarchy + GMC via the tree engine, flat baseline)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dpviz.core.noise import Noise
from dpviz.core.release import Release
from dpviz.errors import InputError
from dpviz.histogram.io import bins_from_json, canonical_bytes, load, read_data
from dpviz.histogram.model import Bins, HistogramData
from dpviz.histogram.release import release, simulate
from dpviz.histogram.strategy import hierarchy_parents, levels


def _slow_parents(m: int, b: int) -> list[int]:
    """Reference: build the levels bottom-up as lists of bin ranges, then number them top-down."""
    level = [(i, i + 1) for i in range(m)]
    tiers = [level]
    while len(level) > 1:
        level = [(level[k][0], level[min(k + b, len(level)) - 1][1]) for k in range(0, len(level), b)]
        tiers.append(level)
    tiers = tiers[::-1]
    parents, offset = [-1], 0
    for up, down in zip(tiers[:-1], tiers[1:], strict=True):
        for lo, _hi in down:
            parents.append(offset + next(j for j, (a, z) in enumerate(up) if a <= lo < z))
        offset += len(up)
    return parents


@pytest.mark.parametrize("seed", range(40))
def test_hierarchy_matches_the_slow_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, b = int(rng.integers(2, 300)), int(rng.choice([2, 4, 8, 16]))
    assert hierarchy_parents(m, b).tolist() == _slow_parents(m, b)
    assert levels(m, b) == len({0}) + int(np.ceil(np.log(m) / np.log(b) - 1e-12))


def _data(x, edges=None) -> HistogramData:
    x = np.asarray(x, dtype=np.int64)
    bins = Bins.from_edges(np.arange(x.size + 1)) if edges is None else Bins.from_edges(edges)
    return HistogramData(bins, x, "t")


@pytest.mark.parametrize("seed", range(10))
def test_leaves_are_the_bins_in_order_and_one_record_moves_one_node_per_level(seed: int) -> None:
    """Neighbour test of the sensitivity: one more record in bin j changes v by +1 on exactly one node per level."""
    from dpviz.histogram.release import _tree_data

    rng = np.random.default_rng(seed)
    m, b = int(rng.integers(2, 200)), int(rng.choice([2, 4, 16]))
    x0 = rng.integers(0, 50, m)
    j = int(rng.integers(m))
    x1 = x0.copy()
    x1[j] += 1
    t0, t1 = _tree_data(_data(x0), b), _tree_data(_data(x1), b)
    assert np.array_equal(t0.v[t0.tree.n1:], x0)  # the leaves, in leaf order, are the bins in bin order
    diff = t1.v - t0.v
    assert set(np.unique(diff)) <= {0, 1}
    h = t0.tree.h
    assert diff.sum() == h == levels(m, b)
    assert np.array_equal(np.sort(t0.tree.depth[diff == 1]), np.arange(h) + t0.tree.depth.min())


def test_release_is_a_core_release_with_parts_that_compose() -> None:
    d = load("sample:education")
    for method in ("gmc", "flat", "boosting"):
        rel = release(d, Noise.laplace(1.0, discrete=True), method=method, rng=np.random.default_rng(1))
        assert isinstance(rel, Release)
        assert rel.values.shape == (16,)
        total = sum(b.epsilon for _, b in rel.budget.parts)
        assert total == pytest.approx(1.0, rel=1e-12)
        table = rel.table()
        assert list(table["bin"]) == list(d.bins.labels)
        meta = rel.metadata()
        assert meta["capability"] == "histogram" and meta["mode"] == "release"
        assert "true" not in table.columns and "x" not in meta
    g = release(d, Noise.gaussian(0.5, discrete=True), rng=np.random.default_rng(2))
    assert sum(b.rho for _, b in g.budget.parts) == pytest.approx(0.5, rel=1e-12)


def test_release_refuses_continuous_noise_and_unknown_methods() -> None:
    d = load("sample:education")
    with pytest.raises(InputError, match="discrete"):
        release(d, Noise.laplace(1.0))
    with pytest.raises(InputError, match="method"):
        release(d, Noise.laplace(1.0, discrete=True), method="magic")


@pytest.mark.parametrize("method", ["flat", "gmc"])
def test_monte_carlo_variance_matches_the_analytic_one(method: str) -> None:
    d = _data(np.arange(24) * 3)
    rng = np.random.default_rng(7)
    noise = Noise.laplace(0.8, discrete=True)
    draws = np.stack([release(d, noise, method=method, branching=4, rng=rng).values for _ in range(3000)])
    analytic = release(d, noise, method=method, branching=4, rng=rng).variance
    emp = draws.var(axis=0, ddof=1)
    # 3,000 draws: the sample variance of a discrete Laplace is within ~8% (4σ of its sampling error)
    assert np.allclose(emp, analytic, rtol=0.12)
    assert np.allclose(draws.mean(axis=0), d.x, atol=4 * np.sqrt(analytic / 3000).max())


def test_simulate_is_seeded_and_the_hierarchy_wins_on_long_domains() -> None:
    x = np.random.default_rng(0).integers(0, 100, 1 << 14)
    d = _data(x)
    a = simulate(d, Noise.laplace(1.0), ("gmc", "flat"), np.random.default_rng(5))
    b = simulate(d, Noise.laplace(1.0), ("gmc", "flat"), np.random.default_rng(5))
    assert a.table.equals(b.table)
    # a random range of 2^14 flat bins sums ~5,461 noisy counts (variance 2 each: RMSE ~105); the hierarchy ~2 log2 m
    # nodes, made consistent by GMC (Hay et al. 2010). One draw's ranges share its noise, so average 6 draws.
    rng = np.random.default_rng(9)
    mse = sum(simulate(d, Noise.laplace(1.0), ("gmc", "flat"), rng).table.set_index("method")["rmse_ranges"] ** 2
              for _ in range(6))
    assert mse["gmc"] < 0.5 * mse["flat"]


def test_declarations(tmp_path) -> None:
    assert bins_from_json({"range": [0, 10, 2.5]}).labels == ("[0, 2.5)", "[2.5, 5)", "[5, 7.5)", "[7.5, 10)")
    assert bins_from_json({"labels": ["lo", "mid", "hi"]}).m == 3
    for bad, msg in (({"edges": [0, 1]}, "3 edges"), ({"edges": [0, 2, 1]}, "increasing"),
                     ({"labels": ["a", "a"]}, "twice"), ({"edges": [0, 1], "labels": ["a"]}, "exactly one"),
                     ([1, 2], "JSON object"), ({"range": [5, 1, 1]}, "low < high")):
        with pytest.raises(InputError, match=msg):
            bins_from_json(bad)


def test_records_outside_the_bins_change_nothing_published(tmp_path) -> None:
    """Public means declared: a record outside the declared bins is dropped, and the output does not show it."""
    bins = Bins.from_range(0, 100, 10)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("age\n23\n35\n71\n")
    b.write_text("age\n23\n35\n71\n150\n")
    da, db = read_data(a, bins), read_data(b, bins)
    assert np.array_equal(da.x, db.x)
    ra = release(da, Noise.laplace(1.0, discrete=True), rng=np.random.default_rng(3), source="s")
    rb = release(db, Noise.laplace(1.0, discrete=True), rng=np.random.default_rng(3), source="s")
    assert ra.table().equals(rb.table())
    ma, mb = ra.metadata(), rb.metadata()
    ma.pop("created_utc"), mb.pop("created_utc")
    assert ma == mb


def test_bad_records_name_the_row_and_field(tmp_path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("age\n23\nforty\n")
    with pytest.raises(InputError, match=r"row 3: field 'age': expected a number, got 'forty'"):
        read_data(p, Bins.from_range(0, 100, 10))
    c = tmp_path / "c.csv"
    c.write_text("bin,count\n1,5\n2,-1\n")
    with pytest.raises(InputError, match=r"row 3: field 'count': expected a non-negative integer"):
        read_data(c, Bins.from_labels(["1", "2"]))


def test_canonical_bytes_ignore_the_bins(tmp_path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("age\n35\n23\n")
    assert canonical_bytes(p) == b"23\n35\n"
    assert canonical_bytes("sample:education").count(b"\n") == 48842


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpviz", "histogram", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_release_is_declared_and_charged(tmp_path) -> None:
    import os

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    rec = tmp_path / "rec.csv"
    rec.write_text("age\n23\n35\n35\n71\n")
    bins = tmp_path / "bins.json"
    bins.write_text(json.dumps({"range": [0, 100, 10]}))
    led = tmp_path / "led.sqlite3"
    no_decl = _cli("release", str(rec), "--epsilon", "1", "--output", str(tmp_path / "o0.csv"), "--ledger", str(led),
                   env=env)
    assert no_decl.returncode == 2 and no_decl.stderr.count("\n") == 1 and "--bins" in no_decl.stderr
    assert not led.exists()
    ok = _cli("release", str(rec), "--bins", str(bins), "--epsilon", "0.5", "--output", str(tmp_path / "o1.csv"),
              "--ledger", str(led), env=env)
    assert ok.returncode == 0, ok.stderr
    assert "ledger: charged ε = 0.5" in ok.stderr
    out = (tmp_path / "o1.csv").read_text().splitlines()
    assert out[0].startswith("bin,released") and len(out) == 11
    meta = json.loads((tmp_path / "o1.csv.meta.json").read_text())
    assert meta["structure"]["source"] == "declared" and len(meta["budget_parts"]) == 5
    opt = _cli("release", str(rec), "--structure-from-data", "--epsilon", "0.5", "--output", str(tmp_path / "o2.csv"),
               "--ledger", str(led), env=env)
    assert opt.returncode == 0, opt.stderr
    assert "structure read from the data: not private" in opt.stdout
    assert "structure read from the data: not private" in (tmp_path / "o2.csv").read_text()
    show = subprocess.run([sys.executable, "-m", "dpviz", "ledger", "show", "--ledger", str(led)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert show.returncode == 0 and "1" in show.stdout  # the two releases of the same records: one dataset, ε = 1


def test_the_page_claim_holds_the_hierarchy_wins_on_the_bike_hours_ranges() -> None:
    """The Histogram page says: on the 1,000-bin bike-hours sample with fan-out 4, the hierarchy (GMC) beats flat
    counts on random ranges (while flat wins on the 16 education bins)."""
    d = load("sample:bike-hours")
    assert d.bins.m == 1000 and d.total == 17379
    rng = np.random.default_rng(11)
    mse = sum(simulate(d, Noise.laplace(1.0), ("gmc", "flat"), rng, branching=4, q=2000).table.set_index("method")
              ["rmse_ranges"] ** 2 for _ in range(8))
    assert mse["gmc"] < 0.8 * mse["flat"]


def test_is_counts_file_reads_the_header_of_csv_gzip_and_parquet(tmp_path) -> None:
    """The ledger's records rule asks only the header: bin,count (any order, spaces, a BOM) is counts; anything
    else is records — in a CSV, a gzip CSV and a Parquet file alike; an oversize file is refused, not read."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpviz.histogram.io import MAX_BYTES, is_counts_file

    cases = {"c.csv": ("\ufeffcount , bin\n3,a\n", True), "r.csv": ("age,bin_edges\n3,4\n", False),
             "one.csv": ("bin\n", False)}
    for name, (text, want) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert is_counts_file(tmp_path / name) is want, name
        (tmp_path / (name + ".gz")).write_bytes(gzip.compress(text.encode()))
        assert is_counts_file(tmp_path / (name + ".gz")) is want, name + ".gz"
    pq.write_table(pa.table({"bin": ["a"], "count": [3]}), tmp_path / "c.parquet")
    pq.write_table(pa.table({"age": [3]}), tmp_path / "r.parquet")
    assert is_counts_file(tmp_path / "c.parquet") and not is_counts_file(tmp_path / "r.parquet")
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    with pytest.raises(InputError, match="above the size cap"):
        is_counts_file(big)
