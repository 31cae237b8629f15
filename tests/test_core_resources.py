"""dpviz.core.resources: the machine-memory probes and the size formatter the memory refusals use."""

import pytest

from dpviz.core.resources import available_memory, format_bytes, machine_memory


def test_format_bytes_units():
    assert format_bytes(512) == "512 bytes"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(100e9 * 128) == "11.6 TiB"
    assert format_bytes(2**80).endswith("PiB")


def test_memory_probes_are_consistent():
    total, avail = machine_memory(), available_memory()
    if total is not None:  # Linux CI: both known, available never above the machine's memory
        assert 0 < avail <= total


@pytest.mark.parametrize("preset, expected", [(None, False), ("1", True), ("0", False)])
def test_the_cli_turns_numpys_hugepage_advice_off_unless_the_user_chose(tmp_path, preset, expected):
    import os
    import subprocess
    import sys

    code = ("import sys\n"
            "from dpviz.cli import main\n"
            "assert 'numpy' not in sys.modules\n"  # the CLI imports NumPy lazily, after the choice
            f"assert main(['tree', 'generate', '--kind', 'complete', '--height', '3', '--output', {str(tmp_path / 't.csv')!r}]) == 0\n"
            "import os\n"
            "from numpy._core.multiarray import _get_madvise_hugepage\n"
            "print(_get_madvise_hugepage(), os.environ.get('NUMPY_MADVISE_HUGEPAGE'))\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if preset is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = preset
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    advice, value = out.split()[-2:]
    assert advice == str(expected) and value == (preset or "0")
