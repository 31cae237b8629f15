"""A/B of whole release commands on two checkouts of dpviz: the same commands, fresh processes, interleaved.

Run: ``git worktree add /tmp/old <commit> && python bench/ab_release.py /tmp/old`` (the checkout given first is
"old", this one "new"; both run with this venv's Python and packages, ``PYTHONPATH`` pointing at each checkout).
Prints the best of 3 per command and new/old. Every release charges a throw-away ledger.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tree_io_bench import tree_csv  # noqa: E402 - bench/ is on sys.path when run as a script

NEW = Path(__file__).resolve().parents[1]


def main() -> int:
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "dpviz").is_dir():
        print(__doc__)
        return 2
    old = Path(sys.argv[1]).resolve()
    tmp = Path(tempfile.mkdtemp())
    src = tree_csv(tmp / "t.csv", 1_000_000)
    led = ["--ledger", str(tmp / "ledger.sqlite3")]
    cases = {
        "tree release, 10^6-node file": ["tree", "release", str(src), "--structure-from-data", "--epsilon", "1", *led],
        "tree release sample:county": ["tree", "release", "sample:county", "--epsilon", "1", *led],
        "stream release sample:bike": ["stream", "release", "sample:bike", "--mechanism", "fenwick-fda", "--epsilon",
                                       "1", *led],
        "graph release sample:hep-th": ["graph", "release", "sample:hep-th", "--epsilon", "1", *led],
        "python -m dpviz --help": ["--help"],
    }
    k = 0
    for name, argv in cases.items():
        best = {}
        for which, root in (("old", old), ("new", NEW)):
            best[which] = float("inf")
        for _ in range(3):
            for which, root in (("old", old), ("new", NEW)):
                k += 1
                out = [] if argv == ["--help"] else ["--output", str(tmp / f"out{k}.csv")]
                env = {**os.environ, "PYTHONPATH": str(root), "XDG_DATA_HOME": str(tmp / "xdg"),
                       "OPENBLAS_NUM_THREADS": "1"}
                t = time.perf_counter()
                r = subprocess.run([sys.executable, "-m", "dpviz", *argv, *out], capture_output=True, text=True,
                                   env=env, cwd=root)
                best[which] = min(best[which], time.perf_counter() - t)
                if r.returncode != 0:
                    print(f"{which}: {name}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        print(f"{name:32s} old {best['old']:.3f} s  new {best['new']:.3f} s  new/old {best['new'] / best['old']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
