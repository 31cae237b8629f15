"""The capability registry: one entry per data shape (tree, stream, later marginals and graph).

Each :class:`Capability` declares its CLI verbs (a ``"module:function"`` that adds them to the
argument parser, imported only when that capability's command runs), its bundled samples (reachable
as ``sample:NAME`` from the CLI, the pages and Python), its unit of privacy, and the sections of the
shared page skeleton (the pages themselves, their titles and icons, live with the UI: :mod:`dpviz.ui.pages`).
``dpviz/cli.py``, ``app.py`` and the pages read this list instead of keeping
their own.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpviz.errors import InputError

__all__ = ["Sample", "Capability", "Hooks", "HOOK_NAMES", "hook", "RELEASE_GATE", "CAPABILITIES", "Tool", "TOOLS", "tool", "PAGE_SKELETON", "capability", "resolve", "load_sample",
           "load_source", "source_stem", "SAMPLE_PREFIX"]

SAMPLE_PREFIX = "sample:"
PAGE_SKELETON: tuple[str, ...] = ("Data", "Privacy", "Strategy and estimator", "Simulation", "Private release")
"""The sections every capability page shows, in this order."""


def resolve(target: str) -> Callable[..., Any]:
    """Import ``"package.module:function"`` lazily and return the function."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Sample:
    """A bundled data set: ``sample:NAME``; ``loader`` is ``"module:function"`` taking no argument."""

    name: str
    title: str
    loader: str

    def load(self) -> Any:
        return resolve(self.loader)()


HOOK_NAMES: tuple[str, ...] = ("load", "canonical_bytes", "audit_target", "sweep_target", "plan_curves", "thumbnail")
"""What a capability plugs into the cross-capability tools (see :class:`Hooks`)."""


@dataclass(frozen=True)
class Hooks:
    """A capability's entries into the tools, each a ``"module:function"`` imported only when called, so
    that the ledger, audit, sweep, planner and the figure gallery never name or import a capability
    (docs/ARCHITECTURE.md has the table of signatures):

    * ``load(spec, **options) -> data`` — ``sample:NAME`` or a file (``dpviz.<cap>.io``);
    * ``canonical_bytes(source, data) -> bytes`` — the ledger's identity of a dataset (same content, same bytes);
    * ``audit_target(epsilon, **options) -> dpviz.core.events.AuditTarget`` — a neighbouring pair and events;
    * ``sweep_target(spec) -> dpviz.core.trials.Target`` — one Monte-Carlo trial of the capability's simulation;
    * ``plan_curves(params, *, seed, max_seconds) -> list[dpviz.core.curves.Curve]`` — error against budget;
    * ``thumbnail(data) -> plotly Figure`` — the home page's picture (a ``dpviz.viz`` module: called by the UI
      layer only).
    """

    load: str
    canonical_bytes: str
    audit_target: str
    sweep_target: str
    plan_curves: str
    thumbnail: str

    def __call__(self, name: str) -> Callable[..., Any]:
        if name not in HOOK_NAMES:
            raise InputError(f"unknown hook {name!r}; expected one of {', '.join(HOOK_NAMES)}")
        return resolve(getattr(self, name))


def _hooks(cap: str) -> Hooks:
    """The conventional hook targets of capability ``cap``: ``load`` and ``canonical_bytes`` in ``dpviz/<cap>/io.py``,
    the tools' entries in ``dpviz/<cap>/hooks.py``, the thumbnail in ``dpviz/viz/<cap>.py``."""
    mod = f"dpviz.{cap}.hooks"
    return Hooks(load=f"dpviz.{cap}.io:load", canonical_bytes=f"dpviz.{cap}.io:canonical_bytes",
                 audit_target=f"{mod}:audit_target",
                 sweep_target=f"{mod}:sweep_target", plan_curves=f"{mod}:plan_curves",
                 thumbnail=f"dpviz.viz.{cap}:thumbnail")


