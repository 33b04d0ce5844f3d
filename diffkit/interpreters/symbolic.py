"""Symbolic differentiation: run on symbols to a SymPy expression, differentiate it, compile it.

The user's function runs once on *symbols* (``x`` for a scalar, ``x0 … x{n-1}`` for an
array), each primitive contributing its sympy translation from the primitive table.
The closed form of f is then differentiated exactly by SymPy, optionally simplified,
and compiled to numpy with ``lambdify`` (after common-subexpression elimination by
default). Setup (to SymPy + differentiate + compile) is done once per function and input
shape and is timed apart from evaluation.

Two things it teaches: the derivative of a closed form can be far larger than the
function (*expression swell*: compare ``expr_nodes``, the tree with repeats, with
``expr_dag_nodes``, the same after CSE), and a program that branches on a value has no
single closed form: ``if x > 0:`` is an error here; ``dnp.where`` is the closed-form way.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> d = dk.closed_form(lambda x: dnp.sin(x) * x, 0.0, kind="derivative")
>>> d.expression
x*cos(x) + sin(x)
"""

from __future__ import annotations

import functools
import importlib.util
import math
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp
from sympy.logic.boolalg import Boolean

from ..core import Box, DiffkitError, Interpreter, NotApplicable, Primitive, new_level, primal, shape

KINDS = ("derivative", "grad", "jacobian", "hessian")


class Sym(Box):
    """A traced value: a sympy expression, or an object array of them."""

    __slots__ = ()
    expression = True

    def _compare(self, other: Any, op: Callable) -> Any:
        point = self._interp.point
        if point is None:  # relations: fine inside dnp.where, an error in `if`
            return _unwrap(np.vectorize(op, otypes=[object])(_objects(self.value),
                                                             _objects(primal(other))))
        value = np.vectorize(lambda e: sp.N(sp.sympify(e).subs(point), 50), otypes=[object])
        return op(value(_objects(self.value)), value(_objects(primal(other))))

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, sp.Eq)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, sp.Ne)

    __hash__ = Box.__hash__

    def __repr__(self) -> str:
        return f"Sym({self.value!r})"

    def complex_valued(self) -> bool:
        """Whether this formula holds complex values: it involves ``I`` (traced at a
        complex point, :mod:`diffkit.backends.complex_points`) and SymPy cannot tell
        that it is real (|z|, re(z) are; z*conj(z) stays complex, as numpy's dtype)."""
        return any(isinstance(e, complex) or (isinstance(e, sp.Basic) and e.has(sp.I)
                                              and e.is_extended_real is not True)
                   for e in np.ravel(np.asarray(self.value, dtype=object)))


def _objects(v: Any) -> Any:
    """Numbers as exact-enough Python/sympy objects, arrays as object arrays."""
    if isinstance(v, np.ndarray):
        return v.astype(object) if v.dtype != object else v
    if isinstance(v, np.generic):
        return v.item()
    return v


def _unwrap(v: Any) -> Any:
    return v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v


class SymbolicInterpreter(Interpreter):
    """Builds expressions; with ``point`` set, comparisons are decided at that point."""

    def __init__(self, level: int, point: dict | None = None) -> None:
        super().__init__(level)
        self.point = point

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        vals = []
        for a in args:
            if isinstance(a, Box) and not (type(a) is Sym and a._interp is self):
                raise DiffkitError("the symbolic backend cannot run inside another transform; "
                                   "differentiate symbolically at the outermost level")
            vals.append(_objects(a.value if isinstance(a, Sym) else a))
        if prim.sympy is None:  # structural ops and sums work on object arrays as they are
            out = prim.impl(*vals, **params)
        elif prim.broadcasts:  # elementwise: translate entry by entry, with broadcasting
            fixed = {k: v for k, v in params.items() if not isinstance(v, np.ndarray)}
            arrays = {k: _flat_conditions(v) for k, v in params.items()
                      if isinstance(v, np.ndarray)}
            keys = list(arrays)
            n = len(vals)
            out = np.vectorize(
                lambda *v: prim.sympy(sp, *v[:n], **fixed, **dict(zip(keys, v[n:]))),
                otypes=[object])(*vals, *arrays.values())
        else:
            out = prim.sympy(sp, *(np.asarray(v, dtype=object) for v in vals), **params)
        return Sym(self, _unwrap(out))


