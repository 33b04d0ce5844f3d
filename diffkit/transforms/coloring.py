"""Graph colouring: which columns (or rows) of a sparse matrix can be computed together.

Two columns of a Jacobian with no row in common can share one forward pass: seed the
sum of their unit vectors, and each non-zero of the result belongs to exactly one of
them (Curtis, Powell and Reid, 1974). Grouping columns is colouring the *column
intersection graph* (columns adjacent when they share a row; distance-2 colouring of the
bipartite graph); rows, for reverse mode, the same on the transpose. A symmetric Hessian
needs fewer groups: a *star colouring* (adjacent vertices differ, and every path on four
vertices uses three colours) lets every entry be read either from its column's group or,
by symmetry, from its row's (Coleman and Moré; Gebremedhin, Manne and Pothen, "What color
is your Jacobian?", SIAM Review 2005).

Colourings are greedy: vertices in an order (``natural``, or ``largest-first``: most
neighbours first), each taking the smallest colour its constraints allow.

>>> import numpy as np, scipy.sparse as sp
>>> tridiagonal = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(6, 6))
>>> column_coloring(tridiagonal).tolist()
[0, 1, 2, 0, 1, 2]
>>> int(star_coloring(tridiagonal).max()) + 1
3
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core import DiffkitError

ORDERS = ("natural", "largest-first")


def _ordered(adjacency: sp.csr_array, order: str) -> np.ndarray:
    if order not in ORDERS:
        raise DiffkitError(f"unknown colouring order {order!r}; use one of {', '.join(ORDERS)}")
    n = adjacency.shape[0]
    if order == "natural":
        return np.arange(n)
    return np.argsort(-np.diff(adjacency.indptr), kind="stable")


def _graph(pattern: Any) -> sp.csr_array:
    """Adjacency (no self-loops) of the column intersection graph of ``pattern``."""
    p = sp.csr_array(pattern, dtype=bool).astype(np.int32)
    return _without_diagonal(p.T @ p)


def _without_diagonal(a: Any) -> sp.csr_array:
    a = sp.coo_array(a)
    off = a.row != a.col
    return sp.csr_array((np.ones(int(off.sum()), dtype=bool), (a.row[off], a.col[off])), shape=a.shape)


def greedy(adjacency: sp.csr_array, order: str = "natural") -> np.ndarray:
    """Distance-1 greedy colouring of a graph: neighbours get different colours."""
    n = adjacency.shape[0]
    color = np.full(n, -1, dtype=np.int64)
    ptr, idx = adjacency.indptr, adjacency.indices
    for v in _ordered(adjacency, order):
        taken = set(color[idx[ptr[v]:ptr[v + 1]]].tolist())
        c = 0
        while c in taken:
            c += 1
        color[v] = c
    return color


def column_coloring(pattern: Any, order: str = "natural") -> np.ndarray:
    """A colour per column; columns of one colour share no row (one JVP per colour).

    >>> import numpy as np
    >>> column_coloring(np.array([[1, 1, 0], [0, 0, 1]])).tolist()
    [0, 1, 0]
    """
    return greedy(_graph(pattern), order)


def row_coloring(pattern: Any, order: str = "natural") -> np.ndarray:
    """A colour per row; rows of one colour share no column (one VJP per colour)."""
    return column_coloring(sp.csr_array(pattern).T, order)


def star_coloring(pattern: Any, order: str = "natural") -> np.ndarray:
    """A star colouring of a symmetric pattern: adjacent columns differ and no path on four
    vertices is two-coloured, so each entry is found in its column's or its row's group
    (one Hessian-vector product per colour). Greedy, as Algorithm 4.1 of Gebremedhin et al.
    """
    g = _without_diagonal(sp.csr_array(pattern, dtype=bool))
    g = sp.csr_array(g + g.T, dtype=bool)
    ptr, idx = g.indptr, g.indices
    color = np.full(g.shape[0], -1, dtype=np.int64)
    for v in _ordered(g, order):
        forbidden = set()
        for w in idx[ptr[v]:ptr[v + 1]]:
            cw = color[w]
            if cw >= 0:
                forbidden.add(cw)
            for x in idx[ptr[w]:ptr[w + 1]]:
                cx = color[x]
                if cx < 0 or x == v:
                    continue
                if cw < 0:
                    forbidden.add(cx)  # v - w - x with w uncoloured: v must differ from x
                elif any(y != w and color[y] == cw for y in idx[ptr[x]:ptr[x + 1]]):
                    forbidden.add(cx)  # v - w - x - y would be two-coloured if v took x's colour
        c = 0
        while c in forbidden:
            c += 1
        color[v] = c
    return color


def seeds(color: np.ndarray) -> np.ndarray:
    """The seed matrix, one column per colour: the sum of the unit vectors of its members."""
    s = np.zeros((color.size, int(color.max()) + 1 if color.size else 0))
    s[np.arange(color.size), color] = 1.0
    return s


def decompress_columns(pattern: Any, color: np.ndarray, compressed: np.ndarray) -> sp.csr_array:
    """J from ``compressed = J @ seeds(color)`` (one column per colour)."""
    rows, cols = sp.csr_array(pattern).nonzero()
    return sp.csr_array((compressed[rows, color[cols]], (rows, cols)), shape=pattern.shape)


def decompress_rows(pattern: Any, color: np.ndarray, compressed: np.ndarray) -> sp.csr_array:
    """J from ``compressed = seeds(color).T @ J`` (one row per colour)."""
    rows, cols = sp.csr_array(pattern).nonzero()
    return sp.csr_array((compressed[color[rows], cols], (rows, cols)), shape=pattern.shape)


def decompress_star(pattern: Any, color: np.ndarray, compressed: np.ndarray) -> sp.csr_array:
    """A symmetric H from ``compressed = H @ seeds(color)`` under a star colouring: entry
    (i, j) is read in row i of j's group when j is the only member of its group in row i,
    else (by symmetry) in row j of i's group."""
    p = sp.csr_array(pattern, dtype=bool)
    rows, cols = p.nonzero()
    members = (p.astype(np.int32) @ sp.csr_array(seeds(color))).toarray()  # row i, group c: how many
    direct = members[rows, color[cols]] == 1
    values = np.where(direct, compressed[rows, color[cols]], compressed[cols, color[rows]])
    return sp.csr_array((values, (rows, cols)), shape=p.shape)
