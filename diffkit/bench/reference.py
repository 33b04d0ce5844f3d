"""High-precision reference derivatives: what every accuracy figure is measured against.

How a reference is computed (``Reference.method`` says which):

* ``closed form``: the function is run on symbols to a SymPy expression, differentiated exactly
  by SymPy, and evaluated (``evalf``, mpmath underneath) at ``dps`` significant digits
  (40 by default), the inputs taken as the exact binary values of the float64 arguments
  (as Floats of 60 digits, not exact rationals: SymPy's exact arithmetic can explode), and
  each ``where`` decided before its branch is evaluated (an unselected branch may be
  complex or infinite at the point).
  Where f itself is NaN, so is the reference derivative; a value that is not real (log
  of a negative number) is NaN, a complex infinity (1/0) is inf.
* ``local closed form``: a function that branches on values (``if``, ``while``) has no
  single closed form, but at a given point every branch is decided: the run compares
  at the point's values (evaluated at 50 digits) and keeps the branch taken, giving the
  closed form valid around that point, differentiated and evaluated as above.

Neither path uses the numpy implementations or the derivative rules of the primitive
table, so a reference is independent of the forward, reverse and numeric backends.
It shares with the symbolic backend the run to SymPy and the exact derivative
(:func:`~diffkit.interpreters.symbolic.differentiate`), whose sympy translations are checked
against numpy in the tests; the symbolic backend then evaluates in float64 after CSE,
the reference evaluates the exact derivatives in mpmath.

>>> import diffkit.numpy as dnp
>>> ref = reference(lambda x: dnp.sin(x), 1.0, kind="derivative")
>>> print(ref.method, float(ref.derivative))
closed form 0.5403023058681398
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from ..interpreters.symbolic import differentiate, evaluate_at, to_sympy
from ..core import NotApplicable, shape
from .kinks import kink


@dataclass(frozen=True)
class Reference:
    """f(x) and its derivative, rounded to float64 from ``dps``-digit values."""

    value: Any
    derivative: Any
    method: str
    dps: int
    kink: str = ""  # where f has no derivative at x (diffkit.bench.kinks): what and where


def _evaluate(expr: Any, point: dict, dps: int) -> float:
    """``expr`` at ``point`` to ``dps`` digits (evalf: fast even where printing a
    Max/Heaviside-heavy expression for lambdify would take exponential time), deciding
    each Piecewise before evaluating a branch (see :func:`evaluate_at`)."""
    with mpmath.workdps(dps + 10):
        return evaluate_at(expr, point, dps)


ADJOINT_FROM = 16  # gradients of more inputs: one adjoint sweep instead of n sympy.diff calls


def _by_adjoints(f: Any, syms: list, x: np.ndarray, dps: int) -> tuple[float, Any] | None:
    """f and its gradient by :func:`~diffkit.bench.adjoints.value_and_gradient`, or None
    for expressions it does not read (e.g. piecewise ones) or where they are not finite."""
    from .adjoints import value_and_gradient

    try:
        v, g = value_and_gradient(f, syms, list(x.ravel()), dps)
        value, grad = float(v), np.array([float(d) for d in g]).reshape(x.shape)
    except (TypeError, ValueError, AttributeError, ZeroDivisionError):
        return None
    return (value, grad) if np.all(np.isfinite(grad)) and np.isfinite(value) else None


def reference(fun: Callable, x: Any, kind: str = "grad", dps: int = 40) -> Reference:
    """The reference value and derivative (``derivative``, ``grad``, ``jacobian`` or
    ``hessian``) of ``fun`` at ``x``. For ``derivative``, ``x`` may be an array of points."""
    x = np.asarray(x, dtype=float)
    if kind == "derivative" and x.ndim:
        refs = [reference(fun, xi, kind, dps) for xi in x.ravel()]
        method = refs[0].method if len({r.method for r in refs}) == 1 else "mixed"
        where = next((f"{r.kink} (point {i})" for i, r in enumerate(refs) if r.kink), "")
        return Reference(np.reshape([r.value for r in refs], x.shape),
                         np.reshape([r.derivative for r in refs], x.shape), method, dps, where)
    method = "closed form"
    try:
        syms, f = to_sympy(fun, x)
    except NotApplicable:  # no closed form: the one valid around x
        syms, f = to_sympy(fun, x, point=True)
        method = "local closed form"
    point = {s: float(v) for s, v in zip(syms, x.ravel())}  # taken as exact binary values
    where = kink(np.ravel(np.asarray(f, dtype=object)), point, dps)
    if kind == "grad" and x.size > ADJOINT_FROM:
        fast = _by_adjoints(sp.sympify(np.ravel(np.asarray(f, dtype=object))[0]), syms, x, dps)
        if fast is not None:
            return Reference(*fast, method, dps, where)
    f_flat, d_flat, d_shape = differentiate(syms, f, kind, shape(x))
    values = [_evaluate(e, point, dps) for e in f_flat + d_flat]
    nf = len(f_flat)
    value = np.reshape(values[:nf], np.shape(f))
    deriv = np.reshape(values[nf:], d_shape)
    if np.isnan(value).any():  # sympy differentiates its nan constant to 0: not a derivative
        rows = np.isnan(value).reshape(value.shape + (1,) * (deriv.ndim - value.ndim))
        deriv = np.where(np.broadcast_to(rows, deriv.shape), np.nan, deriv)
    return Reference(value[()] if value.ndim == 0 else value,
                     deriv[()] if deriv.ndim == 0 else deriv, method, dps, where)


class NotHolomorphic(NotApplicable):
    """A complex output of a complex point with no complex derivative there."""


def complex_reference(fun: Callable, z: Any, dps: int = 40) -> Reference:
    """The reference at a complex point: :func:`reference` of f on the real and imaginary
    parts (:mod:`~diffkit.backends.complex_points`), combined as JAX does (``df/dx - i
    df/dy`` for a real f; ``f'(z)`` for a complex one, which must be holomorphic there).

    >>> import numpy as np, diffkit.numpy as dnp
    >>> complex_reference(lambda z: dnp.abs(z) ** 2, np.complex128(3 + 4j)).derivative
    np.complex128(6-8j)
    """
    from .. import numpy as dnp
    from ..backends import complex_points as cp

    z = np.asarray(z, dtype=complex)
    r = reference(cp.on_parts(fun, dnp), cp.as_parts(z), "jacobian", dps)
    parts = np.asarray(r.value)
    complex_out = np.iscomplexobj(np.asarray(fun(z)))  # f's dtype decides, as numpy's
    value = parts[0] + 1j * parts[1] if complex_out else parts[0]
    A, B = cp.directions(r.derivative, np.shape(value), z.shape)
    scale = max(1.0, float(np.max(np.abs(A), initial=0.0)))
    if complex_out and not np.allclose(B, 1j * A, rtol=0, atol=1e-12 * scale):
        raise NotHolomorphic("f has a complex output and is not holomorphic at this point "
                            "(df/dy is not i df/dx): it has no complex derivative; compare a "
                            "real function of it (abs, real), or use dk.jvp")
    d = cp.jacobian(A, B).reshape(np.shape(value) + z.shape)  # a gradient, or a Jacobian
    return Reference(value[()], d[()] if d.ndim == 0 else d, r.method, dps, r.kink)