def lambdify_modules() -> list[str]:
    """numpy, and SciPy for special functions (erf, loggamma ...) when it is installed."""
    return ["scipy", "numpy"] if importlib.util.find_spec("scipy") else ["numpy"]


def to_sympy(fun: Callable, x: Any, point: bool = False) -> tuple[list[sp.Symbol], Any]:
    """Run ``fun`` on symbols shaped like ``x``: ``(symbols, output expression(s))``.

    With ``point=True`` comparisons are decided at the value ``x`` (a local closed form).
    """
    s = shape(x)
    n = math.prod(s)
    syms = [sp.Symbol("x", real=True)] if s == () else list(sp.symbols(f"x0:{n}", real=True))
    xs = syms[0] if s == () else np.array(syms, dtype=object).reshape(s)
    at = dict(zip(syms, [sp.Float(repr(float(v)), 50) for v in np.ravel(primal(x))])) if point else None
    with new_level(lambda level: SymbolicInterpreter(level, at)) as interp:
        try:
            y = fun(Sym(interp, xs))
        except TypeError as exc:
            if "non-real" in str(exc):
                raise NotApplicable(
                    "the symbolic backend cannot decide a comparison of complex values "
                    f"({exc}); use the forward, reverse or numeric backend") from None
            if "truth value" in str(exc) or "Relational" in str(exc):
                raise NotApplicable(
                    "the symbolic backend needs a closed form, but this function branches on "
                    "a value (if/while/max on a traced number); write the branch with "
                    "dnp.where(cond, a, b) or dk.cond(pred, true_fun, false_fun, *operands), "
                    "or use the forward, reverse or numeric backend"
                ) from None
            raise
    return syms, _objects(y.value if isinstance(y, Sym) else primal(y))


def tree_size(exprs: Any) -> int:
    """Nodes of the expression tree(s), shared subexpressions counted every time."""
    memo: dict[Any, int] = {}

    def size(e: Any) -> int:
        if e not in memo:
            memo[e] = 1 + sum(size(a) for a in e.args)
        return memo[e]

    return sum(size(sp.sympify(e)) for e in np.ravel(np.asarray(exprs, dtype=object)))


def dag_size(exprs: Any) -> int:
    """Nodes after common-subexpression elimination: each shared piece counted once."""
    flat = [sp.sympify(e) for e in np.ravel(np.asarray(exprs, dtype=object))]
    replacements, reduced = sp.cse(flat)
    return sum(tree_size(rhs) for _, rhs in replacements) + tree_size(reduced)


