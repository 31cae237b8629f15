"""NumPy ↔ Arrow for primitive columns, by their buffers.

pyarrow imports pandas (a quarter of a second) on its first ``pa.array(...)``, ``Array.to_numpy()`` or
Python-scalar argument to a compute function when pandas is installed. The tree release path (reading
a CSV, writing the release) uses these helpers instead, so a ``tree release`` never pays for it
(``tests/test_tree_io_fast.py`` checks that pandas stays unimported). Zero-copy where the layout
allows: an Arrow array made here keeps its NumPy array alive through the buffer.

>>> import numpy as np
>>> a = from_numpy(np.array([3, 1, 2]), valid=np.array([True, False, True]))
>>> a.null_count, values(a)[[0, 2]].tolist(), valid(a).tolist()
(1, [3, 2], [True, False, True])
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["bools", "from_numpy", "string_scalar", "strings", "valid", "value_bytes", "values"]

_TYPES = {np.dtype(np.int64): pa.int64(), np.dtype(np.int32): pa.int32(), np.dtype(np.uint64): pa.uint64(),
          np.dtype(np.uint32): pa.uint32(), np.dtype(np.float64): pa.float64(), np.dtype(np.float32): pa.float32()}
_DTYPES = {t: d for d, t in _TYPES.items()}


def from_numpy(v: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A 1-D NumPy array of a fixed-width number type as an Arrow array (no copy when contiguous);
    ``valid`` False marks nulls (empty cells in a CSV)."""
    v = np.ascontiguousarray(v)
    if v.ndim != 1 or v.dtype not in _TYPES:
        raise TypeError(f"from_numpy: expected a 1-D array of {sorted(map(str, _TYPES))}, got {v.dtype} {v.shape}")
    bitmap, nulls = None, 0
    if valid is not None:
        nulls = int(v.size - np.count_nonzero(valid))
        if nulls:
            bitmap = pa.py_buffer(np.packbits(np.asarray(valid, bool), bitorder="little"))
    return pa.Array.from_buffers(_TYPES[v.dtype], v.size, [bitmap, pa.py_buffer(v)], null_count=nulls)


def values(arr: pa.Array) -> np.ndarray:
    """The values of a primitive Arrow array as a read-only NumPy view (null slots hold arbitrary
    values: combine with :func:`valid`)."""
    if arr.type not in _DTYPES:
        raise TypeError(f"values: expected one of {sorted(map(str, _DTYPES))}, got {arr.type}")
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(0, _DTYPES[arr.type])
    return np.frombuffer(buf, _DTYPES[arr.type])[arr.offset:arr.offset + len(arr)]


def valid(arr: pa.Array) -> np.ndarray:
    """Boolean mask, True where ``arr`` has a value (False at nulls)."""
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little")
    return bits[arr.offset:arr.offset + n].astype(bool)


def value_bytes(arr: pa.Array) -> np.ndarray:
    """The bytes a string array's values span, as a read-only uint8 view (no copy; the slots of nulls,
    if any, are included and may hold anything)."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise TypeError(f"value_bytes: expected a string array, got {arr.type}")
    if not len(arr):
        return np.zeros(0, np.uint8)
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    a, b = int(offsets[arr.offset]), int(offsets[arr.offset + len(arr)])
    return np.frombuffer(arr.buffers()[2], np.uint8)[a:b] if b > a else np.zeros(0, np.uint8)


def strings(texts: list[str]) -> pa.Array:
    """A few Python strings as an Arrow string array, made from buffers (``pa.array`` would import pandas)."""
    raw = [t.encode() for t in texts]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in raw]))).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])


def string_scalar(text: str) -> pa.Scalar:
    """``text`` as an Arrow string scalar (:func:`strings`): a compute function's Python ``str`` argument
    would import pandas (``pc.equal(col, "")`` → ``pc.equal(col, string_scalar(""))``)."""
    return strings([text])[0]


def bools(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow array (or chunked array) as a NumPy bool array, nulls False (``to_numpy`` would import
    pandas and turn nulls into ``None``)."""
    if isinstance(arr, pa.ChunkedArray):
        return np.concatenate([bools(c) for c in arr.chunks]) if arr.num_chunks else np.zeros(0, bool)
    if not pa.types.is_boolean(arr.type):
        raise TypeError(f"bools: expected a boolean array, got {arr.type}")
    n = len(arr)
    if not n:
        return np.zeros(0, bool)
    bits = np.unpackbits(np.frombuffer(arr.buffers()[1], np.uint8), bitorder="little")
    out = bits[arr.offset:arr.offset + n].astype(bool)
    return out & valid(arr) if arr.null_count else out
