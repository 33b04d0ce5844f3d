"""Taylor-mode rules: how a primitive maps truncated Taylor series (the ``taylor`` field of
an entry; :mod:`diffkit.interpreters.taylor` runs them).

A series is an array of coefficients ``(K+1, *shape)``; a constant argument is a
:class:`Constant` (its value, then zeros). A rule ``rule(prim, xs, params)`` returns the
output's coefficients, or None to let the interpreter derive them from the primitive's
JVP rule, which works for every primitive at a cost of one JVP per order. The rules here
are the cheaper recurrences: a linear primitive applied to each coefficient
(:func:`linear`, the default of an entry marked ``linear``), Cauchy products and
quotients, and functions that satisfy a first-order ODE in their own value
(``exp' = exp``: :func:`ode`) or come in pairs (``sin' = cos``: :func:`pair`; tanh and
sigmoid with sech^2, which keeps its digits where they round to 1: :func:`logistic`).

>>> import numpy as np
>>> from diffkit.primitives import exp
>>> ode(np.exp, lambda y, m: y[m])(exp, [np.array([0.0, 1.0, 0.0])], {}).round(6).tolist()
[1.0, 1.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Primitive


class Constant:
    """A constant argument: its value, and no higher coefficients."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def term(x: Any, k: int) -> Any:
    """Coefficient k of an argument (constants: the value, then 0)."""
    if isinstance(x, Constant):
        return x.value if k == 0 else np.zeros_like(np.asarray(x.value, dtype=float))
    return x[k]


def stack(terms: list) -> np.ndarray:
    return np.stack([np.asarray(t) for t in np.broadcast_arrays(*terms)]) if terms else np.zeros(0)


def order(xs: list) -> int:
    return min(len(x) - 1 for x in xs if not isinstance(x, Constant))


def linear(fixed: tuple[int, ...] = ()) -> Callable[..., np.ndarray]:
    """A primitive linear in its arguments (those in ``fixed``, such as select's mask,
    are the same at every order): apply it to each coefficient."""
    def rule(prim: Primitive, xs: list, params: dict) -> np.ndarray:
        return stack([prim.impl(*(x.value if i in fixed else term(x, k)
                                   for i, x in enumerate(xs)), **params)
                       for k in range(order(xs) + 1)])
    return rule