@dataclass
class Derivation:
    """A function's closed form, its derivative and the compiled evaluator.

    ``kind`` is ``derivative`` (scalar x), ``grad``, ``jacobian`` or ``hessian``.
    """

    kind: str
    symbols: list[sp.Symbol]
    f: Any
    expression: Any
    cse: bool
    setup_s: float
    sizes: dict[str, int] = field(default_factory=dict)
    _compiled: Callable | None = None

    def latex(self) -> str:
        return sp.latex(sp.Array(self.expression) if isinstance(self.expression, np.ndarray)
                        else self.expression)

    def _repr_latex_(self) -> str:
        """Jupyter shows the derivative typeset: d/dx f = ..., or ∇f = ... ."""
        lhs = {"derivative": r"\frac{d}{dx} f", "grad": r"\nabla f", "jacobian": "J_f",
               "hessian": "H_f"}.get(self.kind, self.kind)
        return f"$${lhs} = {self.latex()}$$"

    def common_subexpressions(self) -> tuple[list[tuple[sp.Symbol, Any]], list[Any]]:
        """``(replacements, reduced)`` as ``sympy.cse`` gives them."""
        return sp.cse([sp.sympify(e) for e in np.ravel(np.asarray(self.expression, dtype=object))])

    def __str__(self) -> str:
        return f"{self.kind} of {self.f}: {self.expression}"

    def __call__(self, x: Any) -> tuple[Any, Any]:
        """``(f(x), derivative(x))`` as numpy values; ``derivative`` is vectorized over x.

        Where float64 evaluation of the closed form is not finite at a finite point (exp
        overflowing in log(Σ exp), 1/(1 + exp(800))...), that entry is evaluated again
        in high precision (:func:`evaluate_at`, at most ``RESCUES`` points a call) and
        taken when that gives a finite float64; a true pole (1/0) stays inf or NaN.
        """
        x = np.asarray(x, dtype=float)
        vals = self._compiled(*([x] if self.kind == "derivative" else x.ravel()))
        vals = self._rescue(x, vals)
        f_shape = np.shape(self.f)
        nf = math.prod(f_shape)
        like = x if self.kind == "derivative" else np.zeros(())
        f_val = _fill(vals[:nf], f_shape, like)
        d_val = _fill(vals[nf:], np.shape(self.expression), like)
        return f_val, d_val


    def _rescue(self, x: np.ndarray, vals: list[Any]) -> list[Any]:
        if not vals:  # f has no entries
            return vals
        points = x.reshape(-1, 1) if self.kind == "derivative" else x.reshape(1, -1)
        table = np.broadcast_to(np.stack([np.broadcast_to(v, x.shape if self.kind == "derivative"
                                                          else ()) for v in vals], -1),
                                (x.shape if self.kind == "derivative" else ()) + (len(vals),))
        table = table.reshape(len(points), len(vals))
        bad = ~np.isfinite(table) & np.isfinite(points).all(axis=1, keepdims=True)
        rows = np.flatnonzero(bad.any(axis=1))[:RESCUES]
        if not rows.size:
            return vals
        exprs = [sp.sympify(e) for e in np.ravel(np.asarray(self.f, dtype=object))] + [
            sp.sympify(e) for e in np.ravel(np.asarray(self.expression, dtype=object))]
        table = table.copy()
        for r in rows:
            point = dict(zip(self.symbols, points[r]))
            for k in np.flatnonzero(bad[r]):
                v = evaluate_at(exprs[k], point, 20)
                if np.isfinite(v):
                    table[r, k] = v
        shaped = table.reshape((x.shape if self.kind == "derivative" else ()) + (len(vals),))
        return [shaped[..., k] for k in range(len(vals))]


RESCUES = 100  # points per call re-evaluated in high precision where float64 is not finite


def evaluate_at(expr: Any, point: dict, dps: int) -> float:
    """``expr`` at ``point`` (symbol -> float) to ``dps`` digits, as a float: NaN where the
    value is not real or undefined, inf for a complex infinity (1/0).

    Lazily: a Piecewise decides its conditions in order and evaluates only the branch
    taken (an unselected branch may be complex or infinite there). The point enters as
    exact binary Floats of ``dps + 20`` digits, so the arithmetic stays numeric (exact
    rationals can make SymPy's arithmetic explode: x**x at a 53-bit rational).

    >>> x = sp.Symbol("x", real=True)
    >>> evaluate_at(sp.Piecewise((sp.log(x), x > 0), (x, True)), {x: -1.0}, 30)
    -1.0
    """
    prec = dps + 20
    memo: dict[Any, Any] = {s: sp.Float(float(v), prec) for s, v in point.items()}

    def at(e: Any) -> Any:
        if e in memo:
            return memo[e]
        if isinstance(e, (sp.Piecewise, Select)):
            out = sp.nan
            pairs = e.args if isinstance(e, sp.Piecewise) else [(e.args[1], e.args[0]),
                                                                 (e.args[2], sp.true)]
            for branch, cond in pairs:
                try:
                    c = at(cond)
                except TypeError:  # a comparison with NaN or a complex number: undecided
                    break
                if c == sp.true:
                    out = at(branch)
                    break
                if c != sp.false:
                    break
        elif e.args:
            out = e.func(*[at(a) for a in e.args])
        else:
            out = e
        memo[e] = out
        return out

    value = sp.sympify(at(sp.sympify(expr))).evalf(dps)
    if value in (sp.zoo, sp.oo, -sp.oo):
        return float("-inf") if value == -sp.oo else float("inf")
    if value.has(sp.zoo, sp.nan) or not value.is_number:
        return float("nan")
    re, im = value.as_real_imag()  # not a real number: NaN, as numpy (rounding's im aside)
    return float(re) if abs(im) <= 10.0 ** (5 - dps) * max(1, abs(re)) else float("nan")


