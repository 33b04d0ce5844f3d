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
from ..pytree import tree_map


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
        order = min(len(x) - 1 for x in xs if not isinstance(x, Constant))
        xs = [x if isinstance(x, Constant) else x[:order + 1] for x in xs]
        rule = RULES.get(prim.name, _from_jvp)
        return Series(self, rule(self, prim, xs, params))


class Constant:
    """A constant argument: its value, and no higher coefficients."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _term(x: Any, k: int) -> Any:
    """Coefficient k of an argument (constants: the value, then 0)."""
    if isinstance(x, Constant):
        return x.value if k == 0 else np.zeros_like(np.asarray(x.value, dtype=float))
    return x[k]


def _stack(terms: list) -> np.ndarray:
    return np.stack([np.asarray(t) for t in np.broadcast_arrays(*terms)]) if terms else np.zeros(0)


def _order(xs: list) -> int:
    return min(len(x) - 1 for x in xs if not isinstance(x, Constant))


def _linear(fixed: tuple[int, ...] = ()) -> Callable[..., np.ndarray]:
    """A primitive linear in its arguments (those in ``fixed``, such as select's mask,
    are the same at every order): apply it to each coefficient."""
    def rule(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
        return _stack([prim.impl(*(x.value if i in fixed else _term(x, k)
                                   for i, x in enumerate(xs)), **params)
                       for k in range(_order(xs) + 1)])
    return rule


def _scaled(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """A product with a constant factor: linear in the other argument."""
    return _linear(fixed=tuple(i for i, x in enumerate(xs) if isinstance(x, Constant)))(
        interp, prim, xs, params)


def _lift(c: np.ndarray, ndim: int) -> np.ndarray:
    """Coefficients ``(K+1, *s)`` with size-1 axes after the first, to broadcast as ``s``."""
    return np.reshape(c, (len(c),) + (1,) * (ndim - c.ndim + 1) + c.shape[1:])


def _cauchy(a: np.ndarray, b: np.ndarray, product: Callable[[Any, Any], Any]) -> np.ndarray:
    """``c_k = Σ_{j=0}^{k} product(a_j, b_{k-j})``, k = 0..K."""
    K = min(len(a), len(b)) - 1
    out = [sum((product(a[j], b[k - j]) for j in range(k + 1)), np.zeros(())) for k in range(K + 1)]
    return _stack(out)


def _mul(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    a, b = xs
    if isinstance(a, Constant) or isinstance(b, Constant):
        return _scaled(interp, prim, xs, params)
    nd = max(a.ndim, b.ndim) - 1
    a, b = _lift(a, nd), _lift(b, nd)
    out = np.zeros((len(a),) + np.broadcast_shapes(a.shape[1:], b.shape[1:]),
                   dtype=np.result_type(a, b))
    for j in range(len(a)):
        out[j:] += a[j] * b[:len(a) - j]
    return out


def _bilinear(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """matmul: a Cauchy product of the primitive itself."""
    a, b = xs
    if isinstance(a, Constant) or isinstance(b, Constant):
        return _scaled(interp, prim, xs, params)
    return _cauchy(a, b, lambda u, v: prim.impl(u, v, **params))


def _full(x: Any, K: int) -> np.ndarray:
    """Every coefficient, order 0..K, of an argument (zeros after a constant's value)."""
    return x[:K + 1] if not isinstance(x, Constant) else _stack([_term(x, k) for k in range(K + 1)])


def _div(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    a, b = xs
    if isinstance(b, Constant):
        return _scaled(interp, prim, xs, params)
    K = _order(xs)
    a, b = _full(a, K), b
    q = [a[0] / b[0]]
    for k in range(1, K + 1):  # a = q b, solved for q_k
        q.append((a[k] - sum(b[j] * q[k - j] for j in range(1, k + 1))) / b[0])
    return _stack(q)


def _ode(first: Callable[[Any], Any], slope: Callable[[list, int], Any]) -> Callable[..., np.ndarray]:
    """y = f(x) with y' = d · x', where ``slope(y, m)`` gives coefficient m of d from
    y's coefficients 0..m: ``y_k = Σ_{j=1}^{k} (j/k) x_j d_{k-j}``."""
    def rule(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
        x = xs[0]
        y, d = [first(x[0])], []
        for k in range(1, len(x)):
            d.append(slope(y, k - 1))
            y.append(sum(j / k * x[j] * d[k - j] for j in range(1, k + 1)))
        return _stack(y)
    return rule


def _square(y: list, m: int) -> Any:
    return sum(y[i] * y[m - i] for i in range(m + 1))


def _pair(first: Callable, second: Callable, sign: float, which: int) -> Callable[..., np.ndarray]:
    """sin/cos (sign -1) and sinh/cosh (sign +1) together: s' = c x', c' = sign s x'."""
    def rule(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
        x = xs[0]
        s, c = [first(x[0])], [second(x[0])]
        for k in range(1, len(x)):
            s.append(sum(j / k * x[j] * c[k - j] for j in range(1, k + 1)))
            c.append(sign * sum(j / k * x[j] * s[k - j] for j in range(1, k + 1)))
        return _stack((s, c)[which])
    return rule


def _log(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    x = xs[0]
    y = [np.log(x[0])]
    for k in range(1, len(x)):  # x y' = x'
        y.append((x[k] - sum(j / k * y[j] * x[k - j] for j in range(1, k))) / x[0])
    return _stack(y)


def _sqrt(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    x = xs[0]
    y = [np.sqrt(x[0])]
    for k in range(1, len(x)):  # y y = x
        y.append((x[k] - sum(y[j] * y[k - j] for j in range(1, k))) / (2.0 * y[0]))
    return _stack(y)


def _power(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """x^a for a constant a where x_0 has no zero (x y' = a x' y); else from the JVP rule."""
    x, a = xs
    if not isinstance(a, Constant) or isinstance(x, Constant) or np.any(np.asarray(x[0]) == 0):
        return _from_jvp(interp, prim, xs, params)
    a = a.value
    y = [np.power(x[0], a)]
    for k in range(1, len(x)):
        y.append(sum((a * (k - j) - j) * x[k - j] * y[j] for j in range(k)) / (k * x[0]))
    return _stack(y)


def _from_jvp(interp: TaylorInterpreter, prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """Any primitive from its JVP rule: ``y' = Σ_i jvp_i(x_i', y, x)``, the rule run in
    Taylor arithmetic at order k-1 to give ``y_k = (y')_{k-1} / k``, k = 1..K."""
    y0 = prim.impl(*(_term(x, 0) for x in xs), **params)
    y = [np.asarray(y0)]
    for k in range(1, _order(xs) + 1):
        args = [x.value if isinstance(x, Constant) else Series(interp, x[:k]) for x in xs]
        ys = Series(interp, _stack(y))
        x_dots = [None if isinstance(x, Constant) else Series(interp, _slope(x, k)) for x in xs]
        if prim.jvp_joint is not None:
            y_dot = prim.jvp_joint([np.zeros(np.shape(x.value)) if t is None else t
                                    for x, t in zip(xs, x_dots)], ys, *args, **params)
        else:
            y_dot = sum(prim.jvp[i](t, ys, *args, **params) for i, t in enumerate(x_dots)
                        if t is not None)
        coeff = y_dot.coeffs[k - 1] if type(y_dot) is Series else (y_dot if k == 1 else 0.0)
        y.append(np.broadcast_to(np.asarray(coeff) / k, np.shape(y0)))
    return _stack(y)


def _slope(x: np.ndarray, k: int) -> np.ndarray:
    """Coefficients 0..k-1 of x'(t): ``(j+1) x_{j+1}``."""
    return x[1:k + 1] * np.reshape(np.arange(1.0, k + 1), (k,) + (1,) * (x.ndim - 1))


LINEAR = ("neg", "add", "sub", "reshape", "transpose", "getitem", "scatter_add", "concatenate",
          "broadcast_to", "sum", "cumsum", "real", "imag", "conj", "fft", "ifft", "rfft", "irfft",
          "where")
RULES: dict[str, Callable[..., np.ndarray]] = {
    **dict.fromkeys(LINEAR, _linear()), "select": _linear(fixed=(0,)),
    "mul": _mul, "matmul": _bilinear, "div": _div, "log": _log, "sqrt": _sqrt, "power": _power,
    "exp": _ode(np.exp, lambda y, m: y[m]),
    "tanh": _ode(np.tanh, lambda y, m: (m == 0) - _square(y, m)),
    "tan": _ode(np.tan, lambda y, m: (m == 0) + _square(y, m)),
    "sigmoid": _ode(lambda v: 0.5 * np.tanh(0.5 * v) + 0.5, lambda y, m: y[m] - _square(y, m)),
    "sin": _pair(np.sin, np.cos, -1.0, 0), "cos": _pair(np.sin, np.cos, -1.0, 1),
    "sinh": _pair(np.sinh, np.cosh, 1.0, 0), "cosh": _pair(np.sinh, np.cosh, 1.0, 1),
}


def propagate(fun: Callable[..., Any], coeffs: list[np.ndarray]) -> Any:
    """Run ``fun`` on series with the given coefficients (each ``(K+1, *shape)``); the
    output's leaves become coefficient arrays (a constant output: its value, then zeros)."""
    K = len(coeffs[0]) - 1
    with new_level(TaylorInterpreter) as interp:
        out = fun(*(Series(interp, np.asarray(c, dtype=float)) for c in coeffs))

        def unwrap(v: Any) -> np.ndarray:
            if type(v) is Series and v._interp is interp:
                return v.coeffs
            return _stack([_term(Constant(v), k) for k in range(K + 1)])
        return tree_map(unwrap, out)


def coefficients(fun: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """Taylor coefficients of ``fun(x(t))`` for one input curve with coefficients ``x``."""
    return propagate(fun, [x])
