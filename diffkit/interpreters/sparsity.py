"""Sparsity patterns: which inputs each output entry depends on, without derivatives.

A :class:`Dependent` carries a value and its *pattern*: a boolean ``scipy.sparse`` matrix
with one row per entry of the value (C order) and one column per entry of the input,
True where the entry may depend on that input. Each primitive maps its inputs' patterns
to its output's pattern by the rule of its entry (``sparsity``, or the default of its
``kind``: :mod:`diffkit.primitives.patterns`); a primitive whose derivative is zero
(``zero_derivative``: sign, floor ...) gives a constant:

* elementwise primitives: each output entry unites the rows of the entries it was
  computed from (broadcasting repeats rows);
* views, and concatenate, are run on arrays of entry numbers: the result says which row
  goes where;
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
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..checks import as_input, check_scalar
from ..core import Box, Interpreter, Primitive, bind, new_level, shape
from ..primitives import patterns
from ..primitives.patterns import Pattern
from .reverse import pull, run_on_tape



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
        xs, deps, boxed = [], [], False
        for a in args:
            p = None
            if type(a) is Dependent and a._interp is self:
                a, p = a.value, a.pattern
            boxed = boxed or isinstance(a, Box)
            xs.append(a)
            deps.append(p)
        y = bind(prim, *xs, **params) if boxed else prim.impl(*xs, **params)
        if all(p is None for p in deps) or prim.zero_derivative:
            return y
        rule = prim.sparsity or patterns.default(prim)
        call = patterns.Call(self.n, self.local, prim, xs, deps, shape(y), params)
        return Dependent(self, y, patterns.normalized(rule(call)))


def jacobian_pattern(fun: Callable[[Any], Any], x: Any, local: bool = False) -> Pattern:
    """The pattern of ``fun``'s Jacobian at ``x``: shape ``(f(x).size, x.size)``."""
    x = as_input(x, "jacobian_sparsity: the argument")
    n = int(np.prod(shape(x)))
    with new_level(lambda level: SparsityInterpreter(level, n, local)) as interp:
        y = fun(Dependent(interp, x, sp.eye_array(n, dtype=bool, format="csr")))
        if type(y) is Dependent and y._interp is interp:
            return y.pattern
    return patterns.empty(int(np.prod(shape(y))), n)  # (an output that does not depend on x)


def hessian_pattern(fun: Callable[[Any], Any], x: Any, local: bool = False) -> Pattern:
    """The pattern of scalar ``fun``'s Hessian at ``x``: the Jacobian pattern of its
    reverse-mode gradient, shape ``(x.size, x.size)``."""
    def gradient(z: Any) -> Any:
        _, leaf, y, _ = run_on_tape(fun, z)
        check_scalar(y, "hessian_sparsity")
        return pull(leaf, z, y, np.ones(shape(y)), False)
    return jacobian_pattern(gradient, x, local)