def _fill(values: list[Any], s: tuple[int, ...], like: np.ndarray) -> Any:
    """Entries (numbers or arrays like ``like``) into one float array of shape ``like + s``."""
    out = np.empty(like.shape + s)
    flat = out.reshape(like.shape + (math.prod(s),))
    for k, v in enumerate(values):
        flat[..., k] = np.real(v)  # real formulas of a complex point: rounding's imaginary part
    return out[()] if out.ndim == 0 else out


def differentiate(syms: list[sp.Symbol], f: Any, kind: str, x_shape: tuple[int, ...],
                  simplify: bool = False) -> tuple[list[Any], list[Any], tuple[int, ...]]:
    """The exact derivative of ``f`` (from :func:`to_sympy`): ``(f_flat, d_flat, d_shape)``.

    ``kind`` ``hessian`` gives every second derivative of the scalar f, the others every
    first derivative of each entry of f (shape ``f.shape + x.shape``); derivatives of
    jumps (DiracDelta, sign(u)': zero almost everywhere) are dropped (see :func:`_tidy`).

    >>> syms, f = to_sympy(lambda x: x ** 3, 0.0)
    >>> differentiate(syms, f, "hessian", ())[1]
    [6*x]
    """
    if kind not in KINDS:
        raise DiffkitError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    f_flat = [sp.sympify(e) for e in np.ravel(np.asarray(f, dtype=object))]
    g_flat = [differentiable(e) for e in f_flat]
    if kind == "hessian":
        d_flat = [d2 for d in partials(g_flat[0], syms) for d2 in partials(d, syms)]
        d_shape = x_shape + x_shape
    else:
        d_flat = [d for fi in g_flat for d in partials(fi, syms)]
        d_shape = np.shape(f) + x_shape
    return f_flat, [_tidy(e, simplify) for e in d_flat], d_shape


def partials(e: Any, syms: list[sp.Symbol]) -> list[Any]:
    """``d e / d s`` for each symbol: of a sum, each term is differentiated only by the
    symbols it holds, so the n partials of an n-term sum cost O(n), not O(n²) (Rosenbrock
    at n = 1000: seconds instead of minutes).

    >>> x, y = sp.symbols("x y")
    >>> partials(x ** 2 + x * y + sp.sin(y), [x, y])
    [2*x + y, x + cos(y)]
    """
    if not isinstance(e, sp.Add):
        return [sp.diff(e, s) for s in syms]
    holding: dict[Any, list[Any]] = {}
    for term in e.args:
        for s in term.free_symbols:
            holding.setdefault(s, []).append(term)
    return [sp.Add(*[sp.diff(t, s) for t in holding.get(s, ())]) for s in syms]


def closed_form(fun: Callable, x: Any, kind: str = "grad", *, cse: bool = True,
           simplify: bool = False, complex_parts: bool = False) -> Derivation:
    """``fun`` to SymPy at the shape of ``x``, differentiated, compiled; timed as ``setup_s``.

    ``complex_parts``: ``x`` holds the real and imaginary parts of a complex point
    (:mod:`diffkit.backends.complex_points`), so ``I`` inside is a value, not numpy's NaN
    of a branch left unselected, and a comparison of complex values is not applicable.
    """
    start = time.perf_counter()
    syms, f = to_sympy(fun, x)
    if any(isinstance(e, Boolean) and not isinstance(e, sp.Expr)
           for e in np.ravel(np.asarray(f, dtype=object))):
        raise DiffkitError(f"{kind} requires a float output, but the function returned bool "
                           "(a comparison has no derivative); return a float")
    if kind in ("derivative", "grad", "hessian") and np.ndim(f) != 0:
        raise DiffkitError(f"{kind} needs a scalar-valued function, got shape {np.shape(f)}; "
                           "use jacobian")
    if complex_parts:
        _no_complex_comparisons(f)
    f_flat, d_flat, d_shape = differentiate(syms, f, kind, shape(x), simplify)
    d = np.empty(len(d_flat), dtype=object)
    d[:] = d_flat
    compiled = sp.lambdify(syms, [numpy_ready(e, complex_parts) for e in f_flat + d_flat],
                           modules=[NUMPY_CALLS, *lambdify_modules()], cse=cse)
    sizes = {"f_expr_nodes": tree_size(f_flat), "f_expr_dag_nodes": dag_size(f_flat),
             "expr_nodes": tree_size(d_flat), "expr_dag_nodes": dag_size(d_flat),
             "count_ops": int(sp.count_ops(d_flat))}
    return Derivation(kind, syms, _unwrap(np.asarray(f, dtype=object)),
                      _unwrap(d.reshape(d_shape)), cse, time.perf_counter() - start, sizes,
                      compiled)


