"""Taylor mode: truncated Taylor series carried through the program.

A :class:`Series` holds the coefficients ``x_0, x_1, ..., x_K`` of a curve
``x(t) = x_0 + x_1 t + ... + x_K t^K`` (normalized: ``x_k`` is the k-th derivative over
k!). Each primitive maps its inputs' series to its output's, to the same order, in
O(K²) work per operation (Griewank and Walther, *Evaluating Derivatives*, ch. 13):

* linear primitives (add, reshape, getitem, sum, ...) act on each coefficient alone;
* products are Cauchy products, ``(ab)_k = Σ_j a_j b_{k-j}`` (mul, matmul);
* ``exp``, ``log``, ``sin``/``cos``, ``tanh``, ``sqrt``, ``power``, ``div`` ... follow
  recurrences from the differential equation they satisfy (``y' = y x'`` for exp);
* any other primitive uses its JVP rule, which is written in primitives: ``y' = J(x) x'``
  is itself evaluated in Taylor arithmetic, one order at a time (``y_k = (y')_{k-1} / k``).

One pass gives every derivative up to order K along the curve, where nesting forward
mode K times costs about 2^K passes or more.

>>> import numpy as np, diffkit.numpy as dnp
>>> coefficients(dnp.exp, np.array([0.0, 1.0, 0.0, 0.0])).round(6).tolist()  # e^t
[1.0, 1.0, 0.5, 0.166667]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Box, DiffkitError, Interpreter, Primitive, new_level
from ..primitives.series import Constant, linear, order, stack, term
from ..pytree import tree_map

LINEAR = linear()  # the rule of an entry marked linear: applied to each coefficient


NO_NESTING = ("Taylor mode (dk.jet, dk.derivatives) does not nest with other transforms; "
              "apply it to a plain function of arrays (its series hold the higher derivatives)")


class Series(Box):
    """A truncated Taylor series; ``value`` is its constant term."""

    __slots__ = ("coeffs",)

    def __init__(self, interp: TaylorInterpreter, coeffs: np.ndarray) -> None:
        self._interp, self.coeffs, self.value = interp, coeffs, coeffs[0]

    def __repr__(self) -> str:
        return f"Series(order={len(self.coeffs) - 1}, value={self.value!r})"


class TaylorInterpreter(Interpreter):
    """Propagates Taylor coefficients; values of other levels are refused."""

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        xs = []
        for a in args:
            if type(a) is Series and a._interp is self:
                xs.append(a.coeffs)
            elif isinstance(a, Box):
                raise DiffkitError(NO_NESTING)
            else:
                xs.append(Constant(a))
        top = min(len(x) - 1 for x in xs if not isinstance(x, Constant))
        xs = [x if isinstance(x, Constant) else x[:top + 1] for x in xs]
        rule = prim.taylor or (LINEAR if prim.linear else None)
        out = None if rule is None else rule(prim, xs, params)
        return Series(self, _from_jvp(self, prim, xs, params) if out is None else out)


def _from_jvp(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """Any primitive from its JVP rule: ``y' = Σ_i jvp_i(x_i', y, x)``, the rule run in
    Taylor arithmetic at order k-1 to give ``y_k = (y')_{k-1} / k``, k = 1..K."""
    y0 = prim.impl(*(term(x, 0) for x in xs), **params)
    y = [np.asarray(y0)]
    for k in range(1, order(xs) + 1):
        args = [x.value if isinstance(x, Constant) else Series(interp, x[:k]) for x in xs]
        ys = Series(interp, stack(y))
        x_dots = [None if isinstance(x, Constant) else Series(interp, _slope(x, k)) for x in xs]
        if prim.jvp_pair is not None:  # (a loop: its value again, with the tangent)
            y_dot = prim.jvp_pair([np.zeros(np.shape(x.value)) if t is None else t
                                   for x, t in zip(xs, x_dots)], *args, **params)[1]
        elif prim.jvp_joint is not None:
            y_dot = prim.jvp_joint([np.zeros(np.shape(x.value)) if t is None else t
                                    for x, t in zip(xs, x_dots)], ys, *args, **params)
        else:
            y_dot = sum(prim.jvp[i](t, ys, *args, **params) for i, t in enumerate(x_dots)
                        if t is not None)
        coeff = y_dot.coeffs[k - 1] if type(y_dot) is Series else (y_dot if k == 1 else 0.0)
        y.append(np.broadcast_to(np.asarray(coeff) / k, np.shape(y0)))
    return stack(y)


def _slope(x: np.ndarray, k: int) -> np.ndarray:
    """Coefficients 0..k-1 of x'(t): ``(j+1) x_{j+1}``."""
    return x[1:k + 1] * np.reshape(np.arange(1.0, k + 1), (k,) + (1,) * (x.ndim - 1))


def propagate(fun: Callable[..., Any], coeffs: list[np.ndarray]) -> Any:
    """Run ``fun`` on series with the given coefficients (each ``(K+1, *shape)``); the
    output's leaves become coefficient arrays (a constant output: its value, then zeros)."""
    K = len(coeffs[0]) - 1
    with new_level(TaylorInterpreter) as interp:
        out = fun(*(Series(interp, np.asarray(c, dtype=float)) for c in coeffs))

        def unwrap(v: Any) -> np.ndarray:
            if type(v) is Series and v._interp is interp:
                return v.coeffs
            return stack([term(Constant(v), k) for k in range(K + 1)])
        return tree_map(unwrap, out)


def coefficients(fun: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """Taylor coefficients of ``fun(x(t))`` for one input curve with coefficients ``x``."""
    return propagate(fun, [x])
