"""Graph edge tables as records with a person bound (issue 21): ``--person-column ID --max-contributions K``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.graph.io import edges_from_records


def _edges(g) -> set[tuple[int, int]]:
    """The edges by their ids in the file (the graph numbers vertices 0..n-1; ``labels`` keeps the file's ids)."""
    name = (lambda i: int(g.labels[i])) if g.labels is not None else int
    return {tuple(sorted((name(int(a)), name(int(b))))) for a, b in np.asarray(g.edges)}


def test_removing_one_person_changes_at_most_k_edges(tmp_path):
    """The neighbour property behind sensitivity × K: on random tables, the counted graph with and without any
    one person differs in at most K edges (their first K rows; another person's copy of an edge keeps it)."""
    rng = np.random.default_rng(7)
    for case in range(25):
        rows, k = int(rng.integers(5, 40)), int(rng.integers(1, 4))
        df = pd.DataFrame({"u": rng.integers(0, 8, rows), "v": rng.integers(0, 8, rows),
                           "pid": rng.choice(list("abcde"), rows)})
        df = df[df.u != df.v]
        full = tmp_path / f"full{case}.csv"
        df.to_csv(full, index=False)
        base = _edges(edges_from_records(full, person="pid", max_contributions=k))
        for who in df.pid.unique():
            part = tmp_path / f"part{case}{who}.csv"
            df[df.pid != who].to_csv(part, index=False)
            if (df.pid != who).sum() == 0:
                continue
            other = _edges(edges_from_records(part, person="pid", max_contributions=k))
            assert len(base ^ other) <= k, (case, who)


def test_a_person_bounded_release_states_the_person_level_budget(tmp_path, capsys):
    src = tmp_path / "e.csv"
    src.write_text("u,v,pid\n0,1,a\n1,2,a\n2,3,a\n3,4,b\n4,0,b\n0,2,c\n")
    out = tmp_path / "r.csv"
    rc = main(["graph", "release", str(src), "--n-nodes", "5", "--epsilon", "2", "--person-column", "pid",
               "--max-contributions", "2", "--output", str(out), "--ledger", str(tmp_path / "l.sqlite3")])
    assert rc == 0
    meta = json.loads((tmp_path / "r.csv.meta.json").read_text())
    assert meta["sensitivity"]["value"] == 2 * meta["sensitivity"]["per_record"]
    assert sum(meta["budget"].values()) == pytest.approx(2.0)  # person level: the ε charged
    assert sum(p["epsilon"] for p in meta["budget_parts"]) == pytest.approx(2.0)
    assert "one person (column 'pid') with at most 2 records" in meta["unit_of_privacy"]
    assert "dropped" in meta["records"] and not any(isinstance(v, int) and k == "n_dropped" for k, v in meta.items())
    assert "total                                 ε = 2 (requested 2" in capsys.readouterr().out


def test_max_contributions_needs_a_person_column(tmp_path, capsys):
    src = tmp_path / "e.csv"
    src.write_text("u,v\n0,1\n")
    rc = main(["graph", "simulate", str(src), "--epsilon", "1", "--max-contributions", "2", "--method", "all"])
    assert rc == 2 and "--max-contributions: needs --person-column" in capsys.readouterr().err
