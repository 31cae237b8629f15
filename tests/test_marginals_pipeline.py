"""dpviz.marginals.release: simulate (every method on one draw), release (no truth); estimators.reconstruct (= dense pinv)."""

import json
import math
import re
from functools import reduce

import numpy as np
import pytest

from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.errors import InputError
from dpviz.core.noise import Noise
from dpviz.marginals import release as mrelease
from dpviz.marginals.estimators import reconstruct
from dpviz.marginals.samples import load_titanic_sample
from dpviz.marginals.model import Dataset, Domain, workload_cliques

EPS, DELTA = 1.0, 1e-9


@pytest.fixture(scope="module")
def titanic():
    return load_titanic_sample()


# ---- simulate ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("mechanism", "workload"), [("rp", 3), ("mwem", 2)])
def test_simulate_every_method_on_titanic(titanic, mechanism, workload):
    calls = []
    sim = mrelease.simulate(titanic, Noise.gaussian_approx(EPS, DELTA), mrelease.METHODS, 7, workload=workload,
                            mechanism=mechanism,
                            progress=lambda stage, done, total, *extra: calls.append((stage, done, total, extra)))
    stages = [c[0] for c in calls]
    assert "GReM-LNN" in stages and (mechanism == "mwem") == ("Scalable MWEM" in stages)
    lnn_calls = [c for c in calls if c[0] == "GReM-LNN"]
    assert all(len(c[3]) == 2 and np.isfinite(c[3]).all() for c in lnn_calls)  # dual objective, negative mass
    assert sim.notice == SIMULATION_NOTICE
    assert list(sim.results) == ["mle", "lnn", "trunc", "trunc-rescale"]
    assert sim.rho == pytest.approx(0.014973, rel=1e-4)  # the paper's CKS conversion of (1, 1e-9)
    assert math.fsum(line["rho"] for line in sim.budget_lines) == pytest.approx(sim.rho, abs=1e-12)
    table = sim.table()
    assert list(table["method"]) == list(sim.results)
    for col in ("l1", "l2", "negative_mass", "seconds"):
        assert np.isfinite(table[col]).all() and (table[col] >= 0).all(), col
    for r in sim.results.values():
        assert set(r.marginals) == set(sim.workload)
        assert r.l1 > 0 and r.l2 > 0
    lnn = sim.results["lnn"]
    assert min(float(m.min()) for m in lnn.marginals.values()) >= -1e-9
    assert lnn.negative_cells == 0 and lnn.negative_mass == 0
    assert sim.results["trunc"].negative_cells == 0
    mle = sim.results["mle"]
    assert mle.variance and all(v > 0 and np.isfinite(v) for v in mle.variance.values())
    assert np.isnan(table.loc[table.method == "lnn", "analytic_variance"]).all()
    # trunc-rescale keeps each MLE marginal's total
    for g in sim.workload:
        assert sim.results["trunc-rescale"].marginals[g].sum() == pytest.approx(mle.marginals[g].sum())
    if mechanism == "mwem":
        assert [c[1:3] for c in calls if c[0] == "Scalable MWEM"] == [(t, 6) for t in range(1, 7)]
        assert len(sim.selected) == len(sim.workload)  # T defaults to min(30, |W|) without repeats
        assert len(sim.budget_lines) == 2 * len(sim.selected) + 1


def test_simulate_is_reproducible_from_its_seed(titanic):
    a = mrelease.simulate(titanic, Noise.gaussian_approx(EPS, DELTA), ('mle',), 3, workload=2, mechanism='rp')
    b = mrelease.simulate(titanic, Noise.gaussian_approx(EPS, DELTA), 'mle', 3, workload=2, mechanism='rp')
    c = mrelease.simulate(titanic, Noise.gaussian_approx(EPS, DELTA), 'mle', 4, workload=2, mechanism='rp')
    g = a.workload[0]
    np.testing.assert_array_equal(a.results["mle"].marginals[g], b.results["mle"].marginals[g])
    assert not np.array_equal(a.results["mle"].marginals[g], c.results["mle"].marginals[g])


