"""A release counted from records spends ONE budget per records file (issue 21, dpviz.ledger.identity):
``ledger set-budget PEOPLE.parquet`` sets it, a tree by levels, a stream of events and marginals of the same
file all charge it and are refused past it; the identity is the file's content (a folder of the same files,
a CSV and its gzip, the bytes of an upload: one dataset; a re-save: another); pre-counted inputs and samples
keep their identities."""

from __future__ import annotations

import gzip
import hashlib
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pathlib import Path

from dpviz.cli import main as _main
from dpviz.core.records import RecordsSource, records_digest
from dpviz.errors import InputError
from dpviz.ledger.identity import RECORDS, identify, load_for_ledger, records_identity
from dpviz.ledger.session import page_dataset, page_records_dataset
from dpviz.ledger.store import open_ledger

DATA = Path(__file__).parent / "data"


def main(argv: list[str]) -> int:
    """The CLI's exit code (a release over budget exits with SystemExit(3))."""
    try:
        return _main(argv)
    except SystemExit as exc:
        return int(exc.code)


def _people(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "region": rng.choice(["N", "S", "E", "W"], n),
        "state": rng.choice([f"s{i}" for i in range(8)], n),
        "flag": rng.choice(["yes", "no"], n),
        "pid": rng.integers(0, n // 3, n),
        "ts": (pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 86_400 * 5, n), unit="s")).astype(str),
    })


def _parquet(df: pd.DataFrame, path: Path) -> Path:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    return path


def _tree(src: Path, out: Path, led: Path, eps: str = "1", levels: str = "region,state") -> int:
    return main(["tree", "release", str(src), "--levels", levels, "--epsilon", eps, "--structure-from-data",
                 "--output", str(out), "--ledger", str(led)])


def _stream(src: Path, out: Path, led: Path, eps: str = "0.5", bucket: str = "day") -> int:
    return main(["stream", "release", str(src), "--time-column", "ts", "--bucket", bucket, "--mechanism", "fenwick",
                 "--epsilon", eps, "--structure-from-data", "--output", str(out), "--ledger", str(led)])


def _marginals(src: Path, out: Path, led: Path, attrs: str = "region,flag") -> int:
    return main(["marginals", "release", str(src), "--attributes", attrs, "--workload", "1", "--rho", "0.05",
                 "--mechanism", "rp", "--method", "mle", "--structure-from-data", "--output", str(out),
                 "--ledger", str(led)])


def test_set_budget_on_a_parquet_file_binds_releases_of_two_capabilities(tmp_path, capsys):
    src = _parquet(_people(), tmp_path / "people.parquet")
    led = tmp_path / "l.sqlite3"
    assert main(["ledger", "set-budget", str(src), "--epsilon", "1.5", "--ledger", str(led)]) == 0
    assert f"budget of {src.resolve()} set to" in capsys.readouterr().out
    assert _tree(src, tmp_path / "t.csv", led) == 0  # ε = 1 of 1.5
    capsys.readouterr()
    assert _stream(src, tmp_path / "s.csv", led, eps="1") == 3  # another capability, the same people: refused
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "ledger" in err
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "s.csv.meta.json").exists()
    with open_ledger(led, readonly=True) as book:
        (row,) = book.datasets()
        assert (row.capability, row.name, row.id) == (RECORDS, str(src.resolve()), records_identity(src).sha256)
        assert [r.capability for r in book.releases(row.id)] == ["tree"]  # nothing charged for the refusal
        assert row.report()["epsilon_spent"] == pytest.approx(1.0)
    assert _stream(src, tmp_path / "s.csv", led, eps="0.5") == 0  # what remains still fits
    assert main(["ledger", "show", "--ledger", str(led)]) == 0
    shown = capsys.readouterr().out
    assert "records" in shown and str(src.resolve()) in shown and "1 dataset(s), 2 release(s)" in shown


