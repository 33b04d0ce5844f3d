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


def short_products(graph: Graph) -> tuple[Graph, frozenset[Var]]:
    """``graph`` with its matrix products of a short side written out (see the module's
    text), and the values for the fusion pass to write to memory: a written-out
    ``X @ W`` and its computed operands."""
    transposed = {e.out: e.inputs[0] for e in graph.eqns if e.prim is P.transpose
                  and tuple(e.params.get("axes") or (1, 0)) == (1, 0) and len(e.out.shape) == 2}
    eqns: list[Eqn] = []
    written: set[Var] = set()
    for e in graph.eqns:
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
