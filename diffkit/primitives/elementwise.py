"""Elementwise primitives: arithmetic, powers, transcendental and non-smooth functions.

Every entry is complete: numpy implementation, JVP rule (tangent ``x_dot`` in, tangent
out), VJP rule (adjoint ``y_bar`` in, adjoint of the argument out) and sympy
translation. A unary function needs only its derivative ``d(y, x)`` (``y = f(x)`` is
passed too, when it is cheaper to use) and says which of the two it reads (``saves``:
what a reverse-mode tape keeps): forward mode computes ``x_dot * d``, reverse mode
``y_bar * d``. Rules are written with the primitives themselves, so they can be
differentiated again (Hessians, nested derivatives). Broadcasting is undone by the
interpreters, once, not in each rule.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Box, NotApplicable, Primitive, primal, shape
from .compare import mask, select
from .structure import align


def unary(name: str, impl: np.ufunc | Callable, d: Callable[[Any, Any], Any], saves: str,
          sympy: Callable[..., Any], array_api: str | Callable | None = None) -> Primitive:
    """A unary elementwise primitive from its derivative ``d(y, x)``, which reads ``saves``."""
    return Primitive(
        name, impl,
        jvp=(lambda x_dot, y, x: x_dot * d(y, x),),
        vjp=(lambda y_bar, y, x: y_bar * d(y, x),),
        saves=(saves,), sympy=sympy, broadcasts=True,
        ufunc=impl if isinstance(impl, np.ufunc) else None, array_api=array_api,
    )


def _sigmoid(x: Any) -> Any:
    return 0.5 * np.tanh(0.5 * x) + 0.5  # stable for large |x|


def _zero(y: Any, x: Any) -> np.ndarray:
    return np.zeros(shape(y))


exp = unary("exp", np.exp, lambda y, x: y, "y", lambda sp, x: sp.exp(x))
log = unary("log", np.log, lambda y, x: 1.0 / x, "x", lambda sp, x: sp.log(x))
log1p = unary("log1p", np.log1p, lambda y, x: 1.0 / (1.0 + x), "x", lambda sp, x: sp.log(1 + x))
sqrt = unary("sqrt", np.sqrt, lambda y, x: 0.5 / y, "y", lambda sp, x: sp.sqrt(x))
sin = unary("sin", np.sin, lambda y, x: cos(x), "x", lambda sp, x: sp.sin(x))
cos = unary("cos", np.cos, lambda y, x: -sin(x), "x", lambda sp, x: sp.cos(x))
tan = unary("tan", np.tan, lambda y, x: 1.0 + y * y, "y", lambda sp, x: sp.tan(x))
arcsin = unary("arcsin", np.arcsin, lambda y, x: 1.0 / sqrt(1.0 - x * x), "x", lambda sp, x: sp.asin(x),
               "asin")
arccos = unary("arccos", np.arccos, lambda y, x: -1.0 / sqrt(1.0 - x * x), "x",
               lambda sp, x: sp.acos(x), "acos")
arctan = unary("arctan", np.arctan, lambda y, x: 1.0 / (1.0 + x * x), "x", lambda sp, x: sp.atan(x),
               "atan")
sinh = unary("sinh", np.sinh, lambda y, x: cosh(x), "x", lambda sp, x: sp.sinh(x))
cosh = unary("cosh", np.cosh, lambda y, x: sinh(x), "x", lambda sp, x: sp.cosh(x))
tanh = unary("tanh", np.tanh, lambda y, x: 1.0 - y * y, "y", lambda sp, x: sp.tanh(x))
sigmoid = unary("sigmoid", _sigmoid, lambda y, x: y * (1.0 - y), "y", lambda sp, x: 1 / (1 + sp.exp(-x)),
                lambda xp, x: 1.0 / (1.0 + xp.exp(-x)))
sign = unary("sign", np.sign, _zero, "", lambda sp, x: sp.sign(x))

neg = Primitive(
    "neg", operator.neg,
    jvp=(lambda x_dot, y, x: -x_dot,),
    vjp=(lambda y_bar, y, x: -y_bar,),
    saves=("",),
    sympy=lambda sp, x: -x, broadcasts=True, ufunc=np.negative, array_api="negative",
)
add = Primitive(
    "add", operator.add,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: y_dot),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: z_bar),
    saves=("", ""),
    sympy=lambda sp, x, y: x + y, broadcasts=True, ufunc=np.add,
)
sub = Primitive(
    "sub", operator.sub,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: -y_dot),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: -z_bar),
    saves=("", ""),
    sympy=lambda sp, x, y: x - y, broadcasts=True, ufunc=np.subtract, array_api="subtract",
)
mul = Primitive(
    "mul", operator.mul,
    jvp=(lambda x_dot, z, x, y: x_dot * y, lambda y_dot, z, x, y: x * y_dot),
    vjp=(lambda z_bar, z, x, y: z_bar * y, lambda z_bar, z, x, y: x * z_bar),
    saves=("y", "x"),
    sympy=lambda sp, x, y: x * y, broadcasts=True, ufunc=np.multiply, array_api="multiply",
)
div = Primitive(
    "div", np.true_divide,
    jvp=(lambda x_dot, z, x, y: x_dot / y, lambda y_dot, z, x, y: -y_dot * z / y),
    vjp=(lambda z_bar, z, x, y: z_bar / y, lambda z_bar, z, x, y: -z_bar * z / y),
    saves=("y", "z y"),
    sympy=lambda sp, x, y: x / y, broadcasts=True, ufunc=np.true_divide, array_api="divide",
)


def _dpow_dx(x: Any, y: Any) -> Any:
    """d(x**y)/dx = y x^(y-1), exactly 0 where y == 0 (not 0 * inf at x = 0).

    Where y == 0 the product ``y * x^(y-1)`` is kept, not replaced by a constant, so its
    derivative in y (the mixed second derivative, 1/x) survives; only at x = y = 0 the
    base is swapped for 1 (nothing infinite is computed) and the result is the constant 0.
    """
    if not isinstance(y, Box) and np.ndim(y) == 0:  # a constant exponent: the common case
        return 0.0 * x if y == 0 else (2.0 * x if y == 2 else y * x ** (y - 1))
    both_zero = mask(np.equal, abs(x) + abs(y), 0.0)  # x = y = 0 (one mask per example: vmap)
    return select(both_zero, 0.0, y * select(both_zero, 1.0, x) ** (y - 1))


def _dpow_dy(z: Any, x: Any) -> Any:
    """d(x**y)/dy = x^y log x, exactly 0 where x == 0 (the double-where keeps log(0) out)."""
    at_zero = mask(np.equal, x, 0.0)  # (one mask per example under vmap)
    return select(at_zero, 0.0, z * log(select(at_zero, 1.0, x)))


power = Primitive(
    "power", np.power,
    jvp=(lambda x_dot, z, x, y: x_dot * _dpow_dx(x, y),
         lambda y_dot, z, x, y: y_dot * _dpow_dy(z, x)),
    vjp=(lambda z_bar, z, x, y: z_bar * _dpow_dx(x, y),
         lambda z_bar, z, x, y: z_bar * _dpow_dy(z, x)),
    saves=("x y", "z x"),
    sympy=lambda sp, x, y: x**y, broadcasts=True, ufunc=np.power, array_api="pow",
)


def _share(x: Any, y: Any) -> Any:
    """Weight of x in max(x, y): 1 where x wins, 1/2 at ties (as JAX and PyTorch do)."""
    return select(mask(np.greater, x, y), 1.0, select(mask(np.equal, x, y), 0.5, 0.0))


maximum = Primitive(
    "maximum", np.maximum,
    jvp=(lambda x_dot, z, x, y: x_dot * _share(x, y), lambda y_dot, z, x, y: y_dot * _share(y, x)),
    vjp=(lambda z_bar, z, x, y: z_bar * _share(x, y), lambda z_bar, z, x, y: z_bar * _share(y, x)),
    saves=("x y", "x y"),
    sympy=lambda sp, x, y: sp.Max(x, y), broadcasts=True, ufunc=np.maximum,
)
minimum = Primitive(
    "minimum", np.minimum,
    jvp=(lambda x_dot, z, x, y: x_dot * _share(y, x), lambda y_dot, z, x, y: y_dot * _share(x, y)),
    vjp=(lambda z_bar, z, x, y: z_bar * _share(y, x), lambda z_bar, z, x, y: z_bar * _share(x, y)),
    saves=("x y", "x y"),
    sympy=lambda sp, x, y: sp.Min(x, y), broadcasts=True, ufunc=np.minimum,
)


def _where(x: Any, y: Any, *, cond: np.ndarray) -> Any:
    return np.where(cond, x, y)


def _where_batch(args: list, batched: tuple, size: int, cond: np.ndarray) -> Any:
    """``where`` over a batch of ``x``/``y``; the condition is the same for every example
    (the condition of forward mode's batched tangents is computed from primal values)."""
    x, y = align(args, batched, size, rank=np.ndim(cond))
    return where(x, y, cond=cond)


where = Primitive(
    "where", _where,
    jvp=(lambda x_dot, z, x, y, *, cond: where(x_dot, 0.0, cond=cond),
         lambda y_dot, z, x, y, *, cond: where(0.0, y_dot, cond=cond)),
    vjp=(lambda z_bar, z, x, y, *, cond: where(z_bar, 0.0, cond=cond),
         lambda z_bar, z, x, y, *, cond: where(0.0, z_bar, cond=cond)),
    saves=("", ""),
    sympy=lambda sp, x, y, *, cond: sp.Piecewise((x, cond), (y, True)), broadcasts=True,
    batch=lambda args, batched, size, *, cond: _where_batch(args, batched, size, cond),
    array_api=lambda xp, x, y, *, cond: xp.where(xp.asarray(cond), x, y),
)


# --------------------------------------------------------------------------- more functions
# (the rest of numpy's elementwise functions; compositions such as square, log2 or
# deg2rad live in diffkit.numpy, where their derivatives come from the primitives above)


def no_closed_form(name: str) -> Callable[..., Any]:
    """The sympy translation of a function with no closed form in sympy: a clear error
    that the harness reports as a "n/a" cell."""
    def refuse(sp: Any, *args: Any, **params: Any) -> Any:
        raise NotApplicable(f"the symbolic backend needs a closed form, but {name} has no "
                           "closed form here; use another backend")
    refuse.no_closed_form = True  # type: ignore[attr-defined]
    return refuse


LN2 = float(np.log(2.0))

cbrt = unary("cbrt", np.cbrt, lambda y, x: 1.0 / (3.0 * y * y), "y", lambda sp, x: sp.real_root(x, 3),
             lambda xp, x: xp.sign(x) * xp.abs(x) ** (1.0 / 3.0))
exp2 = unary("exp2", np.exp2, lambda y, x: LN2 * y, "y", lambda sp, x: 2**x,
             lambda xp, x: xp.pow(2.0, x))
expm1 = unary("expm1", np.expm1, lambda y, x: y + 1.0, "y", lambda sp, x: sp.exp(x) - 1)
arcsinh = unary("arcsinh", np.arcsinh, lambda y, x: 1.0 / sqrt(x * x + 1.0), "x",
                lambda sp, x: sp.asinh(x), "asinh")
arccosh = unary("arccosh", np.arccosh, lambda y, x: 1.0 / sqrt(x * x - 1.0), "x",
                lambda sp, x: sp.acosh(x), "acosh")
arctanh = unary("arctanh", np.arctanh, lambda y, x: 1.0 / (1.0 - x * x), "x",
                lambda sp, x: sp.atanh(x), "atanh")


# d sinc/dx = sum_n (-1)^n 2n pi^2n x^(2n-1) / (2n+1)!, n = 1..8: used for |x| < 0.15, where
# the formula below loses digits to cancellation (and at 0 divides by zero); its error there
# is below 3e-16, and at 0 it gives the derivatives of sinc up to the 16th (to rounding)
# (the second, -pi^2/3, included): the polynomial is differentiated exactly.
_SINC_SERIES = tuple((-1) ** n * 2 * n * np.pi ** (2 * n) / float(np.prod(np.arange(1.0, 2 * n + 2)))
                     for n in range(1, 9))


def _dsinc(y: Any, x: Any) -> Any:
    """d sinc(x)/dx = (cos(pi x) - sinc(x)) / x, and its Taylor series near 0."""
    near_zero = mask(np.less, abs(x), 0.15)  # (one mask per example under vmap)
    safe = _choose(near_zero, 1.0, x)
    xx = x * x
    series = 0.0
    for c in reversed(_SINC_SERIES):  # Horner's rule in x^2
        series = series * xx + c
    return _choose(near_zero, series * x, (cos(np.pi * x) - y) / safe)


def _choose(cond: Any, a: Any, b: Any) -> Any:
    """``a`` where the mask ``cond`` holds, else ``b``; on formulas (the symbolic backend
    runs the rule on symbols) the mask is an inequality, and the choice a Piecewise."""
    return where(a, b, cond=cond) if getattr(cond, "is_Relational", False) else select(cond, a, b)


sinc = unary("sinc", np.sinc, _dsinc, "y x", lambda sp, x: sp.sinc(sp.pi * x),
             lambda xp, x: xp.where(x == 0, 1.0, xp.sin(np.pi * x) / (np.pi * xp.where(x == 0, 1.0, x))))


@functools.cache
def flat(sp: Any, name: str) -> Any:
    """sympy's ``floor`` / ``ceiling`` with derivative 0 (sympy leaves it unevaluated);
    it keeps the name, so printers and lambdify treat it as the original."""
    return type(name, (getattr(sp, name),), {"fdiff": lambda self, argindex=1: sp.S.Zero})


floor = unary("floor", np.floor, _zero, "", lambda sp, x: flat(sp, "floor")(x))
ceil = unary("ceil", np.ceil, _zero, "", lambda sp, x: flat(sp, "ceiling")(x))
rint = unary("rint", np.rint, _zero, "", no_closed_form("rint"),
             lambda xp, x: xp.round(x))


def _floor_div(x: Any, y: Any) -> Any:
    return floor(x / y)  # (a primitive: its derivative, zero, is known to every interpreter)


@functools.cache
def _sympy_mod(sp: Any) -> Any:
    """sympy's Mod with its derivatives (1, and -floor(x / y)), which sympy leaves unevaluated."""
    def fdiff(self: Any, argindex: int = 1) -> Any:
        x, y = self.args
        return sp.S.One if argindex == 1 else -flat(sp, "floor")(x / y)
    return type("Mod", (sp.Mod,), {"fdiff": fdiff})


mod = Primitive(  # numpy's mod / remainder: x - floor(x / y) y, the sign of y
    "mod", np.mod,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: -y_dot * _floor_div(x, y)),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: -z_bar * _floor_div(x, y)),
    saves=("", "x y"),
    sympy=lambda sp, x, y: _sympy_mod(sp)(x, y), broadcasts=True, ufunc=np.mod,
    array_api="remainder",
)


