"""Sparsity patterns: which inputs each output entry depends on, without derivatives.

A :class:`Dependent` carries a value and its *pattern*: a boolean ``scipy.sparse`` matrix
with one row per entry of the value (C order) and one column per entry of the input,
True where the entry may depend on that input. Each primitive maps its inputs' patterns
to its output's pattern:

* elementwise primitives (``broadcasts`` in the table): each output entry unites the rows
  of the entries it was computed from (broadcasting repeats rows); a primitive whose
  derivative is zero (``sign``, ``floor`` ...) gives a constant;
* structural ones that *select* entries (reshape, transpose, getitem, broadcast_to,
  concatenate) are run on arrays of entry numbers: the result says which row goes where;
* reductions and ``scatter_add`` unite the rows they sum; ``cumsum`` the rows before;
  ``matmul`` combines rows through the non-zeros of a constant operand;
* any other primitive (linear algebra, FFTs, einsum ...) is *dense*: every output entry
  may depend on everything its inputs depend on. Too dense is safe; too sparse never.

The pattern is *global* (true for every x) where the table decides: ``where`` and
``maximum`` unite both branches. With ``local=True`` they take the branch this x takes, a
sparser pattern valid near x. Python ``if`` on a value always follows this x (the value
is carried so the program runs as it would).

A Hessian's pattern is the Jacobian pattern of the reverse-mode gradient: the tape runs
on :class:`Dependent` values and its backward sweep's rules are primitives too.

>>> import numpy as np, diffkit.numpy as dnp
>>> p = jacobian_pattern(lambda x: x[1:] - x[:-1], np.zeros(4))
>>> p.toarray().astype(int).tolist()
[[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..checks import as_input, check_scalar
from ..core import Box, Interpreter, Primitive, bind, new_level, shape
from ..primitives import matmul
from .reverse import pull, run_on_tape

Pattern = sp.csr_array
ZERO_DERIVATIVE = {"sign", "floor", "ceil", "rint"}
SELECTING = {"reshape", "transpose", "getitem", "broadcast_to", "concatenate"}
REDUCING = {"sum", "prod", "max", "min", "logsumexp"}


class Dependent(Box):
    """A value and the pattern of its dependence on the input."""

    __slots__ = ("pattern",)

    def __init__(self, interp: SparsityInterpreter, value: Any, pattern: Pattern) -> None:
        self._interp, self.value, self.pattern = interp, value, pattern

    def __repr__(self) -> str:
        return f"Dependent(shape={self.shape}, nnz={self.pattern.nnz})"


class SparsityInterpreter(Interpreter):
    """Propagates patterns: ``n`` input entries; ``local`` follows this x's branches."""

    def __init__(self, level: int, n: int, local: bool) -> None:
        super().__init__(level)
        self.n, self.local = n, local

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        xs, patterns, boxed = [], [], False
        for a in args:
            p = None
            if type(a) is Dependent and a._interp is self:
                a, p = a.value, a.pattern
            boxed = boxed or isinstance(a, Box)
            xs.append(a)
            patterns.append(p)
        y = bind(prim, *xs, **params) if boxed else prim.impl(*xs, **params)
        if all(p is None for p in patterns) or prim.name in ZERO_DERIVATIVE:
            return y
        rule = RULES.get(prim.name)
        if rule is None:
            rule = _elementwise if prim.broadcasts and prim is not matmul else _dense
        call = Call(self.n, self.local, prim, xs, patterns, shape(y), params)
        return Dependent(self, y, _normalized(rule(call)))


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


def _normalized(p: Any) -> Pattern:
    p = sp.csr_array(p)
    p.sum_duplicates()
    p.data = np.ones_like(p.data, dtype=bool)
    return p


def _empty(rows: int, n: int) -> Pattern:
    return sp.csr_array((rows, n), dtype=bool)


def _numbers(s: tuple[int, ...]) -> np.ndarray:
    """The entry numbers of an array of shape ``s`` (C order)."""
    return np.arange(int(np.prod(s)), dtype=np.int64).reshape(s)


def _rows(p: Pattern, index: np.ndarray) -> Pattern:
    return p[np.asarray(index, dtype=np.int64).ravel()]


def _elementwise(c: Call, keep: list | None = None) -> Pattern:
    """Union of the broadcast rows of every argument (``keep[i]``: a mask of the output
    entries where argument i counts, for a local pattern)."""
    total = _empty(c.size, c.n)
    for i, (x, p) in enumerate(zip(c.xs, c.patterns)):
        if p is not None:
            rows = _rows(p, np.broadcast_to(_numbers(shape(x)), c.out))
            if keep is not None and keep[i] is not None:
                rows = sp.diags_array(np.broadcast_to(keep[i], c.out).ravel().astype(float)) @ rows
            total = total + rows
    return total


def _where(c: Call) -> Pattern:
    cond = np.asarray(c.params["cond"], dtype=bool)
    return _elementwise(c, [cond, ~cond] if c.local else None)


def _select(c: Call) -> Pattern:
    cond = np.asarray(c.xs[0], dtype=bool)
    return _elementwise(c, [None, cond, ~cond] if c.local else None)


