"""dpviz.ledger: composition rules (accounts), the SQLite store, and dataset identity."""

import csv
import json
import sqlite3

import numpy as np
import pytest

from dpviz.core.accounting import zcdp_epsilon, zcdp_rho
from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.ledger import ledger_path
from dpviz.ledger.accounts import REPORT_DELTA, Charge, DatasetBudget, Spent
from dpviz.ledger.identity import DatasetId, identify, load_for_ledger
from dpviz.ledger.store import APP_ID, BudgetExceeded, open_ledger
from dpviz.ledger.views import cumulative_frame, releases_frame, summary_frame
from tests.apptest_helpers import ROOT

DATA = ROOT / "tests" / "data"


@pytest.fixture(autouse=True)
def _no_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DPVIZ_LEDGER", raising=False)


def pure(eps: float) -> Charge:
    return Charge.of_noise(Noise.laplace(eps, discrete=True))


def gauss(rho: float) -> Charge:
    return Charge.of_noise(Noise.gaussian(rho, discrete=True))


def ds(tag: str = "a" * 64, name: str = "toy") -> DatasetId:
    return DatasetId(tag, "tree", name, "test")


# --------------------------------------------------------------------------------------------- accounts


def test_charges_in_their_own_currency():
    c = Charge.of_noise(Noise.gaussian_approx(1.0, 1e-6, discrete=True))
    assert c.accounting == "zcdp" and c.rho == pytest.approx(zcdp_rho(1.0, 1e-6), rel=1e-15) and c.epsilon is None
    assert "from (ε, δ) = (1, 1e-06)" in c.describe
    p = pure(0.5)
    assert (p.accounting, p.epsilon, p.rho) == ("pure", 0.5, 0.125)
    # the stated (1, 1e-6) Gaussian release alone spends ε = 1 at δ = 1e-6 (the CKS conversion inverts)
    assert Spent().plus(c).epsilon(1e-6) == pytest.approx(1.0, abs=1e-9)


def test_reported_both_ways_and_spent_is_the_smaller():
    many = Spent()
    for _ in range(100):
        many = many.plus(pure(0.01))
    assert many.epsilon_basic(1e-6) == pytest.approx(1.0)
    assert many.epsilon_zcdp(1e-6) == pytest.approx(zcdp_epsilon(100 * 0.01**2 / 2, 1e-6))
    assert many.epsilon(1e-6) == many.epsilon_zcdp(1e-6) < 0.6  # zCDP wins for many small pure releases
    one = Spent().plus(pure(1.0))
    assert one.epsilon(1e-6) == one.epsilon_basic(1e-6) == 1.0  # basic wins for one
    # a Gaussian release has no pure guarantee
    assert Spent().plus(gauss(0.1)).epsilon(None) == np.inf


@pytest.mark.parametrize("delta", [1e-6, 1e-9])
def test_room_is_the_largest_charge_that_fits(delta):
    budget = DatasetBudget(2.0, delta)
    for spent in (Spent(), Spent().plus(pure(0.3)).plus(gauss(0.01)), Spent().plus(gauss(0.005)).plus(gauss(0.002))):
        room = spent.room(budget)
        assert room.epsilon > 0 and room.rho > 0
        assert spent.plus(pure(room.epsilon)).epsilon(delta) == pytest.approx(2.0, rel=1e-9)
        assert spent.plus(gauss(room.rho)).epsilon(delta) == pytest.approx(2.0, rel=1e-9)
        assert room.admits(pure(room.epsilon)) and not room.admits(pure(room.epsilon * 1.000001))
        assert room.admits(gauss(room.rho)) and not room.admits(gauss(room.rho * 1.000001))


def test_pure_budget_admits_pure_releases_only_with_float_slack():
    budget = DatasetBudget(0.3)
    spent = Spent().plus(pure(0.1))
    assert spent.room(budget).admits(pure(0.2))  # 0.1 + 0.2 = 0.30000000000000004 still fits 0.3
    assert not spent.room(budget).admits(pure(0.2001))
    assert not spent.room(budget).admits(gauss(1e-9)) and spent.room(budget).rho == 0.0
    rep = spent.plus(gauss(0.01)).report(budget)
    assert rep["epsilon_spent"] == np.inf and rep["room_epsilon"] == 0.0 and rep["delta"] is None
    assert Spent().report(None)["delta"] == REPORT_DELTA


def test_budget_validation():
    with pytest.raises(InputError, match="epsilon"):
        DatasetBudget(0.0)
    with pytest.raises(InputError, match="delta"):
        DatasetBudget(1.0, 1.5)


# --------------------------------------------------------------------------------------------- store


def test_created_file_is_a_wal_sqlite_with_our_application_id(tmp_path):
    path = tmp_path / "l.sqlite3"
    with open_ledger(path, create=True) as led:
        assert led.datasets() == []
    head = path.read_bytes()[:100]
    assert head.startswith(b"SQLite format 3\x00") and int.from_bytes(head[68:72], "big") == APP_ID
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.sqlite3"]  # no temporary file left