def _trunc_div(x: Any, y: Any) -> Any:
    return sign(x) * sign(y) * floor(abs(x) / abs(y))


fmod = Primitive(  # C's fmod: x - trunc(x / y) y, the sign of x
    "fmod", np.fmod,
    jvp=(lambda x_dot, z, x, y: x_dot, lambda y_dot, z, x, y: -y_dot * _trunc_div(x, y)),
    vjp=(lambda z_bar, z, x, y: z_bar, lambda z_bar, z, x, y: -z_bar * _trunc_div(x, y)),
    saves=("", "x y"),
    sympy=lambda sp, x, y: x - y * sp.sign(x) * sp.sign(y) * flat(sp, "floor")(sp.Abs(x) / sp.Abs(y)),
    broadcasts=True, ufunc=np.fmod, array_api=lambda xp, x, y: x - y * xp.trunc(x / y),
)
arctan2 = Primitive(  # arctan2(y, x), the angle of the point (x, y); named a, b here
    "arctan2", np.arctan2,
    jvp=(lambda a_dot, z, a, b: a_dot * b / (a * a + b * b),
         lambda b_dot, z, a, b: -b_dot * a / (a * a + b * b)),
    vjp=(lambda z_bar, z, a, b: z_bar * b / (a * a + b * b),
         lambda z_bar, z, a, b: -z_bar * a / (a * a + b * b)),
    saves=("a b", "a b"),
    sympy=lambda sp, a, b: sp.atan2(a, b), broadcasts=True, ufunc=np.arctan2, array_api="atan2",
)
hypot = Primitive(
    "hypot", np.hypot,
    jvp=(lambda x_dot, z, x, y: x_dot * x / z, lambda y_dot, z, x, y: y_dot * y / z),
    vjp=(lambda z_bar, z, x, y: z_bar * x / z, lambda z_bar, z, x, y: z_bar * y / z),
    saves=("z x", "z y"),
    sympy=lambda sp, x, y: sp.sqrt(x**2 + y**2), broadcasts=True, ufunc=np.hypot,
)
logaddexp = Primitive(
    "logaddexp", np.logaddexp,
    jvp=(lambda x_dot, z, x, y: x_dot * exp(x - z), lambda y_dot, z, x, y: y_dot * exp(y - z)),
    vjp=(lambda z_bar, z, x, y: z_bar * exp(x - z), lambda z_bar, z, x, y: z_bar * exp(y - z)),
    saves=("z x", "z y"),
    sympy=lambda sp, x, y: sp.log(sp.exp(x) + sp.exp(y)), broadcasts=True, ufunc=np.logaddexp,
)
logaddexp2 = Primitive(
    "logaddexp2", np.logaddexp2,
    jvp=(lambda x_dot, z, x, y: x_dot * exp2(x - z), lambda y_dot, z, x, y: y_dot * exp2(y - z)),
    vjp=(lambda z_bar, z, x, y: z_bar * exp2(x - z), lambda z_bar, z, x, y: z_bar * exp2(y - z)),
    saves=("z x", "z y"),
    sympy=lambda sp, x, y: sp.log(2**x + 2**y, 2), broadcasts=True, ufunc=np.logaddexp2,
    array_api=lambda xp, x, y: xp.logaddexp(x * LN2, y * LN2) / LN2,
)


