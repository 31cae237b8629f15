"""dpviz.marginals.io and .samples: bundled samples, read_table (binning, errors, fuzzing), parse_workload, the
registry hooks (load, canonical_bytes)."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpviz.core.assets import asset
from dpviz.errors import InputError
from dpviz.marginals import io as mio
from dpviz.marginals import samples as msamples
from dpviz.marginals.binning import MISSING
from dpviz.marginals.io import parse_workload, read_table
from dpviz.marginals.samples import (
    ADULT_CSV,
    ADULT_DOMAIN_JSON,
    TITANIC_CSV,
    TITANIC_DOMAIN_JSON,
    load_adult_sample,
    load_titanic_sample,
)
from dpviz.marginals.model import Domain, all_kway

DATA = Path(__file__).parent / "data"

ADULT_SIZES = {"age": 9, "workclass": 9, "education": 16, "education_num": 16, "marital_status": 7,
               "occupation": 15, "relationship": 6, "race": 5, "sex": 2, "capital_gain": 5, "capital_loss": 5,
               "hours_per_week": 10, "native_country": 42, "income": 2}
TITANIC_SIZES = {"class": 3, "sex": 2, "age_group": 6, "survived": 2}


def csv_bytes(text: str) -> bytes:
    return text.encode("utf-8")


def raises(match: str):
    return pytest.raises(InputError, match=match)


# ------------------------------------------------------------------------------------------- samples


def test_adult_sample_rows_and_domain():
    ds = load_adult_sample()
    assert ds.name == "adult"
    assert ds.N == 48_842
    assert ds.domain.as_dict() == ADULT_SIZES
    cats = dict(zip(ds.domain.attrs, ds.categories, strict=True))
    assert cats["age"][0] == "[10, 20)" and cats["age"][-1] == "[90, 100)"
    assert cats["capital_gain"] == ("0", "[1, 3411)", "[3411, 7298)", "[7298, 13550)", "[13550, 99999]")
    assert cats["education"][0] == "Preschool" and cats["education"][-1] == "Doctorate"
    assert cats["education_num"] == tuple(str(k) for k in range(1, 17))
    assert cats["workclass"][-1] == MISSING and cats["native_country"][-1] == MISSING
    assert cats["income"] == ("<=50K", ">50K")
    k = ds.domain.attrs.index
    assert ds.marginal((k("income"),)).tolist() == [37_155, 11_687]
    assert ds.marginal((k("workclass"),))[-1] == 2_799  # UCI's '?'
    # education and education_num are the same variable: the 2-way marginal is diagonal.
    m = ds.marginal(ds.domain.clique(["education", "education_num"])).reshape(16, 16)
    assert np.count_nonzero(m - np.diag(np.diag(m))) == 0
    assert not ds.codes.flags.writeable


def test_titanic_sample_rows_and_domain():
    ds = load_titanic_sample()
    assert ds.name == "titanic"
    assert ds.N == 1_312
    assert ds.domain.as_dict() == TITANIC_SIZES
    assert ds.categories[2] == ("[0, 13)", "[13, 20)", "[20, 40)", "[40, 60)", "[60, 80)", MISSING)
    assert ds.marginal((0,)).tolist() == [322, 279, 711]
    assert ds.marginal((3,)).tolist() == [862, 450]
    assert ds.domain.size((0, 1, 2, 3)) == 72


def test_sample_loaders_return_fresh_datasets():
    a, b = load_titanic_sample(), load_titanic_sample()
    assert a is not b
    a.marginals([(0,)])
    assert b._cache == {}


def _asset_frame(name: str) -> pd.DataFrame:
    return pd.read_csv(asset(name), compression="gzip", dtype=str, keep_default_na=False)


@pytest.mark.parametrize("clique_names", [
    ("age",), ("native_country",), ("capital_gain", "capital_loss"), ("age", "sex", "income"),
    ("workclass", "occupation"), ("education", "hours_per_week", "race"),
])
def test_adult_marginals_match_pandas_groupby(clique_names):
    ds = load_adult_sample()
    df = _asset_frame(ADULT_CSV)
    clique = ds.domain.clique(clique_names)
    names = ds.domain.names(clique)
    cats = [ds.categories[k] for k in clique]
    counts = df.groupby(list(names)).size()
    full = counts.reindex(pd.MultiIndex.from_tuples(list(itertools.product(*cats))) if len(names) > 1
                          else pd.Index(cats[0]), fill_value=0)
    np.testing.assert_array_equal(ds.marginal(clique), full.to_numpy(dtype=float))
    assert full.sum() == 48_842


def test_read_table_on_the_bundled_csv_agrees_with_the_loader():
    ds = load_titanic_sample()
    again = read_table(asset(TITANIC_CSV).read_bytes())  # gzip bytes are accepted
    assert again.domain.attrs == ds.domain.attrs and again.N == ds.N
    for k, cats in enumerate(ds.categories):
        assert set(again.categories[k]) == set(cats)
        perm = [again.categories[k].index(c) for c in cats]
        np.testing.assert_array_equal(again.marginal((k,))[perm], ds.marginal((k,)))
    assert again.categories[2][-1] == MISSING


def _sources_rows() -> dict[str, tuple[str, str]]:
    text = asset("SOURCES.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*([\d,]+|-)\s*\|\s*[\d,]+\s*\|\s*`([0-9a-f]{64})`\s*\|", text, flags=re.MULTILINE)
    return {name: (n, sha) for name, n, sha in rows}


def test_sources_md_lists_the_marginals_assets():
    rows = _sources_rows()
    text = asset("SOURCES.md").read_text(encoding="utf-8")
    for name, domain_name, n in ((ADULT_CSV, ADULT_DOMAIN_JSON, 48_842), (TITANIC_CSV, TITANIC_DOMAIN_JSON, 1_312)):
        data = asset(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == rows[name][1]
        assert int(rows[name][0].replace(",", "")) == n
        assert gzip.decompress(data).count(b"\n") - 1 == n
        assert hashlib.sha256(asset(domain_name).read_bytes()).hexdigest() == rows[domain_name][1]
        assert json.loads(asset(domain_name).read_text(encoding="utf-8"))["rows"] == n
        assert f"## `{name}`" in text
        assert len(data) < 2_000_000
    assert "CC BY 4.0" in text and "public domain" in text


# ------------------------------------------------------------------------------------------ read_table


def test_read_table_categorical_and_numeric_columns():
    ds = read_table(DATA / "marginals_good.csv")
    assert ds.name == "marginals_good"
    assert ds.domain.attrs == ("age", "sex", "city", "score", "visits")
    cats = dict(zip(ds.domain.attrs, ds.categories, strict=True))
    assert cats["age"] == ("17", "23", "35", "51", "62")  # 5 values <= 10 bins: categorical, numeric order
    assert cats["sex"] == ("F", "M")
    assert cats["city"] == ("Austin", "Boston", MISSING)  # an empty field is missing, last
    assert cats["score"] == ("0.5", "1.5", "2.5", "3.5", "4.5", MISSING)  # NA is missing
    assert cats["visits"] == ("1", "2", "10")  # numeric, not text, order
    assert ds.marginal(ds.domain.clique(["city"])).tolist() == [2, 3, 1]
    np.testing.assert_array_equal(ds.codes[:, 0], [1, 2, 2, 3, 0, 4])


def test_read_table_attributes_pick_and_order():
    ds = read_table(DATA / "marginals_good.csv", attributes=["visits", "sex"], name="picked")
    assert ds.domain.attrs == ("visits", "sex") and ds.name == "picked"
    assert ds.codes[:, 1].tolist() == [0, 1, 0, 1, 0, 1]


def test_read_table_numbers_that_are_equal_share_a_category_and_delimiters():
    ds = read_table(csv_bytes("x;y\n1;a\n1.0;b\n2;a\n"))
    assert ds.categories == (("1", "2"), ("a", "b"))
    assert ds.codes[:, 0].tolist() == [0, 0, 1]
    ds = read_table(csv_bytes("x\ty\n1\ta\n2\tb\n"))
    assert ds.domain.attrs == ("x", "y")


def test_quantile_bins_equal_frequency_and_labels():
    values = np.arange(100)
    ds = read_table(csv_bytes("v,g\n" + "".join(f"{v},{v % 2}\n" for v in values)), bins=4)
    assert ds.categories[0] == ("[0, 25)", "[25, 50)", "[50, 75)", "[75, 99]")
    assert ds.marginal((0,)).tolist() == [25, 25, 25, 25]


def test_quantile_bins_keep_ties_together():
    # 90 zeros then 1..20: the zeros get a bin of their own, the rest is split evenly, no tie is split.
    vals = [0] * 90 + list(range(1, 21))
    ds = read_table(csv_bytes("v,g\n" + "".join(f"{v},{i % 2}\n" for i, v in enumerate(vals))), bins=5)
    cats = ds.categories[0]
    assert cats[0] == "[0, 1)"
    m = ds.marginal((0,))
    assert m[0] == 90 and m.sum() == 110 and len(cats) <= 5
    assert np.all(m[1:] >= 4) and np.all(m[1:] <= 6)
    # Every row of a value lands in one bin.
    codes = ds.codes[:, 0]
    for v in set(vals):
        assert len(set(codes[np.array(vals) == v])) == 1


def test_quantile_bins_one_dominant_value_at_the_top():
    vals = list(range(10)) + [10] * 1000  # 11 distinct > bins=10; the heavy value is the largest
    ds = read_table(csv_bytes("v,g\n" + "".join(f"{v},{i % 2}\n" for i, v in enumerate(vals))))
    assert ds.categories[0] == ("[0, 10)", "[10, 10]")
    assert ds.marginal((0,)).tolist() == [10, 1000]


def test_width_bins_equal_width_and_empty_bins_kept():
    vals = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100]
    ds = read_table(csv_bytes("v,g\n" + "".join(f"{v},{i % 2}\n" for i, v in enumerate(vals))), bins=4,
                    binning="width")
    assert ds.categories[0] == ("[0, 25)", "[25, 50)", "[50, 75)", "[75, 100]")
    assert ds.marginal((0,)).tolist() == [11, 0, 0, 1]
    ds = read_table(csv_bytes("v,g\n" + "".join(f"{v / 10},{i % 2}\n" for i, v in enumerate(range(17, 91)))),
                    bins=10, binning="width")
    assert ds.categories[0][:2] == ("[1.7, 2.43)", "[2.43, 3.16)") and ds.categories[0][-1] == "[8.27, 9]"


def test_binning_with_missing_values_and_per_column_bins():
    rows = [f"{v},{v * 3}" for v in range(30)] + ["nan,", "NaN,NA", ",7"]
    ds = read_table(csv_bytes("a,b\n" + "\n".join(rows) + "\n"), bins={"a": 3})
    a_cats, b_cats = ds.categories
    assert len(a_cats) == 4 and a_cats[-1] == MISSING
    assert ds.marginal((0,)).tolist() == [10, 10, 10, 3]
    assert len(b_cats) == 11 and b_cats[-1] == MISSING  # the default 10 bins for columns not named


def test_constant_and_empty_columns_are_refused():
    with raises(r"column 'country' has a single value 'US'; drop it"):
        read_table(DATA / "marginals_bad_single_value.csv")
    with raises(r"column 'x' has a single value '5'; drop it"):
        read_table(csv_bytes("x,y\n5,a\n5.0,b\n"))
    with raises(r"column 'x' is empty \(every value is missing\); drop it"):
        read_table(csv_bytes("x,y\n,a\nNA,b\n"))
    ds = read_table(csv_bytes("x,y\n5,a\n,b\n"))  # one value plus missing: two categories
    assert ds.categories[0] == ("5", MISSING)


def test_read_table_gzip_and_path_as_str(tmp_path):
    raw = (DATA / "marginals_good.csv").read_bytes()
    p = tmp_path / "good.csv.gz"
    p.write_bytes(gzip.compress(raw))
    ds = read_table(str(p))
    assert ds.name == "good" and ds.N == 6


# ------------------------------------------------------------------------------------------ errors


def test_error_empty_file():
    with raises(r"'marginals_bad_empty.csv' is empty: expected a header line"):
        read_table(DATA / "marginals_bad_empty.csv")
    with raises(r"the upload is empty"):
        read_table(b"  \n\n ")


def test_error_header_only():
    with raises(r"'marginals_bad_header_only.csv' has a header line but no data rows"):
        read_table(DATA / "marginals_bad_header_only.csv")
    with raises(r"has a header line but no data rows"):
        read_table(b"a,b\n\n\n")


def test_error_ragged_rows_name_the_line():
    with raises(r"'marginals_bad_ragged.csv', line 4: 4 fields, more than the 3 columns of the header"):
        read_table(DATA / "marginals_bad_ragged.csv")
    with raises(r"line 3: 1 fields, fewer than the 2 columns"):
        read_table(b"a,b\n1,2\n3\n")
    with raises(r"line 5: 3 fields"):  # a quoted field spanning two lines counts both
        read_table(b'a,b\n1,"x\ny"\n2,z\n3,w,v\n')


def test_error_header_problems():
    with raises(r"line 1: column 'a' appears twice in the header"):
        read_table(b"a,b,a\n1,2,3\n")
    with raises(r"line 1: column 2 of the header has no name"):
        read_table(b"a,,c\n1,2,3\n")


def test_error_unknown_or_repeated_attributes():
    with raises(r"attributes: unknown column 'agee'; 'marginals_good.csv' has age, sex, city, score, visits"):
        read_table(DATA / "marginals_good.csv", attributes=["agee"])
    with raises(r"attributes: column 'age' is named twice"):
        read_table(DATA / "marginals_good.csv", attributes=["age", "sex", "age"])
    with raises(r"attributes: expected at least one column name"):
        read_table(DATA / "marginals_good.csv", attributes=[])


@pytest.mark.parametrize("bins", ["ten", 2.5, 1, 0, True, None])
def test_error_bins_not_a_whole_number(bins):
    with raises(r"bins: expected a whole number >= 2"):
        read_table(DATA / "marginals_good.csv", bins=bins)


def test_error_bins_for_bad_columns():
    with raises(r"bins for column 'age': expected a whole number >= 2, got 'x'"):
        read_table(DATA / "marginals_good.csv", bins={"age": "x"})
    with raises(r"bins: unknown column 'height'"):
        read_table(DATA / "marginals_good.csv", bins={"height": 3})
    with raises(r"column 'sex' is not numeric \(line 2: 'F'\); bins apply to numeric columns only"):
        read_table(DATA / "marginals_good.csv", bins={"sex": 3})
    with raises(r"binning: expected 'quantile' or 'width', got 'equal'"):
        read_table(DATA / "marginals_good.csv", binning="equal")


def test_error_size_caps_are_checked_before_parsing(tmp_path):
    # A ragged row on line 3: the size cap must fire first (before any parsing).
    p = tmp_path / "big.csv"
    p.write_bytes(b"a,b\n1,2\n3,4,5\n" + b"1,2\n" * 1000)
    with raises(r"'big.csv' is 4,014 bytes, above the limit of 1,000 bytes"):
        read_table(p, max_bytes=1000)
    with raises(r"the upload is 4,014 bytes, above the limit of 1,000 bytes"):
        read_table(p.read_bytes(), max_bytes=1000)
    # The row cap stops reading at row max_rows + 1, before the ragged row further down.
    q = tmp_path / "rows.csv"
    q.write_bytes(b"a,b\n" + b"1,2\n" * 50 + b"3,4,5\n")
    with raises(r"'rows.csv' has more than 10 data rows, above the limit"):
        read_table(q, max_rows=10)
    # A gzip file is capped on its decompressed size too (a zip bomb stops early).
    bomb = gzip.compress(b"a,b\n" + b"1,2\n" * 1_000_000)
    assert len(bomb) < 100_000
    with raises(r"decompresses to more than 100,000 bytes"):
        read_table(bomb, max_bytes=100_000)
    with raises(r"starts like a gzip file but cannot be decompressed"):
        read_table(b"\x1f\x8bnot really gzip")


def test_error_missing_file_and_folder(tmp_path):
    with raises(r"input file '.*nope.csv' does not exist"):
        read_table(tmp_path / "nope.csv")
    with raises(r"is a folder; expected a file"):
        read_table(tmp_path)
    with raises(r"expected a file path or bytes, got int"):
        read_table(3)


# ------------------------------------------------------------------------------------------ workload

DOMAIN = Domain(("age", "sex", "city", "score", "visits"), (5, 2, 3, 6, 3))


def test_workload_k():
    assert parse_workload(2, DOMAIN) == all_kway(DOMAIN, 2)
    assert parse_workload("1", DOMAIN) == [(0,), (1,), (2,), (3,), (4,)]
    assert parse_workload(b" 3\n", DOMAIN) == all_kway(DOMAIN, 3)
    with raises(r"k = 6 must lie in 1..5"):
        parse_workload(6, DOMAIN)
    with raises(r"k = 0 must lie in 1..5"):
        parse_workload("0", DOMAIN)
    wide = Domain(tuple(f"a{i}" for i in range(40)), (2,) * 40)
    with raises(r"all 10-way marginals of 40 attributes are 847,660,528 marginals, above the limit of 100,000"):
        parse_workload(10, wide)


def test_workload_json_csv_and_lists_dedupe_in_order():
    expected = [(0, 1), (2,), (3, 4)]
    assert parse_workload(DATA / "marginals_workload.json", DOMAIN) == expected
    assert parse_workload(str(DATA / "marginals_workload.csv"), DOMAIN) == expected
    assert parse_workload((DATA / "marginals_workload.csv").read_bytes(), DOMAIN) == expected
    assert parse_workload('[["city"], ["age","sex"], ["city"]]', DOMAIN) == [(2,), (0, 1)]
    assert parse_workload("sex,age\ncity\nage , sex\n", DOMAIN) == [(0, 1), (2,)]
    assert parse_workload([["sex", "age"], ("city",), "score, visits", [0, 1]], DOMAIN) == expected


def test_workload_errors():
    with raises(r"workload line 2: unknown attribute 'town'; the domain has age, sex, city, score, visits"):
        parse_workload("age,sex\ntown\n", DOMAIN)
    with raises(r"workload entry 2: unknown attribute 'town'"):
        parse_workload('[["age"], ["town", "sex"]]', DOMAIN)
    with raises(r"workload entry 1: names no attribute"):
        parse_workload("[[]]", DOMAIN)
    with raises(r"workload entry 1: expected a list of attribute names, got 3"):
        parse_workload("[3]", DOMAIN)
    with raises(r"workload entry 1: True is not an attribute name"):
        parse_workload([[True]], DOMAIN)
    with raises(r"not valid JSON \(.* at line 1, column \d+\)"):
        parse_workload('[["age", ]', DOMAIN)
    with raises(r"expected a JSON list of attribute-name lists"):
        parse_workload(b'{"age": 1}', DOMAIN)
    with raises(r"workload file 'nope.csv' does not exist"):
        parse_workload("nope.csv", DOMAIN)
    with raises(r"workload: expected k, a list of attribute lists"):
        parse_workload(2.0, DOMAIN)


@pytest.mark.parametrize("source", ["", "  \n", "[]", "# only a comment\n\n", [], b""])
def test_workload_empty_is_refused(source):
    with raises(r"workload.* is empty|workload is empty"):
        parse_workload(source, DOMAIN)


def test_workload_marginal_above_the_memory_limit():
    big = Domain(("a", "b", "c", "d"), (1000, 1000, 100, 2))
    assert parse_workload("a,c", big) == [(0, 2)]
    with raises(r"workload line 2: the marginal a×b×c has 100,000,000 cells \(0\.8 GB as float64\), above the "
                r"limit of 50,000,000 cells"):
        parse_workload("a\na,b,c\n", big)
    with raises(r"workload \(all 3-way marginals\): the marginal a×b×c has 100,000,000 cells"):
        parse_workload(3, big)
    with raises(r"has 2,000 cells .* above the limit of 1,000 cells"):
        parse_workload([["a", "d"]], big, limit=1000)


def test_workload_file_size_cap(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("age\n" * 1000)
    with raises(r"'w.csv' is 4,000 bytes, above the limit of 100 bytes"):
        parse_workload(p, DOMAIN, max_bytes=100)


# ------------------------------------------------------------------------------------------ fuzzing

FUZZ = settings(max_examples=200, derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def _only_input_errors(data: bytes, **kwargs) -> None:
    try:
        ds = read_table(data, **kwargs)
    except InputError as exc:
        assert str(exc)
        return
    assert ds.N >= 1 and ds.codes.shape == (ds.N, ds.domain.d)
    assert all(len(c) == n for c, n in zip(ds.categories, ds.domain.sizes, strict=True))
    assert all(len(set(c)) == len(c) for c in ds.categories)


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_read_table_random_bytes(data):
    _only_input_errors(data)


_CELL = st.one_of(st.sampled_from(["", "NA", "nan", "a", "b", " c ", '"x,y"', "-0", "1e400", "1", "2.5", "?",
                                   "\r", '"', "é"]),
                  st.integers(-5, 30).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr))


@FUZZ
@given(st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(_CELL, min_size=n, max_size=n), max_size=25)),
       st.sampled_from([",", ";", "\t"]), st.integers(2, 5), st.sampled_from(["quantile", "width"]),
       st.booleans())
def test_fuzz_read_table_csv_like(rows, sep, bins, binning, gz):
    text = "\n".join(sep.join(r) for r in rows)
    data = text.encode("utf-8")
    _only_input_errors(gzip.compress(data) if gz else data, bins=bins, binning=binning)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list('agesx,\n[]"# 12')), max_size=60))
def test_fuzz_parse_workload_text(text):
    try:
        out = parse_workload(text.encode("utf-8"), DOMAIN)
    except InputError:
        return
    assert out and len(out) == len(set(out)) and all(g == tuple(sorted(g)) for g in out)


def test_module_exports():
    assert set(mio.__all__) >= {"read_table", "parse_workload", "load", "canonical_bytes"}
    assert set(msamples.__all__) >= {"load_adult_sample", "load_titanic_sample"}


@FUZZ
@given(st.lists(st.one_of(st.integers(-3, 40), st.floats(-1e300, 1e300, allow_nan=False)), min_size=2, max_size=60),
       st.integers(2, 8), st.sampled_from(["quantile", "width"]))
def test_fuzz_binning_invariants(values, bins, binning):
    text = "v,g\n" + "".join(f"{v!r},{i % 2}\n" for i, v in enumerate(values))
    try:
        ds = read_table(text.encode(), bins=bins, binning=binning)
    except InputError as exc:
        assert "single value" in str(exc) or "too small a range" in str(exc)
        return
    codes, cats = ds.codes[:, 0], ds.categories[0]
    floats = np.array([float(v) for v in values])
    assert len(set(cats)) == len(cats)
    for v in set(floats.tolist()):  # equal values share a category
        assert len(set(codes[floats == v])) == 1
    if len(set(floats.tolist())) > bins:
        assert len(cats) <= bins if binning == "quantile" else len(cats) == bins
        order = np.argsort(floats, kind="stable")
        assert np.all(np.diff(codes[order]) >= 0)  # bins are ordered intervals
        if binning == "quantile":
            assert np.all(ds.marginal((0,)) > 0)


def test_skip_constant_leaves_single_valued_columns_out():
    raw = b"a,b,c\nx,1,k\ny,1,k\nx,1,k\n"
    with pytest.raises(InputError, match="single value"):
        read_table(raw)
    data = read_table(raw, skip_constant=True)
    assert data.domain.attrs == ("a",) and data.domain.sizes == (2,)
    with pytest.raises(InputError, match="every column has a single value"):
        read_table(b"a,b\n1,2\n1,2\n", skip_constant=True)


# ------------------------------------------------------------------------------------------- registry hooks

# SHA-256 of the ledger's canonical form ("dpviz-ledger/1 marginals" line + the hook's bytes), computed with
# dpviz.ledger.identity BEFORE the marginals branch moved into dpviz.marginals.io: ledger identities must not change.
PINNED_MARGINALS = {
    "sample:titanic": "9b40f3af050040c176947e6272c9718047221192512027e650749df9ccaa2fe6",
    "sample:adult": "f7cb24bc41579c04c83d200f75c6c4e435b525605d0f9a23aa91060c59dc5b67",
    "semicolons": "94e6173410cd2f8b10781a6d16b438da8148124a7ca49f40f57a948831ea34be",
    "gzip": "3be2a6820fa5d0a932605f6074f2334a8953c803241fd6e4f46f0c3dcd263e10",
}
FILES = {"semicolons": "\ufeffsex;age;name\nM; 3;é\nF,x;4;z\nM; 3;é\n".encode("utf-8"),
         "gzip": gzip.compress(b"b,a\n1,2\n\n3,\"4,5\"\n")}


@pytest.mark.parametrize("key", list(PINNED_MARGINALS))
def test_canonical_bytes_hook_pins_the_ledger_identity(key, tmp_path):
    from dpviz.core.registry import capability

    cap = capability("marginals")
    spec = key
    if key in FILES:
        spec = tmp_path / f"{key}.csv"
        spec.write_bytes(FILES[key])
    data = cap.hook("load")(str(spec))
    body = cap.hook("canonical_bytes")(str(spec), data)
    assert hashlib.sha256(b"dpviz-ledger/1 marginals\n" + body).hexdigest() == PINNED_MARGINALS[key]


def test_canonical_bytes_is_before_projection_and_binning(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("b,a,c\n1,x,5\n2,y,5\n")
    one = mio.canonical_bytes(str(path), mio.load(str(path), attributes=["a"]))
    assert one == mio.canonical_bytes(str(path), mio.load(str(path), bins=2, skip_constant=True))
    assert one == b'["a", "b", "c"]\n["x","1","5"]\n["y","2","5"]\n'
    full = mio.canonical_bytes("sample:titanic", None)  # a sample is reloaded in full, whatever was passed
    assert full == mio.canonical_bytes("sample:titanic", mio.load("sample:titanic"))
    assert full.startswith(b'["age_group", "class", "sex", "survived"]\n')


def test_load_hook_reads_samples_and_files(tmp_path):
    assert mio.load("sample:titanic").N == 1312
    path = tmp_path / "t.csv"
    path.write_text("a,b\nx,1\ny,2\n")
    assert mio.load(str(path), attributes=["a"]).domain.attrs == ("a",)
    with raises("does not exist"):
        mio.load(str(tmp_path / "missing.csv"))


def test_canonical_bytes_lines_are_compact_json_of_the_records(tmp_path):
    """Quotes, backslashes, tabs and non-ASCII values: each record line is json.dumps(values, ensure_ascii=False,
    separators=(",", ":")) in sorted column order, lines sorted (the ledger's definition)."""
    from dpviz.core.canonical import json_lines

    path = tmp_path / "q.csv"
    path.write_text('b,a\n"x""y",\\\\\n"t\tz",é\n"x""y",\\\\\n', encoding="utf-8")
    rows = [['\\\\', 'x"y'], ["é", "t\tz"], ['\\\\', 'x"y']]
    assert mio.canonical_bytes(str(path)) == b'["a", "b"]\n' + json_lines(rows)
