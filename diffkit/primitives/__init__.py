"""The primitive table: every differentiable operation diffkit knows, each defined once.

``table()`` lists them by name; each entry holds the numpy implementation, the JVP and
VJP rules and the sympy translation (see :class:`diffkit.core.Primitive`).
"""

from __future__ import annotations

from typing import Any

from ..core import Each, Primitive
from .elementwise import (abs, add, arccos, arcsin, arctan, cos, cosh, div, exp, log,  # noqa: A004
                          log1p, maximum, minimum, mul, neg, power, sigmoid, sign, sin, sinh,
                          sqrt, sub, tan, tanh, where)
from .linalg import matmul
from .reductions import broadcast_to, logsumexp, max, min, prod, sum, sum_to  # noqa: A004
from .structure import concatenate, getitem, reshape, scatter_add, transpose
from .elementwise import (arccosh, arcsinh, arctan2, arctanh, cbrt, ceil, exp2, expm1, floor, fmod,
                          hypot, logaddexp, logaddexp2, mod, rint, sinc, sinc_derivative)
from .reductions import cumprod, cumsum
from .contraction import einsum
from .linalg import adjugate, cholesky, det, eigh, inv, logabsdet, qr, solve, svd
from .pseudo import pinv
from .special import erf, erfc, gammaln, log_ndtr, logit, polygamma, xlogy
from .special import beta, betaln, entr, erfcinv, erfcx, erfinv, gamma, ndtri, rgamma, spence, xlog1py
from .parametric import (betainc, gamma_density, gammainc, gammainc_da, gammaincc, iv, ive,
                         ive_derivative, jv, yv, zeta)
from .elementwise import conj, imag, is_complex, real, to_input
from .fourier import fft, ifft, irfft, rfft
from .gather import gather, scatter
from .matrix_functions import expm, solve_sylvester, sqrtm
from .eigen import eig

from . import contraction as _contraction, elementwise as _elementwise, fourier as _fourier  # noqa: E402,I001
from . import gather as _gather, linalg as _linalg, pseudo as _pseudo  # noqa: E402
from . import reductions as _reductions, special as _special, structure as _structure  # noqa: E402
from . import parametric as _parametric, matrix_functions as _matrix_functions  # noqa: E402
from . import eigen as _eigen  # noqa: E402


def families() -> dict[str, list[str]]:
    """The primitives' names by family: the module that defines them (modules are taken
    in dependency order, so a primitive a module imports stays with its own family)."""
    order = {"structure": _structure, "gathers by computed indices": _gather,
             "elementwise": _elementwise, "reductions": _reductions,
             "contraction": _contraction, "linear algebra": _linalg, "pseudo-inverse": _pseudo,
             "matrix functions": _matrix_functions, "eigendecomposition": _eigen,
             "special functions": _special,
             "special functions of an order or shape": _parametric, "fourier transforms": _fourier}
    seen: set[str] = set()
    out = {}
    for family, module in order.items():
        out[family] = sorted({v.name for v in vars(module).values()
                              if isinstance(v, Primitive)} - seen)
        seen.update(out[family])
    return out


def table() -> dict[str, Primitive]:
    """All primitives by name."""
    return {v.name: v for v in globals().values() if isinstance(v, Primitive)}



__all__ = [name for name, v in list(globals().items()) if isinstance(v, Primitive)] + [
    "families", "is_complex", "source", "sum_to", "table", "to_input", "unary_derivative"]


def unary_derivative(rule: Any) -> Any:
    """The derivative ``d(y, x)`` that a unary primitive's JVP or VJP rule multiplies by (as
    written: not its long double form, ``extended.rounded_derivative``), or None for another
    rule."""
    import inspect

    d = inspect.getclosurevars(rule).nonlocals.get("d") if inspect.isfunction(rule) else None
    return None if d is None else inspect.unwrap(d)


def source(name: str) -> dict[str, list[str]]:
    """The source text of a primitive's entry: implementation, sympy, JVP and VJP rules.

    >>> "cos(x)" in "".join(source("sin")["jvp"])
    True
    """
    import inspect

    table_ = table()
    if name not in table_:
        import difflib

        close = difflib.get_close_matches(name, table_, n=3)
        raise KeyError(f"unknown primitive {name!r}" + (f"; did you mean {', '.join(close)}?"
                                                         if close else "; see the table"))
    prim = table_[name]

    def text(fn: Any) -> str:
        fn = getattr(fn, "func", fn)  # Each(...) rules
        fn = unary_derivative(fn) or fn  # unary primitives: x_dot * d(y, x) / y_bar * d(y, x)
        try:
            return inspect.getsource(fn).strip()
        except (OSError, TypeError):
            return repr(fn)

    joint = prim.jvp_pair or prim.jvp_joint
    jvp = [text(joint)] if joint else [text(r) for r in prim.jvp]
    vjp = [text(prim.vjp.rule)] if isinstance(prim.vjp, Each) else [text(r) for r in prim.vjp]
    numpy = text(prim.impl)
    if prim.ufunc is not None and getattr(prim.impl, "__wrapped__", None) is prim.ufunc:
        numpy = f"np.{prim.ufunc.__name__} in 64-bit long double, rounded once (extended.rounded)"
    return {"numpy": [numpy], "sympy": [text(prim.sympy)] if prim.sympy else [],
            "jvp": list(dict.fromkeys(jvp)), "vjp": list(dict.fromkeys(vjp))}
