"""Hostile-but-fair command lines (issue 12): every case exits 2 with one line on stderr and writes nothing.

* ``--seed`` and the privacy budget for all four capabilities: a negative or non-integer seed is refused by
  argparse before any work; a release refuses a budget whose noise vanishes (ε above
  ``MAX_RELEASE_EPSILON``, ρ above ``MAX_RELEASE_RHO``); a simulation warns on one stderr line above that
  bound and refuses only above ``MAX_SIMULATION_EPSILON`` (variances underflow there).
* The marginals and graph commands: malformed files (ragged rows, NUL bytes, BOMs, deep JSON, huge numbers,
  stray quotes, comment-only files) and every size cap, each named with how to raise it.

Commands run in-process through :func:`dpviz.cli.main`, in a temporary working folder.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dpviz import cli
from dpviz.core import noise as core_noise

SIM = {
    "tree": ["tree", "simulate", "sample:county"],
    "stream": ["stream", "simulate", "sample:flights", "--mechanism", "fenwick"],
    "marginals": ["marginals", "simulate", "sample:titanic", "--workload", "1", "--mechanism", "rp"],
    "graph": ["graph", "simulate", "sample:karate", "--method", "drf-dp"],
}
REL = {
    "tree": ["tree", "release", "sample:county", "--output", "out.csv"],
    "stream": ["stream", "release", "sample:flights", "--mechanism", "fenwick", "--output", "out.csv"],
    "marginals": ["marginals", "release", "sample:titanic", "--workload", "1", "--mechanism", "rp", "--method", "mle",
                  "--output", "out.json"],
    "graph": ["graph", "release", "sample:karate", "--output", "out.csv"],
}
BUDGET = {"tree": ["--epsilon"], "stream": ["--epsilon"], "marginals": ["--delta", "1e-6", "--epsilon"],
          "graph": ["--epsilon"]}
CAPS = list(SIM)


def run(argv) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``python -m dpviz ARGV`` in-process (argparse errors exit via SystemExit)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """A fresh working folder (simulations may write their table there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def refused(work: Path, argv, *needles: str) -> str:
    """Run ``argv``: exit 2, exactly one stderr line ``dpviz: error: ...`` with every needle, no file written."""
    before = set(work.rglob("*"))
    rc, _, err = run(argv)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("dpviz: error: "), (argv, rc, err)
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert set(work.rglob("*")) == before, f"{argv} wrote {set(work.rglob('*')) - before}"
    return lines[0]


# ------------------------------------------------------------------------------------------- --seed


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("seed", ["-1", "-99999999999999999999", "1.5", "abc", ""])
def test_bad_seed_is_refused_before_any_work(work, cap, seed):
    argv = [*SIM[cap], *BUDGET[cap], "1", "--seed", seed]
    line = refused(work, argv, "--seed", "non-negative integer")
    assert seed in line


@pytest.mark.parametrize("cap", CAPS)
def test_release_takes_no_seed(work, cap):
    refused(work, [*REL[cap], *BUDGET[cap], "1", "--seed", "3"], "--seed", "takes no seed", f"{cap} simulate")


# ------------------------------------------------------------------------------------------- budget bound


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("epsilon", ["1e300", "31", "inf"])
def test_release_refuses_a_budget_whose_noise_vanishes(work, cap, epsilon):
    needle = "MAX_RELEASE_EPSILON = 30" if epsilon != "inf" else "epsilon: expected a positive finite number"
    refused(work, [*REL[cap], *BUDGET[cap], epsilon], needle)


@pytest.mark.parametrize("cap", ["tree", "stream", "marginals"])
def test_release_refuses_a_huge_rho(work, cap):
    argv = [a for a in REL[cap]] + ["--rho", "1e300"]
    if cap != "marginals":
        argv += ["--noise", "gaussian"]
    refused(work, argv, "MAX_RELEASE_RHO = 450")


@pytest.mark.parametrize("cap", CAPS)
def test_simulation_refuses_only_where_variances_underflow(work, cap):
    refused(work, [*SIM[cap], *BUDGET[cap], "1e300", "--seed", "1"], "MAX_SIMULATION_EPSILON", "underflow")


@pytest.mark.parametrize("cap", CAPS)
def test_simulation_above_the_release_bound_warns_on_one_line(work, cap):
    rc, out, err = run([*SIM[cap], *BUDGET[cap], "100", "--seed", "1"])
    lines = err.strip().splitlines()
    assert rc == 0, err
    assert len(lines) == 1 and lines[0].startswith("dpviz: warning: ε = 100 is above MAX_RELEASE_EPSILON = 30")
    assert "simulation" in out


def test_the_bound_in_core_is_exact_and_covers_every_budget_kind():
    from dpviz.core.budget import Budget
    from dpviz.core.modes import release_metadata
    from dpviz.core.noise import Noise, check_release_budget, check_simulation_budget, vanishing_noise_warning
    from dpviz.errors import InputError

    ok = [Budget.pure(30), Budget.approx(30, 1e-6), Budget.zcdp(450), Noise.laplace(1e-6, discrete=True),
          Budget.zcdp(5e-13)]
    too_much = [Budget.pure(30.000001), Budget.approx(31, 1e-6), Budget.zcdp(450.1), Noise.gaussian(1e5)]
    for b in ok:
        assert check_release_budget(b) is b and vanishing_noise_warning(b) is None
    for b in too_much:
        with pytest.raises(InputError, match="release refused: (ε|ρ) = .* is above MAX_RELEASE_"):
            check_release_budget(b)
        assert "negligible" in vanishing_noise_warning(b)
        assert check_simulation_budget(b) is b
    with pytest.raises(InputError, match="MAX_SIMULATION_EPSILON = 1e\\+06"):
        check_simulation_budget(Budget.pure(1.1e6))
    for low in (Budget.pure(0.99e-6), Budget.approx(1e-300, 1e-6), Budget.zcdp(4.9e-13), Noise.laplace(1e-9)):
        for check in (check_release_budget, check_simulation_budget):
            with pytest.raises(InputError, match="is below MIN_(EPSILON|RHO)"):
                check(low)
    with pytest.raises(InputError, match="MAX_RELEASE_EPSILON"):  # the metadata of every release checks it too
        release_metadata("graph", Noise.laplace(1e300, discrete=True), seeded=False, sensitivity=1.0)


def test_release_at_the_bound_is_accepted(work):
    rc, out, err = run([*REL["graph"], "--epsilon", str(core_noise.MAX_RELEASE_EPSILON)])
    assert rc == 0, err
    assert (work / "out.csv").exists() and (work / "out.csv.meta.json").exists()


def test_the_bound_is_stated_in_release_help():
    for cap in CAPS:
        rc, out, _ = run([*REL[cap][:2], "--help"])
        assert rc == 0 and "refuses ε > 30" in " ".join(out.split()), cap


# ------------------------------------------------------------------------------------------- marginals

MARGINALS_SIM = ["marginals", "simulate", None, "--workload", "1", "--mechanism", "rp", "--rho", "1", "--seed", "1"]
GOOD_CSV = b"a,b\nx,1\ny,2\nx,2\n"


def _marginals(path, *extra) -> list:
    return [path if a is None else a for a in MARGINALS_SIM] + list(extra)


MARGINALS_CSV_CASES = [
    ("ragged", b"a,b\nx,1\ny,2,6\n", (), ("line 3: 3 fields, more than the 2 columns",)),
    ("fewer", b"a,b\nx,1\ny\n", (), ("line 3: 1 fields, fewer than",)),
    ("nul", b"a,b\nx,1\ny\0,2\n", (), ("line 3: a NUL byte",)),
    ("utf16", "a,b\nx,1\ny,2\n".encode("utf-16"), (), ("NUL byte", "UTF-16")),
    ("two-boms-only", "\ufeff\ufeff".encode(), (), ("is empty",)),
    ("empty", b"", (), ("is empty",)),
    ("header-only", b"a,b\n", (), ("no data rows",)),
    ("bytes-cap", GOOD_CSV, ("--max-bytes", "10"), ("above the limit of 10 bytes", "--max-bytes N")),
    ("rows-cap", GOOD_CSV, ("--max-rows", "2"), ("more than 2 data rows", "--max-rows N")),
    ("columns-cap", GOOD_CSV, ("--max-columns", "1"), ("2 columns", "--attributes", "--max-columns N")),
    ("gzip-bomb", gzip.compress(b"a,b\n" + b"x,1\n" * 10_000), ("--max-bytes", "1000"),
     ("decompresses to more than 1,000 bytes", "--max-bytes N")),
    ("truncated-gzip", gzip.compress(GOOD_CSV)[:-6], (), ("gzip",)),
    ("unknown-attribute", GOOD_CSV, ("--attributes", "a,zz"), ("unknown column 'zz'",)),
    ("single-valued", b"a,b\nx,1\nx,2\n", (), ("single value",)),
    ("rows-cap-zero", GOOD_CSV, ("--max-rows", "0"), ("max_rows: expected a whole number",)),
    ("bytes-cap-negative", GOOD_CSV, ("--max-bytes", "-5"), ("max_bytes: expected a whole number",)),
]


@pytest.mark.parametrize("name,data,extra,needles", MARGINALS_CSV_CASES, ids=[c[0] for c in MARGINALS_CSV_CASES])
def test_marginals_csv_cases(work, name, data, extra, needles):
    path = work / f"{name}.csv"
    path.write_bytes(data)
    refused(work, _marginals(path, *extra), *needles)


def test_marginals_csv_with_two_boms_reads_its_header(work):
    path = work / "boms.csv"
    path.write_bytes("\ufeff\ufeff".encode() + GOOD_CSV)
    rc, out, err = run(_marginals(path))
    assert rc == 0, err
    assert "domain: 2 attributes, sizes 2×2" in out


WORKLOAD_CASES = [
    ("deep-json", "[" * 100_000 + "]" * 100_000, ("nested too deeply",)),
    ("huge-number", "[[1e400]]", ("too large",)),
    ("nan", "[[NaN]]", ("not a number",)),
    ("nul", "a\0,b\n", ("NUL byte",)),
    ("k0", "0", ("k = 0",)),
    ("unknown", "a,zz\n", ("unknown attribute 'zz'",)),
    ("not-a-list", '{"a": 1}', ("expected a JSON list",)),
]


@pytest.mark.parametrize("name,text,needles", WORKLOAD_CASES, ids=[c[0] for c in WORKLOAD_CASES])
def test_marginals_workload_cases(work, name, text, needles):
    data, wl = work / "data.csv", work / f"{name}.json"
    data.write_bytes(GOOD_CSV)
    wl.write_bytes(text.encode("utf-8"))
    argv = _marginals(data)
    argv[argv.index("--workload") + 1] = wl
    refused(work, argv, *needles)


MEAS_OK = '{"domain": {"a": 2}, "measurements": [{"attributes": ["a"], "values": [1, 2], "sigma": 1}], "workload": [["a"]]}'
MEAS_CASES = [
    ("deep", "[" * 100_000, (), ("nested too deeply",)),
    ("deep-object", '{"a":' * 100_000 + "1" + "}" * 100_000, (), ("nested too deeply",)),
    ("huge-size", MEAS_OK.replace('"a": 2', '"a": 1e400'), (), ("too large",)),
    ("nan", MEAS_OK.replace("[1, 2]", "[NaN, 2]"), (), ("NaN is not a number",)),
    ("digits", MEAS_OK.replace("[1, 2]", "[" + "9" * 5000 + ", 2]"), (), ("too many digits",)),
    ("list", "[1, 2]", (), ("expected a JSON object",)),
    ("empty", "", (), ("is empty",)),
    ("nul", MEAS_OK.replace("[1, 2]", "[1,\0 2]"), (), ("NUL byte",)),
    ("junk", "\xff\xfe garbage", (), ("not valid JSON",)),
    ("bytes-cap", MEAS_OK, ("--max-bytes", "20"), ("above the limit of 20 bytes", "--max-bytes N")),
    ("wrong-length", MEAS_OK.replace("[1, 2]", "[1, 2, 3]"), (), ("expected 2 values",)),
]


@pytest.mark.parametrize("name,text,extra,needles", MEAS_CASES, ids=[c[0] for c in MEAS_CASES])
def test_marginals_reconstruct_cases(work, name, text, extra, needles):
    path = work / f"{name}.json"
    path.write_bytes(text.encode("latin-1") if name == "junk" else text.encode("utf-8"))
    refused(work, ["marginals", "reconstruct", path, "--method", "mle", "--output", "rec.json", *extra], *needles)


def test_marginals_release_output_folder_must_exist(work):
    refused(work, [*REL["marginals"][:-1], "no/such/dir/o.json", "--rho", "1"], "does not exist")


# ------------------------------------------------------------------------------------------- graph

GRAPH_CASES = [
    ("nul", b"a\0,b\na,c\n", (), ("line 1: a NUL byte",)),
    ("utf16", "0,1\n1,2\n".encode("utf-16"), (), ("NUL byte",)),
    ("comment-only", b"#", (), ("is empty",)),
    ("comments-and-cr", b"# c\r% d\r", (), ("is empty",)),
    ("two-boms-only", "\ufeff\ufeff".encode(), (), ("is empty",)),
    ("open-quote", b'0,1\n"2,3\n', (), ("line 2: a quote", "never closed")),
    ("four-fields", b"0,1\n1,2,3,4\n", (), ("line 2: 4 fields",)),
    ("five-fields", b"0,1\n1,2,3,4,5\n", (), ("line 2: too many fields",)),
    ("missing-id", b"u,v\n0,1\n2,\n", (), ("line 3: expected two vertex ids",)),
    ("weight", b"0,1,heavy\n", (), ("line 1: third field 'heavy' is not a number",)),
    ("header-only", b"u,v\n", (), ("header but no edge",)),
    ("edges-cap", b"0,1\n1,2\n2,3\n3,4\n", ("--max-edges", "2"), ("above the edge cap", "--max-edges N")),
    ("bytes-cap", b"0,1\n1,2\n", ("--max-bytes", "4"), ("above the size cap", "--max-bytes N")),
    ("nodes-cap", b"0,1\n1,2\n2,3\n", ("--max-nodes", "3"), ("above the vertex cap", "--max-nodes N")),
    ("n-nodes", b"0,1\n1,5\n", ("--n-nodes", "3", "--max-nodes", "2"), ("--n-nodes", "above the vertex cap")),
    ("n-nodes-negative", b"0,1\n", ("--n-nodes", "-1"), ("--n-nodes",)),
    ("split", b"0,1\n", ("--budget-split", "1:0:1"), ("--budget-split",)),
    ("gzip-bomb", gzip.compress(b"0,1\n" * 100_000), ("--max-bytes", "5000"), ("decompresses to more than 5,000",)),
]


@pytest.mark.parametrize("verb", ["simulate", "release"])
@pytest.mark.parametrize("name,data,extra,needles", GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
def test_graph_cases(work, verb, name, data, extra, needles):
    path = work / f"{name}.csv"
    path.write_bytes(data)
    tail = (["--method", "drf-dp", "--seed", "1"] if verb == "simulate" else
            ["--output", "o.csv", *([] if "--n-nodes" in extra else ["--structure-from-data"])])
    refused(work, ["graph", verb, path, "--epsilon", "1", *tail, *extra], *needles)


def test_graph_release_refuses_published_drf_and_a_missing_folder(work):
    refused(work, [*REL["graph"], "--epsilon", "1", "--method", "drf"], "refused in release")
    refused(work, ["graph", "release", "sample:karate", "--epsilon", "1", "--output", "no/such/o.csv"],
            "does not exist")


def test_graph_hostile_but_valid_files_load(work):
    path = work / "ok.csv"
    path.write_bytes("\ufeff\ufeff".encode() + b"# comment\r0,1\r\n% other\r1,2\r#")
    rc, out, err = run(["graph", "simulate", path, "--epsilon", "1", "--method", "drf-dp", "--seed", "1"])
    assert rc == 0, err
    assert "3 vertices, 2 edges" in out