def _other_sqlite(p):
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE notes (x TEXT)")
    con.commit()
    con.close()


def _future_schema(p):
    with open_ledger(p, create=True):
        pass
    con = sqlite3.connect(p)
    con.execute("PRAGMA user_version = 99")
    con.close()


def _corrupt(p):
    with open_ledger(p, create=True):
        pass
    raw = p.read_bytes()
    p.write_bytes(raw[:100] + b"\xff" * (len(raw) - 100))


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text("name,value\nx,1\n"), "not an SQLite database"),
    (lambda p: p.write_bytes(b""), "an empty file"),
    (_other_sqlite, "another application"),
    (_future_schema, "newer dpviz"),
    (_corrupt, "corrupt"),
])
def test_foreign_or_corrupt_file_is_refused_and_left_untouched(tmp_path, make, message):
    path = tmp_path / "ledger.sqlite3"
    make(path)
    before = path.read_bytes()
    for kwargs in ({"create": True}, {"readonly": True}):
        with pytest.raises(InputError, match=message):
            open_ledger(path, **kwargs)
    assert path.read_bytes() == before


def test_folder_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="is a folder"):
        open_ledger(tmp_path, create=True)
    with pytest.raises(InputError, match="no ledger at"):
        open_ledger(tmp_path / "none.sqlite3", readonly=True)
    with pytest.raises(InputError, match="no ledger at"):
        open_ledger(tmp_path / "none.sqlite3")
    with pytest.raises(InputError, match="does not exist"):
        open_ledger(tmp_path / "no" / "l.sqlite3", create=True)
    assert list(tmp_path.iterdir()) == []


def test_charge_refuse_finish_and_views(tmp_path):
    path, out = tmp_path / "l.sqlite3", tmp_path / "out.csv"
    with open_ledger(path, create=True) as led:
        led.set_budget(ds(), DatasetBudget(1.0, 1e-6))
        r1 = led.charge(ds(), pure(0.6), mechanism="gmc", source="toy.csv", output=out)
        with pytest.raises(BudgetExceeded, match="remaining: a Laplace .* ε ≤ 0.4") as exc:
            led.charge(ds(), pure(0.5), mechanism="gmc", source="toy.csv", output=out)
        assert exc.value.room.epsilon == pytest.approx(0.4)
        r2 = led.charge(ds(), gauss(0.001), mechanism="fenwick-fda", source="toy.csv", output=out)
        led.finish(r1.release_id, "f" * 64)
        rows = led.releases(ds().sha256)
        assert [r.status for r in rows] == ["written", "charged"] and rows[0].output_sha256 == "f" * 64
        assert r2.spent.releases == 2 and r2.spent.gauss_rho == 0.001
        d = led.dataset("aaaaaa")
        assert d.spent == r2.spent and d.budget == DatasetBudget(1.0, 1e-6)
    frame = releases_frame(rows)
    assert list(frame["charge"]) == ["ε = 0.6 (pure)", "ρ = 0.001 (zCDP)"]
    assert frame["status"].iloc[1] == "charged, no output recorded"
    summary = summary_frame([d])
    assert summary["releases"].item() == 2 and summary["spent ε"].item() == pytest.approx(d.spent.epsilon(1e-6))
    cum = cumulative_frame(d, rows)
    assert cum["ε (basic)"].iloc[0] == pytest.approx(0.6) and cum["ε (zCDP)"].iloc[-1] == pytest.approx(
        zcdp_epsilon(0.18 + 0.001, 1e-6))


def test_lookup_by_prefix_and_export(tmp_path):
    path = tmp_path / "l.sqlite3"
    with open_ledger(path, create=True) as led:
        for tag in ("abcdef01", "abcdef02"):
            led.charge(ds(tag + "0" * 56), pure(1.0), mechanism="m", source="s", output=tmp_path / "o")
        with pytest.raises(InputError, match="ambiguous"):
            led.dataset("abcdef")
        with pytest.raises(InputError, match="not in the ledger"):
            led.dataset("123456")
        with pytest.raises(InputError, match="hex digits"):
            led.dataset("xyz")
        assert led.dataset("ABCDEF02").id.startswith("abcdef02")
    with open_ledger(path, readonly=True) as led:
        data = led.export()
        with pytest.raises(InputError, match="read-only"):
            led.set_budget(ds(), DatasetBudget(1.0))
    assert [len(d["releases"]) for d in data["datasets"]] == [1, 1] and "private" in data["note"]
    json.dumps(data, allow_nan=False)  # plain JSON: no inf/nan


def test_ledger_path_precedence(tmp_path, monkeypatch):
    assert ledger_path().path == tmp_path / "xdg" / "dpviz" / "ledger.sqlite3" and not ledger_path().explicit
    monkeypatch.setenv("DPVIZ_LEDGER", str(tmp_path / "env.sqlite3"))
    assert ledger_path().path == tmp_path / "env.sqlite3" and ledger_path().origin == "DPVIZ_LEDGER"
    assert ledger_path(tmp_path / "flag.sqlite3").origin == "--ledger"


