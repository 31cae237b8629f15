"""The dashboard's layer: the only part of ``dpviz`` that imports Streamlit.

Pages (``pages/*.py``) and the home page (``app.py``) stay thin views: they read their widgets, make one
``dpviz`` call and hand the results and figures to these pieces (``from dpviz import ui``):

* :mod:`dpviz.ui.charts` — :func:`~dpviz.ui.charts.chart`, the one way a page draws a Plotly figure;
* :mod:`dpviz.ui.background` — :func:`~dpviz.ui.background.precompute` and :func:`~dpviz.ui.background.computed`:
  what a likely next change needs, computed ahead in a background thread;
* :mod:`dpviz.ui.privacy` — :func:`~dpviz.ui.privacy.privacy_widgets`, the Privacy section's widgets on every page;
* :mod:`dpviz.ui.pages` — every page's file, title and icon (:data:`~dpviz.ui.pages.PAGES`) and
  :func:`~dpviz.ui.pages.page_setup`;
* :mod:`dpviz.ui.sources` — the Data section every capability page shares (:func:`~dpviz.ui.sources.data_source`:
  bundled sample, synthetic data or upload) and :func:`~dpviz.ui.sources.handle_upload`;
* :mod:`dpviz.ui.records` — records uploads (one row per person, event or edge; CSV, gzip CSV or Parquet):
  the column pickers and the contribution bound, counted by each capability's own records function;
* :mod:`dpviz.ui.sections` — the noise caption, the Simulation section (its "New noise draw" takes the seed
  :func:`~dpviz.ui.sections.next_seed` drew ahead, so a page can compute that draw before the click) and the
  release's public structure;
* :mod:`dpviz.ui.release_panel` — the Private release panel and the privacy ledger it charges first;
* :mod:`dpviz.ui.marginals` and :mod:`dpviz.ui.planner` — pieces of one page each (the Marginals teaching view
  and its rule for reusing a GReM-LNN run under another cap or time limit; the Planner's table settings).

Layers (docs/ARCHITECTURE.md): ``dpviz.ui`` may import core, the capabilities, the tools and ``dpviz.viz``;
nothing in ``dpviz`` imports it.
"""

from dpviz.ui.background import check_superseded, computed, precompute, supersede
from dpviz.ui.charts import chart
from dpviz.ui.privacy import PrivacyChoice, PrivacyKeys, privacy_widgets
from dpviz.ui.pages import PAGES, PageInfo, page_info, page_of, page_setup, prefetch
from dpviz.ui.release_panel import PREVIEW_ROWS, SESSION_LEDGER_KEY, page_ledger, private_release_panel, session_ledger
from dpviz.ui.sections import (DeclarationSpec, Structure, declared_structure, noise_caption, release_heading,
                               shipped_structure, simulation_banner, simulation_file_name, simulation_section,
                               table_height, with_notice)
from dpviz.ui.sources import UPLOAD_BYTES_KEY, UploadSpec, clear_results, data_source, handle_upload, load_bundled
from dpviz.ui import records
from dpviz.ui.records import RecordsSpec

__all__ = ["check_superseded", "computed", "precompute", "supersede", "chart", "PrivacyChoice", "PrivacyKeys", "privacy_widgets", "PAGES", "PageInfo", "page_info", "page_of", "page_setup", "prefetch", "PREVIEW_ROWS", "SESSION_LEDGER_KEY",
           "page_ledger", "private_release_panel", "session_ledger", "DeclarationSpec", "Structure",
           "declared_structure", "noise_caption", "release_heading", "shipped_structure", "simulation_banner",
           "simulation_file_name", "simulation_section", "table_height", "with_notice", "UPLOAD_BYTES_KEY",
           "UploadSpec", "clear_results", "data_source", "handle_upload", "load_bundled", "records", "RecordsSpec"]
