"""Jacobian-pattern rules: how each primitive maps its inputs' dependence patterns to its
output's (the ``sparsity`` field of an entry; :mod:`diffkit.interpreters.sparsity` runs
them).

A pattern is a boolean ``scipy.sparse`` matrix with one row per entry of a value (C order)
and one column per entry of the input, True where the entry may depend on that input. A
rule receives a :class:`Call` and returns the output's pattern. Without a rule of its
own, a primitive's ``kind`` chooses (:func:`default`): elementwise primitives unite the
rows of the entries each output entry was computed from (broadcasting repeats rows);
views are run on arrays of entry numbers (:func:`selecting`); reductions unite the rows
they sum; anything else is :func:`dense` (too dense is safe; too sparse never).

``where``, ``select``, ``maximum`` and ``minimum`` are *global* by default (both branches);
with ``local`` they take the branch this x takes.

>>> import numpy as np
>>> c = Call(2, False, None, [np.zeros(2)], [sp.eye_array(2, format="csr")], (1,),
...          {"axis": None, "keepdims": False})
>>> reduction(c).toarray().astype(int).tolist()
[[1, 1]]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core import ELEMENTWISE, REDUCTION, VIEW, Primitive, shape

Pattern = sp.csr_array


@dataclass(frozen=True)
class Call:
    """One primitive call as a pattern rule sees it: the input's size ``n``, whether the
    pattern is local, the arguments' values and patterns (None: a constant), the output
    shape and the parameters."""

    n: int
    local: bool
    prim: Primitive
    xs: list
    patterns: list
    out: tuple[int, ...]
    params: dict

    @property
    def size(self) -> int:
        return int(np.prod(self.out))


def normalized(p: Any) -> Pattern:
    p = sp.csr_array(p)
    p.sum_duplicates()
    p.data = np.ones_like(p.data, dtype=bool)
    return p


def empty(rows: int, n: int) -> Pattern:
    return sp.csr_array((rows, n), dtype=bool)


def _numbers(s: tuple[int, ...]) -> np.ndarray:
    """The entry numbers of an array of shape ``s`` (C order)."""
    return np.arange(int(np.prod(s)), dtype=np.int64).reshape(s)


def _rows(p: Pattern, index: np.ndarray) -> Pattern:
    return p[np.asarray(index, dtype=np.int64).ravel()]


def elementwise(c: Call, keep: list | None = None) -> Pattern:
    """Union of the broadcast rows of every argument (``keep[i]``: a mask of the output
    entries where argument i counts, for a local pattern)."""
    total = empty(c.size, c.n)
    for i, (x, p) in enumerate(zip(c.xs, c.patterns)):
        if p is not None:
            rows = _rows(p, np.broadcast_to(_numbers(shape(x)), c.out))
            if keep is not None and keep[i] is not None:
                rows = sp.diags_array(np.broadcast_to(keep[i], c.out).ravel().astype(float)) @ rows
            total = total + rows
    return total


def where(c: Call) -> Pattern:
    cond = np.asarray(c.params["cond"], dtype=bool)
    return elementwise(c, [cond, ~cond] if c.local else None)


def select(c: Call) -> Pattern:
    cond = np.asarray(c.xs[0], dtype=bool)
    return elementwise(c, [None, cond, ~cond] if c.local else None)


def extremum(wins: np.ufunc) -> Callable[[Call], Pattern]:
    """maximum / minimum: both arguments (global), or the winner's, both at a tie (local)."""
    def rule(c: Call) -> Pattern:
        x, y = (np.asarray(v) for v in c.xs)
        return elementwise(c, [wins(x, y) | (x == y), wins(y, x) | (x == y)] if c.local else None)
    return rule


def selecting(c: Call) -> Pattern:
    """Run the primitive on entry numbers: each output entry's row is one input row."""
    numbers, stacked, offset = [], [], 0
    for x, p in zip(c.xs, c.patterns):
        size = int(np.prod(shape(x)))
        numbers.append(_numbers(shape(x)) + offset)
        stacked.append(empty(size, c.n) if p is None else p)
        offset += size
    index = c.prim.impl(*numbers, **c.params)
    return _rows(sp.vstack(stacked, format="csr"), index)


def _summing(c: Call, target: np.ndarray) -> Pattern:
    """Rows added into output entries: entry k of the argument goes to ``target[k]``."""
    size = int(np.prod(shape(c.xs[0])))
    into = sp.csr_array((np.ones(size), (np.asarray(target).ravel(), np.arange(size))),
                        shape=(c.size, size))
    return into @ c.patterns[0]


def reduction(c: Call) -> Pattern:
    kept = list(shape(c.xs[0]))
    for a in range(len(kept)) if c.params["axis"] is None else c.params["axis"]:
        kept[a] = 1
    return _summing(c, np.broadcast_to(_numbers(tuple(kept)), shape(c.xs[0])))


def scatter(c: Call) -> Pattern:
    return _summing(c, np.broadcast_to(_numbers(c.out)[c.params["idx"]], shape(c.xs[0])))


def cumulative(c: Call) -> Pattern:
    """cumsum / cumprod: entry k along the axis unites the rows of entries 0..k."""
    numbers = np.moveaxis(_numbers(c.out), c.params["axis"], -1)
    length = numbers.shape[-1]
    later, earlier = np.nonzero(np.tril(np.ones((length, length), dtype=bool)))
    rows, cols = numbers[..., later].ravel(), numbers[..., earlier].ravel()
    into = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(c.size, c.size))
    return into @ c.patterns[0]


def _nonzero(v: Any, p: Pattern | None) -> sp.csr_array:
    """The possibly non-zero entries of a 2-D operand: all of them if it depends on x."""
    return sp.csr_array(np.ones(shape(v)) if p is not None else np.asarray(v) != 0)


def matmul(c: Call) -> Pattern:
    """out[i, k] = sum_j x[i, j] y[j, k]: rows through the other operand's non-zeros
    (a vector operand is a one-row or one-column matrix; stacks of matrices are dense)."""
    x, y = c.xs
    if max(len(shape(x)), len(shape(y))) > 2:
        return dense(c)
    xm = np.reshape(x, (1, -1)) if len(shape(x)) == 1 else x
    ym = np.reshape(y, (-1, 1)) if len(shape(y)) == 1 else y
    px, py = c.patterns
    total = empty(c.size, c.n)
    if px is not None:  # rows (i, k) from x's rows (i, j) where y[j, k] may be non-zero
        total = total + sp.kron(sp.eye_array(shape(xm)[0]), _nonzero(ym, py).T, format="csr") @ px
    if py is not None:  # rows (i, k) from y's rows (j, k) where x[i, j] may be non-zero
        total = total + sp.kron(_nonzero(xm, px), sp.eye_array(shape(ym)[1]), format="csr") @ py
    return total


def dense(c: Call) -> Pattern:
    """No rule: every output entry depends on everything any argument depends on."""
    union = np.zeros(c.n, dtype=bool)
    for p in c.patterns:
        if p is not None:
            union[p.indices] = True
    cols = np.flatnonzero(union)
    return sp.csr_array((np.ones(c.size * cols.size), (np.repeat(np.arange(c.size), cols.size),
                                                       np.tile(cols, c.size))), shape=(c.size, c.n))


def default(prim: Primitive) -> Callable[[Call], Pattern]:
    """The rule of a primitive with none of its own: chosen by its ``kind``."""
    return {ELEMENTWISE: elementwise, VIEW: selecting, REDUCTION: reduction}.get(prim.kind, dense)