def test_marginals_and_a_tree_of_one_csv_spend_one_budget(tmp_path, capsys):
    df = _people(seed=1)
    src = tmp_path / "people.csv"
    df.to_csv(src, index=False)
    led = tmp_path / "l.sqlite3"
    assert main(["ledger", "set-budget", str(src), "--epsilon", "2", "--delta", "1e-6", "--ledger", str(led)]) == 0
    assert _marginals(src, tmp_path / "m.json", led) == 0  # ρ = 0.05
    assert _tree(src, tmp_path / "t.csv", led, eps="1.9") == 3  # over what the marginals left
    assert _tree(src, tmp_path / "t.csv", led, eps="0.2", levels="state") == 0
    with open_ledger(led, readonly=True) as book:
        (row,) = book.datasets()
        assert [r.capability for r in book.releases(row.id)] == ["marginals", "tree"]
    # the ledger's own view of the file, with or without --capability marginals, is that dataset
    capsys.readouterr()
    assert main(["ledger", "show", str(src), "--capability", "marginals", "--ledger", str(led)]) == 0
    assert row.id in capsys.readouterr().out


def test_identity_is_the_same_whatever_is_counted(tmp_path):
    src = _parquet(_people(seed=2), tmp_path / "p.parquet")
    led = tmp_path / "l.sqlite3"
    assert _tree(src, tmp_path / "a.csv", led, levels="region") == 0
    assert _tree(src, tmp_path / "b.csv", led, levels="state,flag,region") == 0
    assert _stream(src, tmp_path / "c.csv", led, bucket="hour") == 0
    assert _stream(src, tmp_path / "d.csv", led, bucket="3600") == 0
    assert _marginals(src, tmp_path / "e.json", led, attrs="state") == 0
    with open_ledger(led, readonly=True) as book:
        (row,) = book.datasets()
        assert row.id == records_identity(src).sha256 and row.report()["releases"] == 5
    cli = identify("tree", str(src), RecordsSource(str(src), 10**9))
    assert cli == identify("stream", str(src), RecordsSource(str(src))) == identify("marginals", str(src))


def test_folder_csv_gzip_and_uploads(tmp_path):
    df = _people(seed=3)
    one = _parquet(df, tmp_path / "people.parquet")
    folder = tmp_path / "ds"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(one, folder / "sub" / "renamed.parquet")
    base = records_identity(one)
    assert records_identity(folder).sha256 == base.sha256  # the same file in a folder: the same records
    _parquet(df.iloc[:100], folder / "a.parquet")
    _parquet(df.iloc[100:], folder / "b.parquet")
    split = records_identity(folder).sha256
    shutil.copy(folder / "a.parquet", folder / "z.parquet")
    (folder / "a.parquet").unlink()
    assert records_identity(folder).sha256 == split != base.sha256  # file names, order: no; the files: yes
    # the same rows saved again (split in parts, shuffled, as CSV) are another dataset: said in identity's docstring
    two = tmp_path / "two"
    two.mkdir()
    _parquet(df.iloc[:150], two / "0.parquet")
    _parquet(df.iloc[150:], two / "1.parquet")
    assert records_identity(two).sha256 != base.sha256
    csv_path = tmp_path / "people.csv"
    df.to_csv(csv_path, index=False)
    (tmp_path / "people.csv.gz").write_bytes(gzip.compress(csv_path.read_bytes()))
    assert len({records_identity(tmp_path / "people.csv.gz").sha256, records_identity(csv_path).sha256,
                base.sha256}) == 3  # the bytes as stored: a gzip of the CSV, the CSV, the Parquet file
    # the page: the uploaded bytes give the CLI's dataset (Parquet, CSV, gzip CSV), named by the upload
    key = ("upload", "people.parquet", "digest")
    page = page_records_dataset(key, one.read_bytes())
    assert (page.sha256, page.capability, page.name) == (base.sha256, RECORDS, "upload:people.parquet")
    assert page_records_dataset("upload:x.csv.gz", (tmp_path / "people.csv.gz").read_bytes()).sha256 == \
        records_identity(tmp_path / "people.csv.gz").sha256
    assert page_dataset("marginals", ("upload", "people.csv", "d"), csv_path.read_bytes()).sha256 == \
        identify("marginals", str(csv_path)).sha256 == records_identity(csv_path).sha256