def test_mle_error_matches_the_analytic_variance(titanic):
    """ResidualPlanner measures every residual of 𝒲↓, so the MLE is unbiased with the analytic per-cell variance:
    the empirical mean squared error over 60 draws is within 15 % of it."""
    sq, var = [], []
    for seed in range(60):
        sim = mrelease.simulate(titanic, Noise.gaussian(0.01), 'mle', seed, workload=3, mechanism='rp')
        r = sim.results["mle"]
        for g in sim.workload:
            sq.append((r.marginals[g] - sim.truth[g]) ** 2)
            var.append(np.full(sim.truth[g].size, r.variance[g]))
    ratio = np.concatenate(sq).mean() / np.concatenate(var).mean()
    assert 0.85 < ratio < 1.15, ratio


def test_norms_and_bad_arguments(titanic):
    by_cell = mrelease.simulate(titanic, Noise.gaussian(0.1), 'mle', 1, workload=2, mechanism='rp')
    by_n = mrelease.simulate(titanic, Noise.gaussian(0.1), 'mle', 1, workload=2, mechanism='rp', norm='N')
    raw = mrelease.simulate(titanic, Noise.gaussian(0.1), 'mle', 1, workload=2, mechanism='rp', norm='none')
    est, truth = by_cell.results["mle"].marginals, by_cell.truth
    l1 = [np.abs(est[g] - truth[g]).sum() for g in by_cell.workload]
    l2 = [np.linalg.norm(est[g] - truth[g]) for g in by_cell.workload]
    n = [truth[g].size for g in by_cell.workload]
    assert by_cell.results["mle"].l1 == pytest.approx(np.mean(np.divide(l1, n)))
    assert by_cell.results["mle"].l2 == pytest.approx(np.mean(np.divide(l2, n)))
    assert by_n.results["mle"].l1 == pytest.approx(np.mean(l1) / titanic.N)
    assert raw.results["mle"].l2 == pytest.approx(np.mean(l2))
    with pytest.raises(InputError, match="method"):
        mrelease.simulate(titanic, Noise.gaussian(0.1), ('mle', 'pgm'), 1, workload=2)
    with pytest.raises(InputError, match="mechanism"):
        mrelease.simulate(titanic, Noise.gaussian(0.1), mrelease.METHODS, 1, workload=2, mechanism='aim')
    with pytest.raises(InputError, match="rho"):
        mrelease.simulate(titanic, Noise.from_params('gaussian', epsilon=1, delta=1e-09, rho=0.1), mrelease.METHODS, 1, workload=2)
    with pytest.raises(InputError, match="delta"):
        mrelease.simulate(titanic, Noise.from_params('gaussian', epsilon=1), mrelease.METHODS, 1, workload=2)
    with pytest.raises(InputError, match="unknown attribute"):
        mrelease.simulate(titanic, Noise.gaussian(0.1), mrelease.METHODS, 1, workload=[['class', 'nope']])


# ---- release -------------------------------------------------------------------------------------------------------
def _numbers(text: str) -> set[float]:
    return {float(t) for t in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)}


@pytest.mark.parametrize(("mechanism", "method"), [("rp", "mle"), ("rp", "lnn"), ("mwem", "mle"), ("mwem", "lnn")])
def test_release_holds_no_truth(titanic, mechanism, method):
    wl = [["class", "sex"], ["class", "age_group"], ["sex", "survived"], ["class", "sex", "survived"]]
    rels = [mrelease.release(titanic, Noise.gaussian_approx(EPS, DELTA, discrete=True), workload=wl, mechanism=mechanism,
                             method=method, lnn_options={'rounds': 400}) for _ in range(2)]
    truth = titanic.marginals(rels[0].workload)
    texts = []
    for rel in rels:
        assert not rel.seeded
        out = rel.as_json()
        meta = rel.metadata()
        assert [m["attributes"] for m in out["marginals"]] == [list(titanic.domain.names(g)) for g in rel.workload]
        for entry, g in zip(out["marginals"], rel.workload, strict=True):
            v = np.asarray(entry["values"])
            assert v.size == titanic.domain.size(g) and np.isfinite(v).all()
            assert not np.array_equal(v, truth[g])
            assert not np.allclose(v, truth[g], atol=1e-6)
            if method == "lnn":
                assert v.min() >= 0
        # no true total (N, the sum of every true marginal) anywhere in the output or its description
        assert float(titanic.N) not in _numbers(json.dumps(out))
        assert float(titanic.N) not in _numbers(json.dumps(meta, default=str))
        texts.append(json.dumps(out))
        # the budget: every sub-budget listed, summing to ρ; the noise explained
        assert abs(math.fsum(b["rho"] for b in meta["budget_breakdown"]) - rel.rho) <= 1e-12
        assert meta["noise"]["discrete"] is True and meta["mode"] == "release"
        assert "discrete Gaussian" in meta["noise_explanation"] and "OS CSPRNG" in meta["noise_explanation"]
        if mechanism == "rp":
            assert "post-processing" in meta["noise_explanation"] and "1/(2σ_τ²)" in meta["noise_explanation"]
            assert "not proven for discrete noise" in meta["noise_explanation"]
        else:
            assert len(meta["selected_marginals"]) == len(rel.workload)
        assert (method == "mle") == ("variance" in out["marginals"][0])
    assert texts[0] != texts[1]  # fresh noise every run