def _no_complex_comparisons(f: Any) -> None:
    """NotApplicable where ``f`` compares complex values (maximum, floor, where on ``z``):
    numpy orders them lexicographically, SymPy cannot decide an order of them."""
    kinds = (sp.Max, sp.Min, sp.Heaviside, sp.floor, sp.ceiling, sp.StrictGreaterThan,
             sp.StrictLessThan, sp.GreaterThan, sp.LessThan)
    for e in np.ravel(np.asarray(f, dtype=object)):
        for a in sp.sympify(e).atoms(*kinds):
            if a.has(sp.I):
                raise NotApplicable(f"SymPy cannot compare complex values ({a}); use the "
                                    "forward, reverse or numeric backend")


def differentiable(e: Any) -> Any:
    """``e`` with |u| written u·sign(u) where SymPy cannot tell u is real (log1p(x),
    arcsin(x)...): SymPy differentiates such an Abs into re/im parts it cannot evaluate."""
    return e.replace(lambda a: isinstance(a, sp.Abs) and a.args[0].is_extended_real is not True
                     and not a.args[0].has(sp.I), lambda a: a.args[0] * sp.sign(a.args[0]))


def _tidy(e: Any, simplify: bool) -> Any:
    """Drop the derivatives of jumps, maybe simplify: DiracDelta terms and sign(u)' (SymPy
    leaves the latter unevaluated when u may be complex); zero almost everywhere, as in AD."""
    e = e.replace(sp.DiracDelta, lambda *a: sp.S.Zero).replace(
        lambda a: isinstance(a, sp.Derivative) and isinstance(a.expr, sp.sign)
        and not a.expr.has(sp.I), lambda a: sp.S.Zero)
    undecided = next((d for d in e.atoms(sp.Derivative) if d.expr.has(sp.I)), None)
    if undecided is not None:  # sign(x + I*y), floor of a complex value: no rule in SymPy
        raise NotApplicable(f"SymPy cannot differentiate {undecided.expr} (not holomorphic, "
                            "and no rule in its real and imaginary parts); use the forward, "
                            "reverse or numeric backend")
    return sp.simplify(e) if simplify else e


# lambdify prints Piecewise (and Heaviside, Max, Min in conditions) as nested numpy.select
# calls that break when one is the condition of another (B4) and recurse deeply (B4b); as
# opaque calls to these plain numpy functions they print flat.
class Select(sp.Function):
    """``Select(cond, a, b)``: a where cond holds, else b; a Piecewise that SymPy does not
    fold (a Piecewise inside a condition is expanded into every combination of branches:
    2^8 terms for relu of the mean of 8 where's, B4b)."""

    nargs = 3

    @classmethod
    def eval(cls, cond: Any, a: Any, b: Any) -> Any:
        if cond == sp.true:
            return a
        if cond == sp.false:
            return b
        return None

    def _eval_is_extended_real(self) -> bool | None:
        # A where of real arrays is real wherever numpy defines it: True unless SymPy knows
        # a branch is complex ((-0.75)**1.5: NaN in numpy, and maybe unselected), and never
        # False (SymPy refuses to compare a value known non-real). Unknown is not enough:
        # SymPy then calls asin(0.5*sin(Select(...))) non-real and refuses `where(v > -1)`.
        return None if any(branch.is_extended_real is False for branch in self.args[1:]) else True