def _extremum(wins: np.ufunc) -> Callable[[Call], Pattern]:
    """maximum / minimum: both arguments (global), or the winner's, both at a tie (local)."""
    def rule(c: Call) -> Pattern:
        x, y = (np.asarray(v) for v in c.xs)
        return _elementwise(c, [wins(x, y) | (x == y), wins(y, x) | (x == y)] if c.local else None)
    return rule


def _selecting(c: Call) -> Pattern:
    """Run the primitive on entry numbers: each output entry's row is one input row."""
    numbers, stacked, offset = [], [], 0
    for x, p in zip(c.xs, c.patterns):
        size = int(np.prod(shape(x)))
        numbers.append(_numbers(shape(x)) + offset)
        stacked.append(_empty(size, c.n) if p is None else p)
        offset += size
    index = c.prim.impl(*numbers, **c.params)
    return _rows(sp.vstack(stacked, format="csr"), index)


def _summing(c: Call, target: np.ndarray) -> Pattern:
    """Rows added into output entries: entry k of the argument goes to ``target[k]``."""
    size = int(np.prod(shape(c.xs[0])))
    into = sp.csr_array((np.ones(size), (np.asarray(target).ravel(), np.arange(size))),
                        shape=(c.size, size))
    return into @ c.patterns[0]


def _reduction(c: Call) -> Pattern:
    kept = list(shape(c.xs[0]))
    for a in range(len(kept)) if c.params["axis"] is None else c.params["axis"]:
        kept[a] = 1
    return _summing(c, np.broadcast_to(_numbers(tuple(kept)), shape(c.xs[0])))


def _scatter(c: Call) -> Pattern:
    return _summing(c, np.broadcast_to(_numbers(c.out)[c.params["idx"]], shape(c.xs[0])))


def _cumulative(c: Call) -> Pattern:
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


def _matmul(c: Call) -> Pattern:
    """out[i, k] = sum_j x[i, j] y[j, k]: rows through the other operand's non-zeros
    (a vector operand is a one-row or one-column matrix; stacks of matrices are dense)."""
    x, y = c.xs
    if max(len(shape(x)), len(shape(y))) > 2:
        return _dense(c)
    xm = np.reshape(x, (1, -1)) if len(shape(x)) == 1 else x
    ym = np.reshape(y, (-1, 1)) if len(shape(y)) == 1 else y
    px, py = c.patterns
    total = _empty(c.size, c.n)
    if px is not None:  # rows (i, k) from x's rows (i, j) where y[j, k] may be non-zero
        total = total + sp.kron(sp.eye_array(shape(xm)[0]), _nonzero(ym, py).T, format="csr") @ px
    if py is not None:  # rows (i, k) from y's rows (j, k) where x[i, j] may be non-zero
        total = total + sp.kron(_nonzero(xm, px), sp.eye_array(shape(ym)[1]), format="csr") @ py
    return total


def _dense(c: Call) -> Pattern:
    """No rule: every output entry depends on everything any argument depends on."""
    union = np.zeros(c.n, dtype=bool)
    for p in c.patterns:
        if p is not None:
            union[p.indices] = True
    cols = np.flatnonzero(union)
    return sp.csr_array((np.ones(c.size * cols.size), (np.repeat(np.arange(c.size), cols.size),
                                                       np.tile(cols, c.size))), shape=(c.size, c.n))


RULES: dict[str, Callable[[Call], Pattern]] = {
    **dict.fromkeys(SELECTING, _selecting), **dict.fromkeys(REDUCING, _reduction),
    "scatter_add": _scatter, "cumsum": _cumulative, "cumprod": _cumulative,
    "where": _where, "select": _select, "matmul": _matmul,
    "maximum": _extremum(np.greater), "minimum": _extremum(np.less),
}


def jacobian_pattern(fun: Callable[[Any], Any], x: Any, local: bool = False) -> Pattern:
    """The pattern of ``fun``'s Jacobian at ``x``: shape ``(f(x).size, x.size)``."""
    x = as_input(x, "jacobian_sparsity: the argument")
    n = int(np.prod(shape(x)))
    with new_level(lambda level: SparsityInterpreter(level, n, local)) as interp:
        y = fun(Dependent(interp, x, sp.eye_array(n, dtype=bool, format="csr")))
        if type(y) is Dependent and y._interp is interp:
            return y.pattern
    return _empty(int(np.prod(shape(y))), n)  # (an output that does not depend on x)


def hessian_pattern(fun: Callable[[Any], Any], x: Any, local: bool = False) -> Pattern:
    """The pattern of scalar ``fun``'s Hessian at ``x``: the Jacobian pattern of its
    reverse-mode gradient, shape ``(x.size, x.size)``."""
    def gradient(z: Any) -> Any:
        _, leaf, y, _ = run_on_tape(fun, z)
        check_scalar(y, "hessian_sparsity")
        return pull(leaf, z, y, np.ones(shape(y)), False)
    return jacobian_pattern(gradient, x, local)
