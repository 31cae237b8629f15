"""dpviz.core: the atomic table writer and the capability registry (CLI verbs, samples)."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from dpviz.core import tables
from dpviz.core.registry import CAPABILITIES, PAGE_SKELETON, capability, load_sample
from dpviz.errors import InputError
from tests.apptest_helpers import ROOT

DF = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})


def test_write_release_is_atomic_with_sidecar(tmp_path):
    out = tmp_path / "r.csv"
    tables.write_release(DF, out, {"mode": "release"})
    assert out.read_text() == "a,b\n1,0.5\n2,1.5\n"
    assert json.loads(tables.meta_path(out).read_text())["mode"] == "release"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.csv.meta.json"]  # no temp files left


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    out.write_text("old\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        tables.write_table(DF, out)
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["r.csv"]


def test_never_over_an_input(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("x\n1\n")
    link = tmp_path / "link.csv"
    link.symlink_to(src)
    for dest in (src, link, tmp_path / "." / "in.csv"):
        with pytest.raises(InputError, match="input"):
            tables.write_release(DF, dest, {}, inputs=[src])
    assert src.read_text() == "x\n1\n"
    with pytest.raises(InputError, match="directory"):
        tables.write_table(DF, tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        tables.write_table(DF, tmp_path / "nope" / "x.csv")


def test_registry_declares_every_capability():
    names = [c.name for c in CAPABILITIES]
    assert names[:2] == ["tree", "stream"]
    for cap in CAPABILITIES:
        assert cap.sections == PAGE_SKELETON and "Private release" in cap.sections
        assert cap.unit_of_privacy
        for s in cap.samples:
            assert load_sample(cap.name, f"sample:{s.name}") is not None
    assert "user-level" in capability("stream").unit_of_privacy
    with pytest.raises(InputError, match="sample:county"):
        load_sample("tree", "sample:nope")
    with pytest.raises(InputError):
        capability("nope")


def test_cli_help_lists_the_registry_and_the_modes():
    out = subprocess.run([sys.executable, "-m", "dpviz", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0
    for cap in CAPABILITIES:
        assert cap.name in out.stdout
        for s in cap.samples:
            assert f"sample:{s.name}" in out.stdout
    assert "simulate" in out.stdout and "release" in out.stdout


def test_atomic_outputs_get_the_umask_mode_or_keep_the_replaced_files_mode(tmp_path):
    import os
    import stat

    from dpviz.core.tables import _umask, write_text

    old = os.umask(0o027)
    try:
        assert _umask() == 0o027
        new = write_text("a\n", tmp_path / "new.csv")
        assert stat.S_IMODE(new.stat().st_mode) == 0o640  # 0666 minus the umask, not mkstemp's 0600
        kept = tmp_path / "kept.csv"
        kept.write_text("old\n")
        kept.chmod(0o604)
        write_text("b\n", kept)
        assert stat.S_IMODE(kept.stat().st_mode) == 0o604 and kept.read_text() == "b\n"
    finally:
        os.umask(old)