def _scaled(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """A product with a constant factor: linear in the other argument."""
    return linear(fixed=tuple(i for i, x in enumerate(xs) if isinstance(x, Constant)))(
        prim, xs, params)


def _lift(c: np.ndarray, ndim: int) -> np.ndarray:
    """Coefficients ``(K+1, *s)`` with size-1 axes after the first, to broadcast as ``s``."""
    return np.reshape(c, (len(c),) + (1,) * (ndim - c.ndim + 1) + c.shape[1:])


def _cauchy(a: np.ndarray, b: np.ndarray, product: Callable[[Any, Any], Any]) -> np.ndarray:
    """``c_k = Σ_{j=0}^{k} product(a_j, b_{k-j})``, k = 0..K."""
    K = min(len(a), len(b)) - 1
    out = [sum((product(a[j], b[k - j]) for j in range(k + 1)), np.zeros(())) for k in range(K + 1)]
    return stack(out)


def product(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    a, b = xs
    if isinstance(a, Constant) or isinstance(b, Constant):
        return _scaled(prim, xs, params)
    nd = max(a.ndim, b.ndim) - 1
    a, b = _lift(a, nd), _lift(b, nd)
    out = np.zeros((len(a),) + np.broadcast_shapes(a.shape[1:], b.shape[1:]),
                   dtype=np.result_type(a, b))
    for j in range(len(a)):
        out[j:] += a[j] * b[:len(a) - j]
    return out


def bilinear(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """matmul: a Cauchy product of the primitive itself."""
    a, b = xs
    if isinstance(a, Constant) or isinstance(b, Constant):
        return _scaled(prim, xs, params)
    return _cauchy(a, b, lambda u, v: prim.impl(u, v, **params))


def _full(x: Any, K: int) -> np.ndarray:
    """Every coefficient, order 0..K, of an argument (zeros after a constant's value)."""
    return x[:K + 1] if not isinstance(x, Constant) else stack([term(x, k) for k in range(K + 1)])


def quotient(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    a, b = xs
    if isinstance(b, Constant):
        return _scaled(prim, xs, params)
    K = order(xs)
    a, b = _full(a, K), b
    q = [a[0] / b[0]]
    for k in range(1, K + 1):  # a = q b, solved for q_k
        q.append((a[k] - sum(b[j] * q[k - j] for j in range(1, k + 1))) / b[0])
    return stack(q)


def ode(first: Callable[[Any], Any], slope: Callable[[list, int], Any]) -> Callable[..., np.ndarray]:
    """y = f(x) with y' = d · x', where ``slope(y, m)`` gives coefficient m of d from
    y's coefficients 0..m: ``y_k = Σ_{j=1}^{k} (j/k) x_j d_{k-j}``."""
    def rule(prim: Primitive, xs: list, params: dict) -> np.ndarray:
        x = xs[0]
        y, d = [first(x[0])], []
        for k in range(1, len(x)):
            d.append(slope(y, k - 1))
            y.append(sum(j / k * x[j] * d[k - j] for j in range(1, k + 1)))
        return stack(y)
    return rule


def logistic(first: Callable[[Any], Any], slope: Callable[[Any], Any], a: float,
             b: float) -> Callable[..., np.ndarray]:
    """y = first(x) = c + b tanh(a x) (tanh: a = b = 1; sigmoid: a = b = 1/2, c = 1/2),
    ``slope(x)`` its derivative a b sech^2(a x), both accurate where y rounds to its limit.
    Its coefficients come from the pair t = tanh(a x), d = sech^2(a x): t' = a d x',
    d' = -2 a t d x', every term a product, so none of them is a difference of numbers near
    1: the ODE y' = a b (1 - t^2) x' of :func:`ode` is 0 once tanh rounds to 1 (|a x| > 19),
    where its coefficients are still normal numbers (-2e-35 at tanh's x = 40)."""
    def rule(prim: Primitive, xs: list, params: dict) -> np.ndarray:
        x = xs[0]
        t, d = [np.tanh(a * x[0])], [slope(x[0]) / (a * b)]
        for k in range(1, len(x)):
            td = [sum(t[i] * d[m - i] for i in range(m + 1)) for m in range(k)]
            t.append(a * sum(j / k * x[j] * d[k - j] for j in range(1, k + 1)))
            d.append(-2.0 * a * sum(j / k * x[j] * td[k - j] for j in range(1, k + 1)))
        return stack([first(x[0])] + [b * c for c in t[1:]])
    return rule


def square(y: list, m: int) -> Any:
    return sum(y[i] * y[m - i] for i in range(m + 1))


def pair(first: Callable, second: Callable, sign: float, which: int) -> Callable[..., np.ndarray]:
    """sin/cos (sign -1) and sinh/cosh (sign +1) together: s' = c x', c' = sign s x'."""
    def rule(prim: Primitive, xs: list, params: dict) -> np.ndarray:
        x = xs[0]
        s, c = [first(x[0])], [second(x[0])]
        for k in range(1, len(x)):
            s.append(sum(j / k * x[j] * c[k - j] for j in range(1, k + 1)))
            c.append(sign * sum(j / k * x[j] * s[k - j] for j in range(1, k + 1)))
        return stack((s, c)[which])
    return rule


def log(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    x = xs[0]
    y = [np.log(x[0])]
    for k in range(1, len(x)):  # x y' = x'
        y.append((x[k] - sum(j / k * y[j] * x[k - j] for j in range(1, k))) / x[0])
    return stack(y)


def sqrt(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    x = xs[0]
    y = [np.sqrt(x[0])]
    for k in range(1, len(x)):  # y y = x
        y.append((x[k] - sum(y[j] * y[k - j] for j in range(1, k))) / (2.0 * y[0]))
    return stack(y)


def power(prim: Primitive, xs: list, params: dict) -> np.ndarray:
    """x^a for a constant a where x_0 has no zero (x y' = a x' y); else None (from the
    JVP rule)."""
    x, a = xs
    if not isinstance(a, Constant) or isinstance(x, Constant) or np.any(np.asarray(x[0]) == 0):
        return None
    a = a.value
    y = [np.power(x[0], a)]
    for k in range(1, len(x)):
        y.append(sum((a * (k - j) - j) * x[k - j] * y[j] for j in range(k)) / (k * x[0]))
    return stack(y)
