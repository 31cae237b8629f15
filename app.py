"""dpviz dashboard: the entry point (navigation) and the home page.

``streamlit run app.py``. Navigation is explicit (``st.navigation``): the home page (a function here,
titled "Home" in the sidebar) first, then every ``pages/*.py`` file, sorted by name, with its icon from the
page table (:data:`dpviz.ui.pages.PAGES`). Titles and URL paths are Streamlit's defaults, derived from the
file names (``pages/1_Tree.py`` → "Tree", ``/Tree``).

The home page is the map: what DP is, the data shapes of the registry (a thumbnail of each one's
first bundled sample, built by its ``thumbnail`` hook through :mod:`dpviz.viz.thumbnails` and cached), the two modes (simulation and
private release), and where each of the three uses starts (analyst, teacher, planner). Pages that
do not exist yet (e.g. the Planner or the Ledger) are never linked.
"""

from pathlib import Path

import streamlit as st

from dpviz import ui
from dpviz.core.registry import CAPABILITIES, Capability

ROOT = Path(__file__).resolve().parent
TITLE = "dpviz — differentially private data release"
PLANNER = ui.page_info("planner")
LEDGER = ui.page_info("ledger")
ICONS = {page.path: page.icon for page in ui.PAGES}
COUNT_WORDS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")


def shapes_heading(n: int) -> str:
    """The heading over the capability cards: "Four data shapes" for four registered capabilities."""
    return f"{COUNT_WORDS[n] if n < len(COUNT_WORDS) else n} data shapes"


def page_files() -> list[str]:
    """Every page file, as a path relative to this file ("pages/1_Tree.py"), sorted by name."""
    return [f"pages/{f.name}" for f in sorted((ROOT / "pages").glob("*.py"))]


@st.cache_data(show_spinner=False, max_entries=8)
def thumbnail_figure(capability: str):
    """The thumbnail of a capability's first bundled sample (cached per server: built once)."""
    from dpviz.core.registry import capability as find
    from dpviz.viz.thumbnails import thumbnail

    return thumbnail(capability, ui.load_bundled(capability, find(capability).samples[0].name))


def link(rel: str, label: str, icon: str | None = None) -> bool:
    """A link to page ``rel`` if that file exists; returns whether it was drawn."""
    page = PAGES.get(rel)
    if page is None:
        return False
    st.page_link(page, label=label, icon=icon)
    return True


def capability_card(cap: Capability) -> None:
    """One data shape: link (or its name when the page is missing), thumbnail, summary, unit of privacy."""
    from dpviz.errors import InputError
    from dpviz.viz.thumbnails import PLOT_CONFIG

    page = ui.page_of(cap.name)
    if not (page and link(page.path, cap.title, page.icon)):
        st.markdown(f"**{cap.title}** (no page yet: `python -m dpviz {cap.name} --help`)")
    try:
        ui.chart(st, thumbnail_figure(cap.name), key=f"thumb_{cap.name}", config=PLOT_CONFIG, width="stretch")
        st.caption(f"`sample:{cap.samples[0].name}` — {cap.samples[0].title}")
    except (InputError, OSError) as exc:  # a missing bundled file must not take the home page down
        st.caption(f"(no thumbnail: {exc})")
    st.caption(cap.description)
    with st.expander("Unit of privacy"):
        st.markdown(cap.unit_of_privacy[0].upper() + cap.unit_of_privacy[1:] + ".")


def home() -> None:
    st.set_page_config(page_title="dpviz", page_icon=":material/lock:", layout="wide")
    st.title(TITLE)
    st.markdown(
        "**Differential privacy (DP)** publishes statistics about a data set with calibrated random noise, "
        "so that the output barely changes whether or not any one person (record, event, edge) is in it. "
        "A budget **ε** bounds that change: smaller ε, more privacy, more noise."
    )

    st.header(shapes_heading(len(CAPABILITIES)))
    for col, cap in zip(st.columns(len(CAPABILITIES)), CAPABILITIES, strict=True):
        with col:
            capability_card(cap)

    st.header("Simulate or release")
    sim, rel = st.columns(2)
    sim.markdown(
        "**Simulation — not a private release.** Seeded floating-point noise on bundled or uploaded data, "
        "with the true values and the errors shown, every method on one noise draw, and an ε slider: for "
        "teaching and what-if questions. A seed reproduces it; nothing it shows may be published."
    )
    rel.markdown(
        "**Private release.** One mechanism, discrete noise drawn from the operating system's cryptographic "
        "random generator, fresh at every click, and an output with no true value in it: what you may "
        "publish. Every page ends with this panel; the CLI's `release` verbs do the same headless. Every draw is "
        "**charged to a privacy ledger before it is shown** — the server's ledger when the app was started with "
        "one (`make run LEDGER=PATH`, or `$DPVIZ_LEDGER`), otherwise this browser session's own — and a draw over "
        "the dataset's budget is refused."
    )

    st.header("Where to start")
    analyst, teacher, planner = st.columns(3)
    with analyst:
        st.subheader(":material/publish: Analyst")
        st.markdown("*I hold data and want to publish statistics.* Open the page of your data shape, load your "
                    "file under **Data**, choose ε under **Privacy**, and draw a **Private release** at the "
                    f"bottom; or headless: `python -m dpviz {CAPABILITIES[0].name} release --help` (and "
                    + ", ".join(f"`{c.name}`" for c in CAPABILITIES[1:]) + ").")
        link(LEDGER.path, "Ledger: the budget spent per dataset", LEDGER.icon)
    with teacher:
        st.subheader(":material/school: Teacher")
        st.markdown("*I want to show how DP works.* Use the **Simulation** section of any page on its bundled "
                    "data: move ε and watch the error, compare methods on one draw, press *New noise draw*. "
                    "Small inputs show the matrices behind the mechanisms (a synthetic tree, a stream horizon "
                    "N ≤ 64, the Titanic marginals, the karate-club graph); the Stream page plays a continual "
                    "release step by step.")
    with planner:
        st.subheader(":material/calculate: Planner")
        st.markdown("*How much ε do I need for the accuracy I want, and how do I split a budget?* Every page "
                    "shows the analytic error of each mechanism at the chosen ε (no data involved).")
        link(PLANNER.path, "Planner: accuracy first, the ε it needs", PLANNER.icon)
        link(LEDGER.path, "Ledger: what has been spent", LEDGER.icon)

    st.divider()
    st.caption("Every page is a thin view over the `dpviz` Python library, which can also be used directly or "
               "through its command line (`python -m dpviz --help`).")


st.set_page_config(page_title="dpviz", page_icon=":material/lock:", layout="wide")
PAGES = {rel: st.Page(rel, icon=ICONS.get(rel)) for rel in page_files()}
st.navigation([st.Page(home, title="Home", icon=":material/home:", default=True), *PAGES.values()]).run()
