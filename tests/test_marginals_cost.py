"""dpviz.marginals.cost: the page's estimate of a simulation's seconds (live below LIVE_SECONDS)."""

from dpviz.marginals.cost import LIVE_SECONDS, describe_seconds, estimate_simulation
from dpviz.marginals.samples import load_adult_sample, load_titanic_sample
from dpviz.marginals.model import all_kway
from dpviz.marginals.release import METHODS


def _cost(ds, k, mechanism="rp", methods=METHODS, **kw):
    wl = all_kway(ds.domain, k)
    return estimate_simulation(ds.domain, wl, ds.N, mechanism=mechanism, rounds=min(30, len(wl)), methods=methods,
                               lnn_rounds=kw.pop("lnn_rounds", 4000), **kw)


def test_small_samples_are_live_heavy_lnn_is_not():
    titanic, adult = load_titanic_sample(), load_adult_sample()
    for mech in ("rp", "mwem"):
        assert _cost(titanic, 3, mech).live()  # the page's default: every method recomputed at every change
        assert _cost(adult, 1, mech).live()
    two_way = _cost(adult, 2)
    assert not two_way.live() and two_way.measure <= LIVE_SECONDS < two_way.lnn  # the fast methods stay live
    assert not _cost(adult, 3, methods=["mle"]).live()
    assert _cost(adult, 3, "mwem", methods=["mle"]).measure > _cost(adult, 3, "rp", methods=["mle"]).measure


def test_lnn_cost_follows_the_iterations():
    titanic = load_titanic_sample()
    assert _cost(titanic, 3, methods=["mle"]).lnn == 0 and _cost(titanic, 3, methods=["mle"]).lnn_iterations == 0
    typical, measured = _cost(titanic, 3), _cost(titanic, 3, lnn_iterations=4000)
    assert typical.lnn_iterations == 300 and measured.lnn_iterations == 4000
    assert measured.lnn > 10 * typical.lnn  # 108 cells: dense rounds, ~0.2 s for 4000 (still live)
    adult = load_adult_sample()
    assert not _cost(adult, 2, lnn_iterations=4000).live()
    assert _cost(titanic, 3, lnn_rounds=100).lnn_iterations == 100


def test_describe_seconds():
    assert [describe_seconds(x) for x in (0.2, 1.0, 4.2, 89, 95, 600, float("inf"))] == [
        "about 1 s", "about 1 s", "about 5 s", "about 89 s", "about 2 min", "about 10 min", "a long time"]
