"""dpviz.core.resources: the machine-memory probes and the size formatter the memory refusals use."""

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
