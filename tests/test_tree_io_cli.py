"""Tree input validation (clear errors naming the line) and the ``python -m dpviz tree`` CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.errors import InputError
from dpviz.tree.io import load_tree_file, tree_from_parent_array

ROOT = Path(__file__).resolve().parents[1]

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


def test_node_limit():
    with pytest.raises(InputError, match="more than the limit of 3"):
        load_tree_file(GOOD, max_nodes=3)


def test_cli_release_writes_csv_and_prints_metrics(tmp_path, capsys):
    out = tmp_path / "rel.csv"
    assert main(["tree", "release", "county", "--epsilon", "1", "--seed", "3", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rmse_NQ" in text and "seed=3" in text
    df = pd.read_csv(out, keep_default_na=False)
    assert list(df.columns) == ["node", "parent", "true", "noisy", "released"]
    assert len(df) == 3207 and df.loc[0, "node"] == "(all)" and df.loc[0, "true"] == 328_239_523
    # released is consistent: root = sum of the regions
    regions = df[df.parent == "(all)"]
    assert np.isclose(regions.released.sum(), df.loc[0, "released"])
    # same seed, same numbers
    out2 = tmp_path / "rel2.csv"
    main(["tree", "release", "county", "--epsilon", "1", "--seed", "3", "--output", str(out2)])
    assert out.read_bytes() == out2.read_bytes()


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


def test_cli_generate_then_release(tmp_path):
    f = tmp_path / "t.csv"
    assert main(["tree", "generate", "--kind", "random-fanout", "--nodes", "500", "--output", str(f)]) == 0
    assert load_tree_file(f).tree.n == 500
    for m in ("gmc", "boosting", "privtrie", "lee", "processless", "gmc-nosqrt"):
        assert main(["tree", "release", str(f), "--epsilon", "0.5", "--method", m, "--seed", "1"]) == 0


@pytest.mark.parametrize(
    "args, expected",
    [
        (["tree", "release", "missing.csv", "--epsilon", "1"], "does not exist"),
        (["tree", "release", "county", "--epsilon", "-1"], "epsilon must be a positive number"),
        (["tree", "consistency", "tests/data/does-not-exist.csv", "--output", "x.csv"], "does not exist"),
    ],
)
def test_cli_bad_input_exit_2_one_line_no_traceback(args, expected):
    proc = subprocess.run([sys.executable, "-m", "dpviz", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_bad_file_content_exit_2(tmp_path):
    f = tmp_path / "cyc.csv"
    f.write_bytes(BAD["cycle"][0])
    proc = subprocess.run([sys.executable, "-m", "dpviz", "tree", "release", str(f), "--epsilon", "1"],
                          cwd=ROOT, capture_output=True, text=True)
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