def test_records_digest_is_the_sorted_file_digests(tmp_path):
    (tmp_path / "a.csv").write_bytes(b"x,y\n1,2\n")
    want = b"dpviz-records/1\n" + hashlib.sha256(b"x,y\n1,2\n").hexdigest().encode() + b"\n"
    assert records_digest(tmp_path / "a.csv") == want
    with pytest.raises(InputError, match="bytes"):
        records_digest(tmp_path / "a.csv", max_bytes=3)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="without \\*.parquet"):
        records_identity(tmp_path / "empty")


def test_ledger_cli_records_errors_are_one_line(tmp_path, capsys):
    src = tmp_path / "p.csv"
    _people(seed=4).to_csv(src, index=False)
    led = tmp_path / "l.sqlite3"
    assert main(["ledger", "set-budget", str(src), "--epsilon", "1", "--count-column", "x", "--ledger", str(led)]) == 2
    assert "--count-column" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["ledger", "set-budget", str(tmp_path / "empty"), "--epsilon", "1", "--ledger", str(led)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "without *.parquet" in err


# identities of pre-counted inputs and samples, computed with the code before records were one dataset (76258ae)
PINNED = {
    ("tree", "tree_good.csv"): "978e10e0843b7dcbaef433508495a9dc1d4b9b0177d964265cc45e5f15d8d7c0",
    ("stream", "stream_good.csv"): "4138b2714ea52d1018b6b9cb143ff6db146eae4219ab29b6a93e2cf124abefef",
    ("graph", "sample:karate"): "6616485fbb8f65ad06fbee4d504cacc79ae975300b0e381e8a38d199bb9e76a0",
    ("histogram", "sample:education"): "8791e26950a80b5d3b3aec7d0882f0f987666706727f2077f5b86d829dfffde6",
    ("marginals", "sample:titanic"): "9b40f3af050040c176947e6272c9718047221192512027e650749df9ccaa2fe6",
}


@pytest.mark.parametrize("cap, spec", list(PINNED))
def test_pre_counted_identities_are_unchanged(cap, spec):
    path = spec if spec.startswith("sample:") else str(DATA / spec)
    ds = identify(cap, path, load_for_ledger(cap, path))
    assert (ds.capability, ds.sha256) == (cap, PINNED[(cap, spec)])


def test_set_budget_on_a_parquet_folder_binds_a_release_from_it(tmp_path, capsys):
    df = _people(seed=5)
    folder = tmp_path / "ds"
    folder.mkdir()
    _parquet(df.iloc[:120], folder / "part-0.parquet")
    _parquet(df.iloc[120:], folder / "part-1.parquet")
    led = tmp_path / "l.sqlite3"
    assert main(["ledger", "set-budget", str(folder), "--epsilon", "0.5", "--ledger", str(led)]) == 0
    assert "records: every release counted from this file's records" in capsys.readouterr().out
    assert _tree(src=folder, out=tmp_path / "t.csv", led=led, eps="0.6") == 3
    assert not (tmp_path / "t.csv").exists()
    assert _tree(src=folder, out=tmp_path / "t.csv", led=led, eps="0.5") == 0
    capsys.readouterr()
    assert main(["ledger", "show", str(folder), "--ledger", str(led)]) == 0
    out = capsys.readouterr().out
    assert f"records: {folder.resolve()}" in out and "tree" in out


def test_a_histogram_records_file_is_the_records_dataset_and_a_counts_file_its_own(tmp_path):
    """The histogram's hooks rule (counted_from_records): records are charged with the other capabilities'
    releases of the same file; a ``bin,count`` file keeps the histogram's own identity; samples are pinned."""
    from dpviz.histogram.io import load, read_bins

    src = tmp_path / "ages.csv"
    src.write_text("age\n23\n35\n35\n")
    data = load(str(src), structure_from_data=True)
    assert identify("histogram", str(src), data) == records_identity(src)
    counts = tmp_path / "ages.counts.csv"
    counts.write_text("bin,count\n[20, 30),1\n[30, 40),2\n")
    bins = tmp_path / "bins.json"
    bins.write_text('{"edges": [20, 30, 40]}')
    got = identify("histogram", str(counts), load(str(counts), bins=read_bins(bins)))
    assert got.capability == "histogram" and got != records_identity(counts)
    assert identify("histogram", "sample:education", None).sha256 == PINNED[("histogram", "sample:education")]