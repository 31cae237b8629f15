"""Issue 17, marginals: a release publishes a *declared* domain (``--domain DOMAIN.json``), never one read from
the records; ``--structure-from-data`` opts out and every output says so; ``describe-structure`` writes a
template; records outside the declaration are dropped, clamped or put in a catch-all, uncounted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from dpviz.core.modes import RELEASE_NOTICE
from dpviz.core.structure import DESCRIBE_NOTICE, STRUCTURE_FROM_DATA_NOTICE
from dpviz.errors import InputError
from dpviz.core.noise import Noise
from dpviz.marginals import release as mrelease
from dpviz.marginals.io import read_table
from dpviz.marginals.samples import load_titanic_sample
from dpviz.marginals.declared import EXAMPLE, parse_declaration, read_declaration, sample_declaration, template
from tests.cli_helpers import one_line_error, run_group

DATA = Path(__file__).parent / "data"
GOOD = DATA / "marginals_cli_good.csv"
GOOD_DOMAIN = DATA / "marginals_cli_good.domain.json"  # declares "purple", which no record holds
RHO = ["--rho", "0.5"]
RP = ["--mechanism", "rp", "--method", "mle"]


def run(argv, capsys):
    return run_group("marginals", argv, capsys)


def release(capsys, data, out, *extra, workload="1"):
    return run(["release", data, "--workload", workload, *RHO, *RP, "--output", out, *extra], capsys)


def _structure_of(out: Path) -> tuple:
    """Everything a release publishes except the noisy numbers and the clock: the public structure."""
    body = json.loads(out.read_text())
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    for key in ("created_utc",):
        meta.pop(key)
    return [(m["attributes"], len(m["values"])) for m in body["marginals"]], meta, sorted(body)


def _csv(path: Path, extra_rows: list[str] = ()) -> Path:
    path.write_text(GOOD.read_text() + "".join(r + "\n" for r in extra_rows))
    return path


# ---------------------------------------------------------------------------------------------- refusals


def test_a_release_without_a_domain_exits_2_and_says_what_to_pass(tmp_path, capsys):
    out = tmp_path / "o.json"
    rc, stdout, err = release(capsys, GOOD, out)
    one_line_error(rc, err, "--domain", "describe-structure", "--structure-from-data")
    assert stdout == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("extra", "needles"), [
    (["--domain", GOOD_DOMAIN, "--structure-from-data"], ["not both"]),
    (["--domain", GOOD_DOMAIN, "--bins", "3"], ["--bins", "--domain"]),
    (["--domain", GOOD_DOMAIN, "--binning", "width"], ["--binning"]),
    (["--domain", DATA / "nope.json"], ["--domain", "does not exist"]),
    (["--domain", DATA], ["--domain", "folder"]),
    (["--domain", GOOD_DOMAIN, "--attributes", "color,weight"], ["weight", "not declared"]),
])
def test_conflicting_or_missing_declarations_are_one_line(tmp_path, capsys, extra, needles):
    rc, stdout, err = release(capsys, GOOD, tmp_path / "o.json", *extra)
    one_line_error(rc, err, *needles)
    assert stdout == "" and list(tmp_path.iterdir()) == []


def test_a_sample_ships_its_declaration_and_refuses_the_opt_out(tmp_path, capsys):
    rc, stdout, err = release(capsys, "sample:titanic", tmp_path / "o.json")
    assert rc == 0, err
    meta = json.loads((tmp_path / "o.json.meta.json").read_text())
    assert meta["structure"]["source"] == "declared" and "sample:titanic" in meta["structure"]["declaration"]
    assert "titanic_passengers.domain.json" in stdout and STRUCTURE_FROM_DATA_NOTICE not in stdout
    rc, _, err = release(capsys, "sample:titanic", tmp_path / "p.json", "--structure-from-data")
    one_line_error(rc, err, "--structure-from-data", "ships")


def test_the_output_may_not_be_the_domain_file(tmp_path, capsys):
    dom = tmp_path / "domain.json"
    dom.write_bytes(GOOD_DOMAIN.read_bytes())
    rc, _, err = release(capsys, GOOD, dom, "--domain", dom)
    one_line_error(rc, err, "--output")
    assert dom.read_bytes() == GOOD_DOMAIN.read_bytes() and not Path(f"{dom}.meta.json").exists()


def test_a_fifo_as_domain_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "domain.fifo"
    os.mkfifo(fifo)
    rc, _, err = release(capsys, GOOD, tmp_path / "o.json", "--domain", fifo)
    one_line_error(rc, err, "--domain", "FIFO")


# ---------------------------------------------------------------------------------------------- what is published


def test_a_declared_category_absent_from_the_data_is_released_with_noise(tmp_path, capsys):
    out = tmp_path / "o.json"
    rc, _, err = release(capsys, GOOD, out, "--domain", GOOD_DOMAIN)
    assert rc == 0, err
    color = next(m for m in json.loads(out.read_text())["marginals"] if m["attributes"] == ["color"])
    assert len(color["values"]) == 4 and np.isfinite(color["values"]).all()  # blue, green, red, purple
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["categories"]["color"][-1] == "purple" and meta["domain"]["color"] == 4
    assert meta["bin_edges"]["age"] == [0.0, 30.0, 50.0, 70.0, 120.0]
    # the library, seeded: the purple cell holds noise, not an exact zero; its analytic variance is the others'
    data = read_table(GOOD, domain=read_declaration(GOOD_DOMAIN))
    assert data.marginal((0,))[3] == 0
    noise = Noise.gaussian(0.5, discrete=True)
    draws = [mrelease.release(data, noise, workload=[["color"]], rng=np.random.default_rng(s)).marginals[(0,)][3]
             for s in range(5)]
    assert len(set(draws)) > 1 and any(v != 0 for v in draws)


def test_records_outside_the_domain_change_no_published_structure(tmp_path, capsys):
    """One record per way of being outside (unknown color, age beyond the last edge, non-number age,
    unknown flag): the released attributes, cell counts and metadata are the same as without them, and the
    number dropped or clamped is not published anywhere."""
    outside = ["orange,M,30,no", "red,M,999,yes", "red,M,old,no", "red,M,30,maybe"]
    base, more = _csv(tmp_path / "base.csv"), _csv(tmp_path / "more.csv", outside)
    texts = []
    for name, src in (("a.json", base), ("b.json", more)):
        rc, stdout, err = release(capsys, src, tmp_path / name, "--domain", GOOD_DOMAIN, workload="2")
        assert rc == 0, err
        texts.append(stdout)
    a, b = _structure_of(tmp_path / "a.json"), _structure_of(tmp_path / "b.json")
    assert a == b
    strip = [[line for line in t.splitlines() if not line.startswith(("wrote", "analytic"))] for t in texts]
    assert strip[0] == strip[1]
    meta = (tmp_path / "b.json.meta.json").read_text()
    assert "dropped" not in meta.replace("were dropped", "") and "clamped\":" not in meta


def test_neighbours_with_a_unique_category_publish_identical_structure(tmp_path, capsys):
    """D and D + one record whose color is unique ("teal"): under the declared domain both releases have the
    same rows and columns; read from the data (the opt-out) the extra category is published."""
    d0, d1 = _csv(tmp_path / "d0.csv"), _csv(tmp_path / "d1.csv", ["teal,S,40,no"])
    for tag, extra in (("declared", ["--domain", GOOD_DOMAIN]), ("data", ["--structure-from-data"])):
        shapes = []
        for src in (d0, d1):
            out = tmp_path / f"{tag}-{src.stem}.json"
            rc, _, err = release(capsys, src, out, *extra)
            assert rc == 0, err
            shapes.append(_structure_of(out))
        if tag == "declared":
            assert shapes[0] == shapes[1]
        else:  # what the declaration prevents: the neighbour's unique category is in the release
            assert shapes[0][1]["categories"]["color"] != shapes[1][1]["categories"]["color"]
            assert "teal" in shapes[1][1]["categories"]["color"]


def test_the_opt_out_says_so_in_every_output(tmp_path, capsys):
    out = tmp_path / "o.json"
    rc, stdout, err = release(capsys, GOOD, out, "--structure-from-data")
    assert rc == 0, err
    assert stdout.splitlines()[0] == RELEASE_NOTICE and STRUCTURE_FROM_DATA_NOTICE in stdout
    body = json.loads(out.read_text())
    assert body["notice"] == STRUCTURE_FROM_DATA_NOTICE
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["structure"] == {"source": "data", "notice": STRUCTURE_FROM_DATA_NOTICE}
    assert STRUCTURE_FROM_DATA_NOTICE in meta["domain_note"]


# ---------------------------------------------------------------------------------------------- mapping rules


def test_drop_clamp_other_and_missing():
    decl = parse_declaration({"attributes": [
        {"name": "c", "categories": ["a", "b", "rest"], "other": "rest"},
        {"name": "x", "edges": [0, 10, 20], "outside": "clamp", "missing": True},
        {"name": "y", "edges": [0, 10, 20]},
        {"name": "n", "categories": ["1", "2", "(missing)"]},
    ]})
    csv = b"c,x,y,n\na,-5,5,1\nzz,25,20,2.0\nb,,10,NA\nb,5,21,1\nb,5,-1,1\nb,5,5,3\n"
    data = read_table(csv, domain=decl)
    # rows 4-6 dropped: y beyond the last edge, y below the first, n not declared (no catch-all)
    assert data.N == 3 and data.domain.sizes == (3, 3, 2, 3)
    np.testing.assert_array_equal(data.codes, [[0, 0, 0, 0], [2, 1, 1, 1], [1, 2, 1, 2]])
    assert data.categories[1] == ("[0, 10)", "[10, 20]", "(missing)")


NOISE = Noise.gaussian(1.0, discrete=True)


def test_every_record_outside_still_releases_the_declared_domain():
    decl = parse_declaration({"attributes": [{"name": "c", "categories": ["a", "b"]}]})
    data = read_table(b"c\nz\nz\n", domain=decl)
    assert data.N == 0 and data.domain.sizes == (2,)
    rel = mrelease.release(data, NOISE, workload=1, rng=np.random.default_rng(1))
    assert rel.marginals[(0,)].shape == (2,)


def test_a_release_recodes_a_dataset_by_a_declared_domain():
    """The library entry the page uses: ``release(data, noise, ..., domain=decl)``."""
    titanic = load_titanic_sample()
    decl = parse_declaration({"attributes": [{"name": "sex", "categories": ["female", "male", "other"]},
                                             {"name": "class", "categories": ["1st", "2nd", "3rd", "crew"]}]},
                             "mine.json")
    rel = mrelease.release(titanic, NOISE, workload=[["class", "sex"]], domain=decl, rng=np.random.default_rng(0))
    assert rel.domain.attrs == ("sex", "class") and rel.marginals[(0, 1)].shape == (12,)
    meta = rel.metadata()
    assert meta["structure"] == {"source": "declared", "declaration": "mine.json"}
    assert "notice" not in rel.as_json()
    assert mrelease.release(titanic, NOISE, workload=1, rng=np.random.default_rng(0)).structure.kind == "declared"
    upload = read_table(GOOD)
    assert mrelease.release(upload, NOISE, workload=1, rng=np.random.default_rng(0)).structure.kind == "data"


def test_the_shipped_declarations_are_valid_and_match_the_samples():
    for name, load in (("titanic", load_titanic_sample),):
        decl = sample_declaration(name)
        data = load()
        assert decl.domain == data.domain and decl.categories == data.categories
        assert data.structure.origin == decl.origin
    adult = sample_declaration("sample:adult")
    assert adult.domain.attrs[0] == "age" and adult.categories[0][0] == "[10, 20)"
    assert parse_declaration(EXAMPLE).domain.sizes == (2, 3, 6, 3)


# ---------------------------------------------------------------------------------------------- schema errors


@pytest.mark.parametrize(("obj", "needles"), [
    ([], ["JSON object"]),
    ({"attributes": []}, ["non-empty list"]),
    ({"attrs": []}, ["unknown field 'attrs'"]),
    ({"attributes": [{"name": "a", "categories": ["x", "y"], "catgories": []}]}, ["attribute 1 ('a')", "catgories"]),
    ({"attributes": [{"categories": ["x", "y"]}]}, ["attribute 1", '"name"']),
    ({"attributes": [{"name": "a"}]}, ["attribute 1 ('a')", "exactly one"]),
    ({"attributes": [{"name": "a", "categories": ["x"]}]}, ["'a'", "at least 2"]),
    ({"attributes": [{"name": "a", "categories": ["x", "x"]}]}, ["'x'", "twice"]),
    ({"attributes": [{"name": "a", "categories": ["x", ""]}]}, ["category 2", "(missing)"]),
    ({"attributes": [{"name": "a", "categories": ["x", 1.5]}]}, ["category 2"]),
    ({"attributes": [{"name": "a", "categories": ["x", "y"], "other": "z"}]}, ['"other"', "'z'"]),
    ({"attributes": [{"name": "a", "categories": ["x", "y"], "outside": "other"}]}, ['"other"', "catch-all"]),
    ({"attributes": [{"name": "a", "categories": ["x", "y"], "outside": "clamp"}]}, ["clamp", "edges"]),
    ({"attributes": [{"name": "a", "categories": ["x", "y"], "outside": "keep"}]}, ['"outside"', "'keep'"]),
    ({"attributes": [{"name": "b", "edges": [0, 1, 1]}]}, ["attribute 1 ('b')", "increase strictly", "entry 3"]),
    ({"attributes": [{"name": "b", "edges": [0, "1", 2]}]}, ["'b'", "entry 2"]),
    ({"attributes": [{"name": "b", "edges": [0, None, 2]}]}, ["'b'", "entry 2"]),
    ({"attributes": [{"name": "b", "edges": [0, 1]}]}, ["'b'", "at least 3 edges"]),
    ({"attributes": [{"name": "b", "edges": [0, 1, 2], "other": "x"}]}, ['"other"']),
    ({"attributes": [{"name": "b", "edges": [0, 1, 2], "missing": "yes"}]}, ['"missing"']),
    ({"attributes": [{"name": "a", "categories": ["x", "y"]}, {"name": "a", "categories": ["x", "y"]}]},
     ["attribute 2 ('a')", "twice"]),
])
def test_schema_errors_name_the_attribute_and_field(obj, needles):
    with pytest.raises(InputError) as exc:
        parse_declaration(obj, "d.json")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("d.json") and len(msg) < 400
    for n in needles:
        assert n in msg, (n, msg)


@pytest.mark.parametrize(("text", "needles"), [
    ("", ["empty"]),
    ("{", ["not valid JSON"]),
    ('{"attributes": [{"name": "b", "edges": [0, 1e999, 2]}]}', ["too large"]),
    ("[" * 100_000, ["nested too deeply"]),
])
def test_domain_file_errors_are_one_line(tmp_path, text, needles):
    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        read_declaration(path)
    assert "\n" not in str(exc.value) and all(n in str(exc.value) for n in needles)


# ---------------------------------------------------------------------------------------------- describe-structure


def test_describe_structure_writes_a_reviewable_template_that_round_trips(tmp_path, capsys):
    dom = tmp_path / "domain.json"
    rc, stdout, err = run(["describe-structure", GOOD, "--output", dom, "--bins", "4"], capsys)
    assert rc == 0, err
    assert stdout.splitlines()[0] == DESCRIBE_NOTICE
    obj = json.loads(dom.read_text())
    assert DESCRIBE_NOTICE in obj["description"]
    age = next(a for a in obj["attributes"] if a["name"] == "age")
    assert "edges" in age and age["outside"] == "drop"
    # the template, used as a declaration, codes the data exactly as the data-derived binning does
    from_data = read_table(GOOD, bins=4)
    declared = read_table(GOOD, domain=read_declaration(dom))
    assert declared.categories == from_data.categories
    np.testing.assert_array_equal(declared.codes, from_data.codes)
    assert template(from_data, "x")["attributes"] == obj["attributes"]
    # never over its input
    rc, _, err = run(["describe-structure", GOOD, "--output", GOOD], capsys)
    one_line_error(rc, err, "input")


def test_simulate_accepts_a_domain(capsys):
    rc, out, err = run(["simulate", GOOD, "--workload", "1", *RHO, "--mechanism", "rp", "--method", "mle",
                        "--seed", "1", "--domain", GOOD_DOMAIN], capsys)
    assert rc == 0, err
    assert "sizes 4×4×4×2" in out
