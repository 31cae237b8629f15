"""Stream figure builders: pure, no streamlit, right traces."""

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.stream.mechanisms import Noise, make_mechanism
from dpviz.viz import stream as V


def test_figures_and_tables():
    noise, n = Noise.laplace(1.0), 40
    counts = np.arange(n, dtype=float)
    mechs = [make_mechanism(m, n, noise) for m in ["naive", "fenwick", "fenwick-fda"]]
    rels = {m.name: m.release(counts, np.random.default_rng(0)) for m in mechs}
    fig = V.release_figure(counts, rels, upto=10)
    assert len(fig.data) == 2 * 3 + 1 and len(fig.data[-1].y) == 10
    assert V.variance_figure(mechs).layout.yaxis.type == "log"
    table = V.mse_table(mechs)
    assert table["ratio to FDA"].iloc[2] == pytest.approx(1.0)
    maps = V.strategy_heatmaps(mechs[2].lam)
    assert set(maps) == {"M", "B", "Σ"} and np.asarray(maps["M"].data[0].z).shape == (n, n)
    assert len(V.lambda_figure(mechs[2].lam).data[0].x) == n
    assert list(V.release_frame(rels).columns)[:3] == ["t", "naive_released_total", "naive_std"]
    with pytest.raises(InputError, match="too large"):
        V.matrix_heatmap(np.eye(65), "big")  # the shared helper, re-exported
    assert "streamlit" not in open(V.__file__, encoding="utf-8").read()