@dataclass(frozen=True)
class Capability:
    name: str
    title: str
    description: str
    unit_of_privacy: str
    cli: str
    samples: tuple[Sample, ...] = ()
    sections: tuple[str, ...] = PAGE_SKELETON
    cli_help: str = ""
    """One line for ``python -m dpviz --help``: shown without importing the capability (fast startup)."""
    hooks: Hooks | None = None
    """Entries into the tools (:class:`Hooks`); ``None`` → the conventional places (:func:`_hooks`)."""

    def hook(self, name: str) -> Callable[..., Any]:
        """The capability's hook ``name`` (imported now): what the tools call instead of naming a capability."""
        return (self.hooks or _hooks(self.name))(name)

    def register_cli(self, groups: Any) -> None:
        resolve(self.cli)(groups)

    def sample(self, name: str) -> Sample:
        for s in self.samples:
            if s.name == name:
                return s
        known = ", ".join(SAMPLE_PREFIX + s.name for s in self.samples)
        raise InputError(f"{self.name}: unknown sample {SAMPLE_PREFIX + name!r}; bundled samples are {known}")


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        name="tree",
        title="Tree release",
        description="Counts over a hierarchy (e.g. US → region → division → state → county), released with "
                    "noise per level and made consistent by GMC.",
        unit_of_privacy="one person, counted in exactly one leaf: the count of that leaf and of each of its "
                        "ancestors changes by 1 (at most one node per level: L1 sensitivity h, L2 √h); "
                        "the hierarchy itself is public",
        cli="dpviz.tree.cli:register",
        cli_help="hierarchical tree release (Generation Matrix, GMC)",
        samples=(Sample("county", "US resident population by county, 2019", "dpviz.tree.samples:load_county_sample"),),
    ),
    Capability(
        name="stream",
        title="Stream release",
        description="Continual release of running counts over time (Fenwick tree with optimal weights, and peers).",
        unit_of_privacy="one event: one step's count changes by 1 (event-level privacy; a person who "
                        "contributes many events is not covered — user-level privacy is not offered)",
        cli="dpviz.stream.cli:register",
        cli_help="continual release of running totals (Fenwick / FDA and peers)",
        samples=(Sample("flights", "US domestic flights per day, Jan–Jun 2001", "dpviz.stream.samples:load_flights_sample"),
                 Sample("bike", "Capital Bikeshare rentals per hour, 2011–12", "dpviz.stream.samples:load_bike_sample")),
    ),
    Capability(
        name="marginals",
        title="Marginals",
        description="Low-dimensional marginal tables of a categorical data set: ResidualPlanner or Scalable "
                    "MWEM measurements, reconstructed by GReM-MLE, EMP or GReM-LNN.",
        unit_of_privacy="one record (add or remove one row): every marginal changes in exactly one cell by 1",
        cli="dpviz.marginals.cli:register",
        cli_help="marginal tables of categorical data (ResidualPlanner, Scalable MWEM; GReM-MLE, EMP, GReM-LNN)",
        samples=(Sample("adult", "UCI Adult (census income), 48,842 rows, discretised", "dpviz.marginals.samples:load_adult_sample"),
                 Sample("titanic", "Titanic passengers (teaching)", "dpviz.marginals.samples:load_titanic_sample")),
    ),
    Capability(
        name="graph",
        title="Graph release",
        description="A simple undirected graph released under edge-level DP: the DRF flattening kd-tree made "
                    "private (drf-dp), the published DRF for comparison (not edge-DP), and baselines (kd-hybrid, "
                    "quadtree, random, degree sequence).",
        unit_of_privacy="one edge: neighbouring graphs on the same, public vertex set differ in one undirected "
                        "edge {u, v}, which is one cell (u, v), u < v, of the upper triangle of the adjacency "
                        "matrix, so every region count on the upper triangle changes by at most 1 (a vertex and "
                        "all its edges are not protected: no node-level privacy)",
        cli="dpviz.graph.cli:register",
        cli_help="edge-private release of a graph (DRF flattening kd-tree made edge-DP, baselines)",
        samples=(Sample("karate", "Zachary's karate club, 34 nodes / 78 edges (teaching)",
                        "dpviz.graph.samples:load_karate_sample"),
                 Sample("netscience", "Network-science co-authorships, 1,589 / 2,742",
                        "dpviz.graph.samples:load_netscience_sample"),
                 Sample("polblogs", "US political blogs 2005, 1,490 / 16,715 (symmetrised)",
                        "dpviz.graph.samples:load_polblogs_sample"),
                 Sample("power", "US Western power grid, 4,941 / 6,594", "dpviz.graph.samples:load_power_sample"),
                 Sample("hep-th", "hep-th co-authorships 1995-99, 8,361 / 15,751",
                        "dpviz.graph.samples:load_hepth_sample"),
                 Sample("email-enron", "Enron e-mail network, 36,692 / 183,831",
                        "dpviz.graph.samples:load_enron_sample")),
    ),
    Capability(
        name="histogram",
        title="Histogram release",
        description="Counts of records in declared, ordered bins and every range of bins: a hierarchical "
                    "histogram (Hay et al. 2010) made consistent by GMC — the tree engine reused — or flat counts.",
        unit_of_privacy="one record, counted in exactly one bin: each level of the hierarchy over the bins changes "
                        "in one count by 1 (L1 sensitivity h, L2 √h for h levels; flat counts: 1); the bins are public "
                        "(declared)",
        cli="dpviz.histogram.cli:register",
        cli_help="histograms and range queries over declared bins (hierarchical + GMC, flat)",
        samples=(Sample("education", "Years of education, UCI Adult 1994 (48,842 people, 16 bins)",
                        "dpviz.histogram.samples:load_education_sample"),
                 Sample("bike-hours", "Hours by bike rentals, Capital Bikeshare 2011–12 (17,379 hours, 1,000 bins)",
                        "dpviz.histogram.samples:load_bike_hours_sample")),
    ),
)


