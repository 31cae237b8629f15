"""The shape of the code (issue 18): imports only go down, no cycles between parts, noise only in core,
no file over ~600 lines, and every capability has the same layout and plugs into the tools by hooks alone.

Layers, lowest first (docs/ARCHITECTURE.md)::

    core            dpviz/core, dpviz/errors.py, dpviz/__init__.py
    capabilities    dpviz/{tree,stream,marginals,graph,histogram}   (histogram may use the tree engine)
    tools           dpviz/{ledger,audit,sweep,planner}
    viz, ui         dpviz/viz, dpviz/ui (the only importer of streamlit)
    entry points    dpviz/cli.py, dpviz/__main__.py, app.py, pages/, tools/ (repository scripts)

Every ``import`` counts, at module level or inside a function: a lazy import is still an arrow.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

import pytest

from dpviz.core.registry import CAPABILITIES, HOOK_NAMES

ROOT = Path(__file__).resolve().parents[1]
CAPS = tuple(c.name for c in CAPABILITIES)
TOOLS = ("ledger", "audit", "sweep", "planner")
LAYOUT = ("model", "io", "samples", "strategy", "estimators", "release", "metrics", "cli", "hooks")
"""The files every capability has (docs/ARCHITECTURE.md), besides its paper modules."""
MAX_LINES = 620
ENGINE_USES = {"histogram": {"tree"}}
"""A capability built on another one's engine (the issue's fifth capability reuses the tree)."""


def _unit(path: Path) -> str:
    """The part of the code a file belongs to: core, a capability, a tool, viz, ui or an entry point."""
    rel = path.relative_to(ROOT).parts
    if rel[0] in ("pages", "tools") or rel == ("app.py",):
        return "entry"
    if rel[0] != "dpviz":
        raise AssertionError(path)
    if len(rel) == 2:
        return "entry" if rel[1] in ("cli.py", "__main__.py") else "core"
    return rel[1]


def _layer(unit: str) -> int:
    if unit == "core":
        return 0
    if unit in CAPS:
        return 1
    if unit in TOOLS:
        return 2
    if unit in ("viz", "ui"):
        return 3
    if unit == "entry":
        return 4
    raise AssertionError(f"{unit}: not a known part of the code (add it to a layer in docs/ARCHITECTURE.md)")


def _sources() -> list[Path]:
    files = sorted((ROOT / "dpviz").rglob("*.py")) + sorted((ROOT / "pages").glob("*.py"))
    return files + [ROOT / "app.py"] + sorted((ROOT / "tools").glob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every dpviz module ``path`` imports (``import dpviz.x``, ``from dpviz.x import y``, ``from dpviz import x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "dpviz")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "dpviz":
                out.update(f"dpviz.{a.name}" for a in node.names)
            elif node.module.split(".")[0] == "dpviz":
                out.add(node.module)
    return out


def _target_unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("errors", "__init__"):
        return "core"
    if parts[1] in ("cli", "__main__"):
        return "entry"
    return parts[1]


def _arrows() -> dict[tuple[str, str], list[str]]:
    arrows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in _sources():
        src = _unit(path)
        for module in _imports(path):
            dst = _target_unit(module)
            if dst != src:
                arrows[(src, dst)].append(f"{path.relative_to(ROOT)} imports {module}")
    return arrows


def test_imports_only_go_down() -> None:
    bad = []
    for (src, dst), where in sorted(_arrows().items()):
        ls, ld = _layer(src), _layer(dst)
        if ld > ls:
            bad.append(f"upward {src} -> {dst}: {where[0]}")
        elif ls == ld == 1 and dst not in ENGINE_USES.get(src, set()):
            bad.append(f"capability {src} imports capability {dst}: {where[0]}")
        elif src in TOOLS and dst in CAPS:
            bad.append(f"tool {src} names capability {dst}: {where[0]}")
        elif dst == "entry":
            bad.append(f"{src} imports an entry point: {where[0]}")
    assert not bad, "\n".join(bad)


def test_no_cycles_between_parts() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for src, dst in _arrows():
        graph[src].add(dst)
    state: dict[str, int] = {}

    def visit(u: str, stack: list[str]) -> None:
        state[u] = 1
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(v):], v]))
            if v not in state:
                visit(v, [*stack, v])
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u, [u])


def test_only_ui_imports_streamlit() -> None:
    bad = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "dpviz").rglob("*.py"))
           if _unit(p) != "ui" and any(n.split(".")[0] == "streamlit" for n in _all_imports(p))]
    assert not bad, bad


def _all_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


SAMPLERS = {"discrete_laplace", "discrete_gaussian"}
NOISE_METHODS = {"laplace", "normal", "standard_normal", "exponential", "standard_exponential", "gumbel",
                 "standard_cauchy", "logistic"}
NOT_NOISE = {"synthetic.py"}
"""Modules that generate synthetic *data* (not noise on private data): their random draws are the data."""


def _noise_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        on_noise_type = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "Noise"
        if name in SAMPLERS or (isinstance(f, ast.Attribute) and not on_noise_type
                                and (name in NOISE_METHODS or name == "draw")):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}()")
    return found


def test_noise_is_drawn_only_in_core() -> None:
    """``core.protocols.measure`` (and core's samplers and exponential mechanism) is the one place noise is drawn."""
    bad = [c for p in sorted((ROOT / "dpviz").rglob("*.py"))
           if _unit(p) != "core" and p.name not in NOT_NOISE for c in _noise_calls(p)]
    assert not bad, "\n".join(bad)


def test_the_noise_scan_sees_a_sampler_call(tmp_path: Path) -> None:
    """The scan above is not vacuous: it flags each kind of call it looks for."""
    probe = ROOT / "dpviz" / "_probe_noise_scan.py"
    probe.write_text("def f(rng, noise, s):\n    discrete_laplace(1, 3)\n    rng.normal(size=3)\n"
                     "    noise.draw(s, 3, rng)\n    rng.integers(3)\n    Noise.laplace(1.0)\n", encoding="utf-8")
    try:
        assert [c.split()[-1] for c in _noise_calls(probe)] == ["discrete_laplace()", "normal()", "draw()"]
    finally:
        probe.unlink()


def test_no_file_over_600_lines() -> None:
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, "\n".join(long)


@pytest.mark.parametrize("cap", CAPS)
def test_every_capability_has_the_layout(cap: str) -> None:
    folder = ROOT / "dpviz" / cap
    missing = [f"{name}.py" for name in LAYOUT if not (folder / f"{name}.py").is_file()]
    assert not missing, f"dpviz/{cap} lacks {missing}"


@pytest.mark.parametrize("cap", CAPS)
def test_every_capability_plugs_in_every_hook(cap: str) -> None:
    c = next(c for c in CAPABILITIES if c.name == cap)
    for name in HOOK_NAMES:
        assert callable(c.hook(name)), f"{cap}: hook {name}"
    release = importlib.import_module(f"dpviz.{cap}.release")
    assert callable(release.release) and callable(release.simulate)
