"""Fenwick-tree (树状数组) strategy for continual counting: lowbit, M, B and their fast actions.

Sources: the doctoral thesis chapter 5, "Differentially private continual data release based on the
matrix mechanism" (in Chinese), and P. M. Fenwick, "A New Data Structure for Cumulative Frequency
Tables", Software: Practice and Experience 24(3), 1994. Notation of the thesis chapter 5: workload W (N×N lower-triangular ones), strategy M with
W = B M (Eq. 5.4-5.6, Alg. 5.1-5.3). Nodes and time steps are 1-based as in the text; arrays
returned here are 0-based (entry ``i - 1`` is node/step ``i``).

* node ``i`` holds c_i = Σ a_j for j in (i - lowbit(i), i]          (Eq. 5.5, Alg. 5.2)
* s_p = c_p + s_{p - lowbit(p)}: B's row p picks the chain p, p - lowbit(p), ...  (Eq. 5.6, Alg. 5.3)
* Thm 5.1: Δ_M = max column L1 norm of M = floor(log2 N) + 1 (= N.bit_length()).
* Thm 5.2: row p of B has popcount(p) ones.

**Bounds** (module constants, stated in the CLI's ``--help`` and in every message that enforces them):
:data:`MAX_STEPS` caps the horizon N and the rows of a stream file (raise it with ``--max-steps N``);
:data:`MAX_COUNT` and :data:`MAX_TOTAL` bound one step's count and the running total, so that integer
totals are exact in float64 and int64 sums never overflow. :func:`check_horizon` refuses, before any
allocation, a horizon whose memory estimate exceeds this machine's memory (an InputError, never a
``MemoryError``); :func:`check_steps` adds the cap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpviz.core.resources import format_bytes, machine_memory
from dpviz.errors import InputError

if TYPE_CHECKING:  # scipy.sparse is imported by the two matrix builders only (fast CLI startup)
    import scipy.sparse as sp

MAX_STEPS = 1 << 20
"""Default cap on the horizon N and on the rows of a stream file (2^20 = 1,048,576 steps); the CLI's
``--max-steps N`` and ``read_stream_csv(..., max_steps=N)`` raise it."""
MAX_COUNT = 10**12
"""Largest count of one step, in absolute value (a bound, not a resource cap: rescale a series above
it, e.g. count in thousands)."""
MAX_TOTAL = 2**53 - 1
"""Largest running total: every running total of integer counts is then exact in float64."""
STEP_BYTES = 512
"""Memory estimate per step of the O(N) stream work (measured peaks at N = 2^20: 24-260 bytes per
step for the structure, the noise and the estimate of one mechanism, plus its output table)."""


def bound_violation(a: np.ndarray) -> tuple[int, str] | None:
    """The first entry of ``a`` (0-based) whose count exceeds ±:data:`MAX_COUNT` or whose running total
    exceeds ±:data:`MAX_TOTAL`, with what is wrong (for a message), or None.

    The comparisons are exact: integer arrays are compared as integers before any conversion, both
    bounds are integers below 2^53, and a float64 running sum of integers within ±MAX_COUNT is exact
    until it first passes 2^53. Non-finite entries are the caller's to refuse first.
    """
    a = np.asarray(a)
    if a.size == 0:
        return None
    if a.dtype.kind in "iu":
        big = a > MAX_COUNT
        if a.dtype.kind == "i":
            big |= a < -MAX_COUNT
    else:
        big = np.abs(a.astype(float, copy=False)) > MAX_COUNT
    i = int(np.argmax(big))
    if big[i]:
        return i, (f"the count {a[i].item()!r} is beyond {MAX_COUNT:,}, the largest count accepted per step "
                   "(MAX_COUNT); rescale the series (e.g. count in thousands)")
    total = np.cumsum(a, dtype=float)
    over = np.abs(total) > MAX_TOTAL
    i = int(np.argmax(over))
    if over[i]:
        return i, (f"the running total reaches {total[i]:.6g}, beyond the largest total accepted, 2^53 - 1 = "
                   f"{MAX_TOTAL:,} (MAX_TOTAL: beyond it totals are not exact in float64); rescale the series "
                   "(e.g. count in thousands)")
    return None


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def check_horizon(horizon: int, *, per_step: float = STEP_BYTES, name: str = "horizon") -> int:
    """Validate a horizon N (a positive integer) and return it as ``int``.

    Refuses, before anything is allocated, an N whose memory estimate (``per_step`` bytes per step)
    exceeds this machine's memory: an :class:`InputError` instead of a ``MemoryError`` or the OOM killer.
    """
    n = _positive_int(horizon, name)
    need, have = n * per_step, machine_memory()
    if have is not None and need > have:
        raise InputError(f"{name}: N = {n:,} steps would need about {format_bytes(need)} of memory (estimate), more "
                         f"than this machine has ({format_bytes(have)}); choose a smaller horizon")
    return n


def check_steps(horizon: int, max_steps: int = MAX_STEPS, *, per_step: float = STEP_BYTES,
                name: str = "--horizon") -> int:
    """:func:`check_horizon` plus the cap: N at most ``max_steps`` (default :data:`MAX_STEPS`). The message
    gives the memory estimate, the cap and how to raise it. Commands call it before any work."""
    cap = _positive_int(max_steps, "--max-steps")
    n = _positive_int(horizon, name)
    if n > cap:
        raise InputError(f"{name} {n:,} is above the cap of {cap:,} steps (it would need about "
                         f"{format_bytes(n * per_step)} of memory, estimate); raise the cap with --max-steps N")
    return check_horizon(n, per_step=per_step, name=name)


def lowbit(x: np.ndarray | int) -> np.ndarray | int:
    """Alg. 5.1: lowbit(x) = x & -x, the value of the lowest set bit of x (lowbit(10) = 2)."""
    if isinstance(x, (int, np.integer)):
        return int(x) & -int(x)
    x = np.asarray(x, dtype=np.int64)
    return x & -x


def popcount(x: np.ndarray) -> np.ndarray:
    """Number of ones in the binary expansion of each entry (Thm 5.2)."""
    return np.bitwise_count(np.asarray(x, dtype=np.int64)).astype(np.int64)


def nodes(horizon: int) -> np.ndarray:
    """The node / time indices 1..N."""
    return np.arange(1, check_horizon(horizon) + 1, dtype=np.int64)


def delta_m(horizon: int) -> int:
    """Thm 5.1: ||M_N||_1 = floor(log2 N) + 1, the L1 sensitivity of the unweighted strategy."""
    return check_horizon(horizon).bit_length()


def strategy_nnz(horizon: int) -> int:
    """Non-zeros of M_N: Σ_i lowbit(i), in O(log N) (so the matrix views can be sized before they are built)."""
    n = _positive_int(horizon, "horizon")
    # lowbit(i) = 2^k for the n // 2^k - n // 2^(k+1) values of i <= n with exactly k trailing zeros
    return sum((n >> k) - (n >> (k + 1)) << k for k in range(n.bit_length()))


def strategy_matrix(horizon: int) -> sp.csr_array:
    """Alg. 5.2: sparse M_N, row i has ones in columns (i - lowbit(i), i]; O(N log N) non-zeros."""
    import scipy.sparse as sp

    i = nodes(horizon)
    length = lowbit(i)
    rows = np.repeat(i - 1, length)
    # column = row - offset, offset running 0..lowbit-1 inside each row
    starts = np.cumsum(length) - length
    offset = np.arange(length.sum()) - np.repeat(starts, length)
    cols = rows - offset
    data = np.ones(rows.size)
    return sp.csr_array((data, (rows, cols)), shape=(horizon, horizon))


def reconstruction_matrix(horizon: int) -> sp.csr_array:
    """Alg. 5.3: sparse B with W = B M; row p has ones at the chain p, p - lowbit(p), ... (Eq. 5.6)."""
    import scipy.sparse as sp

    p = nodes(horizon)
    rows, cols = [], []
    cur = p.copy()
    # one pass per bit: the chain has popcount(p) <= log2 N + 1 entries
    while cur.size:
        rows.append(p - 1)
        cols.append(cur - 1)
        cur = cur - lowbit(cur)
        keep = cur > 0
        p, cur = p[keep], cur[keep]
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(horizon, horizon))


def workload_matrix(horizon: int) -> np.ndarray:
    """Dense W (Eq. 5.4), for small-N references only."""
    return np.tril(np.ones((horizon, horizon)))


def _numeric(values: np.ndarray) -> np.ndarray:
    """int64 for integer input (exact sums of counts, as a release needs), float64 otherwise."""
    a = np.asarray(values)
    return a.astype(np.int64, copy=False) if a.dtype.kind in "iub" else a.astype(float, copy=False)


def node_sums(series: np.ndarray) -> np.ndarray:
    """M a without building M: c_i = S_i - S_{i - lowbit(i)} with S the prefix sums (Eq. 5.5).

    Works along the last axis, so a (draws, N) array is fine. Integer counts give exact int64 node
    sums (what a release with discrete noise measures); anything else gives float64.
    """
    a = _numeric(series)
    n = a.shape[-1]
    s = np.concatenate([np.zeros(a.shape[:-1] + (1,), dtype=a.dtype), np.cumsum(a, axis=-1)], axis=-1)
    i = nodes(n)
    return s[..., i] - s[..., i - lowbit(i)]


def chain_sum(values: np.ndarray) -> np.ndarray:
    """B v without building B: out_p = Σ over the chain p, p - lowbit(p), ... of v (Eq. 5.6).

    The loop runs over the O(log N) bits of p, each pass vectorised over all p; the summation order
    (node p first, then towards smaller nodes) is the one the streaming implementations use.
    Works along the last axis; integer input stays int64 (exact).
    """
    v = _numeric(values)
    n = v.shape[-1]
    padded = np.concatenate([np.zeros(v.shape[:-1] + (1,), dtype=v.dtype), v], axis=-1)  # index 0 = empty node
    p = nodes(n)
    out = padded[..., p].copy()
    cur = p - lowbit(p)
    while np.any(cur > 0):
        out += padded[..., cur]
        cur = cur - lowbit(cur)
        cur[cur < 0] = 0
    return out


def column_chain_sum(values: np.ndarray) -> np.ndarray:
    """Mᵀ v: for column j, the sum of v_i over the nodes i that contain j (j, j + lowbit(j), ... <= N).

    Computed as a difference array (each node adds v_i on its interval (i - lowbit(i), i]),
    so O(N) and loop-free.
    """
    v = np.asarray(values, dtype=float)
    n = v.size
    i = nodes(n)
    diff = np.zeros(n + 1)
    np.add.at(diff, i - lowbit(i), v)
    diff[1:] -= v
    return np.cumsum(diff)[:n]


def column_norms_sq_b(horizon: int) -> np.ndarray:
    """||B(:, i)||² = number of steps p whose chain contains node i = min(lowbit(i), N - i + 1).

    Proof: i is on p's chain iff p agrees with i above bit log2(lowbit(i)) and p >= i, i.e.
    p = i + r with 0 <= r < lowbit(i); of those, the ones <= N count.
    """
    i = nodes(horizon)
    return np.minimum(lowbit(i), horizon - i + 1).astype(float)
