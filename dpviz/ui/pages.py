"""The dashboard's pages: their files, titles and icons (UI metadata, kept out of the library).

``app.py`` builds its navigation and its links from :data:`PAGES`; every page starts with
:func:`page_setup` and its own name. A capability page is named like its capability
(:data:`dpviz.core.registry.CAPABILITIES`); a capability with no entry here has no page yet (the home page
names it with its CLI instead). A new page adds one line to :data:`PAGES`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st

from dpviz.errors import InputError

__all__ = ["PageInfo", "PAGES", "page_info", "page_of", "page_setup", "prefetch"]


@dataclass(frozen=True)
class PageInfo:
    """One page: ``name`` (a capability's name for a capability page), its file ``path`` relative to the
    repository root (where Streamlit expects it, e.g. ``pages/1_Tree.py``), its browser-tab ``title`` and its
    sidebar ``icon`` (a Material icon)."""

    name: str
    path: str
    title: str
    icon: str


PAGES: tuple[PageInfo, ...] = (
    PageInfo("tree", "pages/1_Tree.py", "Tree release", ":material/account_tree:"),
    PageInfo("stream", "pages/2_Stream.py", "Stream release", ":material/timeline:"),
    PageInfo("marginals", "pages/3_Marginals.py", "Marginals", ":material/table_chart:"),
    PageInfo("graph", "pages/4_Graph.py", "Graph release", ":material/hub:"),
    PageInfo("histogram", "pages/6_Histogram.py", "Histogram release", ":material/bar_chart:"),
    PageInfo("planner", "pages/5_Planner.py", "Budget planner", ":material/calculate:"),
    PageInfo("ledger", "pages/7_Ledger.py", "Privacy ledger", ":material/receipt_long:"),
)
"""Every page of the dashboard, in navigation order (the home page is ``app.py`` itself)."""


def page_of(name: str) -> PageInfo | None:
    """The page named ``name`` (a capability's or a tool's), or None if there is none."""
    return next((p for p in PAGES if p.name == name), None)


def page_info(name: str) -> PageInfo:
    """The page named ``name``; an InputError names the known pages."""
    page = page_of(name)
    if page is None:
        raise InputError(f"no page named {name!r}; known: {', '.join(p.name for p in PAGES)}")
    return page


def _leave_folder_mode() -> None:
    """A fresh server's first visit at a page URL (``/Stream``) runs the page in Streamlit's legacy "pages/
    folder" mode: the sidebar lists the files ("app", no icons) and ``app.py``'s ``st.navigation`` never runs.
    Streamlit leaves that mode for good once any ``st.navigation`` call is made; this makes the switch here and
    reruns, so the same URL is served by ``app.py``'s navigation (titles, icons, the Home page). Once per
    session, on its first run (nothing clicked yet, so the rerun drops no click; AppTest, which re-enters the
    mode before every run, is switched once too)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and not st.session_state.get(_NAV_SWITCHED):
        st.session_state[_NAV_SWITCHED] = True
        PagesManager.uses_pages_directory = False
        st.rerun()


_NAV_SWITCHED = "_dpviz_left_folder_mode"
_PREFETCHED: OrderedDict = OrderedDict()
PREFETCH_KEYS = 512
"""Warm-up keys remembered per server (the oldest forgotten first): a page whose keys change with every run (the
Planner's, which carry the run's generation) does not grow the set without bound."""


def prefetch(key: object, fn, *args) -> None:
    """Run ``fn(*args)`` once per server process and ``key`` in a background thread: warms a cache a likely
    next change will read (e.g. the Stream page's other noise family), so that change does not pay for it.
    Only for pure, cached library calls (an error is left for the page to meet and report when it asks). The
    thread runs at :data:`dpviz.ui.background.NICENESS`, like :func:`dpviz.ui.background.precompute`'s worker
    (which, unlike this, holds a result by key for the page to ask for). Nothing runs when
    :func:`dpviz.ui.background.work_ahead` is off."""
    import threading

    from dpviz.ui.background import lower_priority, work_ahead

    if key in _PREFETCHED or not work_ahead():
        return
    _PREFETCHED[key] = None
    while len(_PREFETCHED) > PREFETCH_KEYS:
        _PREFETCHED.popitem(last=False)

    def run() -> None:
        lower_priority()
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a warm-up only
            pass

    threading.Thread(target=run, name=f"dpviz-prefetch-{key}", daemon=True).start()


def page_setup(name: str) -> None:
    """``st.set_page_config`` for page ``name`` (title and icon from :data:`PAGES`)."""
    _leave_folder_mode()
    page = page_info(getattr(name, "name", name))  # a capability page may pass its Capability
    st.set_page_config(page_title=f"dpviz · {page.title}", page_icon=page.icon, layout="wide")