def _flat_conditions(conds: np.ndarray) -> np.ndarray:
    """Conditions (of dnp.where) with the Piecewise they compare as :class:`Select` calls."""
    if conds.dtype != object:
        return conds
    return np.vectorize(lambda c: sp.sympify(c).replace(sp.Piecewise, _fold)
                        if isinstance(c, sp.Basic) and c.has(sp.Piecewise) else c,
                        otypes=[object])(conds)


_SELECT, _HEAVISIDE = Select, sp.Function("dk_heaviside")
_MAX, _MIN = sp.Function("dk_max"), sp.Function("dk_min")
# NaN as an opaque call: SymPy orders the terms of a sum by comparing their numbers, and a
# NaN there (Select(c, nan, ...) beside Select(c, 2.75, ...)) makes printing raise
_NAN = sp.Function("dk_nan")()
NUMPY_CALLS = {
    "dk_nan": lambda: np.nan,
    "Select": lambda cond, a, b: np.where(cond, a, b),
    "dk_heaviside": lambda u: np.heaviside(u, 0.5),  # SymPy's Heaviside(0) = 1/2
    "dk_max": lambda *a: functools.reduce(np.maximum, a),
    "dk_min": lambda *a: functools.reduce(np.minimum, a),
}


def _fold(*pairs: Any) -> Any:
    """Piecewise((a, c), (b, d), ...) as select(c, a, select(d, b, ...)); a Piecewise of
    truth values (a condition itself) as the formula (c & a) | (~c & ...). A real Symbol is
    a SymPy Boolean too: only branches that are not expressions are truth values (B20)."""
    logical = all(isinstance(branch, Boolean) and not isinstance(branch, sp.Expr)
                  for branch, _ in pairs)
    out = sp.false if logical else sp.nan  # no branch holds: numpy.select's default
    for branch, cond in reversed(pairs):
        if cond == sp.true:
            out = branch
        else:
            out = (cond & branch) | (~cond & out) if logical else _SELECT(cond, branch, out)
    return out


def _ite(cond: Any, a: Any, b: Any) -> Any:
    return _fold((a, cond), (b, sp.true))


def numpy_ready(e: Any, complex_values: bool = False) -> Any:
    """``e`` as lambdify should print it: Piecewise, ITE, Heaviside, Max and Min as calls to
    :data:`NUMPY_CALLS`, and SymPy's complex infinity and complex numbers as NaN, as numpy has
    them (1/0 or (-0.75)**1.5 in a branch a where may leave unselected), unless
    ``complex_values`` (a formula of a complex point: ``I`` is a value there).

    Rebuilt top-down with a memo, never handing an opaque call to Max or Min (whose
    constructors refuse arguments they cannot compare)."""
    memo: dict[Any, Any] = {}
    constant: dict[Any, bool] = {}  # no symbol below (found bottom-up: no walk per node)
    opaque = {sp.Max: _MAX, sp.Min: _MIN}

    def walk(a: Any) -> Any:
        if a not in memo:
            args = [walk(b) for b in a.args]
            constant[a] = all(constant[b] for b in a.args) if a.args else not a.free_symbols
            if a in (sp.zoo, sp.nan) or (constant[a] and isinstance(a, sp.Expr) and
                                         not complex_values and a.is_extended_real is False):
                memo[a] = _NAN  # NaN in numpy: 1/0, (-0.75)**1.5 (in an unselected branch)
            elif not args:
                memo[a] = a
            elif isinstance(a, sp.Piecewise):
                memo[a] = _fold(*[pair.args for pair in args])
            elif isinstance(a, sp.ITE):
                memo[a] = _ite(*args)
            elif isinstance(a, sp.Heaviside):
                memo[a] = _HEAVISIDE(args[0])
            elif type(a) in opaque:
                memo[a] = opaque[type(a)](*args)
            else:
                memo[a] = a.func(*args)
        return memo[a]

    return walk(sp.sympify(e))