def test_release_rejects_simulation_only_choices(titanic):
    with pytest.raises(InputError, match="trunc"):
        mrelease.release(titanic, Noise.gaussian_approx(EPS, DELTA, discrete=True), workload=2, method='trunc')
    with pytest.raises(InputError, match="rng"):
        mrelease.release(titanic, Noise.gaussian_approx(EPS, DELTA, discrete=True), workload=2, rng=42)


def test_release_discrete_rp_charges_the_whole_marginal(titanic):
    """The release's ResidualPlanner σ_τ pay 1/(2σ_τ²) each (cost='marginal'), summing to ρ — larger σ_τ than the
    continuous accounting at the same ρ."""
    from dpviz.marginals.strategy import rp_sigmas

    rel = mrelease.release(titanic, Noise.gaussian(0.05, discrete=True), workload=2, mechanism='rp', method='mle',
                           rng=np.random.default_rng(0))
    assert rel.seeded
    s2 = rp_sigmas(titanic.domain, rel.workload, 0.05, cost="marginal")
    np.testing.assert_allclose(sorted(b["rho"] for b in rel.budget_lines), sorted(1 / (2 * v) for v in s2.values()))
    cont = rp_sigmas(titanic.domain, rel.workload, 0.05, cost="residual")
    assert all(s2[t] > cont[t] for t in s2 if t)


# ---- reconstruct ---------------------------------------------------------------------------------------------------
def _dense_m(domain: Domain, clique) -> np.ndarray:
    return reduce(np.kron, [np.eye(n) if k in clique else np.ones((1, n)) for k, n in enumerate(domain.sizes)])


def test_reconstruct_mle_equals_dense_weighted_pinv():
    dom = Domain(("a", "b", "c"), (2, 3, 2))
    rng = np.random.default_rng(0)
    p = rng.poisson(5, 12).astype(float)
    meas = [((), 2.0), ((0,), 1.0), ((0, 1), 1.5), ((0, 1), 3.0), ((1, 2), 0.5), ((1,), 0.7)]
    items, rows, ys = [], [], []
    for clique, sigma in meas:
        m = _dense_m(dom, clique)
        y = m @ p + sigma * rng.standard_normal(m.shape[0])
        items.append({"attributes": list(dom.names(clique)), "values": y.tolist(), "sigma": sigma})
        rows.append(m / sigma)
        ys.append(y / sigma)
    workload = [["a", "b"], ["c", "b"], ["a", "c"], []]
    out = reconstruct({"domain": dom.as_dict(), "measurements": items, "workload": workload}, "mle")
    p_hat = np.linalg.pinv(np.vstack(rows)) @ np.concatenate(ys)
    expect = {("a", "b"): (0, 1), ("b", "c"): (1, 2), ("a", "c"): (0, 2), (): ()}
    assert [tuple(m["attributes"]) for m in out["marginals"]] == list(expect)  # domain order, one per workload entry
    for m in out["marginals"]:
        np.testing.assert_allclose(m["values"], _dense_m(dom, expect[tuple(m["attributes"])]) @ p_hat, atol=1e-9)
    lnn = reconstruct({"domain": dom.as_dict(), "measurements": items, "workload": workload}, "lnn")
    for m in lnn["marginals"]:
        assert min(m["values"]) >= 0 and "variance" not in m


GOOD = {"domain": {"a": 2, "b": 3}, "measurements": [{"attributes": ["a"], "values": [1, 2], "sigma": 1}],
        "workload": [["a", "b"]]}


