"""dpviz.sweep: seeds, tasks, Monte-Carlo means against the analytic variances, sharded == in-process.

The cluster tests use one module-scoped ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``
(real worker processes, ~2 s to start).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpviz.errors import InputError
from dpviz.sweep import SweepSpec, plan_tasks, run, summarise, trial_seed, write_parquet
from dpviz.sweep.runner import open_client
from dpviz.sweep.spec import parse_epsilons
from dpviz.sweep.targets import prepare


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def _mean(df: pd.DataFrame, method: str, metric: str) -> tuple[float, float]:
    s = summarise(df)
    row = s[(s["method"] == method) & (s["metric"] == metric)].iloc[0]
    return float(row["mean"]), float(row["analytic"])


# ------------------------------------------------------------------------------------------ seeds & tasks
def test_trial_seed_is_the_spawned_child():
    spawned = np.random.SeedSequence(1234).spawn(3)[2].spawn(7)[5]
    direct = trial_seed(1234, 2, 5)
    assert np.array_equal(direct.generate_state(8), spawned.generate_state(8))
    assert not np.array_equal(trial_seed(1234, 2, 4).generate_state(8), direct.generate_state(8))
    assert not np.array_equal(trial_seed(1234, 1, 5).generate_state(8), direct.generate_state(8))


def test_plan_tasks_covers_every_trial_once():
    spec = SweepSpec("tree", "sample:county", (0.5, 1, 2), trials=23, batch=5, seed=9)
    tasks = plan_tasks(spec)
    assert len(tasks) == 3 * 5 and {t.size for t in tasks} == {5, 3}
    for i in range(3):
        trials = [j for t in tasks if t.eps_index == i for j in range(t.start, t.stop)]
        assert trials == list(range(23))
    assert {t.seed for t in tasks} == {9}
    with pytest.raises(InputError, match="resolve"):
        plan_tasks(SweepSpec("tree", "sample:county", (1,)))
    assert SweepSpec("tree", "sample:county", (1,)).resolved().seed is not None


@pytest.mark.parametrize("kwargs, message", [
    ({"capability": "trees"}, "unknown capability"),
    ({"epsilons": "0.1,x"}, "--epsilons"),
    ({"epsilons": "1,1"}, "each ε once"),
    ({"epsilons": (0.5, -1)}, "positive"),
    ({"epsilons": ""}, "at least one"),
    ({"trials": 0}, "--trials"),
    ({"trials": 2.5}, "--trials"),
    ({"batch": 0}, "--batch"),
    ({"seed": -1}, "--seed"),
    ({"delta": 2.0}, "--delta"),
    ({"methods": " , "}, "--methods"),
])
def test_spec_rejects_bad_input(kwargs, message):
    args = {"capability": "tree", "source": "sample:county", "epsilons": (1.0,), **kwargs}
    with pytest.raises(InputError, match=message):
        SweepSpec(**args)


@pytest.mark.parametrize("spec, message", [
    (SweepSpec("tree", "sample:county", (1,), methods="gmc,magic"), "unknown tree method 'magic'"),
    (SweepSpec("tree", "sample:county", (1,), options={"horizon": 3}), "unknown option 'horizon'"),
    (SweepSpec("tree", "sample:nope", (1,)), "unknown sample"),
    (SweepSpec("tree", "/no/such/tree.csv", (1,)), "does not exist"),
    (SweepSpec("stream", "sample:flights", (1,), methods="sqrt"), "laplace noise"),
    (SweepSpec("stream", [1, 2, 3], (1,), options={"horizon": 2}), "shorter"),
    (SweepSpec("marginals", "sample:titanic", (1,)), "--delta"),
    (SweepSpec("graph", "sample:karate", (1,), delta=1e-6), "pure ε"),
    (SweepSpec("graph", "sample:karate", (1,), options={"budget_split": "1:2"}), "--budget-split"),
])
def test_prepare_rejects_bad_data_methods_and_options(spec, message):
    with pytest.raises(InputError, match=message):
        prepare(spec)


def test_parse_epsilons():
    assert parse_epsilons("0.1, 0.5,1,2") == (0.1, 0.5, 1.0, 2.0)
    assert parse_epsilons([1, 2]) == (1.0, 2.0)
    assert parse_epsilons(3) == (3.0,)


# ------------------------------------------------------------------------------------------ tidy table
def test_tree_table_is_tidy_and_independent_of_batching():
    spec = SweepSpec("tree", "sample:county", (0.5, 2), trials=6, methods="gmc,boosting,processless", seed=3,
                     batch=4, options={"queries": 500})
    df = run(spec)
    assert list(df.columns) == ["epsilon", "trial", "method", "metric", "value", "analytic"]
    assert len(df) == 2 * 6 * 3 * 5
    assert list(df["method"].cat.categories) == ["gmc", "boosting", "processless"]
    counts = df.groupby(["epsilon", "trial", "method", "metric"], observed=True).size()
    assert (counts == 1).all() and len(counts) == len(df)
    assert df.attrs["sweep"]["seed"] == 3 and df.attrs["sweep"]["source"] == "sample:county"
    # analytic only where a closed form exists: GLS and processless total_sq_error; never Boosting
    sq = df[df["metric"] == "total_sq_error"]
    assert sq[sq["method"] != "boosting"]["analytic"].notna().all()
    assert sq[sq["method"] == "boosting"]["analytic"].isna().all()
    assert df[df["metric"] != "total_sq_error"]["analytic"].isna().all()
    # the same seeds in other batches give the same numbers
    pd.testing.assert_frame_equal(df, run(SweepSpec(**{**spec.__dict__, "batch": 1})), check_like=False)
    # a different seed gives different numbers
    other = run(SweepSpec(**{**spec.__dict__, "seed": 4}))
    assert not np.array_equal(other["value"].to_numpy(), df["value"].to_numpy())


def test_progress_is_reported_per_task():
    seen = []
    run(SweepSpec("stream", "sample:flights", (1, 2), trials=5, batch=2, seed=1, methods="naive"),
        progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, 6) for k in range(1, 7)]


# ------------------------------------------------------------------- Monte-Carlo mean vs analytic variance
def test_tree_gmc_monte_carlo_matches_theorem5():
    df = run(SweepSpec("tree", "sample:county", (1.0,), trials=60, methods="gmc,processless", seed=11,
                       options={"queries": 200}))
    for method in ("gmc", "processless"):
        mean, analytic = _mean(df, method, "total_sq_error")
        assert abs(mean / analytic - 1) < 0.10, (method, mean, analytic)
    # Theorem 5: Σ Var = m σ² for GMC, n σ² without post-processing; σ² = 2 (h/ε)² for Lap(h/ε)
    t = prepare(SweepSpec("tree", "sample:county", (1,))).data.tree
    assert _mean(df, "gmc", "total_sq_error")[1] == pytest.approx(t.m * 2 * t.h**2)
    assert _mean(df, "processless", "total_sq_error")[1] == pytest.approx(t.n * 2 * t.h**2)


def test_tree_gaussian_geometric_monte_carlo_matches_analytic():
    df = run(SweepSpec("tree", "sample:county", (0.5,), trials=40, methods="gmc", seed=2, delta=1e-6,
                       options={"split": "geometric", "queries": 100}))
    mean, analytic = _mean(df, "gmc", "total_sq_error")
    assert abs(mean / analytic - 1) < 0.10


@pytest.mark.parametrize("methods, delta", [("naive,fenwick-fda,honaker", None), ("sqrt,fenwick-fda", 1e-6)])
def test_stream_monte_carlo_matches_per_step_variance(methods, delta):
    df = run(SweepSpec("stream", "sample:flights", (0.5,), trials=400, methods=methods, delta=delta, seed=5))
    for method in methods.split(","):
        mean, analytic = _mean(df, method, "mse")
        assert abs(mean / analytic - 1) < 0.10, (method, mean, analytic)
        final, final_analytic = _mean(df, method, "final_sq_error")
        assert final_analytic > 0 and abs(final / final_analytic - 1) < 0.25


def test_marginals_mle_monte_carlo_matches_analytic_cell_variance():
    df = run(SweepSpec("marginals", "sample:titanic", (1.0,), trials=30, methods="mle,trunc", delta=1e-9, seed=8))
    mean, analytic = _mean(df, "mle", "cell_mse")
    assert math.isfinite(analytic) and abs(mean / analytic - 1) < 0.10
    assert math.isnan(_mean(df, "trunc", "cell_mse")[1])
    assert (df[(df["method"] == "trunc") & (df["metric"] == "negative_cells")]["value"] == 0).all()


def test_graph_sweep_scores_every_method_reproducibly():
    spec = SweepSpec("graph", "sample:karate", (1.0, 4.0), trials=2, methods="drf-dp,kdh", seed=6)
    df = run(spec)
    assert set(df["metric"].astype(str)) == {"n_edges_released", "edge_jaccard", "degree_kl", "rrdc", "cut_error",
                                             "clustering_rel_error", "modularity_rel_error", "eigen_top1_overlap"}
    assert len(df) == 2 * 2 * 2 * 8 and df["analytic"].isna().all()
    pd.testing.assert_frame_equal(df, run(spec))
    # a method's draw does not depend on which other methods run
    alone = run(SweepSpec("graph", "sample:karate", (1.0, 4.0), trials=2, methods="kdh", seed=6))
    both = df[df["method"] == "kdh"].reset_index(drop=True)
    assert np.array_equal(alone["value"].to_numpy(), both["value"].to_numpy())


# ------------------------------------------------------------------------------------------ on a cluster
def test_cluster_has_two_worker_processes(client):
    workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    pids = client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2 and __import__("os").getpid() not in pids.values()


@pytest.mark.parametrize("spec", [
    SweepSpec("tree", "sample:county", (0.1, 1.0), trials=12, batch=3, seed=21, options={"queries": 300}),
    SweepSpec("stream", "sample:flights", (0.5, 1.0, 2.0), trials=20, batch=7, seed=22),
    SweepSpec("stream", "sample:flights", (1.0,), trials=10, batch=4, seed=23, delta=1e-5),
], ids=["tree-all", "stream-laplace-all", "stream-gaussian-all"])
def test_sharded_equals_in_process(client, spec):
    seen = []
    sharded = run(spec, client=client, progress=lambda d, t: seen.append(d))
    local = run(spec)
    pd.testing.assert_frame_equal(sharded, local, check_exact=True)
    assert np.array_equal(sharded["value"].to_numpy(), local["value"].to_numpy(), equal_nan=True)
    assert sorted(seen) == list(range(1, len(plan_tasks(spec.resolved())) + 1))


def test_tasks_run_on_both_workers(client):
    spec = SweepSpec("tree", "sample:county", (1.0,), trials=16, batch=1, seed=1, methods="gmc",
                     options={"queries": 50})
    from distributed import get_task_stream

    with get_task_stream(client) as ts:
        run(spec, client=client)
    ran = [t for t in ts.data if str(t["key"]).startswith("dpviz-sweep-")]
    assert len(ran) == 16
    assert len({t["worker"] for t in ran}) == 2  # sharded over both worker processes


def test_a_worker_error_reaches_the_caller(client):
    class Broken:
        capability = "tree"
        methods = ("gmc",)
        name = "broken"

        def trial(self, epsilon, seed):
            raise InputError("boom on a worker")

    from dpviz.sweep.runner import _on_cluster

    with pytest.raises(InputError, match="boom on a worker"):
        _on_cluster(client, Broken(), plan_tasks(SweepSpec("tree", "x", (1,), trials=2, seed=1)), None)


def test_open_client_refuses_an_unreachable_scheduler():
    with pytest.raises(InputError, match="--scheduler: cannot connect"), open_client("tcp://127.0.0.1:9", timeout=1.0):
        pass


def test_open_client_refuses_a_bad_worker_count():
    with pytest.raises(InputError, match="--workers"), open_client(None, workers=0):
        pass


def test_open_client_uses_an_existing_scheduler(client):
    spec = SweepSpec("stream", "sample:flights", (1.0,), trials=4, seed=2, methods="naive")
    with open_client(client.scheduler.address) as other:
        df = run(spec, client=other)
    pd.testing.assert_frame_equal(df, run(spec))


# ------------------------------------------------------------------------------------------ summary & file
def test_summarise_mean_intervals_and_analytic():
    values = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    df = pd.DataFrame({"epsilon": 1.0, "trial": np.arange(5), "method": "m", "metric": "x", "value": values,
                       "analytic": 3.5})
    s = summarise(df)
    assert list(s.columns) == ["epsilon", "method", "metric", "trials", "mean", "std", "ci_low", "ci_high", "q025",
                               "q975", "analytic"]
    row = s.iloc[0]
    half = 2.7764451051977987 * values.std(ddof=1) / math.sqrt(5)  # t_{0.975, 4}
    assert row["trials"] == 5 and row["mean"] == pytest.approx(4.0)
    assert row["ci_low"] == pytest.approx(4.0 - half) and row["ci_high"] == pytest.approx(4.0 + half)
    assert row["q025"] == pytest.approx(np.quantile(values, 0.025))
    assert row["q975"] == pytest.approx(np.quantile(values, 0.975))
    assert row["analytic"] == 3.5
    with pytest.raises(InputError, match="missing"):
        summarise(df.drop(columns="analytic"))


def test_write_parquet_round_trips_with_settings(tmp_path):
    df = run(SweepSpec("stream", "sample:flights", (1.0,), trials=3, seed=2, methods="naive,binary"))
    path = write_parquet(df, tmp_path / "s.parquet")
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, df)
    assert back.attrs["sweep"]["seed"] == 2 and back.attrs["sweep"]["capability"] == "stream"
    assert [p.name for p in tmp_path.iterdir()] == ["s.parquet"]  # no temporary file left
    with pytest.raises(InputError, match="directory"):
        write_parquet(df, tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        write_parquet(df, tmp_path / "missing" / "s.parquet")
