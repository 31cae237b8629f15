"""Tree input validation (clear errors naming the line) and the ``python -m dpviz tree`` CLI:
``simulate`` (reproduces the pre-core numbers: golden files), ``release`` (safe to publish) and the
structure views."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.core.accounting import zcdp_rho
from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.core.tables import meta_path
from dpviz.errors import InputError
from dpviz.tree.formats import tree_from_parent_array
from dpviz.tree.io import load as load_source, load_tree_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

GOOD = b"node,parent,count\nroot,,\na,root,\nb,root,5\na1,a,3\na2,a,4\n"


def test_node_parent_table_any_order_and_checked_internal_counts():
    data = load_tree_file(b"node,parent,count\na2,a,4\nroot,,12\na1,a,3\nb,root,5\na,root,7\n")
    t = data.tree
    assert (t.n, t.m, t.h) == (5, 3, 3)
    assert list(data.node_ids[: t.n1]) == ["root", "a"]
    assert list(t.leaf_labels) == ["a2", "a1", "b"]  # input order of the leaves
    np.testing.assert_allclose(data.x, [4, 3, 5])
    assert data.v[0] == 12


def test_json_records_and_columns_and_parent_array():
    recs = b'[{"node":"r","parent":null},{"node":"x","parent":"r","count":2},{"node":"y","parent":"r","count":3}]'
    assert load_tree_file(recs).v[0] == 5
    cols = b'{"parent": [-1, 0, 0, 1, 1], "count": [null, null, 1, 2, 3]}'
    d = load_tree_file(cols)
    assert d.tree.n == 5 and d.v[0] == 6
    d2 = tree_from_parent_array([-1, 0, 0], [None, 1, 1])
    assert d2.v[0] == 2


def test_level_table_builds_paths_under_a_root():
    d = load_tree_file(b"region,state,pop\nN,A,1\nN,B,2\nS,C,3\n")
    assert d.tree.n == 1 + 2 + 3 and d.tree.h == 3
    assert "N / B" in set(d.node_ids)
    assert d.v[0] == 6


BAD = {
    "empty": (b"", "empty"),
    "header only": (b"node,parent,count\n", "no data rows"),
    "no root": (b"node,parent,count\na,b,1\nb,a,1\n", "no root"),
    "several roots": (b"node,parent,count\na,,1\nb,,1\n", "several roots"),
    "cycle": (b"node,parent,count\nr,,\na,r,1\nb,c,1\nc,b,1\n", "cycle"),
    "self loop": (b"node,parent,count\nr,,\na,a,1\n", "line 3"),
    "duplicate": (b"node,parent,count\nr,,\na,r,1\na,r,2\n", "line 4: duplicate node id 'a'"),
    "unknown parent": (b"node,parent,count\nr,,\na,zz,1\n", "line 3 (node 'a'): parent 'zz'"),
    "non-numeric": (b"node,parent,count\nr,,\na,r,abc\n", "line 3 (node 'a'): count 'abc' is not a finite number"),
    "negative": (b"node,parent,count\nr,,\na,r,-2\n", "count -2 is negative"),
    "nan": (b"node,parent,count\nr,,\na,r,nan\n", "not a finite number"),
    "leaf without count": (b"node,parent,count\nr,,\na,r,\nb,r,1\n", "line 3 (node 'a'): leaf has no count"),
    "internal mismatch": (b"node,parent,count\nr,,10\na,r,1\nb,r,2\n", "line 2 (node 'r'): count 10 disagrees"),
    "level empty cell": (b"region,state,pop\nN,,1\n", "line 2: empty value in level column 'state'"),
    "level bad count": (b"region,state,pop\nN,A,x\n", "line 2 column 'pop': count 'x'"),
    "bad json": (b"[{\"node\": 1,", "not valid JSON"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_gives_a_clear_error(name):
    raw, expected = BAD[name]
    with pytest.raises(InputError) as exc:
        load_tree_file(raw, name="upload.csv")
    assert expected in str(exc.value), str(exc.value)


def test_gzip_tree_files_are_read_under_the_same_caps(tmp_path):
    """A gzip-compressed tree file (sniffed from its magic number, dpviz.core.reader) loads like the plain
    one; its decompressed size is capped by --max-bytes (a bomb stops early) and its rows by --max-nodes."""
    import gzip

    plain = load_tree_file(GOOD)
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress(GOOD))
    for src in (gz, gzip.compress(GOOD)):
        data = load_tree_file(src)
        assert data.tree.n == plain.tree.n and np.array_equal(data.x, plain.x)
    big = b"node,parent,count\nroot,,\n" + b"".join(b"n%d,root,1\n" % i for i in range(5000))
    assert load_tree_file(gzip.compress(big), max_bytes=len(big)).tree.n == 5001  # at the cap exactly
    gz.write_bytes(gzip.compress(big))
    with pytest.raises(InputError, match=rf"^t.csv.gz decompresses to more than {len(big) - 1:,} bytes, above the size "
                                         r"cap; the limit is .* \(MAX_BYTES\); raise it with the CLI flag --max-bytes N"):
        load_tree_file(gz, max_bytes=len(big) - 1)
    with pytest.raises(InputError, match=r"more than 3 data rows \(counted while reading\)"):
        load_tree_file(gz, max_nodes=3)
    with pytest.raises(InputError, match="truncated gzip"):
        load_tree_file(gzip.compress(GOOD)[:-6])


def test_node_limit():
    with pytest.raises(InputError, match="more than the limit of 3"):
        load_tree_file(GOOD, max_nodes=3)


def run(*args: str) -> subprocess.CompletedProcess:
    """``python -m dpviz ARGS`` in a real process (exit code, stdout, stderr)."""
    return subprocess.run([sys.executable, "-m", "dpviz", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def call_main(capsys, *args: str) -> subprocess.CompletedProcess:
    """``python -m dpviz ARGS`` in process (fast): exit code, stdout and stderr as a CompletedProcess."""
    capsys.readouterr()
    try:
        rc = main(list(args))
    except SystemExit as exc:  # argparse errors
        rc = exc.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, out, err)


@pytest.fixture
def cli(capsys, monkeypatch):
    """``python -m dpviz ARGS`` in process, from the repository root (:func:`call_main`)."""
    monkeypatch.chdir(ROOT)
    return lambda *args: call_main(capsys, *args)


def test_bundled_data_is_sample_county_only():
    assert load_source("sample:county").tree.n == 3207
    for bad in ("county", "sample:countee"):
        with pytest.raises(InputError, match="sample:county"):
            load_source(bad)


# ---- simulate: today's numbers, labelled as a simulation ---------------------------------------------------
def _table_rows(text: str) -> dict[str, list[str]]:
    """The printed metrics table: method -> its cells (header row under 'method')."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["method"])
    rows = {}
    for line in lines[start:]:
        cells = line.split()
        if not cells or cells[0] == "wrote":
            break
        rows[cells[0]] = cells[1:]
    return rows


