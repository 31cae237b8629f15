"""Records → counts (issue 21): :func:`dpviz.core.records.count_records` in-process (streaming batches) and on
Dask equal an independent pandas reference on random files; a contribution bound keeps a person's first K
records; the tree and stream CLIs count records, say the unit of privacy, charge sensitivity × K, and a
seeded simulation is byte-identical with and without Dask."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpviz.core import records
from dpviz.core.records import count_records, per_record_noise, person_metadata
from dpviz.errors import InputError


def _people(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "region": rng.choice(["N", "S", "E", "W"], n),
        "state": rng.integers(0, 12, n),
        "flag": rng.choice([True, False], n),
        "pid": rng.integers(0, max(2, n // 4), n),
        "ts": pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 86_400 * 9, n), unit="s"),
    })


def _dataset(df: pd.DataFrame, path, parts: int):
    path.mkdir()
    bounds = np.linspace(0, len(df), parts + 1).astype(int)
    for i in range(parts):
        pq.write_table(pa.Table.from_pandas(df.iloc[bounds[i]:bounds[i + 1]], preserve_index=False),
                       path / f"part-{i:02d}.parquet")
    return path


def _reference(df: pd.DataFrame, by: list[str], k: int | None = None) -> pd.Series:
    """The slow reference: pandas, keys as text, a person's first k rows kept (cumcount)."""
    if k is not None:
        df = df[df.groupby("pid").cumcount() < k]
    keyed = pd.DataFrame({c: df[c].map(lambda v: str(v).lower() if isinstance(v, (bool, np.bool_)) else str(v))
                          for c in by})
    return keyed.groupby(by).size().sort_index()


def _as_series(g: records.GroupCounts) -> pd.Series:
    idx = pd.MultiIndex.from_arrays([g.keys[c].to_pylist() for c in g.by], names=list(g.by))
    return pd.Series(g.counts, index=idx).sort_index()