@pytest.mark.parametrize(("patch", "match"), [
    ({"sigma": float("nan")}, r"measurements\[0\]: sigma"),
    ({"sigma": float("inf")}, r"measurements\[0\]: sigma"),
    ({"sigma": -1}, r"measurements\[0\]: sigma"),
    ({"sigma": "1"}, r"measurements\[0\]: sigma"),
    ({"values": [1, 2, 3]}, r"measurements\[0\]: expected 2 values"),
    ({"values": [1, None]}, r"measurements\[0\]: values\[1\]"),
    ({"attributes": ["z"]}, "unknown attribute 'z'"),
    ({"attributes": ["a", "a"]}, "twice"),
])
def test_reconstruct_rejects_bad_measurements(patch, match):
    bad = dict(GOOD, measurements=[dict(GOOD["measurements"][0], **patch)])
    with pytest.raises(InputError, match=match):
        reconstruct(bad, "mle")


@pytest.mark.parametrize(("doc", "match"), [
    ([], "expected an object"),
    ({"domain": {"a": 2}}, "missing"),
    (dict(GOOD, domain={"a": 1, "b": 3}), "at least 2"),
    (dict(GOOD, domain={"a": 2.5, "b": 3}), "integer"),
    (dict(GOOD, measurements=[]), "non-empty"),
    (dict(GOOD, workload=[["a", "q"]]), r"workload\[0\]: unknown attribute"),
    (dict(GOOD, measurements=[{"attributes": ["a"], "values": [1, 2]}]), "missing \"sigma\""),
])
def test_reconstruct_rejects_malformed_documents(doc, match):
    with pytest.raises(InputError, match=match):
        reconstruct(doc, "mle")
    with pytest.raises(InputError, match="method"):
        reconstruct(GOOD, "trunc")


def test_reconstruct_names_the_index_and_expected_length():
    doc = json.loads(json.dumps(GOOD))
    doc["measurements"].append({"attributes": ["b", "a"], "values": [0] * 5, "sigma": 2})
    with pytest.raises(InputError, match=r"measurements\[1\]: expected 6 values"):
        reconstruct(doc, "mle")


def test_workload_cliques():
    dom = Domain(("a", "b", "c"), (2, 3, 4))
    assert workload_cliques(dom, 2) == [(0, 1), (0, 2), (1, 2)]
    assert workload_cliques(dom, [["c", "a"], ["a", "c"], [1]]) == [(0, 2), (1,)]
    with pytest.raises(InputError, match="cells"):
        big = Domain(("x", "y", "z"), (1000, 1000, 1000))
        workload_cliques(big, 3)
    data = Dataset(dom, np.zeros((3, 3), dtype=int))
    with pytest.raises(InputError):
        mrelease.simulate(data, Noise.gaussian(1.0), mrelease.METHODS, 0, workload=0)


# ---- the one release API (issue 18) ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("mechanism", "noise"), [("rp", Noise.gaussian(0.05, discrete=True)),
                                                  ("mwem", Noise.gaussian_approx(EPS, DELTA, discrete=True))])
def test_release_is_a_core_release(titanic, mechanism, noise):
    """values, budget (one ρ part per measurement / MWEM step, composing to ρ), table() and metadata()."""
    from dpviz.core.release import BudgetSplit, Release

    rel = mrelease.release(titanic, noise, workload=2, mechanism=mechanism, rng=np.random.default_rng(4))
    assert isinstance(rel, Release) and rel.capability == "marginals"
    np.testing.assert_array_equal(rel.values, np.concatenate([rel.marginals[g] for g in rel.workload]))
    split = rel.budget
    assert isinstance(split, BudgetSplit) and split.total == noise.budget
    assert [lab for lab, _ in split.parts] == [line["label"] for line in rel.budget_lines]
    assert [b.rho for _, b in split.parts] == [line["rho"] for line in rel.budget_lines]
    assert math.fsum(b.rho for _, b in split.parts) == pytest.approx(rel.rho, rel=1e-12)
    if mechanism == "mwem":
        assert len(split.parts) == 2 * len(rel.selected) + 1 and split.rho == rel.rho
    meta = rel.metadata()
    assert meta["capability"] == "marginals" and meta["budget_parts"] == split.as_dict()["parts"]
    assert meta["budget_breakdown"] == rel.budget_lines and meta["sensitivity"] == {"norm": "L2", "value": 1.0}
    table = rel.table()
    assert list(table.columns) == ["marginal", "cell", "released", "variance"]
    np.testing.assert_array_equal(table["released"].to_numpy(), rel.values)
    assert len(table) == rel.values.size and table["cell"].iloc[0].startswith(titanic.domain.attrs[0] + "=")


