"""Bottom-up and top-down sweeps over any tree in O(n) vectorised work: tree contraction (rake and compress).

Source of the method: G. L. Miller and J. H. Reif, "Parallel Tree Contraction and Its Application", FOCS 1985
(rake the leaves, compress the chains; O(log n) rounds in expectation with random mates). It serves the
deep-tree engine of :mod:`dpviz.tree.propagation` and :mod:`dpviz.tree.gmc`, where a pass per height block
(h Python steps) or a sparse LU factorisation would dominate: paths, caterpillars, a 10⁶-node tree of height 4·10⁴.

A :class:`Contraction` is built once per tree structure from the parent array (root 0, ``parent[i] < i``, as
in the Descending Order of Height of Def. 6). Round r:

* **rake**: every live non-root node without live children is removed; its value is final and its parent
  absorbs its term (one unbuffered scatter ``ufunc.at`` over the raked nodes: NumPy ≥ 2 runs it in a few ns
  per element, less than sorting the round by parent once to ``reduceat`` over runs);
* **compress**: among the live nodes with exactly one live child (chain nodes), an independent set is spliced
  out (its child is re-attached to its parent, the two edge maps composed): the top node of every chain, and
  an interior node whose coin is 1 while its parent's coin is 0 (a fixed hash of node and round: the same
  schedule on every run).

Every round removes at least one node, the total work over all rounds is O(n), and the rounds are
O(log n) in expectation; each sweep replays the schedule with a few NumPy calls per round.

Four sweeps (all on the whole tree given, indices 0..N-1):

* :func:`up_affine`: s_i = a_i + Σ_{c∈C_i} k_c s_c (upward propagation, Prop. 2 / Eq. 14, with s = w ∘ z);
* :func:`down_affine`: z_i = b_i + k_i z_{f_i} (downward propagation, Prop. 3 / Eq. 15);
* :func:`up_max`: s_i = max(a_i, max_{c∈C_i} s_c) (subtree maxima: heights from depths);
* :func:`up_pivots`: t_i = a_i − Σ_{c∈C_i} e_c / t_c (the GMC pivots of Alg. 1 / Thm. 9, generalised in
  :mod:`dpviz.tree.gmc`). A node's term is a Möbius map of its own value, so a spliced chain is one
  Möbius map, kept in continued-fraction form P − Q/(t + R) (as accurate as the recursion; 2×2 matrix
  products lose up to 10⁻⁹ relative to cancellation on variances spread over orders of magnitude).

Edge coefficients whose products along a chain underflow contribute less than the smallest double to the
result, as they would in the sequential recursion.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["Contraction", "contraction", "up_affine", "down_affine", "up_pivots", "up_max"]


@dataclass(frozen=True, eq=False)
class Contraction:
    """The rake/compress schedule of one tree (see the module docstring).

    Per round r, slices ``[rake_ptr[r], rake_ptr[r+1])`` of ``rake`` (the raked nodes, in index order) and
    ``rake_parent`` (each one's parent at that time), and ``[splice_ptr[r], splice_ptr[r+1])`` of ``splice``
    (the spliced nodes), ``splice_child`` (each one's only live child) and ``splice_parent`` (its parent then,
    the child's new parent). ``n``: nodes.
    """

    n: int
    rake: np.ndarray
    rake_parent: np.ndarray
    rake_ptr: np.ndarray
    splice: np.ndarray
    splice_child: np.ndarray
    splice_parent: np.ndarray
    splice_ptr: np.ndarray

    @property
    def rounds(self) -> int:
        return int(self.rake_ptr.shape[0] - 1)

    def raked(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, their parents) raked in round r."""
        a, b = int(self.rake_ptr[r]), int(self.rake_ptr[r + 1])
        return self.rake[a:b], self.rake_parent[a:b]

    def spliced(self, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(nodes, their children, their parents) spliced out in round r."""
        a, b = int(self.splice_ptr[r]), int(self.splice_ptr[r + 1])
        return self.splice[a:b], self.splice_child[a:b], self.splice_parent[a:b]

    def relabel(self, new: np.ndarray) -> Contraction:
        """The same schedule with node i called ``new[i]`` (a permutation of 0..n-1): the sweeps only follow
        the indices, so it serves the renumbered tree, e.g. a schedule built in BFS numbering serves the tree
        in DOH numbering (:func:`dpviz.tree.model.tree_from_parents`)."""
        new = np.asarray(new).astype(np.intp, copy=False)
        return replace(self, rake=new[self.rake], rake_parent=new[self.rake_parent], splice=new[self.splice],
                       splice_child=new[self.splice_child], splice_parent=new[self.splice_parent])


def _coins(nodes: np.ndarray, r: int) -> np.ndarray:
    """A fixed pseudo-random bit per (node, round): MurmurHash3's 32-bit finaliser of node ⊕ round seed."""
    h = nodes.astype(np.uint32) ^ np.uint32((0x9E3779B9 * (r + 1)) & 0xFFFFFFFF)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return (h & np.uint32(1)).astype(bool)


def contraction(parent: np.ndarray) -> Contraction:
    """The schedule of the tree with this parent array (``parent[0] = -1``, ``0 <= parent[i] < i`` else)."""
    n = int(parent.shape[0])
    dt = np.intp  # every array here indexes: NumPy converts any other index type on each gather and scatter
    par = np.asarray(parent).astype(dt, copy=True)
    par[0] = -1
    cnt = np.bincount(par[1:], minlength=n).astype(np.int64)
    kid = np.zeros(n, np.int64)  # Σ of the live children's indices: the child itself when cnt == 1
    if 1 < n < (1 << 26):  # sums below n²/2 < 2⁵³: exact in float64
        kid[:] = np.bincount(par[1:], weights=np.arange(1, n, dtype=float), minlength=n)
    elif n > 1:
        order = np.argsort(par[1:], kind="stable")
        kids = (order + 1).astype(np.int64)
        ps = par[1:][order]
        starts = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
        kid[ps[starts]] = np.add.reduceat(kids, starts)
        del order, kids, ps, starts
    in_chain = np.zeros(n, bool)
    spliced = np.zeros(n, bool)
    live = np.arange(1, n, dtype=dt)  # live non-root nodes
    out: dict[str, list] = {k: [] for k in ("rake", "rpar", "splice", "schild", "sparent")}
    rp, sp = [0], [0]
    r = 0
    while live.size:
        leaf = cnt[live] == 0
        lv = live[leaf]
        lp = par[lv]
        np.subtract.at(cnt, lp, 1)
        np.subtract.at(kid, lp, lv)
        live = live[~leaf]
        out["rake"].append(lv)
        out["rpar"].append(lp)
        rp.append(rp[-1] + lv.size)
        # compress: an independent set of the chain nodes (exactly one live child)
        u = live[cnt[live] == 1]
        pu = par[u]
        in_chain[u] = True
        top = ~in_chain[pu]
        coin = _coins(u, r)
        parent_top = np.ones(u.size, bool)
        inner = ~top
        parent_top[inner] = ~in_chain[par[pu[inner]]]
        parent_coin = _coins(pu, r)
        sel = top | (coin & ~parent_coin & ~parent_top)
        in_chain[u] = False
        s, q = u[sel], pu[sel]
        g = kid[s].astype(dt)
        par[g] = q
        np.add.at(kid, q, g.astype(np.int64) - s)
        if s.size:
            spliced[s] = True
            live = live[~spliced[live]]
        out["splice"].append(s)
        out["schild"].append(g)
        out["sparent"].append(q)
        sp.append(sp[-1] + s.size)
        r += 1

    ix = np.intp  # the sweeps index with these arrays: NumPy gathers and scatters convert other index types per call

    def cat(key: str, dtype) -> np.ndarray:
        parts = out[key]
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    return Contraction(
        n=n, rake=cat("rake", ix), rake_parent=cat("rpar", ix), rake_ptr=np.asarray(rp, np.int64),
        splice=cat("splice", ix), splice_child=cat("schild", ix), splice_parent=cat("sparent", ix),
        splice_ptr=np.asarray(sp, np.int64),
    )


def up_affine(c: Contraction, a: np.ndarray, k: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """s_i = a_i + Σ_{c∈C_i} k_c s_c for every node (``k`` None: 1, subtree sums). ``out`` may be ``a``.

    Each live node x carries the affine map s ↦ kk_x s + m_x that sends its value to its current parent's sum;
    splicing x (child g) composes g's map with x's: kk_g ← kk_x kk_g, m_g ← kk_x (a_x + m_g) + m_x. With unit
    ``k`` every kk stays 1 and is not stored."""
    s = np.array(a, dtype=float, copy=True) if out is None else out
    if out is not None and out is not a:
        np.copyto(s, a)
    kk = None if k is None else np.array(k, dtype=float, copy=True)
    m = np.zeros(c.n)
    saved = []
    for r in range(c.rounds):
        x, p = c.raked(r)
        if x.size:
            val = s[x] if kk is None else kk[x] * s[x]
            if r:  # no map has an offset before the first splice
                val += m[x]
            np.add.at(s, p, val)
        sx, g, _ = c.spliced(r)
        if sx.size:
            mg = m[g]
            if kk is None:
                saved.append((None, mg))
                m[g] = s[sx] + mg + m[sx]
            else:
                kg, ks = kk[g], kk[sx]
                saved.append((kg, mg))
                m[g] = ks * (s[sx] + mg) + m[sx]
                kk[g] = ks * kg
        else:
            saved.append(None)
    for r in range(c.rounds - 1, -1, -1):  # a spliced node's sum from its child's finished sum
        sx, g, _ = c.spliced(r)
        if sx.size:
            kg, mg = saved[r]
            s[sx] += (s[g] if kg is None else kg * s[g]) + mg
    return s


def down_affine(c: Contraction, b: np.ndarray, k: np.ndarray | None = None) -> np.ndarray:
    """z_i = b_i + k_i z_{f_i} for every node (z_0 = b_0; ``k`` None: 1, root-to-node path sums).

    Forward, splicing x (child g) composes g's map to x with x's map to its parent: off_g ← off_g + k_g off_x,
    k_g ← k_g k_x; backward (rounds reversed, spliced before raked), every removed node reads its parent then."""
    off = np.array(b, dtype=float, copy=True)
    kk = None if k is None else np.array(k, dtype=float, copy=True)
    for r in range(c.rounds):
        sx, g, _ = c.spliced(r)
        if sx.size:
            if kk is None:
                off[g] += off[sx]
            else:
                kg = kk[g]
                off[g] += kg * off[sx]
                kk[g] = kg * kk[sx]
    for r in range(c.rounds - 1, -1, -1):
        sx, _, q = c.spliced(r)
        if sx.size:
            off[sx] += off[q] if kk is None else kk[sx] * off[q]
        x, p = c.raked(r)
        if x.size:
            off[x] += off[p] if kk is None else kk[x] * off[p]
    return off


def up_pivots(c: Contraction, a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """t_i = a_i − Σ_{c∈C_i} e_c / t_c for every node (all t_i must come out positive: e.g. the GMC pivots).

    A node's term to its current parent is a Möbius map of its own value, held in the continued-fraction
    form t ↦ P − Q / (t + R) (initially P = R = 0, Q = e), whose composition mirrors the recursion itself
    (no products of raw 2×2 matrices, whose entries would cancel): splicing x (child g), with
    A = a_x + P_g + R_x, gives g the map P = P_x − Q_x/A, Q = Q_x Q_g / A², R = R_g − Q_g/A. A long chain's
    Q underflows to 0 exactly when its bottom no longer moves the top's value."""
    t = np.array(a, dtype=float, copy=True)
    pp, qq, rr = np.zeros(c.n), np.array(e, dtype=float, copy=True), np.zeros(c.n)
    saved = []
    for r in range(c.rounds):
        x, p = c.raked(r)
        if x.size:
            den = t[x]
            if r:
                den += rr[x]
            val = np.divide(qq[x], den, out=den)
            if r:
                np.subtract(val, pp[x], out=val)  # t_p gets P − Q/(t + R): subtracted below
            np.subtract.at(t, p, val)
        sx, g, _ = c.spliced(r)
        if sx.size:
            pg, qg, rg = pp[g], qq[g], rr[g]
            saved.append((pg, qg, rg))
            inv_a = t[sx] + pg
            inv_a += rr[sx]
            np.divide(1.0, inv_a, out=inv_a)
            qx = qq[sx]
            pp[g] = pp[sx] - qx * inv_a
            qg_a = qg * inv_a
            qq[g] = qx * inv_a * qg_a
            rr[g] = rg - qg_a
        else:
            saved.append(None)
    for r in range(c.rounds - 1, -1, -1):
        sx, g, _ = c.spliced(r)
        if sx.size:
            pg, qg, rg = saved[r]
            t[sx] += pg - qg / (t[g] + rg)
    return t


def up_max(c: Contraction, a: np.ndarray) -> np.ndarray:
    """s_i = max(a_i, max_{c∈C_i} s_c) for every node: the maximum of ``a`` over each subtree (e.g. the deepest
    depth below a node, whence its height, Def. 2). Each live node x sends max(s_x, b_x) to its current parent
    (b = −∞ at first); splicing x (child g) gives b_g ← max(s_x, b_g, b_x), s_x holding a_x and its raked
    children's terms; backward, s_x = max(s_x, s_g, b_g as it was then). Exact for integers."""
    s = np.array(a, copy=True)
    low = np.iinfo(s.dtype).min if s.dtype.kind in "iu" else -np.inf
    b = np.full(c.n, low, s.dtype)
    saved = []
    for r in range(c.rounds):
        x, p = c.raked(r)
        if x.size:
            val = s[x] if not r else np.maximum(s[x], b[x])  # no map has a bound before the first splice
            np.maximum.at(s, p, val)
        sx, g, _ = c.spliced(r)
        if sx.size:
            bg = b[g]
            saved.append(bg)
            b[g] = np.maximum(np.maximum(s[sx], bg), b[sx])
        else:
            saved.append(None)
    for r in range(c.rounds - 1, -1, -1):
        sx, g, _ = c.spliced(r)
        if sx.size:
            s[sx] = np.maximum(s[sx], np.maximum(s[g], saved[r]))
    return s
