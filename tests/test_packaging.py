"""dpviz as a real package: the wheel ships the bundled data and runs without the source tree.

The wheel is built from a copy of the sources (so a stale ``build/`` folder in the checkout cannot leak
into it), installed with ``--no-deps`` into a fresh virtual environment (no system site-packages) whose
only view of numpy, pandas ... is a ``.pth`` line naming this interpreter's site-packages (path lines in a
``.pth`` file do not run the ``.pth`` files found there, so the checkout's editable install stays
invisible), and run from an unrelated folder with no ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dpviz.core.assets import ASSETS_DIR, asset

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_FILES = (
    "SOURCES.md", "us_county_population_2019.csv", "flights_daily_2001.csv", "bike_hourly_2011_2012.csv",
    "adult_census_1994.csv.gz", "adult_census_1994.domain.json", "titanic_passengers.csv.gz",
    "titanic_passengers.domain.json",
    *(f"graphs/{g}.{ext}" for g in ("karate", "netscience", "polblogs", "power", "hep-th", "email-enron")
      for ext in ("csv.gz", "json")),
)


def _setuptools_builds_wheels() -> bool:
    """setuptools ≥ 70.1 has bdist_wheel built in: the wheel can be built here without any download."""
    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)


def _run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """Build the wheel, install it into a fresh venv; {python, dpviz, wheel, elsewhere, env}."""
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "dpviz", src / "dpviz", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    isolation = ["--no-build-isolation"] if _setuptools_builds_wheels() else []
    _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(dist), *isolation], cwd=src, timeout=300)
    (wheel,) = dist.glob("dpviz-*.whl")

    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
    python = venv / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp).stdout.strip())
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz_dpviz_test_deps.pth").write_text("\n".join(deps) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], cwd=tmp, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return {"python": str(python), "dpviz": str(venv / "bin" / "dpviz"), "wheel": wheel, "elsewhere": elsewhere,
            "env": env, "purelib": purelib}


def test_wheel_holds_every_bundled_file_and_no_benchmark(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for f in SAMPLE_FILES:
        assert f"dpviz/{ASSETS_DIR}/{f}" in names, f
    assert not [n for n in names if "bench" in Path(n).name], "benchmarks live in bench/, not in the package"
    assert not [n for n in names if n.startswith(("tests/", "pages/", "tools/"))]
    assert {f"dpviz/ui/{m}.py" for m in ("__init__", "pages", "sources", "sections", "release_panel")} <= names  # the UI layer
    assert "dpviz/ui/assets/plotly_chart.js" in names  # the chart component's script (dpviz.ui.charts)


def test_installed_package_is_the_wheel_and_finds_its_data(installed):
    code = ("import json, dpviz, dpviz.core.assets as d; from dpviz.tree import samples; from dpviz.stream import samples as ss; "
            "from dpviz.marginals.samples import load_titanic_sample; from dpviz.graph.samples import load_graph_sample; "
            "print(json.dumps({'file': dpviz.__file__, 'county': len(samples.load_county_population()), "
            "'flights': len(ss.load_flights_daily()), 'titanic': load_titanic_sample().N, "
            "'karate': load_graph_sample('karate').n_edges, 'asset': str(d.asset('graphs/karate.json'))}))")
    out = json.loads(_run([installed["python"], "-c", code], cwd=installed["elsewhere"], env=installed["env"]).stdout)
    assert Path(out["file"]).is_relative_to(installed["purelib"]), out["file"]
    assert not Path(out["file"]).is_relative_to(ROOT)
    assert Path(out["asset"]).is_relative_to(installed["purelib"] / "dpviz" / ASSETS_DIR)
    assert (out["county"], out["flights"], out["titanic"], out["karate"]) == (3142, 181, 1312, 78)


def test_cli_runs_on_bundled_samples_from_another_folder(installed):
    cwd, env = installed["elsewhere"], installed["env"]
    out = cwd / "county.tree-release.csv"
    rel = _run([installed["python"], "-m", "dpviz", "tree", "release", "sample:county", "--epsilon", "1",
                "--output", str(out)], cwd=cwd, env=env)
    assert out.exists() and (cwd / "county.tree-release.csv.meta.json").exists()
    assert len(out.read_text().splitlines()) > 3142 and "release" in rel.stdout
    sim = _run([installed["dpviz"], "graph", "simulate", "sample:karate", "--epsilon", "1", "--method", "drf-dp",
                "--seed", "3"], cwd=cwd, env=env)
    assert "34 vertices, 78 edges" in sim.stdout


def test_locator_refuses_paths_outside_the_assets_folder():
    assert asset("graphs/karate.json").read_bytes().startswith(b"{")
    for bad in ("../__init__.py", "", "graphs/../../cli.py"):
        with pytest.raises(ValueError):
            asset(bad)
    with pytest.raises(FileNotFoundError, match="build_assets.py"):
        asset("no-such-file.csv")