# --------------------------------------------------------------------------------------------- identity


def _id(cap, path, **kw):
    return identify(cap, str(path), load_for_ledger(cap, str(path), **kw)).sha256


@pytest.mark.parametrize("cap, name", [("tree", "tree_good.csv"), ("stream", "stream_good.csv")])
def test_identity_is_the_sha256_of_the_canonical_bytes(cap, name):
    """identify hashes the header and the capability's bytes without joining them: the same digest (a table of
    records, e.g. marginals, is identified by its records instead: test_ledger_records)."""
    import hashlib

    from dpviz.ledger.identity import canonical_bytes

    data = load_for_ledger(cap, str(DATA / name))
    want = hashlib.sha256(canonical_bytes(cap, str(DATA / name), data)).hexdigest()
    assert identify(cap, str(DATA / name), data).sha256 == want
    assert canonical_bytes(cap, str(DATA / name), data).startswith(f"dpviz-ledger/1 {cap}\n".encode())


def test_tree_identity_ignores_format_and_row_order(tmp_path):
    base = _id("tree", DATA / "tree_good.csv")
    lines = (DATA / "tree_good.csv").read_text().splitlines()
    (tmp_path / "shuffled.csv").write_text("\r\n".join([lines[0], *reversed(lines[1:])]) + "\r\n")
    records = [dict(zip(("node", "parent", "count"), ln.split(","), strict=True)) for ln in lines[1:]]
    (tmp_path / "t.json").write_text(json.dumps(records))
    (tmp_path / "changed.csv").write_text("\n".join(lines).replace("a1,A,3", "a1,A,4") + "\n")
    assert _id("tree", tmp_path / "shuffled.csv") == base == _id("tree", tmp_path / "t.json")
    assert _id("tree", tmp_path / "changed.csv") != base


def test_stream_identity_is_the_series_in_time_order(tmp_path):
    counts = [int(x.split(",")[1]) for x in (DATA / "stream_good.csv").read_text().splitlines()[1:]]
    (tmp_path / "renamed.csv").write_text("value\n" + "\n".join(map(str, counts)) + "\n")
    (tmp_path / "reversed.csv").write_text("count\n" + "\n".join(map(str, counts[::-1])) + "\n")
    base = _id("stream", DATA / "stream_good.csv")
    assert _id("stream", tmp_path / "renamed.csv") == base != _id("stream", tmp_path / "reversed.csv")


def test_graph_identity_is_the_edge_set(tmp_path):
    (tmp_path / "a.csv").write_text("u,v\nann,bob\nbob,cat\ncat,ann\n")
    (tmp_path / "b.txt").write_text("# comment\ncat bob\nann cat\nbob ann\nann bob\n")  # reversed, reordered, repeated
    (tmp_path / "c.csv").write_text("u,v\nann,bob\nbob,cat\n")
    assert _id("graph", tmp_path / "a.csv") == _id("graph", tmp_path / "b.txt") != _id("graph", tmp_path / "c.csv")
    (tmp_path / "ints.csv").write_text("0,1\n1,2\n")
    assert _id("graph", tmp_path / "ints.csv") == _id("graph", tmp_path / "ints.csv", n_nodes=3)


def test_marginals_identity_is_the_records_before_projection(tmp_path):
    from dpviz.core.registry import load_sample
    from dpviz.marginals.io import read_table

    lines = (DATA / "marginals_cli_good.csv").read_text().splitlines()
    cols = [ln.split(",") for ln in lines]
    perm = [[r[3], r[1], r[0], r[2]] for r in cols]  # columns permuted
    (tmp_path / "perm.csv").write_text("\n".join(";".join(r) for r in [perm[0], *perm[:0:-1]]) + "\n")
    base = identify("marginals", str(DATA / "marginals_cli_good.csv"))
    projected = read_table(DATA / "marginals_cli_good.csv", attributes=["color"])  # what --attributes color loads
    assert identify("marginals", str(DATA / "marginals_cli_good.csv"), projected) == base
    assert base.capability == "records"  # a marginals file is its records (dpviz.ledger.identity): the bytes as stored
    assert identify("marginals", str(tmp_path / "perm.csv")).sha256 != base.sha256  # a re-save: another dataset
    # the bundled sample is hashed as the table of its labels; a CSV written from it is a records file (another dataset)
    t = load_sample("marginals", "sample:titanic")
    with (tmp_path / "titanic.csv").open("w", newline="") as fh:  # labels such as "[0, 13)" need quoting
        csv.writer(fh).writerows([t.domain.attrs, *([t.categories[k][c] for k, c in enumerate(r)]
                                                    for r in t.codes.tolist())])
    assert identify("marginals", str(tmp_path / "titanic.csv")).sha256 != identify("marginals", "sample:titanic").sha256
    assert identify("marginals", "sample:titanic").capability == "marginals"
    # one file read by two capabilities is two datasets
    assert _id("stream", DATA / "stream_good.csv") != identify("marginals", str(DATA / "stream_good.csv")).sha256
