"""Startup (issue 11 "Startup"): ``python -m dpviz --help`` against ``python -c "import numpy"`` (goal <= 3x),
and a small release, ``tree release sample:county``, wall time (goal < 1 s). Fresh subprocesses, best of 5,
interleaved so that both sides see the same load; the ledger lives in a temporary folder (nothing charged).

Run: ``python bench/startup_bench.py [--quick]`` (``--quick``: best of 2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cell_s, cell_verdict, cell_x, record  # noqa: E402 - bench/ is on sys.path when run as a script

GOAL_HELP_RATIO, GOAL_COUNTY_S = 3.0, 1.0
SOURCE = "bench/startup_bench.py"


def wall(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one fresh ``python ARGS`` (output discarded; a non-zero exit is an error)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def best(commands: dict[str, list[str]], env: dict[str, str], repeat: int) -> dict[str, float]:
    """Best wall time of each command over ``repeat`` interleaved rounds, after one warm-up round."""
    out = {name: float("inf") for name in commands}
    for round_ in range(repeat + 1):
        for name, args in commands.items():
            t = wall(args, env)
            if round_:
                out[name] = min(out[name], t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="best of 2 instead of 5")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dpviz-startup-") as d:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(Path(d) / "xdg")}
        env.pop("DPVIZ_LEDGER", None)  # no ledger is charged by the bench
        t = best({"numpy": ["-c", "import numpy"], "help": ["-m", "dpviz", "--help"],
                  "county": ["-m", "dpviz", "tree", "release", "sample:county", "--epsilon", "1",
                             "--output", str(Path(d) / "o.csv")]}, env, 2 if a.quick else 5)
    r = t["help"] / t["numpy"]
    print(f"startup bench: fresh processes, best of {2 if a.quick else 5}; {os.cpu_count()} cores")
    print(f"  python -c 'import numpy' (reference)                    {t['numpy']:7.3f} s")
    print(f"  python -m dpviz --help                                  {t['help']:7.3f} s {r:6.2f}x  "
          f"goal <= {GOAL_HELP_RATIO:g}x: {'met' if r <= GOAL_HELP_RATIO else 'NOT met'}")
    print(f"  python -m dpviz tree release sample:county --epsilon 1  {t['county']:7.3f} s           "
          f"goal < {GOAL_COUNTY_S:g} s: {'met' if t['county'] < GOAL_COUNTY_S else 'NOT met'}")
    record("startup.help", cell_s(t["help"]), f'`python -c "import numpy"` {cell_s(t["numpy"])}: {cell_x(r)}',
           f"≤ {GOAL_HELP_RATIO:g}×: {cell_verdict(r <= GOAL_HELP_RATIO)}", quick=a.quick, source=SOURCE,
           values={"help_s": t["help"], "numpy_s": t["numpy"], "ratio": r})
    record("startup.county", f"{cell_s(t['county'])} wall", "—",
           f"< {GOAL_COUNTY_S:g} s: {cell_verdict(t['county'] < GOAL_COUNTY_S)}", quick=a.quick, source=SOURCE,
           values={"county_s": t["county"]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
