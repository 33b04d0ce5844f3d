"""Matrix products with a short side, written out as loops that fusion takes in.

A layer's product ``X @ W`` with few inputs (``W`` of 20 rows) and its weight gradient
``Xᵀ @ G`` with few outputs (20 rows) are little work for a library call, which
returns to Python between the kernels around it. Written out, such a product is a short
formula per element, and the fusion pass makes loops of it:

* ``X @ W`` with a contracted side ``K ≤ SHORT``: ``Z = X[:, 0:1] * W[0:1, :] + … +
  X[:, K-1:K] * W[K-1:K, :]``, added pairwise: each element of ``Z`` is ``K``
  multiplications and additions in registers, vectorized along ``W``'s rows. ``Z`` is
  written by a loop of its own: taken into the loop of the activation after it, the
  ``K`` broadcast columns and the activation's constants outgrew the registers, and the
  one loop was slower than the two;
* ``Xᵀ @ G`` with ``Xᵀ`` of ``K ≤ SHORT`` rows: ``X`` and ``G`` seen as blocks of
  :data:`ROWS` rows (a reshape, no copy), and ``out[k, :] += Σ_r X[r, k] G[r, :]`` over
  the blocks: eight rows' products added in registers, then into the ``K × N`` result,
  which stays in the cache.

Measured on one core of this machine (``python benchmarks/short_products.py``: X 512 × K
for K = 4, 20 and 32, 64 columns, against the same programs with OpenBLAS's products),
``tanh(X @ W + b)`` takes 0.78-0.90x the time and ``Xᵀ @ G`` 0.65-0.78x; the MLP step of
the compiled race, 0.77x.

A two-operand ``einsum`` whose indices are all short but at most one is written out the
same way (:func:`_einsum_written_out`): GradBench's gmm contracts ``'kij,nkj->nki'`` over
``j`` of 2 and, in its gradient, ``'nki,nkj->kij'`` over ``n`` of 1000. numpy's einsum
returned those results strided (a transposed layout), which each kernel reading them
copied first; written out they are loops, and ``python benchmarks/gradbench_race.py
--eval gmm`` went from 1.40-1.58x jax.jit's time to 0.65-0.71x (with the max's tie
weights counted in floats, so that its kernels take the LLVM route).

The sums run in the order written (pairwise; block after block), not in the library's
order: values agree with ``numpy.matmul`` to rounding, not to the bit. The unfused
program (``fuse=False``) keeps the library calls. Operands computed by a kernel are
written to memory first (a kernel would otherwise recompute each of their elements once
per element of the product).

>>> import numpy as np, diffkit.numpy as dnp
>>> from diffkit.ir.tracer import trace_graph
>>> layer = trace_graph(lambda X, W: dnp.tanh(X @ W), (np.ones((8, 2)), np.ones((2, 9))))
>>> g, written = short_products(layer)
>>> [e.prim.name for e in g.eqns]
['getitem', 'getitem', 'mul', 'getitem', 'getitem', 'mul', 'add', 'tanh']
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import primitives as P
from ..primitives import add, getitem, mul, reshape, sum as sum_
from ..ir.graph import Atom, Const, Eqn, Graph, Var
from .passes import dce

SHORT = 32  # the longest short side written out (its terms stay in registers)
#: an einsum is written out only where its products (one per value of every index) are at
#: most this many times its operands' entries (else numpy's einsum)
SPREAD = 2
WIDE = 8    # the fewest columns worth it: one vector of doubles along a row
ROWS = 8    # rows of Xᵀ @ G added together before their sum goes to memory


def _matrix(a: Atom) -> bool:
    return isinstance(a, (Var, Const)) and len(a.shape) == 2 and a.dtype.kind == "f"


class _Equations:
    """New equations, each with a fresh variable."""

    def __init__(self) -> None:
        self.eqns: list[Eqn] = []

    def __call__(self, prim, inputs: tuple, dims: tuple, dtype: np.dtype, **params) -> Var:
        out = Var(0, dims, dtype)
        self.eqns.append(Eqn(prim, inputs, out, params))
        return out


def _pairwise(put: _Equations, terms: list[Var]) -> Var:
    """The terms' sum, added in pairs: a chain of log2(n) additions, not of n."""
    while len(terms) > 1:
        terms = [put(add, tuple(terms[i:i + 2]), terms[i].shape, terms[i].dtype)
                 if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def _written_out(x: Atom, w: Atom, out: Var) -> list[Eqn]:
    """``out = x @ w`` as the sum of ``x``'s columns times ``w``'s rows."""
    put, (m, k), n = _Equations(), x.shape, w.shape[1]
    terms = []
    for j in range(k):
        col = put(getitem, (x,), (m, 1), x.dtype, idx=(slice(None), slice(j, j + 1)))
        row = put(getitem, (w,), (1, n), w.dtype, idx=(slice(j, j + 1), slice(None)))
        terms.append(put(mul, (col, row), out.shape, out.dtype))
    _pairwise(put, terms)
    put.eqns[-1].out = out
    return put.eqns


def _rows_added(x: Atom, g: Atom, out: Var) -> list[Eqn]:
    """``out = xᵀ @ g`` as the sum over rows of ``x[r]``'s outer product with ``g[r]``,
    :data:`ROWS` rows at a time (added in registers, then into ``out`` once)."""
    put, (m, k), n = _Equations(), x.shape, g.shape[1]
    rows = math.gcd(m, ROWS)
    xr = put(reshape, (x,), (m // rows, rows, k), x.dtype, shape=(m // rows, rows, k))
    gr = put(reshape, (g,), (m // rows, rows, n), g.dtype, shape=(m // rows, rows, n))
    terms = []
    for r in range(rows):
        xs = put(getitem, (xr,), (m // rows, k, 1), x.dtype,
                 idx=(slice(None), r, slice(None), None))
        gs = put(getitem, (gr,), (m // rows, 1, n), g.dtype,
                 idx=(slice(None), r, None, slice(None)))
        terms.append(put(mul, (xs, gs), (m // rows, k, n), out.dtype))
    put(sum_, (_pairwise(put, terms),), out.shape, out.dtype, axis=(0,), keepdims=False)
    put.eqns[-1].out = out
    return put.eqns


def _order(terms: list[str], out: str, summed: str) -> str | None:
    """An order of every index of ``terms`` in which each term's indices and the output's
    keep their own order, summed ones first where that is free; None where none exists
    (a term would need a transpose, which no fused loop reads without a copy)."""
    after: dict[str, set[str]] = {c: set() for t in terms for c in t}
    for t in (*terms, out):
        for a, b in zip(t, t[1:]):
            after[b].add(a)
    order = ""
    while len(order) < len(after):
        ready = [c for c in after if c not in order and after[c] <= set(order)]
        if not ready:
            return None
        order += min(ready, key=lambda c: c not in summed)
    return order


def _view(put: _Equations, x: Atom, subs: str, order: str, fixed: dict[str, int]) -> Atom:
    """``x`` (indices ``subs``) with the indices of ``fixed`` at those positions and its
    other axes spread over ``order`` (length-1 axes where it has no index): a view."""
    idx: list = []
    dims: list[int] = []
    p = 0
    for c in order:
        while p < len(subs) and subs[p] in fixed:
            idx.append(fixed[subs[p]])
            p += 1
        if p < len(subs) and subs[p] == c:
            idx.append(slice(None))
            dims.append(x.shape[p])
            p += 1
        elif c not in fixed:
            idx.append(None)
            dims.append(1)
    idx += [fixed[c] for c in subs[p:]]
    return put(getitem, (x,), tuple(dims), x.dtype, idx=tuple(idx))


def _einsum_written_out(e: Eqn) -> list[Eqn] | None:
    """A two-operand ``einsum`` of floats as products of views and their sum, where every
    index but at most one is short (at most :data:`SHORT`): a short contraction as one
    term per value of its indices (``'kij,nkj->nki'`` with ``j`` of 2: two products of
    views added), a long one as the product spread over every index and summed over the
    contracted ones (``'nki,nkj->kij'`` over ``n``). numpy's einsum returns such results
    transposed (strided), which a fused loop copies before it reads them; written out,
    they are loops. None where the rule does not apply."""
    subs = e.params.get("subs", "")
    if len(e.inputs) != 2 or "->" not in subs or "." in subs:
        return None
    x, y = e.inputs
    if e.out.dtype.kind != "f" or not all(isinstance(v, (Var, Const)) and v.dtype == e.out.dtype
                                          for v in (x, y)):
        return None
    ins, out = subs.split("->")
    a, b = ins.split(",")
    sizes = {**dict(zip(a, x.shape)), **dict(zip(b, y.shape))}
    summed = "".join(c for c in sizes if c not in out)
    if len(set(a)) < len(a) or len(set(b)) < len(b) or any(c not in a or c not in b
                                                          for c in summed):
        return None
    long = [c for c in sizes if sizes[c] > SHORT]
    order = _order([a, b], out, summed)
    if order is None or len(long) > 1 or not summed:
        return None
    spread_sum = bool(long) and long[0] in summed
    if spread_sum and "".join(c for c in order if c not in summed) != out:
        return None  # (the sum's result would need a transpose to the output's order)
    # the products it writes (the spread over every index) against the operands' entries:
    # a CNN's einsums, 'nchwij,ocij->nohw' and its two gradients, 4-9x, ran 3x slower
    if int(np.prod([sizes[c] for c in order])) > SPREAD * (int(np.prod(x.shape))
                                                            + int(np.prod(y.shape))):
        return None
    put = _Equations()
    if not spread_sum:  # short contracted indices: a term per value
        terms = []
        for values in np.ndindex(*(sizes[c] for c in summed)):
            fixed = dict(zip(summed, values))
            views = [_view(put, v, t, out, fixed) for v, t in ((x, a), (y, b))]
            terms.append(put(mul, tuple(views), e.out.shape, e.out.dtype))
        _pairwise(put, terms)
    else:  # the long index contracted: the whole product, summed over the contracted axes
        views = [_view(put, v, t, order, {}) for v, t in ((x, a), (y, b))]
        spread = put(mul, tuple(views), tuple(sizes[c] for c in order), e.out.dtype)
        axes = tuple(order.index(c) for c in summed)
        put(sum_, (spread,), tuple(sizes[c] for c in order if c not in summed), e.out.dtype,
            axis=axes, keepdims=False)
    put.eqns[-1].out = e.out
    return put.eqns


def short_products(graph: Graph) -> tuple[Graph, frozenset[Var]]:
    """``graph`` with its matrix products of a short side written out (see the module's
    text), and the values for the fusion pass to write to memory: a written-out
    ``X @ W`` and its computed operands."""
    transposed = {e.out: e.inputs[0] for e in graph.eqns if e.prim is P.transpose
                  and tuple(e.params.get("axes") or (1, 0)) == (1, 0) and len(e.out.shape) == 2}
    eqns: list[Eqn] = []
    written: set[Var] = set()
    for e in graph.eqns:
        spelled = _einsum_written_out(e) if e.prim is P.einsum else None
        if spelled is not None:
            eqns += spelled
            written.update(v for v in e.inputs if isinstance(v, Var))
            continue
        a, b = e.inputs if e.prim is P.matmul else (None, None)
        if not (a is not None and _matrix(a) and _matrix(b) and e.out.shape[1] >= WIDE
                and len({e.out.dtype, a.dtype, b.dtype}) == 1):
            eqns.append(e)
        elif a.shape[1] <= SHORT:
            eqns += _written_out(a, b, e.out)
            written.update(v for v in (a, b, e.out) if isinstance(v, Var))
        elif a.shape[0] <= SHORT and a in transposed:
            eqns += _rows_added(transposed[a], b, e.out)
        else:
            eqns.append(e)
    if len(eqns) == len(graph.eqns):
        return graph, frozenset()
    return dce(replace(graph, eqns=eqns)), frozenset(written)


__all__ = ["SHORT", "short_products"]
