"""Lowering: how an elementwise primitive computes on one number, for every target.

The compiler has several targets: fused loops (LLVM IR and Numba), the scalar tape VM,
plain Python floats for a scalar program, and numpy source for the unfused program.
Each reads the primitive's own ``lower`` field (a :class:`Lowering`), so they cannot drift
apart; this module holds the vocabulary the entries are written with:

* ``formula`` — the primitive on *one number*, as an expression tree over a small set of
  scalar operations (:data:`OPS`: arithmetic, comparisons, ``select`` and the C library's
  math functions). It is the same formula as the primitive's numpy implementation, step
  for step (``sigmoid`` is ``e = exp(-|x|)``, then ``1 / (1 + e)`` or ``e / (1 + e)`` by the
  sign of x, on both sides), so a fused kernel gives the unfused program's numbers: bit
  for bit where numpy's loop calls the C library, within :attr:`Lowering.ulps` where numpy
  has its own vectorized routine (see ``ulps``).
* ``numpy`` — how generated numpy code writes it (``{0} + {1}``); by default the
  primitive's ufunc (``np.sin({0})``), else a call of its implementation. A structural
  primitive numpy spells itself (``x[1:]``, ``a @ b``) has a :class:`LibraryCall` in its
  ``library`` field.

An elementwise primitive without a formula has the reason as its ``lower`` (text, e.g.
:data:`SCIPY`): it stays a library call between kernels (and a scalar program using it
runs on plain floats). ``tests/test_lowering.py`` checks every entry, fused against
unfused, and fails for an elementwise primitive with neither.

>>> from diffkit.primitives import power as power_primitive, sigmoid as sigmoid_primitive
>>> x = ScalarExpr.arg(0)
>>> print(sigmoid_primitive.lower.formula(x))
div(select(greater_equal(x0, 0.0), 1.0, exp(neg(fabs(x0)))), add(1.0, exp(neg(fabs(x0)))))
>>> print(power_primitive.lower.formula(x, ScalarExpr.const(2)))
mul(x0, x0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple


class Op(NamedTuple):
    """A scalar operation every target implements: ``kind`` is ``arith`` (an infix
    operator), ``compare`` (a boolean result), ``select`` or ``call`` (a C library
    function: ``c`` its name, ``llvm`` the LLVM intrinsic if there is one, ``py`` how
    Python and Numba spell it on float64 numbers, ``np`` numpy's name for other dtypes)."""

    arity: int
    kind: str
    symbol: str = ""          # arith / compare: the Python operator
    c: str = ""
    llvm: str = ""
    py: str = ""
    np: str = ""


def _call(c: str, arity: int = 1, llvm: bool = False, py: str = "", np_name: str = "") -> Op:
    return Op(arity, "call", c=c, llvm=f"llvm.{c}.f64" if llvm else "",
              py=py or f"math.{c}", np=np_name or c)


#: the scalar operations, the most common first (the tape VM tests its opcodes in this order)
OPS: dict[str, Op] = {
    "mul": Op(2, "arith", "*"), "add": Op(2, "arith", "+"), "sub": Op(2, "arith", "-"),
    "div": Op(2, "arith", "/"), "neg": Op(1, "arith", "-"),
    "select": Op(3, "select"),
    "greater": Op(2, "compare", ">"), "greater_equal": Op(2, "compare", ">="),
    "less": Op(2, "compare", "<"), "less_equal": Op(2, "compare", "<="),
    "equal": Op(2, "compare", "=="), "not_equal": Op(2, "compare", "!="),
    "sin": _call("sin", llvm=True), "cos": _call("cos", llvm=True),
    "exp": _call("exp", llvm=True), "log": _call("log", llvm=True),
    "tanh": _call("tanh"), "sqrt": _call("sqrt", llvm=True),
    "pow": _call("pow", 2, llvm=True, np_name="power"),
    "fabs": _call("fabs", llvm=True, py="abs", np_name="absolute"),
    "tan": _call("tan"), "sinh": _call("sinh"), "cosh": _call("cosh"),
    "asin": _call("asin", np_name="arcsin"), "acos": _call("acos", np_name="arccos"),
    "atan": _call("atan", np_name="arctan"), "asinh": _call("asinh", np_name="arcsinh"),
    "acosh": _call("acosh", np_name="arccosh"), "atanh": _call("atanh", np_name="arctanh"),
    "log1p": _call("log1p"), "expm1": _call("expm1"),
    "exp2": _call("exp2", llvm=True, py="np.exp2"), "cbrt": _call("cbrt", py="np.cbrt"),
    "floor": _call("floor", llvm=True, py="np.floor"),
    "ceil": _call("ceil", llvm=True, py="np.ceil"),
    "rint": _call("rint", llvm=True, py="np.rint"),
    "atan2": _call("atan2", 2, np_name="arctan2"), "hypot": _call("hypot", 2),
    "fmod": _call("fmod", 2, py="np.fmod"), "copysign": _call("copysign", 2, llvm=True),
}


@dataclass(frozen=True, eq=False)
class ScalarExpr:
    """An expression tree on numbers: an argument (``op == "arg"``, ``value`` its
    position), a constant (``op == "const"``) or a scalar operation of :data:`OPS`.
    Arithmetic operators build trees, so a formula reads as the math it is."""

    op: str
    args: tuple[ScalarExpr, ...] = ()
    value: Any = None

    @staticmethod
    def arg(k: int) -> ScalarExpr:
        return ScalarExpr("arg", value=k)

    @staticmethod
    def const(v: Any) -> ScalarExpr:
        return ScalarExpr("const", value=v)

    def is_const(self, v: float) -> bool:
        """This is the constant ``v`` (an int or float literal, not a bool)."""
        return self.op == "const" and type(self.value) in (int, float) and self.value == v

    def __add__(self, o: Any) -> ScalarExpr:
        return apply("add", self, o)

    def __radd__(self, o: Any) -> ScalarExpr:
        return apply("add", o, self)

    def __sub__(self, o: Any) -> ScalarExpr:
        return apply("sub", self, o)

    def __rsub__(self, o: Any) -> ScalarExpr:
        return apply("sub", o, self)

    def __mul__(self, o: Any) -> ScalarExpr:
        return apply("mul", self, o)

    def __rmul__(self, o: Any) -> ScalarExpr:
        return apply("mul", o, self)

    def __truediv__(self, o: Any) -> ScalarExpr:
        return apply("div", self, o)

    def __rtruediv__(self, o: Any) -> ScalarExpr:
        return apply("div", o, self)

    def __neg__(self) -> ScalarExpr:
        return apply("neg", self)

    def __str__(self) -> str:
        if self.op == "arg":
            return f"x{self.value}"
        if self.op == "const":
            return repr(self.value)
        return f"{self.op}({', '.join(map(str, self.args))})"


def apply(op: str, *args: Any) -> ScalarExpr:
    """The formula ``op(*args)`` (numbers become constants)."""
    assert op in OPS and len(args) == OPS[op].arity, op
    return ScalarExpr(op, tuple(a if isinstance(a, ScalarExpr) else ScalarExpr.const(a)
                                for a in args))


@dataclass(frozen=True)
class Lowering:
    """How one elementwise primitive computes on each target (see the module doc).
    ``ulps``: the most the fused value may differ from numpy's, in units in the last
    place, because numpy computes one of its functions with its own vectorized routine
    (0: bit for bit), of the larger of the value and ``at_least`` (a formula adding the
    routine's result to a constant carries its absolute error)."""

    formula: Callable[..., ScalarExpr]
    numpy: str | None = None
    ulps: int = 0
    at_least: float = 0.0


@dataclass(frozen=True)
class LibraryCall:
    """How generated numpy code writes a primitive that is not elementwise: ``numpy``,
    with ``{0}, {1}`` its operands and ``{name}`` its parameters, where ``when`` (of the
    operands' shapes) holds; elsewhere generated code calls the primitive's implementation."""

    numpy: str
    when: Callable[..., bool] | None = None


def numpy_call(prim: Any) -> str | None:
    """The numpy source template of an elementwise primitive (``{0}`` its first operand),
    or None: generated code calls its implementation."""
    rule = prim.lower
    if isinstance(rule, Lowering) and rule.numpy:
        return rule.numpy
    return None if prim.ufunc is None else "np." + prim.ufunc.__name__ + "({args})"


# ------------------------------------------------------------------------ the formulas
# (each elementwise primitive names its own in its entry: ``lower=libm("sin")`` ...)
# numpy computes these float64 functions with its own SIMD routines on CPUs with AVX-512
# (numpy >= 1.22; bit for bit with the C library elsewhere), kernels call the C library
# (on the LLVM route, exp/log/log1p/tanh are compiler.vector_math's, within 1 ulp of it).
# Measured against glibc over 10^5 points per function, they differ by at most 1 ulp, 2
# for tanh, arccosh and arctanh; the bounds add 1 for points not sampled. (cbrt, 3 apart,
# and x ** -0.5 have formulas of their own, within half an ulp: :func:`cbrt`, :func:`rsqrt`.)
SIMD_ULPS = {"exp": 2, "log": 2, "tan": 2, "tanh": 3, "sinh": 2, "cosh": 2, "asin": 2,
             "acos": 2, "atan": 2, "asinh": 2, "acosh": 3, "atanh": 3, "log1p": 2, "expm1": 2,
             "exp2": 2, "pow": 2, "atan2": 2, "hypot": 2}


def libm(c: str) -> Lowering:
    """A C library function, as numpy's ``np.<name>`` ufunc computes it."""
    return Lowering(lambda *x: apply(c, *x), ulps=SIMD_ULPS.get(c, 0))


def infix(op: str) -> Lowering:
    """An arithmetic operator or a comparison of :data:`OPS`, spelled infix by numpy code."""
    spelled = f"{OPS[op].symbol}{{0}}" if OPS[op].arity == 1 else f"{{0}} {OPS[op].symbol} {{1}}"
    return Lowering(lambda *x: apply(op, *x), spelled)


def power(x: ScalarExpr, y: ScalarExpr) -> ScalarExpr:
    """numpy's ``x ** y`` takes a shortcut for the exponents 2, 0.5 and -1 (square,
    sqrt, reciprocal); ``x ** -0.5`` is :func:`rsqrt` (no call); the rest is ``pow``."""
    if y.is_const(2):
        return x * x
    if y.is_const(0.5):
        return apply("sqrt", x)
    if y.is_const(-1):
        return 1.0 / x
    if y.is_const(-0.5):
        return rsqrt(x)
    return apply("pow", x, y)


VELTKAMP = 134217729.0  # 2^27 + 1


Split = tuple[ScalarExpr, ScalarExpr, ScalarExpr]


def split(v: ScalarExpr) -> Split:
    """``(v, h, l)`` with ``v = h + l``, h the leading 26 bits of v (Veltkamp's splitting,
    exact for |v| < 2^995): products of the parts are exact."""
    c = VELTKAMP * v
    h = c - (c - v)
    return v, h, v - h


def product(a: Split, b: Split) -> tuple[ScalarExpr, ScalarExpr]:
    """``a b = p + e`` exactly, p rounded (Dekker's product), for two numbers given by
    their :func:`split`, where no part underflows."""
    (a, ah, al), (b, bh, bl) = a, b
    p = a * b
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _scales(x: ScalarExpr, edge: float, by: float, back: float
            ) -> tuple[ScalarExpr, ScalarExpr]:
    """Powers of two ``(k, b)``: ``k`` is ``by`` where |x| is below ``edge``, ``1 / by``
    beyond ``1 / edge``, else 1 (so that products of x k stay normal numbers), and ``b``
    scales the result back (``back``, ``1 / back``, 1)."""
    a = apply("fabs", x)
    tiny, huge = apply("less", a, edge), apply("greater", a, 1.0 / edge)
    return (apply("select", tiny, by, apply("select", huge, 1.0 / by, 1.0)),
            apply("select", tiny, back, apply("select", huge, 1.0 / back, 1.0)))


def rsqrt(x: ScalarExpr) -> ScalarExpr:
    """``x ** -0.5`` (numpy: its pow, within 1 ulp), without a call: y = sqrt(x) and
    q = 1 / y, both correctly rounded, corrected by the exact remainders 1 - q y and
    x - y^2 (:func:`product`), 1 / sqrt(x) = q (1 + (1 - q y) - (x - y^2) q^2 / 2) to
    2^-100, rounded once (a pow call costs 10 ns). x is scaled by 2^1000 below 2^-960
    (2^-1000 beyond 2^960); +inf at either zero and +0 at either infinity, as pow (NaN
    below 0)."""
    k, back = _scales(x, 2.0**-960, 2.0**1000, 2.0**500)
    v = x * k
    y = apply("sqrt", v)
    q = 1.0 / y
    ys = split(y)
    (p1, e1), (p2, e2) = product(split(q), ys), product(ys, ys)
    correction = q * (((1.0 - p1) - e1) - 0.5 * ((v - p2) - e2) * (q * q))
    return apply("select", apply("equal", x, 0.0), float("inf"), apply(
        "select", apply("equal", apply("fabs", x), float("inf")), 0.0, (q + correction) * back))


def cbrt(x: ScalarExpr) -> ScalarExpr:
    """The cube root as the C library gives it (glibc's: within 3 ulps) and one Newton step
    with the exact remainder x - y^3 (:func:`product`): y + (x - y^3) / (3 y^2), within half
    an ulp (numpy's own vectorized cbrt: 0.53). x is scaled by 2^999 below 2^-900 (2^-999
    beyond 2^900), so the products stay normal numbers; at 0, infinities and NaN the C
    library's cbrt as it is."""
    k, back = _scales(x, 2.0**-900, 2.0**999, 2.0**-333)
    v = x * k
    y = apply("cbrt", v)
    ys = split(y)
    p2, e2 = product(ys, ys)
    p3, e3 = product(split(p2), ys)
    correction = (((v - p3) - e3) - e2 * y) / (3.0 * p2)
    step = apply("select", apply("equal", x, 0.0), 0.0, apply(
        "select", apply("equal", apply("fabs", x), float("inf")), 0.0, correction))
    return (y + step) * back


def sign(x: ScalarExpr) -> ScalarExpr:
    """numpy's sign: 1, -1, 0 for either zero, NaN for NaN."""
    return apply("select", apply("greater", x, 0.0), 1.0, apply(
        "select", apply("less", x, 0.0), -1.0, apply("select", apply("equal", x, 0.0), 0.0, x)))


def extremum(compare: str) -> Callable[[ScalarExpr, ScalarExpr], ScalarExpr]:
    """numpy's maximum / minimum: NaN wins on either side; at a tie the second (as its
    SIMD loop, x86's ``maxpd``: ``maximum(0.0, -0.0)`` is ``-0.0``)."""
    return lambda a, b: apply("select", apply("not_equal", a, a), a,
                              apply("select", apply(compare, a, b), a, b))


def mod(a: ScalarExpr, b: ScalarExpr) -> ScalarExpr:
    """numpy's remainder (``npy_remainder``): fmod, then the sign of the divisor."""
    m = apply("fmod", a, b)
    negative, shifted = apply("less", m, 0.0), m + b
    differs = apply("select", apply("less", b, 0.0), apply("select", negative, m, shifted),
                    apply("select", negative, shifted, m))
    return apply("select", apply("equal", b, 0.0), m, apply(
        "select", apply("equal", m, 0.0), apply("copysign", 0.0, b), differs))


LOGE2, LOG2E = 0.6931471805599453, 1.4426950408889634


def logaddexp(base2: bool) -> Callable[[ScalarExpr, ScalarExpr], ScalarExpr]:
    """numpy's logaddexp(2): the larger plus log1p of the smaller's share, ``x + log 2`` at
    a tie (so that inf + inf stays inf)."""
    def rule(x: ScalarExpr, y: ScalarExpr) -> ScalarExpr:
        t = x - y
        if base2:
            ln2, share = 1.0, lambda u: LOG2E * apply("log1p", apply("exp2", u))
        else:
            ln2, share = LOGE2, lambda u: apply("log1p", apply("exp", u))
        return apply("select", apply("equal", x, y), x + ln2, apply(
            "select", apply("greater", t, 0.0), x + share(-t),
            apply("select", apply("less_equal", t, 0.0), y + share(t), t)))
    return rule


def sinc(x: ScalarExpr) -> ScalarExpr:
    """sinc as its implementation computes it (``elementwise._sinc``): numpy's 1e-20 for
    x = 0, then ``sin(pi (y - n)) (1 - 2 |fmod(n, 2)|) / (pi y)`` with ``n = rint(y)``."""
    y = apply("select", apply("equal", x, 0.0), 1.0e-20, x)
    n = apply("rint", y)
    parity = 1.0 - 2.0 * apply("fabs", apply("fmod", n, 2.0))
    return apply("sin", 3.141592653589793 * (y - n)) * parity / (3.141592653589793 * y)


def sigmoid(x: ScalarExpr) -> ScalarExpr:
    """numpy's sigmoid (``elementwise._sigmoid``, as scipy.special.expit): e = exp(-|x|), then
    1 / (1 + e) for x >= 0 and e / (1 + e) below; e is one subtree (computed once)."""
    e = apply("exp", -apply("fabs", x))
    return apply("select", apply("greater_equal", x, 0.0), 1.0, e) / (1.0 + e)


SCIPY = ("scipy.special's own routine (Cephes, Boost): no C library function gives its "
          "values, so it stays one vectorized scipy call between kernels")
PIECEWISE = ("diffkit's own routine by pieces (tables of polynomials, pairs of doubles: "
             "primitives/error_function.py, inverse_error.py), one vectorized numpy call between "
             "kernels")
COMPLEX = "complex values: kernels compute on real numbers (float64, float32, integers)"

__all__ = ["COMPLEX", "OPS", "PIECEWISE", "SCIPY", "SIMD_ULPS", "LibraryCall", "Lowering",
           "Op", "ScalarExpr", "Split", "apply", "cbrt", "extremum", "infix", "libm", "logaddexp",
           "mod", "numpy_call", "power", "product", "rsqrt", "sigmoid", "sign", "sinc", "split"]