@pytest.mark.parametrize("seed", range(6))
def test_in_process_equals_pandas_reference(tmp_path, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    df = _people(rng, int(rng.integers(1, 400)))
    src = _dataset(df, tmp_path / "ds", int(rng.integers(1, 4)))
    monkeypatch.setattr(records, "MERGE_ROWS", 5)  # merge partial counts often: the streaming path is exercised
    by = [["region"], ["region", "state"], ["state", "flag", "region"]][seed % 3]
    k = None if seed % 2 else int(rng.integers(1, 4))
    got = count_records(src, by, person="pid" if k else None, max_contributions=k, max_bytes=10**8)
    ref = _reference(df, by, k)
    assert np.array_equal(_as_series(got).to_numpy(), ref.to_numpy())
    assert list(_as_series(got).index) == [i if isinstance(i, tuple) else (i,) for i in ref.index]
    df.to_csv(tmp_path / "r.csv", index=False)  # the same records as a CSV: the streaming CSV reader
    csv = count_records(tmp_path / "r.csv", by, person="pid" if k else None, max_contributions=k, max_bytes=10**8)
    assert np.array_equal(csv.counts, got.counts)


def test_dask_equals_in_process_and_reference(tmp_path):
    rng = np.random.default_rng(7)
    df = _people(rng, 1000)
    src = _dataset(df, tmp_path / "ds", 3)
    for by, k in ((["region", "state"], None), (["region"], 2)):
        kw = dict(person="pid", max_contributions=k) if k else {}
        here = count_records(src, by, max_bytes=10**8, **kw)
        there = count_records(src, by, max_bytes=10**8, dask="synchronous", **kw)
        assert np.array_equal(here.counts, there.counts)
        assert all(here.keys[c].equals(there.keys[c]) for c in by)
        assert np.array_equal(here.counts, _reference(df, by, k).to_numpy())
    day = count_records(src, ["ts"], bucket=("ts", 86_400), max_bytes=10**8, dask="synchronous")
    ref = df["ts"].dt.floor("D").value_counts().sort_index()
    assert np.array_equal(day.counts, ref.to_numpy())
    assert day.keys["ts"].to_pylist() == [int(t.timestamp()) for t in ref.index]
    here = count_records(src, ["ts"], bucket=("ts", 86_400), max_bytes=10**8)
    assert here.keys["ts"].type == pa.int64() and here.keys["ts"].equals(day.keys["ts"])


def test_dask_reduction_tree_over_many_partitions_equals_reference(tmp_path):
    """19 partitions: the partial counts are merged in a tree of depth 2 (fan-in 8), some partitions lacking
    groups that others have; the result equals the in-process count and the pandas reference."""
    rng = np.random.default_rng(11)
    df = _people(rng, 700)
    src = _dataset(df, tmp_path / "ds", 19)
    for by in (["state", "region"], ["flag"]):
        there = count_records(src, by, max_bytes=10**8, dask="synchronous")
        here = count_records(src, by, max_bytes=10**8)
        assert np.array_equal(there.counts, _reference(df, by).to_numpy())
        assert np.array_equal(here.counts, there.counts) and all(here.keys[c].equals(there.keys[c]) for c in by)


def test_contribution_bound_keeps_first_k_in_file_order(tmp_path):
    df = pd.DataFrame({"pid": [1, 1, 2, 1, 2, 1], "region": ["a", "b", "a", "c", "b", "a"]})
    df.to_csv(tmp_path / "r.csv", index=False)
    got = count_records(tmp_path / "r.csv", ["region"], person="pid", max_contributions=2, max_bytes=10**6)
    assert dict(zip(got.keys["region"].to_pylist(), got.counts.tolist())) == {"a": 2, "b": 2}
    rng = np.random.default_rng(13)
    people = _people(rng, 3000)
    ref = _reference(people, ["region"], 2).to_numpy()
    for pid in (people["pid"].map(lambda x: f"p{x}"), people["pid"].map(lambda x: f"p{x}").astype("category")):
        src = tmp_path / f"p{len(list(tmp_path.iterdir()))}.parquet"  # text and dictionary-encoded person ids
        pq.write_table(pa.Table.from_pandas(people.assign(pid=pid), preserve_index=False), src, row_group_size=700)
        assert np.array_equal(count_records(src, ["region"], person="pid", max_contributions=2,
                                            max_bytes=10**8).counts, ref)


def test_bad_record_options_are_one_line(tmp_path):
    pq.write_table(pa.table({"a": ["x", "y"], "pid": ["", "1"]}), tmp_path / "r.parquet")
    f = tmp_path / "r.parquet"
    with pytest.raises(InputError, match="go together"):
        count_records(f, ["a"], max_contributions=2, max_bytes=10**6)
    with pytest.raises(InputError, match="empty person id"):
        count_records(f, ["a"], person="pid", max_contributions=1, max_bytes=10**6)
    with pytest.raises(InputError, match="no column 'zz'"):
        count_records(f, ["zz"], max_bytes=10**6)
    with pytest.raises(InputError, match="more than 1 groups"):
        count_records(f, ["a"], max_bytes=10**6, max_groups=1)
    (tmp_path / "r.csv").write_text("a\nx\n")
    with pytest.raises(InputError, match="Dask .* counts a Parquet"):
        count_records(tmp_path / "r.csv", ["a"], max_bytes=10**6, dask="synchronous")
    with pytest.raises(InputError, match="--bucket: expected day, hour"):
        records.parse_bucket("week")
    with pytest.raises(InputError, match="not a bundled sample"):
        count_records("sample:county", ["a"], max_bytes=10**6)
    (tmp_path / "bad.parquet").write_bytes(b"PAR1garbage")
    with pytest.raises(InputError, match="not a readable Parquet"):
        count_records(tmp_path / "bad.parquet", ["a"], max_bytes=10**6)
    (tmp_path / "gap.csv").write_text("a,b\nx,\ny,z\n")
    from dpviz.tree.io import records_tree

    with pytest.raises(InputError, match="no value in level column 'b'"):
        records_tree(tmp_path / "gap.csv", "a,b")
    big = tmp_path / "big.csv.gz"
    import gzip

    big.write_bytes(gzip.compress(b"a\n" + b"x\n" * 100_000))  # a small gzip that decompresses past the cap
    with pytest.raises(InputError, match="decompresses to more than 10,000 bytes"):
        count_records(big, ["a"], max_bytes=10_000)


def test_per_record_noise_realises_sensitivity_times_k():
    from dpviz.core.noise import Noise

    lap, gau = Noise.laplace(1.0, discrete=True), Noise.from_params("gaussian", epsilon=1.0, delta=1e-6)
    for noise in (lap, gau):
        rec = per_record_noise(noise, 3)
        assert rec.discrete == noise.discrete and rec.scale(2.0) == pytest.approx(noise.scale(6.0))
    assert per_record_noise(lap, None) is lap
    meta = {"sensitivity": {"norm": "L1", "value": 2.0}, "budget_parts": [{"part": "a", "epsilon": 1 / 3, "rho": None}]}
    out = person_metadata(meta, lap, person="pid", max_contributions=3, source="x")
    assert out["sensitivity"]["value"] == 6.0 and out["budget_parts"][0]["epsilon"] == pytest.approx(1.0)
    assert "pid" in out["unit_of_privacy"] and out["noise"]["budget"]["epsilon"] == 1.0


def test_tree_cli_from_records(tmp_path, capsys):
    from dpviz.cli import main

    rng = np.random.default_rng(3)
    df = _people(rng, 2000)
    src = _dataset(df, tmp_path / "ds", 2)
    args = ["tree", "simulate", str(src), "--levels", "region,state", "--epsilon", "1", "--seed", "5"]
    assert main([*args, "--output", str(tmp_path / "a.csv")]) == 0
    assert "the levels' values read from the records" in capsys.readouterr().out
    assert main([*args, "--output", str(tmp_path / "b.csv"), "--scheduler", "synchronous"]) == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()  # byte-identical with Dask
    true = pd.read_csv(tmp_path / "a.csv").set_index("node")["true"]
    assert true["(all)"] == len(df) and true["N"] == int((df.region == "N").sum())
    # a release joins the counts onto the declared hierarchy; K multiplies the sensitivity
    hier = tmp_path / "h.csv"
    hier.write_text("region,state\n" + "".join(f"{r},{s}\n" for r in "NSEW" for s in range(12)) + "X,0\n")
    out = tmp_path / "rel.csv"
    assert main(["tree", "release", str(src), "--levels", "region,state", "--hierarchy", str(hier), "--epsilon", "1",
                 "--person-column", "pid", "--max-contributions", "2", "--output", str(out),
                 "--ledger", str(tmp_path / "l.sqlite")]) == 0
    meta = json.loads((tmp_path / "rel.csv.meta.json").read_text())
    assert meta["sensitivity"]["value"] == 2 * meta["sensitivity"]["per_record"] == 6
    assert "at most 2 records" in meta["unit_of_privacy"] and meta["noise"]["budget"]["epsilon"] == 1.0
    assert sum(p["epsilon"] for p in meta["budget_parts"]) == pytest.approx(1.0)
    rel = pd.read_csv(out)
    assert "X / 0" in set(rel["node"]) and "true" not in rel.columns  # a declared empty leaf is released
    assert main(["tree", "release", str(src), "--levels", "region", "--epsilon", "1", "--output",
                 str(tmp_path / "x.csv")]) == 2  # no declared hierarchy: refused
    template = tmp_path / "template.csv"  # a declaration template from the records, then released with it
    assert main(["tree", "describe-structure", str(src), "--levels", "region,state", "--output", str(template)]) == 0
    assert main(["tree", "release", str(src), "--levels", "region,state", "--hierarchy", str(template), "--epsilon",
                 "1", "--output", str(tmp_path / "y.csv"), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    assert len(pd.read_csv(tmp_path / "y.csv")) == len(pd.read_csv(template))
    assert main(["tree", "simulate", str(src), "--epsilon", "1", "--max-contributions", "2"]) == 2


def test_stream_cli_from_events(tmp_path, capsys):
    from dpviz.cli import main

    rng = np.random.default_rng(4)
    df = _people(rng, 500)
    src = tmp_path / "e.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), src)
    out = tmp_path / "s.csv"
    assert main(["stream", "simulate", str(src), "--time-column", "ts", "--bucket", "day", "--mechanism", "fenwick",
                 "--epsilon", "1", "--seed", "2", "--output", str(out)]) == 0
    sim = pd.read_csv(out)
    assert sim["true_total"].iloc[-1] == len(df) and len(sim) == 9
    rel = ["stream", "release", str(src), "--time-column", "ts", "--bucket", "hour", "--mechanism", "fenwick",
           "--epsilon", "1", "--person-column", "pid", "--max-contributions", "3", "--output", str(tmp_path / "r.csv"),
           "--ledger", str(tmp_path / "l.sqlite")]
    assert main(rel) == 2  # the time range of a release is declared (or --structure-from-data)
    assert main([*rel, "--start", "2024-03-02", "--end", "2024-03-04T23:00"]) == 0
    meta = json.loads((tmp_path / "r.csv.meta.json").read_text())
    assert meta["sensitivity"]["value"] == 3 * meta["sensitivity"]["per_record"]
    assert meta["time_range"] == {"declared": ["2024-03-02", "2024-03-04T23:00"]}
    assert len(pd.read_csv(tmp_path / "r.csv")) == 72  # 3 declared days of hours; events outside dropped
    assert "the time range is declared" in capsys.readouterr().out


def test_events_in_a_declared_range(tmp_path):
    from dpviz.stream.io import stream_from_events

    (tmp_path / "e.csv").write_text("ts\n2024-01-01 10:00\n2024-01-03 09:00\n2024-01-03 23:59\n2024-01-09\n")
    got = stream_from_events(tmp_path / "e.csv", "ts", "day", start="2024-01-02", end="2024-01-04")
    assert got.counts.tolist() == [0, 2, 0] and str(got.timestamps[0]) == "2024-01-02T00:00:00"
    assert stream_from_events(tmp_path / "e.csv", "ts", "day").counts.tolist() == [1, 0, 2, 0, 0, 0, 0, 0, 1]
    with pytest.raises(InputError, match="--end .* is before --start"):
        stream_from_events(tmp_path / "e.csv", "ts", "day", start="2024-01-05", end="2024-01-04")


def test_marginals_dataset_from_records_equals_read_table(tmp_path):
    from dpviz.marginals.io import read_table
    from dpviz.marginals.records import dataset_from_records

    rng = np.random.default_rng(8)
    df = _people(rng, 600)
    df["state"] = df["state"].where(rng.random(len(df)) > 0.1)  # missing values: the "(missing)" category
    df.to_csv(tmp_path / "p.csv", index=False)
    src = _dataset(df, tmp_path / "ds", 2)
    for attrs, k in ((["region", "state"], None), (["state", "region"], 2)):
        got = dataset_from_records(src, attrs, bins=4, person="pid" if k else None, max_contributions=k,
                                   max_bytes=10**8, max_rows=10**6)
        kept = df if k is None else df[df.groupby("pid").cumcount() < k]
        kept[["pid", *attrs]].to_csv(tmp_path / "k.csv", index=False)
        ref = read_table(tmp_path / "k.csv", attributes=attrs, bins=4)
        assert got.domain == ref.domain and got.categories == ref.categories and got.N == ref.N
        for clique in [(0,), (0, 1), tuple(range(len(attrs)))]:
            assert np.array_equal(got.marginal(clique), ref.marginal(clique))
    with pytest.raises(InputError, match="more than 10 records to tabulate"):
        dataset_from_records(src, ["region"], max_bytes=10**8, max_rows=10)



def test_releases_by_other_levels_of_one_records_file_charge_one_dataset(tmp_path, capsys):
    from dpviz.cli import main

    one = _dataset(_people(np.random.default_rng(10), 400), tmp_path / "one", 1)
    led = tmp_path / "l.sqlite"
    for levels in ("region,state", "region"):  # other levels, the same people: one dataset in the ledger
        assert main(["tree", "release", str(one), "--levels", levels, "--epsilon", "1", "--structure-from-data",
                     "--output", str(tmp_path / f"{levels}.csv"), "--ledger", str(led)]) == 0
    assert "spent ε = 2 " in capsys.readouterr().err


def test_a_stream_counted_from_events_is_its_records_file_in_the_ledger(tmp_path):
    from dpviz.ledger.identity import identify, records_identity
    from dpviz.stream.io import stream_from_events

    src = tmp_path / "ev.csv"
    src.write_text("ts\n2024-01-01T01:00:00\n2024-01-01T05:00:00\n2024-01-02T03:00:00\n")
    data = stream_from_events(str(src), "ts", "day")
    assert identify("stream", str(src), data) == records_identity(src)


@pytest.mark.parametrize("labelled", [False, True])
def test_graph_from_edge_records_equals_read_edges(tmp_path, labelled):
    from dpviz.graph.io import canonical_bytes, edges_from_records, read_edges

    rng = np.random.default_rng(11 + labelled)
    u, v = rng.integers(1, 40, 300), rng.integers(1, 40, 300)  # repeats, loops, both directions
    ids = (lambda a: [f"v{x}" for x in a]) if labelled else (lambda a: a)
    df = pd.DataFrame({"src": ids(u), "dst": ids(v)})
    df.to_csv(tmp_path / "e.csv", index=False)
    ref = read_edges(tmp_path / "e.csv", header=True)
    src = _dataset(df, tmp_path / "ds", 2)
    here = edges_from_records(src)
    there = edges_from_records(src, dask="synchronous")
    assert canonical_bytes("x", here) == canonical_bytes("x", ref) == canonical_bytes("x", there)
    assert here.n_nodes == ref.n_nodes and len(here.edges) == len(ref.edges)
    assert set(here.notices) == set(ref.notices)


def test_marginals_cli_from_records(tmp_path, capsys):
    from dpviz.cli import main

    df = _people(np.random.default_rng(12), 500)
    src = _dataset(df, tmp_path / "ds", 2)
    out = tmp_path / "m.json"
    assert main(["marginals", "release", str(src), "--attributes", "region,flag", "--workload", "1", "--rho", "0.5",
                 "--mechanism", "rp", "--method", "mle", "--structure-from-data", "--person-column", "pid",
                 "--max-contributions", "2", "--output", str(out), "--ledger", str(tmp_path / "l.sqlite")]) == 0
    meta = json.loads((tmp_path / "m.json.meta.json").read_text())
    assert meta["sensitivity"]["value"] == 2 * meta["sensitivity"]["per_record"]
    assert sum(p["rho"] for p in meta["budget_parts"]) == pytest.approx(0.5)
    assert "at most 2 records" in meta["unit_of_privacy"]


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_monte_carlo_variance_with_contribution_bound(family):
    """Monte Carlo: the noise a record-level strategy draws with per_record_noise(noise, K) has the variance of
    ``noise`` at sensitivity K·Δ (discrete samplers, 8,000 draws, 5%)."""
    from dpviz.core.noise import Noise

    noise = Noise.from_params(family, epsilon=1.0, delta=None if family == "laplace" else 1e-6, discrete=True)
    rec = per_record_noise(noise, 3)
    draws = rec.draw(rec.scale(2.0), 8000, np.random.default_rng(0)).astype(float)
    assert draws.var() == pytest.approx(noise.variance(6.0), rel=0.05)