def test_release_table_is_the_pages_former_table(titanic):
    """table() is the CSV the page built from viz.marginals_long_table and the analytic variance, byte for byte."""
    from dpviz.viz.marginals import marginals_long_table

    for method in ("mle", "lnn"):
        rel = mrelease.release(titanic, Noise.gaussian(0.5, discrete=True), workload=[["class", "sex"], ["survived"]],
                               method=method, lnn_options={"rounds": 200}, rng=np.random.default_rng(2))
        old = marginals_long_table(rel.domain, {"released": rel.marginals}, rel.categories)
        if method == "mle":
            old["variance"] = np.concatenate([np.full(rel.domain.size(w), rel.variance[w]) for w in rel.workload])
        assert rel.table().to_csv(index=False) == old.to_csv(index=False)
        assert ("variance" in rel.table().columns) == (method == "mle")


def test_release_takes_discrete_gaussian_noise_and_refuses_others_before_any_work(titanic, monkeypatch):
    from dpviz.marginals import strategy

    def boom(*a, **k):
        raise AssertionError("measured before the noise was checked")

    monkeypatch.setattr(strategy, "measure", boom)
    for noise, match in [(Noise.gaussian(0.5), "discrete"), (Noise.laplace(1.0, discrete=True), "Gaussian"),
                         (Noise.gaussian(1e6, discrete=True), "release refused"), ("rho=0.5", "Noise")]:
        with pytest.raises(InputError, match=match):
            mrelease.release(titanic, noise, workload=2)


def test_simulate_takes_a_generator_or_a_seed(titanic):
    noise = Noise.gaussian(0.1)
    by_seed = mrelease.simulate(titanic, noise, "mle", 5, workload=2)
    by_gen = mrelease.simulate(titanic, noise, "mle", np.random.default_rng(5), workload=2)
    assert by_seed.seed == 5 and by_gen.seed is None
    for g in by_seed.workload:
        np.testing.assert_array_equal(by_seed.results["mle"].marginals[g], by_gen.results["mle"].marginals[g])
    assert isinstance(mrelease.simulate(titanic, noise, "mle", None, workload=2).seed, int)  # a fresh seed, shown
    with pytest.raises(InputError, match="rng"):
        mrelease.simulate(titanic, noise, "mle", "5", workload=2)
    assert math.fsum(b.rho for _, b in by_seed.budget.parts) == pytest.approx(0.1, rel=1e-12)


def test_simulate_with_discrete_noise_pays_the_release_charge(titanic):
    """The noise decides the mode: a discrete Noise simulates the release's ResidualPlanner (σ_τ from the
    conservative per-marginal charge), a continuous one the paper's residual accounting."""
    from dpviz.marginals.strategy import rp_sigmas

    disc = mrelease.simulate(titanic, Noise.gaussian(0.05, discrete=True), "mle", 1, workload=2)
    cont = mrelease.simulate(titanic, Noise.gaussian(0.05), "mle", 1, workload=2)
    for sim, cost in ((disc, "marginal"), (cont, "residual")):
        s2 = rp_sigmas(titanic.domain, sim.workload, 0.05, cost=cost)
        np.testing.assert_allclose([line["sigma"] for line in sim.budget_lines], [math.sqrt(v) for v in s2.values()])
    assert disc.results["mle"].mean_variance > cont.results["mle"].mean_variance


def test_lnn_settings_and_cell_labels():
    from dpviz.marginals.lnn import ETA, lnn_defaults, lnn_settings
    from dpviz.marginals.model import cell_labels, clique_label

    assert lnn_settings("mwem", {"rounds": 7, "step": None}) == {**lnn_defaults("mwem"), "rounds": 7}
    assert lnn_defaults("mwem")["eta"] == ETA and "eta" not in lnn_settings("rp", None)
    dom = Domain(("sex", "class"), (2, 3))
    assert clique_label(dom, (0, 1)) == "sex × class" and clique_label(dom, ()) == "total"
    assert cell_labels(dom, (0, 1), (("f", "m"), ("1", "2", "3")))[:4] == ["sex=f, class=1", "sex=f, class=2",
                                                                          "sex=f, class=3", "sex=m, class=1"]
    assert cell_labels(dom, (1,)) == ["class=0", "class=1", "class=2"] and cell_labels(dom, ()) == ["all"]
