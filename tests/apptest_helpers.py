"""Helpers for in-process tests with ``streamlit.testing.v1.AppTest`` (no server, no browser).

    from tests.apptest_helpers import app_test, plotly_z
    at = app_test("pages/1_Tree.py")      # app.py as entry point, switched to the page, run
    assert not at.exception, at.exception
    at.slider(key="epsilon").set_value(0.5).run()
    z = plotly_z(at, 0)                   # numpy array of the first plotly chart's z
"""

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"


def app_test(page_relpath: str | None = None, *, timeout: float = 60,
             session_state: dict | None = None, run: bool = True) -> AppTest:
    """AppTest of app.py, switched to ``page_relpath`` (e.g. "pages/1_Tree.py") and run.

    ``page_relpath`` None or "app.py" means the home page.  ``session_state`` is seeded
    before the first run.  The timeout is generous: the first run imports scipy/plotly.
    Check ``at.exception`` yourself (it is a list, empty on success).
    """
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for k, v in (session_state or {}).items():
        at.session_state[k] = v
    if page_relpath not in (None, "", "app.py"):
        if not (ROOT / page_relpath).is_file():
            raise FileNotFoundError(ROOT / page_relpath)
        at.switch_page(page_relpath)
    if run:
        at.run()
    return at


def decode_plotly_array(v):
    """plotly>=6 stores numpy arrays as {"dtype", "bdata" (base64), "shape"?}: decode to numpy.

    Plain lists are returned as numpy arrays too; anything else is returned unchanged.
    """
    if isinstance(v, dict) and "bdata" in v and "dtype" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]).newbyteorder("<"))
        if v.get("shape"):
            a = a.reshape(tuple(int(s) for s in str(v["shape"]).split(",")))
        return a
    if isinstance(v, list):
        return np.asarray(v)
    return v


@dataclass(frozen=True)
class ChartProto:
    """What a test reads of a dashboard chart: ``id`` (ends with the chart's key, without
    ``dpviz.ui.charts.KEY_PREFIX``), ``spec`` (the figure JSON) and ``config`` (Plotly config JSON)."""

    id: str
    spec: str
    config: str


@dataclass(frozen=True)
class Chart:
    proto: ChartProto


def plotly_charts(at: AppTest) -> list[Chart]:
    """The dashboard's charts in page order: every ``dpviz.ui.charts.chart`` (a ``dpviz_plotly_chart``
    component; AppTest shows it as a ``bidi_component``)."""
    from dpviz.ui.charts import KEY_PREFIX

    out = []
    for e in at.get("bidi_component"):
        if e.proto.component_name != "dpviz_plotly_chart":
            continue
        data = json.loads(e.proto.json)
        out.append(Chart(ChartProto(e.proto.id.replace(KEY_PREFIX, ""), data["figure"], json.dumps(data["config"]))))
    return out


def plotly_json(at: AppTest, i: int = 0) -> dict:
    """Figure JSON (dict with "data" and "layout") of the ``i``-th plotly chart; arrays raw."""
    return json.loads(plotly_charts(at)[i].proto.spec)


def plotly_trace(at: AppTest, i: int = 0, trace: int = 0) -> dict:
    """Trace ``trace`` of chart ``i`` with x/y/z/values/... decoded to numpy arrays."""
    t = plotly_json(at, i)["data"][trace]
    return {k: decode_plotly_array(v) for k, v in t.items()}


def plotly_z(at: AppTest, i: int = 0, trace: int = 0) -> np.ndarray:
    """``z`` of trace ``trace`` of chart ``i`` (heatmaps) as a numpy array."""
    return np.asarray(decode_plotly_array(plotly_json(at, i)["data"][trace]["z"]))


def page_links(at: AppTest) -> list[tuple[str, str]]:
    """(label, page) of every st.page_link on the current page."""
    return [(e.proto.label, e.proto.page) for e in at.get("page_link")]


def ok(at: AppTest) -> AppTest:
    """``at`` after asserting the run raised nothing (returns it, for chaining)."""
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    """Every ``st.metric`` on the page: label -> shown value."""
    return {m.label: m.value for m in at.metric}


def upload_bytes(at: AppTest, key: str, name: str, raw: bytes) -> AppTest:
    """Upload ``raw`` as file ``name`` into the file uploader ``key`` and rerun."""
    at.file_uploader(key=key).upload(name, raw, "text/csv")
    return ok(at.run())


def walk(node):
    """Every element of the page in display order."""
    ch = getattr(node, "children", None)
    if isinstance(ch, dict) and ch:
        for k in sorted(ch):
            yield from walk(ch[k])
    else:
        yield node


def input_error_message(parse, *args, **kwargs) -> str:
    """The InputError message ``parse(*args, **kwargs)`` raises (the text a page must show)."""
    from dpviz.errors import InputError

    try:
        parse(*args, **kwargs)
    except InputError as exc:
        return str(exc)
    raise AssertionError(f"{getattr(parse, '__name__', parse)} accepted the input")