# --------------------------------------------------------------------------- complex values
# Complex values are inputs being differentiated, or come from the Fourier transforms
# (diffkit.primitives.fourier). Derivatives follow JAX's convention: the VJP of a primitive is
# the transpose of its JVP (a real-linear map) for the pairing <u, v> = Re sum(u v), with
# no complex conjugation. Holomorphic rules (mul, exp ...) then hold as they are for
# complex values; the gradient of a real loss L(z) is dL/dx - i dL/dy (PyTorch returns
# its conjugate). An adjoint reaching a real input is made real: its imaginary part would
# be the derivative with respect to an imaginary part the input does not have.


def is_complex(x: Any) -> bool:
    """Whether ``x`` holds complex values (for boxes: their primal value's dtype; for a
    formula of the symbolic backend, whether it may be complex)."""
    if getattr(x, "expression", False):
        return x.complex_valued()
    value = primal(x)
    return isinstance(value, complex) or getattr(value, "dtype", np.float64(0).dtype).kind == "c"


def to_input(x: Any, x_bar: Any) -> Any:
    """The adjoint of ``x``: real where ``x`` is real."""
    return x_bar if is_complex(x) else real(x_bar)


real = Primitive(
    "real", np.real,
    jvp=(lambda x_dot, y, x: real(x_dot),),
    vjp=(lambda y_bar, y, x: y_bar,),  # (y_bar + 0i: a real adjoint of a complex x)
    saves=("",), sympy=lambda sp, x: sp.re(x), broadcasts=True,
)
_MINUS_I = np.complex128(-1j)  # (a numpy scalar: a constant any interpreter takes)
imag = Primitive(
    "imag", np.imag,
    jvp=(lambda x_dot, y, x: imag(x_dot),),
    vjp=(lambda y_bar, y, x: y_bar * _MINUS_I if is_complex(x) else 0.0 * y_bar,),
    saves=("",), sympy=lambda sp, x: sp.im(x), broadcasts=True,  # (a kept input keeps its dtype)
)
conj = Primitive(
    "conj", np.conjugate,
    jvp=(lambda x_dot, y, x: conj(x_dot),),
    vjp=(lambda y_bar, y, x: to_input(x, conj(y_bar)),),
    saves=("",), sympy=lambda sp, x: sp.conjugate(x), broadcasts=True, ufunc=np.conjugate,
)


def _conj_unit(x: Any) -> Any:
    """conj(x) / |x|, and 0 at x = 0 (as sign(0) = 0 on the reals, and as JAX)."""
    r = abs(x)
    return conj(x) / select(mask(np.equal, r, 0.0), 1.0, r)


def _dabs_dot(x_dot: Any, y: Any, x: Any) -> Any:
    """d|x| = sign(x) dx; for complex x, Re(conj(x) dx) / |x|."""
    return real(x_dot * _conj_unit(x)) if is_complex(x) else x_dot * sign(x)


def _dabs_bar(y_bar: Any, y: Any, x: Any) -> Any:
    return y_bar * _conj_unit(x) if is_complex(x) else y_bar * sign(x)


abs = Primitive(  # noqa: A001
    "abs", np.abs, jvp=(_dabs_dot,), vjp=(_dabs_bar,), saves=("x",),
    sympy=lambda sp, x: sp.Abs(x), broadcasts=True, ufunc=np.abs,
)