def _compare_printed(new: str, golden: str) -> None:
    """Same printed metrics (6 significant digits) except seconds, and bias (float noise ~1e-9) numerically."""
    a, b = _table_rows(new), _table_rows(golden)
    assert a.keys() == b.keys()
    header = a["method"]
    assert header == b["method"]
    for m in a:
        if m == "method":
            continue
        for col, x, y in zip(header, a[m], b[m], strict=True):
            if col == "seconds":
                continue
            if col == "bias" and float(y) < 1e-6:
                assert float(x) < 1e-6, (m, col, x, y)
            else:
                assert x == y, (m, col, x, y)


def test_simulate_reproduces_the_county_golden_metrics(capsys):
    assert main(["tree", "simulate", "sample:county", "--epsilon", "1", "--seed", "7", "--method", "all"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == SIMULATION_NOTICE
    assert "seed=7" in out
    _compare_printed(out, (DATA / "tree_golden_county_all.txt").read_text())
    # full precision, through the library (same seed: unit draw first, then the ranges)
    from dpviz.core.noise import Noise
    from dpviz.tree.estimators import METHODS
    from dpviz.tree.release import simulate

    sim = simulate(load_source("sample:county"), Noise.laplace(1.0), list(METHODS), np.random.default_rng(7))
    gold = pd.read_csv(DATA / "tree_golden_county_all_metrics.csv").set_index("method")
    got = sim.table.set_index("method")
    for col in ("rmse_NQ", "rmse_RQ", "negatives", "total_sq_error", "expected_sq_error"):
        np.testing.assert_allclose(got[col].to_numpy(float), gold[col].to_numpy(float), rtol=1e-9, err_msg=col)
    np.testing.assert_allclose(got["bias"], gold["bias"], atol=1e-6)


@pytest.mark.parametrize("args, golden", [
    (["--epsilon", "0.5", "--seed", "7", "--method", "gmc"], "tree_golden_small_gmc"),
    (["--epsilon", "0.5", "--seed", "11", "--split", "geometric", "--method", "all"], "tree_golden_small_all_geometric"),
])
def test_simulate_reproduces_the_small_tree_golden_files(tmp_path, capsys, args, golden):
    out = tmp_path / "sim.csv"
    assert main(["tree", "simulate", str(DATA / "tree_golden_small_input.csv"), *args, "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == SIMULATION_NOTICE and SIMULATION_NOTICE in text.splitlines()[-1]
    _compare_printed(text, (DATA / f"{golden}.txt").read_text())
    got = pd.read_csv(out, keep_default_na=False)
    want = pd.read_csv(DATA / f"{golden}.csv", keep_default_na=False)
    assert list(got.columns) == list(want.columns) and "true" in got.columns
    assert got.node.astype(str).tolist() == want.node.astype(str).tolist()
    for col in want.columns[2:]:
        np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float), rtol=1e-12, atol=1e-9,
                                   err_msg=col)
    meta = json.loads(meta_path(out).read_text())
    assert meta["mode"] == "simulate" and meta["notice"] == SIMULATION_NOTICE


def test_cli_consistency_is_weighted_gls_post_processing_only(tmp_path):
    src = tmp_path / "noisy.csv"
    src.write_text("node,parent,value,variance\nb,r,4.5,1\nr,,10,2\na,r,7,1\na1,a,2,4\na2,a,3.5,4\n")
    out = tmp_path / "out.csv"
    assert main(["tree", "consistency", str(src), "--output", str(out)]) == 0
    df = pd.read_csv(out, keep_default_na=False).set_index("node")
    assert list(df.index) == ["b", "r", "a", "a1", "a2"]  # input order kept
    assert np.isclose(df.loc["r", "value"], df.loc["a", "value"] + df.loc["b", "value"])
    assert np.isclose(df.loc["a", "value"], df.loc["a1", "value"] + df.loc["a2", "value"])
    # equals the dense weighted least-squares projection v - D M (MᵀDM)⁻¹ Mᵀ v
    order = ["r", "a", "b", "a1", "a2"]
    v = np.array([10, 7, 4.5, 2, 3.5])
    dvar = np.array([2, 1, 1, 4, 4.0])
    m = np.array([[1, 0], [-1, 1], [-1, 0], [0, -1], [0, -1.0]])  # columns: r, a
    dm = m * dvar[:, None]
    ref = v - dm @ np.linalg.solve(m.T @ dm, m.T @ v)
    np.testing.assert_allclose(df.loc[order, "value"].to_numpy(), ref, atol=1e-12)
    before = src.read_bytes()
    assert main(["tree", "consistency", str(src), "--output", str(src)]) == 2  # never over the input
    assert src.read_bytes() == before


def test_cli_generate_then_simulate_every_method(tmp_path, capsys):
    f = tmp_path / "t.csv"
    assert main(["tree", "generate", "--kind", "random-fanout", "--nodes", "500", "--output", str(f)]) == 0
    data = load_tree_file(f)
    assert data.tree.n == 500 and np.array_equal(data.x, np.rint(data.x))
    assert f.read_text().splitlines()[1] == "0,,"  # the root has no count (internal counts are derived)
    for m in ("gmc", "boosting", "privtrie", "lee", "processless", "gmc-nosqrt"):
        assert main(["tree", "simulate", str(f), "--epsilon", "0.5", "--method", m, "--seed", "1"]) == 0
        assert m in _table_rows(capsys.readouterr().out)


# ---- release: safe to publish ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tree_csv(tmp_path_factory):
    """A 1000-node random fan-out tree written by `tree generate`, its declared hierarchy beside it (h.csv,
    written by `tree describe-structure`), and its true node vector (file order)."""
    f = tmp_path_factory.mktemp("rel") / "t.csv"
    assert run("tree", "generate", "--kind", "random-fanout", "--nodes", "1000", "--seed", "3",
               "--output", str(f)).returncode == 0
    assert run("tree", "describe-structure", str(f), "--output", str(_hierarchy(f))).returncode == 0
    data = load_tree_file(f)
    return f, data, data.v[np.argsort(data.tree.order)]


def _hierarchy(f: Path) -> Path:
    return f.with_name("h.csv")


def test_cli_release_has_no_truth_and_fresh_noise(tree_csv, tmp_path, cli):
    f, data, v = tree_csv
    before = f.read_bytes()
    outs = []
    for i in range(2):
        out = tmp_path / f"rel{i}.csv"
        proc = (run if i == 0 else cli)("tree", "release", str(f), "--hierarchy", str(_hierarchy(f)), "--epsilon",
                                        "1", "--output", str(out))
        assert proc.returncode == 0, proc.stderr
        outs.append((out, proc.stdout))
    (out, stdout), (out2, _) = outs
    df = pd.read_csv(out, keep_default_na=False)
    assert list(df.columns) == ["node", "parent", "noisy", "released", "variance", "std"]
    assert df.node.astype(str).tolist() == pd.read_csv(f, keep_default_na=False).node.astype(str).tolist()
    for col in ("noisy", "released", "variance", "std"):
        assert not np.allclose(df[col].to_numpy(float), v), col
    noisy = df["noisy"].to_numpy()
    assert noisy.dtype.kind == "i"  # written as integers
    assert not np.array_equal(noisy, pd.read_csv(out2)["noisy"].to_numpy())  # two runs differ
    np.testing.assert_allclose(df["std"], np.sqrt(df["variance"]), rtol=1e-12)
    printed = float(stdout.split("Σ variance): ")[1].split()[0])
    assert printed == pytest.approx(df["variance"].sum(), rel=1e-5)
    assert np.isclose(df.loc[0, "released"], df[df.parent.astype(str) == str(df.loc[0, "node"])].released.sum())
    # stdout: public things only
    low = stdout.lower()
    for word in ("rmse", "bias", "negative", "true", "seed"):
        assert word not in low, word
    assert str(int(v[0])) not in stdout and f"{int(v[0]):,}" not in stdout  # the true root total
    assert "n=1,000" in stdout and f"h={data.tree.h}" in stdout and "expected total squared error" in stdout
    meta = json.loads(meta_path(out).read_text())
    assert meta["mode"] == "release" and meta["capability"] == "tree" and meta["noise"]["discrete"] is True
    assert meta["structure"]["source"] == "declared" and meta["structure"]["declaration"] == "h.csv"
    assert str(int(v[0])) not in meta_path(out).read_text()
    assert f.read_bytes() == before


def test_cli_release_refuses_seed_all_and_its_own_input(tree_csv, tmp_path, cli):
    f, _, _ = tree_csv
    before = f.read_bytes()
    out = tmp_path / "r.csv"
    proc = run("tree", "release", str(f), "--epsilon", "1", "--seed", "3", "--output", str(out))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "simulate" in proc.stderr and "Traceback" not in proc.stderr and not out.exists()
    proc = cli("tree", "release", str(f), "--epsilon", "1", "--method", "all", "--output", str(out))
    assert proc.returncode == 2 and "simulate" in proc.stderr and not out.exists()
    proc = cli("tree", "release", str(f), "--epsilon", "1", "--output", str(f))
    assert proc.returncode == 2 and "input" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert f.read_bytes() == before and not meta_path(f).exists()
    proc = cli("tree", "release", str(f), "--epsilon", "1")
    assert proc.returncode == 2 and "--output" in proc.stderr


def test_cli_release_gaussian_is_discrete_and_calibrated_by_cks(tree_csv, tmp_path, capsys):
    f, data, _ = tree_csv
    out = tmp_path / "g.csv"
    assert main(["tree", "release", str(f), "--hierarchy", str(_hierarchy(f)), "--noise", "gaussian", "--epsilon",
                 "1", "--delta", "1e-6",
                 "--split", "geometric", "--method", "lee", "--output", str(out)]) == 0
    meta = json.loads(meta_path(out).read_text())
    assert meta["noise"]["family"] == "gaussian" and meta["noise"]["discrete"] is True
    assert meta["noise"]["calibrated_rho"] == pytest.approx(zcdp_rho(1.0, 1e-6))
    assert meta["split"] == "geometric" and meta["method"] == "lee"
    assert meta["sensitivity"] == {"norm": "L2", "value": pytest.approx(np.sqrt(data.tree.h))}
    assert pd.read_csv(out)["noisy"].dtype.kind == "i"
    assert "discrete Gaussian" in capsys.readouterr().out


def test_cli_release_rejects_fractional_counts_naming_the_leaf(tmp_path, cli):
    f = tmp_path / "frac.csv"
    f.write_text("node,parent,count\nroot,,\na,root,3\nb,root,1.5\n")
    proc = cli("tree", "release", str(f), "--structure-from-data", "--epsilon", "1", "--output",
               str(tmp_path / "o.csv"))
    assert proc.returncode == 2 and "leaf 'b'" in proc.stderr and "integer" in proc.stderr


@pytest.mark.parametrize(
    "args, expected",
    [
        (["tree", "simulate", "missing.csv", "--epsilon", "1"], "does not exist"),
        (["tree", "simulate", "county", "--epsilon", "1"], "sample:county"),
        (["tree", "simulate", "sample:county", "--epsilon", "-1"], "epsilon: expected a positive finite number"),
        (["tree", "simulate", "sample:county", "--noise", "gaussian", "--epsilon", "1"], "--delta"),
        (["tree", "simulate", "sample:county", "--mechanism", "gaussian", "--epsilon", "1"], "unrecognized"),
        (["tree", "consistency", "tests/data/does-not-exist.csv", "--output", "x.csv"], "does not exist"),
    ],
)
def test_cli_bad_input_exit_2_one_line_no_traceback(args, expected, cli):
    proc = (run if args[1] == "simulate" and expected == "does not exist" else cli)(*args)  # one real process
    assert proc.returncode == 2
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_bad_file_content_exit_2(tmp_path, cli):
    f = tmp_path / "cyc.csv"
    f.write_bytes(BAD["cycle"][0])
    proc = cli("tree", "simulate", str(f), "--epsilon", "1")
    assert proc.returncode == 2 and "cycle" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_structure_views_match_the_library(tmp_path):
    """properties / propagate / matrix: what the page's structure panels show, headless."""
    f = tmp_path / "t.csv"
    f.write_bytes(GOOD)  # root -> a (a1, a2), b
    assert main(["tree", "properties", str(f), "--output", str(tmp_path / "p.csv")]) == 0
    p = pd.read_csv(tmp_path / "p.csv", keep_default_na=False).set_index("node")
    assert p.loc["root", "subtree_size"] == 5 and p.loc["a1", "depth"] == 3 and p.loc["a", "children"] == 2
    assert main(["tree", "propagate", str(f), "--vector", "true", "--direction", "up",
                 "--output", str(tmp_path / "u.csv")]) == 0
    u = pd.read_csv(tmp_path / "u.csv", keep_default_na=False).set_index("node")
    # G^-T v sums v over each subtree: root 12+7+5+3+4, a 7+3+4
    assert u.loc["root", "value"] == 31 and u.loc["a", "value"] == 14 and u.loc["b", "value"] == 5
    assert main(["tree", "propagate", str(f), "--vector", "ones", "--direction", "down", "--steps", "1",
                 "--output", str(tmp_path / "d.csv")]) == 0
    d = pd.read_csv(tmp_path / "d.csv").set_index("node")
    assert d.loc["root", "value"] == 1 and np.isnan(d.loc["a1", "value"])  # not reached after one level
    assert main(["tree", "matrix", str(f), "--which", "Ginv", "--output", str(tmp_path / "g.csv")]) == 0
    g = pd.read_csv(tmp_path / "g.csv")
    assert len(g) == 11 and set(g.value) == {1.0}  # Prop. 7: Σ depth = 1 + 2 + 2 + 3 + 3 non-zeros
    assert ((g.row == "a1") & (g.col == "root")).any() and not ((g.row == "b") & (g.col == "a")).any()
    assert main(["tree", "properties", "sample:county", "--output", str(tmp_path / "c.csv")]) == 0
    c = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert len(c) == 3207 and c.loc[0, "node"] == "(all)" and c.loc[0, "subtree_size"] == 3207


# ---- vectorised structure, Arrow reading and writing (issue 11 "File IO") ---------------------------------
def _slow_depth_height(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth (root 1) and height (leaf 1) by plain Python loops: the reference."""
    n = len(p)
    depth = np.zeros(n, int)
    for i in range(n):
        d, j = 1, i
        while p[j] >= 0:
            j, d = p[j], d + 1
        depth[i] = d
    height = np.ones(n, int)
    for i in sorted(range(n), key=lambda i: -depth[i]):
        if p[i] >= 0:
            height[p[i]] = max(height[p[i]], height[i] + 1)
    return depth, height


@pytest.mark.parametrize("level_loop_max", [2048, 2])  # 2: every tree takes the deep (contraction) path
def test_tree_from_parents_matches_a_python_loop(monkeypatch, level_loop_max):
    from dpviz.tree import model

    monkeypatch.setattr(model, "LEVEL_LOOP_MAX", level_loop_max)
    rng = np.random.default_rng(5)
    for trial in range(60):
        n = int(rng.integers(1, 120))
        span = [n, 3, 1][trial % 3]  # bushy, deep, a path
        p = np.array([-1] + [int(rng.integers(max(0, i - span), i)) for i in range(1, n)])
        perm = rng.permutation(n) if trial % 2 else np.arange(n)  # shuffled rows: the csgraph BFS path
        inv = np.argsort(perm)
        q = np.where(p[perm] < 0, -1, inv[np.maximum(p[perm], 0)])
        t = model.tree_from_parents(q)
        depth, height = _slow_depth_height(q)
        np.testing.assert_array_equal(t.depth, depth[t.order])
        np.testing.assert_array_equal(t.height, height[t.order])
        assert np.all(np.diff(t.height) <= 0) and t.parent[0] == -1
        np.testing.assert_array_equal(t.order[t.parent[1:]], q[t.order[1:]])  # same edges


def test_doh_numbering_by_height_is_a_stable_sort_beyond_16_bits():
    """_by_height (two 16-bit radix passes above 2^15 levels) against a stable comparison sort."""
    from dpviz.tree.model import _by_height

    rng = np.random.default_rng(6)
    for h in (1, 7, 32_766, 32_767, 40_000, 70_000, 2**20):
        height = rng.integers(1, h + 1, 5000).astype(np.int32)
        height[0] = h
        assert np.array_equal(_by_height(height, h), np.argsort(-height.astype(np.int64), kind="stable")), h


def test_row_index_ids_and_string_ids_give_the_same_tree():
    rows = [("0", "", ""), ("1", "0", ""), ("2", "0", "5"), ("3", "1", "2"), ("4", "1", "7")]
    plain = "node,parent,count\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows)
    named = "node,parent,count\n" + "".join(f"n{a},{'n' + b if b else ''},{c}\n" for a, b, c in rows)
    a, b = load_tree_file(plain.encode()), load_tree_file(named.encode())
    np.testing.assert_array_equal(a.tree.parent, b.tree.parent)
    np.testing.assert_array_equal(a.x, b.x)
    assert list(a.node_ids) == [s[1:] for s in b.node_ids]
    assert a.tree.label_source is None and b.tree.label_array is not None  # row-index ids: no label array


def test_tree_csv_writer_round_trips_numbers_and_marks_missing_values_empty(tmp_path):
    from dpviz.tree.io import write_tree_csv

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(200_000) * 10.0 ** rng.integers(-300, 300, 200_000), [np.nan, 1e308]])
    df = pd.DataFrame({"node": [f"v{i}" for i in range(x.size)], "parent": [""] * x.size, "x": x,
                       "k": pd.array([None if i % 3 else i for i in range(x.size)], dtype="Int64")})
    out = tmp_path / "w.csv"
    write_tree_csv(df, out)
    back = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert back.columns.tolist() == ["node", "parent", "x", "k"]
    got = pd.to_numeric(back["x"].replace("", np.nan)).to_numpy()
    np.testing.assert_array_equal(got[:-2], x[:-2])  # shortest round-trip text: exact
    assert back["x"].iloc[-2] == "" and back["k"].iloc[1] == "" and back["k"].iloc[3] == "3"
    assert out.read_text().splitlines()[1] == f"v0,,{float(x[0])!r},0"  # no quotes where none are needed