@dataclass(frozen=True)
class Tool:
    """A command group that works across capabilities: ``cli`` is its ``"module:function"`` registrar,
    imported only when the group runs; ``cli_help`` is its line in ``python -m dpviz --help``."""

    name: str
    cli_help: str
    cli: str

    def register_cli(self, groups: Any) -> None:
        resolve(self.cli)(groups)


TOOLS: tuple[Tool, ...] = (
    Tool("audit", "empirical privacy audit: a Clopper–Pearson lower bound on ε (simulation)",
         "dpviz.audit.cli:register"),
    Tool("sweep", "Monte-Carlo sweep: ε grid × trials × methods on Dask (simulation), tidy Parquet + summary",
         "dpviz.sweep.cli:register"),
    Tool("ledger", "persistent privacy ledger: per-dataset budgets, every release charged first",
         "dpviz.ledger.cli:register"),
    Tool("plan", "accuracy-first budget planning: the smallest ε for a target error; split a total budget over "
                 "several releases", "dpviz.planner.cli:register"),
)


RELEASE_GATE = "dpviz.ledger:charge"
"""The context manager every release runs inside (:func:`dpviz.core.charging.charge`): the privacy ledger's
charge. Named here, like the tools' CLI registrars, so that core and the capabilities never import the ledger."""


def hook(capability_name: str, name: str) -> Callable[..., Any]:
    """``capability(capability_name).hook(name)``."""
    return capability(capability_name).hook(name)


def tool(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise InputError(f"unknown command group {name!r}; expected one of {', '.join(t.name for t in TOOLS)}")


def capability(name: str) -> Capability:
    for c in CAPABILITIES:
        if c.name == name:
            return c
    raise InputError(f"unknown capability {name!r}; expected one of {', '.join(c.name for c in CAPABILITIES)}")


def load_source(capability_name: str, spec: str | Path, read_file: Callable[[Path], Any]) -> Any:
    """Bundled data ``sample:NAME`` or a file path read by ``read_file``: the one way the CLI, the pages
    and Python name an input. A missing path or a folder is an InputError that lists the samples."""
    text = str(spec)
    if text.startswith(SAMPLE_PREFIX):
        return load_sample(capability_name, text)
    from dpviz.core.inputs import require_regular_file

    path = Path(text)
    try:
        os.stat(path)
    except FileNotFoundError:
        known = ", ".join(SAMPLE_PREFIX + s.name for s in capability(capability_name).samples)
        raise InputError(f"input file {text[:200]!r} does not exist (bundled data: {known})") from None
    except OSError:  # a name too long, a loop of links: require_regular_file says so in one line
        pass
    if os.path.isdir(path):
        from dpviz.core.records import is_parquet

        if is_parquet(path):  # a Parquet dataset: a folder of *.parquet files (dpviz.core.records)
            return read_file(path)
        raise InputError(f"input {text[:200]!r} is a folder; expected a file (or a folder of *.parquet files)")
    return read_file(require_regular_file(path, "input"))  # a FIFO or a device: refused before it is opened


def source_stem(spec: str | Path) -> str:
    """A short name for output files: the sample's name or the file's stem."""
    text = str(spec)
    return text.removeprefix(SAMPLE_PREFIX) if text.startswith(SAMPLE_PREFIX) else Path(text).stem


def load_sample(capability_name: str, spec: str) -> Any:
    """Load ``sample:NAME`` of a capability (the one way bundled data is named everywhere)."""
    if not spec.startswith(SAMPLE_PREFIX):
        raise InputError(f"expected {SAMPLE_PREFIX}NAME, got {spec!r}")
    return capability(capability_name).sample(spec.removeprefix(SAMPLE_PREFIX)).load()
